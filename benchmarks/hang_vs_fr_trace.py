"""`collscope hang` side by side with torch's own analyser (`python -m
torch.distributed.flight_recorder.fr_trace`) on the same dumps: every fixture folder of
tests/fixtures/flight-recorder and, with --make, the dumps of real gloo jobs with each fault
class planted (tests/dist/scripts/fr_hang_job.py).

For each case: the ground truth, collscope's culprits, fr_trace's outcome (analysed / crashed /
refused) and the ranks it names (the union of its "missing ranks" and "Culprit rank" lines, the
way a reader of its output collects them), and whether collscope names the same or a narrower
correct set where fr_trace analyses, and analyses where it does not.

usage: python benchmarks/hang_vs_fr_trace.py [--make DIR] [--markdown]
exit 0 when every case holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FIXTURE_TRUTH = {          # tests/fixtures/flight-recorder/SOURCES.md
    "gloo_skip_4ranks": (2,), "gloo_mismatch_4ranks_json": (3,), "gloo_dead_4ranks": (1,),
    "gloo_p2p_4ranks": (1, 2), "nvrx_gpu_error_2nd": (9, 14)}
_SET = re.compile(r"(?:missing ranks: \{([\d, ]*)\})|(?:Culprit rank (\d+))")


@dataclass
class FrTrace:
    status: str                  # analysed, crashed, refused
    named: set[int]
    blocks: int                  # "Not all ranks joining" / "has errors" blocks printed
    why: str                     # the last line of a crash or refusal
    seconds: float
    output: str


def run_fr_trace(folder: Path, *extra: str) -> FrTrace:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace",
                           str(folder), *extra], capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - started
    output = proc.stdout + proc.stderr
    named: set[int] = set()
    for ranks, culprit in _SET.findall(output):
        named |= {int(r) for r in ranks.replace(",", " ").split()} if ranks else {int(culprit)}
    blocks = output.count("Not all ranks joining") + output.count("has errors")
    lines = [line for line in output.splitlines() if line.strip()]
    if proc.returncode != 0 or "Traceback" in output:
        last = lines[-1] if lines else ""
        status = "refused" if ("Missing dump files" in last or "prefix" in last) else "crashed"
        return FrTrace(status, named, blocks, last, seconds, output)
    return FrTrace("analysed", named, blocks, "", seconds, output)


@dataclass
class Case:
    name: str
    truth: tuple[int, ...]
    collscope: list[int]
    cause: str
    collscope_s: float
    fr: FrTrace

    @property
    def holds(self) -> bool:
        correct = tuple(self.collscope) == self.truth
        if self.fr.status == "analysed" and self.fr.named:
            return correct and set(self.collscope) <= self.fr.named
        return correct

    @property
    def judgement(self) -> str:
        if not self.holds:
            return "FAIL"
        if self.fr.status != "analysed":
            return f"fr_trace {self.fr.status}; collscope analyses"
        if not self.fr.named:
            return "fr_trace names nobody; collscope right" if self.truth else "both: none"
        return "same" if set(self.collscope) == self.fr.named else "narrower, correct"


def compare(name: str, folder: Path, truth: tuple[int, ...]) -> Case:
    from collscope.hang import analyse_paths

    started = time.perf_counter()
    verdict = analyse_paths([folder]).verdict
    seconds = time.perf_counter() - started
    fr = run_fr_trace(folder)
    if fr.status == "refused" and "Missing dump files" in fr.why:
        fr = run_fr_trace(folder, "--allow-incomplete-ranks")
        fr.status = "refused" if fr.status == "refused" else (
            fr.status + " with --allow-incomplete-ranks")
    return Case(name, truth, verdict.culprit_ranks, verdict.cause.value, seconds, fr)


def cases(make: Path | None) -> list[Case]:
    fixtures = REPO / "tests" / "fixtures" / "flight-recorder"
    found = [compare(name, fixtures / name, truth) for name, truth in FIXTURE_TRUTH.items()]
    if make is not None:
        from tests.dist.scripts.fr_hang_job import JOBS, make_dumps
        from tests.helpers import cli_env

        folders = make_dumps(make, cli_env(), 300)
        found += [compare(f"made: {key}", folder, JOBS[key].culprits)
                  for key, folder in folders.items()]
    return found


def _ranks(ranks: object) -> str:
    return ", ".join(map(str, sorted(ranks))) or "-"  # type: ignore[call-overload]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--make", type=Path, metavar="DIR",
                        help="also make dumps of real gloo jobs here (one folder per fault)")
    args = parser.parse_args(argv)
    found = cases(args.make)
    print("| case | truth | collscope (cause, s) | fr_trace | fr_trace names (blocks, s) | "
          "judgement |")
    print("|---|---|---|---|---|---|")
    for c in found:
        fr = c.fr.status + (f": {c.fr.why[:60]}" if c.fr.why else "")
        print(f"| {c.name} | {_ranks(c.truth)} | {_ranks(c.collscope)} ({c.cause}, "
              f"{c.collscope_s:.2f}) | {fr} | {_ranks(c.fr.named)} ({c.fr.blocks}, "
              f"{c.fr.seconds:.1f}) | {c.judgement} |")
    return 0 if all(c.holds for c in found) else 1


if __name__ == "__main__":
    raise SystemExit(main())
