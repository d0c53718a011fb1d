"""Every doctor rule, one module per area, registered in the order the report reads them.

How to add a rule: in the module of its area, decorate a function ``Facts -> Iterable[Verdict]``
with ``@rule("area.name", "area", '''explanation printed by --explain''')`` (``rule`` and
``Verdict`` come from ``collscope.doctor.rules.registry``). Each Verdict carries a level (ok,
info, warn, fail), a title, the detail (what was seen, from which file or tool) and the fix (a
command or setting). A new area needs its name in ``registry.AREAS`` and its module in the
import list below; a finding computed outside ``run_checks`` (across nodes) is registered with
``register_external`` so that --explain knows it. The registry's names are imported from
``collscope.doctor.checks``, the entry point that loads this package.
"""

from __future__ import annotations

# Imported for their registrations; the order is the order of RULES (and of the report).
# isort: off
from collscope.doctor.rules import (  # noqa: F401
    gpu,
    topology,
    host,
    network,
    ucx,
    nccl,
    env,
    selftest,
    tools,
    cluster,
)
# isort: on
