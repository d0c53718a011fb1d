import pytest

from collscope.errors import UsageError
from collscope.runtime.launchers import detect_launcher, expand_nodelist


@pytest.mark.parametrize("nodelist, hosts", [
    ("node1", ["node1"]),
    ("node1,node2", ["node1", "node2"]),
    ("gpu[01-04,07],login2", ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "login2"]),
    ("gpu[1-3]", ["gpu1", "gpu2", "gpu3"]),
    ("gpu[008-010]", ["gpu008", "gpu009", "gpu010"]),
    ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
    ("a[1,3],b[2-3]", ["a1", "a3", "b2", "b3"]),
    ("mi300x-[5]", ["mi300x-5"]),
])
def test_expand_nodelist(nodelist, hosts):
    assert expand_nodelist(nodelist) == hosts


def test_expand_nodelist_rejects_reversed_range():
    with pytest.raises(UsageError, match="cannot expand"):
        expand_nodelist("gpu[04-01]")


def test_no_launcher():
    assert detect_launcher({"HOME": "/root", "PATH": "/bin"}) is None


def test_torchrun_multi_node():
    info = detect_launcher({
        "RANK": "9", "WORLD_SIZE": "16", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "8",
        "GROUP_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29400",
        "TORCHELASTIC_RUN_ID": "x"})
    assert (info.launcher, info.rank, info.world_size, info.local_rank) == ("torchrun", 9, 16, 1)
    assert (info.local_world_size, info.node_rank) == (8, 1)
    assert (info.master_addr, info.master_port) == ("node0", 29400)


def test_torchrun_single_node_defaults_master_to_loopback():
    info = detect_launcher({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
                            "LOCAL_WORLD_SIZE": "2"})
    assert (info.master_addr, info.master_port) == ("127.0.0.1", 29500)


@pytest.mark.parametrize("nodelist_var", ["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"])
def test_slurm(nodelist_var):
    info = detect_launcher({
        "SLURM_PROCID": "11", "SLURM_NTASKS": "16", "SLURM_STEP_NUM_TASKS": "16",
        "SLURM_LOCALID": "3", "SLURM_NODEID": "1", "SLURM_STEP_TASKS_PER_NODE": "8(x2)",
        nodelist_var: "gpu[07-08]", "SLURM_JOB_ID": "123456"})
    assert (info.launcher, info.rank, info.world_size) == ("slurm", 11, 16)
    assert (info.local_rank, info.local_world_size, info.node_rank) == (3, 8, 1)
    assert info.master_addr == "gpu07"
    assert info.master_port == 20000 + 123456 % 10000


def test_slurm_compressed_nodelist_and_explicit_master():
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "6", "SLURM_LOCALID": "0", "SLURM_NODEID": "0",
           "SLURM_TASKS_PER_NODE": "1(x6)", "SLURM_JOB_NODELIST": "gpu[01-04,07],login2"}
    assert detect_launcher(env).master_addr == "gpu01"
    env["MASTER_ADDR"], env["MASTER_PORT"] = "10.0.0.5", "1234"
    info = detect_launcher(env)
    assert (info.master_addr, info.master_port, info.local_world_size) == ("10.0.0.5", 1234, 1)


def test_slurm_without_nodelist_or_master_is_a_usage_error():
    with pytest.raises(UsageError, match="SLURM"):
        detect_launcher({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"})


def test_openmpi():
    info = detect_launcher({
        "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
        "OMPI_COMM_WORLD_NODE_RANK": "1", "MASTER_ADDR": "host0"})
    assert (info.launcher, info.rank, info.world_size, info.local_rank) == ("openmpi", 5, 8, 1)
    # OMPI_COMM_WORLD_NODE_RANK is the rank on the node across jobs, not the node's index:
    # the nodes come from host names.
    assert (info.local_world_size, info.node_rank, info.master_addr) == (4, None, "host0")


def test_openmpi_single_node_needs_no_master():
    info = detect_launcher({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
                            "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"})
    assert info.master_addr == "127.0.0.1"


def test_openmpi_multi_node_without_master_says_how_to_fix():
    with pytest.raises(UsageError, match="MASTER_ADDR"):
        detect_launcher({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "8",
                         "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"})


def test_openmpi_inside_slurm_takes_master_from_nodelist():
    info = detect_launcher({
        "OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8",
        "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
        "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "mi300x-[01-02]"})
    assert (info.launcher, info.rank, info.master_addr) == ("openmpi", 3, "mi300x-01")


def test_pmi():
    info = detect_launcher({"PMI_RANK": "2", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0",
                            "MPI_LOCALNRANKS": "2", "MASTER_ADDR": "n0"})
    assert (info.launcher, info.rank, info.world_size) == ("pmi", 2, 4)
    assert (info.local_rank, info.local_world_size, info.node_rank) == (0, 2, None)


def test_bad_integer_names_the_variable():
    with pytest.raises(UsageError, match="WORLD_SIZE='two'"):
        detect_launcher({"RANK": "0", "WORLD_SIZE": "two", "LOCAL_RANK": "0"})
