"""Golden outputs: what collscope prints for fixed inputs stays byte for byte the same
(bench table layout with times masked, import of every fixture log, doctor --from two fixture
bundles, report HTML of two logs); the cases and their masking are in tests/golden.py.

A change that is meant to alter an output regenerates the golden files and names the change in
its commit message: ``python tests/golden.py --write``
"""

from __future__ import annotations

import difflib

from tests.golden import golden_cases, outputs


def test_outputs_match_the_golden_files():
    cases = outputs()
    expected = golden_cases()
    assert sorted(cases) == sorted(expected)
    diffs = ["\n".join(difflib.unified_diff(expected[name].splitlines(), text.splitlines(),
                                            f"golden {name}", f"now {name}", lineterm=""))
             for name, text in cases.items() if text != expected[name]]
    assert diffs == [], "outputs differ from tests/fixtures/golden/cases:\n" + "\n".join(diffs)
