"""A trained agent, loaded for use: its network and the settings it was trained with, and its choice of slot.

`load_agent(folder)` reads ``model.zip`` and ``model.json`` (`spotlab.rl.train`); `Agent.choose` scores the
first ``slots`` queued jobs of a running engine and returns the slot of the job it starts (argmax of the masked
logits when ``deterministic``, else a draw from them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .features import HORIZON_S, observe
from .train import MODEL_FILE, TrainSettings, deterministic_torch, load_settings

if TYPE_CHECKING:
    from ..cluster.engine import Engine

__all__ = ["Agent", "load_agent"]


@dataclass(frozen=True)
class Agent:
    """A trained policy (``model``: sb3-contrib's MaskablePPO) and its settings."""

    model: Any
    settings: TrainSettings
    record: dict
    horizon_s: float = HORIZON_S

    @property
    def slots(self) -> int:
        return self.settings.slots

    def choose(self, engine: Engine, candidates: Sequence[int], deterministic: bool = True) -> int:
        """The slot (index into ``candidates``) of the job the agent starts now."""
        obs = observe(engine, candidates, self.slots, self.horizon_s)
        mask = np.zeros(self.slots, dtype=bool)
        mask[:len(candidates)] = True
        return self.model.policy.act(obs, mask, deterministic)


def load_agent(folder: str | Path) -> Agent:
    """The agent saved in ``folder``; a missing or foreign folder is a one-line `RLError`."""
    settings, record = load_settings(folder)
    deterministic_torch()
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(Path(folder) / MODEL_FILE, device="cpu")
    return Agent(model, settings, record)
