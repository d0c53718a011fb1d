"""The nccl-tests text table: same header lines, columns, widths and footer (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collscope.records.bench import BenchResult

# A placement that does not exist (all_reduce has no out-of-place form in torch.distributed)
# prints N/A in each of its four columns, at their widths: rows keep nccl-tests' field count,
# so scripts that split on whitespace find every column where they expect it.
_MISSING_PLACEMENT = f"  {'N/A':>7}  {'N/A':>6}  {'N/A':>6}  {'N/A':>6}"


def fixed_width(value: float, width: int) -> str:
    """A number in ``width`` characters with as many decimals (2, 1, 0) as fit, as nccl-tests."""
    digits = len(str(int(value))) if value >= 1 else 0
    if digits < width - 2:
        return f"{value:{width}.2f}"
    if digits < width - 1:
        return f"{value:{width}.1f}"
    if digits < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def column_header() -> list[str]:
    return [
        "#                                                              out-of-place"
        "                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong ",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
        "      (us)  (GB/s)  (GB/s)         ",
    ]


def _placement(result: BenchResult | None) -> str:
    if result is None:
        return _MISSING_PLACEMENT
    body = (f"  {fixed_width(result.time_us, 7)}  {fixed_width(result.algbw_gbs, 6)}"
            f"  {fixed_width(result.busbw_gbs, 6)}")
    return body + ("    N/A" if result.wrong is None else f"  {result.wrong:6d}")


def row(out_of_place: BenchResult | None, in_place: BenchResult | None) -> str:
    first = out_of_place or in_place
    assert first is not None
    root = first.root if first.collective in ("broadcast", "reduce") else -1
    return (f"{first.size_bytes:12d}  {first.count:12d}  {first.dtype:>8s}  {first.op:>6s}  "
            f"{root:6d}{_placement(out_of_place)}{_placement(in_place)}")


@dataclass
class DeviceLine:
    rank: int
    pid: int
    host: str
    device: int
    bus: str
    name: str


def device_block(devices: Sequence[DeviceLine]) -> list[str]:
    lines = ["# Using devices"]
    for d in devices:
        lines.append(f"#  Rank {d.rank:2d} Group  0 Pid {d.pid:6d} on {d.host:>10s} device "
                     f"{d.device:2d} [{d.bus}] {d.name}")
    return lines


def wrong_total(results: Sequence[BenchResult]) -> int | None:
    """Mismatched elements over the results that were verified; None when none was (-c 0, or
    only placements that cannot be verified): nothing was checked, so nothing is OK."""
    checked = [r.wrong for r in results if r.wrong is not None]
    return sum(checked) if checked else None


def footer(results: Sequence[BenchResult]) -> list[str]:
    wrong = wrong_total(results)
    average = sum(r.busbw_gbs for r in results) / len(results) if results else 0.0
    bounds = ("N/A unchecked (no result was verified)" if wrong is None
              else f"{wrong} {'OK' if wrong == 0 else 'FAILED'}")
    return [
        f"# Out of bounds values : {bounds}",
        f"# Avg bus bandwidth    : {average:g} ",
        *budget_note(results),
        "#",
    ]


def budget_note(results: Sequence[BenchResult]) -> list[str]:
    """The sizes whose adaptive time budget ended before the precision target, with the
    95% CI half-width of the median they reached (a comment line: rows stay nccl-tests')."""
    short: dict[int, float | None] = {}
    for r in results:
        if r.budget_exhausted:
            previous = short.get(r.size_bytes)
            short[r.size_bytes] = max(filter(None, (previous, r.ci_halfwidth)), default=None)
    if not short:
        return []
    sizes = ", ".join(f"{size} B" + ("" if half is None else f" (+-{half * 100:.1f}%)")
                      for size, half in short.items())
    return [f"# Time budget ended before the precision target at: {sizes}"]
