"""The communication libraries' environment variables, as one catalogue: the names NCCL,
RCCL, torch's ProcessGroupNCCL and gloo read, the switches they dropped or renamed, the
debugging overrides that should not stay in a job script, and the typo check.

doctor's environment lint and tune's search spaces both read it, so a name doctor calls a
typo is one tune refuses.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# Overrides for experiments, harmful when forgotten in a job script: the algorithm, protocol,
# channel and buffer overrides NCCL's docs file under "Debugging" ("should not be used in
# production nor retained in scripts"), and switches that turn a transport off. They pin what
# NCCL/RCCL would otherwise tune per message size and topology.
DEBUG_KNOBS = {
    "NCCL_ALGO": "forces the collective algorithm (ring/tree/...) for every size",
    "NCCL_PROTO": "forces the protocol (LL/LL128/Simple) for every size",
    "NCCL_MIN_NCHANNELS": "forces a minimum channel count; RCCL's MI300 tuning models are "
                          "bypassed when it is set (RCCL changelog, ROCm 7.0)",
    "NCCL_MAX_NCHANNELS": "caps the channel count, which caps bandwidth on xGMI/NVLink",
    "NCCL_BUFFSIZE": "changes the per-channel buffer size from the tuned default",
    "NCCL_NTHREADS": "changes threads per block from the tuned default",
    "NCCL_P2P_DISABLE": "disables direct GPU-to-GPU transfers (xGMI/NVLink/PCIe P2P)",
    "NCCL_SHM_DISABLE": "disables the shared-memory transport",
    "NCCL_IB_DISABLE": "disables InfiniBand/RoCE: inter-node traffic goes over TCP sockets",
    "NCCL_CHECKS_DISABLE": "removes argument checks (only ever a micro-benchmark setting)",
    "NCCL_LAUNCH_MODE": "changes how kernels are launched",
}

# Switches that RCCL/NCCL/torch dropped or renamed. Sources, per entry:
#   RCCL CHANGELOG.md (github.com/ROCm/rccl): "RCCL-2.12.10 for ROCm 5.3.0 ... Removed
#   experimental clique-based kernels" (so RCCL_ENABLE_CLIQUE and its RCCL_CLIQUE_* tuning
#   knobs do nothing from 2.12.10 on); RCCL-2.8.4 for ROCm 4.3.0: "Replaced
#   RCCL_FORCE_ENABLE_CLIQUE to RCCL_CLIQUE_IGNORE_TOPO"; RCCL-2.13.4 for ROCm 5.4.0:
#   "RCCL_ENABLE_HIPGRAPH environment variable is no longer necessary to enable hipGraph".
#   NCCL docs index (2.4.x lists NCCL_MAX_NRINGS/NCCL_MIN_NRINGS; later releases list
#   NCCL_MAX_NCHANNELS/NCCL_MIN_NCHANNELS; NCCL_NET_GDR_LEVEL is "formerly NCCL_IB_GDR_LEVEL").
#   PyTorch "ProcessGroupNCCL Environment Variables": the TORCH_NCCL_* names replace the
#   NCCL_* spellings torch used to read (old names are still read, with a deprecation warning).
@dataclass(frozen=True)
class Obsolete:
    name: str
    library: str                        # rccl, nccl, torch
    removed_in: tuple[int, ...] | None  # library version from which it has no effect
    replacement: str | None
    note: str


OBSOLETE = {o.name: o for o in (
    Obsolete("RCCL_ENABLE_CLIQUE", "rccl", (2, 12, 10), None,
             "clique-based kernels were removed in RCCL 2.12.10 (ROCm 5.3)"),
    Obsolete("RCCL_CLIQUE_IGNORE_TOPO", "rccl", (2, 12, 10), None,
             "clique-based kernels were removed in RCCL 2.12.10 (ROCm 5.3)"),
    Obsolete("RCCL_CLIQUE_ALLREDUCE_BYTE_LIMIT", "rccl", (2, 12, 10), None,
             "clique-based kernels were removed in RCCL 2.12.10 (ROCm 5.3)"),
    Obsolete("RCCL_CLIQUE_ALLREDUCE_NCHANNELS", "rccl", (2, 12, 10), None,
             "clique-based kernels were removed in RCCL 2.12.10 (ROCm 5.3)"),
    Obsolete("RCCL_FORCE_ENABLE_CLIQUE", "rccl", (2, 8, 4), None,
             "replaced by RCCL_CLIQUE_IGNORE_TOPO in RCCL 2.8.4 (ROCm 4.3), itself removed "
             "with the clique kernels in RCCL 2.12.10"),
    Obsolete("RCCL_ENABLE_HIPGRAPH", "rccl", (2, 13, 4), None,
             "hipGraph support needs no opt-in since RCCL 2.13.4 (ROCm 5.4)"),
    Obsolete("NCCL_MAX_NRINGS", "nccl", None, "NCCL_MAX_NCHANNELS",
             "rings became channels (NCCL 2.5 docs)"),
    Obsolete("NCCL_MIN_NRINGS", "nccl", None, "NCCL_MIN_NCHANNELS",
             "rings became channels (NCCL 2.5 docs)"),
    Obsolete("NCCL_IB_GDR_LEVEL", "nccl", None, "NCCL_NET_GDR_LEVEL",
             "renamed (NCCL docs: NCCL_NET_GDR_LEVEL, formerly NCCL_IB_GDR_LEVEL)"),
    Obsolete("NCCL_ASYNC_ERROR_HANDLING", "torch", None, "TORCH_NCCL_ASYNC_ERROR_HANDLING",
             "torch reads the TORCH_NCCL_ name; the old one is deprecated"),
    Obsolete("NCCL_BLOCKING_WAIT", "torch", None, "TORCH_NCCL_BLOCKING_WAIT",
             "torch reads the TORCH_NCCL_ name; the old one is deprecated"),
    Obsolete("NCCL_DESYNC_DEBUG", "torch", None, "TORCH_NCCL_DESYNC_DEBUG",
             "torch reads the TORCH_NCCL_ name; the old one is deprecated"),
)}

# Names collscope knows (NCCL and RCCL docs, RCCL changelog, torch docs and libtorch), used to
# catch typos: a variable with a known prefix that is not here but close to an entry.
KNOWN_NCCL = frozenset("""
NCCL_DEBUG NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS NCCL_DEBUG_TIMESTAMP_FORMAT
NCCL_DEBUG_TIMESTAMP_LEVELS NCCL_CONF_FILE NCCL_HOSTID NCCL_COMM_ID NCCL_SOCKET_IFNAME
NCCL_SOCKET_FAMILY NCCL_SOCKET_NTHREADS NCCL_NSOCKS_PERTHREAD NCCL_SOCKET_RETRY_CNT
NCCL_SOCKET_RETRY_SLEEP_MSEC NCCL_UID_STAGGER_THRESHOLD NCCL_UID_STAGGER_RATE
NCCL_IB_DISABLE NCCL_IB_HCA NCCL_IB_TIMEOUT NCCL_IB_RETRY_CNT NCCL_IB_GID_INDEX
NCCL_IB_ADDR_FAMILY NCCL_IB_ADDR_RANGE NCCL_IB_ROCE_VERSION_NUM NCCL_IB_SL NCCL_IB_TC
NCCL_IB_FIFO_TC NCCL_IB_RETURN_ASYNC_EVENTS NCCL_IB_AR_THRESHOLD NCCL_IB_QPS_PER_CONNECTION
NCCL_IB_SPLIT_DATA_ON_QPS NCCL_IB_CUDA_SUPPORT NCCL_IB_PCI_RELAXED_ORDERING
NCCL_IB_ADAPTIVE_ROUTING NCCL_IB_ECE_ENABLE NCCL_IB_MERGE_VFS NCCL_IB_MERGE_NICS
NCCL_IB_MQP_RETRY_ALL NCCL_IB_MQP_RETRY_CNT NCCL_IB_MQP_RETRY_SLEEP_MSEC NCCL_IB_USE_INLINE
NCCL_IB_SOCK_CLIENT_PORT_REUSE NCCL_IB_SOCK_SERVER_PORT_REUSE NCCL_IBVERBS_LIB
NCCL_LIBIBVERBS_SO NCCL_OOB_NET_ENABLE NCCL_OOB_NET_IFNAME NCCL_NET NCCL_NET_PLUGIN
NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCL_ENV_PLUGIN NCCL_NET_GDR_LEVEL NCCL_NET_GDR_READ
NCCL_NET_GDR_C2C NCCL_NET_SHARED_BUFFERS NCCL_NET_SHARED_COMMS NCCL_NET_DISABLE_INTRA
NCCL_NET_FORCE_FLUSH NCCL_NET_OVERHEAD NCCL_NET_MERGE_LEVEL NCCL_NET_FORCE_MERGE
NCCL_SINGLE_RING_THRESHOLD NCCL_LL_THRESHOLD NCCL_TREE_THRESHOLD NCCL_ALGO NCCL_PROTO
NCCL_IGNORE_CPU_AFFINITY NCCL_CROSS_NIC NCCL_COLLNET_ENABLE NCCL_COLLNET_NODE_THRESHOLD
NCCL_TOPO_FILE NCCL_TOPO_DUMP_FILE NCCL_TOPO_DUMP_FILE_RANK NCCL_GRAPH_FILE
NCCL_GRAPH_DUMP_FILE NCCL_GRAPH_DUMP_FILE_RANK NCCL_NVB_DISABLE NCCL_PXN_DISABLE
NCCL_P2P_PXN_LEVEL NCCL_PXN_C2C NCCL_GRAPH_REGISTER NCCL_LOCAL_REGISTER
NCCL_LEGACY_CUDA_REGISTER NCCL_SET_STACK_SIZE NCCL_SET_THREAD_NAME NCCL_GRAPH_MIXING_SUPPORT
NCCL_DMABUF_ENABLE NCCL_P2P_NET_CHUNKSIZE NCCL_P2P_PCI_CHUNKSIZE NCCL_P2P_NVL_CHUNKSIZE
NCCL_P2P_LL_THRESHOLD NCCL_ALLOC_P2P_NET_LL_BUFFERS NCCL_COMM_BLOCKING NCCL_CGA_CLUSTER_SIZE
NCCL_MAX_CTAS NCCL_MIN_CTAS NCCL_NVLS_ENABLE NCCL_NVLS_NCHANNELS NCCL_NVLS_CHUNKSIZE
NCCL_NVLSTREE_MAX_CHUNKSIZE NCCL_MNNVL_ENABLE NCCL_MNNVL_UUID NCCL_MNNVL_CLIQUE_ID
NCCL_RAS_ENABLE NCCL_RAS_ADDR NCCL_RAS_TIMEOUT_FACTOR NCCL_CUMEM_ENABLE NCCL_CUMEM_HOST_ENABLE
NCCL_RUNTIME_CONNECT NCCL_WORK_FIFO_DEPTH NCCL_WORK_FIFO_BYTES NCCL_NCHANNELS_PER_NET_PEER
NCCL_NCHANNELS_PER_PEER NCCL_P2P_DISABLE NCCL_P2P_LEVEL NCCL_P2P_DIRECT_DISABLE
NCCL_P2P_READ_ENABLE NCCL_P2P_USE_CUDA_MEMCPY NCCL_SHM_DISABLE NCCL_SHM_USE_CUDA_MEMCPY
NCCL_SHM_MEMCPY_MODE NCCL_SHM_LOCALITY NCCL_BUFFSIZE NCCL_NTHREADS NCCL_MAX_NCHANNELS
NCCL_MIN_NCHANNELS NCCL_MAX_NRINGS NCCL_MIN_NRINGS NCCL_RINGS NCCL_CHECKS_DISABLE
NCCL_CHECK_POINTERS NCCL_LAUNCH_MODE NCCL_THREAD_THRESHOLDS NCCL_GDRCOPY_ENABLE
NCCL_GDRCOPY_FLUSH_ENABLE NCCL_GDRCOPY_SYNC_ENABLE NCCL_PROXY_PROFILE NCCL_CTA_POLICY
NCCL_RINGS_REMAP NCCL_IB_GDR_LEVEL NCCL_ASYNC_ERROR_HANDLING NCCL_BLOCKING_WAIT
NCCL_DESYNC_DEBUG NCCL_BOOTSTRAP_BIDIR_ALLGATHER
""".split())

KNOWN_RCCL = frozenset("""
RCCL_MSCCL_ENABLE RCCL_MSCCL_FORCE_ENABLE RCCL_MSCCLPP_ENABLE RCCL_MSCCLPP_THRESHOLD
RCCL_UNROLL_FACTOR RCCL_SOCKET_REUSEADDR RCCL_SOCKET_LINGER RCCL_DISABLE_RAIL_TREES
RCCL_OUTPUT_TREES RCCL_ENABLE_SIGNALHANDLER RCCL_LOG_LEVEL RCCL_LL128_FORCE_ENABLE
RCCL_ENABLE_HIPGRAPH RCCL_ENABLE_CLIQUE RCCL_CLIQUE_IGNORE_TOPO RCCL_CLIQUE_ALLREDUCE_BYTE_LIMIT
RCCL_CLIQUE_ALLREDUCE_NCHANNELS RCCL_FORCE_ENABLE_CLIQUE
""".split())

KNOWN_TORCH_NCCL = frozenset("""
TORCH_NCCL_ASYNC_ERROR_HANDLING TORCH_NCCL_HIGH_PRIORITY TORCH_NCCL_BLOCKING_WAIT
TORCH_NCCL_DUMP_ON_TIMEOUT TORCH_NCCL_DESYNC_DEBUG TORCH_NCCL_ENABLE_TIMING
TORCH_NCCL_ENABLE_MONITORING TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC TORCH_NCCL_TRACE_BUFFER_SIZE
TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC TORCH_NCCL_COORD_CHECK_MILSEC TORCH_NCCL_ABORT_IN_DESTROY_PG
TORCH_NCCL_AVOID_RECORD_STREAMS TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK
TORCH_NCCL_DEBUG_INFO_PIPE_FILE TORCH_NCCL_DEBUG_INFO_TEMP_FILE TORCH_NCCL_TRACE_CPP_STACK
TORCH_NCCL_NAN_CHECK TORCH_NCCL_CUDA_EVENT_CACHE TORCH_NCCL_PROPAGATE_ERROR
TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN TORCH_NCCL_RETHROW_CUDA_ERRORS
""".split())

KNOWN_GLOO = frozenset("""
GLOO_SOCKET_IFNAME GLOO_DEVICE_TRANSPORT GLOO_DISABLE_CONNECTION_RETRIES
GLOO_ENABLE_RANK_AS_SEQUENCE_NUMBER GLOO_LOG_LEVEL
""".split())

KNOWN = KNOWN_NCCL | KNOWN_RCCL | KNOWN_TORCH_NCCL | KNOWN_GLOO
# Prefixes whose names are checked for typos (UCX_ and HSA_ have hundreds of knobs).
TYPO_PREFIXES = ("NCCL_", "RCCL_", "TORCH_NCCL_", "GLOO_")
TYPO_CUTOFF = 0.85


def closest_known(name: str) -> str | None:
    """The known variable ``name`` most likely misspells, or None."""
    matches = difflib.get_close_matches(name, sorted(KNOWN), n=1, cutoff=TYPO_CUTOFF)
    return matches[0] if matches and matches[0] != name else None
