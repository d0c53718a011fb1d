"""Jobs under `collscope watch` that test_watch.py and test_watch_wrapping.py start: the
command line, and a started process with its output files."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import REPO, cli_env

SCRIPTS = REPO / "tests" / "dist" / "scripts"
DDP = str(SCRIPTS / "watch_ddp.py")
JOB_TIMEOUT_S = 150


def watch(*flags: str) -> list[str]:
    return [sys.executable, "-m", "collscope", "watch", *flags, "--"]


@dataclass
class Job:
    process: subprocess.Popen[bytes]
    out: Path
    err: Path
    started: float
    returncode: int | None = None
    ended: float = 0.0

    def wait(self) -> Job:
        try:
            self.returncode = self.process.wait(timeout=JOB_TIMEOUT_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        self.ended = time.time()
        return self

    @property
    def stdout(self) -> str:
        return self.out.read_text()

    @property
    def stderr(self) -> str:
        return self.err.read_text()


def start(folder: Path, name: str, argv: list[str], **env: str) -> Job:
    out, err = folder / f"{name}.out", folder / f"{name}.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(argv, stdout=stdout, stderr=stderr, cwd=folder,
                                   env=cli_env(**env))
    return Job(process, out, err, time.time())
