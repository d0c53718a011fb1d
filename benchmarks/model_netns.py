"""`collscope model` on an emulated cluster: fit on two shapes, predict two others, measure them.

Four network namespaces (benchmarks/netns_cluster.py, prefix "cs14", subnet 140) joined by a
bridge whose links `tc tbf` caps (default 1 Gbit/s per node): ranks in one namespace talk over
its loopback ("intra-node"), ranks in different ones over the capped links ("inter-node").
`collscope bench all_reduce` (gloo, in-place) runs as a real torchrun job on

    1 node x 2 ranks and 2 nodes x 1 rank      -> `model fit` (the intra and the inter level)
    2 nodes x 2 ranks and 4 nodes x 1 rank     -> measured, then `model check` against them

and the table gives, per size >= --report-from, measured and predicted busbw and the error.
Noise is stated two ways: the spread of each measured size over its timed iterations ((max -
min) / 2 / median), and, with --rounds > 1, the run-to-run spread of the measured shapes.

Run as root:  .venv/bin/python benchmarks/model_netns.py [--rate 1gbit] [--rounds 1]
It exits 0 with a "skipped" line where network namespaces are not permitted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from netns_cluster import ClusterUnavailable, netns_cluster  # noqa: E402

from collscope.model.check import check  # noqa: E402
from collscope.model.costmodel import build  # noqa: E402
from collscope.model.data import collect  # noqa: E402
from collscope.records.load import load_inputs  # noqa: E402
from collscope.runtime.spawn import free_loopback_port  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIT_SHAPES = ((1, 2), (2, 1))
MEASURED_SHAPES = ((2, 2), (4, 1))


def bench(cluster, nodes: int, per_node: int, args: argparse.Namespace, out: Path,
          algo: str = "flat") -> Path:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
    env["PYTHONPATH"] = str(REPO)
    runs = dataclasses.replace(cluster, nodes=nodes).torchrun(per_node, free_loopback_port(), [
        "collscope", "bench", "all_reduce", "-b", args.min_bytes, "-e", args.max_bytes,
        "-n", str(args.iters), "-w", "1", "--in-place", "--algo", algo, "--json", str(out)],
        env=env,
        timeout=240)
    for run in runs:
        if run.returncode != 0:
            raise SystemExit(f"{nodes}x{per_node} run failed:\n{run.stderr[-2000:]}")
    return out


def iteration_spread(path: Path) -> dict[int, float]:
    spread = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "result" and record.get("time_us_p50"):
            spread[record["size_bytes"]] = (record["time_us_max"] - record["time_us_min"]) / 2 \
                / record["time_us_p50"]
    return spread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", default="1gbit", help="tc tbf rate of every node's link")
    parser.add_argument("--min-bytes", default="1M")
    parser.add_argument("--max-bytes", default="64M")
    parser.add_argument("--report-from", type=int, default=16 << 20, help="bytes (16 MiB)")
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure the predicted shapes this many times")
    parser.add_argument("--hierarchical", action="store_true",
                        help="also measure 2x2 with --algo hierarchical (uses the intra level)")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    started = time.monotonic()
    try:
        with netns_cluster(nodes=4, rate=args.rate, prefix="cs14", subnet=140) as cluster, \
                tempfile.TemporaryDirectory() as tmp:
            fit_files = [str(bench(cluster, n, r, args, Path(tmp) / f"fit_{n}x{r}.jsonl"))
                         for n, r in FIT_SHAPES]
            measured: list[list[Path]] = []
            for round_index in range(args.rounds):
                paths = [bench(cluster, n, r, args,
                               Path(tmp) / f"measured_{n}x{r}_{round_index}.jsonl")
                         for n, r in MEASURED_SHAPES]
                if args.hierarchical:
                    paths.append(bench(cluster, 2, 2, args, Path(tmp) / f"hier_{round_index}"
                                       ".jsonl", algo="hierarchical"))
                measured.append(paths)
            model = build(collect(load_inputs(fit_files)))
            # gloo's all_reduce is a ring: predict flat rows with the ring formula.
            reports = [check(model, collect(load_inputs([str(p) for p in paths])), ("ring",))
                       for paths in measured]
            spreads = {(n, r): iteration_spread(path)
                       for (n, r), path in zip(MEASURED_SHAPES, measured[0])}
    except ClusterUnavailable as error:
        print(f"skipped: {error}")
        return
    print(f"gloo all_reduce, in-place, {args.iters} timed iterations per size (mean per op); "
          f"every node link capped at {args.rate} with tc tbf; fitted on "
          f"{' and '.join(f'{n}x{r}' for n, r in FIT_SHAPES)} (nodes x ranks); "
          f"{args.rounds} round(s); {time.monotonic() - started:.0f} s in all")
    for g in model.groups:
        bandwidth = f"{g.fit.busbw_gbs:.4g} GB/s" if g.fit.busbw_gbs is not None else \
            f"unidentified ({g.fit.busbw_unidentified})"
        print(f"fit {g.key.label}: alpha {g.fit.alpha_us:.4g} us, B {bandwidth}, "
              f"{len(g.fit.outliers)} outlier(s), max |error| {g.fit.max_error_pct:.1f}%")
    print("| shape | size | measured busbw (GB/s) | predicted busbw (GB/s) | error | "
          "iteration spread | run-to-run spread | algo |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    rows = []
    for row in reports[0].rows:
        if row.size_bytes < args.report_from:
            continue
        shape = (row.nodes, row.ranks_per_node)
        others = [r.measured_busbw_gbs for report in reports for r in report.rows
                  if (r.nodes, r.ranks_per_node, r.size_bytes, r.algo)
                  == (*shape, row.size_bytes, row.algo)]
        run_spread = (max(others) - min(others)) / 2 / statistics.median(others) \
            if len(others) > 1 else None
        spread = spreads[shape].get(row.size_bytes) if row.algo == "ring" else None
        rows.append({**row.to_dict(), "iteration_spread": spread,
                     "run_spread": run_spread})
        print(f"| {row.nodes}x{row.ranks_per_node} | {row.size_bytes >> 20} MiB | "
              f"{row.measured_busbw_gbs:.4f} | {row.predicted_busbw_gbs:.4f} | "
              f"{row.error_pct:.1f}% | "
              + (f"+-{spread:.1%}" if spread is not None else "-") + " | "
              + (f"+-{run_spread:.1%}" if run_spread is not None else "-")
              + f" | {row.algo} |")
    for algo in sorted({r["algo"] for r in rows}):
        errors = [r["error_pct"] for r in rows if r["algo"] == algo]
        print(f"{algo}: median |error| at >= {args.report_from >> 20} MiB "
              f"{statistics.median(errors):.1f}%, max {max(errors):.1f}% ({len(errors)} rows)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rate": args.rate, "rounds": args.rounds,
                                               "model": model.to_dict(), "rows": rows},
                                              indent=1))


if __name__ == "__main__":
    main()
