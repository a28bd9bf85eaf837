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
(11 members) for experiments, "quick" (5 cheap members, for tests), "zones" (the policies across zones and the
one-zone rules), or a list of (policy name, params) pairs in Python.
At `reset` every member is simulated on every episode (in parallel, `n_jobs`); `act` plays the chosen member's
recorded allocation, which reproduces that member's run exactly (same state, same safety net). Across zones
(`ZonedEpisodes`) the members run under the run's zone rules and `act` plays the recorded zone too, and makes the
member's probes again (`probe_log`), so that the engine bills them: the same cost, completion and moves.
Why: docs/decisions/select-flipflop-and-prefer.md, select-evidence.md, select-pool.md, select-zones.md.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, NamedTuple, Sequence

import numpy as np

from ..errors import PolicyError
from ..market.market import Market
from ..processes import worker_count
from ..params import Boolean, Interval, Options
from ..market.episodes import Episodes
from ..market.zoned_episodes import ZonedEpisodes
from ..simulation.engine import simulate
from ..simulation.interface import Action, Context, Observation
from ..simulation.settings import SimSettings
from .base import OnlinePolicy
from .probe_log import ProbeLog, replayed_probes
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
    # markets across zones: the baselines across zones, then the one-zone rules (which stay in the first zone)
    "zones": [
        ("chc_zones", {}),
        ("prediction_free_zones", {}),
        ("up_failover", {}),
        ("up_probe", {}),
        ("up_probe_cost", {}),
        ("uniform_progress", {}),
        ("greedy", {}),
    ],
}


def member_label(name: str, params: dict[str, Any]) -> str:
    inner = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name}({inner})"


class MemberRun(NamedTuple):
    """One member's run on a set of rounds: per slot its allocations `o`, `s` (windows, slots); per round its
    utility and completion time; across zones also its zone per slot, the slot it gave the job up in (-1: never)
    and its probes (`ProbeLog.calls`)."""

    o: np.ndarray
    s: np.ndarray
    utility: np.ndarray
    fallback_rate: float
    completion_h: np.ndarray
    zone: np.ndarray | None = None
    quit_slot: np.ndarray | None = None
    probes: dict[int, np.ndarray] | None = None


def _replay(name: str, params: dict[str, Any], episodes, job, settings, seed: int, net: str,
            give_up: bool) -> MemberRun:
    """One member on every round, guarded by the same safety net as the selector itself."""
    policy = make_policy(name, params, safety_net=net, give_up=give_up)
    if not isinstance(episodes, ZonedEpisodes):
        res = simulate(policy, episodes, job, settings, seed)
        return MemberRun(res.arrays["o"], res.arrays["s"], res.utility,
                         float(res.policy_report.get("fallback_rate", 0.0)), res.completion_h)
    log = ProbeLog(policy)
    res = simulate(log, episodes, job, settings, seed)
    quit_slot = np.where(res.arrays["gave_up"], res.arrays["alive"].sum(axis=1), -1)
    return MemberRun(res.arrays["o"], res.arrays["s"], res.utility, float(res.policy_report.get("fallback_rate", 0.0)),
                     res.completion_h, res.arrays["zone"], quit_slot, log.calls)


def replay_members(members: Sequence[tuple[str, dict[str, Any]]], sets: Sequence[Episodes | ZonedEpisodes], job,
                   settings, seed: int, net: str, give_up: bool, n_jobs: int = 1) -> list[MemberRun]:
    """Every member on every set of episodes (set-major), each run a `MemberRun` (a tuple that starts
    `(o, s, utility, fallback_rate, completion_h)`)."""
    from joblib import Parallel, delayed

    return Parallel(n_jobs=worker_count(n_jobs))(
        delayed(_replay)(n, p, e, job, settings, seed, net, give_up) for e in sets for n, p in members)


ALGORITHMS = tuple(SELECTORS)  # the first is the default


def utility_range(ep: Episodes | ZonedEpisodes, job, horizon: int,
                  settings: SimSettings | None = None) -> tuple[float, float]:
    """The worst and best utility a round can end with, [lo, hi]: the selectors' losses are utilities scaled from
    it to [0, 1], and their regret bounds hold where every utility lies in it. Worst: the miss penalty and N_max
    GPUs for the whole horizon at the highest on-demand price; across zones at the highest price of any zone
    (final-zone pricing bills spot at a zone's first-slot price), plus in every slot the dearest move's egress
    and, under paid visibility, a probe of every zone (the pool's members probe each zone at most once a slot)."""
    if not isinstance(ep, ZonedEpisodes):
        od_max = float(np.nanmax(ep.od_price))
        lo = -(max(job.miss_penalty, 0.0) + job.n_max * od_max * horizon * ep.slot_hours)
        return lo, max(job.value, lo + 1e-9)
    settings = settings or SimSettings()
    spot_max = max(float(np.nanmax(z.spot_price)) for z in ep.zones)
    price = max(spot_max, max(float(np.nanmax(z.od_price)) for z in ep.zones))
    per_slot = job.n_max * price * ep.slot_hours + float(np.max(settings.move_usd(ep.regions, job.checkpoint_gb)))
    if settings.visibility == "probe":
        per_slot += ep.z * job.n_min * spot_max * settings.probe_seconds / 3600.0
    lo = -(max(job.miss_penalty, 0.0) + per_slot * horizon)
    return lo, max(job.value, lo + 1e-9)


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
        "pool": "members to choose from: default, wide, quick, zones, or a list of (policy, params) pairs",
        "algorithm": "flipflop (default: follow the leader, AdaHedge when that costs), adahedge, hedge (worst-case "
                     "rate) or exp3 (bandit feedback)",
        "eta": "learning rate of hedge/exp3 (None: the theoretical one)",
        "warmup": "start from what the pool teaches on the week before the first round",
        "prefer": "the member played while nothing is known and on ties (auto: the pool's CHC member, else uniform "
                  "progress; across zones up_failover first; none: a uniform draw)",
        "evidence": "play another member only once a one-sided paired t-test at this level shows it beats prefer "
                    "(flipflop, adahedge; none: follow any lead)",
        "seed": "the policy's random seed (the same as --seed)",
        "n_jobs": "worker processes (-1: all cores; 1 inside a worker)",
    }

    def _check_together(self) -> None:
        self.members()  # an unknown pool fails when the policy is made, before any data is read

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
        market = ep if ctx.zoned is None else ctx.zoned  # across zones the members run on every zone's windows
        warm_ep = warmup_episodes(market, ctx.horizon) if self.warmup else None
        sets = [market] if warm_ep is None else [market, warm_ep]
        runs = replay_members(members, sets, job, ctx.settings, ctx.seed, ctx.safety_net, ctx.give_up, self.n_jobs)
        k = len(members)
        U = np.stack([r.utility for r in runs[:k]], axis=1)  # (rounds, K)
        warm = np.stack([r.utility for r in runs[k:]], axis=1) if warm_ep is not None else None
        self.member_fallback_ = np.array([r.fallback_rate for r in runs[:k]])
        # (rounds, K): when each member's job on each round ended, which is when its outcome is known
        self.settled_ = np.stack([settled_slots(r.completion_h, ep.slot_hours, ctx.horizon) for r in runs[:k]],
                                 axis=1)
        self.run_ = self.choose(U, warm, market, job, ctx.horizon, ctx.seed, self.settled_, ctx.settings)
        self.warm_ = warm  # (warm-up rounds, K) or None, kept so that other selectors can be run on the same data
        self.warmup_rounds_ = 0 if warm is None else int(warm.shape[0])
        rows = np.arange(ep.n)
        chosen = self.run_.chosen
        self.o_ = np.stack([runs[k].o[i] for i, k in zip(rows, chosen)])
        self.s_ = np.stack([runs[k].s[i] for i, k in zip(rows, chosen)])
        self.zone_ = None
        if ctx.zoned is not None:  # where the chosen member ran, where it gave up, and what it probed
            self.zone_ = np.stack([runs[k].zone[i] for i, k in zip(rows, chosen)])
            self.quit_ = np.array([runs[k].quit_slot[i] for i, k in zip(rows, chosen)], dtype=np.int64)
            self.probes_ = replayed_probes([r.probes for r in runs[:k]], chosen)

    def choose(self, U: np.ndarray, warm: np.ndarray | None, ep: Episodes | ZonedEpisodes, job, horizon: int,
               seed: int = 0, settled: np.ndarray | None = None,
               settings: SimSettings | None = None) -> SelectionRun:
        """The member of each round, from the members' utilities on the rounds `U` (rounds, K) and on the
        warm-up rounds `warm`: what `reset` does once the members are replayed. `settled` (rounds, K): slots
        until each member's outcome on each round is known (`settled_slots`); without it, the whole window.
        Across zones `ep` is the `ZonedEpisodes` and `settings` the run's rules (they bound what a round costs).
        An experiment that has already simulated the members (e.g. the A1 lines beside A3) calls it directly:
        A3's outcome in a round is then its chosen member's, the same numbers without replaying the members
        again."""
        members = self.members()
        lo, hi = utility_range(ep, job, horizon, settings)
        names = tuple(member_label(n, p) for n, p in members)
        seed = int(seed) * 1_000_003 + int(self.seed)
        zoned = isinstance(ep, ZonedEpisodes)
        known = known_from(ep.zones[0] if zoned else ep, horizon, settled)
        algo = SELECTORS[self.algorithm]
        if self.algorithm in OWN_RATE:
            if self.eta is not None:
                raise PolicyError(f"select: {self.algorithm} sets its own learning rate; eta applies to "
                                  f"{', '.join(a for a in ALGORITHMS if a not in OWN_RATE)}")
            return warm_started(algo, warm, U, lo, hi, known_from=known, seed=seed, names=names,
                                prefer=self.preferred(members, zoned and ep.z > 1), evidence=self.evidence)
        return warm_started(algo, warm, U, lo, hi, known_from=known, eta=self.eta, seed=seed, names=names)

    def preferred(self, members: list[tuple[str, dict[str, Any]]] | None = None,
                  across_zones: bool = False) -> int | None:
        """Index in `members` (default: the pool) of the member played in blind rounds and ties: the one named by
        `prefer` (a policy name or a member label); with "auto", the first CHC member, else uniform progress,
        else none (a uniform draw); `across_zones` (a market of several zones), A1 across zones, then UP(S), then
        A2 across zones, before them. Why: as in one zone, the planner first; then UP(S), uniform progress's rule,
        which never gambles on spot and moves to the cheapest zone with spot under any rules, where A2's age rule
        is blind to other zones' spells unless the rules show them (docs/decisions/zone-policies.md)."""
        if self.prefer is None:
            return None
        members = self.members() if members is None else members
        auto = (("chc_zones", "up_failover", "prediction_free_zones", "chc", "uniform_progress") if across_zones
                else ("chc", "uniform_progress"))
        wanted = auto if self.prefer == "auto" else (self.prefer,)
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
        if self.zone_ is None:
            return self.o_[:, t], self.s_[:, t]
        for zones in self.probes_.get(t, ()):  # the chosen member's probes, billed by the engine as they were
            obs.probe(zones)
        return Action(self.o_[:, t], self.s_[:, t], self.quit_ == t, self.zone_[:, t])

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


def warmup_episodes(ep: Episodes | ZonedEpisodes, horizon: int) -> Episodes | ZonedEpisodes | None:
    """Jobs that ran (and ended) in the trace's past before the first round: windows of the rounds' length,
    at the rounds' stride (back to back if unknown), laid over the gap-free history kept before the first
    round (across zones: the same windows of every zone, over the history every zone has without a gap).
    None when there is no history or less of it than one window.

    Why: a handful of rounds (a short trace, a coarse stride) is too few for any selector to find the
    best member; the past is just as replayable as the rounds, so learning from it costs replays only and
    uses nothing from the future. The on-demand price of the past is taken as the first round's (the model
    has a constant on-demand price)."""
    if isinstance(ep, ZonedEpisodes):
        kept = [_gap_free_history(z) for z in ep.zones]
        if any(k is None for k in kept):
            return None
        span = min(k[0].size for k in kept)  # the history every zone has, counted back from the first round
        parts = [_warmup_windows(z, horizon, ha[ha.size - span:], hp[hp.size - span:])
                 for z, (ha, hp) in zip(ep.zones, kept)]
        return None if parts[0] is None else ZonedEpisodes(tuple(parts), ep.names, ep.regions)
    kept = _gap_free_history(ep)
    return None if kept is None else _warmup_windows(ep, horizon, *kept)


def _gap_free_history(ep: Episodes) -> tuple[np.ndarray, np.ndarray] | None:
    """The availability and spot prices kept before the first round, from the last gap on."""
    if ep.history_avail is None or ep.history_price is None:
        return None
    ha, hp = ep.history_avail[0], ep.history_price[0]
    bad = np.flatnonzero(~(np.isfinite(ha) & np.isfinite(hp)))
    start = int(bad[-1]) + 1 if bad.size else 0
    return ha[start:], hp[start:]


def _warmup_windows(ep: Episodes, horizon: int, ha: np.ndarray, hp: np.ndarray) -> Episodes | None:
    """`warmup_episodes` on the history `ha`, `hp` of `ep`'s first round."""
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
