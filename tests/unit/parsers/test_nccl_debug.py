"""NCCL/RCCL NCCL_DEBUG=INFO log parser: real H800 and MI300X logs (read in place), samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from collscope.parsers.common import Parsed
from collscope.parsers.nccl_debug import NcclDebugSummary, NcclNic, parse_nccl_debug
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.unit.parsers import mutations

OWN = OWN_FIXTURES / "tool-outputs"


def _real(name: str) -> NcclDebugSummary:
    parsed = parse_nccl_debug(fixture_path("tool-outputs", name).read_text())
    assert parsed.warnings == []
    return parsed.value


def test_nccl_h800_socket_fallback() -> None:
    s = _real("nccl_debug_info_h800_8gpu_socket_init_excerpt.txt")
    assert s.library == "NCCL"
    assert s.version == "2.18.3"
    assert s.versions_seen == ["2.18.3+cuda12.2"]
    assert s.cuda_version == "12.2"
    assert s.cuda_driver_version == 12020
    assert s.hosts == ["nf5688m7-1"]
    assert s.nranks == 8
    assert s.bootstrap_interface == "enx785ee8a015a1"
    assert s.bootstrap_address == "10.59.6.30"
    assert s.ib_no_device is True
    assert s.network == "Socket"
    assert s.network_counts == {"Socket": 8}
    assert s.uses_socket_only
    assert s.nics == [
        NcclNic(net="Socket", index=0, name="enx785ee8a015a1", address="10.59.6.30"),
        NcclNic(net="Socket", index=1, name="veth6f0b7dd",
                address="fe80::90a4:35ff:fe22:2c98%veth6f0b7dd"),
    ]
    assert s.net_plugin == "internal"
    assert s.nvls_available is True
    assert s.nchannels == 16
    assert len(s.rings) == 16
    assert s.rings[0] == [0, 3, 1, 2, 4, 7, 5, 6]
    assert s.rings[15] == [0, 3, 1, 2, 4, 7, 5, 6]
    assert s.transport_counts == {"P2P/direct pointer": 4}
    assert s.transport_kind_counts == {"P2P": 4}
    assert s.gdrdma_used is False

    assert [r.rank for r in s.ranks] == list(range(8))  # sorted by rank
    ranks = {r.rank: r for r in s.ranks}
    assert ranks[0].bus_id == "f000" and ranks[7].bus_id == "d7000"
    assert all(r.network == "Socket" for r in s.ranks)
    assert len(ranks[2].trees) == 16
    tree = ranks[2].trees[0]  # "4/-1/-1->2->1"
    assert tree.text == "4/-1/-1->2->1"
    assert tree.children == [4, -1, -1] and tree.parent == 1
    assert ranks[0].trees[0].parent == -1  # the root
    assert ranks[1].transport_counts == {"P2P/direct pointer": 2}


def test_rccl_mi300x_net_ib() -> None:
    s = _real("rccl_debug_info_mi300x_8gpu_azure_net_ib_excerpt.txt")
    assert s.library == "RCCL"  # from the .../rccl/... path; this excerpt has no banner
    assert s.network == "IB"
    assert s.network_counts == {"IB": 1}
    assert [n.name for n in s.nics] == [f"mlx5_ib{i}" for i in range(8)] + ["mlx5_an0"]
    assert {n.link for n in s.nics[:8]} == {"IB"}
    assert s.nics[8] == NcclNic(net="IB", index=8, name="mlx5_an0", port=1, link="RoCE")
    assert s.ib_relaxed_ordering is True
    assert s.oob_interface == "eth0"
    assert "Using non-device net plugin version 0" in s.plugin_messages
    assert not s.uses_socket_only


def test_rccl_mi300x_version_banner() -> None:
    s = _real("rccl_debug_info_mi300x_8gpu_azure_version_header_excerpt.txt")
    assert s.library == "RCCL"
    assert s.version == "2.21.5"
    assert s.git_revision == "HEAD:eef7b29"
    assert s.hip_version == "6.3.42131-fa1d09cbd"
    assert s.rocm_version == "6.3.0.0-39-ce2be3b"
    assert s.rocr_version == "1.14"
    assert s.library_path == "/opt/rocm/lib/librccl.so.1"
    assert s.kernel_version == "5.15.0-1086-azure"
    assert s.cuda_version is None
    assert s.bootstrap_interface == "eth0"
    assert s.bootstrap_address == "10.215.224.34"
    assert s.env == {"NCCL_SOCKET_IFNAME": "eth0"}
    assert s.net_plugin == "internal"


def test_two_node_ib_gdrdma_sample() -> None:
    parsed = parse_nccl_debug((OWN / "nccl_debug_info_2node_ib_gdr_sample.txt").read_text())
    assert parsed.warnings == []
    s = parsed.value
    assert (s.library, s.version, s.cuda_version) == ("NCCL", "2.19.3", "12.3")
    assert s.hosts == ["gpu-a", "gpu-b"]  # "[default0]:" launcher prefixes are tolerated
    assert s.nranks == 4
    assert s.network == "IB" and s.network_counts == {"IB": 4}
    assert [(n.name, n.port, n.link) for n in s.nics] == [("mlx5_0", 1, "IB"),
                                                          ("mlx5_1", 1, "IB")]
    assert s.oob_interface == "ib0"
    assert s.gdr_hca == {"mlx5_0": True, "mlx5_1": True}
    assert s.gdrdma_used is True
    assert s.transport_counts == {"P2P/IPC": 4, "NET/IB/1/GDRDMA": 4, "NET/IB/0/GDRDMA": 4,
                                  "SHM/direct/direct": 1}
    assert s.transport_kind_counts == {"P2P": 4, "NET": 8, "SHM": 1}
    assert s.nchannels == 2
    assert (s.coll_channels, s.collnet_channels, s.nvls_channels, s.p2p_channels) == (2, 2, 0, 2)
    assert s.nvls_available is False
    assert s.rings == {0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}
    assert s.env == {"NCCL_IB_HCA": "mlx5_0,mlx5_1"}
    assert s.init_complete == 4
    assert len(s.log_warnings) == 1 and "status=12" in s.log_warnings[0]
    ranks = {r.rank: r for r in s.ranks}
    assert (ranks[2].host, ranks[2].device) == ("gpu-b", 0)
    assert ranks[2].transport_counts == {"P2P/IPC": 2, "NET/IB/0/GDRDMA": 2}
    assert ranks[1].trees[1].children == [-1, -1, -1] and ranks[1].trees[1].parent == 0


def test_rccl_sample_plugin_and_comm_suffixes() -> None:
    parsed = parse_nccl_debug((OWN / "rccl_debug_info_mi250x_xgmi_sample.txt").read_text())
    assert parsed.warnings == []
    s = parsed.value
    assert (s.library, s.version, s.git_revision) == ("RCCL", "2.18.3", "develop:7c1e2ab")
    assert s.hip_version == "6.0.32830-d62f6a171"
    assert s.net_plugin == "AWS Libfabric"
    assert s.network == "AWS Libfabric"
    # RCCL appends "comm 0x... nRanks NN" after the transport
    assert s.transport_counts == {"P2P/IPC": 4, "P2P/IPC/read": 1}
    assert s.nchannels == 4
    assert s.rings[3] == [0, 1]
    assert [t.text for t in s.ranks[0].trees] == ["1/-1/-1->0->-1", "1/-1/-1->0->-1",
                                                  "-1/-1/-1->0->1", "-1/-1/-1->0->1"]
    assert s.init_complete == 2


@pytest.mark.parametrize(("line", "expected"), [
    ("NCCL version 2.18.5+cuda12.2", ("NCCL", "2.18.5", "12.2", None)),
    ("h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4", ("NCCL", "2.21.5", "12.4", None)),
    ("NCCL version 2.13.4+hip5.4 HEAD:2bff3e6", ("RCCL", "2.13.4", None, "HEAD:2bff3e6")),
    ("h:1:1 [0] NCCL INFO RCCL version : 2.27.7-HEAD:0d2c4fd",
     ("RCCL", "2.27.7", None, "HEAD:0d2c4fd")),
])
def test_version_forms(line: str, expected: tuple[str, str, str | None, str | None]) -> None:
    s = parse_nccl_debug(line).value
    assert (s.library, s.version, s.cuda_version, s.git_revision) == expected


def test_other_prefix_forms_and_messages() -> None:
    text = "\n".join([
        "(RayWorkerWrapper pid=927) corona:927:927 [0] NCCL INFO Using network Socket",
        "(RayWorkerWrapper pid=927) HIP version  : 7.0.51831-a3e329ad8",
        "[2026-01-01 00:00:00] node [3] NCCL INFO Using network IB",
        "h:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)",
        "h:1:2 [0] NCCL INFO NET/Plugin: Loaded coll plugin SHARP (v8)",
        "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)",
        "h:1:2 [0] NCCL INFO 4 coll channels, 4 p2p channels, 1 p2p channels per peer",
        "h:1:2 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via NET/Socket/0",
    ])
    parsed = parse_nccl_debug(text)
    assert parsed.warnings == []
    s = parsed.value
    assert s.hip_version == "7.0.51831-a3e329ad8" and s.library == "RCCL"
    assert s.network_counts == {"Socket": 1, "IB": 1}
    node = next(r for r in s.ranks if r.host == "node")
    assert node.pid is None and node.device == 3
    assert s.net_plugin == "NCCL RDMA Plugin v8"
    assert s.coll_plugin == "SHARP"
    assert s.gdr_hca == {"mlx5_0": False}
    assert (s.nchannels, s.p2p_channels) == (4, 4)
    assert s.transport_counts == {"NET/Socket/0": 1}


def test_mixed_versions_are_all_kept() -> None:
    text = ("a:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
            "b:2:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
    assert parse_nccl_debug(text).value.versions_seen == ["2.18.3+cuda12.2", "2.21.5+cuda12.4"]


def test_explicit_nchannels_and_malformed_channel_line() -> None:
    text = ("h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 nchannels 6\n"
            "h:1:1 [0] NCCL INFO Channel 00/02 : 0[0] -> ??? via\n")
    parsed = parse_nccl_debug(text)
    assert parsed.value.nchannels == 6
    assert any("channel line" in w for w in parsed.warnings)


def test_text_without_nccl_lines_warns() -> None:
    parsed = parse_nccl_debug("Traceback (most recent call last):\n")
    assert parsed.value.version is None
    assert parsed.warnings == ["no NCCL/RCCL log lines found"]


SAMPLES = mutations.sample_params(
    ["nccl_debug_info_h800_8gpu_socket_init_excerpt.txt",
     "rccl_debug_info_mi300x_8gpu_azure_net_ib_excerpt.txt",
     "rccl_debug_info_mi300x_8gpu_azure_version_header_excerpt.txt"],
    ["nccl_debug_info_2node_ib_gdr_sample.txt", "rccl_debug_info_mi250x_xgmi_sample.txt"],
)


def _summary(_parser: object, result: Parsed[Any]) -> None:
    assert isinstance(result.value, NcclDebugSummary)


def _few_warnings(parser: object, result: Parsed[Any]) -> None:
    _summary(parser, result)
    assert len(result.warnings) <= 30


@pytest.mark.parametrize("path", SAMPLES)
def test_mutated_samples_never_raise(path: Path) -> None:
    mutations.assert_parsers_never_raise([parse_nccl_debug], path, check=_few_warnings)


def test_arbitrary_text_never_raises() -> None:
    mutations.assert_parsers_never_raise([parse_nccl_debug], st.text(), check=_summary,
                                         max_examples=80)


@pytest.mark.parametrize("line", [
    "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via a" + " " * 100_000 + "b",
    "h:1:1 [0] NCCL INFO NET/Socket : Using " + "[0]a:b" * 20_000,
    "NCCL version 1.2.3-" + "a" * 100_000,
    "NCCL " + "h" * 100_000,
    "h:1:1 [0] NCCL INFO " + "1" * 100_000 + " coll channels",
])
def test_long_lines_stay_linear(line: str) -> None:
    mutations.assert_long_lines_stay_fast([parse_nccl_debug], [line], 2.0)
