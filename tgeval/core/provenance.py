"""What a result or a checkpoint records about where it was made: package versions, the
thread settings, peak memory and the creation time. Collected here once, for the replay's
manifests (:mod:`tgeval.eval.engine`), checkpoints (:mod:`tgeval.training.checkpoint`) and the
timings of :func:`~tgeval.training.fitting.fit`."""

from __future__ import annotations

import platform
import sys
from datetime import datetime, timezone

import numpy as np
import torch
import torch_geometric

__all__ = ["versions", "threads", "peak_memory", "created"]


def versions() -> dict[str, str]:
    """Versions of tgeval, torch, PyG, NumPy and Python, and the platform string."""
    from tgeval import __version__

    found = {"tgeval": __version__, "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
             "numpy": np.__version__, "python": sys.version.split()[0], "platform": platform.platform()}
    return {key: str(value) for key, value in found.items()}  # plain str: torch's version is a str subclass


def threads() -> dict[str, int]:
    """torch's intra-op and inter-op thread counts now."""
    return {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()}


def peak_memory(device: torch.device) -> dict[str, int]:
    """The process's lifetime peak RSS (POSIX only) and, on CUDA, the device's peak allocation
    since its last ``torch.cuda.reset_peak_memory_stats``."""
    out: dict[str, int] = {}
    try:
        import resource

        out["process_peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except ImportError:  # not on POSIX
        pass
    if device.type == "cuda":
        out["peak_cuda_bytes"] = torch.cuda.max_memory_allocated(device)
    return out


def created() -> str:
    """The time now, UTC, ISO 8601 to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
