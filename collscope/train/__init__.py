"""`collscope train`: how much of a Llama training step is communication, and which DDP
settings hide it.

Library use, inside a process group you initialised::

    from collscope.runtime.dist import attach
    from collscope.train.config import TrainConfig
    from collscope.train.measure import train

    records = train(attach(), TrainConfig(preset="small", sweep={"comm_hook": ["none", "bf16"]}))

Torch and transformers are imported by the submodules that need them, not here, so the CLI
starts fast.
"""

from collscope.train.analysis import Bucket, comm_messages
from collscope.train.config import PRESETS, ModelSpec, TrainConfig

__all__ = ["PRESETS", "Bucket", "ModelSpec", "TrainConfig", "comm_messages"]
