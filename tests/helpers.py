"""What several test files build: collscope run as users do (a real process, real ranks, a
hard timeout), fake tools on a PATH, headless Chromium, doctor's facts of a node, tune's
trials, monitor's scripted sources and model's alpha-beta groups."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from collscope.collectives.table import bus_factor
from collscope.doctor.checks import Finding, run_checks
from collscope.doctor.facts import Facts, HostInfo, NetInterface, RdmaDevice, RdmaPort, TorchBuild
from collscope.model.data import GroupKey, Measurements
from collscope.model.fit import Sample
from collscope.monitor.sources import Reading
from collscope.parsers.common import GpuInfo, Topology
from collscope.records.trace import TraceStepRecord
from collscope.trace.calls import CommCall
from collscope.trace.rank import RankTrace
from collscope.tune.analysis import Measurement, Trial
from collscope.tune.space import Config

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


def local_rank_pids(parent_pid: int) -> list[int]:
    """The pids of a standalone run's local ranks, rank 0 first: the parent's children in the
    order it started them (forked ranks show the parent's environment in /proc, not RANK)."""
    try:
        text = Path(f"/proc/{parent_pid}/task/{parent_pid}/children").read_text()
    except OSError:
        return []
    return [int(pid) for pid in text.split()]


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


CHROMIUM = Path("/usr/bin/chromium")       # Debian's package; .ci/run installs it in CI


def chromium(html: Path, profile: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on a local page (``--dump-dom``, ``--screenshot=...``), nothing
    fetched, page messages (script errors, CSP refusals) logged to stderr as CONSOLE lines."""
    return subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         *mode, html.as_uri()], capture_output=True, text=True, timeout=90)


def fake_tool(bin_dir: Path, name: str, body: str) -> None:
    """An executable ``bin_dir/name`` running the shell ``body`` (a stand-in for a CLI tool)."""
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


# ---------------------------------------------------------------------------------------------
# doctor's facts of a node, built by hand (what the rules read)
# ---------------------------------------------------------------------------------------------

MI300X = "AMD Instinct MI300X"


def gpu_list(n: int, name: str = MI300X, numa: list[int | None] | None = None) -> list[GpuInfo]:
    return [GpuInfo(index=i, name=name, memory_bytes=192 << 30, driver_version="6.8.5",
                    numa_node=(numa[i] if numa else None)) for i in range(n)]


def full_topology(n: int, link: str = "xgmi", weight: int = 15,
                  slow: tuple[tuple[int, int], ...] = ()) -> Topology:
    link_type = [["self" if i == j else link for j in range(n)] for i in range(n)]
    weights: list[list[int | None]] = [[0 if i == j else weight for j in range(n)]
                                       for i in range(n)]
    for i, j in slow:
        link_type[i][j] = link_type[j][i] = "pcie"
        weights[i][j] = weights[j][i] = 40
    return Topology(gpus=n, link_type=link_type, weight=weights)


def net_interfaces(*specs: str) -> list[NetInterface]:
    """"eth0:up" -> NetInterface(eth0, up)."""
    return [NetInterface(name=s.split(":")[0], operstate=s.split(":")[1]) for s in specs]


def rdma_devices(*specs: str, link_layer: str = "InfiniBand") -> list[RdmaDevice]:
    """"mlx5_0:1:ACTIVE" -> a device with that port."""
    devices: dict[str, RdmaDevice] = {}
    for spec in specs:
        name, port, state = spec.split(":")
        dev = devices.setdefault(name, RdmaDevice(name=name))
        dev.ports.append(RdmaPort(port=int(port), state=state, rate="200 Gb/sec (4X HDR)",
                                  link_layer=link_layer))
    return list(devices.values())


def amd_node(**overrides: Any) -> Facts:
    """A healthy 8 x MI300X node (ROCm torch, xGMI, two active IB ports); fields overridden."""
    facts = Facts(vendor="amd", gpus=gpu_list(8), topology=full_topology(8),
                  topology_source="amd-smi-topology.txt",
                  torch=TorchBuild(version="2.6.0+rocm6.3", hip="6.3.1", nccl_version="2.21.5",
                                   gpu_available=True, gpu_count=8, backends=["nccl", "gloo"]),
                  host=HostInfo(numa_balancing=0, cmdline="BOOT_IMAGE=/vmlinuz iommu=pt",
                                memlock_soft=-1, rocm_version="6.3.1"),
                  interfaces=net_interfaces("lo:unknown", "eth0:up", "ens5:up"),
                  rdma=rdma_devices("mlx5_0:1:ACTIVE", "mlx5_1:1:ACTIVE"))
    for key, value in overrides.items():
        setattr(facts, key, value)
    return facts


def cpu_node(**overrides: Any) -> Facts:
    """A CPU-only node with a CPU torch build; fields overridden."""
    facts = Facts(vendor="none", torch=TorchBuild(version="2.13.0+cpu", backends=["gloo"]),
                  host=HostInfo(numa_balancing=0, memlock_soft=8 << 20),
                  interfaces=net_interfaces("lo:unknown", "eth0:up"))
    for key, value in overrides.items():
        setattr(facts, key, value)
    return facts


def findings_of(facts: Facts, rule_id: str) -> list[Finding]:
    """The findings one doctor rule makes of ``facts``."""
    return [f for f in run_checks(facts) if f.id == rule_id]


def levels_of(facts: Facts, rule_id: str) -> list[str]:
    return [f.level for f in findings_of(facts, rule_id)]


# ---------------------------------------------------------------------------------------------
# tune: trials made by hand, and the tuner plugin's documented names
# ---------------------------------------------------------------------------------------------

# The example plugin's documented layout (NVIDIA/nccl ext-tuner/example/README.md).
DOCUMENTED = {
    "collective_type": {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"},
    "algorithm": {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"},
    "protocol": {"ll", "ll128", "simple"},
}


def trials_from(times: dict[Config, list[dict[int, float]]], failed: set[Config] = frozenset(),
                ) -> list[Trial]:
    """Trials in interleaved rounds from {config: [per round {size: time_us}]}."""
    trials = []
    rounds = len(next(iter(times.values())))
    for round_ in range(rounds):
        for position, (config, per_round) in enumerate(times.items()):
            trial = Trial(len(trials), 0, round_, position, config,
                          status="failed" if config in failed else "ok")
            if config not in failed:
                trial.measurements = [Measurement("all_reduce", "float", size, t, 4)
                                      for size, t in per_round[round_].items()]
            trials.append(trial)
    return trials


# ---------------------------------------------------------------------------------------------
# monitor: a clock and a source a test drives
# ---------------------------------------------------------------------------------------------


class ManualClock:
    """A clock that moves only when a test sets ``now`` (the sampler's time source)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Scripted:
    """A source that returns the next scripted reading each time (or raises)."""

    def __init__(self, name: str, readings: list[Reading | Exception]) -> None:
        self.name = name
        self.readings = list(readings)
        self.closed = False

    def read(self) -> Reading:
        item = self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]
        if isinstance(item, Exception):
            raise item
        return item

    def close(self) -> None:
        self.closed = True


# ---------------------------------------------------------------------------------------------
# model: measurement groups of exact alpha-beta rows
# ---------------------------------------------------------------------------------------------

MODEL_SIZES = [1 << k for k in range(16, 31)]        # 64 KiB .. 1 GiB


def model_groups(*shapes: tuple[int, int, float, float]) -> Measurements:
    """all_reduce groups (nodes, ranks per node, alpha, B) of exact alpha-beta rows."""
    found = Measurements()
    for nodes, per_node, alpha, bw in shapes:
        n = nodes * per_node
        factor = bus_factor("all_reduce", n)
        found.groups[GroupKey("all_reduce", nodes, per_node)] = [
            Sample(s, alpha + s * factor / (bw * 1e3), f"{nodes}x{per_node} {s}")
            for s in MODEL_SIZES]
    return found


def identical_ranks(late_by_us: float, count: int = 8, steps: int = 12) -> list[RankTrace]:
    """Trace ranks for lateness tests: ``count`` ranks on one host, one all-reduce per step;
    the last rank ready ``late_by_us`` after the others, every call ending at the same instant."""
    def calls(r: int) -> list[CommCall]:
        late = late_by_us if r == count - 1 else 0.0
        return [CommCall("all_reduce", "float", 4 << 20, "0", count, i, 1000.0 * i + late,
                         100.0 - late, step=i) for i in range(steps)]
    return [RankTrace(host="h", path=f"r{r}", rank=r, world_size=count, backend="nccl",
                      job=(count,), timing="gpu kernels", calls=calls(r),
                      steps=[TraceStepRecord(r, s, 10.0, 5.0, 1.0, 0.5, 50.0, 0.0)
                             for s in range(steps)],
                      window="w", comm_ms=1, compute_ms=1, exposed_comm_ms=0.5,
                      overlap_percent=50, shared_stream_comm_ms=0, first_ts=0, last_ts=1e6)
            for r in range(count)]
