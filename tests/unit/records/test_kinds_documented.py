"""Every record kind collscope writes has its class in collscope/records/ (listed by
records.kinds) and a row in docs/records.md."""

from __future__ import annotations

import importlib
import pkgutil

import collscope.records
from collscope.records.base import Record
from collscope.records.kinds import record_classes
from tests.helpers import REPO


def test_every_record_class_is_in_a_family_kinds_lists():
    declared = set()
    for info in pkgutil.iter_modules(collscope.records.__path__):
        module = importlib.import_module(f"collscope.records.{info.name}")
        declared |= {obj for obj in vars(module).values() if isinstance(obj, type)
                     and issubclass(obj, Record) and obj is not Record}
    listed = {cls for classes in record_classes().values() for cls in classes}
    assert declared - listed == set()


def test_every_kind_is_in_the_records_doc():
    kinds = record_classes()
    assert {"run", "result", "train", "sample", "trace_rank", "link", "tune", "finding",
            "prediction", "compare_row", "import_log"} <= set(kinds)
    doc = (REPO / "docs" / "records.md").read_text()
    missing = sorted(kind for kind in kinds if f"| `{kind}` |" not in doc)
    assert missing == [], f"docs/records.md has no row for: {missing}"
