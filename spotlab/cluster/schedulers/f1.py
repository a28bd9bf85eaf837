"""``f1``: the F1 priority of Carastan-Santos and de Camargo (SC'17), as RLScheduler (Zhang et al., SC'20) uses
it as a baseline: ``log10(r) * n + 870 * log10(s)``, smallest first.

``r`` is the job's runtime, ``n`` its GPUs (processors in the original), ``s`` its submit time (``arrival_s``, in
the trace's seconds); like RLScheduler's code, ``r`` or ``s`` at or below 0 counts as 0.1, which keeps the
logarithm finite. A job with several options takes its lowest score. Runtimes are true by default (an oracle:
the traces carry no user estimate; RLTune's F1 sees true runtimes too) or estimated (``runtimes="estimated"``).
"""

from __future__ import annotations

import math

from ..state import Option, SimJob
from .priority import OptionKeyed, runtime

__all__ = ["F1", "f1_score"]


def f1_score(job: SimJob, option: Option, runtimes: str = "true") -> float:
    """``log10(r) * n + 870 * log10(s)`` (module doc)."""
    r, s = runtime(job, option, runtimes), float(job.arrival_s)
    return math.log10(r if r > 0 else 0.1) * option.gpus + 870 * math.log10(s if s > 0 else 0.1)


class F1(OptionKeyed):
    """Lowest F1 score first (module doc)."""

    name = "f1"

    def option_key(self, job: SimJob, option: Option) -> float:
        return f1_score(job, option, self.runtimes)
