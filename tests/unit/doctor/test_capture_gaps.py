"""What a capture lacks or holds oddly: RDMA devices not captured (not "no RDMA device"),
a commands.json whose argv is not a list."""

from __future__ import annotations

from collscope.doctor.facts import facts_from
from tests.conftest import OWN_FIXTURES
from tests.helpers import findings_of

OWN = OWN_FIXTURES / "tool-outputs"


def test_rdma_not_captured_is_not_reported_as_no_device() -> None:
    log = (OWN / "rccl_debug_info_1node_gdr_disabled_hca_own.txt").read_text()
    facts = facts_from({"nccl-debug.log": log})            # no sysfs, ibv_devinfo nor ibstat
    assert facts.rdma == [] and facts.rdma_captured is False
    (finding,) = findings_of(facts, "network.rdma-ports")
    assert finding.title == "RDMA devices not captured"
    assert "TCP" not in finding.detail
    assert "The RCCL log names IB NIC(s): mlx5_0:1, mlx5_1:1." in finding.detail
    assert "ibv_devinfo-v.txt" in finding.fix


def test_no_rdma_device_when_sysfs_was_captured() -> None:
    facts = facts_from({"sysfs/sys/class/net/eth0/operstate": "up\n"})
    (finding,) = findings_of(facts, "network.rdma-ports")
    assert facts.rdma_captured and finding.title == "No RDMA device (InfiniBand/RoCE)"


def test_commands_json_with_a_non_list_argv_is_read() -> None:
    facts = facts_from({"commands.json": '{"x.txt": {"argv": true, "status": "ok"}}'})
    assert facts.tools["x.txt"].argv == [] and facts.tools["x.txt"].status == "ok"
