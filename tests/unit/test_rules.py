"""The one rule registry (collscope.rules) that doctor's checks and trace's findings use."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from collscope.rules import Registry


def test_rules_keep_their_order_explanation_and_check():
    registry: Registry[Callable[[int], list[int]]] = Registry(("a", "b"))

    @registry.rule("b.double", "b", """
        Doubles.
    """)
    def double(value: int) -> list[int]:
        return [2 * value]

    registry.external("a.elsewhere", "a", "Found across nodes.")
    assert list(registry.rules) == ["b.double", "a.elsewhere"]
    assert registry.rules["b.double"].check is double and double(2) == [4]
    assert registry.rules["a.elsewhere"].check is None
    assert registry.explain("b.double") == "b.double (b)\n\nDoubles.\n"
    assert registry.explain("nope") is None


def test_an_area_outside_the_registry_is_refused():
    registry: Registry[Callable[[], None]] = Registry(("a",))
    with pytest.raises(AssertionError):
        registry.rule("x.y", "x", "no such area")
    with pytest.raises(AssertionError):
        registry.external("x.y", "x", "no such area")


def test_doctor_and_trace_register_in_one_mechanism():
    from collscope.doctor import checks
    from collscope.doctor.rules import registry
    from collscope.trace import findings

    assert type(registry.REGISTRY) is type(findings.REGISTRY) is Registry
    assert checks.RULES is registry.REGISTRY.rules and "env.ib-hca" in checks.RULES
    assert {entry.area for entry in findings.RULES.values()} == {findings.AREA}
    assert "straggler" in findings.RULES
