"""Kernel and annotation names decoded: table-driven."""

from __future__ import annotations

import pytest

from collscope.collectives.names import canonical_trace_dtype, collective_from_annotation
from collscope.trace.kernels import decode_kernel, is_comm_kernel, is_compute_kernel


@pytest.mark.parametrize("name, collective, algorithm, protocol, dtype", [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "all_reduce", "RING", "LL",
     "float"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "all_reduce", "RING", "LL", "float"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_gather", "RING",
     "LL", None),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL128", "reduce_scatter", "RING", "LL128",
     "bfloat16"),
    ("ncclDevKernel_AllReduce_Sum_f16_TREE_SIMPLE", "all_reduce", "TREE", "SIMPLE", "half"),
    ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_SIMPLE", "all_reduce", "NVLS", "SIMPLE", "bfloat16"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     "sendrecv", "RING", "SIMPLE", None),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)", "broadcast", "RING", "LL",
     None),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "sendrecv", None, None, None),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", None, None, None, None),
    ("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", None, None, None, None),
    ("void c10d::symmetric_memory::multimem_all_reduce_kernel<float, 16, 4>(float*, ...)",
     "all_reduce", "MULTIMEM", None, None),
    ("void c10d::symmetric_memory::one_shot_all_reduce_kernel<c10::BFloat16, 16>(...)",
     "all_reduce", "ONE_SHOT", None, None),
])
def test_decode_kernel(name, collective, algorithm, protocol, dtype):
    info = decode_kernel(name)
    assert (info.collective, info.algorithm, info.protocol, info.dtype) == (
        collective, algorithm, protocol, dtype)
    assert is_comm_kernel(name)
    assert not is_compute_kernel(name)


@pytest.mark.parametrize("name, comm, compute", [
    ("volta_sgemm_128x64_nn", False, True),
    ("void at::native::vectorized_elementwise_kernel<4, ...>", False, True),
    ("Memcpy DtoD (Device -> Device)", False, False),
    ("Memset (Device)", False, False),
    ("cudaStreamSynchronize", False, False),
    ("rcclGenericKernel", True, False),
])
def test_kernel_kinds(name, comm, compute):
    assert is_comm_kernel(name) is comm
    assert is_compute_kernel(name) is compute


@pytest.mark.parametrize("text, expected", [
    ("allreduce", "all_reduce"), ("c10d::allreduce_", "all_reduce"),
    ("nccl:all_reduce", "all_reduce"), ("gloo:all_reduce", "all_reduce"),
    ("c10d::_allgather_base_", "all_gather"), ("nccl:_all_gather_base", "all_gather"),
    ("_reduce_scatter_base", "reduce_scatter"), ("reduce_scatter_tensor_coalesced",
                                                 "reduce_scatter"),
    ("nccl:all_to_all", "alltoall"), ("c10d::alltoall_base_", "alltoall"),
    ("broadcast", "broadcast"), ("c10d::broadcast_", "broadcast"), ("send", "sendrecv"),
    ("c10d::barrier", "barrier"), ("wait", None), ("coalesced", None),
    ("aten::mm", None),
])
def test_collective_from_annotation(text, expected):
    assert collective_from_annotation(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Float", "float"), ("BFloat16", "bfloat16"), ("Half", "half"), ("Long", "int64"),
    ("Byte", "uint8"), ("c10::BFloat16", "bfloat16"), ("float", "float"),
    ("unsigned char", "uint8"), ("double", "double"), ("Int", "int32"), ("", None),
    (None, None), ("TensorList", None),
])
def test_trace_dtypes(text, expected):
    assert canonical_trace_dtype(text) == expected


@pytest.mark.parametrize("name, dtype", [
    ("ncclKernel_AllReduce_RING_LL_Sum_int32_t(ncclWorkElem)", "int32"),
    ("ncclKernel_AllReduce_RING_LL_Sum___nv_bfloat16(ncclWorkElem)", "bfloat16"),
    ("ncclDevKernel_ReduceScatter_Sum_u8_RING_LL", "uint8"),
])
def test_reduction_dtypes_from_kernel_names(name, dtype):
    assert decode_kernel(name).dtype == dtype
