"""Shell command lines of a log: the *_perf program, the launcher's rank count, the
environment it sets and the test's options."""

from __future__ import annotations

import re
import shlex

from collscope.collectives.table import canonical_name
from collscope.parsers.nccl_tests import patterns
from collscope.parsers.nccl_tests.records import CommandLine, parse_int

_ENV_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)=(.*)\Z", re.S)


def parse_command_line(text: str, line: int = 0) -> CommandLine:
    """A shell command line: program, launcher rank count, environment it sets, test options."""
    try:
        argv = shlex.split(text, comments=False, posix=True)
    except ValueError:
        argv = text.split()
    command = CommandLine(line=line, text=text, argv=argv)
    program_at = None
    for i, token in enumerate(argv):
        base = token.rstrip("/").rsplit("/", 1)[-1]
        if patterns.PERF_BINARY.match(base) and not base.endswith(":"):
            command.program, program_at = base, i
            break
    before = argv if program_at is None else argv[:program_at]
    # Leading NAME=VALUE assignments, then the launcher and its options.
    i = 0
    while i < len(before) and (assignment := _ENV_ASSIGNMENT.match(before[i])):
        name, value = assignment.groups()
        command.env[name] = value
        i += 1
    if i < len(before) and before[i].rsplit("/", 1)[-1] in patterns.LAUNCHERS:
        command.launcher = before[i].rsplit("/", 1)[-1]
    nodes = per_node = None
    j = i
    while j < len(before):
        token = before[j]
        nxt = before[j + 1] if j + 1 < len(before) else ""
        if token == "-x" and (assignment := _ENV_ASSIGNMENT.match(nxt)):
            name, value = assignment.groups()
            command.env[name] = value
            j += 2
            continue
        if token in ("-genv", "-env") and nxt and j + 2 < len(before):
            command.env[nxt] = before[j + 2]
            j += 3
            continue
        if token.startswith("--export="):
            _parse_export(token.removeprefix("--export="), command.env)
        elif token in ("-np", "--np", "-n", "--ntasks", "-c") and parse_int(nxt) is not None:
            if token != "-c" or command.launcher in ("mpirun", "mpiexec"):
                command.launcher_ranks = parse_int(nxt)
        elif token.startswith("--ntasks="):
            command.launcher_ranks = parse_int(token.partition("=")[2])
        elif re.fullmatch(r"-n\d+", token):
            command.launcher_ranks = parse_int(token[2:])
        elif token == "-N" and command.launcher in ("mpirun", "mpiexec", "orterun", "prterun"):
            per_node = parse_int(nxt)        # Open MPI: processes per node
        elif token in ("-N", "--nodes") and parse_int(nxt) is not None:
            nodes = parse_int(nxt)
        elif re.fullmatch(r"-N\d+", token) or token.startswith("--nodes="):
            nodes = parse_int(re.sub(r"^(-N|--nodes=)", "", token))
        elif token.startswith("--ntasks-per-node="):
            per_node = parse_int(token.partition("=")[2])
        elif token == "--ntasks-per-node" and parse_int(nxt) is not None:
            per_node = parse_int(nxt)
        j += 1
    if command.launcher_ranks is None and nodes and per_node:
        command.launcher_ranks = nodes * per_node
    if program_at is not None:
        args = argv[program_at + 1:]
        k = 0
        while k < len(args):
            token = args[k]
            if token.startswith("-") and len(token) > 1:
                if "=" in token:
                    key, _, value = token.partition("=")
                    command.test_args[key] = value
                elif len(token) > 2 and not token.startswith("--") and token[1].isalpha():
                    command.test_args[token[:2]] = token[2:]    # -g8
                elif k + 1 < len(args) and not args[k + 1].startswith("-"):
                    command.test_args[token] = args[k + 1]
                    k += 1
                else:
                    command.test_args[token] = ""
            elif token in ("|", ">", ">>", "2>&1", "&&", ";", "|&"):
                break
            k += 1
    return command


def _parse_export(value: str, env: dict[str, str]) -> None:
    last: str | None = None
    for part in value.split(","):
        match = _ENV_ASSIGNMENT.match(part)
        if match:
            last = match.group(1)
            env[last] = match.group(2)
        elif part in ("ALL", "NONE", "NIL", ""):
            continue
        elif last is not None:
            env[last] += "," + part


def collective_of_program(program: str | None) -> str | None:
    if not program:
        return None
    match = patterns.PERF_BINARY.match(program)
    stem = match.group(1) if match else program
    return canonical_name(stem)


def collective_word(text: str) -> tuple[str, str] | None:
    """A collective's name used as a word of a command line (a script or log file name):
    "rccl-test-allreduce-multi.sh" -> all_reduce. Options (``-o sum``) are not looked at."""
    best: tuple[str, str] | None = None
    for token in text.split():
        if token.startswith("-"):
            continue
        for word in re.split(r"[^A-Za-z0-9_]+", token):
            parts = [part for part in word.split("_") if part]
            for length in (3, 2, 1):
                for start in range(len(parts) - length + 1):
                    candidate = "_".join(parts[start:start + length])
                    name = canonical_name(candidate)
                    if name and (best is None or len(candidate) > len(best[1])):
                        best = (name, candidate)
    return best
