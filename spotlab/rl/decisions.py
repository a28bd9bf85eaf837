"""When the learning scheduler is asked to choose, and what its choice does: one set of rules for the training
environment (`spotlab.rl.env`) and the trained agent as an engine `Scheduler` (`spotlab.rl.scheduler`),
so that an agent behaves the same in both.

At a scheduling point (after each batch of same-time events, as for every scheduler):

1. a **reserved** job (chosen earlier but not fitting then) starts as soon as one of its options fits; until it
   does, nothing else starts and time advances (no skip action, as in RLTune: choosing a job that does not fit is
   waiting for it, which is how FCFS is expressed);
2. with an empty queue, or when none of the first ``slots`` queued jobs can start now, time advances (the
   agent is only asked when something can start);
3. a queue of exactly one job that can start now starts it without asking: choosing it is the only legal action,
   so asking would cost a step and teach nothing. (One startable job among several queued ones is still a
   decision: the agent may hold out for a job that does not fit yet.)
4. otherwise the agent chooses one of the first ``slots`` queued jobs (every real queued job is a legal action;
   padding slots are masked): it starts now on the first of its options that fits, else it is reserved (rule 1).

With ``backfill=True`` a reservation is EASY's (Lifka 1995) for the chosen job instead of a block: while it
waits, the other jobs among the first ``slots`` start, in queue order, when they fit now and do not delay it
(they end before the earliest time the running jobs' true ends leave room for it, or it still fits then beside
them). Choosing the head at every decision is then exactly the engine's ``easy`` scheduler, as choosing it without
backfill is ``fifo``; the agent decides which job holds the reservation.
"""

from __future__ import annotations

import math
from itertools import islice
from typing import TYPE_CHECKING

from ..errors import ClusterError

if TYPE_CHECKING:
    from ..cluster.engine import Engine
    from ..cluster.state import Fit

__all__ = ["Decider", "backfill_around", "first_fit"]


def first_fit(engine: Engine, job: int) -> tuple[int, Fit] | None:
    """The first offered option of ``job`` that fits now, with where it goes; None when none does."""
    fits = engine.fits
    for oi in engine.state.offered[job]:
        fit = fits(job, oi)
        if fit is not None:
            return oi, fit
    return None


def _fits_in(engine: Engine, free, job: int) -> bool:
    """Whether an offered option of ``job`` has room in ``free`` (a state holding only GPUs) under the placement."""
    options, place, places = engine.jobs[job].options, engine.placement, engine.admission.places[job]
    return any(place.candidates(free, pi, options[oi].gpus)
               for oi in engine.state.offered[job] for pi in places.get(oi, ()))


def backfill_around(engine: Engine, job: int, window: int) -> None:
    """Start the queued jobs among the first ``window`` (``job`` aside) that fit now and do not delay ``job``'s
    earliest start given the running jobs' true ends (EASY backfilling with ``job`` holding the reservation)."""
    from ..cluster.schedulers.priority import runtime
    from ..cluster.state import ClusterState

    st = engine.state
    shadow = ClusterState(st.cluster, (), ())  # only the running jobs' GPUs: what frees up, and when
    for a in st.running.values():
        shadow.move(a.pool, a.alloc, -1)
    until = st.now
    if not _fits_in(engine, shadow, job):
        until = math.inf
        ends = sorted((a.end, j) for j, a in st.running.items())
        for k, (t, j) in enumerate(ends):
            a = st.running[j]
            shadow.move(a.pool, a.alloc, +1)
            if (k + 1 == len(ends) or ends[k + 1][0] != t) and _fits_in(engine, shadow, job):
                until = t
                break
    for j in list(islice(st.queue, window)):
        if j == job:
            continue
        jb = engine.jobs[j]
        for oi in st.offered[j]:
            fit = engine.fits(j, oi)
            if fit is None:
                continue
            o = jb.options[oi]
            if st.now + (engine.fail_after_s if o.fails else runtime(jb, o)) <= until:
                engine.start(j, oi, fit)
                break
            shadow.move(fit[0], fit[1], -1)  # still running then: does the reserved job fit beside it?
            if _fits_in(engine, shadow, job):
                engine.start(j, oi, fit)
                break
            shadow.move(fit[0], fit[1], +1)
        if not st.total_free:
            return


class Decider:
    """Applies the rules of the module doc to one engine run; ``slots`` is how many queued jobs the agent sees."""

    __slots__ = ("engine", "slots", "reserved", "backfill")

    def __init__(self, engine: Engine, slots: int, backfill: bool = False) -> None:
        self.engine, self.slots, self.backfill = engine, int(slots), bool(backfill)
        self.reserved: int | None = None

    def settle(self) -> tuple[int, ...] | None:
        """Start everything the rules start at the current time; the candidate jobs (queue order, at most
        ``slots``) when the agent must choose now, None when time must advance."""
        engine = self.engine
        queue = engine.state.queue
        while True:
            if self.reserved is not None:
                hit = first_fit(engine, self.reserved)
                if hit is None:
                    if self.backfill and engine.state.total_free:
                        backfill_around(engine, self.reserved, self.slots)
                    return None
                engine.start(self.reserved, *hit)
                self.reserved = None
                continue
            if not queue or not engine.state.total_free:
                return None
            candidates = engine.queued(self.slots)
            startable = [j for j in candidates if first_fit(engine, j) is not None]
            if not startable:
                return None
            if len(queue) == 1:
                engine.start(startable[0], *first_fit(engine, startable[0]))
                continue
            return candidates

    def choose(self, job: int) -> None:
        """Start queued ``job`` now if it fits, else reserve it (rule 1)."""
        if self.reserved is not None:
            raise ClusterError(f"job index {self.reserved} is reserved; no other choice before it starts")
        hit = first_fit(self.engine, job)
        if hit is None:
            if job not in self.engine.state.queue:
                raise ClusterError(f"job index {job} is not queued")
            self.reserved = job
        else:
            self.engine.start(job, *hit)
