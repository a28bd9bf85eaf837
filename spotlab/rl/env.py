"""The scheduling environment: a `gymnasium.Env` that replays one window of jobs on the shared cluster engine.

An episode is one window (`spotlab.rl.workload.Window`) run by `spotlab.cluster.engine.Engine`, driven one
decision at a time by the rules of `spotlab.rl.decisions` (the agent is only asked when a queued job can start
and there is more than one legal action). Observation: the ``(slots, 7)`` features of the first ``slots`` queued
jobs (`spotlab.rl.features`); action: the slot of the job to start (or to wait for); `action_masks` marks the
real queued jobs (sb3-contrib's convention for MaskablePPO). The reward is 0 until the last job ends, then the
relative gain of the episode's job score over ``baseline`` (a registered heuristic scheduler) on the same window
(`spotlab.rl.reward.gain`), floored at ``reward_floor`` (-1 by default: a window more than twice as bad as the
baseline counts as twice as bad, so that a few disastrous early episodes do not dominate an update; None: no
floor); the baseline's result is computed once per window and kept in ``cache``.

A window in which the agent never has a choice is one step with only slot 0 legal, whose action changes
nothing. An action outside the mask (a caller that ignores masks) is read as slot 0, the head of the queue, and
flagged in ``info["invalid_action"]``. ``reset(seed=...)`` seeds the draw of windows (uniform over ``windows``);
``reset(options={"window": i})`` replays window ``i``. ``backfill=True``: a job the agent waits for holds an EASY
reservation and the others backfill around it (`spotlab.rl.decisions`).
"""

from __future__ import annotations

from typing import Any, MutableMapping, Sequence

import gymnasium as gym
import numpy as np

from ..cluster.engine import Engine
from ..cluster.metrics import log_scores
from ..cluster.registry import make_placement
from ..cluster.simulate import run_engine
from ..errors import ClusterError, RLError
from .decisions import Decider
from .features import HORIZON_S, N_FEATURES, observe
from .reward import check_score, gain
from .workload import Window

__all__ = ["SchedulingEnv", "baseline_scores"]


def baseline_scores(window: Window, baseline: str, placement: str = "best_fit",
                    cache: MutableMapping | None = None) -> dict[str, float]:
    """Every score of the heuristic ``baseline`` on ``window`` (computed once per cache)."""
    key = (window.key, window.jobs[0].job_id, len(window.jobs), baseline, str(placement))
    if cache is not None and key in cache:
        return cache[key]
    got = log_scores(run_engine(window.cluster, window.jobs, scheduler=baseline, placement=placement)[0])
    if cache is not None:
        cache[key] = got
    return got


class SchedulingEnv(gym.Env):
    """Which queued job starts next, on the cluster engine, rewarded against a heuristic (module doc)."""

    metadata = {"render_modes": []}

    def __init__(self, windows: Sequence[Window], *, slots: int = 128, score: str = "bsld",
                 baseline: str = "fifo", placement: str = "best_fit", horizon_s: float = HORIZON_S,
                 reward_floor: float | None = -1.0, backfill: bool = False,
                 cache: MutableMapping | None = None) -> None:
        windows = tuple(windows)
        if not windows or not all(isinstance(w, Window) for w in windows):
            raise RLError("the environment needs at least one window of jobs (spotlab.rl.workload.windows)")
        if isinstance(slots, bool) or not isinstance(slots, (int, np.integer)) or slots < 2:
            raise RLError(f"slots must be a whole number >= 2, got {slots!r}")
        if not (isinstance(horizon_s, (int, float)) and np.isfinite(horizon_s) and horizon_s > 0):
            raise RLError(f"horizon_s must be a finite number > 0, got {horizon_s!r}")
        self.windows, self.slots, self.score = windows, int(slots), check_score(score)
        if reward_floor is not None and not (isinstance(reward_floor, (int, float)) and reward_floor <= 0):
            raise RLError(f"reward_floor must be a number <= 0 or None, got {reward_floor!r}")
        self.baseline, self.placement, self.horizon_s = baseline, placement, float(horizon_s)
        self.reward_floor = None if reward_floor is None else float(reward_floor)
        self.backfill = bool(backfill)
        self.cache: MutableMapping = {} if cache is None else cache
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.slots, N_FEATURES), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(self.slots)
        self.engine: Engine | None = None
        self.window: Window | None = None
        self._decider: Decider | None = None
        self._candidates: tuple[int, ...] = ()
        self._decisions = 0

    # ------------------------------------------------------------------------------------------ gym API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        index = (options or {}).get("window")
        if index is None:
            index = int(self.np_random.integers(len(self.windows)))
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.windows):
            raise RLError(f"window must be an index in 0..{len(self.windows) - 1}, got {index!r}")
        self.window = self.windows[int(index)]
        self.engine = Engine(self.window.cluster, self.window.jobs, make_placement(self.placement))
        self._decider = Decider(self.engine, self.slots, self.backfill)
        self._decisions = 0
        self._candidates = self._next_decision()
        return self._observation(), self._info()

    def step(self, action):
        if self.engine is None:
            raise RLError("call reset() before step()")
        a = int(action)
        invalid = not 0 <= a < max(len(self._candidates), 1)
        if self._candidates:
            self._decider.choose(self._candidates[0 if invalid else a])
            self._decisions += 1
            self._candidates = self._next_decision()
        info = self._info()
        info["invalid_action"] = invalid
        if self._candidates:
            return self._observation(), 0.0, False, False, info
        mine = log_scores(self.engine)
        base = baseline_scores(self.window, self.baseline, self.placement, self.cache)
        reward = gain(mine[self.score], base[self.score], self.score)
        if self.reward_floor is not None:
            reward = max(reward, self.reward_floor)
        info.update(scores=mine, baseline_scores=base, decisions=self._decisions)
        return np.zeros(self.observation_space.shape, np.float32), float(reward), True, False, info

    def action_masks(self) -> np.ndarray:
        """Legal slots: the real queued jobs shown (slot 0 alone once the run needs no decision)."""
        mask = np.zeros(self.slots, dtype=bool)
        mask[:max(len(self._candidates), 1)] = True
        return mask

    # ------------------------------------------------------------------------------------------- inside

    def _next_decision(self) -> tuple[int, ...]:
        """Advance the run to the next decision; () once every job has ended."""
        engine, decider = self.engine, self._decider
        while True:
            candidates = decider.settle()
            if candidates:
                return candidates
            if not engine.advance():
                if engine.ended < len(engine.jobs):
                    raise ClusterError(f"jobs left queued on an idle cluster at t={engine.now:g} s")
                return ()

    def _observation(self) -> np.ndarray:
        return observe(self.engine, self._candidates, self.slots, self.horizon_s)

    def _info(self) -> dict[str, Any]:
        return {"window": self.window.key, "time_s": float(self.engine.now), "queued": self.engine.queue_length}
