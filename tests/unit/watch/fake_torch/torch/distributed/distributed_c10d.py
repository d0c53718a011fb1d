"""Stands in for torch/distributed/distributed_c10d.py in the main-thread wait tests: a
collective that blocks (as gloo's work.wait() does) until the test lets it go. Only its path
and function names matter to collscope.watch.waits."""

import threading


def all_reduce(tensor, release: threading.Lock, group=None):
    release.acquire()       # a held lock: blocked in C, as in gloo's work.wait()
    return tensor
