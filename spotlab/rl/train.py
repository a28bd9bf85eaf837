"""Training the agent: MaskablePPO (sb3-contrib) with the per-job scoring policy, on the training windows only.

Reproducible on a CPU: `train` seeds everything from ``seed`` (sb3 seeds torch, numpy, Python and the
environment), runs torch on one thread with deterministic algorithms, and trains in whole rollouts (``n_steps``
environment steps, then one PPO update), so the same settings and seed give the same weights bit for bit after
the same number of rollouts. A budget in ``minutes`` stops at the first rollout boundary past it (how many
rollouts fit depends on the machine: the number done is recorded); ``timesteps`` is the reproducible budget.

A run writes into ``out``: ``model.zip`` (sb3's checkpoint: weights and optimiser state) and ``model.json``
beside it (the settings, the seed, versions, rollouts and timesteps done, time spent), and ``curve.csv`` (one row
per finished training episode: its reward, the agent's and the baseline's score). Checkpoints are written every
``checkpoint_every`` rollouts and at the end. Calling `train` again on the same ``out`` with the same settings
continues from the last checkpoint up to the (new) budget: weights and optimiser state are restored; the
environment starts a fresh episode seeded from the seed and the timesteps done, so a resumed run is repeatable
but not bitwise the run that was never interrupted.

``imitation`` (a teacher of `spotlab.rl.teachers`) first fits the policy to the teacher's choices on the training
windows (`spotlab.rl.imitation`), a warm start before PPO.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import RLError
from .workload import Workload

__all__ = ["MODEL_FILE", "SETTINGS_FILE", "TrainSettings", "TrainResult", "load_settings", "train"]

MODEL_FILE, SETTINGS_FILE, CURVE_FILE = "model.zip", "model.json", "curve.csv"


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides a trained agent (module doc); ``workload`` says which jobs it trains on."""

    workload: Workload = field(default_factory=Workload)
    slots: int = 128
    score: str = "bsld"
    baseline: str = "fifo"
    placement: str = "best_fit"
    reward_floor: float | None = -1.0  # `spotlab.rl.env`: a window's reward is at least this
    backfill: bool = False  # `spotlab.rl.decisions`: the job waited for holds an EASY reservation
    seed: int = 0
    n_steps: int = 512
    batch_size: int = 128
    n_epochs: int = 4
    learning_rate: float = 3e-4
    gamma: float = 1.0  # one reward at the end of an episode: no discount
    gae_lambda: float = 1.0  # the reward comes at the end: Monte Carlo returns (0.95 learned far slower here)
    clip_range: float = 0.2
    ent_coef: float = 0.01
    hidden: int = 32
    imitation: str | None = None
    imitation_epochs: int = 20
    checkpoint_every: int = 10

    def __post_init__(self) -> None:
        from .reward import check_score

        check_score(self.score)
        for name in ("slots", "n_steps", "batch_size", "n_epochs", "hidden", "imitation_epochs", "checkpoint_every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise RLError(f"{name} must be a whole number >= 1, got {v!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise RLError(f"seed must be a whole number >= 0, got {self.seed!r}")
        if self.slots > int(self.workload.size):
            raise RLError(f"slots={self.slots}: the agent never sees more queued jobs than a window holds "
                          f"({self.workload.size}); give at most {self.workload.size} (CLI: --slots, --window-size)")
        if self.imitation is not None:
            from .teachers import check_teacher

            check_teacher(self.imitation)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["workload"] = self.workload.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainSettings:
        data = dict(data)
        wl = dict(data.pop("workload"))
        wl["fractions"] = tuple(wl.get("fractions", (0.6, 0.2, 0.2)))
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(workload=Workload(**wl), **{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class TrainResult:
    """Where the agent is, and how much training it has had."""

    out: Path
    rollouts: int
    timesteps: int
    episodes: int
    seconds: float


def load_settings(model_dir: str | Path) -> tuple[TrainSettings, dict[str, Any]]:
    """The settings a saved agent was trained with, and the whole record of ``model.json``."""
    folder = Path(model_dir)
    if folder.exists() and not folder.is_dir():
        raise RLError(f"{model_dir} is a file; expected a model folder written by `spotlab rl train --out DIR`")
    if not folder.is_dir():
        raise RLError(f"model folder {model_dir} does not exist (train one with `spotlab rl train --out DIR`)")
    path = folder / SETTINGS_FILE
    if not (folder / MODEL_FILE).is_file() or not path.is_file():
        raise RLError(f"{model_dir} holds no trained agent ({MODEL_FILE} and {SETTINGS_FILE} expected)")
    try:
        record = json.loads(path.read_text())
        return TrainSettings.from_dict(record["settings"]), record
    except (ValueError, KeyError, TypeError) as exc:
        raise RLError(f"{path}: not a readable agent record ({type(exc).__name__}: {exc})") from None


def deterministic_torch() -> None:
    """One thread and deterministic kernels: the same seed gives the same weights on a CPU (process-wide
    torch settings; training is the only user of torch in a spotlab process)."""
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


def make_env(settings: TrainSettings, split: str = "train", cache: dict | None = None, windows: dict | None = None):
    """The training environment of ``settings`` on one split of its workload."""
    from .env import SchedulingEnv
    from .workload import windows as cut

    wins = (windows or cut(settings.workload))[split]
    return SchedulingEnv(wins, slots=settings.slots, score=settings.score, baseline=settings.baseline,
                         placement=settings.placement, reward_floor=settings.reward_floor, backfill=settings.backfill,
                         cache=cache)


def train(settings: TrainSettings, out: str | Path, *, timesteps: int | None = None, minutes: float | None = None,
          progress: bool = False, windows: dict | None = None,
          on_rollout: Callable[[int, int], None] | None = None) -> TrainResult:
    """Train (or continue training) the agent of ``settings`` into ``out`` until ``timesteps`` environment steps
    in all or ``minutes`` of training in this call, whichever comes first (module doc)."""
    if timesteps is None and minutes is None:
        raise RLError("give a training budget: timesteps and/or minutes")
    if timesteps is not None and (isinstance(timesteps, bool) or not isinstance(timesteps, int) or timesteps < 1):
        raise RLError(f"timesteps must be a whole number >= 1, got {timesteps!r}")
    if minutes is not None and not (isinstance(minutes, (int, float)) and math.isfinite(minutes) and minutes > 0):
        raise RLError(f"minutes must be a finite number > 0, got {minutes!r}")
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise RLError(f"--out {out} is a file; give a folder")
    folder.mkdir(parents=True, exist_ok=True)
    deterministic_torch()
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    from .policy_net import JobScoringPolicy

    record: dict[str, Any] = {}
    resumed = (folder / MODEL_FILE).is_file() and (folder / SETTINGS_FILE).is_file()
    if resumed:
        saved, record = load_settings(folder)
        if saved != settings:
            raise RLError(f"{out} holds an agent trained with other settings; give another --out, or the same "
                               "settings to continue its training")
    env = make_env(settings, "train", windows=windows)
    done_steps = int(record.get("timesteps", 0))
    if resumed:
        model = MaskablePPO.load(folder / MODEL_FILE, env=env, device="cpu")
        model.set_random_seed(settings.seed + done_steps)
    else:
        (folder / CURVE_FILE).unlink(missing_ok=True)  # a curve without its agent is stale
        model = MaskablePPO(JobScoringPolicy, env, n_steps=settings.n_steps, batch_size=settings.batch_size,
                            n_epochs=settings.n_epochs, learning_rate=settings.learning_rate, gamma=settings.gamma,
                            gae_lambda=settings.gae_lambda, clip_range=settings.clip_range,
                            ent_coef=settings.ent_coef, policy_kwargs={"hidden": settings.hidden},
                            seed=settings.seed, device="cpu", verbose=0)
        if settings.imitation:
            from .imitation import imitate

            imitate(model, env, settings.imitation, epochs=settings.imitation_epochs, seed=settings.seed)
    # a logger without outputs: left to itself, every learn() call makes an empty SB3-<time> folder in /tmp
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    rows: list[dict[str, Any]] = []
    episodes0 = int(record.get("episodes", 0))

    class Episodes(BaseCallback):
        def _on_step(self) -> bool:
            for info, done, reward in zip(self.locals["infos"], self.locals["dones"], self.locals["rewards"]):
                if done and "scores" in info:
                    rows.append({"episode": episodes0 + len(rows), "timesteps": int(self.num_timesteps),
                                 "window": info["window"][1], "reward": float(reward),
                                 "score": info["scores"][settings.score],
                                 "baseline_score": info["baseline_scores"][settings.score],
                                 "decisions": info["decisions"]})
            return True

    rollouts = int(record.get("rollouts", 0))
    seconds0 = float(record.get("seconds", 0.0))
    started = time.perf_counter()
    target = timesteps if timesteps is not None else None
    deadline = started + 60.0 * minutes if minutes is not None else math.inf
    from tqdm import tqdm

    total = (target - model.num_timesteps) if target is not None else None
    callback = Episodes()
    with tqdm(total=total, desc="train", unit="step", disable=not progress) as bar:
        while (target is None or model.num_timesteps < target) and time.perf_counter() < deadline:
            before = model.num_timesteps
            model.learn(settings.n_steps, callback=callback, reset_num_timesteps=False)
            rollouts += 1
            bar.update(model.num_timesteps - before)
            if on_rollout is not None:
                on_rollout(rollouts, model.num_timesteps)
            if rollouts % settings.checkpoint_every == 0:
                spent = seconds0 + time.perf_counter() - started
                _save(model, folder, settings, rollouts, episodes0 + len(rows), spent, rows)
                episodes0, rows[:] = episodes0 + len(rows), []
    seconds = seconds0 + time.perf_counter() - started
    _save(model, folder, settings, rollouts, episodes0 + len(rows), seconds, rows)
    return TrainResult(folder, rollouts, int(model.num_timesteps), episodes0 + len(rows), round(seconds, 3))


def _save(model, folder: Path, settings: TrainSettings, rollouts: int, episodes: int, seconds: float,
          rows: list[dict[str, Any]]) -> None:
    """The checkpoint, its record beside it, and the new training episodes appended to the curve."""
    import sb3_contrib
    import stable_baselines3
    import torch

    model.save(folder / MODEL_FILE)
    record = {"settings": settings.to_dict(), "rollouts": rollouts, "timesteps": int(model.num_timesteps),
              "episodes": episodes, "seconds": round(seconds, 3),
              "versions": {"torch": torch.__version__, "stable_baselines3": stable_baselines3.__version__,
                           "sb3_contrib": sb3_contrib.__version__}}
    tmp = folder / (SETTINGS_FILE + ".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(folder / SETTINGS_FILE)
    if rows:
        import pandas as pd

        curve = folder / CURVE_FILE
        pd.DataFrame(rows).to_csv(curve, mode="a", header=not curve.exists(), index=False)
