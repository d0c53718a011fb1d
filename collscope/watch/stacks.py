"""A stall's verdict from the ranks' main-thread stacks alone (no Flight Recorder dumps).

Used where the job's torch records nothing for its backend (gloo before torch 2.8, or a
buffer set to 0): each rank dumped ``stack_rank_<R>.json`` (collscope.watch.dumps) and the
collecting rank named the silent ones in ``no_answer.json``. A rank whose main thread waits in
a collective (collscope.watch.waits.wait_site) waits on someone; a rank that is elsewhere (a
sleep, data loading, a deadlock in Python) or that did not answer is the culprit. Without
sequence numbers a rank that waits in a *different* collective is only told apart by its
call site; what is lost against `collscope hang` on Flight Recorder dumps: which collective
number, per-group tables, the ranks' lateness.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from collscope.records.watch import StackVerdictRecord
from collscope.watch.waits import wait_site

METHOD = ("each rank's main-thread Python stack at the stall (sys._current_frames): a rank "
          "inside a torch.distributed collective (or DDP's backward) waits; a rank elsewhere, "
          "or one that wrote no stack, is named; no Flight Recorder for this backend")


@dataclass
class RankState:
    rank: int
    waits_in: str | None            # the collective, None when not in one
    at: str                         # the caller's place, or the innermost frame


def _state(stack: dict[str, Any]) -> RankState:
    frames = [(str(f.get("filename", "?")), str(f.get("name", "?")), int(f.get("line") or 0))
              for f in reversed(stack.get("frames", []))]          # innermost first
    site = wait_site(frames, bool(stack.get("ddp")))
    if site is not None:
        return RankState(int(stack["rank"]), site.collective, site.caller)
    top = frames[0] if frames else ("?", "?", 0)
    return RankState(int(stack["rank"]), None, f"{top[0]}:{top[2]} in {top[1]}")


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks))


def read_folder(folder: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The stacks and the silent ranks a stall left in ``folder`` (unreadable files skipped:
    they count as not answered)."""
    stacks, silent = [], []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        path = os.path.join(folder, name)
        try:
            if name.startswith("stack_rank_") and name.endswith(".json"):
                with open(path, encoding="utf-8") as handle:
                    stacks.append(json.load(handle))
            elif name == "no_answer.json":
                with open(path, encoding="utf-8") as handle:
                    silent = [int(r) for r in json.load(handle).get("ranks", [])]
        except (OSError, ValueError, TypeError, KeyError):
            continue
    return stacks, silent


def judge(stacks: list[dict[str, Any]], no_answer: list[int],
          hosts: dict[int, str] | None = None) -> StackVerdictRecord:
    """Who the others wait on, from the stacks (pure)."""
    states = sorted((_state(s) for s in stacks if "rank" in s), key=lambda s: s.rank)
    waiting: dict[str, list[int]] = {}
    elsewhere: dict[int, str] = {}
    for state in states:
        if state.waits_in is None:
            elsewhere[state.rank] = state.at
        else:
            where = f"{state.waits_in} at {state.at}" if state.at else state.waits_in
            waiting.setdefault(where, []).append(state.rank)
    culprits = sorted(set(elsewhere) | set(no_answer))

    def name(rank: int) -> str:
        host = (hosts or {}).get(rank)
        return f"rank {rank} ({host})" if host else f"rank {rank}"

    waits = "; ".join(f"rank(s) {_ranks(r)} wait in {w}" for w, r in waiting.items())
    if culprits:
        parts = [f"{name(r)}'s main thread is not in a collective (at {elsewhere[r]})"
                 for r in sorted(elsewhere)]
        if no_answer:
            parts.append(f"rank(s) {_ranks(sorted(no_answer))} wrote no stack (dead, or a "
                         "main thread holding the GIL)")
        title = f"HANG: {'; '.join(parts)}" + (f". {waits[0].upper()}{waits[1:]} on it"
                                               if waits else "")
    elif len(waiting) > 1:
        title = f"HANG: the ranks wait in different collectives: {waits}"
    elif waiting:
        title = (f"HANG: every rank waits in the same collective ({waits}): no rank is "
                 "elsewhere: a peer or transport failure, or a call longer than --hang-after")
    else:
        title = "HANG: no rank left a readable stack"
    return StackVerdictRecord(time.time(), culprits, waiting,
                              {str(r): at for r, at in sorted(elsewhere.items())},
                              sorted(no_answer), title, METHOD)
