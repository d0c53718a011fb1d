"""Bundles: a RawCapture written to / read from a .tar.gz or a directory.

A bundle is the raw text doctor read on a node, one file per command (README, "collscope
doctor", lists the names), so `collscope doctor --from` can run every check anywhere, and
users can assemble one by hand from outputs they already have.

Reading is safe with untrusted archives: nothing is extracted to disk. Members are read into
memory, only regular files are taken, names must be relative without ``..`` (no path
traversal), links and devices are skipped, and sizes are capped (no decompression bomb).
Directories are walked without following symbolic links.
"""

from __future__ import annotations

import io
import os
import tarfile
import time
from pathlib import Path, PurePosixPath

from collscope.doctor.probes import RawCapture
from collscope.errors import UsageError
from collscope.parsers.decode import DecodeError, compression, decode_capture

TOP_DIR = "collscope-doctor"
MAX_MEMBER_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_MEMBERS = 50_000


def safe_name(name: str) -> str | None:
    """The member name as a clean relative POSIX path, or None when it is unsafe."""
    if not name or "\x00" in name:
        return None
    text = name.replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    path = PurePosixPath(text)
    if path.is_absolute() or (path.parts and ":" in path.parts[0]):
        return None
    parts = [p for p in path.parts if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def _strip_top(files: RawCapture) -> RawCapture:
    """Drop one directory level that every file shares (``tar czf b.tgz mydir/``)."""
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and all("/" in n for n in files) and next(iter(tops)) != "sysfs":
        return {name.split("/", 1)[1]: text for name, text in files.items()}
    return files


def check_target(path: str | os.PathLike[str]) -> None:
    """Fail early (before minutes of probing) when --collect cannot be written."""
    target = Path(path)
    if not target.parent.is_dir():
        raise UsageError(f"--collect: directory {str(target.parent)!r} does not exist")
    if target.is_dir():
        raise UsageError(f"--collect: {str(target)!r} is a directory; name a .tar.gz file")


def write_bundle(capture: RawCapture, path: str | os.PathLike[str]) -> int:
    """Write ``capture`` as a gzip tar under one top directory; the number of files."""
    target = Path(path)
    check_target(target)
    now = time.time()
    try:
        with tarfile.open(target, "w:gz") as tar:
            for name in sorted(capture):
                clean = safe_name(name)
                if clean is None:
                    continue
                data = capture[name].encode("utf-8")
                info = tarfile.TarInfo(f"{TOP_DIR}/{clean}")
                info.size, info.mtime, info.mode = len(data), int(now), 0o644
                tar.addfile(info, io.BytesIO(data))
    except OSError as error:
        raise UsageError(f"--collect: cannot write {str(target)!r}: {error.strerror}") from None
    return len(capture)


def read_bundle(path: str | os.PathLike[str]) -> RawCapture:
    """A bundle (.tar.gz, .tgz, .tar or a directory) as a RawCapture; any other file is one
    tool's output (plain or compressed), a bundle of one file."""
    source = Path(path)
    if source.is_dir():
        files = _strip_top(_read_dir(source))
    elif not source.is_file():
        raise UsageError(f"--from: {str(source)!r} is neither a bundle file nor a directory")
    elif _is_tar(source) or (source.name.lower().endswith(TAR_SUFFIXES)
                             and not _compressed(source)):
        try:
            with tarfile.open(source, "r:*") as tar:
                files = _strip_top(_read_tar(tar))
        except (tarfile.TarError, EOFError, OSError) as error:
            raise UsageError(f"--from: {str(source)!r} is not a readable .tar.gz bundle "
                             f"({_reason(error)})") from None
    else:
        files = _read_single(source)
    if not files:  # the wrong folder, most likely: an empty report would look like a pass
        raise UsageError(f"--from: {str(source)!r} holds no readable file; give {ACCEPTED}")
    return files


TAR_SUFFIXES = (".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
ACCEPTED = ("a bundle from --collect (.tar.gz, .tgz, .tar), a directory of tool outputs, or "
            "one tool's output file (plain, .gz, .bz2 or .xz)")


def _compressed(source: Path) -> bool:
    """gzip, bzip2 or xz by the magic bytes (a single tool output compressed, or a tar)."""
    try:
        with source.open("rb") as handle:
            return compression(handle.read(6)) is not None
    except OSError:
        return False


def _is_tar(source: Path) -> bool:
    """A tar archive, plain or compressed: its (decompressed) first block has tar's magic."""
    try:
        if _compressed(source):
            with tarfile.open(source, "r:*") as tar:
                tar.next()
            return True
        with source.open("rb") as handle:
            block = handle.read(512)
        return block[257:262] == b"ustar" or tarfile.is_tarfile(source)
    except (tarfile.TarError, EOFError, OSError):
        return False


def _read_single(source: Path) -> RawCapture:
    """One tool's output, plain or compressed, as a bundle of that one file: recognised by its
    content (recognize.place), named as it is without the compression suffix."""
    try:
        with source.open("rb") as handle:      # bounded: --from may name a checkpoint
            data = handle.read(MAX_MEMBER_BYTES * 4)
    except OSError as error:
        raise UsageError(f"--from: cannot read {str(source)!r}: {error.strerror}") from None
    if data.startswith(b"PK\x03\x04"):
        raise UsageError(f"--from: {str(source)!r} is a zip archive, which is not read; give "
                         f"{ACCEPTED}")
    try:
        text = decode_capture(data)
    except DecodeError as error:
        raise UsageError(f"--from: {str(source)!r} cannot be read ({error}); give "
                         f"{ACCEPTED}") from None
    head = text[:4096]
    if sum(c < " " and c not in "\t\n\r\f" for c in head) > 0.1 * len(head):
        raise UsageError(f"--from: {str(source)!r} is not text; give {ACCEPTED}")
    if not text.strip():
        raise UsageError(f"--from: {str(source)!r} is empty; give {ACCEPTED}")
    name = source.name
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    return {safe_name(name) or "output.txt": text}


def _reason(error: BaseException) -> str:
    """Why an archive cannot be read, on one line (tarfile lists every method it tried)."""
    if isinstance(error, tarfile.ReadError) and "\n" in str(error):
        return "not a gzip, bzip2, xz or plain tar archive"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _read_tar(tar: tarfile.TarFile) -> RawCapture:
    files: RawCapture = {}
    total = 0
    for count, member in enumerate(tar):
        if count >= MAX_MEMBERS:
            raise UsageError(f"--from: more than {MAX_MEMBERS} members; not a doctor bundle")
        if not member.isfile():
            continue  # directories, symlinks, hard links, devices: never followed
        name = safe_name(member.name)
        if name is None or member.size > MAX_MEMBER_BYTES:
            continue
        total += member.size
        if total > MAX_TOTAL_BYTES:
            raise UsageError(f"--from: bundle larger than {MAX_TOTAL_BYTES >> 20} MiB")
        handle = tar.extractfile(member)
        if handle is None:
            continue
        files[name] = _text(handle.read(MAX_MEMBER_BYTES + 1)[:MAX_MEMBER_BYTES])
    return files


def _text(data: bytes) -> str:
    """A member's text as captured (parsers.decode: BOM, UTF-16, ANSI, NULs, compressed); a
    member that claims a compression and does not decompress is read as it is."""
    try:
        return decode_capture(data)
    except DecodeError:
        return data.decode("utf-8", errors="replace")


def _read_dir(root: Path) -> RawCapture:
    files: RawCapture = {}
    total = 0
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(directory, d))]
        for filename in filenames:
            full = Path(directory) / filename
            if full.is_symlink() or not full.is_file():
                continue
            name = safe_name(full.relative_to(root).as_posix())
            try:
                size = full.stat().st_size
            except OSError:
                continue
            if name is None or size > MAX_MEMBER_BYTES:
                continue
            total += size
            if total > MAX_TOTAL_BYTES or len(files) >= MAX_MEMBERS:
                raise UsageError(f"--from: directory {str(root)!r} is too large for a bundle")
            try:
                files[name] = _text(full.read_bytes()[:MAX_MEMBER_BYTES])
            except OSError:
                continue
    return files
