"""Model test setup (helpers live in model_fixtures.py)."""

from __future__ import annotations

import torch

# One thread: the machine is shared, and torch's multi-threaded kernels slow down badly (10x seen)
# when cores are oversubscribed. Tiny fixture models gain nothing from threads anyway.
torch.set_num_threads(1)
