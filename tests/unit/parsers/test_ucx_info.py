"""ucx_info -v / -d parsers against real outputs (read in place) and our own samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from collscope.parsers.common import Parsed
from collscope.parsers.ucx_info import (
    UcxDevices,
    UcxVersion,
    parse_ucx_devices,
    parse_ucx_version,
)
from tests.conftest import OWN_FIXTURES, fixture_path
from tests.unit.parsers import mutations

OWN = OWN_FIXTURES / "tool-outputs"


def _real(name: str) -> str:
    return fixture_path("tool-outputs", name).read_text()


def _own(name: str) -> str:
    return (OWN / name).read_text()


# --- ucx_info -v ------------------------------------------------------------------------------


def test_version_cuda_build_h100() -> None:
    parsed = parse_ucx_version(_real("ucx_info_v_ucx1.15_cuda_h100.txt"))
    v = parsed.value
    assert parsed.warnings == []
    assert v.version == "1.15.0"
    assert v.version_tuple == (1, 15, 0)
    assert v.api_version == "1.15.0"
    assert v.git_branch == "v1.15.x"
    assert v.git_revision == "348d14f"
    assert v.library_path == "/home/users/cliao/ucx1.15_cuda12GDR/lib/libucs.so.0"
    assert "--with-cuda=/home/users/cliao/cuda-12.0" in v.configure_flags
    assert v.configure_options["cuda"] == "/home/users/cliao/cuda-12.0"
    assert v.with_cuda is True
    assert v.with_rocm is None  # not on the configure line: configure auto-detected
    assert v.with_verbs is True
    assert v.with_knem is True
    assert v.with_rdmacm is True
    assert v.multi_threaded is True


def test_version_rocm_build_mi308x() -> None:
    parsed = parse_ucx_version(_real("ucx_info_v_ucx1.18_rocm_mi308x.txt"))
    v = parsed.value
    assert parsed.warnings == []
    assert v.version == "1.18.1"
    assert v.git_branch is None  # "Git branch ''"
    assert v.git_revision == "d9aa565"
    assert v.configure_flags == ["--with-rocm=/opt/rocm", "--enable-mt", "--prefix=/opt/ucx"]
    assert v.with_rocm is True
    assert v.with_cuda is None
    assert v.multi_threaded is True


def test_version_legacy_layout_and_negative_switches() -> None:
    parsed = parse_ucx_version(_own("ucx_info_v_ucx1.9_legacy_sample.txt"))
    v = parsed.value
    assert parsed.warnings == []
    assert v.version == "1.9.0"
    assert v.git_revision == "1d0a420"
    assert v.with_cuda is True
    assert v.with_rocm is False  # --without-rocm
    assert v.with_knem is False  # --with-knem=no
    assert v.with_xpmem is False
    assert v.with_mlx5 is True  # --with-mlx5-dv
    assert v.with_gdrcopy is True
    assert v.configure_options["optimizations"] is False


def test_version_keeps_quoted_configure_values_together() -> None:
    text = "# Library version: 1.17.0\n# Configured with: CFLAGS='-O3 -g' --with-cuda=no\n"
    v = parse_ucx_version(text).value
    assert v.configure_flags == ["CFLAGS='-O3 -g'", "--with-cuda=no"]
    assert v.with_cuda is False


def test_version_of_empty_text_warns() -> None:
    parsed = parse_ucx_version("")
    assert parsed.value == UcxVersion()
    assert any("version" in w for w in parsed.warnings)


# --- ucx_info -d ------------------------------------------------------------------------------


def test_devices_cuda_connectx6_ib() -> None:
    parsed = parse_ucx_devices(_real("ucx_info_d_ucx1.16_cuda_connectx6_ib.txt"))
    d = parsed.value
    assert parsed.warnings == []
    assert d.transport_names == ["self", "tcp", "sysv", "posix", "cuda_copy", "cuda_ipc",
                                 "gdr_copy", "dc_mlx5", "rc_verbs", "rc_mlx5", "ud_verbs",
                                 "ud_mlx5", "cma"]
    assert d.devices_of("tcp") == ["ens21f0", "ib0", "lo"]
    assert d.devices_of("rc_mlx5") == ["mlx5_0:1"]
    assert d.transports_on("mlx5_0:1") == ["dc_mlx5", "rc_verbs", "rc_mlx5", "ud_verbs",
                                           "ud_mlx5"]
    assert d.rdma_devices == ["mlx5_0:1"]
    assert d.has_cuda and not d.has_rocm
    assert d.connection_managers == ["tcp", "rdmacm"]

    rc_mlx5 = next(t for t in d.transports if t.name == "rc_mlx5")
    assert rc_mlx5.memory_domain == "mlx5_0"
    assert rc_mlx5.component == "ib"
    assert rc_mlx5.type == "network"
    assert rc_mlx5.system_device == "mlx5_0 (1)"
    assert rc_mlx5.port == 1
    assert rc_mlx5.bandwidth_mbs == pytest.approx(23588.47)
    assert rc_mlx5.latency_ns == 600
    assert rc_mlx5.latency_per_ep_ns == 1.0
    assert rc_mlx5.overhead_ns == 40
    assert rc_mlx5.device_priority == 50

    cuda_ipc = next(t for t in d.transports if t.name == "cuda_ipc")
    assert cuda_ipc.device == "cuda"
    assert cuda_ipc.type == "intra-node"
    assert cuda_ipc.bandwidth_mbs == 300000.0
    assert cuda_ipc.latency_ns == 1000

    tcp_ib0 = next(t for t in d.transports if t.name == "tcp" and t.device == "ib0")
    assert tcp_ib0.bandwidth_dedicated_mbs == 2200.0
    assert tcp_ib0.bandwidth_shared_mbs == 0.0
    assert tcp_ib0.latency_ns == 5203

    self_tl = next(t for t in d.transports if t.name == "self")
    assert self_tl.bandwidth_shared_mbs == 19360.0
    assert self_tl.type == "loopback"
    assert self_tl.max_eps == "inf"

    mds = {m.name: m for m in d.memory_domains}
    assert mds["mlx5_1"].no_devices is True  # the second HCA is down
    assert mds["mlx5_0"].no_devices is False
    assert mds["cuda_cpy"].memory_types == ["host", "cuda", "cuda-managed"]
    assert mds["mlx5_0"].attributes["register"] == "unlimited, cost: 16000 + 0.060 * N nsec"


def test_devices_rocm_roce_sample() -> None:
    parsed = parse_ucx_devices(_own("ucx_info_d_rocm_roce_sample.txt"))
    d = parsed.value
    assert parsed.warnings == []
    assert d.has_rocm and not d.has_cuda
    assert d.devices_of("rocm_copy") == ["rocm_cpy"]
    assert d.devices_of("rocm_ipc") == ["rocm_ipc"]
    assert d.devices_of("tcp") == ["ens50f0np0"]
    assert d.transports_on("bnxt_re0:1") == ["rc_verbs", "ud_verbs"]
    assert d.rdma_devices == ["bnxt_re0:1"]
    mds = {m.name: m for m in d.memory_domains}
    assert mds["bnxt_re0"].memory_types == ["host", "rocm"]
    assert mds["bnxt_re1"].no_devices is True
    rc = d.transports[d.transport_names.index("rc_verbs")]
    assert rc.latency_ns == 800 and rc.latency_per_ep_ns == 1.0


def test_devices_legacy_layout() -> None:
    parsed = parse_ucx_devices(_own("ucx_info_d_legacy_layout_sample.txt"))
    d = parsed.value
    assert parsed.warnings == []
    # one "Transport: tcp" followed by two Device blocks gives two tcp transports
    assert d.devices_of("tcp") == ["eno1", "ib0"]
    assert d.transport_names == ["self", "tcp", "rc", "ud", "cuda_copy"]
    assert d.rdma_devices == ["mlx5_0:1"]
    rc = next(t for t in d.transports if t.name == "rc")
    assert rc.memory_domain == "ib/mlx5_0"
    assert rc.component == "ib"
    assert rc.bandwidth_dedicated_mbs == 0.0
    assert rc.bandwidth_shared_mbs == 11794.23
    assert rc.latency_ns == 600 and rc.latency_per_ep_ns == 1.0
    assert rc.device_priority == 38
    assert rc.max_eps == "inf"
    tcp_ib0 = next(t for t in d.transports if t.name == "tcp" and t.device == "ib0")
    assert tcp_ib0.bandwidth_mbs == 6661.48 and tcp_ib0.device_priority == 1
    assert d.has_cuda


def test_devices_of_unrelated_text_warns() -> None:
    parsed = parse_ucx_devices("bash: ucx_info: command not found\n")
    assert parsed.value == UcxDevices()
    assert parsed.warnings


# --- robustness -------------------------------------------------------------------------------

SAMPLES = mutations.sample_params(
    ["ucx_info_v_ucx1.15_cuda_h100.txt", "ucx_info_v_ucx1.18_rocm_mi308x.txt",
     "ucx_info_d_ucx1.16_cuda_connectx6_ib.txt"],
    ["ucx_info_v_ucx1.9_legacy_sample.txt", "ucx_info_d_rocm_roce_sample.txt",
     "ucx_info_d_legacy_layout_sample.txt"],
)
PARSERS = [parse_ucx_version, parse_ucx_devices]


def _check(parser: object, result: Parsed[Any]) -> None:
    assert isinstance(result.value, UcxVersion if parser is parse_ucx_version else UcxDevices)


def test_arbitrary_text_never_raises() -> None:
    mutations.assert_parsers_never_raise(PARSERS, st.text(), check=_check, max_examples=80)


@pytest.mark.parametrize("path", SAMPLES)
def test_mutated_samples_never_raise(path: Path) -> None:
    mutations.assert_parsers_never_raise(PARSERS, path, check=_check)


@pytest.mark.parametrize("text", [
    "# Transport: x\n# Device: y\n# bandwidth: " + "1" * 100_000 + "x",
    "# Transport: x\n# Device: y\n# latency: " + "1 *" * 30_000,
    "# Memory domain: x\n# memory types: " + "(" * 100_000,
    "# Configured with: " + "a'b" * 30_000,
    "# version " + "1." * 50_000,
])
def test_long_lines_stay_linear(text: str) -> None:
    mutations.assert_long_lines_stay_fast(PARSERS, [text], 2.0)
