"""The one rule registry: doctor's checks (collscope.doctor.rules) and trace's findings
(collscope.trace.findings) are rules registered the same way.

A rule is an id, an area (one of the registry's), the explanation `--explain` prints and a
check; ``@registry.rule(id, area, '''explanation''')`` on the check registers it. Rules are
kept in the order registered, the order their reports read them. What a check takes and what
its verdicts are is each registry's own (doctor: Facts -> Verdicts with a level; trace:
TraceFacts -> Verdicts with the step time at stake), and so is running them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Check = TypeVar("Check", bound=Callable[..., Any])


@dataclass(frozen=True)
class Rule(Generic[Check]):
    id: str
    area: str
    explanation: str
    check: Check | None   # None: computed elsewhere (doctor's differences across nodes)


class Registry(Generic[Check]):
    """Rules by id, in the order registered; every area one of ``areas``."""

    def __init__(self, areas: tuple[str, ...]) -> None:
        self.areas = areas
        self.rules: dict[str, Rule[Check]] = {}

    def rule(self, rule_id: str, area: str, explanation: str) -> Callable[[Check], Check]:
        """Register the decorated check under ``rule_id``; ``explanation``: what --explain
        prints (why the rule exists, what it looks at)."""
        assert area in self.areas, area

        def register(check: Check) -> Check:
            self.rules[rule_id] = Rule(rule_id, area, explanation.strip(), check)
            return check

        return register

    def external(self, rule_id: str, area: str, explanation: str) -> None:
        """A rule whose findings are produced outside the registry's runner (e.g. across
        nodes), registered so that --explain knows it."""
        assert area in self.areas, area
        self.rules[rule_id] = Rule(rule_id, area, explanation.strip(), None)

    def explain(self, rule_id: str) -> str | None:
        """What --explain prints for ``rule_id``; None for an unknown id."""
        entry = self.rules.get(rule_id)
        return None if entry is None else f"{entry.id} ({entry.area})\n\n{entry.explanation}\n"
