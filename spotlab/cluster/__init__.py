"""A shared GPU cluster running jobs: one event-driven engine with swappable scheduling and placement stages.

accept (`admission`) -> schedule (`schedulers/`, e.g. ``fifo``, ``sia``) -> place (`placement/`, ``best_fit``)
-> run (`engine`). `simulate(cluster, jobs, scheduler="fifo")` is a whole run, `Engine` the same run one decision
at a time. The cluster and the jobs are described in `state`, the results in `result`; schedulers and placements
are registered by name in `registry`.

The names below are loaded on first use, so importing one module of this package does not import the others.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Cluster": "state", "ClusterError": "state", "NodePool": "state", "Option": "state", "SimJob": "state",
    "ClusterState": "state", "Fit": "state",
    "ClusterResult": "result",
    "Engine": "engine", "simulate": "engine",
    "SCHEDULERS": "registry", "PLACEMENTS": "registry", "make_scheduler": "registry", "make_placement": "registry",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
