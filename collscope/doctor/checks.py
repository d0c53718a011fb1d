"""Pure rules: Facts -> findings, each with what was found, why it matters, and the fix.

The registry lives in ``doctor/rules/registry.py`` and the rules in one module per area under
``doctor/rules/`` (see its docstring for how to add one). Importing this module loads them all;
it is the entry point the rest of collscope uses.
"""

from __future__ import annotations

import collscope.doctor.rules  # noqa: F401  (every rule module, registered in report order)
from collscope.doctor.rules.common import VISIBLE_DEVICES, human_bytes, ranges
from collscope.doctor.rules.registry import (
    AREAS,
    LEVELS,
    RULES,
    Finding,
    Rule,
    Verdict,
    exit_code,
    explain,
    register_external,
    rule,
    run_checks,
    sort_findings,
)
from collscope.doctor.rules.topology import expected_fabric

__all__ = ["AREAS", "LEVELS", "RULES", "VISIBLE_DEVICES", "Finding", "Rule", "Verdict",
           "exit_code", "expected_fabric", "explain", "human_bytes", "ranges",
           "register_external", "rule", "run_checks", "sort_findings"]
