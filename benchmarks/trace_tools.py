"""What benchmarks/trace_speed.py and benchmarks/trace_scale.py share: each tool analyses
traces in a fresh child process, timed and measured the same way.

HolisticTraceAnalysis builds its TraceAnalysis (parse + align + filter) over a folder of the
traces and calls get_comm_comp_overlap(); collscope runs its `trace` analysis
(collscope.trace.analyze.analyse, worker processes included) over the same files. Timed: the
work with perf_counter, imports excluded (reported apart), and its CPU time (os.times: user +
system of the child and of its reaped worker processes, imports excluded: on a machine shared
with other jobs the figure their load moves least), and the child's whole wall time.
Memory, two figures: the peak of the summed RSS of the child and all its descendants, sampled
with psutil every SAMPLE_S (the whole process tree: collscope's worker processes included;
pages shared between a parent and its forked workers count in each, so it errs high), and the
child's ru_maxrss from wait4 (the largest single process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
SAMPLE_S = 0.02

CHILD = r"""
import json, sys, time, logging, os
tool, workdir, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
t0 = time.perf_counter()
if tool == "hta":
    from hta.trace_analysis import TraceAnalysis
    logging.disable(logging.WARNING)
else:
    from collscope.trace.analyze import analyse
    from collscope.trace.config import TraceConfig
imported, cpu_before = time.perf_counter(), os.times()
try:
    if tool == "hta":
        for path in paths:
            os.symlink(path, os.path.join(workdir, os.path.basename(path)))
        frame = TraceAnalysis(trace_dir=workdir).get_comm_comp_overlap(visualize=False)
        overlap = float(frame["comp_comm_overlap_pctg"].iloc[0])
        stragglers = None
    else:
        result = analyse(TraceConfig(paths=paths))
        overlap = result.traces[0].overlap_percent
        across = result.across
        stragglers = [across.straggler.rank] if across and across.straggler else []
    error = None
except Exception as exc:  # HTA 0.5 fails on some traces: report it, do not stop
    overlap, stragglers, error = None, None, f"{type(exc).__name__}: {str(exc)[:80]}"
done, cpu_after = time.perf_counter(), os.times()
work_cpu = sum(after - before for after, before in zip(cpu_after[:4], cpu_before[:4]))
print(json.dumps({"import_s": imported - t0, "work_s": done - imported, "work_cpu_s": work_cpu,
                  "overlap": overlap, "stragglers": stragglers, "error": error}))
"""


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:      # ended between listing and reading
            pass
    return total


def run_child(tool: str, paths: list[Path]) -> dict:
    """One tool ("hta" or "collscope") on ``paths`` (one job's ranks) in a fresh process:
    its JSON result plus wall_s, tree_peak_mb (sampled) and peak_mb (ru_maxrss)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # stdout to a file, not a pipe: nothing to read while it runs, so nothing can block it.
    with tempfile.TemporaryDirectory() as workdir, tempfile.TemporaryFile() as stdout:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", CHILD, tool, workdir,
                                 *map(str, paths)],
                                stdout=stdout, stderr=subprocess.DEVNULL, env=env)
        watched = psutil.Process(proc.pid)
        peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)   # reaps it once it ended
            if pid:
                break
            try:
                peak = max(peak, _tree_rss(watched))
            except psutil.Error:     # ending: its last sample was taken
                pass
            time.sleep(SAMPLE_S)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        out = stdout.read()
    lines = out.decode().strip().splitlines()
    result = json.loads(lines[-1]) if lines else {
        "import_s": 0.0, "work_s": 0.0, "work_cpu_s": 0.0, "overlap": None, "stragglers": None,
        "error": f"exit status {proc.returncode}"}
    result.update(wall_s=wall, tree_peak_mb=peak / 2**20, peak_mb=usage.ru_maxrss / 1024)
    return result
