"""Environment variables: interface and HCA selection, debug knobs, obsolete and misspelt names."""

from __future__ import annotations

from collections.abc import Iterable

from collscope import envvars
from collscope.doctor import envlint
from collscope.doctor.facts import Facts, RdmaPort
from collscope.doctor.rules.common import listing
from collscope.doctor.rules.registry import Verdict, rule
from collscope.runtime import flight_recorder as fr
from collscope.versions import version_tuple


def _interface_names(facts: Facts) -> list[str]:
    return [i.name for i in facts.interfaces]


@rule("env.socket-ifname", "env", """
NCCL_SOCKET_IFNAME picks the IP interfaces NCCL/RCCL use for bootstrap and sockets. Syntax
(NCCL docs): a comma-separated list of prefixes (`eth` = eth0, eth1, ...); a leading `^`
excludes instead (`^docker,lo`); a leading `=` matches exact names (`=eth0`, `^=docker0`).
If it selects no existing interface, NCCL/RCCL fail at init ("no socket interface found") or
hang in bootstrap; if it selects a down or wrong interface, ranks cannot reach each other.
""")
def check_socket_ifname(facts: Facts) -> Iterable[Verdict]:
    value = facts.env.get("NCCL_SOCKET_IFNAME")
    if value is None:
        return
    yield from _check_nccl_ifname(facts, "NCCL_SOCKET_IFNAME", value)


def _check_nccl_ifname(facts: Facts, var: str, value: str) -> Iterable[Verdict]:
    names = _interface_names(facts)
    if not names:
        yield Verdict("info", f"{var}={value} not checked: no interface list captured")
        return
    parsed = envlint.parse_name_list(value)
    if not parsed.entries:
        yield Verdict("fail", f"{var} is empty", f"{var}={value!r} names no interface.",
                      f"unset {var}" + ("" if _suggest(facts) == "<interface>" else
                                         f", or set it to an interface such as {_suggest(facts)}"))
        return
    chosen = [n for n in names if parsed.selects(n) and (n != "lo" or not parsed.exclude)]
    have = ", ".join(names)
    if not chosen:
        what = "excludes every interface" if parsed.exclude else "matches no interface"
        yield Verdict("fail", f"{var}={value} {what} here",
                      f"Interfaces on this node: {have}. NCCL/RCCL find no socket interface "
                      "and fail at init (or hang in bootstrap).",
                      _export(var, facts))
        return
    up = [n for n in chosen if any(i.name == n and i.is_up for i in facts.interfaces)]
    if not up:
        yield Verdict("warn", f"{var}={value} selects only interfaces that are down",
                      f"Selected: {', '.join(chosen)}.", _export(var, facts))
        return
    unmatched = parsed.unmatched(names) if not parsed.exclude else []
    if unmatched:
        yield Verdict("info", f"{var}: entries {', '.join(e.name for e in unmatched)} match "
                      "nothing here",
                      f"Selected: {', '.join(chosen)}. Fine if other nodes have them.", "")
    yield Verdict("ok", f"{var}={value} selects {', '.join(chosen)}")


def _suggest(facts: Facts) -> str:
    """An interface worth naming in a fix: up, not loopback, fastest first."""
    candidates = sorted((i for i in facts.interfaces if i.is_up and i.name != "lo"),
                        key=lambda i: -(i.speed_mbps or 0))
    return candidates[0].name if candidates else "<interface>"


def _export(var: str, facts: Facts) -> str:
    """The fix that sets ``var`` to a good interface: a command to paste when this node has
    one up, else what to do first (a literal "<interface>" would not paste into a shell)."""
    name = _suggest(facts)
    if name != "<interface>":
        return f"export {var}={name}"
    return (f"bring up the interface that reaches the other nodes (only loopback is up here), "
            f"then export {var}=<its name>")


@rule("env.gloo-ifname", "env", """
GLOO_SOCKET_IFNAME picks the interfaces of torch's gloo backend. Unlike NCCL's variable it
takes exact interface names only, comma-separated (torch opens one gloo device per name); no
prefixes, no `^`/`=`. A name that does not exist makes init_process_group("gloo") raise on
this node.
""")
def check_gloo_ifname(facts: Facts) -> Iterable[Verdict]:
    value = facts.env.get("GLOO_SOCKET_IFNAME")
    if value is None:
        return
    names = _interface_names(facts)
    if not names:
        yield Verdict("info", f"GLOO_SOCKET_IFNAME={value} not checked: no interface list captured")
        return
    if value.strip().startswith(("^", "=")):
        yield Verdict("fail", f"GLOO_SOCKET_IFNAME={value} uses NCCL's ^/= syntax",
                      "gloo takes exact interface names; it looks for an interface literally "
                      f"named {value.split(',')[0]!r}.",
                      _export("GLOO_SOCKET_IFNAME", facts))
        return
    wanted = [w.strip() for w in value.split(",") if w.strip()]
    missing = [w for w in wanted if w not in names]
    if not wanted or missing:
        yield Verdict("fail", f"GLOO_SOCKET_IFNAME names {', '.join(missing) or 'nothing'} "
                      "which is not an interface here",
                      f"Interfaces on this node: {', '.join(names)}. gloo raises at "
                      "init_process_group.", _export("GLOO_SOCKET_IFNAME", facts))
        return
    down = [w for w in wanted if not any(i.name == w and i.is_up for i in facts.interfaces)]
    if down:
        yield Verdict("warn", f"GLOO_SOCKET_IFNAME names interface(s) that are down: "
                      f"{', '.join(down)}", "", _export("GLOO_SOCKET_IFNAME", facts))
        return
    yield Verdict("ok", f"GLOO_SOCKET_IFNAME={value} exists and is up")


@rule("env.ib-hca", "env", """
NCCL_IB_HCA picks the RDMA devices (and ports) NCCL/RCCL use: the list syntax of
NCCL_SOCKET_IFNAME (prefixes, `^` exclude, `=` exact) plus an optional `:port` per entry
(`=mlx5_0:1,mlx5_1:1`). Naming devices that do not exist here leaves NCCL without IB devices,
so it falls back to TCP sockets (10x slower) or fails; naming DOWN ports breaks connections.
""")
def check_ib_hca(facts: Facts) -> Iterable[Verdict]:
    value = facts.env.get("NCCL_IB_HCA")
    if value is None:
        return
    if not facts.rdma:
        yield Verdict("warn", f"NCCL_IB_HCA={value} is set but this node has no RDMA device",
                      "NCCL/RCCL will use TCP sockets between nodes.",
                      "unset NCCL_IB_HCA on nodes without RDMA, or fix the RDMA driver "
                      "(`ibv_devinfo`)")
        return
    parsed = envlint.parse_name_list(value, with_ports=True)
    bad = [e for e in parsed.entries if e.bad_port is not None]
    if bad:
        yield Verdict("fail", f"NCCL_IB_HCA={value}: unreadable port in "
                      f"{', '.join(f'{e.name}:{e.bad_port}' for e in bad)}",
                      "A port is a number, e.g. mlx5_0:1.", "")
    ports = [(d, p) for d in facts.rdma for p in d.ports] or \
        [(d, RdmaPort(port=1)) for d in facts.rdma]
    chosen = [(d, p) for d, p in ports if parsed.selects(d.name, p.port)]
    have = ", ".join(f"{d.name}:{p.port}" for d, p in ports)
    if not chosen:
        what = "excludes every RDMA port" if parsed.exclude else "matches no RDMA device"
        yield Verdict("fail", f"NCCL_IB_HCA={value} {what} here",
                      f"RDMA ports on this node: {have}. NCCL/RCCL find no IB device and fall "
                      "back to TCP sockets (or fail).",
                      "export NCCL_IB_HCA=" + ",".join(sorted({d.name for d, p in ports
                                                               if p.active}) or ["<device>"]))
        return
    if not parsed.exclude:
        unmatched = parsed.unmatched([d.name for d in facts.rdma])
        wrong_port = [e for e in parsed.entries if e.port is not None and e.bad_port is None
                      and any(parsed.matches(e, d.name) for d in facts.rdma)
                      and not any(parsed.matches(e, d.name, p.port) for d, p in ports)]
        if unmatched or wrong_port:
            names = [e.name for e in unmatched] + [f"{e.name}:{e.port}" for e in wrong_port]
            yield Verdict("warn", f"NCCL_IB_HCA names {', '.join(names)}, absent here",
                          f"RDMA ports on this node: {have}.",
                          "remove the absent entries (or fix the device that is missing)")
    inactive = [f"{d.name}:{p.port}" for d, p in chosen if p.state and not p.active]
    if inactive and len(inactive) == len(chosen):
        yield Verdict("fail", "NCCL_IB_HCA selects only ports that are not active",
                      f"Selected: {', '.join(inactive)}.",
                      "bring the links up or select active ports")
    elif inactive:
        yield Verdict("warn", f"NCCL_IB_HCA selects inactive port(s): {', '.join(inactive)}",
                      "Connections through them fail.", "exclude them, e.g. NCCL_IB_HCA=^=" +
                      ",".join(sorted({i.split(':')[0] for i in inactive})))
    else:
        yield Verdict("ok", f"NCCL_IB_HCA={value} selects "
                      f"{', '.join(f'{d.name}:{p.port}' for d, p in chosen)}")


@rule("env.debug-knobs", "env", """
NCCL's documentation separates system-configuration variables from debugging ones that
"should not be used in production nor retained in scripts", among them the algorithm,
protocol, channel and buffer overrides. Flagged: NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS,
NCCL_MAX_NCHANNELS, NCCL_BUFFSIZE, NCCL_NTHREADS, NCCL_CHECKS_DISABLE, NCCL_LAUNCH_MODE, and
the switches that turn a transport off (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_IB_DISABLE).
Left set, they pin choices NCCL/RCCL would tune per size and topology (RCCL bypasses its MI300
channel tuning model when NCCL_MIN/MAX_NCHANNELS are set) and typically cost bandwidth or
cause hangs.
""")
def check_debug_knobs(facts: Facts) -> Iterable[Verdict]:
    for name, why in envvars.DEBUG_KNOBS.items():
        if name in facts.env:
            yield Verdict("warn", f"{name}={facts.env[name]} is set (a debugging knob)",
                          f"It {why}. Keep it for an experiment, not in a job script.",
                          f"unset {name}")


@rule("env.nccl-debug", "env", """
NCCL_DEBUG=INFO (or TRACE) makes every rank print its topology, channels and connections:
exactly what a diagnosis needs, and megabytes of log per job otherwise, written while
communicators initialise. Leave it unset (or WARN) in production and turn it on to debug.
""")
def check_nccl_debug(facts: Facts) -> Iterable[Verdict]:
    value = facts.env.get("NCCL_DEBUG")
    if value is not None and value.strip().upper() in ("INFO", "TRACE"):
        yield Verdict("warn", f"NCCL_DEBUG={value} is left on",
                      "Every rank logs init details (TRACE: every call); this slows "
                      "initialisation and floods logs.",
                      "unset NCCL_DEBUG (or NCCL_DEBUG=WARN) outside debugging sessions")


@rule("env.obsolete", "env", """
Switches that the installed library no longer has do nothing, and whoever set them believes
they do. collscope keeps a small table with sources: RCCL removed its clique-based kernels in
2.12.10 (ROCm 5.3), so RCCL_ENABLE_CLIQUE, RCCL_CLIQUE_IGNORE_TOPO,
RCCL_CLIQUE_ALLREDUCE_BYTE_LIMIT and RCCL_CLIQUE_ALLREDUCE_NCHANNELS are dead;
RCCL_FORCE_ENABLE_CLIQUE was replaced in 2.8.4; RCCL_ENABLE_HIPGRAPH is unnecessary since
2.13.4 (ROCm 5.4). NCCL renamed NCCL_MAX/MIN_NRINGS to NCCL_MAX/MIN_NCHANNELS and
NCCL_IB_GDR_LEVEL to NCCL_NET_GDR_LEVEL; torch reads TORCH_NCCL_ASYNC_ERROR_HANDLING,
TORCH_NCCL_BLOCKING_WAIT and TORCH_NCCL_DESYNC_DEBUG instead of the NCCL_* spellings.
The installed RCCL version comes from torch (torch.cuda.nccl.version()) or the NCCL log.
""")
def check_obsolete(facts: Facts) -> Iterable[Verdict]:
    installed = version_tuple(facts.rccl_or_nccl_version)
    is_rccl = bool(facts.torch and facts.torch.hip) or \
        bool(facts.nccl_log and facts.nccl_log.library == "RCCL")
    for name in sorted(facts.env):
        entry = envvars.OBSOLETE.get(name)
        if entry is None:
            continue
        if entry.replacement:
            also = f" ({entry.replacement} is set too)" if entry.replacement in facts.env else ""
            yield Verdict("warn", f"{name} is an old name: use {entry.replacement}",
                          f"{entry.note}{also}.",
                          f"rename it: export {entry.replacement}={facts.env[name]}; "
                          f"unset {name}")
            continue
        removed = ".".join(map(str, entry.removed_in or ()))
        if installed is not None and is_rccl and entry.removed_in is not None:
            if installed >= entry.removed_in:
                yield Verdict("warn", f"{name} has no effect in the installed RCCL "
                              f"{'.'.join(map(str, installed))}", entry.note + ".",
                              f"unset {name}")
            continue
        yield Verdict("info", f"{name}: gone since RCCL {removed}",
                      f"{entry.note}; the installed RCCL version is unknown here.",
                      f"unset {name} if your RCCL is {removed} or newer")


@rule("env.typo", "env", """
NCCL, RCCL, torch and gloo silently ignore variables they do not know, so a misspelt name
(NCCL_SOCKET_IFNAMES, NCCL_IB_HCAS, RCCL_SOCKET_IFNAME for NCCL_SOCKET_IFNAME) leaves the
intended setting unset. Names with the NCCL_, RCCL_, TORCH_NCCL_ and GLOO_ prefixes are
compared with the names collscope knows (difflib similarity >= 0.85); close ones are flagged
with the probable intended name, other unknown ones are listed as information (a network
plugin's or a newer release's variable).
""")
def check_typos(facts: Facts) -> Iterable[Verdict]:
    unknown = []
    for name in sorted(facts.env):
        if not name.startswith(envvars.TYPO_PREFIXES) or name in envvars.KNOWN:
            continue
        close = envvars.closest_known(name)
        if close:
            yield Verdict("warn", f"{name} is not a known variable: did you mean {close}?",
                          f"{name}={facts.env[name]} is ignored by the libraries.",
                          f"rename it: export {close}={facts.env[name]}; unset {name}")
        else:
            unknown.append(name)
    if unknown:
        yield Verdict("info", f"Variables collscope does not know: {listing(unknown)}",
                      "They may belong to a network plugin or a newer release.", "")


def _fr_fix(row: fr.Release | None) -> str:
    """The variables to export, under the names the node's torch reads (both sets when its
    version is unknown)."""
    def line(r: fr.Release) -> str:
        return (f"export {r.buffer_variable}=2000 {fr.DUMP_ON_TIMEOUT}=1 "
                f"{r.dump_file_variable}=/shared/fr/trace_")
    where = ("(a folder every node can write; one file per rank), then after a hang: "
             "collscope hang /shared/fr/")
    if row is None:
        return (f"torch >= 2.8: {line(fr.RELEASES[-1])}; torch 2.5-2.7: "
                f"{line(fr.RELEASES[0])} {where}")
    return f"{line(row)} {where}"


@rule("env.flight-recorder", "env", """
PyTorch's Flight Recorder keeps, per rank, a ring buffer of the recent collectives (group,
sequence number, op, sizes, state, Python stack) and dumps it when the NCCL watchdog times out
(TORCH_NCCL_DUMP_ON_TIMEOUT, to the dump-file variable + rank). Those dumps are what
`collscope hang` (and torch's fr_trace) name the rank a hung job waits on from; without them a
hang leaves only "Watchdog caught collective operation timeout" on every rank. The names
depend on the node's torch (collscope.runtime.flight_recorder): torch 2.5-2.7 record NCCL/RCCL
only, sized by TORCH_NCCL_TRACE_BUFFER_SIZE and dumped to TORCH_NCCL_DEBUG_INFO_TEMP_FILE;
from 2.8 gloo too, under TORCH_FR_BUFFER_SIZE and TORCH_FR_DUMP_TEMP_FILE (the old names still
read, with a deprecation warning). 0 turns the ring off; unset, NCCL keeps 2000 entries from
torch 2.6 (pytorch#142260, none in 2.5) and gloo from 2.11 (pytorch#172843; none in 2.8-2.10;
measured with torch 2.13: a gloo collective is recorded with the variable unset).
""")
def check_flight_recorder(facts: Facts) -> Iterable[Verdict]:
    version = facts.torch.version if facts.torch else None
    row = fr.release(version)
    fix = _fr_fix(row)
    for ignored in fr.ignored_buffer_variables(facts.env, row):
        yield Verdict("warn", f"{ignored} is not read by torch {version}",
                      f"torch {version} sizes its Flight Recorder with "
                      f"{row.buffer_variable if row else '?'}; {ignored} has no effect.", fix)
    name, value = fr.buffer_setting(facts.env, row)
    if name is not None:
        try:
            entries = int(str(value).strip())
        except ValueError:
            entries = -1
        if entries <= 0:
            yield Verdict("warn", f"the Flight Recorder is off ({name}={value}): a hang will "
                          "leave nothing to analyse",
                          f"{name}={value} keeps no entries, so no rank can dump which "
                          "collective it waits in.", fix)
        elif row is not None and name in row.buffer_aliases:
            yield Verdict("info", f"{name} is the old name of {row.buffer_variable}",
                          f"torch {version} still reads it and warns that it is deprecated.",
                          f"export {row.buffer_variable}={value}; unset {name}")
        return
    if row is None:
        seen = (f"torch {version} is outside the supported 2.5-2.15" if version
                else "the torch version is unknown here")
        yield Verdict("warn", "the Flight Recorder is not enabled (no "
                      f"{' / '.join(fr.BUFFER_VARIABLES)}): a hang will leave nothing to "
                      "analyse", f"Neither variable is set and {seen}.", fix)
        return
    backend = "nccl" if facts.torch and "nccl" in facts.torch.backends else "gloo"
    if backend in row.on_by_default:
        return
    if not row.records(backend):
        yield Verdict("info", f"torch {version} has no Flight Recorder for gloo",
                      "Its Flight Recorder records NCCL/RCCL only (gloo from torch 2.8): "
                      "`collscope hang` gets no dumps from a gloo job; `collscope watch` still "
                      "names a hung rank from the ranks' stacks.", "torch >= 2.8 for gloo dumps")
        return
    yield Verdict("warn", f"the Flight Recorder is not enabled (no {row.buffer_variable}): a "
                  "hang will leave nothing to analyse",
                  f"torch {version} keeps no {backend} entries without it.", fix)

