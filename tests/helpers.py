"""Running collscope as users do: a real process, real ranks, a hard timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Stand-ins for vendor Python bindings as they behave without their native library (amdsmi
# 7.0.2 printing its loader error at import): put this folder first on sys.path / PYTHONPATH.
FAKE_VENDOR = REPO / "tests" / "fixtures" / "fake_vendor"


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


def free_port() -> int:
    from collscope.runtime.spawn import free_loopback_port

    return free_loopback_port()


def two_torchrun_agents(module_args: list[str], envs: list[dict[str, str]] | None = None,
                        timeout: float = 150) -> list[tuple[int, str, str]]:
    """``python -m MODULE_ARGS`` as a two-node job: two torchrun agents (one rank each) on
    127.0.0.1 meeting through a c10d rendezvous; (exit code, stdout, stderr) per agent.
    ``module_args`` may hold "{agent}", replaced by each agent's index (0 or 1)."""
    from benchmarks.netns_cluster import stop_agents

    port = free_port()
    agents = []
    for node in range(2):
        args = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"collscope-{port}",
                "-m", *[a.replace("{agent}", str(node)) for a in module_args]]
        agents.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, env=(envs or [cli_env(), cli_env()])[node],
                                       cwd=REPO))
    try:
        outputs = [agent.communicate(timeout=timeout) for agent in agents]
    finally:
        stop_agents(agents)
    return [(agent.returncode, out, err) for agent, (out, err) in zip(agents, outputs)]


def usage_error_in_process(capsys, argv: list[str]) -> str:
    """Run the CLI in this process, assert exit 2 with one stderr line and no stdout; the line."""
    from collscope.cli import main

    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2, captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert captured.out == ""
    return lines[0]


def usage_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Assert a CLI run ended as bad input: exit 2, one stderr line holding every needle, no
    traceback; returns that line."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0]
    return lines[0]
