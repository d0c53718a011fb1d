"""Flat against hierarchical all-reduce on an emulated two-node cluster (2 nodes x 2 ranks).

Each round runs `collscope bench all_reduce` twice as a real two-node torchrun job across two
network namespaces whose link `tc tbf` caps (default 250 Mbit/s: about a tenth of what gloo
ranks reach over this machine's loopback, closer to the NIC : xGMI/NVLink ratio of a real
cluster than 1 Gbit/s, which loopback beats only ~3x here): once with the backend's flat
all_reduce, once with --algo hierarchical; the order alternates between rounds so drift hits
both alike. Reported per size: the median over rounds of each algorithm's time (mean per op,
as collscope bench reports it) and the speedup flat / hierarchical. Theory for 2 x 2: 1.5x less
inter-node traffic, so up to 1.5x faster where the capped link dominates.

Run as root:  .venv/bin/python benchmarks/hierarchical_vs_flat.py [--rounds 3] [--rate 1gbit]
It exits 0 with a "skipped" line where network namespaces are not permitted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from netns_cluster import ClusterUnavailable, two_node_cluster  # noqa: E402

from collscope.runtime.spawn import free_loopback_port  # noqa: E402


def bench_once(cluster, algo: str, args: argparse.Namespace, out: Path) -> dict[int, dict]:
    runs = cluster.torchrun(2, free_loopback_port(), [
        "collscope", "bench", "all_reduce", "-b", args.min_bytes, "-e", args.max_bytes,
        "-n", str(args.iters), "-w", "1", "--algo", algo, "--json", str(out)])
    for run in runs:
        if run.returncode != 0:
            raise SystemExit(f"{algo} run failed:\n{run.stderr[-2000:]}")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return {r["size_bytes"]: r for r in records if r["kind"] == "result"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", default="250mbit", help="tc tbf rate of the inter-node link")
    parser.add_argument("--min-bytes", default="16M")
    parser.add_argument("--max-bytes", default="64M")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    times: dict[str, dict[int, list[float]]] = {"flat": {}, "hierarchical": {}}
    busbw: dict[str, dict[int, list[float]]] = {"flat": {}, "hierarchical": {}}
    try:
        with two_node_cluster(args.rate) as cluster, tempfile.TemporaryDirectory() as tmp:
            for round_index in range(args.rounds):
                order = ["flat", "hierarchical"] if round_index % 2 == 0 \
                    else ["hierarchical", "flat"]
                for algo in order:
                    results = bench_once(cluster, algo, args, Path(tmp) / f"{algo}.jsonl")
                    for size, record in results.items():
                        assert record["wrong"] == 0, record
                        times[algo].setdefault(size, []).append(record["time_us"])
                        busbw[algo].setdefault(size, []).append(record["busbw_gbs"])
                    print(f"round {round_index + 1}/{args.rounds} {algo} done", file=sys.stderr)
    except ClusterUnavailable as error:
        print(f"skipped: {error}")
        return
    rows = []
    print(f"2 nodes x 2 ranks (gloo), inter-node link capped at {args.rate} with tc tbf; "
          f"median of {args.rounds} rounds, {args.iters} iterations each")
    print("| size | flat time (us) | hierarchical time (us) | flat busbw (GB/s) | "
          "hierarchical busbw (GB/s) | speedup |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in sorted(times["flat"]):
        flat = statistics.median(times["flat"][size])
        hier = statistics.median(times["hierarchical"][size])
        row = {"size_bytes": size, "flat_us": flat, "hierarchical_us": hier,
               "flat_busbw_gbs": statistics.median(busbw["flat"][size]),
               "hierarchical_busbw_gbs": statistics.median(busbw["hierarchical"][size]),
               "speedup": flat / hier, "flat_all_us": times["flat"][size],
               "hierarchical_all_us": times["hierarchical"][size]}
        rows.append(row)
        print(f"| {size >> 20} MiB | {flat:.0f} | {hier:.0f} | {row['flat_busbw_gbs']:.3f} | "
              f"{row['hierarchical_busbw_gbs']:.3f} | {row['speedup']:.2f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rate": args.rate, "rounds": args.rounds,
                                               "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
