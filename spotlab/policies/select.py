"""A3 — online policy selection over a pool of A1/A2 variants (SPEC §6).

Rounds are jobs, one after another: the episodes of a simulation, in their order. The market is
exogenous, so once round r is over every pool member can be replayed on it (full information): Hedge
(exponential weights on utilities normalised to losses in [0, 1], anytime learning rate) picks the
member for round r from the rounds before it only. The default is FlipFlop (de Rooij et al. 2014), which
follows the leader while that costs little and switches to the AdaHedge learning rate when it does:
AdaHedge (`algorithm="adahedge"`) adapts to the spread of the members' losses (pool members typically differ
by a few percent of the worst-case range, where the worst-case rate of `algorithm="hedge"`, sqrt(8 ln K / t),
hardly moves the weights in a few hundred rounds), but a few costly rounds early on (a blind start, one
leader overtaken) keep its rate low for long, and with a few dozen rounds that spread costs more than it
saves; FlipFlop's regret is within a constant factor of the better of following the leader and AdaHedge.
EXP3 (`algorithm="exp3"`) is the bandit ablation that sees the chosen member's utility only. The regret is
measured against the best fixed member in hindsight; Hedge's grows like sqrt(T) at worst (slope <= 0.5 on
log-log axes).

Rounds may overlap in time (a job every hour, each running 10 h): a round's outcome is then used only by
rounds that start after every member's job on it has ended (delayed feedback; a member that gave up or
missed counts as running to the window's end), so no choice looks ahead, and a round whose jobs all finish
early teaches the rounds that start soon after it, not only those after its window.

Warm-up (`warmup=True`, the default): the trace's past before the first round (the history the episodes
keep for forecasters, a week by default) is cut into jobs of the same length and stride, every member is
replayed on them, and the selector starts from those outcomes instead of uniform weights. On a few dozen
rounds the cost of learning is most of the regret; the past is as replayable as the rounds and uses
nothing from the future. Regret and the report cover the real rounds only.

Blind rounds: before any outcome is known (no history to warm up from and the first jobs still running), and
whenever the leaders tie, the selector plays `prefer`, not a uniform draw over the pool. The default, "auto",
is the pool's first CHC member (else uniform progress): it commits on forecasts but keeps a line to the
deadline, so it uses spot when spot is there without gambling on it; greedy, which does gamble, can cost a
job's whole value on a market without spot, and nothing yet says which market this is. Measured per round
against uniform progress on 42 random synthetic markets (five regimes, one with no spot at all) and random
jobs (`value_factor` 0.6–1.5, N_max 1–8, deadlines 6–24 h): the CHC member was ahead or level on average on 40 and
behind by 0.1% of the job's value on the other two (both without spot), and its worst round was 0.33 of the
job's value behind (greedy's: 1.49).
No blind choice can be at least the better of uniform progress and greedy on every market: two markets with the
same past and the same first hours can reward opposite first moves (waiting for spot, or buying on demand to keep
a line), and every online policy loses to one of the two rules on one of them
(`tests/test_select.py::test_no_online_policy_keeps_a3s_bar_on_every_market_from_the_first_round`); A3 can only
follow the better rule over rounds.

Evidence before leaving `prefer` (`evidence=0.99`, the default) [ours]: another member is played only once the
rounds known show, in a one-sided paired t-test at that level, that it does better than `prefer` (and FlipFlop then
picks among the members so shown and `prefer`). Why: with a few dozen rounds and feedback several rounds late,
follow-the-leader switches on a lead of one or two rounds, and the lead is often greedy's, whose few bad rounds
cost far more than its good ones gain: on a GCP H100 zone a 21-h job (N_min 6) saw greedy lead by 41 $ after one
round, get the next three, and lose over 1,100 $ in two of them. While no member is shown better, the regret
against any member j is at most the t-quantile times the spread of the paired differences times sqrt(rounds), the
same order as Hedge's bound, and the gate's rounds do not count in FlipFlop's choice of regime or rate. Why 0.99
and not the usual 0.95: the paired differences are heavy-tailed (a member without a line to the deadline wins a
little on most rounds and loses a job's value on a few), so the test's nominal level overstates what a run of small
wins shows. Measured (GCP H100, up to 40 rounds a run, a job every 12 h; mean utility above the better of uniform
progress and greedy, and runs below it; `evidence=None` -> 0.95 -> 0.99): 8 random jobs on us-west1-a and
us-east4-b from the trace's start (16 runs) +126.5 -> +165.6 -> +169.3 $/job, 7 -> 4 -> 4 below; the same jobs on
the seven other zones (56 runs, not used to choose 0.95) +46.1 -> +61.9 -> +77.3, 12 -> 8 -> 6 below; the held-out
job above (96 GPU-h, 1-8 GPUs, value 400 $) on the nine zones from the start and after a week (18 runs) +26.2 ->
+27.7 -> +27.7, 1 below throughout (us-central1-a from the start, -0.5); the same job with beta = +0.2 on six zones
(12 runs) +14.0 -> +28.0 -> +29.4, 5 -> 4 -> 4 below. Most runs still below are cost-only jobs where greedy, a few
$/job ahead, misses the soft deadline in a third or more of its jobs; the worst is a value job on us-east4-a where
greedy won every round by about 25 $ for ten rounds, was played, and then lost thousands of dollars a job for seven
(A3 2,315 $/job against uniform progress's 3,685): no test on what has been seen can tell that coming.

Implementation: at `reset` every member is simulated on every episode (the replay); the selection
then runs over the rounds, and `act` plays the chosen member's recorded allocation, which reproduces
that member's run exactly (same state, same safety net). Members are simulated in parallel (`n_jobs`).
The normalisation range is [-(miss penalty + N_max on-demand GPUs for the whole horizon at the
highest on-demand price), V0]: the worst and best a round can end with.

Pools: "default" (4 members: CHC with w = 12 on persistence forecasts, A2 with its defaults, and the two
published rules, uniform progress and greedy, which are A2's extremes — a line to the deadline, and no line at
all: which of them is best changes from market to market). Few members on purpose: A3's utility is a mixture
of its members', and in the first rounds the weights are still spread, so every member must be a reasonable
choice on any market; with the baselines in the pool A3 follows whichever is best, and beats them where the
CHC member is better. CHC on seasonal-naive forecasts is not in it [ours]: "same time yesterday" is a poor
forecast a few hours ahead on spot traces (notebook 02), such a member can idle for hours while spot is there
and lose a job's value, and it often leads on the warm-up only to lose the rounds. On the nine GCP H100 zones
with the held-out job of issue 11 (96 GPU-h, value 400; 18 runs: from the trace's start, and after a week of
warm-up), A3 with the four-member pool was at or above the better of uniform progress and greedy in all 18, by
26 $/job on average (0 to 90). With uniform progress as the blind default, us-east4-b from the start was 0.39
$/job below (on the second blind round it got −160 $ where the CHC member got 248); with feedback only at the
window's end as well, us-central1-a from the start was also below, by 5.4 (every member tied on the first
jobs, and the tie kept uniform progress until it lost 146 $). With the seasonal-naive member as well (measured
on 17 of these runs with neither change, and before CHC's tail discounted restarts) it was at or above in 13,
and 15 $/job below in the worst. Nor is CHC on `reversion` forecasts in place of persistence (a one-hour dip then
reads as a dip, not as twelve hours without spot): on the 72 cells of `spotlab heldout --seed 5 --jobs 8` A3 held
its bar on 63 against 62, with the same mean (56.0 against 56.3 $/job above the better baseline), 25 cells up and 23
down, and a worse worst cell (49.6 $/job below against 21.9). With the restart reserve on, at `--seed 21` it
held 22 of 24 cells against 23 (the worst 81.2 $/job below: on us-east4-a it read a drought as ending, and
waited). "wide" (11 members: more windows, commitments, predictors and A2 thresholds) for experiments; "quick"
(5 cheap members, for tests); or a list of (policy name, params) pairs in Python.
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
from .hedge import OWN_RATE, SELECTORS, SelectionRun, loglog_slope, warm_started
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
