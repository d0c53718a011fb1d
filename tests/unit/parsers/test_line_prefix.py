"""parsers.line_prefix: launcher prefixes stripped from tool outputs, indentation kept, real
outputs without a prefix left as they are."""

from __future__ import annotations

import pytest

from collscope.parsers.decode import decode_capture
from collscope.parsers.line_prefix import strip_launcher_prefix
from tests.conftest import fixture_path

AMD_STATIC = "GPU: 0\n    ASIC:\n        MARKET_NAME: MI308X\n        DEVICE_ID: 0x74a2\n\n"


@pytest.mark.parametrize("prefix", ["0: ", " 7: ", "[1,0]<stdout>:",
                                    "2025-01-02T03:04:05.123Z ", "Jan  2 03:04:05 ",
                                    "Jan 02 03:04:05 node1 bash[1234]: ",
                                    "2025-01-02T03:04:05Z 0: "])
def test_prefix_stripped_and_indentation_kept(prefix):
    lines = AMD_STATIC.split("\n")[:-1]
    prefixed = "".join(prefix + line + "\n" if line else "\n" for line in lines)
    text, warning = strip_launcher_prefix(prefixed)
    assert text == AMD_STATIC
    assert warning is not None and "stripped from 4 lines" in warning


def test_a_few_prefixed_lines_are_not_a_prefix():
    text = "index, name\n0: odd line\n1, B\n2, C\n3, D\n4, E\n5, F\n6, G\n7, H\n8, I\n"
    assert strip_launcher_prefix(text) == (text, None)


def test_real_tool_outputs_have_no_prefix_to_strip():
    folder = fixture_path("tool-outputs")
    for path in sorted(folder.iterdir()):
        if path.suffix in (".txt", ".json", ".csv"):
            text = decode_capture(path.read_bytes())
            assert strip_launcher_prefix(text) == (text, None), path.name
