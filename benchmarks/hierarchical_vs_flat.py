"""Flat against hierarchical all-reduce on an emulated multi-node cluster (default 2 x 2).

Each round runs `collscope bench all_reduce` once per variant as a real multi-node torchrun job
across network namespaces whose links `tc tbf` caps (default 250 Mbit/s: about a tenth of what
gloo ranks reach over this machine's loopback, closer to the NIC : xGMI/NVLink ratio of a real
cluster than 1 Gbit/s, which loopback beats only ~3x here): the backend's flat all_reduce, and
--algo hierarchical with each --hier-chunk given by --chunks (none: bench's default). The order
rotates between rounds so drift hits every variant alike. Reported per size: the median over
rounds of each variant's time (mean per op, as collscope bench reports it) and the speedup
flat / hierarchical. Theory: a flat ring moves 2(n-1)/n x S across each node's link per
direction, the hierarchical form 2(N-1)/N x S (n ranks, N nodes): 1.5x less on 2 x 2, 1.17x
on 4 x 2.

Run as root:  .venv/bin/python benchmarks/hierarchical_vs_flat.py [--rounds 3] [--rate 1gbit]
              [--nodes 4] [--chunks 1M,4M,64M]
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

from netns_cluster import ClusterUnavailable, netns_cluster  # noqa: E402

from collscope.runtime.spawn import free_loopback_port  # noqa: E402

FLAT = "flat"
_RATE_UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def rate_bytes_per_s(rate: str) -> float:
    """tc's "250mbit" / "1gbit" in bytes per second."""
    for unit, scale in _RATE_UNITS.items():
        if rate.lower().endswith(unit):
            return float(rate[: -len(unit)]) * scale / 8
    raise SystemExit(f"--rate: '{rate}' is not a rate; use a number with kbit, mbit or gbit")


def link_bound_us(size: int, variant: str, nodes: int, ranks_per_node: int,
                  rate: str) -> float:
    """The time of the bytes each node sends across its capped link (per direction) at the
    cap's rate: 2(n-1)/n x S for the flat ring, 2(N-1)/N x S for the hierarchical form."""
    parties = nodes * ranks_per_node if variant == FLAT else nodes
    return size * 2 * (parties - 1) / parties / rate_bytes_per_s(rate) * 1e6


def variant_args(variant: str) -> list[str]:
    """bench flags of a variant: "flat", "hierarchical" or "hierarchical@CHUNK"."""
    if variant == FLAT:
        return ["--algo", "flat"]
    _, _, chunk = variant.partition("@")
    return ["--algo", "hierarchical", *(["--hier-chunk", chunk] if chunk else [])]


def bench_once(cluster, variant: str, args: argparse.Namespace, out: Path) -> dict[int, dict]:
    runs = cluster.torchrun(args.ranks_per_node, free_loopback_port(), [
        "collscope", "bench", "all_reduce", "-b", args.min_bytes, "-e", args.max_bytes,
        "-n", str(args.iters), "-w", "1", *variant_args(variant), "--json", str(out)])
    for run in runs:
        if run.returncode != 0:
            raise SystemExit(f"{variant} run failed:\n{run.stderr[-2000:]}")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return {r["size_bytes"]: r for r in records if r["kind"] == "result"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", default="250mbit", help="tc tbf rate of every node's link")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--ranks-per-node", type=int, default=2)
    parser.add_argument("--chunks", default="",
                        help="comma-separated --hier-chunk sizes, one hierarchical variant each "
                             "(default: one variant with bench's default chunk)")
    parser.add_argument("--min-bytes", default="16M")
    parser.add_argument("--max-bytes", default="64M")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--prefix", default="cs2n", help="namespace name prefix")
    parser.add_argument("--subnet", type=int, default=0, help="198.18.SUBNET.0/24 for the nodes")
    parser.add_argument("--json", help="also write the rows here")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    rate_bytes_per_s(args.rate)
    chunks = [c for c in args.chunks.split(",") if c]
    variants = [FLAT, *(f"hierarchical@{c}" for c in chunks)] if chunks \
        else [FLAT, "hierarchical"]
    times: dict[str, dict[int, list[float]]] = {v: {} for v in variants}
    busbw: dict[str, dict[int, list[float]]] = {v: {} for v in variants}
    try:
        with netns_cluster(nodes=args.nodes, rate=args.rate, prefix=args.prefix,
                           subnet=args.subnet) as cluster, \
                tempfile.TemporaryDirectory() as tmp:
            for round_index in range(args.rounds):
                shift = round_index % len(variants)
                for variant in variants[shift:] + variants[:shift]:
                    results = bench_once(cluster, variant, args, Path(tmp) / "bench.jsonl")
                    for size, record in results.items():
                        assert record["wrong"] == 0, record
                        times[variant].setdefault(size, []).append(record["time_us"])
                        busbw[variant].setdefault(size, []).append(record["busbw_gbs"])
                    print(f"round {round_index + 1}/{args.rounds} {variant} done",
                          file=sys.stderr)
    except ClusterUnavailable as error:
        print(f"skipped: {error}")
        return
    print(f"{args.nodes} nodes x {args.ranks_per_node} ranks (gloo), every node's link capped "
          f"at {args.rate} with tc tbf; median of {args.rounds} rounds, {args.iters} "
          "iterations each; every result verified (wrong = 0); link-bound: the bytes each "
          "node sends across its link per direction at the cap's rate")
    print("| size | variant | time (us) | busbw (GB/s) | link-bound (us) | of link-bound | "
          "speedup over flat |")
    print("|---:|:---|---:|---:|---:|---:|---:|")
    rows = []
    for size in sorted(times[FLAT]):
        flat = statistics.median(times[FLAT][size])
        for variant in variants:
            median = statistics.median(times[variant][size])
            bound = link_bound_us(size, variant, args.nodes, args.ranks_per_node, args.rate)
            row = {"size_bytes": size, "variant": variant, "time_us": median,
                   "busbw_gbs": statistics.median(busbw[variant][size]),
                   "link_bound_us": bound, "speedup": flat / median,
                   "all_us": times[variant][size]}
            rows.append(row)
            print(f"| {size >> 20} MiB | {variant} | {median:.0f} | {row['busbw_gbs']:.3f} | "
                  f"{bound:.0f} | {bound / median:.0%} | {row['speedup']:.2f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"rate": args.rate, "nodes": args.nodes, "ranks_per_node": args.ranks_per_node,
             "rounds": args.rounds, "iters": args.iters, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
