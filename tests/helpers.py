"""Running collscope as users do: a real process, real ranks, a hard timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
           and not k.startswith(("SLURM_", "OMPI_", "PMI_", "COLLSCOPE_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_cli(*args: str, timeout: float = 180, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "collscope", *args], capture_output=True,
                          text=True, timeout=timeout, env=env or cli_env(), cwd=REPO)


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
