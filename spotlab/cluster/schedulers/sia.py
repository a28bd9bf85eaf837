"""``sia``: throughput-aware backfilling over a window of the queue.

Among the first ``window`` queued jobs and their options that fit now, start the (job, option) with the highest
``est_rate / gpus`` relative to that job's best ``est_rate / gpus`` over its remaining options (ties: earlier in
the queue, then earlier option), and repeat until nothing fits, so smaller jobs backfill.
This is only the throughput-aware allocation idea of Sia (Jayaram Subramanya et al., SOSP'23): real Sia also
re-allocates and preempts running jobs and solves an integer program each round. ``window`` bounds the scan so a
long queue costs O(window) per scheduling point.
"""

from __future__ import annotations

from itertools import islice
from numbers import Integral
from typing import TYPE_CHECKING

from ...params import Interval
from .base import Scheduler

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["Sia"]


class Sia(Scheduler):
    """Best believed throughput per GPU, relative to the job's best, over the first ``window`` queued jobs."""

    name = "sia"
    _parameter_constraints = {"window": [Interval(Integral, 1, None)]}

    def __init__(self, window: int = 64) -> None:
        self.window = window
        self.check_params()

    def schedule(self, engine: Engine) -> None:
        st, jobs, window = engine.state, engine.jobs, self.window  # the live state, read-only: a hot loop
        queue, offered = st.queue, st.offered
        while queue and st.total_free:
            found: dict = {}  # demand (GPU type, GPUs) -> fit: one question to the engine per demand and pass
            best = None  # (score, job, option, fit); the first in queue and option order wins ties
            for j in islice(queue, window):
                opts, mine = jobs[j].options, offered[j]
                top = max([opts[oi].est_rate / opts[oi].gpus for oi in mine])
                for oi in mine:
                    o = opts[oi]
                    score = (o.est_rate / o.gpus) / top if top > 0 else 1.0
                    if best is not None and score <= best[0]:
                        continue
                    key = (o.gpu, o.gpus)  # placements do not see the job: one answer per demand
                    if key not in found:
                        found[key] = engine.fits(j, oi)
                    if found[key] is not None:
                        best = (score, j, oi, found[key])
                if best is not None and best[0] >= 1.0:
                    break  # nobody later in the queue can beat an earlier job's best option
            if best is None:
                return
            engine.start(best[1], best[2], best[3])
