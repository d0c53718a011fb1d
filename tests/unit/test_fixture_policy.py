"""The repository carries the data its tests read: nothing points outside the clone, and every
fixture folder says where its files came from."""

from __future__ import annotations

import subprocess

from tests.conftest import FIXTURES, REPO

# Folders of real third-party data (SOURCES.md: origin, licence) and of collscope's own samples
# (README.md: what each exercises).
REAL_DATA = ["flight-recorder", "nccl-ras", "nccl-tests-logs", "tool-outputs", "traces"]


def test_every_real_data_folder_says_where_its_files_came_from() -> None:
    for folder in REAL_DATA:
        sources = FIXTURES / folder / "SOURCES.md"
        assert sources.is_file(), f"{folder} has no SOURCES.md"
        assert len(list((FIXTURES / folder).iterdir())) > 1, f"{folder} holds no data"


def test_nothing_in_the_repository_refers_to_a_folder_beside_the_clone() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                             check=True, timeout=60).stdout.split()
    beside = "../" + "shared"          # spelled in two parts so this file does not match itself
    offenders = []
    for name in tracked:
        path = REPO / name
        if path.suffix in (".py", ".md", ".toml", ".cfg", ".txt", "") and path.is_file():
            if beside in path.read_text(encoding="utf-8", errors="replace"):
                offenders.append(name)
    assert offenders == []
