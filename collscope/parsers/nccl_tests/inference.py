"""What a finished block measured: collective, world size, and the consistency of the
footer with the rows (see the package docstring for the order of trust)."""

from __future__ import annotations

from collscope.collectives.table import COLLECTIVES, bus_factor
from collscope.parsers.nccl_tests.command_line import collective_of_program, collective_word
from collscope.parsers.nccl_tests.records import (
    REDUCTION_OPS,
    ParsedTest,
    Placement,
    Row,
    element_size,
    error_tolerance,
    parse_int,
    printed_unit,
)


def _chunk_factor(rows: list[Row]) -> int | None:
    """n when every row has size = count x element size x n (1 for unchunked), else None."""
    factors: set[int] = set()
    for row in rows:
        size = element_size(row.dtype)
        if size is None or row.count <= 0:
            continue
        if row.size_bytes % (row.count * size):
            return None
        factors.add(row.size_bytes // (row.count * size))
    return factors.pop() if len(factors) == 1 else None


def _best_placement(rows: list[Row]) -> Placement | None:
    best: Placement | None = None
    for row in rows:
        for _, placement in row.placements():
            if placement.algbw_gbs > 0 and (best is None or placement.algbw_gbs > best.algbw_gbs):
                best = placement
    return best


def guess_collective(rows: list[Row]) -> tuple[str | None, str]:
    """The collective a table's columns imply (see the module docstring), and why."""
    if not rows:
        return None, "no rows"
    redops = {row.redop.lower() for row in rows}
    reducing = bool(redops) and redops <= REDUCTION_OPS
    no_op = redops == {"none"}
    roots = {row.root for row in rows if row.root is not None}
    rooted = bool(roots) and all(root >= 0 for root in roots)
    chunk = _chunk_factor(rows)
    best = _best_placement(rows)
    ratio = best.busbw_gbs / best.algbw_gbs if best else None
    in_place_unchecked = (
        any(row.out_of_place and row.out_of_place.checked for row in rows)
        and all(row.in_place is not None and not row.in_place.checked for row in rows))
    if chunk is not None and chunk > 1:
        if reducing:
            return "reduce_scatter", f"chunked counts (size = count x type x {chunk}), redop " \
                                     f"{'/'.join(sorted(redops))}"
        if no_op:
            if in_place_unchecked:
                return "alltoall", f"chunked counts (x{chunk}), redop none, in-place not verified"
            return "all_gather", f"chunked counts (x{chunk}), redop none, in-place verified " \
                                 "(alltoall would print N/A)"
        return None, f"chunked counts but redop {sorted(redops)}"
    if chunk == 1:
        if rooted:
            if reducing:
                return "reduce", f"root {sorted(roots)} and a reduction"
            if no_op:
                return "broadcast", f"root {sorted(roots)} and redop none"
        elif reducing:
            if ratio is None:
                return "all_reduce", "unchunked, a reduction, root -1 (no bandwidth to check)"
            if ratio > 1.1:
                return "all_reduce", f"unchunked, a reduction, busbw/algbw {ratio:.3f} > 1"
            if in_place_unchecked:
                return "sendrecv", f"unchunked, busbw/algbw {ratio:.3f}, in-place not verified"
            return "all_reduce", f"unchunked, busbw/algbw {ratio:.3f} (2 ranks: factor 1)"
        return None, f"unchunked counts, redop {sorted(redops)}, roots {sorted(roots)}"
    return None, "element size unknown or counts inconsistent"


def world_size_from_ratio(rows: list[Row], collective: str) -> int | None:
    """The one world size whose bus factor reproduces every printed busbw from its algbw."""
    if collective not in COLLECTIVES or bus_factor(collective, 4) == 1.0:
        return None
    best = _best_placement(rows)
    if best is None or best.algbw_gbs < 0.5:
        return None
    ratio = best.busbw_gbs / best.algbw_gbs
    limit = 2.0 if collective == "all_reduce" else 1.0
    if ratio >= limit or ratio <= 0:
        return None
    estimate = round(limit / (limit - ratio))
    fits = [n for n in range(max(1, estimate - 3), estimate + 4)
            if _busbw_fits(rows, collective, n)]
    return fits[0] if len(fits) == 1 else None


def _busbw_fits(rows: list[Row], collective: str, world_size: int) -> bool:
    factor = bus_factor(collective, world_size)
    for row in rows:
        for _, p in row.placements():
            slack = (printed_unit(p.algbw_text) * factor + printed_unit(p.busbw_text)) / 2
            if abs(p.algbw_gbs * factor - p.busbw_gbs) > slack + 1e-9:
                return False
    return True


def decide(test: ParsedTest) -> None:
    """Fill collective, world size and consistency warnings of a finished block."""
    command = test.command
    if not test.program and command and command.program:
        test.program = command.program
    guessed, reason = guess_collective(test.rows)
    if test.program:
        test.collective = collective_of_program(test.program)
        test.collective_source = f"program name {test.program}"
        if test.collective is None:
            test.warnings.append(f"test {test.program}: not a collective collscope knows; "
                                 "busbw cannot be checked")
    else:
        word = None
        for cmd in test.commands:
            word = collective_word(cmd.text)
            if word:
                break
        if word:
            test.collective = word[0]
            test.collective_source = f"word {word[1]!r} of the command line (guess)"
            test.warnings.append(f"line {test.first_line}: no program name; collective "
                                 f"{word[0]} guessed from the word {word[1]!r} of the command "
                                 "line")
        elif guessed and test.rows:
            test.collective = guessed
            test.collective_source = f"columns (guess: {reason})"
            test.warnings.append(f"line {test.rows[0].line}: no program name; collective "
                                 f"{guessed} guessed from the columns: {reason}")
        elif test.rows:
            test.warnings.append(f"line {test.rows[0].line}: no program name and the columns "
                                 f"do not tell the collective ({reason})")
    if (test.collective in COLLECTIVES and guessed and test.rows
            and COLLECTIVES[guessed].chunked != COLLECTIVES[test.collective].chunked):
        test.warnings.append(f"line {test.rows[0].line}: the columns look like {guessed} "
                             f"({reason}) but the log says {test.collective}")
    _decide_world_size(test)
    _check_footer(test)
    ranks = [device.rank for device in test.devices]
    if len(set(ranks)) < len(ranks):
        duplicated = sorted({r for r in ranks if ranks.count(r) > 1})
        test.warnings.append(f"line {test.devices[0].line}: ranks {duplicated} printed more "
                             "than once (nccl-tests built without MPI, run by a launcher? each "
                             "process then runs its own test)")


def _decide_world_size(test: ParsedTest) -> None:
    table_n: int | None = None
    table_method = ""
    if test.collective in COLLECTIVES and test.rows:
        spec = COLLECTIVES[test.collective]
        chunk = _chunk_factor(test.rows)
        if spec.chunked and chunk is not None and chunk >= 1:
            table_n, table_method = chunk, f"size / (count x element size) of {test.collective}"
        else:
            table_n = world_size_from_ratio(test.rows, test.collective)
            table_method = f"busbw/algbw = bus factor of {test.collective}"
    test.table_world_size = table_n
    ranks = {device.rank for device in test.devices}
    command = test.command
    if ranks and not test.devices_elided:
        test.world_size = len(ranks)
        test.world_size_method = f"{len(ranks)} ranks listed in the device block"
    elif ranks:
        test.world_size = max(ranks) + 1
        test.world_size_method = "highest rank in the elided device block + 1"
    elif command and command.launcher_ranks:
        threads = (test.params.n_thread if test.params and test.params.n_thread else
                   parse_int(command.test_args.get("-t", "1")) or 1)
        gpus = (test.params.n_gpus if test.params and test.params.n_gpus else
                parse_int(command.test_args.get("-g", "1")) or 1)
        test.world_size = command.launcher_ranks * threads * gpus
        test.world_size_method = (f"{command.launcher} ranks {command.launcher_ranks} x nThread "
                                  f"{threads} x nGpus {gpus} (command line)")
    elif table_n:
        test.world_size = table_n
        test.world_size_method = table_method + " (no device block)"
    if test.world_size and table_n and table_n != test.world_size and test.rows:
        test.warnings.append(
            f"line {test.rows[0].line}: the table implies {table_n} ranks ({table_method}) but "
            f"the world size is {test.world_size} ({test.world_size_method})")


def _check_footer(test: ParsedTest) -> None:
    footer = test.footer
    failing = [row for row in test.rows for _, p in row.placements() if failed(p, row.dtype,
                                                                             test.world_size)]
    if footer.out_of_bounds and not failing and test.rows:
        test.warnings.append(
            f"line {footer.out_of_bounds_line}: the footer counts {footer.out_of_bounds} "
            "out-of-bounds values but no printed row shows an error over the limit (rows left "
            "out of the log?)")
    if footer.out_of_bounds == 0 and failing:
        test.warnings.append(
            f"line {footer.out_of_bounds_line}: the footer says 0 out-of-bounds values but "
            f"rows at lines {sorted({row.line for row in failing})} show errors")


def failed(placement: Placement, dtype: str, world_size: int | None) -> bool:
    """Whether nccl-tests counts this placement as out of bounds."""
    if placement.over_threshold or (placement.wrong or 0) > 0:
        return True
    if placement.error is not None:
        limit = error_tolerance(dtype, world_size)
        return limit is not None and placement.error > limit
    return False
