"""The scheduler interface: which queued jobs start now, in which order, with which option.

Whoever drives the engine (`spotlab.cluster.simulate`) calls `Scheduler.schedule(engine)` after each batch of
same-time events (arrivals, ends); the engine itself never sees a scheduler, so this module sits above it. The
scheduler reads the queue and the options each job is still offered (`Engine.queued`, `Engine.options`), asks
where a (job, option) would go (`Engine.fits`, which asks the placement) and starts what it chooses
(`Engine.start`), as often as it likes; it returns when it wants nothing more to start now. Runs are not
preempted. A new scheduler is one module here and one line in `spotlab.cluster.registry.SCHEDULERS`; its
parameters are the keyword arguments of its ``__init__``, stored under their own names and declared in
``_parameter_constraints`` (`spotlab.params`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from ...errors import ClusterError
from ...params import Params

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["Scheduler"]


class Scheduler(Params, ABC):
    """Decides which queued jobs start, in which order, with which option (module doc)."""

    name = ""
    param_error = ClusterError

    @abstractmethod
    def schedule(self, engine: Engine) -> None:
        """Start queued jobs now through ``engine.start`` until nothing more should start."""
