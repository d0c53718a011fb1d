"""parsers.decode: captured files as users save them read as the same text."""

from __future__ import annotations

import bz2
import codecs
import gzip
import lzma

import pytest

from collscope.parsers.decode import DecodeError, compression, decode_capture, decompress

LOG = "# nThread 1\n#  Rank  0 Group  0 Pid 7 on nöde1 device  0 [0000:05:00] AMD MI300X\n" \
      "     1048576        262144     float     sum      -1   10.5  99.86  174.76      0\n"


@pytest.mark.parametrize("pack", [gzip.compress, bz2.compress, lzma.compress],
                         ids=["gzip", "bzip2", "xz"])
def test_compressed_files_are_unpacked_by_their_magic(pack):
    assert decode_capture(pack(LOG.encode())) == LOG


@pytest.mark.parametrize("data", [
    codecs.BOM_UTF8 + LOG.encode(),
    codecs.BOM_UTF16_LE + LOG.encode("utf-16-le"),    # PowerShell's `>`
    codecs.BOM_UTF16_BE + LOG.encode("utf-16-be"),
    LOG.encode("utf-16-le"),                            # no BOM: told by its NUL bytes
    codecs.BOM_UTF32_LE + LOG.encode("utf-32-le"),
    gzip.compress(codecs.BOM_UTF16_LE + LOG.encode("utf-16-le")),
], ids=["utf8-bom", "utf16le-bom", "utf16be-bom", "utf16le", "utf32le-bom", "gzip-utf16"])
def test_encodings_marked_or_recognised(data):
    assert decode_capture(data) == LOG


def test_a_latin1_line_keeps_its_characters_and_the_rest_stays_utf8():
    data = "µs first\n".encode() + "host nöde1\n".encode("latin-1") + "nüde1 ok\n".encode()
    assert decode_capture(data) == "µs first\nhost nöde1\nnüde1 ok\n"
    # Two Latin-1 host names stay two hosts (not both n\ufffdde1).
    two = "nöde1\nnüde1\n".encode("latin-1")
    assert decode_capture(two).splitlines() == ["nöde1", "nüde1"]


def test_ansi_colours_and_nuls_are_removed_and_line_breaks_kept():
    coloured = "\x1b[36mrccl-tests: Version develop:abc\x1b[0m\r\n\x1b]0;title\x07row\x00\x00\n"
    assert decode_capture(coloured.encode()) == "rccl-tests: Version develop:abc\r\nrow\n"


def test_a_few_nuls_are_not_mistaken_for_utf16():
    data = b"# plain text\n" * 50 + b"\x00" * 4
    assert decode_capture(data) == "# plain text\n" * 50


def test_corrupt_compression_is_one_clear_error_and_plain_bytes_pass():
    with pytest.raises(DecodeError, match="looks gzip-compressed but does not decompress"):
        decode_capture(b"\x1f\x8b" + b"junk" * 10)
    assert decompress(b"plain") == b"plain"


def test_decompressed_size_is_bounded():
    with pytest.raises(DecodeError, match="more than 1 MiB"):
        decompress(gzip.compress(b"\0" * (2 << 20)), limit=1 << 20)


# bzip2 decodes whole blocks of up to 900 kB: a cut block is lost (bzcat loses it too).
@pytest.mark.parametrize(("pack", "kept"), [(gzip.compress, 0.9), (lzma.compress, 0.9),
                                            (bz2.compress, 0.0)], ids=["gzip", "xz", "bzip2"])
def test_a_file_cut_short_keeps_what_unpacks_as_zcat_does(pack, kept):
    log = "".join(f"{1 << k:12d} {k:6d} float sum -1 {k + 0.5:8.2f}\n" for k in range(4000))
    packed = pack(log.encode())
    text = decode_capture(packed[:-200])          # a job killed while compressing its log
    assert log.startswith(text) and len(text) >= kept * len(log)


def test_concatenated_members_are_all_unpacked():
    assert decode_capture(gzip.compress(b"first\n") + gzip.compress(b"second\n")) == \
        "first\nsecond\n"


def test_compression_is_told_by_magic():
    assert [compression(p(b"x")) for p in (gzip.compress, bz2.compress, lzma.compress)] == \
        ["gzip", "bzip2", "xz"]
    assert compression(b"plain text") is None
