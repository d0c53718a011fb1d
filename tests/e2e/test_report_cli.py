"""`collscope import`, `report` and `compare` as users run them, down to the HTML in Chromium."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from collscope.records.logs import import_file
from tests.conftest import FIXTURES, fixture_path
from tests.helpers import CHROMIUM, REPO, chromium, read_records, run_cli, usage_error
from tests.unit.parsers.mutations import count_printed_placements
from tests.unit.report.samples import EVIL, bench_file, run_record, samples, train_records
from tests.unit.report.samples import write_jsonl as write_records

LOGS = FIXTURES / "nccl-tests-logs"
LOG_NAMES = sorted(p.name for p in LOGS.glob("*.txt")) if LOGS.is_dir() else []
FAILED_RUN = "h100_2node_16gpu_alltoall_sendrecv_nccl_network_error.txt"
MI300X = "mi300x_8gpu_allreduce_rccl_k8s.txt"
T4 = "t4_3node_allreduce_nccl_old_error_column_c0.txt"
ARTIFACTS = REPO / "artifacts"




def scaled_copy(source: Path, target: Path, factor: float) -> Path:
    """Every time x factor, busbw and algbw / factor: the same run, uniformly slower."""
    lines = []
    for record in read_records(source):
        if record["kind"] == "result":
            record["time_us"] *= factor
            record["busbw_gbs"] /= factor
            record["algbw_gbs"] /= factor
        lines.append(json.dumps(record))
    target.write_text("\n".join(lines) + "\n")
    return target


# ---------------------------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in LOG_NAMES if n != FAILED_RUN] or ["absent"])
def test_import_every_real_log(name: str, tmp_path: Path) -> None:
    log = fixture_path("nccl-tests-logs", name)
    out = tmp_path / "out.jsonl"
    proc = run_cli("import", str(log), "-o", str(out), timeout=60)
    assert proc.returncode == 0, proc.stderr
    records = read_records(out)
    runs = [r for r in records if r["kind"] == "run"]
    results = [r for r in records if r["kind"] == "result"]
    assert len(results) == count_printed_placements(log.read_text())
    assert records[0]["kind"] == "run" and all(r["command"] == "import" for r in runs)
    # The summary line names the log, its runs and results; warnings carry line numbers.
    summary = [line for line in proc.stderr.splitlines() if line.startswith(
        f"collscope import: {log}: ")]
    assert summary and f"{len(runs)} run(s), {len(results)} results" in summary[0]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith(
        f"collscope import:   {log}: ")]
    expected = sum(len(run.warnings) for run in import_file(log))
    assert len(warnings) == expected
    assert all(re.search(r": lines? \d+", line) for line in warnings)


def test_import_of_a_failed_run_exits_2_naming_the_failure(tmp_path: Path) -> None:
    log = fixture_path("nccl-tests-logs", FAILED_RUN)
    out = tmp_path / "out.jsonl"
    proc = run_cli("import", str(log), "-o", str(out), timeout=60)
    line = usage_error(proc, "no result table", "line 22", "Test NCCL failure")
    assert line.startswith(f"collscope import: {log}: "), line   # the path as given, not a basename
    assert not out.exists()
    good = fixture_path("nccl-tests-logs", MI300X)
    proc = run_cli("import", str(good), str(log), "-o", str(out), "--skip-failed", "--json",
                   "-", timeout=60)
    assert proc.returncode == 0, proc.stderr
    summary = [json.loads(line) for line in proc.stdout.splitlines()]     # JSON Lines
    assert [(entry["kind"], entry["results"]) for entry in summary] == [("import_log", 62),
                                                                          ("import_log", 0)]
    assert "no result table" in summary[1]["error"] and summary[0]["error"] == ""
    assert len([r for r in read_records(out) if r["kind"] == "result"]) == 62


def test_import_to_stdout_and_bad_input(tmp_path: Path) -> None:
    log = fixture_path("nccl-tests-logs", MI300X)
    proc = run_cli("import", str(log), "-o", "-", "-q", timeout=60)
    assert proc.returncode == 0
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == 63 and records[0]["hosts"] == [
        "1942ef50-8240-449e-82ca-4ce7993f70b4-78bfb5d4f4-4z9xh"]
    usage_error(run_cli("import", str(tmp_path / "none.txt"), "-o", "x.jsonl"), "LOG",
                   "cannot read")
    usage_error(run_cli("import", str(log)), "-o/--output")


def test_secret_assignments_of_a_captured_command_line_are_never_written(tmp_path: Path) -> None:
    # The T4 log as posted, behind a command line that sets a token (and one MPI -genv secret).
    log = tmp_path / "sec.txt"
    log.write_text("$ NCCL_API_TOKEN=sekrit NCCL_SOCKET_IFNAME=ens5 mpirun -np 3 -genv HF_TOKEN "
                   "hunter2 all_reduce_perf -b 100M -e 110M -c 0 -n 1\n"
                   + fixture_path("nccl-tests-logs", T4).read_text())
    proc = run_cli("import", str(log), "-o", "-", "--json", str(tmp_path / "s.json"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout.splitlines()[0])
    written = proc.stdout + proc.stderr + (tmp_path / "s.json").read_text()
    assert "sekrit" not in written and "hunter2" not in written
    assert run["argv"][:2] == ["NCCL_API_TOKEN=<hidden>", "NCCL_SOCKET_IFNAME=ens5"]
    assert run["extra"]["command_line"].startswith(
        "NCCL_API_TOKEN=<hidden> NCCL_SOCKET_IFNAME=ens5 mpirun -np 3 -genv HF_TOKEN <hidden> ")
    assert run["env"] == {"NCCL_SOCKET_IFNAME": "ens5"}
    # The log's own srun line stays as it was (nothing secret in it).
    assert [c["text"][:6] for c in run["extra"]["other_command_lines"]] == ["srun -"]
    html = tmp_path / "sec.html"
    proc = run_cli("report", str(log), "-o", str(html), timeout=60)
    assert proc.returncode == 0, proc.stderr
    page = html.read_text()
    assert "sekrit" not in page + proc.stderr and "hunter2" not in page
    assert "NCCL_API_TOKEN=&lt;hidden&gt; NCCL_SOCKET_IFNAME=ens5 mpirun" in page


# Every way a posted log shows a secret (each value is unique, so a leak names its way in).
SECRETS_HEAD = """+ export HF_TOKEN=sq01
+ export NCCL_SOCKET_IFNAME=eth0
DB_PASS=sq02
MYSQL_PWD=sq03
HTTPS_PROXY=http://u:sq04@proxy:3128
cnode:1:1 [0] NCCL INFO NCCL_API_TOKEN set by environment to sq05
+ docker login -u me -p sq06 nvcr.io
+ git clone https://oauth2:sq07@gitlab.com/x.git
+ curl -H 'Authorization: Bearer sq08' https://x
$ mpirun -np 3 -x NCCL_IB_HCA=mlx5 -x DB_PASS=sq09 --password=sq10 -genv MY_PASS sq11 \
all_reduce_perf -b 100M -e 110M -c 0 -n 1 --url https://user:sq12@host/x
"""


def test_no_secret_of_a_posted_log_reaches_records_stderr_or_the_report(tmp_path: Path) -> None:
    log = tmp_path / "sec.txt"
    log.write_text(SECRETS_HEAD + fixture_path("nccl-tests-logs", T4).read_text())
    out = tmp_path / "sec.jsonl"
    proc = run_cli("import", str(log), "-o", str(out), timeout=60)
    assert proc.returncode == 0, proc.stderr
    html = tmp_path / "sec.html"
    shown = run_cli("report", str(out), str(log), "-o", str(html), timeout=60)
    assert shown.returncode == 0, shown.stderr
    written = out.read_text() + proc.stdout + proc.stderr + shown.stdout + shown.stderr + \
        html.read_text()
    assert re.findall(r"sq\d\d", written) == []
    run = read_records(out)[0]
    assert run["extra"]["command_line"].endswith("--url https://user:<hidden>@host/x")
    assert "-genv MY_PASS <hidden>" in run["extra"]["command_line"]
    assert run["env"] == {"NCCL_IB_HCA": "mlx5"}           # DB_PASS left out, not hidden
    lines = [c["text"] for c in run["extra"]["other_command_lines"]]
    assert "docker login -u me -p <hidden> nvcr.io" in lines
    assert "git clone https://oauth2:<hidden>@gitlab.com/x.git" in lines
    assert "NCCL_API_TOKEN set by environment to <hidden>" in proc.stderr
    assert "HTTPS_PROXY=http://u:<hidden>@proxy:3128" in proc.stderr


# ---------------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------------


def test_compare_identical_inputs_exit_0(tmp_path: Path) -> None:
    base = bench_file(tmp_path / "base.jsonl")
    proc = run_cli("compare", str(base), str(base), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert ("matched 32 rows (collective x placement x size; 8 distinct sizes): 0 regressed, "
            "0 improved, 32 within +-5% (judged by time)") in proc.stdout
    assert "REGRESSED" not in proc.stdout


def test_compare_slower_copy_exits_1_and_names_the_regressed_sizes(tmp_path: Path) -> None:
    log = fixture_path("nccl-tests-logs", MI300X)
    base = tmp_path / "base.jsonl"
    assert run_cli("import", str(log), "-o", str(base), timeout=60).returncode == 0
    new = scaled_copy(base, tmp_path / "new.jsonl", 1.2)
    proc = run_cli("compare", str(base), str(new), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "matched 62 rows (collective x placement x size; 31 distinct sizes): 62 regressed" \
        in proc.stdout
    report = proc.stdout.split("REGRESSED beyond 5%:")[1]
    expected = ["8 B", "1 KiB", "64 KiB", "1 MiB", "1 GiB", "8 GiB"]
    for placement in ("out-of-place", "in-place"):
        line = next(text for text in report.splitlines()
                    if f"all_reduce float sum {placement}:" in text)
        named = line.split(": ", 1)[1].split(", ")
        assert len(named) == 31
        assert all(size in named for size in expected)
    # Base against the log itself (a log is an input too): identical numbers.
    same = run_cli("compare", str(log), str(base), timeout=60)
    assert same.returncode == 0, same.stdout + same.stderr


def test_compare_threshold_json_and_only_some_sizes(tmp_path: Path) -> None:
    base = bench_file(tmp_path / "base.jsonl")
    new = tmp_path / "new.jsonl"
    records = read_records(base)
    for record in records:
        if record["kind"] == "result" and record["size_bytes"] == 1 << 21:
            record["time_us"] *= 1.2
    write_records(new, records)
    proc = run_cli("compare", str(base), str(new), "--json", "-", timeout=60)
    assert proc.returncode == 1
    head, *rows = [json.loads(line) for line in proc.stdout.splitlines()]   # JSON Lines
    assert head["kind"] == "compare" and {row["kind"] for row in rows} == {"compare_row"}
    assert (head["base"], head["new"], head["matched"]) == (str(base), str(new), len(rows))
    regressed = [r for r in rows if r["verdict"] == "regressed"]
    assert {(r["collective"], r["size_bytes"]) for r in regressed} == {
        ("all_reduce", 1 << 21), ("all_gather", 1 << 21)}
    assert all(r["time_delta_pct"] == pytest.approx(20.0) for r in regressed)
    loose = run_cli("compare", str(base), str(new), "--threshold", "25%", timeout=60)
    assert loose.returncode == 0, loose.stdout
    usage_error(run_cli("compare", str(base), str(new), "--threshold", "lots"),
                   "--threshold", "percentage")
    usage_error(run_cli("compare", str(base), str(new), "--metric", "speed"), "--metric")


def test_compare_says_each_malformed_line_of_either_input(tmp_path: Path) -> None:
    base = bench_file(tmp_path / "base.jsonl")
    garbled = tmp_path / "garb.jsonl"
    garbled.write_text(base.read_text() + "garbage line\n{\"kind\": \"result\"}\n")
    lines = len(base.read_text().splitlines())
    proc = run_cli("compare", str(base), str(garbled), timeout=60)
    assert proc.returncode == 0, proc.stderr          # the rest matched and did not regress
    assert proc.stderr.splitlines() == [
        f"collscope compare: garb.jsonl: line {lines + 1}: not JSON (Expecting value); skipped",
        f"collscope compare: garb.jsonl: line {lines + 2}: result record without collective, "
        "size_bytes, dtype, in_place, time_us, busbw_gbs; skipped"]
    assert "within +-5%" in proc.stdout
    # JSON to stdout stays JSON only; the warnings still go to stderr.
    proc = run_cli("compare", str(garbled), str(base), "--json", "-", timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout.splitlines()[0])["matched"] == 32
    assert len(proc.stderr.splitlines()) == 2


def test_compare_nothing_matching_exits_2_with_one_line(tmp_path: Path) -> None:
    base = bench_file(tmp_path / "base.jsonl", collectives=("all_reduce",))
    new = bench_file(tmp_path / "new.jsonl", collectives=("alltoall",))
    usage_error(run_cli("compare", str(base), str(new), timeout=60), "nothing matches")
    usage_error(run_cli("compare", str(base), str(tmp_path / "gone.jsonl"), timeout=60),
                   "cannot read")


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bench run: 2 gloo ranks, all_reduce and all_gather up to 64 KiB (~10 s)."""
    path = tmp_path_factory.mktemp("bench") / "bench.jsonl"
    proc = run_cli("bench", "all_reduce", "all_gather", "-e", "64K", "-n", "2", "-w", "0",
                   "--json", str(path), timeout=240)
    assert proc.returncode == 0, proc.stderr
    return path


@pytest.fixture(scope="module")
def report_html(bench_jsonl: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    log = fixture_path("nccl-tests-logs", MI300X)
    out = tmp_path_factory.mktemp("report")
    html = out / "report.html"
    proc = run_cli("report", str(bench_jsonl), str(log), "-o", str(html), "--png",
                   str(out / "png"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return html


def test_report_of_bench_and_log_holds_both_and_pngs(report_html: Path) -> None:
    page = report_html.read_text()
    assert page.count('<svg class="chart"') == 4          # all_reduce, all_gather: busbw, time
    assert "bench.jsonl · 2 ranks · in-place" in page
    assert "mi300x_8gpu_allreduce_rccl_k8s.txt · 8 ranks · out-of-place" in page
    assert "8 × AMD Instinct MI300X" in page and "gloo" in page and "rccl" in page
    pngs = sorted(p.name for p in (report_html.parent / "png").iterdir())
    assert pngs == ["all_gather_busbw.png", "all_gather_time.png", "all_reduce_busbw.png",
                    "all_reduce_time.png"]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium not installed (/usr/bin/chromium)")
def test_report_opens_in_chromium_with_charts_and_no_console_errors(
        report_html: Path, tmp_path: Path) -> None:
    dom = chromium(report_html, tmp_path / "profile", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    # Page messages (script errors, CSP refusals, failed loads) are logged as CONSOLE lines.
    assert not [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert dom.stdout.count('<svg class="chart"') == 4
    # busbw and time: all_reduce 1 bench + 2 log series, all_gather 2 bench series.
    assert len(re.findall(r"<polyline ", dom.stdout)) == 2 * (3 + 2)
    # Our script ran: it turned the 5 legend entries into buttons.
    assert len(re.findall(r'<li data-s="[^"]+" role="button" tabindex="0"', dom.stdout)) == 5
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    proc = chromium(report_html, tmp_path / "profile", f"--screenshot={shot}",
                     "--window-size=1400,2000")
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    assert not [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    shutil.copy(report_html, ARTIFACTS / "report.html")
    image = pytest.importorskip("PIL.Image").open(shot).convert("RGB")
    assert image.size == (1400, 2000)
    # The series colours are on screen: the charts were drawn, not just present in the DOM.
    colours = image.getcolors(maxcolors=1 << 20)
    counts = {rgb: n for n, rgb in colours}
    assert counts.get((0x1F, 0x6F, 0xB4), 0) > 200 and counts.get((0xE4, 0x73, 0x1C), 0) > 200


def test_report_escapes_hostile_input_and_draws_train_and_monitor(tmp_path: Path) -> None:
    source = write_records(tmp_path / "evil.jsonl", [
        run_record(EVIL, NCCL_DEBUG=EVIL), *train_records(EVIL), *samples(EVIL)])
    html = tmp_path / "r.html"
    proc = run_cli("report", str(source), "-o", str(html), "--title", EVIL, timeout=60)
    assert proc.returncode == 0, proc.stderr
    page = html.read_text()
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert len(re.findall(r"<script\b", page)) == 1
    assert 'id="train"' in page and 'id="monitor"' in page
    if CHROMIUM.exists():
        dom = chromium(html, tmp_path / "profile", "--dump-dom")
        assert not [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
        assert "<script>alert(1)</script>" not in dom.stdout.replace(
            "&lt;script&gt;alert(1)&lt;/script&gt;", "")


def test_report_says_what_an_input_holds_and_tabulates_overlap_records(tmp_path: Path) -> None:
    from collscope.records.model import PredictionRecord
    from collscope.records.train import OverlapResult

    # `model predict --json`: predictions and no run record.
    predictions = [PredictionRecord("all_reduce", size, 2, 8, 16, "ring", 10.0 * size, 1.0,
                                    9.0 * size, 11.0 * size).to_dict() for size in (1, 2)]
    overlap = OverlapResult(512, 2.0 * 512**3, "float32", 4 << 20, "float", 2, 20, 1.774,
                            4.276, 5.233, 0.062, 1.34, 1.436, 0.4587, 0.1513, "perf_counter")
    pred = write_records(tmp_path / "pred.jsonl", predictions)
    ov = write_records(tmp_path / "ov.jsonl", [run_record(command="overlap"), overlap.to_dict()])
    html = tmp_path / "r.html"
    proc = run_cli("report", str(pred), str(ov), "-o", str(html), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "collscope report: pred.jsonl: jsonl, no run record, 0 results, 2 prediction(s), "
        "0 warning(s)",
        "collscope report: ov.jsonl: jsonl, 1 run(s), 0 results, 1 overlap record(s), "
        "0 warning(s)"]
    page = html.read_text()
    assert '<section id="overlap">' in page and "skipped" not in page
    row = page.split('<section id="overlap">')[1].split("</tr>")[1]
    assert ("ov.jsonl: overlap efficiency 0.46 (t_compute 1.77 ms, t_comm 4.28 ms, t_both "
            "5.23 ms)") in page                            # its headline, above the table
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
    assert cells[:8] == ["ov.jsonl", "2", "512x512x512 float32", "4 MiB float",
                         "1.77 (IQR 0.062)", "4.28 (IQR 1.34)", "5.23 (IQR 1.44)", "0.46"]
    # An overlap file alone is something to report, not "nothing to plot".
    assert run_cli("report", str(ov), "-o", str(html), timeout=60).returncode == 0


def test_report_of_a_watch_file_alone_draws_it_with_its_pngs(tmp_path: Path) -> None:
    # A watch file holds no result: its windows are something to report, not "nothing to plot".
    watch = fixture_path("own", "watch", "watch_4ranks_gloo_straggler_rank2.jsonl")
    html = tmp_path / "watch.html"
    proc = run_cli("report", str(watch), "-o", str(html), "--png", str(tmp_path / "png"),
                   timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ("collscope report: watch_4ranks_gloo_straggler_rank2.jsonl: jsonl, 1 run(s), "
            "0 results, 75 watch record(s), 0 warning(s)") in proc.stderr
    assert '<section id="watch"><h2>Watched jobs</h2>' in html.read_text()
    assert [p.name for p in (tmp_path / "png").iterdir()] == [
        "watch_lateness_watch_4ranks_gloo_straggler_rank2.jsonl_0.png"]


def test_report_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    usage_error(run_cli("report", str(tmp_path / "missing.jsonl"), "-o", "r.html"),
                   "INPUT", "cannot read")
    failed = fixture_path("nccl-tests-logs", FAILED_RUN)
    usage_error(run_cli("report", str(failed), "-o", str(tmp_path / "r.html")),
                   "INPUT", "no result table")
    only_run = write_records(tmp_path / "run.jsonl", [run_record()])
    usage_error(run_cli("report", str(only_run), "-o", str(tmp_path / "r.html")),
                   "nothing to plot")
    usage_error(run_cli("report", str(only_run)), "-o/--output")
    assert not (tmp_path / "r.html").exists()


def test_help_of_the_three_commands() -> None:
    for command, words in (("import", ["-o", "--skip-failed", "exit codes"]),
                           ("report", ["--png", "offline", "exit codes"]),
                           ("compare", ["--threshold", "exit codes", "regress"])):
        proc = run_cli(command, "--help", timeout=60)
        assert proc.returncode == 0
        for word in words:
            assert word in proc.stdout


def test_compare_judges_a_slower_run_appended_to_new_and_warns_of_unjudged_ones(
        tmp_path: Path) -> None:
    log = fixture_path("nccl-tests-logs", MI300X)
    base = tmp_path / "base.jsonl"
    assert run_cli("import", str(log), "-o", str(base), timeout=60).returncode == 0
    slow = scaled_copy(base, tmp_path / "slow.jsonl", 1.5)
    appended = tmp_path / "appended.jsonl"
    appended.write_text(base.read_text() + slow.read_text())
    proc = run_cli("compare", str(base), str(appended), timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "matched 124 rows (collective x placement x size; 31 distinct sizes): 62 regressed, " \
           "0 improved, 62 within" in proc.stdout
    assert "not judged" not in proc.stderr
    # A NEW holding results BASE has no counterpart for: exit by the judged rows, but said.
    other = fixture_path("nccl-tests-logs", "mi300x_2node_16gpu_allreduce_rccl.txt")
    mixed = tmp_path / "mixed.jsonl"
    assert run_cli("import", str(log), str(other), "-o", str(mixed), timeout=60).returncode == 0
    proc = run_cli("compare", str(base), str(mixed), timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"warning: \d+ result\(s\) of mixed.jsonl not judged", proc.stderr)


def test_import_reads_a_log_given_twice_or_copied_once(tmp_path: Path) -> None:
    log = fixture_path("nccl-tests-logs", MI300X)
    copy = tmp_path / "copy.txt.gz"
    copy.write_bytes(gzip.compress(log.read_bytes()))          # a copy, compressed
    once, out = tmp_path / "once.jsonl", tmp_path / "out.jsonl"
    assert run_cli("import", str(log), "-o", str(once), timeout=60).returncode == 0
    proc = run_cli("import", str(log), str(log), str(copy), "-o", str(out), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {log}: the same file as {log}; read once" in proc.stderr
    assert f"warning: {copy}: the same content as {log}" in proc.stderr
    records = read_records(out)
    assert records == read_records(once)
    assert sum(r["kind"] == "run" for r in records) == 1
