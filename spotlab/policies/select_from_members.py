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

import numpy as np

from ..errors import PolicyError
from ..jobs.job import Job
from ..market.episodes import Episodes
from ..simulation.settings import SimSettings
from ..simulation.slots import horizon_slots
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
                        safety_net: str = "strict", give_up: bool = False, n_jobs: int = 1) -> SelectedRounds:
    """What `select` plays on `episodes` (its rounds, in order), from each pool member's outcome there: `cost`
    and `completion_h` (rounds, K; NaN: not finished) and `fallback_rate` (K,: each member's rate over these
    rounds, 0 where a policy reports none), all as a simulation of the member on `episodes` with this `job`,
    `settings`, simulation `seed` and safety net gives them. The warm-up members run under the same net
    (`n_jobs` processes). The result is the `simulate` of `select` on `episodes` (same seed, net), without it."""
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
    horizon = horizon_slots(job, episodes.slot_hours)  # as `simulate` sets the context's horizon
    if settings.deadline == "none":
        horizon = int(episodes.length.max())
    utility = job.value_at(completion_h) - cost  # the engine's `value - cost`
    settled = np.stack([settled_slots(completion_h[:, m], episodes.slot_hours, horizon) for m in range(k)], axis=1)
    warm_ep = warmup_episodes(episodes, horizon) if select.warmup else None
    warm = None
    if warm_ep is not None:
        runs = replay_members(members, [warm_ep], job, settings, seed, safety_net, give_up, n_jobs)
        warm = np.stack([r.utility for r in runs], axis=1)
    run = select.choose(utility, warm, episodes, job, horizon, seed, settled, settings)
    counts = np.bincount(run.chosen, minlength=k)
    return SelectedRounds(run.chosen, float(counts @ fallback / len(run.chosen)), run)
