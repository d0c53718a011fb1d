"""The compatibility check: one virtual environment per torch version, a smoke of every
command in each, and a table (torch x command: pass, or FAIL with the reason).

Each environment is DIR/torchX.Y (made when missing: `python -m venv`, then `pip install
torch==X.Y.*` from the registry, with this machine's pip constraints lifted, and a `.done`
marker once torch is in; an environment with `.done` is reused as it is). collscope is not
installed into it: the smoke runs this checkout through PYTHONPATH, with collscope's own
dependencies added to the environment (`pip install`, a no-op once they are there). The
registry's torch for Linux is its CUDA build (several GB; pip's cache keeps the wheels for the
next run); without a GPU it runs gloo, as the CPU build does.

What each column runs is in benchmarks/compat_checks.py; docs/compat.md has the table of the
last run and what each cell means.

usage: python benchmarks/compat.py [--torch 2.5,2.15] [--venvs DIR] [--python PY]
                                   [--json FILE] [--markdown] [--budget-s S]
exit 0 when no cell fails (a check that does not apply to a torch is n/a, with why), 1 when
one fails; 0 with a message when the registry cannot be reached and an environment is missing,
or when --budget-s runs out before a version (nothing checked there, said as such).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STARTED = time.monotonic()
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.compat_checks import CHECKS, COLUMNS, Cell, Smoke  # noqa: E402

VERSIONS = ("2.5", "2.6", "2.9", "2.13", "2.15")   # oldest supported, ROCm's, each FR change
# collscope's own dependencies and its llm extra (train's models come from transformers)
DEPENDENCIES = ("rich>=13", "psutil>=5", "msgspec>=0.18", "scipy>=1.10", "transformers>=4.40")
# transformers 5 switches its models off below torch 2.6 (read from its is_torch_available):
# an environment of an older torch takes the last major release that runs with it, as a user
# of that torch must (collscope train says so when it finds the newer one).
OLD_TORCH_TRANSFORMERS = {"2.5": "transformers>=4.40,<5"}


def dependencies(version: str) -> tuple[str, ...]:
    pin = OLD_TORCH_TRANSFORMERS.get(version)
    return tuple(pin if pin and dep.startswith("transformers") else dep for dep in DEPENDENCIES)
INSTALL_TIMEOUT_S = 1800
SMOKE_S = 900            # what one version's smoke may take on a loaded 2-core machine


def default_venvs() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get("COLLSCOPE_COMPAT_VENVS") or Path(cache) / "collscope-compat")


def default_python() -> str:
    return shutil.which("python3.11") or sys.executable


def _pip(python: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    # PIP_CONSTRAINT=/dev/null: a machine-wide constraints file may cap torch below the
    # version asked for (this one caps it at 2.14.1); the environment asks for one exact minor.
    env = {**os.environ, "PIP_CONSTRAINT": "/dev/null", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def registry_reachable(python: str) -> tuple[bool, str]:
    """Whether pip can list torch's releases (the registry answers), and pip's last line."""
    with tempfile.TemporaryDirectory() as scratch:
        try:
            found = _pip(Path(python), "index", "versions", "torch", "--cache-dir", scratch,
                         timeout=90)
        except subprocess.TimeoutExpired:
            return False, "pip index versions torch: no answer in 90 s"
    lines = [line for line in (found.stdout + found.stderr).splitlines() if line.strip()]
    return found.returncode == 0, lines[-1] if lines else ""


def ensure_venv(root: Path, version: str, python: str, install_s: float,
                ) -> tuple[Path | None, str]:
    """(the environment's python, "") or (None, why it could not be made); ``install_s``:
    the time torch's install may take."""
    venv = root / f"torch{version}"
    bin_python = venv / "bin" / "python"
    if not (venv / ".done").exists():
        print(f"compat: installing torch {version} into {venv} (from the registry: its CUDA "
              "build, several GB, pip's cache reused)", file=sys.stderr, flush=True)
        if not bin_python.exists():
            subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
        started = time.monotonic()
        try:
            done = _pip(bin_python, "install", "-q", f"torch=={version}.*", timeout=install_s)
        except subprocess.TimeoutExpired:
            return None, f"pip install torch=={version}.* took over {install_s:.0f} s"
        if done.returncode != 0:
            return None, f"pip install torch=={version}.*: {_last(done.stderr)}"
        (venv / ".done").write_text(f"torch {version} installed in "
                                    f"{time.monotonic() - started:.0f} s\n")
    deps = _pip(bin_python, "install", "-q", *dependencies(version), timeout=600)
    if deps.returncode != 0:
        return None, f"pip install collscope's dependencies: {_last(deps.stderr)}"
    return bin_python, ""


def _last(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(no output)"


def torch_version(python: Path) -> str:
    found = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, timeout=120)
    return found.stdout.strip() or f"(torch does not import: {_last(found.stderr)})"


def run_version(root: Path, version: str, python: str, deadline: float,
                ) -> tuple[str, list[Cell]]:
    left = deadline - time.monotonic() - SMOKE_S
    if left < 60:
        why = f"skipped: under {SMOKE_S + 60} s of --budget-s left"
        return version, [Cell(name, "skip", why) for name in COLUMNS]
    venv_python, why = ensure_venv(root, version, python, min(left, INSTALL_TIMEOUT_S))
    if venv_python is None:
        status = "skip" if "took over" in why else "FAIL"
        return version, [Cell(name, status, why) for name in COLUMNS]
    full = torch_version(venv_python)
    print(f"compat: torch {full} ({venv_python})", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix=f"collscope-compat-{version}-") as scratch:
        smoke = Smoke(venv_python, Path(scratch), full)
        cells = []
        for names, check in CHECKS:
            started = time.monotonic()
            try:
                found = check(smoke)
            except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as error:
                why = (f"no end within {error.timeout:.0f} s"
                       if isinstance(error, subprocess.TimeoutExpired)
                       else f"{Path(error.cmd[1]).name} exit {error.returncode}: "
                            f"{_last((error.stderr or b'').decode(errors='replace'))}")
                found = [Cell(name, "FAIL", why) for name in names]
            for cell in found:
                cell.seconds = (time.monotonic() - started) / len(found)
                print(f"compat: torch {version} {cell.name}: {cell.text()}", file=sys.stderr,
                      flush=True)
            cells += found
    return full, cells


def markdown(results: list[tuple[str, list[Cell]]]) -> str:
    names = COLUMNS
    lines = ["| torch | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for version, cells in results:
        lines.append(f"| {version} | " + " | ".join(c.text() for c in cells) + " |")
    return "\n".join(lines)


def plain(results: list[tuple[str, list[Cell]]]) -> str:
    out = []
    for version, cells in results:
        out.append(f"torch {version}")
        out += [f"  {c.name:<16} {c.status:<5} {c.seconds:5.0f} s  {c.why}".rstrip()
                for c in cells]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch", default=",".join(VERSIONS),
                        help="torch minors, comma-separated (default %(default)s)")
    parser.add_argument("--venvs", type=Path, default=default_venvs(),
                        help="folder of the torchX.Y environments (default %(default)s; "
                             "COLLSCOPE_COMPAT_VENVS)")
    parser.add_argument("--python", default=default_python(),
                        help="the interpreter each new environment is made from")
    parser.add_argument("--json", help="write every cell as JSON Lines here")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--budget-s", type=float, default=6 * 3600,
                        help="wall time for the whole run: a version whose install and smoke "
                             "no longer fit is skipped and said (CI's limit)")
    args = parser.parse_args()
    versions = [v.strip() for v in args.torch.split(",") if v.strip()]
    missing = [v for v in versions if not (args.venvs / f"torch{v}" / ".done").exists()]
    if missing:
        reachable, said = registry_reachable(args.python)
        if not reachable:
            print(f"compat: skipped: torch {', '.join(missing)} not installed under "
                  f"{args.venvs} and the package registry cannot be reached ({said}); "
                  "nothing was checked", flush=True)
            return 0
    args.venvs.mkdir(parents=True, exist_ok=True)
    deadline = STARTED + args.budget_s
    results = [run_version(args.venvs, v, args.python, deadline) for v in versions]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            for version, cells in results:
                for cell in cells:
                    out.write(json.dumps({"torch": version, **cell.record()}) + "\n")
    print(markdown(results) if args.markdown else plain(results))
    counts = {status: sum(c.status == status for _, cells in results for c in cells)
              for status in ("pass", "FAIL", "n/a", "skip")}
    print("compat: " + ", ".join(f"{n} {status}" for status, n in counts.items()) + " (cells)")
    failed = counts["FAIL"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
