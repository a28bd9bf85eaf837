"""A3 from its members' outcomes: what `Select` plays on a set of rounds, computed from the costs and completion
times its pool members already had on those rounds, instead of simulating every member again.

`Select.reset` replays every member on the rounds (and, with `warmup`, on the windows of the trace's past), picks
a member per round (`Select.choose`), and `act` plays that member's recorded run, which reproduces it exactly. So
A3's outcome in a round is its chosen member's, and an experiment that has simulated the members anyway (as
labels of their own, beside A3) only needs the choice. `select_from_members` makes it from the same inputs
`reset` uses: the members' utilities (value at completion minus cost, as the engine computes them), when each
member's outcome was settled (`settled_slots`), and the warm-up rounds, which are in the trace's past and are
replayed here (a few windows, not the rounds). It gives the chosen member per round and the fallback rate that
`Select.report` gives: the members' fallback rates over these rounds, weighted by how often each was chosen.

One zone only: across zones `act` also replays the chosen member's zones and probes, which outcomes alone do not
carry (docs/decisions/select-zones.md). Why: docs/decisions/select-from-members.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import PolicyError
from ..jobs.job import Job
from ..market.episodes import Episodes, concat
from ..simulation.settings import SimSettings
from ..simulation.slots import run_horizon
from .select import Select, replay_members, settled_slots, warmup_episodes
from .selection_run import SelectionRun


@dataclass(frozen=True)
class SelectedRounds:
    """A3 on a set of rounds: the member it plays in each (`chosen`, indices into the pool), the selection run
    (`run`: weights, regret) and its fallback rate, as `Select.report()["fallback_rate"]`."""

    chosen: np.ndarray
    fallback_rate: float
    run: SelectionRun


def select_from_members(select: Select, episodes: Episodes, job: Job, settings: SimSettings,
                        cost: np.ndarray, completion_h: np.ndarray, fallback_rate: np.ndarray, seed: int = 0,
                        safety_net: str = "strict", give_up: bool = False, n_jobs: int = 1,
                        warm: np.ndarray | None = None) -> SelectedRounds:
    """What `select` plays on `episodes` (its rounds, in order), from each pool member's outcome there: `cost`
    and `completion_h` (rounds, K; NaN: not finished) and `fallback_rate` (K,: each member's rate over these
    rounds, 0 where a policy reports none), all as a simulation of the member on `episodes` with this `job`,
    `settings`, simulation `seed` and safety net gives them. The warm-up members run under the same net
    (`n_jobs` processes), unless `warm` gives their utilities already (`warmup_utilities`). The result is the
    `simulate` of `select` on `episodes` (same seed, net), without it."""
    if not isinstance(episodes, Episodes):
        raise PolicyError("select from members: one zone only (across zones the chosen member's zones and probes "
                          f"are replayed too; simulate select), got {type(episodes).__name__}")
    members = select.members()
    select.preferred(members)  # an unknown `prefer` fails before the warm-up replay
    k = len(members)
    cost = np.asarray(cost, dtype=float)
    completion_h = np.asarray(completion_h, dtype=float)
    fallback = np.asarray(fallback_rate, dtype=float)
    if cost.shape != (episodes.n, k) or completion_h.shape != cost.shape or fallback.shape != (k,):
        raise PolicyError(f"select from members: need costs and completion times of shape (rounds, members) = "
                          f"({episodes.n}, {k}) and {k} fallback rates, got {cost.shape}, {completion_h.shape}, "
                          f"{fallback.shape}")
    if not np.isfinite(fallback).all():
        raise PolicyError("select from members: fallback rates must be finite (0 for a policy that reports none)")
    horizon = run_horizon(job, episodes, settings.deadline)
    utility = job.value_at(completion_h) - cost  # the engine's `value - cost`
    settled = np.stack([settled_slots(completion_h[:, m], episodes.slot_hours, horizon) for m in range(k)], axis=1)
    if warm is None:
        warm, = warmup_utilities(select, [episodes], job, settings, seed, safety_net, give_up, n_jobs)
    elif warm.ndim != 2 or warm.shape[1] != k:
        raise PolicyError(f"select from members: warm-up utilities must be of shape (windows, {k}), got {warm.shape}")
    run = select.choose(utility, warm, episodes, job, horizon, seed, settled, settings)
    counts = np.bincount(run.chosen, minlength=k)
    return SelectedRounds(run.chosen, float(counts @ fallback / len(run.chosen)), run)


def warmup_utilities(select: Select, sets: Sequence[Episodes], job: Job, settings: SimSettings, seed: int = 0,
                     safety_net: str = "strict", give_up: bool = False, n_jobs: int = 1) -> list[np.ndarray | None]:
    """Per set of rounds, its pool members' utilities on its warm-up windows (windows, members), None where it has
    none (or `select` does not warm up): what `Select.reset` replays, for every set at once.

    The warm-up windows of all sets that a simulation would run with the same slot length and horizon are
    stacked (`episodes.concat`) and each member is replayed once on the stack, so the simulation's cost per slot
    (A1's above all) is paid once, not once per set. Each set's utilities are its own replay's when a member's run
    of a window does not depend on the window's place in the simulation: true of every member but one whose
    draws are seeded by that place (CHC's oracle with an error, `sigma` > 0), which draws other, equally likely
    errors stacked, as in the leaderboard's lockstep cells."""
    members = select.members()
    out: list[np.ndarray | None] = [None] * len(sets)
    if not select.warmup:
        return out
    warm = [warmup_episodes(ep, run_horizon(job, ep, settings.deadline)) for ep in sets]
    key = [None if ep is None else (ep.slot_hours, run_horizon(job, ep, settings.deadline)) for ep in warm]
    for group in dict.fromkeys(k for k in key if k is not None):
        idx = [i for i, k in enumerate(key) if k == group]
        runs = replay_members(members, [concat([warm[i] for i in idx])], job, settings, seed, safety_net, give_up,
                              n_jobs)
        utility = np.stack([r.utility for r in runs], axis=1)
        ends = np.cumsum([warm[i].n for i in idx])
        for i, part in zip(idx, np.split(utility, ends[:-1])):
            out[i] = part
    return out

