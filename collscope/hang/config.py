"""What `collscope hang` analyses: one typed dataclass (pure, no dump reading, so the CLI
builds its parser from it without importing the readers)."""

from __future__ import annotations

from dataclasses import dataclass

from collscope.config_flags import REQUIRED, ConfigError, flag, json_flag


@dataclass
class HangConfig:
    """What `collscope hang` analyses."""

    paths: list[str] = flag(REQUIRED, "paths", nargs="+", metavar="PATH",
                            help="dump files or folders")
    hosts: str | None = flag(None, "--hosts", metavar="FILE", show_default=False,
                             help="rank -> host names: a JSON object {\"5\": \"node-02\"} or "
                                  "lines 'RANK HOST' (default: from the file names where they "
                                  "carry hosts, and collscope watch's stack files)")
    json: str | None = json_flag("write JSON Lines: a run record, one hang_group per process "
                                 "group, one hang_verdict ('-': to stdout instead of the text)")

    def __post_init__(self) -> None:
        if not self.paths:
            raise ConfigError("paths", "give at least one dump file or folder", "PATH")


def parse_hosts(text: str, label: str = "--hosts") -> dict[int, str]:
    """{rank: host} from a JSON object or 'RANK HOST' lines; ConfigError naming ``label``."""
    import json

    accepted = "use a JSON object {\"RANK\": \"HOST\"} or lines 'RANK HOST'"
    stripped = text.strip()
    try:
        if stripped.startswith("{"):
            return {int(r): str(h) for r, h in json.loads(stripped).items()}
        hosts = {}
        for line in stripped.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                rank, host = line.replace(",", " ").replace(":", " ").split()[:2]
                hosts[int(rank)] = host
        return hosts
    except (ValueError, AttributeError, TypeError):
        raise ConfigError("hosts", f"cannot read rank -> host names; {accepted}",
                          label) from None
