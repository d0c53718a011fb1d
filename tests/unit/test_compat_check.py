"""benchmarks/compat.py, the compatibility check: its table, and what it does where the
package registry cannot be reached (CI offline): one line, nothing checked, exit 0."""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.compat import markdown
from benchmarks.compat_checks import COLUMNS, Cell, Smoke
from tests.helpers import REPO


def test_the_table_has_a_row_per_torch_and_a_column_per_check():
    cells = [Cell(name, "pass") for name in COLUMNS]
    cells[1] = Cell("train", "FAIL", "exit 2: collscope train: --steps: 0 must be >= 1")
    table = markdown([("2.5.1+cu124", cells)]).splitlines()
    assert table[0] == "| torch | " + " | ".join(COLUMNS) + " |"
    assert table[2].startswith("| 2.5.1+cu124 | pass | FAIL: exit 2: collscope train:")
    assert len(table) == 3


def test_a_stdout_that_is_not_json_lines_is_noted(tmp_path):
    smoke = Smoke(tmp_path / "python", tmp_path, "2.9.1+cu128")
    done = subprocess.CompletedProcess([], 0, '{"kind": "run"}\n[Gloo] Rank 0 is connected\n',
                                       "")
    assert smoke.records("bench", done) == [{"kind": "run"}]
    assert smoke.impure == ["bench: stdout line 2 is not JSON: '[Gloo] Rank 0 is connected'"]
    assert smoke.minor == (2, 9)


def test_without_the_registry_a_missing_environment_is_skipped_and_said(tmp_path):
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "",
           "PIP_INDEX_URL": (tmp_path / "no-index").as_uri(), "PIP_EXTRA_INDEX_URL": ""}
    done = subprocess.run([sys.executable, "benchmarks/compat.py", "--torch", "2.5",
                           "--venvs", str(tmp_path / "venvs"), "--python", sys.executable],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("compat: skipped: torch 2.5 not installed under ")
    assert line.endswith("nothing was checked")
    assert not (tmp_path / "venvs").exists()
