"""Synthetic batches (deterministic, learnable) and the table rank 0 prints."""

from __future__ import annotations

import pytest

from collscope.records.train import TrainRecord
from collscope.train.config import DDPKnobs, ModelSpec
from collscope.train.report import recommendation, table

SPEC = ModelSpec(hidden=32, layers=1, heads=2, intermediate=96, vocab=512, seq_len=20,
                 batch_size=3)


def test_batches_repeat_a_pattern_are_seeded_by_rank_and_step():
    torch = pytest.importorskip("torch")
    from collscope.train.model import ALPHABET, PATTERN_LEN, synthetic_batch

    cpu = torch.device("cpu")
    batch = synthetic_batch(SPEC, 0, rank=0, step=0, device=cpu)
    assert batch.shape == (3, 20) and batch.dtype == torch.int64
    assert int(batch.max()) < ALPHABET
    assert torch.equal(batch[:, PATTERN_LEN:2 * PATTERN_LEN], batch[:, :PATTERN_LEN])
    assert torch.equal(batch, synthetic_batch(SPEC, 0, rank=0, step=0, device=cpu))
    assert not torch.equal(batch, synthetic_batch(SPEC, 0, rank=1, step=0, device=cpu))
    assert not torch.equal(batch, synthetic_batch(SPEC, 0, rank=0, step=1, device=cpu))


def _record(label, knobs, step_ms, speedup=None):
    return TrainRecord(
        label=label, config={"parallel": "ddp", "custom_hook": False, **vars(knobs)},
        world_size=2, steps=4, step_time_ms=step_ms, step_time_ms_p25=step_ms - 1,
        step_time_ms_p75=step_ms + 1, step_time_ms_min=step_ms - 2, step_time_ms_max=step_ms + 2,
        step_time_ms_nosync=step_ms - 5, step_time_ms_nosync_p25=0, step_time_ms_nosync_p75=0,
        forward_ms=1, backward_ms=2, backward_ms_nosync=1, optimizer_ms=1, exposed_comm_ms=5,
        exposed_comm_ms_iqr=1, comm_scope="gradient all-reduce", comm_collective="all_reduce",
        comm_algo="flat", comm_bytes_per_step=4 << 20, comm_messages_per_step=1,
        pure_comm_ms=10, overlap_fraction=0.5, overlap_clamped=False, tokens_per_s=1000,
        peak_memory_bytes=1 << 30, memory_method="test", loss_first=8, loss_last=4,
        speedup_vs_ddp_default=speedup)


def test_table_is_ranked_fastest_first_and_recommendation_reads_the_records():
    default = _record("25MB none", DDPKnobs(), 30.0, 1.0)
    faster = _record("5MB bf16", DDPKnobs(5, comm_hook="bf16"), 20.0, 1.5)
    lines = table([default, faster])
    assert lines[0].startswith("# rank configuration")
    assert lines[1].split()[:3] == ["1", "5MB", "bf16"] and "1.50x" in lines[1]
    assert lines[2].split()[:3] == ["2", "25MB", "none"]
    assert "4 MiB" in lines[1] and "1 GiB" in lines[1] and "50%" in lines[1]
    assert recommendation([default, faster], None).startswith(
        "recommendation: model = DistributedDataParallel(model, bucket_cap_mb=5); "
        "model.register_comm_hook(None, default_hooks.bf16_compress_hook)  # 1.50x")


def _fake_transformers(monkeypatch, version: str, runs_with_torch: bool) -> None:
    """transformers as its own import exposes it: a version, and utils.is_torch_available,
    which is False where the installed torch is older than the release needs."""
    import sys
    import types

    utils = types.ModuleType("transformers.utils")
    utils.is_torch_available = lambda: runs_with_torch  # type: ignore[attr-defined]
    package = types.ModuleType("transformers")
    package.__version__ = version  # type: ignore[attr-defined]
    package.utils = utils  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transformers", package)
    monkeypatch.setitem(sys.modules, "transformers.utils", utils)


def test_a_transformers_too_new_for_this_torch_is_one_line_naming_what_to_install(monkeypatch):
    from collscope.errors import UsageError
    from collscope.train import model

    _fake_transformers(monkeypatch, "5.25.0", runs_with_torch=False)
    with pytest.raises(UsageError, match=r"transformers 5\.25\.0 does not run with torch .*"
                                         r"pip install 'transformers<5'"):
        model.load_model_code()


def test_a_missing_transformers_names_the_extra(monkeypatch):
    import sys

    from collscope.errors import UsageError
    from collscope.train import model

    monkeypatch.setitem(sys.modules, "transformers", None)  # import raises ImportError
    with pytest.raises(UsageError, match=r"collscope\[llm\]"):
        model.load_model_code()
