"""Pure: a RawCapture (bundle file name -> text) becomes typed Facts, through the parsers.

No I/O here, so a live capture and a bundle from any cluster give the same facts, and tests
feed real tool outputs straight in. Odd or partial input never raises: what cannot be read is
left None (unknown, never 0) and noted in ``Facts.notes`` for the tools check to report.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from collscope.doctor import probes, recognize, vendor_output
from collscope.doctor.facts.common import add_notes, as_dict, as_int, as_str, parse_env, read_json
from collscope.doctor.facts.gpus import gpus_and_topology
from collscope.doctor.facts.host import (
    host_info,
    net_interfaces,
    parse_lspci_acs,
    pci_devices,
    rdma_from_sysfs,
    rdma_from_tool,
    torch_build,
)
from collscope.doctor.facts.records import (
    AMD_DEVICE_IDS,
    AMD_VENDOR_ID,
    GPU_PCI_CLASSES,
    NVIDIA_VENDOR_ID,
    SYSFS,
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
)
from collscope.doctor.gpu_usage import usage_facts
from collscope.doctor.selftest import SelfTestResult
from collscope.parsers import nccl_debug, rocminfo, ucx_info

__all__ = ["AMD_DEVICE_IDS", "AMD_VENDOR_ID", "GPU_PCI_CLASSES", "NVIDIA_VENDOR_ID", "SYSFS",
           "AcsBridge", "AcsInfo", "Facts", "Gid", "HostInfo", "NetInterface", "PciDevice",
           "RdmaDevice", "RdmaPort", "TorchBuild", "facts_from", "inventory", "parse_env",
           "parse_lspci_acs"]

# --------------------------------------------------------------------------- entry point


def facts_from(capture: probes.RawCapture) -> Facts:
    """All facts of one node's capture (live or bundle)."""
    facts = Facts()
    placed = recognize.place(capture)
    capture = placed.capture
    facts.read_as, facts.unrecognised = placed.moved, placed.unrecognised
    facts.shadowed, facts.tool_failures = placed.shadowed, placed.failures
    facts.prefixes, facts.read_also = placed.prefixes, placed.also
    notes = facts.notes
    facts.env = parse_env(capture.get(probes.ENV_FILE, ""))
    facts.tools = _tool_runs(as_dict(read_json(capture, probes.COMMANDS_FILE, notes)))
    _failures_on_stderr(capture, facts)
    facts.host = host_info(capture, notes)
    facts.torch = torch_build(capture, notes)
    facts.interfaces = net_interfaces(capture, facts.host)
    facts.pci = pci_devices(capture)
    facts.rdma = rdma_from_sysfs(capture)
    facts.rdma_source = "sysfs" if facts.rdma else None
    for name in ("ibv_devinfo-v.txt", recognize.IBSTAT):
        if not facts.rdma and name in capture:
            facts.rdma = rdma_from_tool(capture[name], notes, name)
            facts.rdma_source = name if facts.rdma else None
    # A capture of /sys/class (doctor lists net and infiniband together) or of an RDMA tool.
    facts.rdma_captured = bool(facts.rdma) or any(
        name.startswith(f"{probes.SYSFS_DIR}/sys/class/")
        or name in ("ibv_devinfo-v.txt", recognize.IBSTAT) for name in capture) \
        or "ibv_devinfo-v.txt" in facts.tools
    if "lspci-vvv.txt" in capture:
        facts.acs = parse_lspci_acs(capture["lspci-vvv.txt"])
    gpus_and_topology(capture, facts)
    _software(capture, facts)
    facts.usage = usage_facts(capture)
    facts.vendor_output = vendor_output.from_capture(capture)
    _read_is_recognised(facts)
    return facts


def _read_is_recognised(facts: Facts) -> None:
    """A file kept for its parser although no signature matched, whose parser then read what
    the report shows (its GPUs, matrix, RDMA devices, usage or UCX version), was read: never
    also "not recognised"."""
    read = {facts.gpu_source, facts.topology_source, facts.rdma_source, facts.usage.source}
    if facts.ucx_version is not None and facts.ucx_version.version is not None:
        read.add("ucx_info-v.txt")
    facts.unrecognised = [name for name in facts.unrecognised if name not in read]


def _tool_runs(commands: dict[str, Any]) -> dict[str, probes.ToolRun]:
    runs = {}
    for name, run in commands.items():
        if isinstance(run, dict):
            seconds, argv = run.get("seconds"), run.get("argv")
            runs[name] = probes.ToolRun(
                file=str(name), argv=[str(a) for a in argv] if isinstance(argv, list) else [],
                status=str(run.get("status") or "unknown"),
                returncode=as_int(run.get("returncode")),
                seconds=float(seconds) if isinstance(seconds, (int, float)) else 0.0,
                path=as_str(run.get("path")), stderr=str(run.get("stderr") or ""))
    return runs


def _failures_on_stderr(capture: probes.RawCapture, facts: Facts) -> None:
    """A GPU tool that printed its failure to stderr (rocm-smi logs "Driver not initialized"
    there), leaving no output or one that matches nothing: the failure, not an unread file."""
    known = {failure.file for failure in facts.tool_failures}
    for run in facts.tools.values():
        if run.file in known or (run.file in capture and run.file not in facts.unrecognised):
            continue
        failure = recognize.tool_failure(run.file, run.stderr)
        if failure is not None:
            facts.tool_failures.append(replace(failure, on_stderr=True))
            if run.file in facts.unrecognised:
                facts.unrecognised.remove(run.file)


def _software(capture: probes.RawCapture, facts: Facts) -> None:
    """ROCm runtime, UCX, the NCCL/RCCL log and the self-test result."""
    notes = facts.notes
    if "rocminfo.txt" in capture:
        parsed = rocminfo.parse_rocminfo(capture["rocminfo.txt"])
        facts.rocm_runtime = parsed.value.runtime_version
    if "ucx_info-v.txt" in capture:
        parsed_v = ucx_info.parse_ucx_version(capture["ucx_info-v.txt"])
        add_notes(notes, "ucx_info-v.txt", parsed_v.warnings)
        facts.ucx_version = parsed_v.value
    if "ucx_info-d.txt" in capture:
        parsed_d = ucx_info.parse_ucx_devices(capture["ucx_info-d.txt"])
        add_notes(notes, "ucx_info-d.txt", parsed_d.warnings)
        facts.ucx_devices = parsed_d.value
    if probes.NCCL_LOG_FILE in capture:
        parsed_n = nccl_debug.parse_nccl_debug(capture[probes.NCCL_LOG_FILE])
        add_notes(notes, probes.NCCL_LOG_FILE, parsed_n.warnings)
        facts.nccl_log = parsed_n.value
    selftest = read_json(capture, probes.SELFTEST_FILE, notes)
    if isinstance(selftest, dict) and selftest.get("status"):
        try:
            facts.selftest = SelfTestResult.from_dict(selftest)
        except TypeError:
            notes.setdefault(probes.SELFTEST_FILE, []).append("unreadable self-test record")


def inventory(facts: Facts) -> dict[str, Any]:
    """The ``inventory`` part of ``--json``: plain data, stable field names."""
    topo = facts.topology
    return {
        "vendor": facts.vendor,
        "gpus": [asdict(g) for g in facts.gpus],
        "gpu_source": facts.gpu_source,
        "topology": None if topo is None else {
            "gpus": topo.gpus, "link_type": topo.link_type, "weight": topo.weight,
            "hops": topo.hops, "numa_node": topo.numa_node, "source": facts.topology_source,
        },
        "driver_version": facts.driver_version,
        "rocm_version": facts.host.rocm_version,
        "stack_versions": [{"what": what, "version": version, "source": where}
                           for what, version, where in facts.stack_versions()],
        "rccl_or_nccl_version": facts.rccl_or_nccl_version,
        "torch": None if facts.torch is None else asdict(facts.torch),
        "host": asdict(facts.host),
        "interfaces": [asdict(i) for i in facts.interfaces],
        "rdma": [asdict(d) for d in facts.rdma],
        "ucx": None if facts.ucx_version is None else {
            "version": facts.ucx_version.version, "with_rocm": facts.ucx_version.with_rocm,
            "with_cuda": facts.ucx_version.with_cuda,
            "transports": sorted({t.name for t in (facts.ucx_devices.transports
                                                   if facts.ucx_devices else [])}),
        },
        "env": dict(facts.env),
        "tools": {name: asdict(run) for name, run in facts.tools.items()},
        "selftest": None if facts.selftest is None else facts.selftest.to_dict(),
    }
