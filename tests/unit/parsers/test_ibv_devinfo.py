"""ibv_devinfo parser against a real ConnectX-6 IB output (read in place) and a RoCE sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from collscope.parsers.common import Parsed
from collscope.parsers.ibv_devinfo import HcaInfo, parse_ibv_devinfo
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.unit.parsers import mutations

OWN = OWN_FIXTURES / "tool-outputs"


def test_connectx6_two_hcas_infiniband() -> None:
    text = fixture_path("tool-outputs", "ibv_devinfo_vv_connectx6_2hca.txt").read_text()
    parsed = parse_ibv_devinfo(text)
    assert parsed.warnings == []
    hcas = parsed.value
    assert [h.hca_id for h in hcas] == ["mlx5_0", "mlx5_1"]

    up = hcas[0]
    assert up.transport == "InfiniBand"
    assert up.fw_ver == "20.37.1700"
    assert up.node_guid == "88e9:a4ff:ff25:a462"
    assert up.sys_image_guid == "88e9:a4ff:ff25:a462"
    assert up.vendor_id == 0x02C9
    assert up.vendor_part_id == 4123
    assert up.board_id == "MT_0000000594"
    assert up.phys_port_cnt == 1
    assert up.attributes["max_qp"] == "131072"  # verbose-only fields are kept raw
    assert len(up.ports) == 1
    port = up.ports[0]
    assert port.port == 1
    assert port.state == "PORT_ACTIVE" and port.state_code == 4 and port.is_active
    assert port.max_mtu == 4096 and port.active_mtu == 4096
    assert port.sm_lid == 1 and port.port_lid == 4
    assert port.link_layer == "InfiniBand"
    assert port.active_width == "4X" and port.lanes == 4
    assert port.active_speed == "50.0 Gbps" and port.lane_speed_gbps == 50.0
    assert port.rate_gbps == 200.0  # HDR
    assert port.phys_state == "LINK_UP"
    assert port.gid_table_len == 8
    assert [(g.index, g.gid, g.type) for g in port.gids] == [
        (0, "fe80:0000:0000:0000:88e9:a4ff:ff25:a462", None)]

    down = hcas[1]
    assert down.node_guid == "88e9:a4ff:ff25:a463"
    assert down.active_ports == []
    port = down.ports[0]
    assert port.state == "PORT_DOWN" and port.state_code == 1
    assert port.phys_state == "DISABLED"
    assert port.port_lid == 65535
    assert port.active_speed == "invalid speed"
    assert port.rate_gbps is None  # no rate for a port that is down


def test_roce_sample_gid_types_and_multi_port() -> None:
    parsed = parse_ibv_devinfo(
        (OWN / "ibv_devinfo_roce_cx6dx_bnxt_sample.txt").read_text())
    assert parsed.warnings == []
    cx, bnxt = parsed.value
    port = cx.ports[0]
    assert port.link_layer == "Ethernet"
    assert port.active_mtu == 1024 and port.max_mtu == 4096
    assert port.rate_gbps == 100.0
    assert [(g.index, g.type) for g in port.gids] == [
        (0, "RoCE v1"), (1, "RoCE v2"), (2, "RoCE v1"), (3, "RoCE v2")]
    assert port.gids[1].gid == "fe80::e42:a1ff:fef1:2b3c"
    assert port.gids[2].ipv4 == "192.168.100.2"  # full spelling of the mapped address
    assert [g.index for g in port.roce_v2_ipv4_gids] == [3]
    assert port.roce_v2_ipv4_gids[0].ipv4 == "192.168.100.2"

    assert bnxt.vendor_id == 0x14E4
    assert bnxt.board_id is None
    assert bnxt.phys_port_cnt == 2
    assert [p.port for p in bnxt.ports] == [1, 2]
    assert [p.port for p in bnxt.active_ports] == [1]
    assert bnxt.ports[0].rate_gbps == 200.0
    assert bnxt.ports[1].state == "PORT_DOWN"
    assert bnxt.ports[1].phys_state == "POLLING"
    assert bnxt.ports[1].gids == []


def test_no_devices_is_an_empty_list_without_warning() -> None:
    assert parse_ibv_devinfo("No IB devices found\n") == Parsed([], [])


def test_garbled_values_become_none_with_warnings() -> None:
    text = "hca_id:\tmlx5_9\n\tvendor_id:\t\tzz\n\t\tport:\tone\n\t\t\tmax_mtu:\t\tbig (5)\n"
    parsed = parse_ibv_devinfo(text)
    hca = parsed.value[0]
    assert hca.vendor_id is None
    assert hca.ports[0].port == 1  # numbered by position when unreadable
    assert hca.ports[0].max_mtu is None
    assert len(parsed.warnings) == 3


SAMPLES = mutations.sample_params(["ibv_devinfo_vv_connectx6_2hca.txt"],
                                  ["ibv_devinfo_roce_cx6dx_bnxt_sample.txt"])


def _check(_parser: object, result: Parsed[Any]) -> None:
    assert isinstance(result.value, list)
    assert all(isinstance(h, HcaInfo) for h in result.value)


@pytest.mark.parametrize("path", SAMPLES)
def test_mutated_samples_never_raise(path: Path) -> None:
    mutations.assert_parsers_never_raise([parse_ibv_devinfo], path, check=_check, max_examples=80)


def test_arbitrary_text_never_raises() -> None:
    mutations.assert_parsers_never_raise([parse_ibv_devinfo], st.text(), check=_check,
                                         max_examples=80)


@pytest.mark.parametrize("text", [
    "hca_id: x\n\tport: 1\n\t\tstate: a" + " " * 100_000 + "b (4)",
    "hca_id: x\n\tport: 1\n\t\tGID[  0]: " + "a" * 100_000 + " b",
    "hca_id: x\n\tport: 1\n\t\tactive_width: " + "(1)" * 30_000,
])
def test_long_lines_stay_linear(text: str) -> None:
    mutations.assert_long_lines_stay_fast([parse_ibv_devinfo], [text], 2.0)
