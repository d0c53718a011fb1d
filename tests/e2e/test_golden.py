"""Golden outputs: what collscope prints for fixed inputs stays byte for byte the same
(bench table layout with times masked, import of every fixture log, doctor --from two fixture
bundles, report HTML of two logs); the cases and their masking are in tests/golden.py.

A change that is meant to alter an output regenerates the golden files and names the change in
its commit message: ``python tests/golden.py --write``
"""

from __future__ import annotations

import difflib
import json

from tests.conftest import shared_fixture
from tests.golden import BENCH_LAYOUT, HASHES, digest, outputs


def test_outputs_match_the_golden_files():
    shared_fixture("nccl-tests-logs")
    shared_fixture("tool-outputs")
    cases = outputs()
    expected = json.loads(HASHES.read_text())
    assert sorted(cases) == sorted(expected)
    layout = BENCH_LAYOUT.read_text()
    assert cases["bench"] == layout, "\n".join(difflib.unified_diff(
        layout.splitlines(), cases["bench"].splitlines(), "golden", "now", lineterm=""))
    changed = [name for name, text in cases.items() if digest(text) != expected[name]]
    assert changed == [], f"outputs differ from tests/fixtures/golden for: {changed}"
