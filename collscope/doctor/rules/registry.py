"""Pure rules: Facts -> findings, each with what was found, why it matters, and the fix.

Every rule is registered (collscope.rules, the registry trace's findings use too) with an id,
an area and a long explanation (``collscope doctor --explain ID``). A rule returns
``Verdict``s; ``run_checks`` stamps them with the rule's id and area. A rule that crashes on
odd facts becomes one "warn" finding naming the rule rather than taking the whole report
down (property tests make sure none does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal, NamedTuple, get_args

from collscope import rules
from collscope.doctor.facts import Facts
from collscope.redact import redact_secrets

Level = Literal["fail", "warn", "info", "ok"]
LEVELS: tuple[Level, ...] = get_args(Level)      # worst first
AREAS = ("gpu", "torch", "topology", "host", "network", "ucx", "nccl", "env", "selftest",
         "cluster", "tools")


@dataclass
class Finding:
    """One result of one rule."""

    id: str
    level: Level
    area: str
    title: str
    detail: str = ""
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Verdict(NamedTuple):
    level: Level
    title: str
    detail: str = ""
    fix: str = ""


Check = Callable[[Facts], Iterable[Verdict]]
Rule = rules.Rule
REGISTRY: rules.Registry[Check] = rules.Registry(AREAS)
RULES = REGISTRY.rules
rule = REGISTRY.rule                        # @rule(id, area, explanation) on a check
register_external = REGISTRY.external      # a rule whose findings come from elsewhere
explain = REGISTRY.explain


def run_checks(facts: Facts, only: Iterable[str] | None = None) -> list[Finding]:
    """Every registered rule (or those in ``only``) on ``facts``, worst first."""
    wanted = None if only is None else set(only)
    findings = []
    for entry in RULES.values():
        if entry.check is None or (wanted is not None and entry.id not in wanted):
            continue
        try:
            for verdict in entry.check(facts):  # redacted: rules quote logs and tool output
                findings.append(Finding(entry.id, verdict.level, entry.area,
                                        redact_secrets(verdict.title),
                                        redact_secrets(verdict.detail),
                                        redact_secrets(verdict.fix)))
        except Exception as error:  # a rule bug must not hide every other finding
            findings.append(Finding(entry.id, "warn", entry.area,
                                    f"check {entry.id} could not run: {type(error).__name__}",
                                    f"{error} (a collscope bug: please report it with the "
                                    "bundle from --collect)"))
    return sort_findings(findings)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Areas with the worst finding first; inside an area, worst first (stable)."""
    def level_rank(level: str) -> int:
        return LEVELS.index(level) if level in LEVELS else len(LEVELS)

    # Areas with a failure come first, then areas with a warning, then the rest in the
    # fixed reading order (info and ok do not reorder areas).
    worst: dict[str, int] = {}
    for f in findings:
        worst[f.area] = min(worst.get(f.area, 99), level_rank(f.level), LEVELS.index("info"))

    def key(f: Finding) -> tuple[int, int, int]:
        area = AREAS.index(f.area) if f.area in AREAS else len(AREAS)
        return worst[f.area], area, level_rank(f.level)

    return sorted(findings, key=key)


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when nothing fails, 1 when a check fails."""
    return 1 if any(f.level == "fail" for f in findings) else 0

