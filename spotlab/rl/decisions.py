"""When the learning scheduler is asked to choose, and what its choice does: one set of rules for the training
environment (`spotlab.rl.env`) and the trained agent as an engine `Scheduler` (`spotlab.cluster.schedulers.rl_agent`),
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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ClusterError

if TYPE_CHECKING:
    from ..cluster.engine import Engine
    from ..cluster.state import Fit

__all__ = ["Decider", "first_fit"]


def first_fit(engine: Engine, job: int) -> tuple[int, Fit] | None:
    """The first offered option of ``job`` that fits now, with where it goes; None when none does."""
    fits = engine.fits
    for oi in engine.state.offered[job]:
        fit = fits(job, oi)
        if fit is not None:
            return oi, fit
    return None


class Decider:
    """Applies the rules of the module doc to one engine run; ``slots`` is how many queued jobs the agent sees."""

    __slots__ = ("engine", "slots", "reserved")

    def __init__(self, engine: Engine, slots: int) -> None:
        self.engine, self.slots = engine, int(slots)
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
