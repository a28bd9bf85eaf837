"""The cluster engine's names under their old import path; the engine is `spotlab.cluster`.

``POLICIES`` are the registered scheduler names (`spotlab.cluster.registry.SCHEDULERS`).
"""

from __future__ import annotations

from ..cluster.engine import Engine, simulate
from ..cluster.registry import SCHEDULERS
from ..cluster.result import ClusterResult
from ..cluster.state import Cluster, ClusterError, NodePool, Option, SimJob

__all__ = ["POLICIES", "Cluster", "ClusterError", "ClusterResult", "Engine", "NodePool", "Option", "SimJob",
           "simulate"]

POLICIES = tuple(SCHEDULERS)
