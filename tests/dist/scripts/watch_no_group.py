"""Imports torch.distributed but never makes a process group; prints and exits EXIT_CODE."""

import os
import sys

import torch.distributed as dist

print(f"distributed available: {dist.is_available()}, initialised: {dist.is_initialized()}")
sys.exit(int(os.environ.get("EXIT_CODE", 0)))
