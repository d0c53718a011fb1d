"""What collscope prints for a fixed set of inputs, with what may change between runs masked:
the outputs the golden test (tests/e2e/test_golden.py) pins byte for byte.

``outputs(tree)`` runs the CLI of the collscope tree at ``tree`` (PYTHONPATH points there, so
an older checkout can be run against the same cases) and returns {case name: masked text}.
Cases: ``collscope bench --nproc 2 -e 1M -n 5`` (times, bandwidths, pids and the host masked:
the table layout), ``collscope import`` of every fixture log (real and own), ``collscope
doctor --from`` two bundles assembled from the real tool outputs, and ``collscope report``
HTML of two real logs (the generation time masked). Paths of the fixtures and of the
temporary folder are replaced by placeholders.

The golden files (tests/fixtures/golden/cases/, one text file per case) hold the masked outputs
themselves, so a failing case shows its diff. ``python tests/golden.py --write`` regenerates them
from this tree; ``python tests/golden.py TREE`` prints another tree's cases as JSON (to compare a
checkout from before a change).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
GOLDEN = FIXTURES / "golden" / "cases"

# (bundle name, {bundle file: real tool output}, {bundle file: text written here})
BUNDLES = [
    ("mi300x", {
        "amd-smi-topology.txt": "amd-smi_topology_mi300x_8gpu_rocm61.txt",
        "rocminfo.txt": "rocminfo_mi300x_excerpt_agents1-3.txt",
        "ucx_info-v.txt": "ucx_info_v_ucx1.15_cuda_h100.txt",
        "rocm-smi--showtopo.txt": "rocm-smi_showtopo_mi308x_8gpu.txt",
        "nccl-debug.log": "rccl_debug_info_mi300x_8gpu_azure_net_ib_excerpt.txt",
    }, {"env.txt": "NCCL_ALGO=Ring\nNCCL_DEBUG=INFO\n",
        "sysfs/proc/sys/kernel/numa_balancing": "1\n"}),
    ("h200", {
        "nvidia-smi-query-gpu.csv": "nvidia-smi_query-gpu_csv_h200_8gpu.txt",
        "nvidia-smi-topo-m.txt": "nvidia-smi_topo_m_h200_8gpu_8nic.txt",
        "ibv_devinfo-v.txt": "ibv_devinfo_vv_connectx6_2hca.txt",
        "ucx_info-d.txt": "ucx_info_d_ucx1.16_cuda_connectx6_ib.txt",
        "nccl-debug.log": "nccl_debug_info_h800_8gpu_socket_init_excerpt.txt",
    }, {"env.txt": "NCCL_IB_HCA=mlx5_7\nNCCL_SOCKET_IFNAME=eth0\n"}),
]
REPORT_LOGS = ["h100_2node_default_nccl_issue309.txt",
               "h100_2node_ring_minctas24_qps2_nccl_issue309.txt"]

_FLOAT = re.compile(r" *\b\d+\.\d+\b")
_PID = re.compile(r"Pid +\d+")
_WHEN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def _run(tree: Path, args: list[str], cwd: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
           and not k.startswith(("SLURM_", "OMPI_", "PMI_", "COLLSCOPE_", "NCCL_", "RCCL_"))}
    env.update(PYTHONPATH=str(tree), COLUMNS="120")
    proc = subprocess.run([sys.executable, "-m", "collscope", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


_DOCTOR_ELAPSED = re.compile(r"^(collscope doctor: .*; )\d+\.\d s$", re.M)


def _paths_masked(text: str, tmp: Path) -> str:
    return text.replace(str(FIXTURES), "<fixtures>").replace(str(tmp), "<tmp>")


def mask_bench(text: str) -> str:
    """The bench table's layout: every decimal number becomes '#' right-aligned in its width,
    pids and the host name are masked (all differ from run to run or machine to machine)."""
    text = _PID.sub("Pid <pid>", text)
    text = re.sub(r" on +" + re.escape(socket.gethostname()) + " ", " on <host> ", text)
    text = re.sub(r"(torch|collscope) \S+", r"\1 <version>", text)
    text = re.sub(r"(Avg bus bandwidth *: *)\S+", r"\1#", text)    # printed %g, any width
    return _FLOAT.sub(lambda m: " " * (len(m.group()) - 1) + "#", text)


def _case(code: int, out: str, err: str) -> str:
    return f"exit {code}\n--- stdout\n{out}\n--- stderr\n{err}"


def fixture_logs() -> list[Path]:
    real = sorted(p for p in (FIXTURES / "nccl-tests-logs").iterdir() if p.suffix == ".txt")
    own = sorted(p for p in (FIXTURES / "own" / "nccl-tests-logs").iterdir()
                 if p.name != "README.md")
    return real + own


def _bundle(tmp: Path, name: str, files: dict[str, str], extra: dict[str, str]) -> Path:
    root = tmp / name
    for target, fixture in files.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (root / target).write_bytes((FIXTURES / "tool-outputs" / fixture).read_bytes())
    for target, text in extra.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (root / target).write_text(text)
    archive = tmp / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(root, arcname=name)
    return archive


def outputs(tree: Path = REPO, bench: bool = True) -> dict[str, str]:
    cases: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="collscope-golden-") as tmp_name:
        tmp = Path(tmp_name)
        if bench:
            code, out, err = _run(tree, ["bench", "--nproc", "2", "-e", "1M", "-n", "5"], tmp)
            cases["bench"] = _case(code, mask_bench(out), "" if code == 0 else err)
        for log in fixture_logs():
            code, out, err = _run(tree, ["import", str(log), "-o", "-"], tmp)
            where = "own" if log.is_relative_to(FIXTURES / "own") else "real"
            cases[f"import/{where}/{log.name}"] = _paths_masked(_case(code, out, err), tmp)
        for name, files, extra in BUNDLES:
            archive = _bundle(tmp, name, files, extra)
            for flags in ([], ["--json"]):
                code, out, err = _run(tree, ["doctor", "--from", str(archive), *flags], tmp)
                out = _DOCTOR_ELAPSED.sub(r"\1<elapsed> s", out)   # "0.1 s" when loaded
                cases[f"doctor/{name}{''.join(flags)}"] = _paths_masked(
                    _case(code, out, err), tmp)
        html = tmp / "report.html"
        code, out, err = _run(tree, ["report", *(str(FIXTURES / "nccl-tests-logs" / log)
                                                 for log in REPORT_LOGS), "-o", str(html)], tmp)
        page = html.read_text() if html.exists() else ""
        cases["report/html"] = _paths_masked(_case(code, _WHEN.sub("<when>", page), err), tmp)
    return cases


def case_file(name: str) -> Path:
    """Where a case's golden text lives: its name with '/' spelled '__'."""
    return GOLDEN / (name.replace("/", "__") + ".txt")


def golden_cases() -> dict[str, str]:
    return {path.stem.replace("__", "/"): path.read_text(encoding="utf-8")
            for path in sorted(GOLDEN.glob("*.txt"))}


def write_golden() -> None:
    cases = outputs()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for stale in GOLDEN.glob("*.txt"):
        stale.unlink()
    for name, text in cases.items():
        case_file(name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_golden()
    else:
        print(json.dumps(outputs(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO), indent=1))
