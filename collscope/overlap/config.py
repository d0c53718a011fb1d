"""`collscope overlap` configuration: its flags (one dataclass), validated on construction, and
the defaults by device (pure: no torch)."""

from __future__ import annotations

from dataclasses import dataclass

from collscope.config_flags import (
    backend_flag,
    check_choice,
    flag,
    invalid,
    json_flag,
    timeout_flag,
)
from collscope.errors import UsageError
from collscope.units import parse_size

# Defaults by device: a matmul and a message that take comparable time there.
DEFAULT_DIM = {"cpu": 512, "gpu": 8192}
DEFAULT_BYTES = {"cpu": 4 * 1024**2, "gpu": 256 * 1024**2}


def dim_for_flops(flops: float) -> int:
    """Side of the square matmul (2 n^3 floating-point operations) closest to ``flops``."""
    return max(1, round((flops / 2) ** (1 / 3)))


def parse_flops(text: str, label: str = "--flops") -> float:
    """'2e9', '500M', '1.5G', '2T' -> operations; UsageError naming ``label`` otherwise."""
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    body = text.strip().upper()
    suffix = body[-1:] if body[-1:] in "KMGT" else ""
    try:
        value = float(body[: len(body) - len(suffix)]) * scale[suffix]
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError(f"{label}: '{text}' is not a positive number of floating-point "
                         "operations; e.g. 2e9, 500M, 1.5G, 2T (powers of 1000)")
    return value


@dataclass
class OverlapConfig:
    matmul_dim: int | None = flag(None, "--matmul-dim", type=int, metavar="N",
                                  help="square matmul side N (2 N^3 operations; default 512 on "
                                       "CPU, 8192 on GPUs)")
    flops: float | None = flag(None, "--flops", metavar="F", parse=parse_flops,
                               help="size the matmul by operations instead: e.g. 2e9, 500M, 1T")
    size_bytes: int | None = flag(None, "-b", "--bytes", metavar="SIZE", parse=parse_size,
                                  help="all_reduce size with K/M/G suffix (default 4M on CPU, "
                                       "256M on GPUs)")
    iters: int = flag(20, "--iters", type=int, help="timed iterations")
    warmup: int = flag(5, "--warmup", type=int, help="warm-up iterations")
    dtype: str = flag("auto", "--dtype", show_default=False,
                      help="matmul dtype: auto (bfloat16 on GPUs, float32 on CPU), float32, "
                           "bfloat16, float16")
    backend: str = backend_flag()
    timeout_s: float = timeout_flag("a collective")

    def __post_init__(self) -> None:
        if self.matmul_dim is not None and self.flops is not None:
            raise UsageError("--matmul-dim/--flops: give one of them, not both")
        if self.matmul_dim is not None and self.matmul_dim < 1:
            raise invalid(self, "matmul_dim", f"{self.matmul_dim} must be >= 1")
        if self.size_bytes is not None and self.size_bytes < 4:
            raise invalid(self, "size_bytes", f"{self.size_bytes} must be at least 4 (one float)")
        if self.iters < 1:
            raise invalid(self, "iters", f"{self.iters} must be >= 1")
        if self.warmup < 0:
            raise invalid(self, "warmup", f"{self.warmup} must be >= 0")
        check_choice(self, "dtype", ("auto", "float32", "bfloat16", "float16"))
        if self.timeout_s <= 0:
            raise invalid(self, "timeout_s", f"{self.timeout_s:g} must be > 0 seconds")

    def resolved(self, on_gpu: bool) -> tuple[int, int, str]:
        """(matmul side, message bytes rounded down to whole floats, matmul dtype)."""
        where = "gpu" if on_gpu else "cpu"
        dim = self.matmul_dim or (dim_for_flops(self.flops) if self.flops else DEFAULT_DIM[where])
        size = (self.size_bytes or DEFAULT_BYTES[where]) // 4 * 4
        dtype = self.dtype if self.dtype != "auto" else ("bfloat16" if on_gpu else "float32")
        return dim, size, dtype

    def validate_for_job(self, world_size: int, backend: str) -> None:
        """An all_reduce of one rank communicates nothing: there is no overlap to measure."""
        if world_size < 2:
            raise UsageError(f"--nproc: overlap needs at least 2 ranks (a {world_size}-rank "
                             "all_reduce communicates nothing)")


@dataclass(frozen=True)
class OverlapOutputs:
    """What rank 0 writes besides stdout; not part of the recorded configuration."""

    json: str | None = json_flag("write JSON Lines: a run record, then the overlap record")
