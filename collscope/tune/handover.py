"""Hand-over: the winners in the forms people and libraries read.

Pure (text out). ``env_lines``: bash ``export`` lines (environment variables are per process,
so one set for the whole job: the set that wins at every size where anything wins, else the
best single set by geometric-mean speed-up, with the sizes where it loses said in comments).
``tuner_csv``: the CSV of the example tuner plugin of NCCL and of RCCL (both ext-tuner/example,
same columns, read through ``NCCL_TUNER_CONFIG_FILE``), so per-size winners apply inside the
library. ``tune_records``: the
``tune`` JSON records that report draws and compare gates.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from collscope.records.tune import TuneRecord
from collscope.tune.analysis import (
    CI_METHOD,
    CORRECTION,
    TIME_METHOD,
    Row,
    SizeRange,
    comparisons,
    corrected_confidence,
    score,
    winner_ranges,
    winners,
)
from collscope.tune.space import Config
from collscope.units import format_size

NO_WINNER = "no configuration beats the defaults beyond noise"

# The example plugin's columns, in order (its README and plugin.c's CONFIG_FIELD_* indices).
TUNER_COLUMNS = ("collective_type", "min_bytes", "max_bytes", "algorithm", "protocol",
                 "channels", "nNodes", "nRanks", "numPipeOps", "regBuff")
TUNER_COLLECTIVES = {"broadcast": "broadcast", "reduce": "reduce", "all_gather": "allgather",
                     "reduce_scatter": "reducescatter", "all_reduce": "allreduce"}
TUNER_ALGORITHMS = {"ring": "ring", "tree": "tree", "collnetdirect": "collnet_direct",
                    "collnetchain": "collnet_chain", "nvls": "nvls", "nvlstree": "nvls_tree",
                    "pat": "pat"}
TUNER_PROTOCOLS = {"ll": "ll", "ll128": "ll128", "simple": "simple"}
ANY = -1
# RCCL's tuner applies these algorithms only (rccl ext-tuner/README.md).
RCCL_ALGORITHMS = ("ring", "tree")
# Both plugins read a line with fgets into 256 bytes: a longer line is cut, and its rest is
# read as one more line (a row, not a comment), so no line may be longer than this.
MAX_LINE = 255
# Variables the plugin applies itself; any other variable of a winner still needs exporting.
TUNER_VARIABLES = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS")


@dataclass(frozen=True)
class Recommendation:
    config: Config | None          # None: keep the defaults
    everywhere: bool               # wins at every size where anything wins
    losses: tuple[str, ...]        # where the single set loses, as sentences


def recommend(rows: Sequence[Row], baseline: Config) -> Recommendation:
    won = winners(rows)
    champions = {row.config for row in won.values() if row.config != baseline}
    if not champions:
        return Recommendation(None, True, ())
    for config in sorted(champions, key=lambda c: -(score(rows, c) or 0.0)):
        own = {row.point: row for row in rows if row.config == config}
        if all(_covers(config, baseline, row, own.get(point)) for point, row in won.items()):
            return Recommendation(config, True, ())
    best = max(champions, key=lambda c: score(rows, c) or 0.0)
    losses = []
    own = {row.point: row for row in rows if row.config == best}
    for point, row in sorted(won.items()):
        mine = own.get(point)
        if row.config == best:
            continue
        where = f"{point[0]} {format_size(point[2])}"
        if mine is None:
            losses.append(f"{where}: not measured with this set")
        elif mine.verdict == "slower" and mine.interval:
            losses.append(f"{where}: {mine.interval.ratio:.3f}x the defaults' speed "
                          f"(slower, CI {mine.interval.low:.3f}-{mine.interval.high:.3f})")
        elif row.interval:
            losses.append(f"{where}: {row.config.label(baseline)} is faster there "
                          f"({row.interval.ratio:.3f}x the defaults)")
    return Recommendation(best, False, tuple(losses))


def _covers(config: Config, baseline: Config, winner: Row, mine: Row | None) -> bool:
    """Does ``config`` do as well as the winner at this size: it is the winner, or nothing
    beats the defaults there and ``config`` is not slower than them?"""
    if winner.config == config:
        return True
    return winner.config == baseline and mine is not None and mine.verdict != "slower"


def env_lines(rows: Sequence[Row], baseline: Config, header: Sequence[str] = ()) -> list[str]:
    """A bash file to ``source``: comments, then ``export`` / ``unset`` lines."""
    rec = recommend(rows, baseline)
    lines = [f"# {line}" for line in header]
    if rec.config is None:
        lines.append(f"# {NO_WINNER}: nothing to export")
        return lines
    lines.append("# wins at every size where a configuration wins" if rec.everywhere else
                 "# best single set (geometric-mean speed-up over all sizes); it loses at:")
    lines += [f"#   {loss}" for loss in rec.losses]
    for name, value in rec.config.values:
        lines.append(f"unset {name}" if value is None else f"export {name}={shlex.quote(value)}")
    return lines


def _algorithm(config: Config) -> tuple[str | None, str | None, int]:
    values = config.as_dict()
    algo = (values.get("NCCL_ALGO") or "").lower()
    proto = (values.get("NCCL_PROTO") or "").lower()
    low, high = values.get("NCCL_MIN_NCHANNELS"), values.get("NCCL_MAX_NCHANNELS")
    channels = int(low) if low is not None and low == high else ANY
    return TUNER_ALGORITHMS.get(algo), TUNER_PROTOCOLS.get(proto), channels


def _range_bounds(ranges: Sequence[SizeRange], index: int) -> tuple[int, int]:
    """Measured sizes only: from the range's first size (or just above the previous range's
    last) to its last size; no extrapolation beyond what was measured."""
    current = ranges[index]
    previous = ranges[index - 1] if index else None
    same = previous and (previous.collective, previous.dtype) == (current.collective,
                                                                  current.dtype)
    low = previous.sizes[-1] + 1 if same and previous else current.sizes[0]
    return low, current.sizes[-1]


def tuner_csv(rows: Sequence[Row], baseline: Config, nodes: int, ranks: int,
              library: str | None = None) -> list[str]:
    """Lines of an NCCL_TUNER_CONFIG_FILE for the example plugin of NCCL or RCCL (``library``
    "rccl": rows only for the algorithms RCCL applies); comments say what is left out. No line
    is longer than the plugins read (long comments are wrapped)."""
    lines = ["# collscope tune: per-size winners for the example tuner plugin of NCCL and RCCL"
             + (f" (trials ran on {library.upper()})" if library else ""),
             f"# {','.join(TUNER_COLUMNS)}",
             "# sizes are bench message sizes (nccl-tests' size column); ranges cover measured "
             "sizes only;",
             "# sizes without a row get the plugin's fallback (its README: Default Behavior), "
             "not necessarily NCCL's own choice"]
    ranges = winner_ranges(rows)
    for index, size_range in enumerate(ranges):
        config = size_range.config
        low, high = _range_bounds(ranges, index)
        where = f"{size_range.collective} {low}-{high} bytes"
        if config == baseline:
            lines.append(f"# {where}: defaults ({NO_WINNER}); no row")
            continue
        collective = TUNER_COLLECTIVES.get(size_range.collective)
        algorithm, protocol, channels = _algorithm(config)
        if collective is None:
            lines.append(f"# {where}: the plugin has no {size_range.collective}; no row")
            continue
        if algorithm is None or protocol is None:
            lines.append(f"# {where}: winner {config.label(baseline)} does not pin one NCCL_ALGO "
                         "and one NCCL_PROTO (the plugin needs both); no row")
            continue
        if library == "rccl" and algorithm not in RCCL_ALGORITHMS:
            lines.append(f"# {where}: winner {config.label(baseline)}: RCCL's tuner applies "
                         f"{' and '.join(RCCL_ALGORITHMS)} only; no row")
            continue
        others = [f"{n}={v}" for n, v in config.values
                  if n not in TUNER_VARIABLES and v is not None and baseline.as_dict().get(n) != v]
        if others:
            lines.append(f"# {where}: also export {' '.join(others)} (not a tuner setting)")
        lines.append(",".join(str(x) for x in (collective, low, high, algorithm, protocol,
                                               channels, nodes, ranks, ANY, ANY)))
    return [piece for line in lines for piece in _fit(line)]


def _fit(line: str) -> list[str]:
    """A comment longer than the plugins read, as several comment lines."""
    if len(line.encode()) <= MAX_LINE or not line.startswith("#"):
        return [line]
    import textwrap

    return ["# " + piece for piece in textwrap.wrap(line[1:].strip(), MAX_LINE - 2,
                                                     break_on_hyphens=False)]


def tune_records(rows: Sequence[Row], baseline: Config, failed: dict[Config, str],
                 confidence: float) -> list[dict[str, Any]]:
    """One ``tune`` record per configuration and size, plus one per failed configuration.
    ``confidence`` is the family-wise level; each record's interval is at the corrected one."""
    records = []
    m = comparisons(rows)
    level = corrected_confidence(confidence, m)
    for row in rows:
        interval = row.interval
        records.append(TuneRecord(
            config=row.config.as_dict(), label=row.config.label(baseline),
            baseline=row.config == baseline, verdict=row.verdict, winner=row.winner,
            collective=row.collective, dtype=row.dtype, size_bytes=row.size_bytes,
            world_size=row.world_size, trials=row.trials,
            rounds=interval.rounds if interval else row.trials, time_us=row.time_us,
            algbw_gbs=row.algbw_gbs, busbw_gbs=row.busbw_gbs,
            ratio=interval.ratio if interval else 1.0,
            ratio_ci_low=interval.low if interval else None,
            ratio_ci_high=interval.high if interval else None,
            confidence=interval.confidence if interval else level, family_confidence=confidence,
            comparisons=m, correction=CORRECTION, ci_method=CI_METHOD,
            time_method=TIME_METHOD).to_dict())
    for config, reason in failed.items():
        records.append(TuneRecord(config=config.as_dict(), label=config.label(baseline),
                                  baseline=config == baseline, verdict="failed",
                                  reason=reason).to_dict())
    return records
