"""benchmarks/watch_detection.py runs on the code it measures: one small labelled stream and
its healthy twin through the real summaries, rounds and findings (the full run is the
benchmark's, docs/watch.md; this keeps a change of the agent's or the detector's interfaces
from leaving it broken unseen)."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO, cli_env, read_records


def test_one_ddp_stream_is_replayed_and_its_straggler_found(tmp_path):
    out = tmp_path / "detection.jsonl"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "watch_detection.py"), "--only",
         "ddp8-persistent", "--workers", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=120, env=cli_env(), cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (summary,) = [r for r in read_records(out) if r["kind"] == "detection_summary"]
    assert summary["episodes"] >= 1 and summary["recall"] == 1.0, summary
    assert summary["precision"] == 1.0, summary
