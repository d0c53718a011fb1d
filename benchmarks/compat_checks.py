"""The smoke of each command that benchmarks/compat.py runs in one torch environment.

Every check runs the command as a user would (`python -m collscope ...` with this checkout on
PYTHONPATH, the environment's own torch and torchrun), small and on gloo, and passes only on
what a user would call working: the exit code the docs give, the rank the planted fault names,
and with `--json -` a stdout that is JSON Lines and nothing else (`json` column). A check that
does not apply to a torch says why (`n/a`), never passes in silence.

- bench: `bench all_reduce -b 1K -e 64K --nproc 2 --json -`: exit 0, result records.
- train / trace: `train --steps 2 --trace DIR --json -` (exit 0, train records), then
  `trace DIR --json -` on the profiler traces that torch wrote (exit 0, trace records).
- doctor: `doctor --json` (one JSON document): exit 0 or 1 (a failed check of this machine),
  its findings.
- hang: a 2 x 4 TP/DP gloo job whose rank 5 never enters its TP all_reduce (sub-groups;
  tests/dist/scripts/fr_hang_job.py), dumped as pickle and JSON by that torch with
  TORCH_FR_BUFFER_SIZE=200: `hang --json -` exits 1 naming rank 5. torch before 2.8 has no
  Flight Recorder for gloo: there, the NCCL dumps of that torch's format in
  tests/fixtures/own/flight-recorder (built from its writer's source) stand in.
- hang unset: the same job with TORCH_FR_BUFFER_SIZE unset, as most users run: rank 5 named,
  or where that torch's gloo records nothing (2.8-2.10), exit 3 with the variable to set;
  never "no hang" (exit 0).
- watch healthy / slow / hung: `watch` around torchrun of 4 gloo DDP ranks
  (tests/dist/scripts/watch_ddp.py): nobody named and exit 0; rank 2 sleeping 30 ms more per
  step named a straggler (n/a where watch says the job has no Flight Recorder: gloo before
  torch 2.8, no lateness to judge); rank 2 stopping in Python named with `--on-hang kill`
  (exit 124), from the dumps or, without a recorder, from the ranks' stacks.
- json: every `--json -` above printed JSON Lines only, and `doctor --json` one JSON document.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "tests" / "dist" / "scripts"
OLD_FORMATS = REPO / "tests" / "fixtures" / "own" / "flight-recorder"
TIMEOUT_S = 300


@dataclass
class Cell:
    name: str
    status: str                  # pass, FAIL, n/a
    why: str = ""
    seconds: float = 0.0

    def text(self) -> str:
        return self.status + (f": {self.why}" if self.why else "")

    def record(self) -> dict[str, object]:
        return {"check": self.name, "status": self.status, "why": self.why,
                "seconds": round(self.seconds, 1)}


@dataclass
class Smoke:
    python: Path                 # the environment's interpreter
    scratch: Path
    torch_version: str
    impure: list[str] = field(default_factory=list)     # "check: why" of each --json - seen

    @property
    def minor(self) -> tuple[int, int]:
        found = re.match(r"(\d+)\.(\d+)", self.torch_version)
        return (int(found[1]), int(found[2])) if found else (0, 0)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TORCH_", "COLLSCOPE_", "SLURM_", "OMPI_", "PMI_"))
               and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                             "PYTHONPATH", "VIRTUAL_ENV")}
        env["PYTHONPATH"] = str(REPO)
        env.update(extra)
        return env

    def collscope(self, *args: str, timeout: float = TIMEOUT_S, **env: str,
                  ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.python), "-m", "collscope", *args],
                              capture_output=True, text=True, timeout=timeout,
                              env=self.env(**env), cwd=self.scratch)

    def records(self, check: str, done: subprocess.CompletedProcess[str]) -> list[dict]:
        """The JSON Lines of a `--json -` stdout; a line that is not JSON is noted (json
        column) and the records before it are returned."""
        found = []
        for number, line in enumerate(done.stdout.splitlines(), 1):
            try:
                found.append(json.loads(line))
            except ValueError:
                self.impure.append(f"{check}: stdout line {number} is not JSON: "
                                   f"{line[:60]!r}")
                break
        return found


def _tail(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (done.stderr or "").splitlines() if line.strip()]
    return lines[-1][:160] if lines else "(nothing on stderr)"


def _kinds(records: list[dict]) -> set[str]:
    return {str(r.get("kind")) for r in records}


def check_bench(smoke: Smoke) -> Cell:
    done = smoke.collscope("bench", "all_reduce", "-b", "1K", "-e", "64K", "--nproc", "2",
                           "--json", "-")
    records = smoke.records("bench", done)
    if done.returncode != 0 or "result" not in _kinds(records):
        return Cell("bench", "FAIL", f"exit {done.returncode}: {_tail(done)}")
    return Cell("bench", "pass", f"{sum(r['kind'] == 'result' for r in records)} sizes")


def check_train_trace(smoke: Smoke) -> list[Cell]:
    traces = smoke.scratch / "traces"
    done = smoke.collscope("train", "--steps", "2", "--warmup", "2", "--trace", str(traces),
                           "--trace-steps", "1", "--json", "-")
    records = smoke.records("train", done)
    if done.returncode != 0 or "train" not in _kinds(records):
        failed = f"exit {done.returncode}: {_tail(done)}"
        return [Cell("train", "FAIL", failed), Cell("trace", "FAIL", "no traces: train " +
                                                    failed)]
    train = Cell("train", "pass")
    done = smoke.collscope("trace", str(traces), "--json", "-")
    records = smoke.records("trace", done)
    if done.returncode != 0 or len(_kinds(records) - {"run"}) == 0:
        return [train, Cell("trace", "FAIL", f"exit {done.returncode}: {_tail(done)}")]
    return [train, Cell("trace", "pass", f"{len(records)} records")]


def check_doctor(smoke: Smoke) -> Cell:
    done = smoke.collscope("doctor", "--json")
    try:
        document = json.loads(done.stdout)
    except ValueError:
        smoke.impure.append(f"doctor: stdout is not one JSON document: {done.stdout[:60]!r}")
        document = {}
    findings = document.get("findings") if isinstance(document, dict) else None
    if done.returncode not in (0, 1) or not findings:
        return Cell("doctor", "FAIL", f"exit {done.returncode}: {_tail(done)}")
    flight = [f for f in findings if f.get("id") == "env.flight-recorder"]
    return Cell("doctor", "pass", f"exit {done.returncode}; env.flight-recorder: "
                + (str(flight[0].get("level", "?")) if flight else "no finding"))


def _hang_job(smoke: Smoke, name: str, buffer: str) -> Path:
    root = smoke.scratch / name
    subprocess.run([str(smoke.python), str(SCRIPTS / "fr_hang_job.py"), "--all", str(root),
                    "120", "cascade:both", "--buffer", buffer], env=smoke.env(),
                   capture_output=True, timeout=TIMEOUT_S, check=True)
    return root / "cascade"


def _names_rank_5(smoke: Smoke, check: str, folder: Path) -> Cell:
    done = smoke.collscope("hang", str(folder), "--json", "-")
    verdicts = [r for r in smoke.records(check, done) if r.get("kind") == "hang_verdict"]
    if done.returncode == 1 and verdicts and verdicts[0]["culprit_ranks"] == [5]:
        return Cell(check, "pass", f"rank 5 {verdicts[0]['cause']}")
    said = verdicts[0]["headline"][:120] if verdicts else _tail(done)
    return Cell(check, "FAIL", f"exit {done.returncode}: {said}")


def check_hang(smoke: Smoke) -> list[Cell]:
    if smoke.minor < (2, 8):
        made = Cell("hang", "n/a", "gloo has no Flight Recorder before torch 2.8")
        fixtures = sorted(OLD_FORMATS.glob("nccl_fr2.4_*"))
        cells = [_names_rank_5(smoke, "hang", f) for f in fixtures]
        if cells and all(c.status == "pass" for c in cells):
            made = Cell("hang", "pass", f"{len(cells)} NCCL fixtures of this torch's format "
                        f"(source-built): rank 5 named")
        elif cells:
            made = next(c for c in cells if c.status != "pass")
        return [made, Cell("hang unset", "n/a", "gloo has no Flight Recorder before 2.8")]
    made = _names_rank_5(smoke, "hang", _hang_job(smoke, "hang-set", "200"))
    unset_folder = _hang_job(smoke, "hang-unset", "unset")
    done = smoke.collscope("hang", str(unset_folder), "--json", "-")
    smoke.records("hang unset", done)
    if done.returncode == 3 and "TORCH_FR_BUFFER_SIZE" in done.stderr:
        unset = Cell("hang unset", "pass", "empty dumps: exit 3, says to set "
                     "TORCH_FR_BUFFER_SIZE")
    elif done.returncode == 0:
        unset = Cell("hang unset", "FAIL", "said no hang on a hung job")
    else:
        unset = _names_rank_5(smoke, "hang unset", unset_folder)
    return [made, unset]


def _watch(smoke: Smoke, name: str, flags: list[str], **env: str,
           ) -> subprocess.Popen[bytes]:
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    free = str(port.getsockname()[1])
    port.close()
    out = (smoke.scratch / f"{name}.out").open("wb")
    err = (smoke.scratch / f"{name}.err").open("wb")
    argv = [str(smoke.python), "-m", "collscope", "watch", "--interval", "0.5", "--json",
            f"{name}.jsonl", *flags, "--", str(smoke.python), "-m", "torch.distributed.run",
            "--nproc-per-node", "4", "--master-port", free, str(SCRIPTS / "watch_ddp.py")]
    return subprocess.Popen(argv, stdout=out, stderr=err, cwd=smoke.scratch,
                            env=smoke.env(**env))


def _watch_records(smoke: Smoke, name: str) -> list[dict]:
    path = smoke.scratch / f"{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _err(smoke: Smoke, name: str) -> str:
    """What watch said last, or what switched an agent off (the cause of an empty result)."""
    lines = [line for line in (smoke.scratch / f"{name}.err").read_text(
        errors="replace").splitlines() if line.startswith("collscope watch")]
    off = [line for line in lines if "switched off" in line]
    return (off or lines or ["(watch said nothing)"])[-1][:200]


def _waited(jobs: dict[str, subprocess.Popen[bytes]]) -> dict[str, int | None]:
    codes: dict[str, int | None] = {}
    for name, job in jobs.items():
        try:
            codes[name] = job.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            job.kill()
            codes[name] = None
    return codes


def check_watch(smoke: Smoke) -> list[Cell]:
    # The healthy job runs alone: beside the two planted jobs it was 12 ranks on 2 cores, and
    # a healthy rank the scheduler holds back for tens of ms is late (as tests/dist/
    # test_watch_layouts.py runs its healthy jobs in their own wave).
    codes = _waited({"healthy": _watch(smoke, "healthy", [], STEPS="60")})
    codes |= _waited({
        "slow": _watch(smoke, "slow", [], SLOW_RANK="2", SLOW_FROM="20", STEPS="80"),
        "hung": _watch(smoke, "hung", ["--hang-after", "10", "--on-hang", "kill",
                                       "--dump-dir", "dumps"], STALL_RANK="2", STALL_AT="20",
                       STEPS="200"),
    })
    cells = []
    records = _watch_records(smoke, "healthy")
    named = [r for r in records if r.get("kind") == "finding"]
    windows = sum(r.get("kind") == "watch_window" for r in records)
    no_recorder = _no_recorder(smoke, "healthy")
    if codes["healthy"] == 0 and not named and (windows or no_recorder):
        cells.append(Cell("watch healthy", "pass", f"nobody named, {windows} windows" + (
            " (no Flight Recorder: stalls watched only)" if no_recorder else "")))
    else:
        first = named[0] if named else {}
        evidence = (f"named rank {first.get('rank')} ({first.get('id')}): "
                    f"{str(first.get('test', ''))[:200]}" if named else _err(smoke, "healthy"))
        cells.append(Cell("watch healthy", "FAIL", f"exit {codes['healthy']}, "
                          f"{len(named)} findings, {windows} windows: {evidence}"))
    slow = [(r.get("rank"), r.get("id")) for r in _watch_records(smoke, "slow")
            if r.get("kind") == "finding" and r.get("state") == "started"]
    if slow and all(rank == 2 for rank, _ in slow):
        cells.append(Cell("watch slow", "pass", f"rank 2 named ({slow[0][1]})"))
    elif not slow and _no_recorder(smoke, "slow") and codes["slow"] == 0:
        cells.append(Cell("watch slow", "n/a", "watch says: no Flight Recorder for gloo "
                          "before torch 2.8, so no lateness to judge (stalls only)"))
    else:
        cells.append(Cell("watch slow", "FAIL", f"exit {codes['slow']}, named {slow}: "
                          f"{_err(smoke, 'slow')}"))
    # a verdict from the Flight Recorder dumps, or (no recorder) from the main-thread stacks
    culprits = [r.get("culprit_ranks") for r in _watch_records(smoke, "hung")
                if r.get("kind") in ("hang_verdict", "watch_stack_verdict")]
    if codes["hung"] == 124 and culprits and culprits[0] == [2]:
        how = "from the stacks" if _no_recorder(smoke, "hung") else "from the dumps"
        cells.append(Cell("watch hung", "pass", f"rank 2 named {how}, job ended (124)"))
    else:
        cells.append(Cell("watch hung", "FAIL", f"exit {codes['hung']}, culprits {culprits}: "
                          f"{_err(smoke, 'hung')}"))
    return cells


def _no_recorder(smoke: Smoke, name: str) -> bool:
    """Whether watch said the job has no Flight Recorder (gloo before torch 2.8)."""
    text = (smoke.scratch / f"{name}.err").read_text(errors="replace")
    return "collscope watch: no Flight Recorder for this job" in text


def check_json(smoke: Smoke) -> Cell:
    if smoke.impure:
        return Cell("json", "FAIL", "; ".join(smoke.impure)[:200])
    return Cell("json", "pass", "every --json - stdout was JSON Lines only")


def _one(check: Callable[[Smoke], Cell | list[Cell]]) -> Callable[[Smoke], list[Cell]]:
    def run(smoke: Smoke) -> list[Cell]:
        found = check(smoke)
        return found if isinstance(found, list) else [found]
    return run


# (columns, check): run in this order; json last (it reads what the others saw).
CHECKS: list[tuple[tuple[str, ...], Callable[[Smoke], list[Cell]]]] = [
    (("bench",), _one(check_bench)),
    (("train", "trace"), _one(check_train_trace)),
    (("doctor",), _one(check_doctor)),
    (("hang", "hang unset"), _one(check_hang)),
    (("watch healthy", "watch slow", "watch hung"), _one(check_watch)),
    (("json",), _one(check_json)),
]
COLUMNS = [name for names, _ in CHECKS for name in names]


if __name__ == "__main__":
    sys.exit("run benchmarks/compat.py")
