"""doctor names where each CUDA version came from (review item 16): an NCCL log's
"NCCL version 2.18.3+cuda12.2" is NCCL's build CUDA, its "cudaDriverVersion 12020" the
driver's; neither came from nvidia-smi's CSV, which prints no CUDA version at all."""

from __future__ import annotations

import json

from collscope.cli import main
from tests.conftest import fixture_path

FILES = {"nvidia-smi-query-gpu.csv": "nvidia-smi_query-gpu_csv_h200_8gpu.txt",
         "nvidia-smi-topo-m.txt": "nvidia-smi_topo_m_h200_8gpu_8nic.txt",
         "nccl-debug.log": "nccl_debug_info_h800_8gpu_socket_init_excerpt.txt"}


def _bundle(tmp_path, with_log: bool = True):
    root = tmp_path / "node"
    root.mkdir()
    for target, fixture in FILES.items():
        if with_log or target != "nccl-debug.log":
            (root / target).write_text(fixture_path("tool-outputs", fixture).read_text())
    return root


def _inventory_detail(capsys, bundle) -> tuple[str, dict]:
    assert main(["doctor", "--from", str(bundle), "--json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    (finding,) = [f for f in report["findings"] if f["id"] == "gpu.inventory"]
    return finding["detail"], report["inventory"]


def test_cuda_versions_name_the_nccl_log_not_the_gpu_csv(tmp_path, capsys):
    detail, inventory = _inventory_detail(capsys, _bundle(tmp_path))
    assert "driver 570.211.01 (source: nvidia-smi-query-gpu.csv)" in detail
    assert "driver CUDA 12.2 (source: nccl-debug.log: cudaDriverVersion 12020)" in detail
    assert ("NCCL built for CUDA 12.2 (source: nccl-debug.log: NCCL version 2.18.3+cuda12.2)"
            in detail)
    assert "CUDA 12.2 (source: nvidia-smi" not in detail
    assert inventory["stack_versions"] == [
        {"what": "driver CUDA", "version": "12.2",
         "source": "nccl-debug.log: cudaDriverVersion 12020"},
        {"what": "NCCL built for CUDA", "version": "12.2",
         "source": "nccl-debug.log: NCCL version 2.18.3+cuda12.2"}]


def test_without_the_log_the_driver_cuda_is_unknown(tmp_path, capsys):
    detail, inventory = _inventory_detail(capsys, _bundle(tmp_path, with_log=False))
    assert "driver CUDA unknown" in detail and inventory["stack_versions"] == []
