"""Search spaces: which variables tune varies, the values each may take, and the baseline.

Pure (no torch, no I/O). Names are checked against doctor's table of known variables
(``collscope.envvars``, doctor's too), so a typo is refused with "did you mean"; values are checked
against what NCCL/RCCL accept (``VALUE_RULES``), including values that need a newer library than
the installed one.

The baseline ("defaults") is the environment tune itself runs in: a space variable it inherited
keeps that value, one it did not inherit stays unset so the library chooses. A variable whose
unset state is no usable setting (``NO_USABLE_DEFAULT``: gloo without GLOO_SOCKET_IFNAME binds to
whatever the host name resolves to, often loopback, which cannot reach other nodes) takes the
first value listed instead, and the output says so.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from collscope.envvars import KNOWN, OBSOLETE, TYPO_PREFIXES, closest_known
from collscope.errors import UsageError
from collscope.records.run import RECORDED_ENV_PREFIXES

# Families with hundreds of knobs that doctor does not list one by one (HSA_, UCX_, HIP_,
# ROCR_, ...): accepted by prefix. They are all in the run record's environment, which is
# how `tune --merge` tells configurations apart.
UNLISTED_PREFIXES = tuple(p for p in RECORDED_ENV_PREFIXES
                          if p.endswith("_") and p not in TYPO_PREFIXES)

NO_USABLE_DEFAULT = {
    "GLOO_SOCKET_IFNAME": "unset, gloo binds to the address the host name resolves to (often "
                          "loopback, which cannot reach other nodes)",
}

Version = tuple[int, ...]


@dataclass(frozen=True)
class Library:
    """The collective library the trials will load: "nccl", "rccl" or None (gloo / unknown)."""

    name: str | None = None
    version: Version | None = None

    def describe(self) -> str:
        if self.name is None:
            return "no NCCL/RCCL (version-dependent values not checked)"
        shown = ".".join(map(str, self.version)) if self.version else "version unknown"
        return f"{self.name} {shown}"


# ---------------------------------------------------------------------------------------------
# Values NCCL/RCCL accept
# ---------------------------------------------------------------------------------------------

# NCCL_ALGO / NCCL_PROTO take comma lists (case-insensitive), or "^" + a list to exclude
# (NCCL docs, "Environment Variables"). (name, minimum NCCL version, available in RCCL):
# NVLS arrived in NCCL 2.17, NVLSTree in 2.18, PAT in 2.23 (NCCL release notes); RCCL has no
# NVLink SHARP.
ALGORITHMS = {"ring": ((), True), "tree": ((), True), "collnetdirect": ((), True),
              "collnetchain": ((), True), "nvls": ((2, 17), False),
              "nvlstree": ((2, 18), False), "pat": ((2, 23), True)}
PROTOCOLS = ("ll", "ll128", "simple")
GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")


def _list_of(accepted: Mapping[str, tuple[Version, bool]] | Sequence[str], what: str,
             ) -> Callable[[str, Library], str | None]:
    table = accepted if isinstance(accepted, Mapping) else {a: ((), True) for a in accepted}

    def check(value: str, library: Library) -> str | None:
        items = [item.strip().lower() for item in value.removeprefix("^").split(",")]
        for item in items:
            if item not in table:
                return f"'{item}' is not a {what}; accepted: {', '.join(table)}"
            since, in_rccl = table[item]
            if library.name == "rccl" and not in_rccl:
                return f"'{item}' is not available in RCCL"
            if library.name == "nccl" and library.version and since and library.version < since:
                return (f"'{item}' needs NCCL {'.'.join(map(str, since))} or newer; "
                        f"installed: {library.describe()}")
        return None
    return check


def _integer(low: int, high: int | None = None, powers_of_two: bool = False,
             ) -> Callable[[str, Library], str | None]:
    def check(value: str, _library: Library) -> str | None:
        if not re.fullmatch(r"\d+", value.strip()):
            return f"'{value}' is not an integer"
        number = int(value)
        if number < low or (high is not None and number > high):
            return f"{number} is outside {low}..{high if high is not None else 'inf'}"
        if powers_of_two and number & (number - 1):
            return f"{number} is not a power of two"
        return None
    return check


def _choice(*accepted: str) -> Callable[[str, Library], str | None]:
    def check(value: str, _library: Library) -> str | None:
        if value in accepted:
            return None
        return f"'{value}' is not accepted; use {', '.join(accepted)}"
    return check


def _gdr_level(value: str, _library: Library) -> str | None:
    if value.upper() in GDR_LEVELS or re.fullmatch(r"\d", value):
        return None
    return f"'{value}' is not a level; use {', '.join(GDR_LEVELS)} or 0..5"


def _interface_list(value: str, _library: Library) -> str | None:
    names = [name.strip() for name in value.split(",")]
    return None if all(names) else f"'{value}' has an empty interface name"


# Bounds from the NCCL docs: NTHREADS 64, 128, 256 or 512; QPs per connection 1..128; CTAs at
# most 32 (NCCL_MAX_CTAS docs: "between 1 and 32"); channels at most 64 in NCCL (RCCL's MI300
# models use up to 112 or more, so channels are not capped here).
VALUE_RULES: dict[str, Callable[[str, Library], str | None]] = {
    "NCCL_ALGO": _list_of(ALGORITHMS, "NCCL algorithm"),
    "NCCL_PROTO": _list_of(PROTOCOLS, "NCCL protocol"),
    "NCCL_MIN_NCHANNELS": _integer(1),
    "NCCL_MAX_NCHANNELS": _integer(1),
    "NCCL_NTHREADS": _choice("64", "128", "256", "512"),
    "NCCL_BUFFSIZE": _integer(1),
    "NCCL_IB_QPS_PER_CONNECTION": _integer(1, 128),
    "NCCL_MIN_CTAS": _integer(1, 32),
    "NCCL_MAX_CTAS": _integer(1, 32),
    "NCCL_NET_GDR_LEVEL": _gdr_level,
    "NCCL_SOCKET_NTHREADS": _integer(1, 16),
    "NCCL_NSOCKS_PERTHREAD": _integer(1, 64),
    "NCCL_P2P_NET_CHUNKSIZE": _integer(1, powers_of_two=True),
    "RCCL_MSCCL_ENABLE": _choice("0", "1"),
    "RCCL_MSCCLPP_ENABLE": _choice("0", "1"),
    "HSA_ENABLE_SDMA": _choice("0", "1"),
    "GLOO_SOCKET_IFNAME": _interface_list,
    "NCCL_SOCKET_IFNAME": _interface_list,
}


def check_name(name: str, flag: str) -> None:
    """Refuse a variable tune cannot vary: a misspelling, a dropped or renamed switch (doctor's
    OBSOLETE table), or nothing collectives read."""
    if name in OBSOLETE:
        old = OBSOLETE[name]
        use = f"; use {old.replacement}" if old.replacement else ""
        raise UsageError(f"{flag}: {name} is obsolete ({old.note}){use}")
    if name in KNOWN or (name.startswith(UNLISTED_PREFIXES) and not name.startswith(TYPO_PREFIXES)):
        return
    guess = closest_known(name)
    hint = f"; did you mean {guess}?" if guess else ""
    if name.startswith(TYPO_PREFIXES):
        raise UsageError(f"{flag}: {name} is not a variable NCCL, RCCL, torch or gloo reads"
                         f"{hint}")
    raise UsageError(f"{flag}: {name} is not a communication variable tune can vary{hint} "
                     f"(accepted: the NCCL_/RCCL_/GLOO_/TORCH_NCCL_ names doctor knows, or "
                     f"{', '.join(p + '*' for p in UNLISTED_PREFIXES)} variables)")


def check_value(name: str, value: str, library: Library, flag: str) -> None:
    rule = VALUE_RULES.get(name)
    problem = rule(value, library) if rule else None
    if problem:
        raise UsageError(f"{flag}: {name}={value}: {problem}")


# ---------------------------------------------------------------------------------------------
# Spaces and configurations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """One assignment of every space variable; None = unset (the library chooses)."""

    values: tuple[tuple[str, str | None], ...]

    def as_dict(self) -> dict[str, str | None]:
        return dict(self.values)

    def with_value(self, name: str, value: str | None) -> Config:
        return Config(tuple((n, value if n == name else v) for n, v in self.values))

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with this configuration applied (unset variables removed)."""
        env = dict(base)
        for name, value in self.values:
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def matches(self, env: Mapping[str, str]) -> bool:
        return all(env.get(name) == value for name, value in self.values)

    def label(self, baseline: Config) -> str:
        """"defaults" for the baseline, else the variables that differ from it."""
        base = baseline.as_dict()
        changed = [f"{n}={'(unset)' if v is None else v}" for n, v in self.values
                   if base.get(n) != v]
        return " ".join(changed) or "defaults"


@dataclass(frozen=True)
class Space:
    """Variables in order, each with its values (as given, duplicates removed)."""

    variables: tuple[tuple[str, tuple[str, ...]], ...]
    baseline: Config = field(default_factory=lambda: Config(()))
    baseline_notes: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.variables]

    def grid(self) -> list[Config]:
        """Every combination, the baseline first, without duplicates."""
        combos = itertools.product(*(values for _, values in self.variables))
        configs = [self.baseline]
        for combo in combos:
            config = Config(tuple(zip(self.names, combo)))
            if config not in configs:
                configs.append(config)
        return configs

    @property
    def grid_size(self) -> int:
        return len(self.grid())


def parse_assignment(text: str, flag: str) -> tuple[str, list[str]]:
    """NAME=V1,V2,... -> (NAME, [V1, V2, ...]) (see split_values for list-valued settings)."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name or not values.strip():
        raise UsageError(f"{flag}: '{text}' is not NAME=V1,V2,...; e.g. "
                         "NCCL_PROTO=LL,LL128,Simple")
    return name, split_values(values)


def split_values(text: str) -> list[str]:
    """Values are comma-separated; a value that is itself a list (NCCL_ALGO=Ring,Tree as ONE
    setting, GLOO_SOCKET_IFNAME=eth0,eth1) is written with '+' instead: Ring+Tree."""
    return [value.strip().replace("+", ",") for value in text.split(",") if value.strip()]


def build_space(assignments: Sequence[tuple[str, list[str]]], environ: Mapping[str, str],
                library: Library, flag: str = "--space") -> Space:
    """Validate names and values, and fix the baseline (module doc)."""
    variables: dict[str, list[str]] = {}
    for name, values in assignments:
        check_name(name, flag)
        for value in values:
            check_value(name, value, library, flag)
        merged = variables.setdefault(name, [])
        merged.extend(v for v in values if v not in merged)
    if not variables:
        raise UsageError("--space/--preset: nothing to tune; give --space NAME=V1,V2 or "
                         "--preset NAME")
    baseline: list[tuple[str, str | None]] = []
    notes: list[str] = []
    for name, values in variables.items():
        inherited = environ.get(name)
        if inherited is not None:
            baseline.append((name, inherited))
            notes.append(f"{name}={inherited} (inherited from this environment)")
        elif name in NO_USABLE_DEFAULT:
            baseline.append((name, values[0]))
            notes.append(f"{name}={values[0]} (first value listed: {NO_USABLE_DEFAULT[name]})")
        else:
            baseline.append((name, None))
            notes.append(f"{name} unset (the library's default)")
    return Space(tuple((n, tuple(v)) for n, v in variables.items()), Config(tuple(baseline)),
                 tuple(notes))


# ---------------------------------------------------------------------------------------------
# Presets: small grids, per library, filtered by the installed version
# ---------------------------------------------------------------------------------------------

# (variable, [(value, minimum library version)]). Kept small on purpose: each configuration
# costs rounds x one bench job. The README lists them.
PRESETS: dict[str, tuple[str, list[tuple[str, list[tuple[str, Version]]]]]] = {
    "rccl-basic": ("rccl", [
        ("NCCL_ALGO", [("Ring", ()), ("Tree", ())]),
        ("NCCL_PROTO", [("LL", ()), ("LL128", ()), ("Simple", ())]),
        ("RCCL_MSCCL_ENABLE", [("0", ()), ("1", ())]),
        ("HSA_ENABLE_SDMA", [("0", ()), ("1", ())]),
    ]),
    "nccl-basic": ("nccl", [
        ("NCCL_ALGO", [("Ring", ()), ("Tree", ()), ("NVLS", (2, 17)), ("PAT", (2, 23))]),
        ("NCCL_PROTO", [("LL", ()), ("LL128", ()), ("Simple", ())]),
        ("NCCL_MIN_CTAS", [("16", ()), ("32", ())]),
        ("NCCL_IB_QPS_PER_CONNECTION", [("1", ()), ("2", ()), ("4", ())]),
    ]),
}


def preset_assignments(name: str, library: Library) -> list[tuple[str, list[str]]]:
    """The preset's variables with the values the installed library accepts."""
    if name not in PRESETS:
        raise UsageError(f"--preset: '{name}' is not a preset; accepted: {', '.join(PRESETS)}")
    for_library, variables = PRESETS[name]
    result = []
    for variable, values in variables:
        kept = [value for value, since in values
                if not (since and library.name == for_library and library.version
                        and library.version < since)
                and check_value_ok(variable, value, library)]
        result.append((variable, kept))
    return result


def check_value_ok(name: str, value: str, library: Library) -> bool:
    rule = VALUE_RULES.get(name)
    return rule is None or rule(value, library) is None
