"""Property tests: odd facts never crash a rule; odd captures never crash facts_from."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collscope.doctor.checks import LEVELS, run_checks
from collscope.doctor.facts import (
    AcsBridge,
    AcsInfo,
    Facts,
    Gid,
    HostInfo,
    NetInterface,
    PciDevice,
    RdmaDevice,
    RdmaPort,
    TorchBuild,
    facts_from,
)
from collscope.doctor.probes import TOOLS, ToolRun
from collscope.doctor.selftest import SelfTestResult
from collscope.envvars import KNOWN, OBSOLETE
from collscope.parsers.common import GpuInfo, Topology
from collscope.parsers.nccl_debug import NcclDebugSummary
from collscope.parsers.ucx_info import UcxDevices, UcxMemoryDomain, UcxVersion

text = st.text(max_size=20)
maybe_text = st.none() | text
maybe_int = st.none() | st.integers(-(2**40), 2**40)
words = st.sampled_from(["ACTIVE", "DOWN", "up", "down", "unknown", "", "Ethernet",
                         "InfiniBand", "RoCE v2", "IB/RoCE v1", "xgmi", "pcie", "nvlink",
                         "self", "sys", "pix", "weird"])
names = st.sampled_from(["eth0", "lo", "mlx5_0", "ens5", "bnxt_re0", "", "^", "x" * 30]) | text
env_names = st.sampled_from(sorted(KNOWN | set(OBSOLETE) | {"HIP_VISIBLE_DEVICES",
                                                           "NCCL_IB_GID_INDEX"})) | \
    st.from_regex(r"(NCCL|RCCL|GLOO|TORCH_NCCL)_[A-Z_]{0,12}", fullmatch=True)
env_values = st.sampled_from(["", "^", "=", "^=", "eth", "=eth0", "mlx5_0:1", ":", ":x",
                              "INFO", "1", ",,,", "^=mlx5", "3"]) | text


def matrix(n: int, cell: st.SearchStrategy) -> st.SearchStrategy:
    ragged = st.lists(st.lists(cell, max_size=n + 1), max_size=n + 1)
    return ragged


@st.composite
def topologies(draw: st.DrawFn) -> Topology | None:
    if draw(st.booleans()):
        return None
    n = draw(st.integers(0, 5))
    return Topology(gpus=n, link_type=draw(matrix(n, words)),
                    weight=draw(matrix(n, maybe_int)),
                    numa_node=draw(st.lists(maybe_int, max_size=n + 1)))


gpus = st.lists(st.builds(GpuInfo, index=st.integers(-3, 8), name=maybe_text,
                          memory_bytes=maybe_int, driver_version=maybe_text,
                          numa_node=maybe_int), max_size=5)
ports = st.builds(RdmaPort, port=st.integers(-1, 3), state=st.none() | words,
                  phys_state=maybe_text, rate=maybe_text, link_layer=st.none() | words,
                  gids=st.lists(st.builds(Gid, index=st.integers(-1, 300), gid=text,
                                          type=st.none() | words, ndev=maybe_text),
                                max_size=3))
rdma = st.lists(st.builds(RdmaDevice, name=names, numa_node=maybe_int,
                          ports=st.lists(ports, max_size=2)), max_size=3)
interfaces = st.lists(st.builds(NetInterface, name=names, operstate=st.none() | words,
                                speed_mbps=maybe_int, mtu=maybe_int, numa_node=maybe_int,
                                addresses=st.lists(text, max_size=2)), max_size=4)
torch = st.none() | st.builds(TorchBuild, version=maybe_text, hip=maybe_text, cuda=maybe_text,
                              nccl_version=maybe_text, gpu_available=st.booleans(),
                              gpu_count=st.integers(-1, 9), gpu_names=st.lists(text, max_size=3),
                              backends=st.lists(st.sampled_from(["nccl", "gloo", "x"])),
                              error=maybe_text)
host = st.builds(HostInfo, numa_balancing=maybe_int, cmdline=maybe_text, numa_nodes=maybe_int,
                 memlock_soft=maybe_int, iommu_groups=maybe_int, cpu_vendor=maybe_text,
                 rocm_version=maybe_text)
tools = st.dictionaries(st.sampled_from([t.file for t in TOOLS] + ["other.txt"]),
                        st.builds(ToolRun, file=text, argv=st.lists(text, max_size=3),
                                  status=st.sampled_from(["ok", "missing", "timeout", "error",
                                                          "??"]),
                                  returncode=maybe_int, stderr=text), max_size=4)
selftest = st.none() | st.builds(
    SelfTestResult, status=st.sampled_from(["ok", "fail", "skipped", "??"]),
    time_us=st.none() | st.floats(allow_nan=True), busbw_gbs=st.none() | st.floats(),
    wrong=maybe_int, error=maybe_text, size_bytes=st.integers(-1, 2**40),
    world_size=st.integers(-1, 9))
nccl_log = st.none() | st.builds(
    NcclDebugSummary, library=st.none() | st.sampled_from(["NCCL", "RCCL"]), version=maybe_text,
    versions_seen=st.lists(text, max_size=3),
    network_counts=st.dictionaries(st.sampled_from(["IB", "Socket"]), st.integers(0, 9)),
    log_warnings=st.lists(text, max_size=2))
ucx = st.none() | st.builds(UcxVersion, version=maybe_text, with_rocm=st.none() | st.booleans(),
                            with_cuda=st.none() | st.booleans())
ucx_devices = st.none() | st.builds(UcxDevices, memory_domains=st.lists(st.builds(
    UcxMemoryDomain, name=text, memory_types=st.lists(text, max_size=2)), max_size=2))


@st.composite
def odd_facts(draw: st.DrawFn) -> Facts:
    return Facts(
        vendor=draw(st.sampled_from(["amd", "nvidia", "none", "weird"])), gpus=draw(gpus),
        topology=draw(topologies()), torch=draw(torch), host=draw(host),
        interfaces=draw(interfaces), rdma=draw(rdma),
        pci=draw(st.lists(st.builds(PciDevice, address=text, class_code=maybe_text,
                                    vendor=st.none() | st.sampled_from(["0x1002", "0x10de"]),
                                    numa_node=maybe_int), max_size=3)),
        acs=AcsInfo(checked=draw(st.booleans()), access_denied=draw(st.booleans()),
                    bridges=draw(st.lists(st.builds(AcsBridge, address=text, description=text,
                                                    acs_ctl=text), max_size=2))),
        ucx_version=draw(ucx), ucx_devices=draw(ucx_devices), nccl_log=draw(nccl_log),
        env=draw(st.dictionaries(env_names, env_values, max_size=6)), tools=draw(tools),
        selftest=draw(selftest),
        gpu_nic_link=draw(st.dictionaries(st.integers(-1, 9), words, max_size=3)),
        notes=draw(st.dictionaries(text, st.lists(text, max_size=2), max_size=2)),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_facts())
def test_rules_never_crash_on_odd_facts(facts):
    findings = run_checks(facts)
    crashed = [f for f in findings if "could not run" in f.title]
    assert crashed == [], crashed[0].detail if crashed else ""
    assert all(f.level in LEVELS and isinstance(f.title, str) for f in findings)


FILES = [t.file for t in TOOLS] + ["env.txt", "host.json", "torch.json", "commands.json",
                                   "selftest.json", "nccl-debug.log", "hw-inventory.json",
                                   "sysfs/proc/sys/kernel/numa_balancing", "sysfs/proc/cmdline",
                                   "sysfs/sys/devices/system/node/online",
                                   "sysfs/sys/class/net/eth0/speed",
                                   "sysfs/sys/class/infiniband/mlx5_0/ports/1/state",
                                   "sysfs/sys/class/infiniband/mlx5_0/ports/x/gids/y",
                                   "sysfs/sys/bus/pci/devices/0000:0c:00.0/class"]
json_text = st.recursive(st.none() | st.booleans() | st.integers() | text,
                         lambda inner: st.lists(inner, max_size=3) |
                         st.dictionaries(text | st.sampled_from(["gpus", "backend", "index",
                                                                 "status", "argv"]),
                                         inner, max_size=3),
                         max_leaves=8).map(json.dumps)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(FILES) | text, text | json_text, max_size=8))
def test_facts_from_never_crashes_on_odd_captures(capture):
    facts = facts_from(capture)
    crashed = [f for f in run_checks(facts) if "could not run" in f.title]
    assert crashed == [], crashed[0].detail if crashed else ""


def test_odd_selftest_records_are_typed():
    facts = facts_from({"selftest.json": json.dumps({"status": "ok", "time_us": "fast",
                                                     "wrong": True, "world_size": 2.5})})
    assert facts.selftest.time_us is None and facts.selftest.wrong is None
    assert run_checks(facts, only=["selftest.allreduce"])[0].level == "ok"
