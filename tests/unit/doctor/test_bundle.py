"""Bundles round-trip, and hostile archives cannot write or read outside the bundle."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from collscope.doctor.bundle import MAX_MEMBER_BYTES, read_bundle, safe_name, write_bundle
from collscope.errors import UsageError

CAPTURE = {"env.txt": "NCCL_DEBUG=WARN\n", "rocminfo.txt": "ROCk module is loaded\n",
           "sysfs/proc/cmdline": "ro iommu=pt\n", "host.json": "{}"}


def test_round_trip(tmp_path):
    path = tmp_path / "node.tar.gz"
    assert write_bundle(CAPTURE, path) == 4
    with tarfile.open(path) as tar:
        assert all(n.startswith("collscope-doctor/") for n in tar.getnames())
    assert read_bundle(path) == CAPTURE


def test_directory_bundle_with_or_without_a_top_directory(tmp_path):
    for name, text in CAPTURE.items():
        target = tmp_path / "mine" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    assert read_bundle(tmp_path / "mine") == CAPTURE
    assert read_bundle(tmp_path) == CAPTURE                  # one shared top level stripped


def test_only_sysfs_is_not_mistaken_for_a_top_directory(tmp_path):
    (tmp_path / "sysfs" / "proc").mkdir(parents=True)
    (tmp_path / "sysfs" / "proc" / "cmdline").write_text("ro")
    assert read_bundle(tmp_path) == {"sysfs/proc/cmdline": "ro"}


@pytest.mark.parametrize("name, expected", [
    ("env.txt", "env.txt"), ("./a/b.txt", "a/b.txt"), ("a//b/./c", "a/b/c"),
    ("../etc/passwd", None), ("a/../../x", None), ("/etc/passwd", None), ("C:/x", None),
    ("a\\..\\..\\x", None), ("", None), ("a\x00b", None),
])
def test_safe_name(name, expected):
    assert safe_name(name) == expected


def _member(tar: tarfile.TarFile, name: str, data: bytes = b"x", kind: bytes = tarfile.REGTYPE,
            link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def test_hostile_archive_is_read_without_traversal(tmp_path):
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        _member(tar, "../escaped.txt")
        _member(tar, "/tmp/absolute.txt")
        _member(tar, "link", kind=tarfile.SYMTYPE, link="/etc/passwd")
        _member(tar, "hard", kind=tarfile.LNKTYPE, link="/etc/passwd")
        _member(tar, "fifo", kind=tarfile.FIFOTYPE)
        _member(tar, "env.txt", b"NCCL_DEBUG=INFO\n")
    before = set(os.listdir(tmp_path))
    assert read_bundle(path) == {"env.txt": "NCCL_DEBUG=INFO\n"}
    assert set(os.listdir(tmp_path)) == before                 # nothing was written anywhere
    assert not (tmp_path.parent / "escaped.txt").exists()


def test_directory_symlinks_are_not_followed(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "env.txt").write_text("A=1")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    (bundle / "rocminfo.txt").symlink_to(secret)
    (bundle / "sysfs").symlink_to(tmp_path)
    assert read_bundle(bundle) == {"env.txt": "A=1"}


def test_oversized_members_are_skipped(tmp_path):
    path = tmp_path / "big.tar"
    with tarfile.open(path, "w") as tar:
        _member(tar, "big.txt", b"x" * (MAX_MEMBER_BYTES + 1))
        _member(tar, "env.txt", b"A=1")
    assert read_bundle(path) == {"env.txt": "A=1"}


def test_unreadable_sources_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="neither a bundle file nor a directory"):
        read_bundle(tmp_path / "missing.tar.gz")
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"this is not a tar file at all" * 20)
    with pytest.raises(UsageError, match="not a readable") as error:
        read_bundle(junk)
    assert "\n" not in str(error.value)           # one line (tarfile's error lists 4 methods)
    assert str(error.value).endswith("(not a gzip, bzip2, xz or plain tar archive)")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="'.*empty' holds no readable file; give a bundle"):
        read_bundle(empty)
    with pytest.raises(UsageError, match="does not exist"):
        write_bundle(CAPTURE, tmp_path / "no" / "dir" / "b.tar.gz")
