"""What NCCL/RCCL debug logs say about the transport: a TCP socket fall-back where InfiniBand
was expected, GPUDirect RDMA on only some NICs (issues users raise in rccl/nccl threads)."""

from __future__ import annotations

from collscope.parsers.nccl_debug import parse_nccl_debug
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.helpers import amd_node, cpu_node, findings_of

OWN = OWN_FIXTURES / "tool-outputs"


def _log(name: str, real: bool = False):
    path = fixture_path("tool-outputs", name) if real else OWN / name
    return parse_nccl_debug(path.read_text()).value


# --------------------------------------------------------------------------- sockets

def test_socket_fallback_in_a_multi_node_job_fails_with_the_verbs_library_named() -> None:
    facts = cpu_node(nccl_log=_log("nccl_debug_info_2node_socket_fallback_libibverbs_sample.txt"))
    (finding,) = findings_of(facts, "nccl.socket-fallback")
    assert finding.level == "fail"
    assert finding.title == ("NCCL fell back to TCP sockets (Using network Socket) on a 2-node "
                             "job (trn-a, trn-b)")
    assert "Failed to open libibverbs.so[.1]" in finding.detail
    for needle in ("libibverbs1", "rdma-core", "/dev/infiniband", "--device=/dev/infiniband",
                   "IPC_LOCK", "RDMA device plugin"):
        assert needle in finding.fix


def test_socket_fallback_on_one_node_warns() -> None:
    facts = cpu_node(nccl_log=_log("nccl_debug_info_h800_8gpu_socket_init_excerpt.txt", True))
    (finding,) = findings_of(facts, "nccl.socket-fallback")
    assert finding.level == "warn" and finding.title.endswith("on one node")
    assert "NET/IB : No device found" in finding.detail


def test_no_socket_finding_when_ib_is_used() -> None:
    assert findings_of(cpu_node(nccl_log=_log("nccl_debug_info_2node_ib_gdr_sample.txt")),
              "nccl.socket-fallback") == []


def test_socket_fallback_on_one_host_is_not_hidden_by_another_hosts_ib() -> None:
    # trn-a could not open libibverbs and logged "Using network Socket"; trn-b used IB.
    facts = cpu_node(nccl_log=_log("nccl_debug_info_2node_socket_on_one_host_own.txt"))
    (finding,) = findings_of(facts, "nccl.socket-fallback")
    assert finding.level == "fail"
    assert finding.title == ("NCCL fell back to TCP sockets (Using network Socket) on 1 of 2 "
                             "nodes: trn-a")
    assert "Failed to open libibverbs.so[.1]" in finding.detail
    assert "other nodes (trn-b) use IB" in finding.detail


# --------------------------------------------------------------------------- GPUDirect RDMA

def test_gdr_disabled_hca_is_named_without_channel_lines() -> None:
    # Only "GPU Direct RDMA Enabled/Disabled for HCA" lines, no "via NET/..." channel lines.
    facts = amd_node(nccl_log=_log("rccl_debug_info_1node_gdr_disabled_hca_own.txt"))
    (finding,) = findings_of(facts, "nccl.partial-gdr")
    assert finding.title == ("GPUDirect RDMA on only some NICs: not on mlx5_1 (GPU Direct RDMA "
                             "disabled)")
    assert "Channels via" not in finding.detail
    assert "enabled for mlx5_0 and disabled for mlx5_1" in finding.detail


def test_gdr_on_only_some_nics_names_the_others() -> None:
    facts = amd_node(nccl_log=_log("rccl_debug_info_2node_partial_gdr_sample.txt"))
    (finding,) = findings_of(facts, "nccl.partial-gdr")
    assert finding.level == "warn"
    assert finding.title == "GPUDirect RDMA on only some NICs: not on NET/IB/1 (mlx5_1)"
    assert "NET/IB/0/GDRDMA" in finding.detail
    for needle in ("nvidia-peermem", "dma-buf", "NCCL_NET_GDR_LEVEL", "placement"):
        assert needle in finding.fix


def test_no_gdr_finding_when_every_nic_uses_it() -> None:
    assert findings_of(amd_node(nccl_log=_log("nccl_debug_info_2node_ib_gdr_sample.txt")),
              "nccl.partial-gdr") == []


def test_partial_gdr_names_the_ib_nic_not_the_socket_nic_of_the_same_index() -> None:
    log = parse_nccl_debug(
        "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>\n"
        "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>\n"
        "h:1:1 [0] NCCL INFO Using network IB\n"
        "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
        "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1\n").value
    (finding,) = findings_of(amd_node(nccl_log=log), "nccl.partial-gdr")
    assert finding.title == "GPUDirect RDMA on only some NICs: not on NET/IB/1 (mlx5_1)"
