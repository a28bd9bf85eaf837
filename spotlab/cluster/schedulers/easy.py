"""``easy``: FCFS with EASY backfilling (Lifka, 1995; Mu'alem and Feitelson, IEEE TPDS 2001).

The head of the queue starts as soon as it fits, as in FCFS. When it does not, it gets a reservation: the
earliest time the running jobs' ends leave room for it, node by node under the engine's placement. A later job of
the window may start now only if it does not delay that reservation: it ends by then, or the head still fits at
that time with it running. Later jobs are tried in queue order; only the head holds a reservation (conservative
backfilling would give every job one).

Runtimes are true by default (``runtimes="true"``): the scheduler knows every run's length, an oracle the traces
force on us (they carry no user estimate), and the head then never starts after its reservation. With
``"estimated"`` the ends come from ``work / est_rate`` (a running job past its estimate is thought to end now),
and a wrong estimate can delay the head.
"""

from __future__ import annotations

import math
from itertools import islice
from numbers import Integral
from typing import TYPE_CHECKING

from ...params import Interval
from ..state import ClusterState
from .base import Scheduler
from .priority import RUNTIMES, start_first_fit, runtime

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["EasyBackfill"]


def _occupied(state: ClusterState) -> ClusterState:
    """A state holding only the running attempts' GPUs (no jobs, empty queue): the free GPUs to come, changed
    without touching the live state. Whether a job fits is read from the free GPUs alone."""
    shadow = ClusterState(state.cluster, (), ())
    for a in state.running.values():
        shadow.move(a.pool, a.alloc, -1)
    return shadow


class EasyBackfill(Scheduler):
    """FCFS; later jobs backfill when they do not delay the head's reservation (module doc)."""

    name = "easy"
    _parameter_constraints = {"window": [Interval(Integral, 1, None)], "runtimes": [RUNTIMES]}

    def __init__(self, window: int = 128, runtimes: str = "true") -> None:
        self.window = window
        self.runtimes = runtimes
        self.check_params()

    def _duration(self, engine: Engine, j: int, oi: int) -> float:
        """How long job ``j`` would run on option ``oi`` as the scheduler sees it."""
        job = engine.state.jobs[j]
        o = job.options[oi]
        if self.runtimes == "true" and o.fails:
            return engine.fail_after_s
        return runtime(job, o, self.runtimes)

    def _fits(self, engine: Engine, free: ClusterState, j: int) -> bool:
        """Whether some offered option of ``j`` has room in ``free`` (free GPUs) under the engine's placement."""
        job, place = engine.state.jobs[j], engine.placement
        for oi in engine.state.offered[j]:
            gpus = job.options[oi].gpus
            for pi in engine.admission.places[j].get(oi, ()):
                if place.candidates(free, pi, gpus):
                    return True
        return False

    def _reserve(self, engine: Engine) -> tuple[float, ClusterState]:
        """The head's reservation: the earliest time it fits given the running jobs' ends, and the free GPUs then."""
        st = engine.state
        head, shadow = st.queue[0], _occupied(st)
        if self._fits(engine, shadow, head):
            return st.now, shadow
        if self.runtimes == "true":
            ends = sorted((a.end, j) for j, a in st.running.items())
        else:
            ends = sorted((max(a.start + self._duration(engine, j, a.option), st.now), j)
                          for j, a in st.running.items())
        i = 0
        while i < len(ends):
            t = ends[i][0]
            while i < len(ends) and ends[i][0] == t:
                a = st.running[ends[i][1]]
                shadow.move(a.pool, a.alloc, +1)
                i += 1
            if self._fits(engine, shadow, head):
                return t, shadow
        return math.inf, shadow

    def reservation(self, engine: Engine) -> float:
        """When the queue's head would start if no later job started first (the queue must not be empty)."""
        return self._reserve(engine)[0]

    def schedule(self, engine: Engine) -> None:
        st = engine.state
        queue = st.queue
        while queue and st.total_free and start_first_fit(engine, queue[0]):
            pass
        if not queue or not st.total_free:
            return
        head = queue[0]
        until, shadow = self._reserve(engine)
        now = st.now
        for j in list(islice(queue, 1, self.window)):
            for oi in st.offered[j]:
                fit = engine.fits(j, oi)
                if fit is None:
                    continue
                if now + self._duration(engine, j, oi) <= until:
                    engine.start(j, oi, fit)
                    break
                pool, alloc = fit
                shadow.move(pool, alloc, -1)  # still running at the reservation: does the head fit beside it?
                if self._fits(engine, shadow, head):
                    engine.start(j, oi, fit)
                    break
                shadow.move(pool, alloc, +1)
            if not st.total_free:
                return
