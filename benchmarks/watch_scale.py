"""`collscope watch` at the scale users run: W simulated ranks on H hosts, a real store server,
rank 0's real aggregation, round by round.

Method. A TCPStore server as torchrun makes it (is_master, the libuv backend) runs in a process
of its own. SENDERS processes, each speaking for H / SENDERS hosts through one real client
connection, make every round's payload before the run and publish it at the real interval
(every agent's wall-clock grid): what those ranks'
agents would: with ``--aggregate flat`` every rank's summary (``sum/<rank>``) and every rank's
check of the stall key; with ``--aggregate hosts`` each host leader's record (its ranks'
summaries merged in columns by collscope.watch.levels.encode_record, one ``set`` per host,
every interval, or every 2nd beyond levels.LARGE_JOB_RANKS ranks as the agent does) and the
leaders' checks of the stall key (every interval). The summaries are the real encoding
(collscope.watch.summary, each carrying the previous interval's arrivals as the agent does):
COLLECTIVES all_reduces per interval in the default group, each rank entering a few hundred
microseconds apart (an exponential jitter, mean 300 us, per rank and collective, plus a
per-host one), and one planted straggler (rank W/2 + 3) entering 30 ms late from round
SLOW_FROM on. The hop from a host's ranks to their leader (the host-local store on the
host's loopback) is not on the job's store and is not simulated. "Rank 0" is a process
running collscope.watch.aggregate.Aggregator with the source of its mode (FlatSource or
levels.HostRecords) on its own client connection, SETTLE s after each grid point as the agent
does (in the rounds the leaders merged), writing its records into a channel folder; the
clock exchange at start is skipped (the agent's stop flag is set while it begins: no leader
answers it here).

Per round on rank 0: the wall time of Aggregator.round (read, decode, match, detect, records;
p50 and p99 over the measured rounds), its process CPU time (time.process_time: every thread
of the process, which runs nothing else) over the measured span's wall time, as a share of
one core; its resident memory (VmRSS) at the end and its growth since before the aggregator
was made. The store server: bytes read and written by its process (/proc/PID/io rchar and
wchar: every byte of the protocol through its sockets) and its CPU time (/proc/PID/stat) over
the measured span; operations counted by every client. Straggler named: a ``finding`` started
for the planted rank (and nobody else named). The first WARMUP rounds are not measured.

Run (the CPU is shared: CPU is process CPU time, not wall; say the load):

    .venv/bin/python benchmarks/watch_scale.py [--ranks 64 256 1024 4096 16384]
        [--ranks-per-host 8] [--aggregate hosts flat] [--rounds 30] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PREFIX = "collscope/watch/bench/0/"
JITTER_US = 300.0
SLOW_MS = 30.0
START_MARGIN_S = 2.0


@dataclass(frozen=True)
class Shape:
    ranks: int
    per_host: int
    aggregate: str
    interval_s: float
    collectives: int
    rounds: int
    warmup: int
    slow_from: int

    @property
    def hosts(self) -> int:
        return -(-self.ranks // self.per_host)

    @property
    def straggler(self) -> int:
        return self.ranks // 2 + 3

    @property
    def every(self) -> int:
        """Every how many intervals the leaders merge and rank 0 aggregates (the agent's
        rule, collscope.watch.levels.merge_every)."""
        from collscope.watch import levels

        return levels.merge_every(self.ranks) if self.aggregate == "hosts" else 1

    @property
    def merge_s(self) -> float:
        return self.interval_s * self.every

    def due(self, round_: int) -> bool:
        """Whether the leaders merge and rank 0 aggregates in this round (the agent judges
        it by the wall-clock grid; every sender and rank 0 here count the same rounds)."""
        return round_ % self.every == 0

    def host_of(self, rank: int) -> str:
        return f"node{rank // self.per_host:05d}"

    @property
    def settle_s(self) -> float:
        """When rank 0 aggregates after the grid point, as the agent does."""
        from collscope.watch import agent, levels

        after = min(agent.AGGREGATE_AFTER_S, self.interval_s / 4)
        if self.aggregate == "hosts":
            after += min(levels.LEAD_AFTER_S, self.interval_s / 8)
        return after


class Counted:
    """A store whose calls are counted (the operations the server answers)."""

    def __init__(self, store: Any) -> None:
        self.store, self.ops, self.counting = store, 0, False

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.store, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.ops += self.counting
            return call(*args, **kwargs)
        return counted


def _client(port: int) -> Counted:
    import datetime

    import torch.distributed as dist

    inner = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=60))
    return Counted(dist.PrefixStore(PREFIX, inner))


def _sleep_until(at: float) -> None:
    time.sleep(max(0.0, at - time.time()))


# -- the roles (each its own process) -----------------------------------------------------------
def serve() -> None:
    import torch.distributed as dist

    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                           use_libuv=True)
    print(server.port, flush=True)
    sys.stdin.read()


def prepare(shape: Shape, hosts: range, t0: float) -> list[tuple[list[tuple[str, Any]], int]]:
    """Every round's payload for ``hosts`` (made before the run, so that the measured span
    holds only the publishing): what their agents would set, and how many stall-key checks
    they would make. Times count from ``t0``; rank 0 judges them only against each other."""
    from collscope.watch import exchange, levels
    from collscope.watch.agent import _with_previous
    from collscope.watch.summary import Summary

    rng = random.Random(hosts.start)
    previous: dict[int, Summary] = {}
    base_us = int(t0 * 1e6)
    spacing_us = shape.interval_s * 1e6 / shape.collectives
    rounds = []
    for round_ in range(1, shape.rounds + 1):
        grid = t0 + round_ * shape.interval_s
        payload: list[tuple[str, Any]] = []
        checks = 0
        for host in hosts:
            ranks = range(host * shape.per_host, min((host + 1) * shape.per_host, shape.ranks))
            host_skew = [rng.expovariate(1 / JITTER_US) for _ in range(shape.collectives)]
            texts = []
            for rank in ranks:
                first = (round_ - 1) * shape.collectives
                arrivals = []
                for k in range(shape.collectives):
                    us = base_us + (first + k) * spacing_us + host_skew[k] + \
                        rng.expovariate(1 / JITTER_US)
                    if rank == shape.straggler and round_ >= shape.slow_from:
                        us += SLOW_MS * 1000
                    arrivals.append((first + k, int(us)))
                summary = Summary(round_, grid, {"0": arrivals},
                                  {"0": {"all_reduce": first + shape.collectives}})
                texts.append((rank, _with_previous(summary, previous.get(rank)).encode()))
                previous[rank] = summary
            if shape.aggregate == "hosts" and shape.due(round_):
                payload.append((levels.host_record_key(shape.host_of(ranks[0])),
                                levels.encode_record(grid, ranks[0], shape.merge_s, texts)))
            elif shape.aggregate == "flat":
                payload += [(exchange.summary_key(r), text) for r, text in texts]
            checks += 1 if shape.aggregate == "hosts" else len(texts)
        rounds.append((payload, checks))
    return rounds


def send(shape: Shape, port: int, rounds: list[tuple[list[tuple[str, Any]], int]],
         start: float) -> dict[str, int]:
    """Publish every round's payload on the grid; the operations and payload bytes of the
    measured rounds."""
    from collscope.watch import exchange

    store = _client(port)
    payload_bytes = 0
    for round_, (payload, checks) in enumerate(rounds, 1):
        _sleep_until(start + round_ * shape.interval_s)
        store.counting = round_ > shape.warmup
        for key, value in payload:
            store.set(key, value)
        for _ in range(checks):
            store.check([exchange.HANG_KEY])
        payload_bytes += store.counting * sum(len(v) for _, v in payload)
    return {"ops": store.ops, "payload_bytes": payload_bytes}


def rank0(shape: Shape, port: int, start: float, folder: str) -> dict[str, Any]:
    from collscope.watch import exchange, levels
    from collscope.watch.agent import Agent, Channel
    from collscope.watch.aggregate import Aggregator
    from collscope.watch.clocks import Clocks
    from collscope.watch.config import AgentSettings

    store = _client(port)
    rss_before = _rss_mib()
    agent = Agent(0, shape.ranks, "nccl", None, AgentSettings(
        shape.interval_s, aggregate=shape.aggregate, dump_dir=folder), Channel(folder, 0))
    agent.store = store
    hellos = [exchange.Hello(r, shape.host_of(r), r % shape.per_host, 0, "nccl")
              for r in range(shape.ranks)]
    if shape.aggregate == "hosts":
        by_host: dict[str, list[exchange.Hello]] = {}
        for hello in hellos:
            by_host.setdefault(hello.host, []).append(hello)
        source: Any = levels.HostRecords(store, by_host, agent._notice, shape.interval_s)
    else:
        source = exchange.FlatSource(store, range(shape.ranks))
    aggregator = Aggregator(agent)
    agent._stop.set()           # no clock exchange: no leader answers it here
    aggregator.begin(hellos, source)
    agent._stop.clear()
    aggregator.clocks = Clocks(None, lambda: None, {}, lambda: True)   # nor its re-runs
    walls, cpus = [], []
    span: list[tuple[float, float]] = []
    for round_ in range(1, shape.rounds + 1):
        _sleep_until(start + round_ * shape.interval_s + shape.settle_s)
        if round_ == shape.warmup + 1:
            span.append((time.time(), time.process_time()))
        store.counting = round_ > shape.warmup
        if not shape.due(round_):
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        aggregator.round(round_)
        if round_ > shape.warmup:
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    _sleep_until(start + (shape.rounds + 1) * shape.interval_s + shape.settle_s)
    span.append((time.time(), time.process_time()))
    records = [json.loads(line) for line in Path(agent.channel.path).read_text().splitlines()]
    named = sorted({r["rank"] for r in records
                    if r["kind"] == "finding" and r["state"] == "started"})
    windows = sum(r["kind"] == "watch_window" for r in records)
    return {"walls": walls, "cpus": cpus, "cpu_share": (span[1][1] - span[0][1]) /
            (span[1][0] - span[0][0]), "rss_mib": _rss_mib(), "rss_before_mib": rss_before,
            "named": named, "ops": store.ops, "windows_per_round": windows / shape.rounds,
            "notices": [r["title"] for r in records if r["kind"] == "watch_notice"]}


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- the parent: one job per size and mode --------------------------------------------------------
def _proc(pid: int) -> tuple[int, int, float]:
    """(rchar, wchar, CPU seconds) of a process."""
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return int(io["rchar"]), int(io["wchar"]), cpu


def _role(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, __file__, "--role", *args], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def measure(shape: Shape, senders: int) -> dict[str, Any]:
    server = _role("server")
    port = server.stdout.readline().strip()
    shape_json = json.dumps(asdict(shape))
    per = -(-shape.hosts // senders)
    with tempfile.TemporaryDirectory(prefix="collscope-watch-scale-") as folder:
        t0 = time.time()
        workers = [_role("sender", shape_json, port, str(i * per),
                         str(min(shape.hosts, (i + 1) * per)), str(t0)) for i in range(senders)]
        workers.append(_role("rank0", shape_json, port, "0", "0", folder))
        for worker in workers:           # each says "ready" once torch is imported
            worker.stdout.readline()
        start = time.time() + START_MARGIN_S
        for worker in workers:
            worker.stdin.write(f"{start}\n")
            worker.stdin.flush()
        _sleep_until(start + (shape.warmup + 0.5) * shape.interval_s)
        before, load = _proc(server.pid), os.getloadavg()[0]
        _sleep_until(start + (shape.rounds + 0.5) * shape.interval_s)
        after = _proc(server.pid)
        results = [json.loads(worker.communicate()[0].splitlines()[-1]) for worker in workers]
    server.communicate("")
    span = (shape.rounds - shape.warmup) * shape.interval_s
    zero = results[-1]
    walls = sorted(zero["walls"])
    from collscope.stats.summary import quantile

    return {
        "kind": "watch_scale", "aggregate": shape.aggregate, "ranks": shape.ranks,
        "hosts": shape.hosts, "ranks_per_host": shape.per_host, "interval_s": shape.interval_s,
        "collectives_per_interval": shape.collectives, "rounds": len(walls),
        "round_p50_s": round(quantile(walls, 0.5), 4),
        "round_p99_s": round(quantile(walls, 0.99), 4), "round_max_s": round(walls[-1], 4),
        "round_cpu_p50_s": round(statistics.median(zero["cpus"]), 4),
        "rank0_cpu_share": round(zero["cpu_share"], 4),
        "rank0_rss_mib": round(zero["rss_mib"], 1),
        "rank0_rss_growth_mib": round(zero["rss_mib"] - zero["rss_before_mib"], 1),
        "window_records_per_round": round(zero["windows_per_round"], 1),
        "store_ops_per_s": round(sum(r["ops"] for r in results) / span, 1),
        # what the leaders (or ranks) set, per s; rank 0 reads it all back once per round
        "payload_bytes_per_s": round(sum(r["payload_bytes"] for r in results[:-1]) / span),
        "store_bytes_per_s": round((after[0] - before[0] + after[1] - before[1]) / span),
        "store_bytes_in_per_s": round((after[0] - before[0]) / span),
        "store_bytes_out_per_s": round((after[1] - before[1]) / span),
        "store_cpu_share": round((after[2] - before[2]) / span, 4),
        "straggler_rank": shape.straggler, "straggler_named": shape.straggler in zero["named"],
        "named": zero["named"], "notices": zero["notices"], "load_avg_1m": round(load, 2),
        "senders": senders,
    }


def _child(argv: list[str]) -> None:
    role = argv[0]
    if role == "server":
        serve()
        return
    shape, port = Shape(**json.loads(argv[1])), int(argv[2])
    import torch.distributed  # noqa: F401  (imported before "ready": start-up is not measured)

    if role == "sender":
        rounds = prepare(shape, range(int(argv[3]), int(argv[4])), float(argv[5]))
        print("ready", flush=True)
        print(json.dumps(send(shape, port, rounds, float(sys.stdin.readline()))))
    else:
        print("ready", flush=True)
        print(json.dumps(rank0(shape, port, float(sys.stdin.readline()), argv[5])))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--role":
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[64, 256, 1024, 4096, 16384])
    parser.add_argument("--ranks-per-host", type=int, default=8)
    parser.add_argument("--aggregate", nargs="+", choices=("hosts", "flat"), default=["hosts"])
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--collectives", type=int, default=4,
                        help="all_reduces per interval per rank")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--slow-from", type=int, default=8)
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="watch_scale records (JSON Lines)")
    args = parser.parse_args()
    out = args.json.open("w") if args.json else None
    print(f"{'aggregate':9} {'ranks':>6} {'hosts':>5} {'p50 s':>7} {'p99 s':>7} {'rank0 CPU':>9} "
          f"{'RSS MiB':>8} {'ops/s':>8} {'store B/s':>10} {'set B/s':>9} {'store CPU':>9} "
          "straggler",
          flush=True)
    for aggregate in args.aggregate:
        for ranks in args.ranks:
            shape = Shape(ranks, args.ranks_per_host, aggregate, args.interval,
                          args.collectives, args.rounds, args.warmup, args.slow_from)
            record = measure(shape, args.senders)
            print(f"{aggregate:9} {ranks:>6} {shape.hosts:>5} {record['round_p50_s']:>7.3f} "
                  f"{record['round_p99_s']:>7.3f} {record['rank0_cpu_share']:>8.1%} "
                  f"{record['rank0_rss_mib']:>8.0f} {record['store_ops_per_s']:>8.0f} "
                  f"{record['store_bytes_per_s']:>10,} {record['payload_bytes_per_s']:>9,} "
                  f"{record['store_cpu_share']:>8.1%} "
                  f"{'named' if record['straggler_named'] else 'NOT named'}"
                  f"{' (also ' + str(record['named']) + ')' if len(record['named']) > 1 else ''}"
                  f" load {record['load_avg_1m']}", flush=True)
            if out is not None:
                out.write(json.dumps(record) + "\n")
                out.flush()
    if out is not None:
        out.close()


if __name__ == "__main__":
    main()
