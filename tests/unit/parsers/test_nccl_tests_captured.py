"""nccl-tests logs as clusters capture them: line prefixes of launchers and log collectors,
shell traces, wrapped command lines, 2018-era tables, failures printed on a row's line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collscope.parsers.nccl_tests import parse_nccl_tests
from collscope.parsers.nccl_tests.prefixes import strip_prefix
from collscope.records.logs import LogImportError, import_log
from tests.conftest import OWN_FIXTURES, fixture_path

OWN = OWN_FIXTURES / "nccl-tests-logs"
SIZES = [0, 256, 4096, 65536, 1048576, 16777216]


def _parse(name: str):
    return parse_nccl_tests((OWN / name).read_text())


@pytest.mark.parametrize(("name", "ranks", "hosts", "prefix"), [
    ("srun_l_16tasks_padded_labels_set_x_cpu_bind.txt", 16, ["mi300-n01", "mi300-n02"], "0:"),
    ("kubectl_timestamps_mpirun_tag_output.txt", 8, ["rccl-worker-0"],
     "2025-03-04T10:15:01.123464708Z [1,0]<stdout>:"),
    ("kubectl_prefix_pod_container.txt", 8, ["rccl-worker-0"],
     "[pod/rccl-bench-launcher-x7k2p/launcher]"),
    ("journald_unit_prefix.txt", 8, ["rccl-worker-0"],
     "Mar 04 10:15:00 gpu-node-01 run-nccl-tests.sh[23412]:"),
])
def test_prefixed_logs_read_as_if_bare(name: str, ranks: int, hosts: list[str],
                                       prefix: str) -> None:
    parsed = _parse(name)
    (test,) = parsed.value
    assert test.program == "all_reduce_perf" and test.collective == "all_reduce"
    assert test.world_size == ranks and test.hosts == hosts
    assert [row.size_bytes for row in test.rows] == SIZES
    assert test.result_count == 12
    first = test.rows[0]
    assert (first.count, first.out_of_place.time_text) == (0, "0.21")  # type: ignore[union-attr]
    # 16777216 B in 309.8 us = 54.155 GB/s algbw; x 2(n-1)/n = 1.875 (16) or 1.75 (8)
    assert test.rows[-1].in_place.busbw_text == ("101.54" if ranks == 16 else  # type: ignore
                                                   "94.77")
    assert test.footer.out_of_bounds == 0 and test.command and test.command.test_args["-e"] == "16M"
    assert not [w for w in parsed.warnings if "not understood" in w]
    (note,) = [w for w in parsed.warnings if "line prefix" in w]
    assert f"({prefix!r}," in note


def test_set_x_trace_and_cpu_bind_lines() -> None:
    parsed = _parse("srun_l_16tasks_padded_labels_set_x_cpu_bind.txt")
    (test,) = parsed.value
    assert test.command is not None and test.command.launcher == "srun"
    assert test.command.argv[-1] == "1" and test.command.program == "all_reduce_perf"
    assert "lines 3-18: 16 lines of launcher/MPI output skipped, first: 'cpu-bind=MASK - " \
           "mi300-n01, task  0  0 [41000]: mask 0xff set'" in parsed.warnings
    assert test.versions["nccl_tests"] == "2.17.8"


def test_options_wrapped_onto_the_next_line_belong_to_the_command() -> None:
    text = fixture_path("nccl-tests-logs",
                          "h100_2node_ring_minctas24_qps2_nccl_issue309.txt").read_text()
    (test,) = parse_nccl_tests(text).value
    assert test.command is not None
    assert test.command.test_args == {"-b": "1M", "-e": "8G", "-f": "2", "-g": "1"}
    assert test.command.env["NCCL_ALGO"] == "Ring"


def test_2018_all_gather_without_redop_and_root_columns() -> None:
    parsed = _parse("old_2018_all_gather_no_redop_no_root.txt")
    (test,) = parsed.value
    assert parsed.warnings == []
    assert test.header is not None and not test.header.has_redop and not test.header.has_root
    assert test.collective == "all_gather" and test.world_size == 4
    assert [(r.size_bytes, r.count, r.redop, r.root) for r in test.rows][:2] == [
        (0, 0, "none", None), (64, 4, "none", None)]
    last = test.rows[-1]
    assert last.out_of_place.error == 0.0 and last.in_place.busbw_text == "3.79"  # type: ignore
    (run,) = import_log((OWN / "old_2018_all_gather_no_redop_no_root.txt").read_text(), "x")
    assert run.warnings == [] and {r.root for r in run.results} == {-1}
    assert {r.op for r in run.results} == {"none"} and len(run.results) == 12


def test_failure_printed_on_a_rows_line_is_the_failure() -> None:
    name = "alltoall_counts_zero_failure_on_row_line.txt"
    text = (OWN / name).read_text()
    parsed = parse_nccl_tests(text)
    (test,) = parsed.value
    assert test.failures[0] == (20, "gpu-n01: Test HIP failure common.cu:1120 'an illegal "
                                    "memory access was encountered'")
    assert not [w for w in parsed.warnings if w.startswith("line 20:")]
    assert [(r.size_bytes, r.count) for r in test.rows] == [(0, 0), (1024, 32)]
    assert test.collective == "alltoall" and test.world_size == 8
    # Without the rows that ran, the import names the cause on the row's line, not the
    # stack line after it.
    cut = "\n".join(line for i, line in enumerate(text.splitlines(), 1) if i not in (18, 19))
    with pytest.raises(LogImportError, match=r"failure at line 18: gpu-n01: Test HIP failure "
                                             r"common\.cu:1120 'an illegal memory access"):
        import_log(cut, name)


# --------------------------------------------------------------------------- any prefix

_BARE = (OWN / "all_reduce_wrong_values_noise.txt").read_text().splitlines()


@st.composite
def _prefixes(draw: st.DrawFn) -> list[str]:
    """One prefix per line, in one of the shapes collectors and launchers write, with the
    parts that vary from line to line (ranks, times, pod ids) drawn per line."""
    kind = draw(st.sampled_from(["srun", "mpirun", "iso", "ts", "kubectl", "journald"]))
    width = draw(st.integers(1, 4))
    pod = draw(st.from_regex(r"[a-z0-9]{5}", fullmatch=True))
    out = []
    for i in range(len(_BARE)):
        rank = draw(st.integers(0, 10 ** width - 1))
        sec = draw(st.integers(0, 59))
        out.append({
            "srun": f"{rank:>{width}}: ",
            "mpirun": f"[{draw(st.integers(1, 9))},{rank}]<stdout>:",
            "iso": f"2026-12-01T08:{sec:02d}:{sec:02d}.{rank:06d}Z ",
            "ts": f"Dec 01 08:{sec:02d}:{i % 60:02d} ",
            "kubectl": f"[pod/nccl-{pod}-{rank}/main] ",
            "journald": f"Dec 01 08:00:{sec:02d} node-{width} nccl.sh[{rank + 100}]: ",
        }[kind])
    return out


def _rows(text: str) -> list[tuple[int, int, str, str]]:
    return [(row.size_bytes, row.count, p.time_text, p.busbw_text)
            for test in parse_nccl_tests(text).value for row in test.rows
            for _, p in row.placements()]


@settings(max_examples=40, deadline=None, database=None)
@given(_prefixes())
def test_any_collector_prefix_leaves_the_table_as_it_was(prefixes: list[str]) -> None:
    bare = _rows("\n".join(_BARE))
    assert len(bare) == 12
    prefixed = "\n".join(p + line for p, line in zip(prefixes, _BARE))
    assert _rows(prefixed) == bare


def test_no_prefix_is_invented_for_bare_logs() -> None:
    for path in sorted(OWN.glob("*.txt")):
        lines = path.read_text().splitlines()
        if re.match(r"(srun|kubectl|journald)_", path.name):
            continue
        assert strip_prefix(lines) == (lines, None), path.name


def test_2018_broadcast_with_root_but_no_redop_column() -> None:
    text = "\n".join([
        "$ ./build/broadcast_perf -b 1M -e 1M -g 4",
        "#       size         count    type    root     time   algbw   busbw  error     time   "
        "algbw   busbw  error",
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  "
        "(GB/s)  (GB/s)",
        # 1048576 B / 52.40 us = 20.01 GB/s; broadcast's bus factor is 1
        "     1048576        262144   float       0    52.40   20.01   20.01  0e+00    51.90   "
        "20.20   20.20  0e+00",
    ])
    parsed = parse_nccl_tests(text)
    (test,) = parsed.value
    assert not [w for w in parsed.warnings if "not understood" in w]
    (row,) = test.rows
    assert (row.size_bytes, row.count, row.dtype, row.redop, row.root) == (
        1048576, 262144, "float", "none", 0)
    assert row.out_of_place.busbw_text == "20.01" and row.in_place.time_us == 51.9  # type: ignore
    assert test.collective == "broadcast"
