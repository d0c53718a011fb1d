"""trace's findings come from registered rules, each documented in docs/trace.md."""

from __future__ import annotations

from pathlib import Path

from collscope.trace.findings import RULES, findings
from tests.unit.trace.test_lateness_margin import ranks

DOCS = Path(__file__).resolve().parents[3] / "docs" / "trace.md"


def test_every_rule_is_documented_with_its_id():
    text = DOCS.read_text()
    assert RULES and all(f"`{rule_id}`" in text for rule_id in RULES)
    assert all(entry.explanation for entry in RULES.values())


def test_a_finding_carries_the_id_of_the_rule_that_made_it():
    traces = ranks(300.0)
    from collscope.trace.across import match

    (found,) = findings(traces, [], match(traces))
    assert found.id == "straggler" and found.id in RULES and found.rank == 7
