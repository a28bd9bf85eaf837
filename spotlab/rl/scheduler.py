"""``rl_agent``: a trained learning scheduler (`spotlab.rl`) as one more engine `Scheduler`.

``model`` is the folder `spotlab rl train --out DIR` wrote (``model.zip`` and its settings in ``model.json``).
At each scheduling point the agent follows the rules of `spotlab.rl.decisions` (the same as in its training
environment): it is asked only when one of the first ``slots`` queued jobs can start and more than one job is
queued, and chooses the job with the highest score (``deterministic=True``: argmax, the evaluation setting) or
samples one. A chosen job that does not fit is waited for (with EASY backfilling around it when the agent was
trained so). The agent's network is loaded once per instance
(torch is imported then, not before); an instance drives one engine run at a time and starts afresh on a new one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import RLError
from ..cluster.schedulers.base import Scheduler

if TYPE_CHECKING:
    from ..cluster.engine import Engine

__all__ = ["RLAgent"]


class RLAgent(Scheduler):
    """The agent saved in folder ``model`` chooses the next job (module doc)."""

    name = "rl_agent"

    def __init__(self, model: str = "", deterministic: bool = True) -> None:
        if not isinstance(model, str) or not model:
            raise RLError("rl_agent needs model=DIR, a folder written by `spotlab rl train --out DIR` (`spotlab "
                          "cotune cluster`: --scheduler-param rl_agent.model=DIR)")
        if not isinstance(deterministic, (bool, np.bool_)):
            raise RLError(f"deterministic must be True or False, got {deterministic!r}")
        from .train import load_settings

        load_settings(model)  # a missing or foreign folder fails here, before a cluster run starts
        self.model = model
        self.deterministic = bool(deterministic)
        self._agent: Any = None
        self._engine: Engine | None = None
        self._decider: Any = None

    def _load(self) -> Any:
        if self._agent is None:
            from .agent import load_agent

            self._agent = load_agent(self.model)
        return self._agent

    def schedule(self, engine: Engine) -> None:
        from .decisions import Decider

        agent = self._load()
        if self._engine is not engine:
            self._engine, self._decider = engine, Decider(engine, agent.slots, agent.settings.backfill)
        decider = self._decider
        while True:
            candidates = decider.settle()
            if not candidates:
                return
            decider.choose(candidates[agent.choose(engine, candidates, self.deterministic)])
