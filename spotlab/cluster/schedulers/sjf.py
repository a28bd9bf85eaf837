"""``sjf``: shortest job first, by the runtime of the job's quickest offered option.

With ``runtimes="true"`` (the default) it is an oracle: it knows how long every job will run, which no real
scheduler does (the traces carry no user estimate); ``"estimated"`` ranks by ``work / est_rate`` instead.
Ties keep queue order, so with equal runtimes it is FCFS. Blocking or not as every `PriorityScheduler`.
"""

from __future__ import annotations

from ..state import Option, SimJob
from .priority import OptionKeyed, runtime

__all__ = ["ShortestJobFirst"]


class ShortestJobFirst(OptionKeyed):
    """Shortest (true, by default: an oracle) runtime first (module doc)."""

    name = "sjf"

    def option_key(self, job: SimJob, option: Option) -> float:
        return runtime(job, option, self.runtimes)
