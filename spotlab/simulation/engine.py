"""The simulator: one engine that replays any policy on market traces (SPEC §3).

The market is exogenous, so many windows of a trace (or many traces of equal slot length) are
simulated *in lockstep*: state is a handful of arrays of shape (windows,), and each slot costs a
few numpy operations whatever the number of windows. A policy sees an `Observation` of those
arrays and returns integer allocations `(o, s)` (on-demand and spot GPUs) for every window.

Per slot t (all windows at once):
1. Preemption: spot GPUs held in t-1 beyond the availability `a_t` are lost (work is kept).
2. The policy proposes `(o_t, s_t)` (online policies come wrapped in the deadline safety net,
   `policies.safety_net`; the engine itself applies no net).
3. Spot is clipped to `a_t`; a count between 0 and N_min cannot run and becomes idle.
4. A running slot whose allocation differs from t-1's (or that recovers from a preemption) starts
   a reconfiguration: `delta` hours of zero progress, carried into later slots if delta > slot.
5. Work `H(n)*(slot - overhead)` is credited; the finishing slot is billed for the time used
   (`billing="fractional"`) or in full (`billing="full"`, as the Can't Be Late simulator does).
"""

from __future__ import annotations

from typing import Collection, Sequence

import numpy as np

from ..errors import ArgumentError, TraceError
from ..jobs.job import Job
from ..market.episodes import Episodes
from ..market.market import Market
from ..params import check_seed
from .interface import Context, Observation, Policy, check_action
from .result import RECORDED, WINDOW_VIEWS, WRITTEN, SimulationResult
from .settings import SimSettings
from .slots import EPS, horizon_slots

_DTYPES = {"alive": bool, "reconfig": bool, "o": np.int64, "s": np.int64, "s_requested": np.int64,
           "preempted": np.int64}


def simulate(
    policy: Policy,
    market: Market | Episodes | Sequence[Market],
    job: Job,
    settings: SimSettings | None = None,
    seed: int = 0,
    record: Collection[str] | None = None,
) -> SimulationResult:
    """Replay `policy` on every window of `market` and account work, overhead and cost exactly.

    `record` names the per-slot arrays to keep (default: all of `RECORDED`); a long run that only needs its
    metrics records one or two and never allocates the rest."""
    _check_arguments(policy, market, job, settings, seed)
    settings = settings or SimSettings()
    if isinstance(market, Episodes):
        ep = market
    elif isinstance(market, Market):
        ep = Episodes.from_markets([market])
    else:
        ep = Episodes.from_markets(list(market))
    dt = ep.slot_hours
    job.check_feasible(dt)
    H = horizon_slots(job, dt)
    if int(ep.length.min()) < H:
        i = int(np.argmin(ep.length))
        raise TraceError(
            f"{ep.names[i]}: the trace has {ep.length[i]} slots ({ep.length[i] * dt:g} h) but the job's hard "
            f"deadline needs {H:g} slots ({job.hard_deadline_h:g} h); use a longer trace or an earlier deadline"
        )
    W = ep.n
    ctx = Context(job=job, episodes=ep, settings=settings, horizon=H, seed=seed)
    policy.reset(ctx)
    name = getattr(policy, "name", type(policy).__name__)

    rec = set(RECORDED) if record is None else set(record)
    unknown = rec - set(RECORDED) - {"gave_up"}  # per window, always kept
    if unknown:
        raise ArgumentError(f"simulate: cannot record {', '.join(sorted(unknown))}; "
                            f"the per-slot arrays are {', '.join(RECORDED)}")
    # (W, H) views of slot-major buffers: each slot writes one contiguous row, not W strided cells
    out = {k: np.zeros((H, W), dtype=_DTYPES.get(k, float)).T for k in WRITTEN if k in rec}
    # the windows' views: avail in their own, possibly narrow, integer type
    arr = {**out, **{k: getattr(ep, k)[:, :H] for k in WINDOW_VIEWS if k in rec}}

    remaining = np.full(W, float(job.work))
    pending = np.zeros(W)
    prev_o = np.zeros(W, dtype=np.int64)
    prev_s = np.zeros(W, dtype=np.int64)
    active = np.ones(W, dtype=bool)
    completion = np.full(W, np.nan)
    gave_up = np.zeros(W, dtype=bool)
    cost_total = np.zeros(W)
    tol = EPS * max(1.0, job.work)

    for t in range(H):
        a_t = ep.avail[:, t].astype(np.int64, copy=False)  # windows may be cut as a narrower integer type
        held_s = np.minimum(prev_s, a_t)
        preempted = prev_s - held_s
        obs = Observation(
            t=t, time_h=t * dt, remaining=remaining.copy(), pending_h=pending.copy(),
            held_o=prev_o.copy(), held_s=held_s, prev_o=prev_o.copy(), prev_s=prev_s.copy(),
            avail=a_t, spot_price=ep.spot_price[:, t], od_price=ep.od_price[:, t], active=active.copy(),
        )
        o_req, s_req, quit = check_action(name, policy.act(obs), W, t, job, active)
        if quit.any():  # the policy abandons the job here for good: it earns -miss_penalty, as a miss
            active = active & ~quit
            gave_up |= quit
        o = np.where(active, o_req, 0)
        s = np.where(active, np.minimum(s_req, a_t), 0)
        n = o + s
        if job.n_min > 1:  # fewer GPUs than the job can run on: none at all
            too_few = (n > 0) & (n < job.n_min)
            o = np.where(too_few, 0, o)
            s = np.where(too_few, 0, s)
            n = o + s
        running = n > 0
        reconfig = (o != prev_o) | (s != prev_s) | (preempted > 0)
        reconfig &= running
        pending = np.where(reconfig, job.overhead_h, pending)
        lost = np.minimum(pending, dt)
        lost *= running  # 0 where idle
        rate = job.throughput(n)  # 0 where idle
        capacity = rate * (dt - lost)
        finishing = capacity >= remaining - tol
        finishing &= running
        used = running * dt  # a slot in full, or 0 where idle ...
        billed = used if settings.billing == "fractional" else used.copy()
        work = capacity
        done = np.flatnonzero(finishing)
        if done.size:  # ... but only up to the end of the work where the job finishes (few windows per slot)
            left, r = remaining[done], rate[done]
            end = np.minimum(lost[done] + left / np.where(r > 0, r, 1.0), dt)
            used[done] = end
            work[done] = left
            completion[done] = t * dt + end
        price = o * ep.od_price[:, t] + s * ep.spot_price[:, t]
        cost = price * billed
        remaining = remaining - work  # exactly 0.0 where the job finished
        pending = np.where(running, np.maximum(pending - dt, 0.0), pending)
        cost_total += cost

        if out:
            step = {"alive": active, "o": o, "s": s, "reconfig": reconfig, "overhead_h": lost, "billed_h": billed,
                    "work": work, "cost": cost, "remaining": remaining}
            for k, buf in out.items():
                if k == "s_requested":
                    buf[:, t] = np.where(active, s_req, 0)
                elif k == "preempted":
                    buf[:, t] = np.where(active, preempted, 0)
                else:
                    buf[:, t] = step[k]

        active = active & ~finishing
        prev_o, prev_s = o, s
        if not active.any():
            break

    value = job.value_at(completion)
    arr["gave_up"] = gave_up
    return SimulationResult(
        policy=getattr(policy, "name", type(policy).__name__), job=job, settings=settings, names=ep.names,
        slot_hours=dt, arrays=arr, completion_h=completion, cost=cost_total, value=value,
        policy_report=policy.report() if hasattr(policy, "report") else {},
    )


def _check_arguments(policy, market, job, settings, seed) -> None:
    """Misuse of the Python API fails here with a message that says what to pass, not deep inside as an
    AttributeError."""
    if isinstance(policy, str):
        raise ArgumentError(f"simulate: policy must be a policy object, not the name {policy!r}; "
                            f"use make_policy({policy!r}) from spotlab.policies")
    if not (callable(getattr(policy, "act", None)) and callable(getattr(policy, "reset", None))):
        raise ArgumentError(f"simulate: policy must have reset(ctx) and act(obs) (e.g. make_policy('greedy')), "
                            f"got {type(policy).__name__}")
    if isinstance(market, (str, bytes)) or hasattr(market, "__fspath__"):
        raise ArgumentError(f"simulate: market must be a Market, Episodes or a list of Markets, not the path "
                            f"{str(market)!r}; load it first with spotlab.market.load.load_market(path)")
    if not isinstance(market, (Market, Episodes)):
        items = list(market) if isinstance(market, (list, tuple)) else None
        if not items or not all(isinstance(m, Market) for m in items):
            raise ArgumentError(f"simulate: market must be a Market, Episodes or a non-empty list of Markets, "
                                f"got {type(market).__name__}")
    if not isinstance(job, Job):
        raise ArgumentError(f"simulate: job must be a Job (e.g. spotlab.jobs.job.make_job(work_hours=..., "
                            f"deadline_hours=...)), got {type(job).__name__}")
    if settings is not None and not isinstance(settings, SimSettings):
        raise ArgumentError(f"simulate: settings must be a SimSettings or None, got {type(settings).__name__}")
    check_seed(seed, ArgumentError)
