"""The layers hold (tests/layers.py walks the package's imports): no upward or sideways import,
no cycle, features use each other only as docs/api.md allows and through their ``__all__``,
and nothing of trace or the CLI runs inside the user's training process. The checker is
shown to fail on each kind of planted violation."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests import layers
from tests.helpers import REPO


def test_collscope_keeps_its_layers():
    assert layers.problems() == []


def test_docs_api_lists_each_features_all():
    doc = (REPO / "docs" / "api.md").read_text()
    table = doc.split("## What each feature declares", 1)[1].split("\n## ", 1)[0]
    listed = {row.group(1): set(re.findall(r"`(\w+)`", row.group(2)))
              for row in re.finditer(r"^\| `(\w+)` \| ([^|]*)\|", table, re.M)}
    package = REPO / "collscope"
    assert listed == {feature: layers.declared(package, feature) for feature in layers.FEATURES}


def test_the_allowed_uses_come_from_docs_api():
    uses = layers.allowed_uses()
    assert uses["watch"] == {"hang", "monitor"} and "report" not in uses


def _write(root: Path, files: dict[str, str]) -> Path:
    package = root / "collscope"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return package


def test_planted_violations_are_each_named(tmp_path):
    package = _write(tmp_path, {
        "cli/main.py": "from collscope.bench.run import go\n",
        "records/run.py": "def f():\n    from collscope.cli.main import main\n",   # upward, lazy
        "parsers/text.py": "from collscope.records.run import f\n",              # upward
        "hw/amd.py": "from collscope.runtime.dist import attach\n",              # sideways
        "runtime/dist.py": "attach = 1\n",
        "bench/run.py": "from collscope.bench import helper\ngo = 1\n",
        "bench/helper.py": "from collscope.bench.run import go\n",               # a cycle
        "bench/__init__.py": "__all__ = ['run']\n",
        "model/fit.py": "from collscope.bench.run import go\n",                  # not in __all__
        "tune/space.py": "from collscope.bench import run\n",                    # allowed
        "report/page.py": "from collscope.watch import agent\n",                 # not allowed
        "watch/agent.py": "from collscope.trace import kernels\n",               # into the job
        "watch/bootstrap/sitecustomize.py": "from collscope.watch import agent\n",
        "trace/kernels.py": "",
        "newthing/x.py": "from collscope.records.run import f\n",               # no layer
    })
    found = "\n".join(layers.problems(package, {"tune": {"bench"}, "model": {"bench"}}))
    assert "records/run.py:2: imports upward: services records -> cli cli" in found
    assert "parsers/text.py:1: imports upward: parsers parsers -> services records" in found
    assert "hw/amd.py:1: imports sideways: hw -> runtime" in found
    assert "import cycle: collscope.bench.helper -> collscope.bench.run" in found
    assert "model/fit.py:1: feature model imports go of bench, not in bench.__all__" in found
    assert "tune/space.py" not in found
    assert "report/page.py:1: feature report imports feature watch, which docs/api.md" in found
    assert "collscope.trace.kernels is imported inside the user's training process" in found
    assert "newthing is in no layer" in found


def test_one_upward_import_planted_in_the_real_tree_fails_it(tmp_path):
    package = tmp_path / "collscope"
    shutil.copytree(REPO / "collscope", package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with (package / "records" / "run.py").open("a") as source:
        source.write("\n\ndef planted():\n    from collscope.cli import main\n    return main\n")
    (found,) = layers.problems(package)
    assert found.startswith("collscope/records/run.py:")
    assert found.endswith("imports upward: services records -> cli cli")


def test_one_cycle_planted_in_the_real_tree_fails_it(tmp_path):
    # hang's report reads the analysis' outcome; the outcome importing the report back (as
    # HangAnalysis.records() once did, lazily) closes a cycle
    package = tmp_path / "collscope"
    shutil.copytree(REPO / "collscope", package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with (package / "hang" / "outcome.py").open("a") as source:
        source.write("\n\ndef planted():\n    from collscope.hang.report import render_text\n"
                     "    return render_text\n")
    assert layers.problems(package) == [
        "import cycle: collscope.hang.outcome -> collscope.hang.report"]
