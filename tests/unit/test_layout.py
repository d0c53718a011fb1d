"""The package's shape: CONTRIBUTING.md's Layout section names every part of the tree, and no
module grows past 500 lines (issue 11: split along sections before that)."""

from __future__ import annotations

from tests.helpers import REPO

PACKAGE = REPO / "collscope"
MAX_LINES = 500


def _layout_section() -> str:
    text = (REPO / "CONTRIBUTING.md").read_text()
    start = text.index("\n## Layout\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def test_layout_section_names_every_package_and_top_level_module():
    section = _layout_section()
    parts = [p.name + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()]
    parts += [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py",
                                                                     "__main__.py")]
    missing = sorted(part for part in parts if part not in section)
    assert missing == [], f"CONTRIBUTING.md Layout does not name: {missing}"


def test_no_module_over_500_lines():
    long = {str(p.relative_to(REPO)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
