"""The CPU self-test: a real 2-rank gloo all_reduce in one process, timed and verified."""

from __future__ import annotations

from collscope.doctor.selftest import SIZE_BYTES, SelfTestResult, busbw, run_gloo_threads


def test_gloo_selftest_passes_with_a_time():
    result = run_gloo_threads(timeout_s=30)
    assert result.status == "ok", result.error
    assert result.wrong == 0 and result.world_size == 2 and result.size_bytes == SIZE_BYTES
    assert result.time_us > 0 and result.busbw_gbs > 0
    assert "gloo" in result.method and "verified" in result.method


def test_gloo_selftest_reports_a_bad_interface(monkeypatch):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "no-such-if0")
    result = run_gloo_threads(timeout_s=10)
    assert result.status == "fail" and result.error


def test_result_round_trip_and_busbw():
    result = SelfTestResult("ok", time_us=100.0)
    assert SelfTestResult.from_dict(result.to_dict() | {"unknown": 1}) == result
    assert busbw(1_000_000, 1000.0, 2) == 1.0 and busbw(1, 0, 2) == 0.0
