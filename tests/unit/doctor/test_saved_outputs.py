"""doctor --from on tool outputs as users really save them (review 2 items 2-4, 8, 14, 15, 20):
encodings, a prompt line pasted above a CSV, noheader CSV of other fields, several tools in one
file, launcher prefixes, rocm-smi's two tables in one file, single (compressed) files.

Bundles are built at test time from the real outputs in tests/fixtures/tool-outputs, each
transformed the way a shell, a launcher or a Windows editor would; the values asserted are the
fixtures' own (8 x NVIDIA H200, 143771 MiB = 150754820096 B, driver 570.211.01, HCAs mlx5_0 and
mlx5_1, UCX 1.15.0 --with-cuda, NCCL 2.18.3; MI308X VRAM 206141652992 B, GPU 0 using 297611264 B).
"""

from __future__ import annotations

import bz2
import codecs
import gzip
from collections.abc import Callable

import pytest

from collscope.doctor.bundle import read_bundle
from collscope.doctor.checks import run_checks
from collscope.doctor.facts import Facts, facts_from
from collscope.errors import UsageError
from collscope.parsers.decode import decode_capture
from tests.conftest import fixture_path

H200_BYTES = 143771 * (1 << 20)
NV_BUNDLE = {
    "nvidia-smi-query-gpu.csv": "nvidia-smi_query-gpu_csv_h200_8gpu.txt",
    "nvidia-smi-topo-m.txt": "nvidia-smi_topo_m_h200_8gpu_8nic.txt",
    "ibv_devinfo-v.txt": "ibv_devinfo_vv_connectx6_2hca.txt",
    "ucx_info-v.txt": "ucx_info_v_ucx1.15_cuda_h100.txt",
    "nccl-debug.log": "nccl_debug_info_h800_8gpu_socket_init_excerpt.txt",
}
ROCM_SMI_BOTH = "rocm-smi_concise_and_showuse_showmeminfo_vram_mi308x_8gpu.txt"


def real(name: str) -> str:
    return fixture_path("tool-outputs", name).read_text()


def nv_bundle(transform: Callable[[str], str] = lambda text: text) -> dict[str, str]:
    return {slot: transform(real(name)) for slot, name in NV_BUNDLE.items()}


def assert_h200_node(facts: Facts) -> None:
    """What the plain bundle reads as, every fact from its own tool."""
    assert [(g.index, g.name, g.memory_bytes, g.driver_version) for g in facts.gpus] == [
        (i, "NVIDIA H200", H200_BYTES, "570.211.01") for i in range(8)]
    assert facts.topology is not None and facts.topology.gpus == 8
    assert facts.topology.link_type[0][1] == "nvlink"
    assert [d.name for d in facts.rdma] == ["mlx5_0", "mlx5_1"]
    assert facts.ucx_version is not None and facts.ucx_version.version == "1.15.0"
    assert facts.ucx_version.with_cuda is True
    assert facts.nccl_log is not None and facts.nccl_log.version == "2.18.3"
    assert facts.unrecognised == []


def titles(facts: Facts, check: str) -> list[str]:
    return [f"{f.level} {f.title}" for f in run_checks(facts) if f.id == check]


# --------------------------------------------------------------------------- item 2: encodings

ENCODINGS: dict[str, Callable[[str], bytes]] = {
    "utf8-bom": lambda t: codecs.BOM_UTF8 + t.encode(),
    "utf16-le-bom-crlf": lambda t: codecs.BOM_UTF16_LE + t.replace("\n", "\r\n").encode(
        "utf-16-le"),
    "trailing-nuls": lambda t: t.encode() + b"\0" * 512,
    "ansi-bold": lambda t: "".join(f"\x1b[1m{line}\x1b[0m\n" for line in t.splitlines()).encode(),
}


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_bundle_members_in_any_encoding_read_like_the_plain_bundle(tmp_path, encoding):
    for slot, text in nv_bundle().items():
        (tmp_path / slot).write_bytes(ENCODINGS[encoding](text))
    (tmp_path / "env.txt").write_bytes(ENCODINGS[encoding]("NCCL_IB_HCA=mlx5_0\n"))
    facts = facts_from(read_bundle(tmp_path))
    assert_h200_node(facts)            # no phantom 9th GPU "name", first HCA kept
    assert facts.env == {"NCCL_IB_HCA": "mlx5_0"}
    assert any(f.id == "env.ib-hca" for f in run_checks(facts))


# --------------------------------------------------------------------------- items 3, 4: CSV

def test_query_gpu_csv_after_a_pasted_prompt_line():
    capture = nv_bundle()
    capture["nvidia-smi-query-gpu.csv"] = ("$ nvidia-smi --query-gpu=index,name,memory.total,"
                                           "driver_version,power.limit,pstate --format=csv\n"
                                           + capture["nvidia-smi-query-gpu.csv"])
    facts = facts_from(capture)
    assert_h200_node(facts)            # was 10 GPUs: "None" and "name" among them
    assert titles(facts, "gpu.inventory") == ["ok 8 GPU(s): 8 x NVIDIA H200"]


def test_noheader_csv_of_other_fields_is_not_read_and_says_so():
    # The real CSV's rows without their header: index, name, memory, driver, power, pstate is
    # not doctor's field list, so the driver column would be "P0" in a fixed-field parse.
    rows = real(NV_BUNDLE["nvidia-smi-query-gpu.csv"]).split("\n", 1)[1]
    facts = facts_from({"nvidia-smi-query-gpu.csv": rows})
    assert facts.gpus == []
    assert facts.unrecognised == ["nvidia-smi-query-gpu.csv"]
    # Another field order (name, bus id, memory total, memory used, utilisation): no GPU
    # named by its bus id, no "Mixed GPU models".
    other = ("NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559 MiB, 76000 MiB, 0 %\n"
             "NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559 MiB, 0 MiB, 0 %\n")
    facts = facts_from({"nvidia-smi-query-gpu.csv": other})
    assert facts.gpus == [] and facts.unrecognised == ["nvidia-smi-query-gpu.csv"]
    assert not [t for t in titles(facts, "gpu.inventory") if "Mixed" in t]


def test_noheader_csv_of_doctors_own_fields_is_still_read():
    row = ("0, NVIDIA H200, 143771, 10, 3, 570.211.01, 00000000:18:00.0, "
           "GPU-0c7ea4b3-1111-2222-3333-444455556666, 5, 16, 5, 16\n")
    facts = facts_from({"nvidia-smi-query-gpu.csv": row})
    assert [(g.name, g.memory_bytes, g.driver_version, g.pci_bus_id) for g in facts.gpus] == [
        ("NVIDIA H200", H200_BYTES, "570.211.01", "00000000:18:00.0")]
    assert facts.unrecognised == []


def test_several_tools_outputs_in_one_file_each_read_by_its_parser():
    # A node report script's output: every tool one after the other in one file.
    order = ["ibv_devinfo-v.txt", "nccl-debug.log", "nvidia-smi-query-gpu.csv",
             "nvidia-smi-topo-m.txt", "ucx_info-v.txt"]
    capture = nv_bundle()
    facts = facts_from({"node0.txt": "\n".join(capture[slot] for slot in order)})
    assert_h200_node(facts)            # was "909 GPU(s): 775 x unknown model"
    assert set(facts.read_as["node0.txt"].split(", ")) >= set(order)


# --------------------------------------------------------------------------- items 8, 15

PREFIXES: dict[str, Callable[[int, str], str]] = {
    "srun -l": lambda i, line: f"0: {line}",
    "srun -l, padded": lambda i, line: f" 3: {line}",
    "mpirun --tag-output": lambda i, line: f"[1,{i % 8}]<stdout>:{line}",
    "kubectl --timestamps": lambda i, line: f"2025-01-02T03:04:{i % 60:02d}.123456789Z {line}",
}


@pytest.mark.parametrize("launcher", sorted(PREFIXES))
def test_tool_outputs_with_launcher_prefixes_read_like_the_plain_ones(launcher):
    prefix = PREFIXES[launcher]
    facts = facts_from(nv_bundle(lambda text: "\n".join(
        prefix(i, line) for i, line in enumerate(text.splitlines())) + "\n"))
    assert_h200_node(facts)
    assert not [t for t in titles(facts, "ucx.build") if "lacks" in t]
    assert sorted(facts.prefixes) == sorted(NV_BUNDLE)
    (said,) = [t for t in titles(facts, "tools.recognised") if "prefix" in t]
    assert said == "info Launcher prefix stripped from 5 file(s)"


def test_nccl_log_with_tag_output_is_read_and_not_called_unrecognised():
    for name, version in (("nccl_debug_info_h800_8gpu_socket_init_excerpt.txt", "2.18.3"),
                          ("rccl_debug_info_mi300x_8gpu_azure_net_ib_excerpt.txt", None)):
        tagged = "".join(f"[1,{i % 8}]<stdout>:{line}\n"
                         for i, line in enumerate(real(name).splitlines()))
        facts = facts_from({"nccl-debug.log": tagged})
        assert facts.nccl_log is not None and facts.nccl_log.version == version
        assert facts.unrecognised == [] and titles(facts, "tools.unrecognised") == []


def test_unparsed_ucx_info_reads_as_unknown_not_as_lacking_cuda():
    capture = nv_bundle()
    capture["ucx_info-v.txt"] = "ucx_info: some wrapper printed this instead\n"
    facts = facts_from(capture)
    (ucx,) = titles(facts, "ucx.build")
    assert ucx == "info UCX build unknown: ucx_info output not understood"


# --------------------------------------------------------------------------- item 14

def test_rocm_smi_concise_and_showmeminfo_in_one_file_gives_vram_bytes():
    facts = facts_from({"rocm-smi.txt": real(ROCM_SMI_BOTH)})
    assert [(g.name, g.memory_bytes) for g in facts.gpus] == [
        ("AMD Instinct MI308X", 206141652992)] * 8
    assert facts.read_also == {"rocm-smi.txt": "rocm-smi--showmeminfo-vram.txt"}
    gpu0 = facts.usage.gpus[0]
    assert (gpu0.mem_total_bytes, gpu0.mem_used_bytes) == (206141652992, 297611264)
    # the same outputs in two files read the same
    split = facts_from({"rocm-smi.txt": real(ROCM_SMI_BOTH),
                        "rocm-smi--showmeminfo-vram.txt": real(ROCM_SMI_BOTH)})
    assert [g.memory_bytes for g in split.gpus] == [g.memory_bytes for g in facts.gpus]
    assert split.usage.gpus[0].mem_used_bytes == 297611264


# --------------------------------------------------------------------------- item 20

@pytest.mark.parametrize(("suffix", "pack"), [("", lambda b: b), (".gz", gzip.compress),
                                              (".bz2", bz2.compress)])
def test_a_single_tool_output_file_is_a_bundle_of_one(tmp_path, suffix, pack):
    text = real(NV_BUNDLE["nvidia-smi-topo-m.txt"])
    path = tmp_path / f"topo.txt{suffix}"
    path.write_bytes(pack(text.encode()))
    capture = read_bundle(path)
    assert capture == {"topo.txt": decode_capture(text.encode())}
    facts = facts_from(capture)
    assert facts.read_as == {"topo.txt": "nvidia-smi-topo-m.txt"}
    assert facts.topology is not None and facts.topology.gpus == 8


def test_unreadable_single_files_are_one_line_usage_errors(tmp_path):
    cases = {"b.zip": b"PK\x03\x04" + b"\0" * 64, "b.bin": bytes(range(256)) * 40,
             "empty.txt": b"", "bad.gz": b"\x1f\x8b" + b"not gzip data" * 8}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(UsageError) as error:
            read_bundle(tmp_path / name)
        message = str(error.value)
        assert "\n" not in message and name in message
        assert "one tool's output file (plain, .gz, .bz2 or .xz)" in message
        assert "not a gzip" not in message


def test_memory_only_list_does_not_lead_the_gpu_inventory():
    # rocm-smi.txt's --showmeminfo part (8 GPUs, memory only) is as long as the concise
    # table's list: the named list leads, so amd-smi static's one-GPU excerpt ("MI308X")
    # fills no name and the node is not "1 x MI308X, 7 x AMD Instinct MI308X".
    facts = facts_from({"rocm-smi.txt": real(ROCM_SMI_BOTH),
                        "amd-smi-static.txt": real("amd-smi_static_asic_mi308x.txt")})
    assert [g.name for g in facts.gpus] == ["AMD Instinct MI308X"] * 8
    assert titles(facts, "gpu.inventory") == ["ok 8 GPU(s): 8 x AMD Instinct MI308X"]


def test_a_file_whose_parser_read_it_is_never_also_unrecognised():
    # A topo -m matrix pasted without its legend and affinity columns matches no signature,
    # but its parser reads it: the report shows the matrix, so the file is not "not read".
    matrix = "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n"
    facts = facts_from({"nvidia-smi-topo-m.txt": matrix})
    assert facts.topology is not None and facts.topology.link_type[0][1] == "nvlink"
    assert facts.unrecognised == [] and titles(facts, "tools.unrecognised") == []
    # and a file not read says why, from its parser
    rows = real(NV_BUNDLE["nvidia-smi-query-gpu.csv"]).split("\n", 1)[1]
    (said,) = [f for f in run_checks(facts_from({"nvidia-smi-query-gpu.csv": rows}))
               if f.id == "tools.unrecognised"]
    assert "a --query-gpu CSV of other fields" in said.detail
