"""`collscope tune --launch` wrapper that plants a test-only fault in one configuration.

usage: plant_fault_launch.py NAME=VALUE FAULT COMMAND...

When the trial's environment has NAME=VALUE, COLLSCOPE_FAULT_INJECT=FAULT (collscope/testing/
faults.py, e.g. hang@1:1) is added; then COMMAND runs in this process's place.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> None:
    (name, _, value), fault, command = argv[0].partition("="), argv[1], argv[2:]
    env = dict(os.environ)
    if env.get(name) == value:
        env["COLLSCOPE_FAULT_INJECT"] = fault
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
