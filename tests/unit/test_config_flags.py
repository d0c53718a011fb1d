"""Config dataclasses as the one source of their flags (collscope.config_flags)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from collscope.config_flags import (
    REQUIRED,
    ConfigError,
    add_flags,
    config_from,
    flag,
    flag_of,
    invalid,
)
from collscope.errors import UsageError
from collscope.units import parse_size


@dataclass
class Sample:
    size_bytes: int = flag(1024, "-b", "--size", parse=parse_size, shown="1K",
                           help="message size")
    iters: int = flag(5, "-n", "--iters", type=int, help="timed iterations")
    gain: float = flag(0.02, "--gain", type=float, to_field=lambda pct: pct / 100, shown="2",
                       metavar="PCT", help="minimum gain in %")
    check: bool = flag(True, "--no-check", negate=True, help="skip the check")
    name: str = "fixed"

    def __post_init__(self) -> None:
        if self.iters < 1:
            raise invalid(self, "iters", f"{self.iters} must be >= 1")
        if self.name == "":
            raise invalid(self, "name", "must not be empty")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="x")
    add_flags(parser, Sample)
    return parser


@pytest.mark.parametrize("argv, expected", [
    ([], Sample()),
    (["-b", "4M", "-n", "3"], Sample(size_bytes=4 << 20, iters=3)),
    (["--gain", "5", "--no-check"], Sample(gain=0.05, check=False)),
])
def test_flags_build_the_config(argv, expected):
    assert config_from(Sample, _parser().parse_args(argv)) == expected


def test_help_shows_the_dataclass_default():
    text = " ".join(_parser().format_help().split())
    assert "-b SIZE, --size SIZE message size (default 1K)" in text
    assert "--gain PCT minimum gain in % (default 2)" in text
    assert "-n ITERS, --iters ITERS timed iterations (default 5)" in text
    assert "--no-check skip the check" in text and "(default True)" not in text


def test_errors_name_the_field_and_show_its_flag():
    with pytest.raises(ConfigError) as error:
        config_from(Sample, _parser().parse_args(["-n", "0"]))
    assert (error.value.field, error.value.flag) == ("iters", "-n/--iters")
    assert str(error.value) == "-n/--iters: 0 must be >= 1"
    with pytest.raises(ConfigError, match="^name: must not be empty$"):
        Sample(name="")                                    # a field without a flag
    assert flag_of(Sample, "name") is None


def test_a_bad_size_names_the_flag():
    with pytest.raises(UsageError, match="^-b/--size: '1Q'"):
        config_from(Sample, _parser().parse_args(["-b", "1Q"]))


@dataclass(kw_only=True)
class WithPositionals:
    model: str = flag(REQUIRED, "model", metavar="MODEL.json", help="a model file")
    inputs: list[str] = flag(REQUIRED, "inputs", nargs="+", metavar="INPUT", help="inputs")
    json: str | None = flag(None, "--json", metavar="FILE", help="records")


def test_a_field_without_a_dash_is_a_positional_argument(
        capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="x")
    add_flags(parser, WithPositionals)
    config = config_from(WithPositionals, parser.parse_args(["m.json", "a.log", "b.log"]))
    assert config == WithPositionals(model="m.json", inputs=["a.log", "b.log"])
    with pytest.raises(SystemExit):
        parser.parse_args(["m.json"])            # INPUT is required (nargs "+")
    assert "INPUT" in capsys.readouterr().err
