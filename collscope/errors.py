"""Errors that the CLI turns into exit codes without a traceback, and the exit codes."""

from enum import IntEnum


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


class ExitCode(IntEnum):
    """Every exit code collscope returns, with what it means across commands (each command's
    --help says which it uses and what 1 means there). Scripts may rely on these."""

    OK = 0              # done, nothing found (or nothing failed)
    FOUND = 1           # a rank failed or timed out, a check failed, a regression, a hang found
    USAGE = 2           # bad input: one line names the flag or file and what is accepted
    VERIFY = 3          # no trustworthy result: bench verification failed, hang dumps empty
    HANG_KILLED = 124   # watch --on-hang kill ended the job after a stall (as timeout(1) does)
    INTERRUPTED = 130   # Ctrl-C (128 + SIGINT)
    PIPE_CLOSED = 141   # the reader of stdout went away (128 + SIGPIPE), as `| head` does


EXIT_MEANINGS = {
    ExitCode.OK: "ok", ExitCode.FOUND: "a rank failed or timed out, or the command found what "
    "it looks for (a failed check, a regression, a hang)", ExitCode.USAGE: "bad input",
    ExitCode.VERIFY: "no trustworthy result (bench: wrong values; hang: every dump empty)",
    ExitCode.HANG_KILLED: "watch --on-hang kill ended the job",
    ExitCode.INTERRUPTED: "interrupted", ExitCode.PIPE_CLOSED: "stdout's reader went away"}


def exit_codes_help() -> str:
    """The exit codes of every command, as the top-level --help and the README list them."""
    return "exit codes: " + "; ".join(f"{int(code)} {EXIT_MEANINGS[code]}" for code in ExitCode)
