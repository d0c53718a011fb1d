"""Arming the agent when (and only when) a process makes its default process group.

A meta-path finder waits for ``torch.distributed.distributed_c10d`` to be imported (so
processes that never import torch pay nothing and never import it), lets it load, then wraps
its ``init_process_group``: just before the user's call, the Flight Recorder's ring gets a size
under the name the running torch reads (collscope.runtime.flight_recorder), and after the call
returns, the agent starts on its own daemon thread. ``torch.distributed`` re-exports the wrapped
function, because it copies the name after this module has loaded. The torchrun agent and
data-loader workers import torch but make no default group, so nothing starts there.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

TARGET = "torch.distributed.distributed_c10d"
_WRAPPED = "__collscope_watch__"


def wrap(module: ModuleType) -> None:
    """Wrap ``module.init_process_group`` once: the agent starts after it returns."""
    original: Callable[..., Any] = module.init_process_group
    if getattr(original, _WRAPPED, False):
        return

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        from collscope.watch.agent import start_quietly, switch_on_flight_recorder

        switch_on_flight_recorder()     # before the group (and so its ring) exists
        result = original(*args, **kwargs)
        start_quietly()
        return result

    setattr(init_process_group, _WRAPPED, True)
    vars(module)["init_process_group"] = init_process_group   # a module's attributes are its dict


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: hands back the real spec of TARGET with its exec_module
    followed by :func:`wrap`."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            try:
                wrap(module)
            except Exception as error:  # noqa: BLE001 (never break the user's import)
                sys.stderr.write(f"collscope watch: agent not armed: {error}\n")

        loader.exec_module = exec_module  # type: ignore[method-assign]  # wrapped on purpose
        return spec


def install() -> None:
    """Arm on init_process_group: now if torch.distributed is loaded, else at its import."""
    loaded = sys.modules.get(TARGET)
    if loaded is not None:
        wrap(loaded)
    elif not any(isinstance(f, _PostImportFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PostImportFinder())
