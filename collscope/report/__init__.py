"""Reports over collscope records: result store, nccl-tests log import, compare, plots, HTML."""
