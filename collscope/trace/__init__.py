"""`collscope trace`: a job's own torch.profiler traces against the cluster's measured curve."""
