"""torch.distributed calls whose names changed between torch releases, defined once.

torch 2.13 renamed the tensor forms of all_gather and reduce_scatter (``*_single``); older
releases only have ``all_gather_into_tensor`` / ``reduce_scatter_tensor``. Importing this
module imports torch.
"""

from __future__ import annotations

import torch.distributed as dist

all_gather_tensor = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter_tensor = (getattr(dist, "reduce_scatter_single", None)
                         or dist.reduce_scatter_tensor)
