"""Parser for NCCL / RCCL logs written with ``NCCL_DEBUG=INFO``.

The INFO log is the only place where the library says what it actually chose: its version,
the network (IB or the much slower Socket fallback), the NICs, the channel count, the ring and
tree layout, and for every connection the transport (P2P, SHM, NET, with or without GPUDirect
RDMA). A diagnosis compares those choices with what the hardware allows.

Lines look like ``host:pid:tid [dev] NCCL INFO message``; the bracketed number is the local
device NCCL prints (equal to the rank on a single node). Anything before ``host`` (launcher
prefixes such as ``[default0]:`` or ``0:``) is tolerated. A log holding several communicators
is summarised as a whole: counts add up across them and the first ring seen per channel wins.
"""

from __future__ import annotations

import re
from collections import Counter

from collscope.parsers.common import Parsed
from collscope.parsers.nccl_debug.records import (
    NcclDebugSummary,
    NcclNic,
    NcclRankInfo,
    NcclTree,
)

# "[dev] NCCL INFO msg" (WARN lines put "file.cc:123" before "NCCL WARN"); the host:pid:tid
# token before it is split off by hand, which keeps the regex linear on long lines.
_LEVEL = re.compile(
    r"(?:^|\s)\[(?P<dev>\d{1,6})\]\s+(?:\S{1,300}:\d{1,6}\s+)?(?P<lib>NCCL|RCCL)\s+"
    r"(?P<level>INFO|WARN|TRACE|ABORT|ERROR)\b\s?(?P<msg>.*)$")
_VERSION = re.compile(r"\b(?P<lib>NCCL|RCCL) version\s*:?\s*(?P<ver>\d+\.\d+\.\d+)"
                      r"(?P<suffix>\S*)(?:\s+(?P<extra>\S+))?")
_CONNECTION = re.compile(
    r"^(?:Channel|Ring)\s+(?P<ch>\d+)(?:/(?P<sub>\d+))?\s*:\s*"
    r"(?P<src>\d+)\[(?P<srcdev>[0-9a-fA-Fx]+)\]\s*->\s*(?P<dst>\d+)\[(?P<dstdev>[0-9a-fA-Fx]+)\]"
    r"(?:\s*\[(?P<dir>send|receive)\])?\s+via\s+(?P<via>\S.*)$")
_RING = re.compile(r"^(?:Channel|Ring)\s+(?P<ch>\d+)(?:/(?P<of>\d+))?\s*:\s*"
                   r"(?P<order>-?\d+(?:\s+-?\d+)*)\s*$")
_COMM = re.compile(r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+)"
                   r"(?: cudaDev (?P<dev>\d+))?(?: nvmlDev \d+)?(?: busId (?P<bus>[0-9a-fA-F]+))?",
                   re.I)
_NIC_IB = re.compile(r"\[(?P<idx>\d+)\](?P<name>[^\s:\[\]]+):(?P<port>\d+)/(?P<link>[A-Za-z]+)")
_NIC_SOCKET = re.compile(
    r"\[(?P<idx>\d+)\](?P<name>[^\s:\[\]]{1,64}):(?P<addr>[^\s<]{1,256})<\d+>")
_GDR_HCA = re.compile(r"GPU Direct RDMA\b[^'\n]{0,120}?\b(?P<state>enabled|disabled)\b"
                      r"[^'\n]{0,120}?for HCA\s+(?P<idx>\d+)\s+'(?P<name>[^']{1,128})'", re.I)
_MAX_WARNINGS = 25


class _State:
    """Mutable parse state shared by the line handlers."""

    def __init__(self) -> None:
        self.summary = NcclDebugSummary()
        self.warnings: list[str] = []
        self.dropped_warnings = 0
        self.ranks: dict[tuple[str, int | None, int], NcclRankInfo] = {}
        self.networks: Counter[str] = Counter()
        self.transports: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.ring_totals: list[int] = []
        self.explicit_nchannels: list[int] = []
        self.nic_keys: set[tuple[str, str, int | None]] = set()
        self.recognised = 0

    def warn(self, message: str) -> None:
        if len(self.warnings) < _MAX_WARNINGS:
            self.warnings.append(message)
        else:
            self.dropped_warnings += 1

    def rank_of(self, host: str, pid: int | None, device: int) -> NcclRankInfo:
        key = (host, pid, device)
        info = self.ranks.get(key)
        if info is None:
            info = NcclRankInfo(host=host, pid=pid, device=device)
            self.ranks[key] = info
            if host not in self.summary.hosts:
                self.summary.hosts.append(host)
        return info


def parse_nccl_debug(text: str) -> Parsed[NcclDebugSummary]:
    """Summarise an ``NCCL_DEBUG=INFO`` log (NCCL or RCCL); never raises."""
    state = _State()
    if not isinstance(text, str):
        return Parsed(state.summary, ["input is not text"])
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        prefix = _LEVEL.search(line) if ("NCCL" in line or "RCCL" in line) else None
        rank: NcclRankInfo | None = None
        if prefix:
            state.recognised += 1
            host, pid = _host_and_pid(line[:prefix.start()])
            rank = state.rank_of(host, pid, int(prefix.group("dev")))
            message = prefix.group("msg").strip()
            if prefix.group("level") in ("WARN", "ERROR", "ABORT"):
                if message and message not in state.summary.log_warnings \
                        and len(state.summary.log_warnings) < 100:
                    state.summary.log_warnings.append(message)
        else:
            message = line
        _handle_message(state, message, rank, lineno, bare=prefix is None)
    _finish(state)
    warnings = state.warnings
    if state.dropped_warnings:
        warnings.append(f"{state.dropped_warnings} further warnings left out")
    if state.recognised == 0:
        warnings.append("no NCCL/RCCL log lines found")
    return Parsed(state.summary, warnings)


def _host_and_pid(before: str) -> tuple[str, int | None]:
    """("gpu-a", 5101) from "[default0]:gpu-a:5101:5140"; the pid is None where redacted."""
    tokens = before.split()
    parts = tokens[-1].split(":") if tokens else [""]
    if len(parts) >= 3 and parts[-1].isdecimal() and parts[-2].isdecimal():
        host, pid = parts[-3], int(parts[-2])
    else:
        host, pid = parts[-1], None
    return (host or "unknown"), pid


def _handle_message(state: _State, message: str, rank: NcclRankInfo | None, lineno: int,
                    bare: bool) -> None:
    s = state.summary
    version = _VERSION.search(message)
    if version and (bare or message.startswith(("NCCL version", "RCCL version"))):
        if bare:
            state.recognised += 1
        _apply_version(s, version)
        return
    if bare:
        # RCCL's banner continues on lines without the host:pid:tid prefix (launchers such as
        # Ray may still put their own prefix in front).
        banner = re.search(r"\b(HIP version|ROCm version|Librccl path)\s*:\s*(\S+)", message)
        if banner:
            state.recognised += 1
            s.library = "RCCL"
            if banner.group(1) == "HIP version":
                s.hip_version = banner.group(2)
            elif banner.group(1) == "ROCm version":
                s.rocm_version = banner.group(2)
            else:
                s.library_path = banner.group(2)
        return
    if s.library is None and "rccl" in message.lower():
        s.library = "RCCL"  # e.g. librccl-net.so or an .../rccl/... source path
    for handler in _HANDLERS:
        if handler(state, message, rank, lineno):
            return


def _apply_version(s: NcclDebugSummary, match: re.Match[str]) -> None:
    lib, suffix, extra = match.group("lib"), match.group("suffix"), match.group("extra")
    if s.library != "RCCL":
        s.library = lib
    s.version = match.group("ver")
    s.version_suffix = suffix or None
    full = s.version + suffix
    if full not in s.versions_seen and len(s.versions_seen) < 16:
        s.versions_seen.append(full)
    cuda = re.search(r"\+cuda(\d+(?:\.\d+)*)", suffix)
    if cuda:
        s.cuda_version = cuda.group(1)
    hip = re.search(r"\+hip(\d+(?:\.\d+)*)", suffix)
    if hip:
        s.library = "RCCL"
        s.hip_version = s.hip_version or hip.group(1)
    # RCCL: "2.21.5-HEAD:eef7b29", "2.18.3-develop:7c1e2ab", older "2.13.4+hip5.4 HEAD:2bff3e6".
    revision = re.search(r"([A-Za-z][\w.-]{0,64}:[0-9a-fA-F]{6,40})",
                         suffix + " " + (extra or ""))
    if revision:
        s.git_revision = revision.group(1)


def _on_environment(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    match = re.match(r"^((?:NCCL|RCCL|HSA|HIP)_\w+) set by environment to (.*)$", message)
    if not match:
        return False
    state.summary.env.setdefault(match.group(1), match.group(2).strip())
    return True


def _on_runtime_versions(state: _State, message: str, rank: NcclRankInfo | None,
                         lineno: int) -> bool:
    s = state.summary
    match = re.match(r"^cudaDriverVersion\s+(\d+)", message)
    if match:
        s.cuda_driver_version = int(match.group(1))
        return True
    match = re.match(r"^ROCr version\s+(\S+)", message)
    if match:
        s.rocr_version = match.group(1)
        s.library = "RCCL"
        return True
    match = re.match(r"^Kernel version:\s*(\S+)", message)
    if match:
        s.kernel_version = match.group(1)
        return True
    return False


def _on_bootstrap(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    match = re.match(r"^Bootstrap\s*:\s*Using\s+(?P<ifname>[^\s:]+):(?P<addr>\S+?)(?:<\d+>)?$",
                     message)
    if not match:
        return False
    s = state.summary
    s.bootstrap_interface = s.bootstrap_interface or match.group("ifname")
    s.bootstrap_address = s.bootstrap_address or match.group("addr")
    return True


def _on_network(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    match = re.match(r"^Using network\s+(\S.*)$", message)
    if not match:
        return False
    network = match.group(1).rstrip()
    state.networks[network] += 1
    if rank is not None:
        rank.network = network
    return True


def _on_plugin(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    s = state.summary
    match = re.match(r"^NET/Plugin\s*:?\s*(.*)$", message)
    if not match and "net plugin" not in message.lower():
        return False
    detail = (match.group(1) if match else message).strip()
    if detail and detail not in s.plugin_messages and len(s.plugin_messages) < 50:
        s.plugin_messages.append(detail)
    loaded = re.search(r"Loaded (net|coll) plugin\s+(\S.*)$", detail, re.I)
    if loaded:
        name = _without_plugin_api_version(loaded.group(2))
        if loaded.group(1).lower() == "net":
            s.net_plugin = name
        else:
            s.coll_plugin = name
    elif re.search(r"internal (implementation|network plugin)", detail, re.I):
        if s.net_plugin is None:
            s.net_plugin = "internal"
    return True


def _without_plugin_api_version(name: str) -> str:
    """"AWS Libfabric" from "AWS Libfabric (v6)"."""
    name = name.rstrip()
    head, marker, tail = name.rpartition("(v")
    if marker and tail.endswith(")") and tail[:-1].isdecimal():
        return head.rstrip() or name
    return name


def _on_net_devices(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    match = re.match(r"^NET/(?P<net>[\w.-]{1,64}(?: [\w.-]{1,64}){0,3})\s*:\s*(?P<rest>.*)$",
                     message)
    if not match:
        return False
    net, rest = match.group("net").strip(), match.group("rest")
    s = state.summary
    if re.match(r"No device found", rest, re.I):
        if net == "IB":
            s.ib_no_device = True
        return True
    gdr = _GDR_HCA.search(rest)
    if gdr:
        s.gdr_hca[gdr.group("name")] = gdr.group("state").lower() == "enabled"
        return True
    if not rest.startswith("Using"):
        return True  # other NET/x chatter (e.g. OFI provider lines)
    devices, _, oob = rest.partition("; OOB ")
    if oob:
        oob_match = re.match(r"\s*([^\s:]+)", oob)
        if oob_match:
            s.oob_interface = s.oob_interface or oob_match.group(1)
    if "[RO]" in devices:
        s.ib_relaxed_ordering = True
    found = False
    for nic in _NIC_IB.finditer(devices):
        found = True
        _add_nic(state, NcclNic(net=net, index=int(nic.group("idx")), name=nic.group("name"),
                                port=int(nic.group("port")), link=nic.group("link")))
    if not found:
        for nic in _NIC_SOCKET.finditer(devices):
            found = True
            _add_nic(state, NcclNic(net=net, index=int(nic.group("idx")), name=nic.group("name"),
                                    address=nic.group("addr")))
    if not found:
        state.warn(f"line {lineno}: NET/{net} device list not understood: {devices[:80]!r}")
    return True


def _add_nic(state: _State, nic: NcclNic) -> None:
    key = (nic.net, nic.name, nic.port)
    if key not in state.nic_keys:
        state.nic_keys.add(key)
        state.summary.nics.append(nic)


def _on_gdr(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    gdr = _GDR_HCA.search(message) if "for HCA" in message else None
    if not gdr:
        return False
    state.summary.gdr_hca[gdr.group("name")] = gdr.group("state").lower() == "enabled"
    return True


_IB_FAILURE = re.compile(r"(?:Failed to open|cannot open)\s+libibverbs|"
                         r"\bibv_\w+\s+failed|NET/IB\s*:\s*(?:Unable|Failed)", re.I)


def _on_ib_failure(state: _State, message: str, rank: NcclRankInfo | None,
                   lineno: int) -> bool:
    if not _IB_FAILURE.search(message):
        return False
    failures = state.summary.ib_failures
    if message not in failures and len(failures) < _MAX_WARNINGS:
        failures.append(message)
    return True


def _on_comm(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    match = _COMM.search(message)
    if not match:
        return False
    s = state.summary
    nranks = int(match.group("nranks"))
    s.nranks = max(s.nranks or 0, nranks)
    if rank is not None and rank.rank is None:
        rank.rank = int(match.group("rank"))
        rank.nranks = nranks
        rank.bus_id = match.group("bus")
    if "Init COMPLETE" in message:
        s.init_complete += 1
    return False  # the same line may also carry channel counts ("... nchannels 4")


def _on_channel(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    if not message.startswith(("Channel", "Ring")):
        return False
    connection = _CONNECTION.match(message)
    if connection:
        via = connection.group("via")
        rccl_suffix = via.find(" comm 0x")  # RCCL appends "comm 0x... nRanks NN"
        via = (via[:rccl_suffix] if rccl_suffix >= 0 else via).strip()
        kind = via.split("/", 1)[0]
        state.transports[via] += 1
        state.kinds[kind] += 1
        if "GDRDMA" in via.upper():
            state.summary.gdrdma_used = True
        if rank is not None:
            rank.transport_counts[via] = rank.transport_counts.get(via, 0) + 1
        return True
    ring = _RING.match(message)
    if ring:
        channel = int(ring.group("ch"))
        if ring.group("of"):
            state.ring_totals.append(int(ring.group("of")))
        order = [int(n) for n in ring.group("order").split()]
        state.summary.rings.setdefault(channel, order)
        return True
    if " via " in message or re.match(r"^(Channel|Ring)\s+\d+(/\d+)?\s*:", message):
        state.warn(f"line {lineno}: channel line not understood: {message[:80]!r}")
        return True
    return False


def _on_channel_counts(state: _State, message: str, rank: NcclRankInfo | None,
                       lineno: int) -> bool:
    s = state.summary
    handled = False
    for attribute, pattern in (("coll_channels", r"(\d{1,6}) coll channels"),
                               ("collnet_channels", r"(\d{1,6}) collnet channels"),
                               ("nvls_channels", r"(\d{1,6}) nvls channels"),
                               ("p2p_channels", r"(\d{1,6}) p2p channels(?! per peer)")):
        match = re.search(pattern, message)
        if match:
            setattr(s, attribute, max(getattr(s, attribute) or 0, int(match.group(1))))
            handled = True
    explicit = re.search(r"\bnchannels\s*[=:]?\s*(\d+)", message, re.I)
    if explicit:
        state.explicit_nchannels.append(int(explicit.group(1)))
        handled = True
    return handled


def _on_trees(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    if not message.startswith("Trees"):
        return False
    entries = re.findall(r"\[(\d+)\]\s*([^\s\[]+)", message)
    if not entries:
        state.warn(f"line {lineno}: tree line not understood: {message[:80]!r}")
        return True
    if rank is None:
        return True
    for channel, text in entries:
        tree = NcclTree(channel=int(channel), text=text)
        shape = re.match(r"^(-?\d+(?:/-?\d+)*)->(-?\d+)->(-?\d+)$", text)
        if shape:
            tree.children = [int(c) for c in shape.group(1).split("/")]
            tree.parent = int(shape.group(3))
        rank.trees.append(tree)
    return True


def _on_nvls(state: _State, message: str, rank: NcclRankInfo | None, lineno: int) -> bool:
    match = re.match(r"^NVLS multicast support is (not )?available", message)
    if not match:
        return False
    available = match.group(1) is None
    s = state.summary
    s.nvls_available = available or bool(s.nvls_available)
    return True


_HANDLERS = (
    _on_channel,
    _on_trees,
    _on_network,
    _on_plugin,
    _on_net_devices,
    _on_gdr,
    _on_ib_failure,
    _on_bootstrap,
    _on_comm,
    _on_channel_counts,
    _on_environment,
    _on_runtime_versions,
    _on_nvls,
)


def _finish(state: _State) -> None:
    s = state.summary
    s.network_counts = dict(state.networks)
    if state.networks:
        s.network = state.networks.most_common(1)[0][0]
    s.transport_counts = dict(state.transports)
    s.transport_kind_counts = dict(state.kinds)
    if state.ring_totals:
        s.nchannels = max(state.ring_totals)
    elif s.coll_channels is not None:
        s.nchannels = s.coll_channels
    elif state.explicit_nchannels:
        s.nchannels = max(state.explicit_nchannels)
    elif s.rings:
        s.nchannels = len(s.rings)
    s.ranks = sorted(state.ranks.values(),
                     key=lambda r: (r.rank if r.rank is not None else 1 << 30, r.host, r.device))
