"""Priority schedulers: the queued job that ranks first (by a key, or a seeded draw) starts next.

RLTune's heuristics, like its agent, pick one job at a time among the first ``window`` queued jobs (128 in
RLTune) and, when it does not fit, wait until it does: the pick stands until it starts (``blocking=True``), so
no later job overtakes it and a large job is not starved. ``blocking=False`` is list scheduling instead: every
job of the window that fits now starts, in rank order, so small jobs pass a blocked large one (without the
reservation `easy` gives it). A job starts on the first of its offered options that fits; runs are not
preempted. A subclass ranks the window (`order`); its parameters are those of its ``__init__``.

Runtime, where a key needs one, is ``setup_s + work / true_rate`` (``runtimes="true"``: an oracle, what the run
will take; the traces' jobs carry no user estimate) or ``work / est_rate`` (``"estimated"``: the belief).
"""

from __future__ import annotations

import math
import weakref
from abc import abstractmethod
from itertools import islice
from numbers import Integral
from typing import TYPE_CHECKING, Any, Sequence

from ...params import Boolean, Interval, Options
from ..state import Option, SimJob
from .base import Scheduler

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["OptionKeyed", "PriorityScheduler", "by_key", "runtime", "start_first_fit"]

RUNTIMES = Options("true", "estimated")


def runtime(job: SimJob, option: Option, runtimes: str = "true") -> float:
    """How long ``job`` runs on ``option``: the truth (an oracle) or the belief (module doc); inf at rate 0."""
    rate = option.true_rate if runtimes == "true" else option.est_rate
    return job.setup_s + job.work / rate if rate > 0 else math.inf


class PriorityScheduler(Scheduler):
    """Starts the first-ranked job of the window, waiting for it (``blocking``) or passing it (module doc)."""

    _parameter_constraints: dict[str, list[Any]] = {"window": [Interval(Integral, 1, None)],
                                                    "blocking": [Boolean()]}

    def __init__(self, window: int = 128, blocking: bool = True) -> None:
        self.window = window
        self.blocking = blocking
        self._run: Any = None  # weak reference to the engine of the current run
        self._pick: int | None = None

    @abstractmethod
    def order(self, engine: Engine, jobs: Sequence[int]) -> list[int]:
        """``jobs`` (queued, head first) in the order they should start."""

    def reset(self, engine: Engine) -> None:
        """A new run starts on ``engine``: forget the last one (a subclass may reseed)."""

    def schedule(self, engine: Engine) -> None:
        if self._run is None or self._run() is not engine:
            self._run, self._pick = weakref.ref(engine), None
            self.reset(engine)
        st = engine.state
        if self.blocking:
            while st.queue and st.total_free:
                if self._pick is None:
                    self._pick = self.order(engine, list(islice(st.queue, self.window)))[0]
                if not start_first_fit(engine, self._pick):
                    return
                self._pick = None
        elif st.queue and st.total_free:
            for j in self.order(engine, list(islice(st.queue, self.window))):
                start_first_fit(engine, j)
                if not st.total_free:
                    return


class OptionKeyed(PriorityScheduler):
    """Ranks each job by the lowest key of its offered options, smallest first; the key may read runtimes, true
    (an oracle) or estimated (``runtimes``). Subclasses give `option_key`."""

    _parameter_constraints: dict[str, list[Any]] = {"window": [Interval(Integral, 1, None)],
                                                    "blocking": [Boolean()], "runtimes": [RUNTIMES]}

    def __init__(self, window: int = 128, blocking: bool = True, runtimes: str = "true") -> None:
        super().__init__(window, blocking)
        self.runtimes = runtimes
        self.check_params()

    @abstractmethod
    def option_key(self, job: SimJob, option: Option) -> float:
        """The rank of running ``job`` with ``option`` (smaller starts first)."""

    def order(self, engine: Engine, jobs: Sequence[int]) -> list[int]:
        st = engine.state
        keys = [min(self.option_key(st.jobs[j], st.jobs[j].options[oi]) for oi in st.offered[j]) for j in jobs]
        return by_key(jobs, keys)


def by_key(jobs: Sequence[int], keys: Sequence[float]) -> list[int]:
    """``jobs`` sorted by ``keys``, smallest first, queue order on ties."""
    return [jobs[i] for i in sorted(range(len(jobs)), key=keys.__getitem__)]


def start_first_fit(engine: Engine, j: int) -> bool:
    """Start ``j`` on the first of its offered options that fits now; whether it started."""
    for oi in engine.state.offered[j]:
        fit = engine.fits(j, oi)
        if fit is not None:
            engine.start(j, oi, fit)
            return True
    return False
