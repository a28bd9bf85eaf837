"""The cluster engine's registries: one line per scheduler and per placement, ``"module:Class"`` imported on use.

A new scheduler is one module in `spotlab.cluster.schedulers` (a `Scheduler` subclass) and one line in
`SCHEDULERS`; a new placement, one module in `spotlab.cluster.placement` and one line in `PLACEMENTS`.
`make_scheduler("sia", window=32)` builds one by name; an unknown name or parameter is a one-line `ClusterError`
listing the valid ones. Names end here: the engine below takes built objects, `simulate` above resolves names.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ClusterError

__all__ = ["PLACEMENTS", "SCHEDULERS", "make_placement", "make_scheduler"]

SCHEDULERS: dict[str, str] = {
    "fifo": "spotlab.cluster.schedulers.fifo:Fifo",
    "sia": "spotlab.cluster.schedulers.sia:Sia",
    "fcfs": "spotlab.cluster.schedulers.fifo:Fifo",  # FIFO is strict first come, first served: the same class
    "easy": "spotlab.cluster.schedulers.easy:EasyBackfill",
    "sjf": "spotlab.cluster.schedulers.sjf:ShortestJobFirst",
    "smallest_first": "spotlab.cluster.schedulers.smallest_first:SmallestFirst",
    "multifactor": "spotlab.cluster.schedulers.multifactor:Multifactor",
    "f1": "spotlab.cluster.schedulers.f1:F1",
    "random": "spotlab.cluster.schedulers.random_order:RandomOrder",
    "rl_agent": "spotlab.rl.scheduler:RLAgent",
}

PLACEMENTS: dict[str, str] = {
    "best_fit": "spotlab.cluster.placement.best_fit:BestFit",
    "scored": "spotlab.cluster.placement.scored:ScoredPlacement",
    "milp": "spotlab.cluster.placement.milp:MilpPlacement",
}


def make_scheduler(scheduler: Any, **params: Any) -> Any:
    """The `Scheduler` registered as ``scheduler`` built with ``params``, or ``scheduler`` itself if it is one."""
    from .schedulers.base import Scheduler

    return _make(scheduler, params, SCHEDULERS, "scheduler", Scheduler)


def make_placement(placement: Any, **params: Any) -> Any:
    """The `Placement` registered as ``placement`` built with ``params``, or ``placement`` itself if it is one."""
    from .placement.base import Placement

    return _make(placement, params, PLACEMENTS, "placement", Placement)


def _make(what: Any, params: Mapping[str, Any], registry: Mapping[str, str], kind: str, base: type) -> Any:
    from ..registry import build, load_class  # here: the command line reads SCHEDULERS without loading numpy

    if isinstance(what, base):
        if params:
            raise ClusterError(f"parameters {', '.join(params)} need a {kind} given by name; {what!r} is already built")
        return what
    if not isinstance(what, str):
        raise ClusterError(f"{kind} must be a name ({', '.join(registry)}) or a {base.__name__}, got {what!r}")
    cls = load_class(registry, what, kind, ClusterError)
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ClusterError(f"{kind} {what!r} is registered as {registry[what]}, which is not a {base.__name__}")
    return build(cls, params, f"{kind} {what!r}", ClusterError)
