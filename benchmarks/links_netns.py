"""`collscope links` on an emulated 4-node cluster: how long the acceptance gate takes.

Four network namespaces (benchmarks/netns_cluster.py) on one bridge, one torchrun agent per
namespace (one rank each, gloo over the node's veth), `collscope links` with its default
settings. Two cases, interleaved run by run so that the host's load falls on both alike:

    capped    one node's link capped with tc tbf (default node 2 at 200 Mbit/s), the others
              uncapped: that node must be named alone, exit 1
    uncapped  no cap at all: nobody named, exit 0

Per run: the wall time from launching the agents to the last one's exit (start-up included),
the exit codes, the nodes named slow, links' own measured seconds, its rounds and its
confirmations. ``--code DIR`` runs another checkout's collscope (e.g. an export of main, to
measure before and after a change with the same script); the agents start in DIR so its
package is the one imported.

Run as root:  .venv/bin/python benchmarks/links_netns.py [--repeats 2] [--cap 200mbit]
It exits 0 with a "skipped" line where network namespaces are not permitted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from netns_cluster import ClusterUnavailable, netns_cluster  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NODES = 4


def one_run(case: str, args: argparse.Namespace, workdir: Path, index: int) -> dict:
    from collscope.runtime.spawn import free_loopback_port

    out = workdir / f"{case}-{index}.jsonl"

    def rate(node: int, _network: int) -> str | None:
        return args.cap if case == "capped" and node == args.cap_node else None

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
    env["PYTHONPATH"] = str(args.code)
    with netns_cluster(nodes=NODES, link_rate=rate, prefix=args.prefix,
                       subnet=args.subnet) as cluster:
        started = time.monotonic()
        agents = cluster.torchrun(1, free_loopback_port(), [
            "collscope", "links", *args.links_args, "--json", str(out)], env=env,
            timeout=args.timeout)
        wall = time.monotonic() - started
    (workdir / f"{case}-{index}.txt").write_text(agents[0].stdout)     # rank 0's report
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()] \
        if out.exists() else []
    summary = next((r for r in records if r["kind"] == "links_summary"), {})
    return {"case": case, "wall_s": round(wall, 1), "exit": [a.returncode for a in agents],
            "slow_nodes": summary.get("slow_nodes"), "links_s": summary.get("seconds"),
            "rounds": summary.get("rounds"), "confirmations": summary.get("confirmations"),
            "stderr_tail": "" if summary else agents[0].stderr[-1500:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2, help="runs per case")
    parser.add_argument("--cases", default="capped,uncapped",
                        help="comma-separated: capped, uncapped (interleaved)")
    parser.add_argument("--cap", default="200mbit", help="tbf rate of the capped node")
    parser.add_argument("--cap-node", type=int, default=2, help="which node is capped")
    parser.add_argument("--code", type=Path, default=REPO,
                        help="checkout whose collscope runs (default: this one)")
    parser.add_argument("--prefix", default="lk", help="namespace name prefix")
    parser.add_argument("--subnet", type=int, default=20, help="third octet of 198.18.x.0/24")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    parser.add_argument("--json", type=Path, help="write every run as JSON Lines")
    parser.add_argument("--keep", type=Path,
                        help="folder to keep each run's links --json output in")
    parser.add_argument("links_args", nargs="*",
                        help="extra arguments for collscope links (after --)")
    args = parser.parse_args(argv)
    args.code = args.code.resolve()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    if not cases or set(cases) - {"capped", "uncapped"}:
        parser.error(f"--cases: '{args.cases}' is not accepted; use capped and/or uncapped")
    os.chdir(args.code)                  # torchrun's `-m collscope` imports from its cwd first
    # A SIGTERM (a timeout around this script) unwinds, so the namespaces are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = []
    with tempfile.TemporaryDirectory(prefix="links-netns-") as tmp:
        workdir = Path(tmp) if args.keep is None else args.keep.resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            for index in range(args.repeats):
                for case in cases:
                    result = one_run(case, args, workdir, index)
                    results.append(result)
                    print(json.dumps(result), flush=True)
                    if args.json:
                        with args.json.open("a") as out:
                            out.write(json.dumps(result) + "\n")
        except ClusterUnavailable as error:
            print(f"skipped: {error}")
            return 0
    print(f"\n{'case':<9} {'runs':>4} {'wall s (each)':<24} {'median':>7}  exit codes / named")
    for case in cases:
        mine = [r for r in results if r["case"] == case]
        walls = [r["wall_s"] for r in mine]
        print(f"{case:<9} {len(mine):>4} {', '.join(map(str, walls)):<24} "
              f"{statistics.median(walls):>7.1f}  "
              + "; ".join(f"{r['exit']} {r['slow_nodes']}" for r in mine))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
