"""Errors that the CLI turns into exit codes without a traceback."""


class UsageError(ValueError):
    """Bad input from the user: the CLI prints the message on one line and exits 2.

    The message names the flag and what it accepts, e.g.
    "-b/--min-bytes: '12Q' is not a size; use bytes with an optional K, M, G or T suffix".
    """


class RankFailure(RuntimeError):
    """A collective failed or timed out on this rank (a peer died, hung, or the network broke)."""


class OutputError(RuntimeError):
    """An output file failed while being written (disk full, a mount gone): the CLI prints the
    message on one line (flag, path, why, how much was written) and exits 1. Reporters that
    write while ranks measure catch it, stop writing that file and say it at the end, so no
    peer is left waiting and nothing measured is lost without a word."""
