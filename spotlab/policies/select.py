"""A3 — online policy selection over a pool of A1/A2 variants (SPEC §6).

Rounds are jobs, one after another: the episodes of a simulation, in their order. The market is exogenous, so once
round r is over every pool member can be replayed on it (full information), and a selector picks the member for
round r from the rounds before it only, on utilities normalised to losses in [0, 1] over
[-(miss penalty + N_max on-demand GPUs for the whole horizon at the highest on-demand price), V0]: the worst and
best a round can end with. The default selector is FlipFlop (de Rooij et al. 2014): follow the leader while that
costs little, Hedge with the AdaHedge learning rate when it does (its regret within a constant factor of the better
of the two). `algorithm="adahedge"` is AdaHedge alone, "hedge" the worst-case rate sqrt(8 ln K / t), "exp3" the
bandit ablation that sees the chosen member's utility only. Regret is measured against the best fixed member in
hindsight (Hedge's grows like sqrt(T) at worst: slope <= 0.5 on log-log axes).

- Delayed feedback: rounds may overlap in time; a round's outcome is used only by rounds that start after every
  member's job on it has ended (a member that gave up or missed counts as running to the window's end).
- Warm-up (`warmup=True`): the trace's past before the first round (a week by default) is cut into jobs of the
  same length and stride, every member is replayed on them, and the selector starts from those outcomes; regret
  and the report cover the real rounds only. On a few dozen rounds the cost of learning is most of the regret.
- Blind rounds and ties: the selector plays `prefer` ("auto": the pool's first CHC member, else uniform progress;
  "none": a uniform draw), which uses spot when it is there without gambling on it, where greedy can cost a job's
  whole value.
- Evidence (`evidence=0.99`) [ours]: another member is played only once the rounds known show, in a one-sided
  paired t-test at that level, that it beats `prefer`; FlipFlop then picks among the members so shown and
  `prefer`, and the gate's rounds do not count in its choice of regime or rate. Why: a lead of one or two rounds
  is often greedy's just before it loses a job's value.
- No blind choice is at least the better of uniform progress and greedy on every market
  (`tests/policies/test_select.py::test_no_online_policy_keeps_a3s_bar_on_every_market_from_the_first_round`); A3 can only
  follow the better rule over rounds.

Pools: "default" (CHC w = 12 on persistence forecasts, A2's defaults, uniform progress and greedy: few members,
each reasonable on any market, since A3's utility is a mixture of theirs while the weights are spread), "wide"
(11 members: more windows, commitments, predictors and A2 thresholds) for experiments, "quick" (5 cheap
members, for tests), or a list of (policy name, params) pairs in Python.
At `reset` every member is simulated on every episode (in parallel, `n_jobs`); `act` plays the chosen member's
recorded allocation, which reproduces that member's run exactly (same state, same safety net).
Why these choices, the variants tried and their numbers: docs/decisions/select-flipflop-and-prefer.md,
docs/decisions/select-evidence.md, docs/decisions/select-pool.md.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, Sequence

import numpy as np

from ..errors import PolicyError
from ..market.market import Market
from ..processes import worker_count
from ..params import Boolean, Interval, Options
from ..market.episodes import Episodes
from ..simulation.engine import simulate
from ..simulation.interface import Context, Observation
from .base import OnlinePolicy
from .selectors import OWN_RATE, SELECTORS, warm_started
from .selection_run import SelectionRun
from .regret import loglog_slope
from .registry import REGISTRY, make_policy, policy_class

POOLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "default": [
        ("chc", {"w": 12, "v": 1, "predictor": "persistence"}),
        ("prediction_free", {}),
        ("uniform_progress", {}),
        ("greedy", {}),
    ],
    "wide": [
        ("chc", {"w": 6, "v": 1, "predictor": "persistence"}),
        ("chc", {"w": 12, "v": 1, "predictor": "persistence"}),
        ("chc", {"w": 12, "v": 4, "predictor": "persistence"}),
        ("chc", {"w": 12, "v": 1, "predictor": "seasonal_naive"}),
        ("chc", {"w": 12, "v": 1, "predictor": "seasonal_naive", "quantile": 0.9}),
        ("chc", {"w": 12, "v": 1, "predictor": "ets"}),
        ("prediction_free", {}),
        ("prediction_free", {"theta": 0.5, "sigma": 0.9}),
        ("prediction_free", {"theta": 1.0, "sigma": 1.0}),
        ("uniform_progress", {}),
        ("greedy", {}),
    ],
    "quick": [
        ("chc", {"w": 4, "v": 1, "predictor": "persistence"}),
        ("prediction_free", {"theta": 0.4, "sigma": 0.8}),
        ("prediction_free", {"theta": 0.7, "sigma": 0.8}),
        ("prediction_free", {"theta": 1.0, "sigma": 1.0}),
        ("prediction_free", {"theta": 0.2, "sigma": 0.6}),
    ],
}


def member_label(name: str, params: dict[str, Any]) -> str:
    inner = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name}({inner})"


def _replay(name: str, params: dict[str, Any], episodes, job, settings, seed: int, net: str, give_up: bool):
    """One member on every round, guarded by the same safety net as the selector itself."""
    res = simulate(make_policy(name, params, safety_net=net, give_up=give_up), episodes, job, settings, seed)
    return (res.arrays["o"], res.arrays["s"], res.utility, float(res.policy_report.get("fallback_rate", 0.0)),
            res.completion_h)


def replay_members(members: Sequence[tuple[str, dict[str, Any]]], sets: Sequence[Episodes], job, settings,
                   seed: int, net: str, give_up: bool, n_jobs: int = 1) -> list[tuple]:
    """Every member on every set of episodes (set-major), each run as `(o, s, utility, fallback_rate,
    completion_h)`."""
    from joblib import Parallel, delayed

    return Parallel(n_jobs=worker_count(n_jobs))(
        delayed(_replay)(n, p, e, job, settings, seed, net, give_up) for e in sets for n, p in members)


ALGORITHMS = tuple(SELECTORS)  # the first is the default


def settled_slots(completion_h: np.ndarray, slot_hours: float, horizon: int) -> np.ndarray:
    """Slots from a round's start until its outcome is settled: the end of the slot its job finished in, the
    whole window if it did not finish (a miss, or a job given up). Once a job has finished its value and cost
    are fixed, and replaying a member on the market seen so far tells when it would have finished."""
    c = np.asarray(completion_h, dtype=float)
    done = np.isfinite(c)
    out = np.full(c.shape, int(horizon), dtype=np.int64)
    out[done] = np.ceil(c[done] / slot_hours - 1e-9).astype(np.int64)
    return np.clip(out, 1, int(horizon))


def known_from(episodes, horizon: int, settled: np.ndarray | None = None) -> np.ndarray:
    """For each round, the first round that starts once its outcome is known: when every member's job on it
    has ended (`settled`: slots from the round's start, (rounds, members), from `settled_slots`),
    or its window has (without `settled`). Windows of one trace that overlap in time (jobs every hour, each
    10 h long) give delayed feedback; a job that finishes early is learnt from early, which matters most in
    the first rounds, before anything else is known. Rounds without known start times are taken as one
    after another."""
    n = episodes.n
    starts = episodes.starts
    if starts is None or np.any(np.diff(starts) < 0):
        return np.arange(1, n + 1)
    span = np.minimum(episodes.length, horizon)
    if settled is not None:
        span = np.minimum(span, np.asarray(settled).max(axis=1))
    ends = starts + span
    return np.maximum(np.searchsorted(starts, ends, side="left"), np.arange(1, n + 1))


class Select(OnlinePolicy):
    """Pick a pool member per round with Hedge (full information) or EXP3 (bandit)."""

    name = "select"

    def __init__(self, pool: str | Sequence = "default", algorithm: str = "flipflop", eta: float | None = None,
                 warmup: bool = True, prefer: str | None = "auto", evidence: float | None = 0.99, seed: int = 0,
                 n_jobs: int = -1) -> None:
        self.pool = pool
        self.prefer = prefer
        self.evidence = evidence
        self.algorithm = algorithm
        self.eta = eta
        self.warmup = warmup
        self.seed = seed
        self.n_jobs = n_jobs

    _parameter_constraints = {
        "algorithm": [Options(*ALGORITHMS)],
        "eta": [None, Interval(Real, 0, None, closed="neither")],
        "warmup": [Boolean()],
        "prefer": [None, lambda v: "" if isinstance(v, str) else "a policy name or member label"],
        "evidence": [None, Interval(Real, 0, 1, closed="neither")],
        "seed": [Interval(Integral, 0, None)],
        "n_jobs": [lambda n: "" if Interval(Integral, None, None).accepts(n) and n != 0 else "a non-zero whole number"],
    }
    _parameter_help = {
        "pool": "members to choose from: default, wide, quick, or a list of (policy, params) pairs",
        "algorithm": "flipflop (default: follow the leader, AdaHedge when that costs), adahedge, hedge (worst-case "
                     "rate) or exp3 (bandit feedback)",
        "eta": "learning rate of hedge/exp3 (None: the theoretical one)",
        "warmup": "start from what the pool teaches on the week before the first round",
        "prefer": "the member played while nothing is known and on ties (auto: the pool's CHC member, else uniform "
                  "progress; none: a uniform draw)",
        "evidence": "play another member only once a one-sided paired t-test at this level shows it beats prefer "
                    "(flipflop, adahedge; none: follow any lead)",
        "seed": "the policy's random seed (the same as --seed)",
        "n_jobs": "worker processes (-1: all cores; 1 inside a worker)",
    }

    def members(self) -> list[tuple[str, dict[str, Any]]]:
        if isinstance(self.pool, str):
            if self.pool not in POOLS:
                raise PolicyError(f"select: unknown pool {self.pool!r}; use one of {', '.join(POOLS)} "
                                  "or give a list of (policy, params) pairs")
            return [(n, dict(p)) for n, p in POOLS[self.pool]]
        out = []
        for item in self.pool:
            try:
                name, params = item
            except (TypeError, ValueError):
                raise PolicyError(f"select: pool members are (policy name, params) pairs, got {item!r}") from None
            if name not in REGISTRY or name == "select" or getattr(policy_class(name), "hindsight", False):
                raise PolicyError(f"select: {name!r} cannot be a pool member (online policies only)")
            out.append((name, dict(params)))
        if not out:
            raise PolicyError("select: the pool is empty")
        return out

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        members = self.members()
        self.preferred(members)  # an unknown `prefer` fails before minutes of replay, not after
        job, ep = ctx.job, ctx.episodes
        warm_ep = warmup_episodes(ep, ctx.horizon) if self.warmup else None
        sets = [ep] if warm_ep is None else [ep, warm_ep]
        runs = replay_members(members, sets, job, ctx.settings, ctx.seed, ctx.safety_net, ctx.give_up, self.n_jobs)
        k = len(members)
        U = np.stack([r[2] for r in runs[:k]], axis=1)  # (rounds, K)
        warm = np.stack([r[2] for r in runs[k:]], axis=1) if warm_ep is not None else None
        self.member_fallback_ = np.array([r[3] for r in runs[:k]])
        # (rounds, K): when each member's job on each round ended, which is when its outcome is known
        self.settled_ = np.stack([settled_slots(r[4], ep.slot_hours, ctx.horizon) for r in runs[:k]], axis=1)
        self.run_ = self.choose(U, warm, ep, job, ctx.horizon, ctx.seed, self.settled_)
        self.warm_ = warm  # (warm-up rounds, K) or None, kept so that other selectors can be run on the same data
        self.warmup_rounds_ = 0 if warm is None else int(warm.shape[0])
        rows = np.arange(ep.n)
        chosen = self.run_.chosen
        self.o_ = np.stack([runs[k][0][i] for i, k in zip(rows, chosen)])
        self.s_ = np.stack([runs[k][1][i] for i, k in zip(rows, chosen)])

    def choose(self, U: np.ndarray, warm: np.ndarray | None, ep: Episodes, job, horizon: int,
               seed: int = 0, settled: np.ndarray | None = None) -> SelectionRun:
        """The member of each round, from the members' utilities on the rounds `U` (rounds, K) and on the
        warm-up rounds `warm`: what `reset` does once the members are replayed. `settled` (rounds, K): slots
        until each member's outcome on each round is known (`settled_slots`); without it, the whole window.
        An experiment that has already simulated the members (e.g. the A1 lines beside A3) calls it directly:
        A3's outcome in a round is then its chosen member's, the same numbers without replaying the members
        again."""
        members = self.members()
        od_max = float(np.nanmax(ep.od_price))
        lo = -(max(job.miss_penalty, 0.0) + job.n_max * od_max * horizon * ep.slot_hours)
        hi = max(job.value, lo + 1e-9)
        names = tuple(member_label(n, p) for n, p in members)
        seed = int(seed) * 1_000_003 + int(self.seed)
        known = known_from(ep, horizon, settled)
        algo = SELECTORS[self.algorithm]
        if self.algorithm in OWN_RATE:
            if self.eta is not None:
                raise PolicyError(f"select: {self.algorithm} sets its own learning rate; eta applies to "
                                  f"{', '.join(a for a in ALGORITHMS if a not in OWN_RATE)}")
            return warm_started(algo, warm, U, lo, hi, known_from=known, seed=seed, names=names,
                                prefer=self.preferred(members), evidence=self.evidence)
        return warm_started(algo, warm, U, lo, hi, known_from=known, eta=self.eta, seed=seed, names=names)

    def preferred(self, members: list[tuple[str, dict[str, Any]]] | None = None) -> int | None:
        """Index in `members` (default: the pool) of the member played in blind rounds and ties: the one named by
        `prefer` (a policy name or a member label); with "auto", the first CHC member, else uniform progress,
        else none (a uniform draw)."""
        if self.prefer is None:
            return None
        members = self.members() if members is None else members
        wanted = ("chc", "uniform_progress") if self.prefer == "auto" else (self.prefer,)
        for want in wanted:
            for i, (n, p) in enumerate(members):
                if want in (n, member_label(n, p)):
                    return i
        if self.prefer == "auto":
            return None
        raise PolicyError(f"select: prefer={self.prefer!r} is not in the pool; name a member "
                          f"({', '.join(member_label(n, p) for n, p in members)}), 'auto' or None")

    def act(self, obs: Observation):
        t = obs.t
        return self.o_[:, t], self.s_[:, t]

    def report(self) -> dict:
        run = getattr(self, "run_", None)
        if run is None:
            return {}
        regret = run.cumulative_regret(expected=True)
        rounds = np.arange(1, regret.size + 1)
        try:
            slope = loglog_slope(rounds, regret, start=1)
        except PolicyError:
            slope = 0.0  # regret never (or hardly ever) above zero: it does not grow
        U = run.member_utilities
        return {
            "algorithm": run.algorithm,
            "rounds": int(regret.size),
            "regret": float(regret[-1]),
            "regret_realised": float(run.cumulative_regret(expected=False)[-1]),
            "regret_slope": float(slope),
            "best_member": run.names[run.best_member],
            "members": list(run.names),
            "member_mean_utility": [float(v) for v in U.mean(axis=0)],
            "chosen_counts": [int(c) for c in np.bincount(run.chosen, minlength=U.shape[1])],
            "final_weights": [float(v) for v in run.probabilities[-1]],
            "warmup_rounds": int(getattr(self, "warmup_rounds_", 0)),
            # the members' fallback rates, weighted by how often each was chosen
            "member_fallback_rate": [float(v) for v in self.member_fallback_],
            "fallback_rate": float(np.bincount(run.chosen, minlength=U.shape[1]) @ self.member_fallback_ / len(run.chosen)),
            "seed": int(run.seed),
        }


def warmup_episodes(ep: Episodes, horizon: int) -> Episodes | None:
    """Jobs that ran (and ended) in the trace's past before the first round: windows of the rounds' length,
    at the rounds' stride (back to back if unknown), laid over the gap-free history kept before the first
    round. None when there is no history or less of it than one window.

    Why: a handful of rounds (a short trace, a coarse stride) is too few for any selector to find the
    best member; the past is just as replayable as the rounds, so learning from it costs replays only and
    uses nothing from the future. The on-demand price of the past is taken as the first round's (the model
    has a constant on-demand price)."""
    if ep.history_avail is None or ep.history_price is None:
        return None
    ha, hp = ep.history_avail[0], ep.history_price[0]
    bad = np.flatnonzero(~(np.isfinite(ha) & np.isfinite(hp)))
    start = int(bad[-1]) + 1 if bad.size else 0
    ha, hp = ha[start:], hp[start:]
    length = int(min(int(ep.length[0]), horizon))
    if ha.size < length or length <= 0:
        return None
    stride = length
    if ep.starts is not None and ep.n > 1:
        gaps = np.diff(ep.starts)
        if np.all(gaps > 0):
            stride = max(1, int(np.median(gaps)))
    starts = np.arange(ha.size - length, -1, -stride)[::-1]
    requested = max(1, int(ha.max()), int(np.max(ep.avail)))
    market = Market(avail=ha.astype(np.int64), spot_price=hp, od_price=float(ep.od_price[0, 0]),
                    slot_hours=ep.slot_hours, requested=requested, name="warm-up")
    return Episodes.from_windows(market, starts, starts + length, history=int(ha.size))
