"""Every record kind collscope writes has its schema in collscope/records/ and a row in
docs/records.md."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import collscope.records
from tests.helpers import REPO


def _kinds() -> dict[str, str]:
    """kind -> the dataclass that defines it, over every module of collscope.records."""
    kinds = {}
    for info in pkgutil.iter_modules(collscope.records.__path__):
        module = importlib.import_module(f"collscope.records.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) \
                    and obj.__module__ == module.__name__:
                kind = {f.name: f.default for f in dataclasses.fields(obj)}.get("kind")
                if isinstance(kind, str):
                    kinds[kind] = f"{info.name}.{name}"
    return kinds


def test_every_kind_is_in_the_records_doc():
    kinds = _kinds()
    assert {"run", "result", "train", "sample", "trace_rank", "link", "tune", "finding",
            "prediction", "compare_row", "import_log"} <= set(kinds)
    doc = (REPO / "docs" / "records.md").read_text()
    missing = sorted(kind for kind in kinds if f"| `{kind}` |" not in doc)
    assert missing == [], f"docs/records.md has no row for: {missing}"
