"""A whole cluster run by name: `simulate(cluster, jobs, scheduler="fifo", placement="best_fit")`.

The layer above the engine: it builds the scheduler and the placement from their registered names
(`spotlab.cluster.registry`), or takes built ones, and drives an `Engine` until every job has ended, calling the
scheduler after each batch of same-time events. The engine itself takes built objects only, so that the schedulers,
which read the engine, and the registry, which loads the schedulers, sit between the two.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import ClusterError
from .engine import Engine
from .registry import make_placement, make_scheduler
from .result import ClusterResult
from .state import Cluster, SimJob

__all__ = ["run_engine", "simulate"]


def simulate(
    cluster: Cluster,
    jobs: Iterable[SimJob],
    scheduler: Any = "fifo",
    placement: Any = "best_fit",
    fail_after_s: float = 120.0,
    progress: bool = False,
    **params: Any,
) -> ClusterResult:
    """Run ``jobs`` on ``cluster`` until every job has ended: ``scheduler`` decides after each batch of events.

    ``scheduler`` / ``placement``: a registered name (`spotlab.cluster.registry`) or an instance; ``params``: the
    named scheduler's parameters (``sia``: ``window``, how many queued jobs from the head it considers per
    decision). ``fail_after_s`` is how long a failing option holds its GPUs before the failure is noticed.
    ``progress`` shows a bar of ended jobs.
    """
    engine, name = run_engine(cluster, jobs, scheduler, placement, fail_after_s, progress, **params)
    return engine.result(name)


def run_engine(cluster: Cluster, jobs: Iterable[SimJob], scheduler: Any = "fifo", placement: Any = "best_fit",
               fail_after_s: float = 120.0, progress: bool = False, **params: Any) -> tuple[Engine, str]:
    """`simulate` without building the result tables: the ended engine (for `Engine.log`, e.g.
    `spotlab.cluster.metrics.log_scores`) and the scheduler's name."""
    sched = make_scheduler(scheduler, **params)
    name = scheduler if isinstance(scheduler, str) else (sched.name or type(sched).__name__)
    engine = Engine(cluster, jobs, make_placement(placement), fail_after_s)
    schedule = sched.schedule
    if progress:
        from ..progress import tqdm_bar

        with tqdm_bar(total=len(engine.jobs), desc=f"simulate {name}", unit="job", enabled=True) as bar:
            bar.update(engine.ended)  # the rejected jobs
            while engine.advance():
                schedule(engine)
                bar.update(engine.ended - bar.n)
    else:
        while engine.advance():
            schedule(engine)
    if engine.ended < len(engine.jobs):
        raise ClusterError(f"scheduler {name!r} left {len(engine.jobs) - engine.ended} job(s) queued on an idle "
                           f"cluster at t={engine.now:g} s (nothing runs any more, so nothing else would start them)")
    return engine, name
