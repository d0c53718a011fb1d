"""NCCL's name-list syntax, for the environment lint (the names themselves: collscope.envvars).

NCCL_SOCKET_IFNAME and NCCL_IB_HCA take the same list syntax (NCCL docs, "Environment
Variables"): comma-separated prefixes; a leading ``^`` excludes instead of selects; a leading
``=`` (after ``^`` if both) makes every entry an exact name instead of a prefix; NCCL_IB_HCA
entries may end in ``:port``. GLOO_SOCKET_IFNAME is different: torch splits it on commas and
opens each entry as an exact interface name (no prefixes, no ``^``/``=``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ListEntry:
    name: str
    port: int | None = None        # NCCL_IB_HCA "mlx5_0:1"; None = every port
    bad_port: str | None = None    # the text after ':' when it is not a port number


@dataclass(frozen=True)
class NameList:
    """A parsed NCCL interface/HCA list."""

    exclude: bool
    exact: bool
    entries: tuple[ListEntry, ...]

    def matches(self, entry: ListEntry, name: str, port: int | None = None) -> bool:
        hit = name == entry.name if self.exact else name.startswith(entry.name)
        return hit and (entry.port is None or port is None or entry.port == port)

    def any_match(self, name: str, port: int | None = None) -> bool:
        return any(self.matches(e, name, port) for e in self.entries)

    def selects(self, name: str, port: int | None = None) -> bool:
        """Would NCCL use this interface/device (port)?"""
        return self.any_match(name, port) != self.exclude

    def unmatched(self, names: list[str]) -> list[ListEntry]:
        """Entries that name nothing present (ports ignored)."""
        return [e for e in self.entries if not any(self.matches(e, n) for n in names)]


def parse_name_list(value: str, with_ports: bool = False) -> NameList:
    text = value.strip()
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    exact = text.startswith("=")
    if exact:
        text = text[1:]
    entries = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, port, bad = part, None, None
        if with_ports and ":" in part:
            name, _, port_text = part.partition(":")
            if port_text.isdigit():
                port = int(port_text)
            else:
                bad = port_text
        entries.append(ListEntry(name, port, bad))
    return NameList(exclude, exact, tuple(entries))
