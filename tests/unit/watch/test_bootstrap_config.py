"""How the agent gets in: the bootstrap chains the job's own sitecustomize, imports no torch,
arms on init_process_group only; and watch's flags are validated before anything runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from collscope.config_flags import ConfigError
from collscope.watch.config import AgentSettings, WatchConfig
from collscope.watch.run import BOOTSTRAP, child_env
from tests.helpers import REPO

PROBE = """\
import sys
import sitecustomize
print(getattr(sitecustomize, "USER_MARK", None), "torch" in sys.modules)
import torch.distributed.distributed_c10d as c10d
import torch.distributed as dist
print(getattr(c10d.init_process_group, "__collscope_watch__", False),
      dist.init_process_group is c10d.init_process_group)
"""


def test_bootstrap_chains_the_user_sitecustomize_and_wraps_init_process_group(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("USER_MARK = 'user site ran'\n")
    env = child_env({"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}, str(tmp_path),
                    WatchConfig(command=["true"]))
    assert env["PYTHONPATH"].split(":")[:3] == [BOOTSTRAP, str(REPO), str(tmp_path)]
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["user site ran False", "True True"]
    assert out.stderr == ""


def test_config_checks_each_flag():
    with pytest.raises(ConfigError, match="--interval: 0.01 is not an interval"):
        WatchConfig(interval_s=0.01, command=["x"])
    with pytest.raises(ConfigError, match="--hang-after: 1 is not a stall threshold"):
        WatchConfig(hang_after_s=1, command=["x"])
    with pytest.raises(ConfigError, match="--on-hang: 'stop' is not accepted; use report, kill"):
        WatchConfig(on_hang="stop", command=["x"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="--json: '-'"):
        WatchConfig(json="-", command=["x"])
    with pytest.raises(Exception, match="COMMAND: nothing to run"):
        WatchConfig(command=["--"])


def test_agent_settings_travel_as_json():
    settings = WatchConfig(interval_s=0.5, hang_after_s=10, dump_dir="d",
                           command=["x"]).agent_settings()
    env = {"COLLSCOPE_WATCH_SETTINGS": settings.to_env()}
    assert AgentSettings.from_env(env) == settings and settings.dump_dir.endswith("/d")
    assert AgentSettings.from_env({}) == AgentSettings()
