"""Per-GPU ``GPU[i] : key: value`` outputs: --showproductname, --showmeminfo, --showuse."""

from __future__ import annotations

from collscope.parsers.common import GpuInfo, Parsed
from collscope.parsers.rocm_smi.common import gpu_fields, gpu_infos, number_of, numbered, snake_key
from collscope.parsers.rocm_smi.records import GpuStatus


def parse_productname(text: str) -> Parsed[list[GpuInfo]]:
    """``rocm-smi --showproductname`` (or the Product Info part of ``-a``).

    ``name`` is the card series (e.g. 'AMD Instinct MI300X OAM'); model, vendor, SKU and
    newer keys (GFX Version, Node ID, GUID...) are kept in ``extra`` as card_model,
    card_vendor, card_sku, gfx_version...
    """
    return gpu_infos(text, "--showproductname")


def parse_showmeminfo(text: str) -> Parsed[list[GpuInfo]]:
    """``rocm-smi --showmeminfo vram`` (or ``all``): VRAM total/used bytes per GPU.

    Other memory kinds (VIS_VRAM, GTT) go to ``extra`` under their snake-cased key.
    """
    return gpu_infos(text, "--showmeminfo")


def parse_showuse(text: str) -> Parsed[list[GpuStatus]]:
    """``rocm-smi -u`` / ``--showuse``: the 'GPU use (%)' busy percentage per GPU.

    'GFX Activity' is a cumulative counter, not a percentage; it is kept in ``extra``.
    """
    warnings: list[str] = []
    fields = gpu_fields(numbered(text), warnings)
    statuses = []
    for index in sorted(fields):
        status = GpuStatus(index=index)
        for key, value in fields[index].items():
            if key == "gpu use (%)":
                status.gpu_percent = number_of(value)
            elif key == "gpu memory allocated (vram%)":
                status.vram_percent = number_of(value)
            else:
                status.extra[snake_key(key) or key] = value
        statuses.append(status)
    if not any(s.gpu_percent is not None for s in statuses):
        warnings.append("no 'GPU use (%)' lines found")
    return Parsed(statuses, warnings)
