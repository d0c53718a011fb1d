"""collscope watch's bootstrap: Python imports this at start-up in every process of the job.

`collscope watch` prepends this folder to PYTHONPATH (as OpenTelemetry's opentelemetry-instrument
does with its own folder), so this module is found as ``sitecustomize``. It first runs the
``sitecustomize`` that would have run without us (the next one on sys.path, if any), then
installs collscope's post-import hook, which arms the agent only when the process makes its
default process group. Nothing here imports torch; nothing here may raise.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _chain_user_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _install() -> None:
    try:
        from collscope.watch.hook import install

        install()
    except Exception as error:  # noqa: BLE001 (the user's process must start regardless)
        sys.stderr.write(f"collscope watch: agent not installed in pid {os.getpid()}: "
                         f"{error}\n")


_chain_user_sitecustomize()
_install()
