"""collscope/redact.py: which names look secret and how values are hidden (one list for all)."""

from __future__ import annotations

import shlex

import pytest

from collscope.redact import is_secret_name, redact_argv, redact_secrets, shown_env

SECRET_NAMES = [
    "HF_TOKEN", "NCCL_API_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "WANDB_API_KEY", "NGC_API_KEY", "MY_PASSWORD", "password", "PASSWD",
    "DB_PASS", "NCCL_NET_PLUGIN_PASS", "MYSQL_PWD", "GPG_PASSPHRASE", "SSH_PRIVATE",
    "TLS_PRIVATE_KEY", "GITHUB_CREDENTIALS", "REGISTRY_CREDS", "Authorization", "auth",
    "Cookie", "SESSION_COOKIE", "apiKey", "dbPassword", "GHTOKEN", "auth-key", "api-key",
    "secret", "token", "TS_AUTHKEY", "SSHKEY", "MASTERKEY", "AWS_SECRETKEY", "SIGNINGKEY",
    "PASSKEY",
]
# Ordinary communication variables and look-alikes that must stay visible.
PLAIN_NAMES = [
    "NCCL_IB_HCA", "UCX_TLS", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX", "NCCL_NET_PLUGIN",
    "NCCL_IB_PKEY", "NCCL_P2P_BYPASS", "TOKENIZERS_PARALLELISM", "GIT_AUTHOR_NAME", "PWD",
    "OLDPWD", "PASS", "KEY", "XDG_SESSION_ID", "HTTPS_PROXY", "NCCL_DEBUG", "RCCL_MSCCL_ENABLE",
    "HSA_FORCE_FINE_GRAIN_PCIE", "UCX_NET_DEVICES", "GLOO_SOCKET_IFNAME", "ib_hca", "SLURM_JOB_ID",
    "RKEY", "NCCL_IB_QKEY", "LKEY",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_communication_variables_and_look_alikes_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(("text", "shown"), [
    ("DB_PASS=s1 MYSQL_PWD=s2 NCCL_IB_HCA=mlx5",
     "DB_PASS=<hidden> MYSQL_PWD=<hidden> NCCL_IB_HCA=mlx5"),
    ("HTTPS_PROXY=http://u:s3@proxy:3128", "HTTPS_PROXY=http://u:<hidden>@proxy:3128"),
    ("--url https://user:s4@host/x", "--url https://user:<hidden>@host/x"),
    ("git clone https://oauth2:s5@gitlab.com/x.git",
     "git clone https://oauth2:<hidden>@gitlab.com/x.git"),
    ("pip install -i https://s6@pypi.example/simple",      # a token as the user name
     "pip install -i https://<hidden>@pypi.example/simple"),
    ("git clone ssh://git@github.com/x.git", "git clone ssh://git@github.com/x.git"),   # a user
    ("+ docker login -u me -p s7 nvcr.io", "+ docker login -u me -p <hidden> nvcr.io"),
    ("podman login -ps8 quay.io", "podman login -p<hidden> quay.io"),
    ("mysql -u root -ps9 db", "mysql -u root -p<hidden> db"),
    ("mpirun -np 8 -p 4 ./all_reduce_perf", "mpirun -np 8 -p 4 ./all_reduce_perf"),    # -p: not a
    ("docker login -u me x && mpirun -p 4 a", "docker login -u me x && mpirun -p 4 a"),  # password
    ("run --password s10 --passwd=s11 --token 's 12' --api-key s13 -b 8",
     "run --password <hidden> --passwd=<hidden> --token <hidden> --api-key <hidden> -b 8"),
    ("docker login --password-stdin nvcr.io", "docker login --password-stdin nvcr.io"),
    ("cnode:1:1 [0] NCCL INFO NCCL_API_TOKEN set by environment to s14",
     "cnode:1:1 [0] NCCL INFO NCCL_API_TOKEN set by environment to <hidden>"),
    ("line 4: skipped: 'x NCCL INFO NCCL_API_TOKEN set by environment to s15'",
     "line 4: skipped: 'x NCCL INFO NCCL_API_TOKEN set by environment to <hidden>'"),
    ("NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
     "NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0"),
    ("-genv MY_PASSWORD s16 -x NCCL_IB_HCA=mlx5",
     "-genv MY_PASSWORD <hidden> -x NCCL_IB_HCA=mlx5"),
    ("curl -H 'Authorization: Bearer s17' https://x",
     "curl -H 'Authorization: <hidden>' https://x"),
])
def test_redact_secrets(text: str, shown: str) -> None:
    assert redact_secrets(text) == shown
    assert redact_secrets(shown) == shown          # hiding twice changes nothing


@pytest.mark.parametrize(("words", "shown"), [
    (["docker", "login", "-u", "me", "-p", "s1", "nvcr.io"],
     ["docker", "login", "-u", "me", "-p", "<hidden>", "nvcr.io"]),
    (["mysql", "-ps2", "db"], ["mysql", "-p<hidden>", "db"]),
    (["mpirun", "-p", "4", "-x", "DB_PASS=s3"], ["mpirun", "-p", "4", "-x", "DB_PASS=<hidden>"]),
    (["--password=s4", "--url", "https://u:s5@h/x"],
     ["--password=<hidden>", "--url", "https://u:<hidden>@h/x"]),
    (["--token", "two words", "-b", "8"], ["--token", "<hidden>", "-b", "8"]),
])
def test_redact_argv_as_words_and_as_text(words: list[str], shown: list[str]) -> None:
    assert redact_argv(words) == shown
    assert shlex.split(redact_secrets(shlex.join(words))) == shown


def test_shown_env_drops_secret_names_and_hides_url_passwords() -> None:
    environ = {"NCCL_IB_HCA": "mlx5_0", "UCX_TLS": "rc,cuda_copy", "NCCL_SOCKET_IFNAME": "eth0",
               "DB_PASS": "s1", "NCCL_NET_PLUGIN_PASS": "s2", "HF_TOKEN": "s3",
               "HTTPS_PROXY": "http://u:s4@p:3128", "NCCL_DEBUG_FILE": "/tmp/n.%h.log"}
    assert shown_env(environ) == {"NCCL_IB_HCA": "mlx5_0", "UCX_TLS": "rc,cuda_copy",
                                  "NCCL_SOCKET_IFNAME": "eth0",
                                  "HTTPS_PROXY": "http://u:<hidden>@p:3128",
                                  "NCCL_DEBUG_FILE": "/tmp/n.%h.log"}


def test_a_run_record_never_holds_a_secret_of_its_command_line(monkeypatch) -> None:
    import sys

    from collscope.records.run import RunRecord

    monkeypatch.setattr(sys, "argv", ["collscope", "tune", "--launcher-env", "DB_PASS=s1",
                                      "--url", "https://u:s2@h/x"])
    record = RunRecord.create("tune", launcher="local", backend="gloo", world_size=1, nodes=1,
                              ranks_per_node=1, hosts=["h"], devices=[], timing="", extra={},
                              versions={}, env={})
    assert record.argv == ["collscope", "tune", "--launcher-env", "DB_PASS=<hidden>",
                           "--url", "https://u:<hidden>@h/x"]


@pytest.mark.parametrize("text", ["x" * 100_000 + " -a" * 20_000, "a:" * 100_000,
                                  "a://" * 50_000, "s://u:" + "p:" * 100_000, "a." * 100_000])
@pytest.mark.serial   # bounds a wall time
def test_redaction_stays_linear_on_pathological_lines(text: str) -> None:
    # A log line is untrusted: these took 13-130 s when every letter could start a name.
    import time

    started = time.perf_counter()
    redact_secrets(text)
    assert time.perf_counter() - started < 2.0
