"""Several independent tests interleaved in one capture, told apart by their ``srun -l`` task
labels (``0: ...``, `` 1: ...``).

nccl-tests built without MPI and started by ``srun -l -n 2 ./all_reduce_perf`` runs one whole
test per task: each task prints its own parameter line, device block and table, and the
launcher interleaves them line by line. Read as one log that is one test with every size twice
and every rank printed twice. When two or more task labels each carry a table header of their
own, the log is split: one part per such label, holding that label's lines and the unlabelled
ones (a shell prompt before the job belongs to every task). Lines of other labels (a task that
printed only noise) go to the first part. Other lines are blanked, not removed, so that line
numbers stay those of the file. With MPI only task 0 prints a table: nothing is split.
"""

from __future__ import annotations

import re

_LABEL = re.compile(r"\s*(\d+): ")
_HEADER = re.compile(r"\s*#?\s*size\s+count\s+type\b")


def split_tasks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(label, lines of that task) per task that printed a table header; empty when fewer
    than two did (nothing to split)."""
    labels: list[str | None] = []
    with_header: list[str] = []
    for line in lines:
        match = _LABEL.match(line)
        label = match.group(1) if match else None
        labels.append(label)
        if label is not None and label not in with_header and \
                _HEADER.match(line, match.end() if match else 0):
            with_header.append(label)
    if len(with_header) < 2:
        return []
    tasks = sorted(with_header, key=int)
    parts = []
    for task in tasks:
        parts.append((task, [line if label is None or label == task
                             or (label not in tasks and task == tasks[0]) else ""
                             for line, label in zip(lines, labels, strict=True)]))
    return parts
