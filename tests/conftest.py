"""Suite-wide test setup."""

from __future__ import annotations

import torch

# One thread for the whole suite: CI machines have 2 cores, torch's multi-threaded kernels slow down
# badly (10x seen) when cores are oversubscribed, and the tiny fixture models gain nothing from threads.
torch.set_num_threads(1)
