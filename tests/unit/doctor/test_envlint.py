"""NCCL's interface/HCA list syntax, as NCCL documents it, and the typo helper."""

from __future__ import annotations

import pytest

from collscope.doctor.envlint import ListEntry, parse_name_list
from collscope.envvars import KNOWN, OBSOLETE, closest_known
from collscope.versions import version_tuple

IFACES = ["lo", "eth0", "eth1", "ens5", "docker0", "ib0"]


@pytest.mark.parametrize("value, chosen", [
    ("eth", ["eth0", "eth1"]),                     # prefixes
    ("=eth0", ["eth0"]),                           # exact name
    ("=eth0,ens5", ["eth0", "ens5"]),              # '=' applies to the whole list
    ("=eth", []),                                  # exact: no interface is called "eth"
    ("^docker", ["lo", "eth0", "eth1", "ens5", "ib0"]),
    ("^=docker0,lo", ["eth0", "eth1", "ens5", "ib0"]),
    ("^=docker", IFACES),                          # exact exclude of a name that is not there
    ("eth,ib", ["eth0", "eth1", "ib0"]),
    (" eth0 , ", ["eth0"]),                        # blanks and empty entries ignored
    ("mlx5", []),
])
def test_socket_ifname_selection_follows_nccl_rules(value, chosen):
    names = parse_name_list(value)
    assert [i for i in IFACES if names.selects(i)] == chosen


def test_ib_hca_ports_and_unmatched_entries():
    names = parse_name_list("=mlx5_0:1,mlx5_1:2,mlx5_9", with_ports=True)
    assert names.exact and not names.exclude
    assert names.entries == (ListEntry("mlx5_0", 1), ListEntry("mlx5_1", 2), ListEntry("mlx5_9"))
    assert names.selects("mlx5_0", 1) and not names.selects("mlx5_0", 2)
    assert names.selects("mlx5_9", 3)                       # no port: every port
    assert [e.name for e in names.unmatched(["mlx5_0", "mlx5_1"])] == ["mlx5_9"]
    bad = parse_name_list("mlx5_0:x", with_ports=True)
    assert bad.entries[0].bad_port == "x"


def test_ib_hca_exclude_with_ports():
    names = parse_name_list("^mlx5_1:1", with_ports=True)
    assert names.exclude and not names.selects("mlx5_1", 1) and names.selects("mlx5_1", 2)
    assert names.selects("mlx5_0", 1)


@pytest.mark.parametrize("name, expected", [
    ("NCCL_SOCKET_IFNAMES", "NCCL_SOCKET_IFNAME"),
    ("NCCL_IB_HCAS", "NCCL_IB_HCA"),
    ("RCCL_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"),
    ("NCCL_DEBG", "NCCL_DEBUG"),
    ("TORCH_NCCL_BLOKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"),
    ("NCCL_SOCKET_IFNAME", None),                 # known names are not typos of themselves
    ("NCCL_SOMETHING_ELSE_ENTIRELY", None),
])
def test_closest_known(name, expected):
    assert closest_known(name) == expected


def test_tables_are_consistent():
    assert all(name in KNOWN for name in OBSOLETE)
    for entry in OBSOLETE.values():
        assert entry.replacement is None or entry.replacement in KNOWN
        assert entry.removed_in is not None or entry.replacement is not None


@pytest.mark.parametrize("text, expected", [
    ("2.21.5", (2, 21, 5)), ("2.21.5-HEAD:eef7b29", (2, 21, 5)), ("2.18.3+cuda12.2", (2, 18, 3)),
    ("", None), (None, None), ("abc", None), ("2.²1", (2,)), ("٣.1", None),
])
def test_version_tuple(text, expected):
    assert version_tuple(text) == expected
