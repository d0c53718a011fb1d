"""`collscope train --preset small` sweep on an emulated two-node cluster (2 nodes x 2 ranks).

One real two-node torchrun job (two network namespaces, the inter-node link capped with
`tc tbf`, see netns_cluster.py) runs a DDP sweep of the `small` Llama preset (about 34 M
parameters, 134 MB of fp32 gradients per step) over bucket sizes and comm hooks, the
hierarchical all-reduce among them. Reported: collscope's own ranked table (step time, exposed
communication, overlap, speedup over the DDP default) and its recommendation, i.e. the sweep's
best configuration against the DDP default (bucket 25 MB, no hook), measured in the same run.

Run as root:
    .venv/bin/python benchmarks/train_sweep_two_node.py [--rate 1gbit] [--steps 3]
It prints "skipped" where network namespaces are not permitted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from netns_cluster import ClusterUnavailable, two_node_cluster  # noqa: E402

from collscope.runtime.spawn import free_loopback_port  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", default="1gbit", help="tc tbf rate of the inter-node link")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--sweep", action="append",
                        default=None, help="as collscope train --sweep (repeatable)")
    parser.add_argument("--json", help="copy the train records here")
    args = parser.parse_args()
    sweeps = args.sweep or ["bucket_cap_mb=5,25,100", "comm_hook=none,bf16,hierarchical"]
    try:
        with two_node_cluster(args.rate) as cluster, tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "train.jsonl"
            command = ["collscope", "train", "--preset", "small", "--steps", str(args.steps),
                       "--warmup", str(args.warmup), "--seq-len", str(args.seq_len),
                       "--batch-size", str(args.batch_size), "--timeout", "900",
                       "--json", str(out)]
            for sweep in sweeps:
                command += ["--sweep", sweep]
            runs = cluster.torchrun(2, free_loopback_port(), command, timeout=3600)
            for run in runs:
                if run.returncode != 0:
                    raise SystemExit(f"train failed:\n{run.stderr[-3000:]}")
            print(f"2 nodes x 2 ranks (gloo), inter-node link capped at {args.rate}; "
                  f"`collscope {' '.join(command[1:-2])}`")
            print(runs[0].stdout)
            if args.json:
                Path(args.json).write_text(out.read_text())
            records = [json.loads(line) for line in out.read_text().splitlines()]
            run_record = records[0]
            assert run_record["nodes"] == 2, run_record
    except ClusterUnavailable as error:
        print(f"skipped: {error}")


if __name__ == "__main__":
    main()
