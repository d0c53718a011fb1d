import pytest

from collscope.errors import UsageError
from collscope.units import format_size, parse_size


@pytest.mark.parametrize("text, value", [
    ("8", 8), ("64K", 65536), ("64k", 65536), ("1M", 1 << 20), ("4G", 4 << 30),
    ("1T", 1 << 40), ("1.5M", 3 << 19), ("16MiB", 16 << 20), ("2KB", 2048), ("0", 0),
])
def test_parse_size(text, value):
    assert parse_size(text, "-b/--min-bytes") == value


@pytest.mark.parametrize("text", ["12Q", "", "-1", "M", "1.3", "1e6", "4 G B"])
def test_parse_size_rejects_with_flag_name(text):
    with pytest.raises(UsageError) as error:
        parse_size(text, "-b/--min-bytes")
    assert str(error.value).startswith("-b/--min-bytes:")
    assert "\n" not in str(error.value)


def test_format_size():
    assert [format_size(n) for n in (8, 65536, 3 << 19, 4 << 30)] == \
        ["8 B", "64 KiB", "1.5 MiB", "4 GiB"]


@pytest.mark.parametrize("value, options, text", [
    (1536, {}, "1.5 KiB"),
    (3 << 40, {"largest": "GiB"}, "3072 GiB"),                   # capped unit (report tables)
    (int(15.5 * (1 << 30)), {"whole_from": 10}, "16 GiB"),       # doctor: whole from 10 units
    (2048, {"places": 2, "trim_whole": False}, "2.00 KiB"),      # monitor: fixed decimals
    (2.5e9, {"decimal": True, "places": 2}, "2.50 GB"),          # traffic in decimal units
    (-3 << 20, {}, "-3 MiB"),
    (0, {}, "0 B"),
])
def test_format_bytes(value, options, text):
    from collscope.units import format_bytes

    assert format_bytes(value, **options) == text
