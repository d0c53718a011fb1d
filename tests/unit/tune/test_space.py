"""Search spaces: names checked against doctor's known variables, values against NCCL/RCCL's."""

from __future__ import annotations

import pytest

from collscope.errors import UsageError
from collscope.tune.space import (
    PRESETS,
    Config,
    Library,
    build_space,
    check_name,
    check_value,
    parse_assignment,
    preset_assignments,
)

GLOO, NCCL_216, NCCL_218, RCCL = (Library(), Library("nccl", (2, 16, 5)),
                                  Library("nccl", (2, 18, 3)), Library("rccl", (2, 20, 5)))


@pytest.mark.parametrize("name", ["NCCL_ALGO", "NCCL_IB_QPS_PER_CONNECTION", "RCCL_MSCCL_ENABLE",
                                  "GLOO_SOCKET_IFNAME", "HSA_ENABLE_SDMA", "UCX_TLS"])
def test_known_and_unlisted_family_names_are_accepted(name):
    check_name(name, "--space")


@pytest.mark.parametrize("name, needles", [
    ("NCCL_PROTOO", ["NCCL_PROTOO is not a variable", "did you mean NCCL_PROTO?"]),
    ("NCCL_MIN_NCHANNEL", ["did you mean NCCL_MIN_NCHANNELS?"]),
    ("RCCL_MSCCL_ENABEL", ["did you mean RCCL_MSCCL_ENABLE?"]),
    ("FOO_BAR", ["FOO_BAR is not a communication variable", "HSA_*"]),
    ("NCCL_MAX_NRINGS", ["NCCL_MAX_NRINGS is obsolete (rings became channels",
                         "use NCCL_MAX_NCHANNELS"]),
    ("RCCL_ENABLE_CLIQUE", ["removed in RCCL 2.12.10"]),
])
def test_unknown_names_are_refused_with_a_suggestion(name, needles):
    with pytest.raises(UsageError) as error:
        check_name(name, "--space")
    assert str(error.value).startswith("--space: ")
    for needle in needles:
        assert needle in str(error.value)


@pytest.mark.parametrize("name, value, library, problem", [
    ("NCCL_PROTO", "LL129", GLOO, "'ll129' is not a NCCL protocol"),
    ("NCCL_ALGO", "Rign", GLOO, "'rign' is not a NCCL algorithm"),
    ("NCCL_ALGO", "NVLS", RCCL, "not available in RCCL"),
    ("NCCL_ALGO", "NVLS", NCCL_216, "needs NCCL 2.17 or newer; installed: nccl 2.16.5"),
    ("NCCL_ALGO", "^PAT", NCCL_218, "needs NCCL 2.23"),
    ("NCCL_NTHREADS", "100", GLOO, "use 64, 128, 256, 512"),
    ("NCCL_MIN_CTAS", "33", GLOO, "outside 1..32"),
    ("NCCL_BUFFSIZE", "4M", GLOO, "not an integer"),
    ("NCCL_P2P_NET_CHUNKSIZE", "3000", GLOO, "not a power of two"),
    ("NCCL_NET_GDR_LEVEL", "FAR", GLOO, "use LOC, PIX, PXB, PHB, SYS or 0..5"),
    ("HSA_ENABLE_SDMA", "yes", GLOO, "use 0, 1"),
])
def test_values_the_library_does_not_accept_are_refused(name, value, library, problem):
    with pytest.raises(UsageError) as error:
        check_value(name, value, library, "--space")
    assert f"--space: {name}={value}: " in str(error.value)
    assert problem in str(error.value)


@pytest.mark.parametrize("name, value, library", [
    ("NCCL_ALGO", "Ring,Tree", GLOO), ("NCCL_ALGO", "nvls", NCCL_218),
    ("NCCL_PROTO", "^LL128", RCCL), ("NCCL_NET_GDR_LEVEL", "PHB", GLOO),
    ("NCCL_NET_GDR_LEVEL", "3", GLOO), ("NCCL_BUFFSIZE", "8388608", GLOO),
    ("UCX_TLS", "anything", GLOO),
])
def test_accepted_values(name, value, library):
    check_value(name, value, library, "--space")


def test_assignments_split_on_commas_and_plus_joins_a_list_value():
    assert parse_assignment("NCCL_PROTO=LL, LL128,Simple", "--space") == (
        "NCCL_PROTO", ["LL", "LL128", "Simple"])
    assert parse_assignment("NCCL_ALGO=Ring+Tree,Ring", "--space") == (
        "NCCL_ALGO", ["Ring,Tree", "Ring"])
    for bad in ("NCCL_PROTO", "=LL", "NCCL_PROTO="):
        with pytest.raises(UsageError, match="is not NAME=V1,V2"):
            parse_assignment(bad, "--space")


def test_baseline_is_the_environment_unset_the_library_default_or_a_stated_first_value():
    space = build_space([("NCCL_PROTO", ["LL", "Simple"]), ("NCCL_ALGO", ["Tree"]),
                         ("GLOO_SOCKET_IFNAME", ["eth1", "eth0"])],
                        {"NCCL_ALGO": "Ring"}, GLOO)
    assert space.baseline.as_dict() == {"NCCL_PROTO": None, "NCCL_ALGO": "Ring",
                                        "GLOO_SOCKET_IFNAME": "eth1"}
    notes = " ".join(space.baseline_notes)
    assert "NCCL_PROTO unset (the library's default)" in notes
    assert "NCCL_ALGO=Ring (inherited from this environment)" in notes
    assert "GLOO_SOCKET_IFNAME=eth1 (first value listed" in notes


def test_grid_has_the_baseline_first_and_no_duplicate():
    space = build_space([("NCCL_PROTO", ["LL", "Simple"]), ("GLOO_SOCKET_IFNAME", ["a", "b"])],
                        {}, GLOO)
    grid = space.grid()
    # 2 x 2 combinations; the baseline (PROTO unset, IFNAME=a) is not one of them -> 5
    assert len(grid) == 5 and grid[0] == space.baseline
    assert len(set(grid)) == 5
    inherited = build_space([("NCCL_PROTO", ["LL", "Simple"])], {"NCCL_PROTO": "LL"}, GLOO)
    assert [c.as_dict()["NCCL_PROTO"] for c in inherited.grid()] == ["LL", "Simple"]


def test_config_environment_sets_and_unsets_and_labels_changes():
    base = Config((("NCCL_ALGO", None), ("NCCL_PROTO", "LL")))
    config = Config((("NCCL_ALGO", "Tree"), ("NCCL_PROTO", "LL")))
    assert base.environment({"NCCL_ALGO": "Ring", "PATH": "/bin"}) == {"NCCL_PROTO": "LL",
                                                                       "PATH": "/bin"}
    assert config.label(base) == "NCCL_ALGO=Tree" and base.label(base) == "defaults"
    assert config.matches({"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "X": "1"})
    assert not base.matches({"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"})


def test_presets_keep_the_values_the_installed_library_accepts():
    on_218 = dict(preset_assignments("nccl-basic", NCCL_218))
    assert on_218["NCCL_ALGO"] == ["Ring", "Tree", "NVLS"]       # PAT needs 2.23
    assert dict(preset_assignments("nccl-basic", Library("nccl", (2, 23, 4))))["NCCL_ALGO"] == [
        "Ring", "Tree", "NVLS", "PAT"]
    on_rccl = dict(preset_assignments("nccl-basic", RCCL))
    assert on_rccl["NCCL_ALGO"] == ["Ring", "Tree", "PAT"]       # no NVLS in RCCL
    assert [name for name, _ in preset_assignments("rccl-basic", RCCL)] == [
        name for name, _ in PRESETS["rccl-basic"][1]]
    with pytest.raises(UsageError, match="accepted: rccl-basic, nccl-basic"):
        preset_assignments("fast", GLOO)


def test_an_empty_space_is_refused():
    with pytest.raises(UsageError, match="nothing to tune"):
        build_space([], {}, GLOO)
