"""One shape for every command: `--json FILE` writes JSON Lines wherever it exists, `-o` is
`--output` wherever it exists, exit codes come from one enum, old spellings still parse and say
they are deprecated (once, on stderr), usage lines come from the configs."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from collscope import config_flags
from collscope.cli import build_parser, main
from collscope.errors import ExitCode
from tests.conftest import fixture_path


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by name, model's subcommands as "model fit" and so on."""
    def children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        found = {}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found.update(action.choices)
        return found

    found = {}
    for name, parser in children(build_parser()).items():
        below = children(parser)
        found.update({f"{name} {sub}": p for sub, p in below.items()} if below else {name: parser})
    return found


COMMANDS = _commands()


def test_all_fifteen_commands_are_walked():
    tops = {name.split()[0] for name in COMMANDS}
    assert tops == {"doctor", "bench", "train", "overlap", "monitor", "watch", "trace", "links",
                    "model", "tune", "hang", "report", "compare", "import"}
    assert len(tops) == 14   # with `train`'s `overlap`: the fifteen of the README's table


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_takes_a_file_and_writes_json_lines(name):
    [action] = [a for a in COMMANDS[name]._actions if "--json" in a.option_strings]
    assert action.metavar == "FILE", name
    assert "JSON Lines" in action.help, (name, action.help)
    # as --help shows it too: doctor's deprecated bare --json is not shown as "--json [FILE]"
    assert "--json FILE" in COMMANDS[name].format_help(), name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_o_is_output_wherever_it_exists(name):
    for action in COMMANDS[name]._actions:
        if "-o" in action.option_strings and action.help != argparse.SUPPRESS:  # not an old one
            assert "--output" in action.option_strings, (name, action.option_strings)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_help_states_exit_codes_from_the_one_enum(name):
    text = COMMANDS[name].format_help()
    said = text[text.index("exit codes:"):]
    numbers = {int(n) for n in re.findall(r"(?<![\w.+-])(\d{1,3})(?= [a-z(])", said)}
    assert numbers, (name, said)
    assert numbers <= {int(code) for code in ExitCode}, (name, numbers)


def test_the_top_level_help_lists_every_exit_code():
    text = " ".join(build_parser().format_help().split())
    for code in ExitCode:
        assert f"{int(code)} " in text[text.index("exit codes:"):], code


def test_old_spellings_are_hidden_parse_as_the_new_and_say_so_once(capsys):
    parser = build_parser()
    monitor = parser.parse_args(["monitor", "--jsonl", "a.jsonl", "--jsonl", "b.jsonl"])
    bench = parser.parse_args(["bench", "-o", "max"])
    assert monitor.json == "b.jsonl" and bench.ops == "max"
    err = capsys.readouterr().err.splitlines()
    assert err == ["collscope: --jsonl is deprecated, use --json (--jsonl still works)",
                   "collscope: -o is deprecated, use --op (-o still works)"]
    assert "--jsonl" not in COMMANDS["monitor"].format_help()
    assert "-o OP" not in COMMANDS["bench"].format_help()


def test_generated_usage_names_every_flag_of_the_config():
    usage = COMMANDS["watch"].format_usage()
    for flag in ("--json FILE", "--interval S", "--on-hang report|kill", "--dump-dir DIR",
                 "-- COMMAND"):
        assert flag in usage
    assert "--json FILE" in COMMANDS["monitor"].format_usage()


def _bundle() -> str:
    return str(fixture_path("tool-outputs", "nvidia-smi_query-gpu_csv_h200_8gpu.txt"))


def test_doctor_json_file_writes_run_findings_and_a_node(tmp_path, capsys):
    out = tmp_path / "d.jsonl"
    code = main(["doctor", "--from", _bundle(), "--json", str(out)])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "run" and kinds[-1] == "doctor_node" and "doctor_finding" in kinds
    assert records[0]["command"] == "doctor" and records[0]["env"] == {}   # another machine's
    levels = [r["level"] for r in records if r["kind"] == "doctor_finding"]
    assert code == (ExitCode.FOUND if "fail" in levels else ExitCode.OK)
    assert "collscope doctor" in capsys.readouterr().out        # the text report as well


def test_doctor_bare_json_keeps_the_old_document(capsys, monkeypatch):
    # said once per process: another test of this worker may have said it already
    monkeypatch.setattr(config_flags, "_SAID", set())
    main(["doctor", "--from", _bundle(), "--json"])
    captured = capsys.readouterr()
    assert set(json.loads(captured.out)) == {"findings", "inventory"}
    assert "--json without FILE is deprecated" in captured.err


def test_report_json_carries_the_verdicts_and_nothing_else_on_stdout(tmp_path, capsys):
    watch = fixture_path("own", "watch", "watch_4ranks_gloo_stall_rank2.jsonl")
    assert main(["report", str(watch), "-o", str(tmp_path / "r.html"), "--json", "-"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    hang = next(r for r in records if r["kind"] == "report_headline" and r["section"] == "hang")
    assert hang["level"] == "fail" and "rank 2" in hang["text"]
    assert records[-1]["kind"] == "report_input" and records[-1]["counts"]["hang"] == 2
