"""Descriptor 1 to stderr while libraries print, collscope's own sys.stdout to the real stdout
(runtime/stdio.py): what each stream receives, nesting, and the state restored after."""

from __future__ import annotations

import os
import subprocess
import sys

from collscope.runtime.stdio import libraries_to_stderr
from tests.helpers import REPO

SCRIPT = """
import os
from collscope.runtime.stdio import libraries_to_stderr
print("before", flush=True)
with libraries_to_stderr():
    os.write(1, b"a library's line\\n")
    print("ours")
    with libraries_to_stderr():               # nested: a rank's doctor probes
        os.write(1, b"nested library line\\n")
        print("ours, nested")
    os.write(1, b"still the library's\\n")
os.write(1, b"descriptor 1 is stdout again\\n")
print("and sys.stdout too")
"""


def test_a_process_keeps_its_output_on_stdout_and_the_libraries_on_stderr():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["before", "ours", "ours, nested",
                                        "descriptor 1 is stdout again", "and sys.stdout too"]
    assert proc.stderr.splitlines() == ["a library's line", "nested library line",
                                        "still the library's"]


def test_a_stdout_that_is_not_descriptor_1_is_left_as_it_is(capfd):
    # Under pytest's capture sys.stdout is a file of its own: only descriptor 1 moves.
    stream = sys.stdout
    with libraries_to_stderr():
        assert sys.stdout is stream
        os.write(1, b"library\n")
        print("ours")
    os.write(1, b"after\n")
    out, err = capfd.readouterr()
    assert out.splitlines() == ["ours", "after"] and err == "library\n"
