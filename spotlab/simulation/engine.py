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
from ..market.zoned_episodes import ZonedEpisodes
from ..params import check_seed
from .interface import Context, Observation, Policy, check_action
from .result import RECORDED, WINDOW_VIEWS, WRITTEN, SimulationResult
from .settings import SimSettings
from .slots import EPS, horizon_slots, run_horizon

_DTYPES = {"alive": bool, "reconfig": bool, "o": np.int64, "s": np.int64, "s_requested": np.int64,
           "preempted": np.int64, "zone": np.int64}


def simulate(
    policy: Policy,
    market: Market | Episodes | ZonedEpisodes | Sequence[Market],
    job: Job,
    settings: SimSettings | None = None,
    seed: int = 0,
    record: Collection[str] | None = None,
) -> SimulationResult:
    """Replay `policy` on every window of `market` and account work, overhead and cost exactly.

    `market` may hold several zones (`ZonedEpisodes`): the job then starts in the first and runs in one zone at a
    time, where the policy's actions take it, under the zone rules of `settings`. `record` names the per-slot
    arrays to keep (default: all of `RECORDED`); a long run that only needs its metrics records one or two and
    never allocates the rest."""
    _check_arguments(policy, market, job, settings, seed)
    settings = settings or SimSettings()
    zoned = market if isinstance(market, ZonedEpisodes) else None
    if zoned is not None:
        ep = zoned.zones[0]
    elif isinstance(market, Episodes):
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
    H = run_horizon(job, ep, settings.deadline)  # no deadline: the job runs on as far as its window goes
    W = ep.n
    Z = 1 if zoned is None else zoned.z
    ctx = Context(job=job, episodes=ep, settings=settings, horizon=H, seed=seed, zoned=zoned)
    policy.reset(ctx)
    name = getattr(policy, "name", type(policy).__name__)

    rec = set(RECORDED) if record is None else set(record)
    unknown = rec - set(RECORDED) - {"gave_up"}  # per window, always kept
    if unknown:
        raise ArgumentError(f"simulate: cannot record {', '.join(sorted(unknown))}; "
                            f"the per-slot arrays are {', '.join(RECORDED)}")
    if zoned is None:
        rec.discard("zone")
    # (W, H) views of slot-major buffers: each slot writes one contiguous row, not W strided cells
    out = {k: np.zeros((H, W), dtype=_DTYPES.get(k, float)).T for k in WRITTEN if k in rec}
    # the windows' views: avail in their own, possibly narrow, integer type (a run across zones records the
    # zone's it ran in, slot by slot)
    views = {k for k in WINDOW_VIEWS if k in rec}
    arr = {**out, **({k: getattr(ep, k)[:, :H] for k in views} if zoned is None else
                     {k: np.zeros((H, W), dtype=np.int64 if k == "avail" else float).T for k in views})}

    remaining = np.full(W, float(job.work))
    pending = np.zeros(W)
    prev_o = np.zeros(W, dtype=np.int64)
    prev_s = np.zeros(W, dtype=np.int64)
    active = np.ones(W, dtype=bool)
    completion = np.full(W, np.nan)
    gave_up = np.zeros(W, dtype=bool)
    cost_total = np.zeros(W)
    tol = EPS * max(1.0, job.work)
    per_slot = "cost" in out and settings.pricing == "final_zone_first_slot"  # re-priced at the end
    zones = _Zones(zoned, job, settings, H, per_slot) if zoned is not None else None
    zone = np.zeros(W, dtype=np.int64)  # where the job is (it starts in the first zone)

    for t in range(H):
        if settings.deadline == "none":
            active &= t < ep.length  # a window that ends stops the job where it is
        if zones is None:
            a_t = ep.avail[:, t].astype(np.int64, copy=False)  # windows may be cut as a narrower integer type
            sp_t, od_t = ep.spot_price[:, t], ep.od_price[:, t]
            held_s = np.minimum(prev_s, a_t)
            obs_extra = {}
        else:
            zones.at(t, active)
            a_t, sp_t, od_t = zones.here(zone)
            held_s = np.minimum(prev_s, a_t)
            obs_extra = zones.observation(zone)
        preempted = prev_s - held_s
        obs = Observation(
            t=t, time_h=t * dt, remaining=remaining.copy(), pending_h=pending.copy(),
            held_o=prev_o.copy(), held_s=held_s, prev_o=prev_o.copy(), prev_s=prev_s.copy(),
            avail=a_t, spot_price=sp_t, od_price=od_t, active=active.copy(), **obs_extra,
        )
        o_req, s_req, quit, to_zone = check_action(name, policy.act(obs), W, t, job, active, Z)
        if quit.any():  # the policy abandons the job here for good: it earns -miss_penalty, as a miss
            active = active & ~quit
            gave_up |= quit
        if zones is not None and to_zone is not None:
            new_zone = np.where(active & (to_zone >= 0), to_zone, zone)
            a_t, sp_t, od_t = zones.here(new_zone)
        else:
            new_zone = zone
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
        if zones is not None:
            moved = running & (prev_o + prev_s > 0) & (new_zone != zone)
            if settings.moves == "relaunch":
                reconfig |= moved
        reconfig &= running
        pending = np.where(reconfig, job.overhead_h, pending)
        if zones is not None:
            pending = pending + zones.transfer_h(running, new_zone)
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
        price = o * od_t + s * sp_t
        cost = price * billed
        if zones is not None:
            cost = zones.charges(cost, running, new_zone, finishing, o, s, billed)
        remaining = remaining - work  # exactly 0.0 where the job finished
        pending = np.where(running, np.maximum(pending - dt, 0.0), pending)
        cost_total += cost

        if out or (zones is not None and views):
            step = {"alive": active, "o": o, "s": s, "reconfig": reconfig, "overhead_h": lost, "billed_h": billed,
                    "work": work, "cost": cost, "remaining": remaining, "zone": new_zone}
            for k, buf in out.items():
                if k == "s_requested":
                    buf[:, t] = np.where(active, s_req, 0)
                elif k == "preempted":
                    buf[:, t] = np.where(active, preempted, 0)
                else:
                    buf[:, t] = step[k]
            if zones is not None:
                for k, v in zip(("avail", "spot_price", "od_price"), (a_t, sp_t, od_t)):
                    if k in views:
                        arr[k][:, t] = v

        active = active & ~finishing
        prev_o, prev_s = o, s
        zone = new_zone
        if not active.any():
            break

    if zones is not None and settings.pricing == "final_zone_first_slot":
        cost_total = zones.final_zone_cost(zone, out.get("cost"))
    value = job.value_at(completion)
    arr["gave_up"] = gave_up
    return SimulationResult(
        policy=getattr(policy, "name", type(policy).__name__), job=job, settings=settings, names=ep.names,
        slot_hours=dt, arrays=arr, completion_h=completion, cost=cost_total, value=value,
        policy_report=policy.report() if hasattr(policy, "report") else {},
    )


class _Zones:
    """The engine's view of a market of several zones, slot by slot: what the job's zone offers, what a policy
    may see of the others (and what asking costs), and what moving and the rules' quirks add to the bill."""

    def __init__(self, zoned: ZonedEpisodes, job: Job, settings: SimSettings, horizon: int, per_slot: bool) -> None:
        self.zoned, self.job, self.settings = zoned, job, settings
        self.W, self.Z = zoned.n, zoned.z
        self.rows = np.arange(self.W)
        self.egress = settings.move_usd(zoned.regions, job.checkpoint_gb)
        self.move_h = settings.move_hours(zoned.regions, job.checkpoint_gb)
        self.leader = np.full(self.W, -1, dtype=np.int64)  # the zone the job last ran in (-1: never ran)
        # what final-zone pricing re-prices (GPU-hours billed) and what it leaves as it is (egress, probes)
        self.od_hours = np.zeros(self.W)
        self.spot_hours = np.zeros(self.W)
        self.extras = np.zeros(self.W)
        # the same, slot by slot, where the per-slot cost is recorded: on-demand hours, spot hours, extras
        self.slots = np.zeros((3, self.W, horizon)) if per_slot else None

    def at(self, t: int, active: np.ndarray) -> None:
        eps = self.zoned.zones
        self.t, self.active = t, active
        self.A = np.stack([e.avail[:, t] for e in eps]).astype(np.int64, copy=False)  # (Z, W)
        self.SP = np.stack([e.spot_price[:, t] for e in eps])
        self.OD = np.stack([e.od_price[:, t] for e in eps])
        self.probe_cost = np.zeros(self.W)

    def here(self, zone: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.A[zone, self.rows], self.SP[zone, self.rows], self.OD[zone, self.rows]

    def observation(self, zone: np.ndarray) -> dict:
        free = self.settings.visibility == "free"
        return {"zone": zone.copy(), "zones_spot_price": self.SP, "zones_od_price": self.OD,
                "zones_avail": self.A if free else None, "probe": self.probe, "first_spot": self.first_spot}

    def probe(self, zones: np.ndarray) -> np.ndarray:
        """Whether zone `zones[w]` (-1: none) could host the job now; under probe visibility a successful probe is
        billed `probe_seconds` of N_min GPUs at that zone's spot price (a failed one is free)."""
        z = np.broadcast_to(np.asarray(zones, dtype=np.int64), (self.W,))
        ask = self.active & (z >= 0) & (z < self.Z)
        zz = np.where(ask, z, 0)
        ok = ask & (self.A[zz, self.rows] >= self.job.n_min)
        if self.settings.visibility == "probe":
            hours = self.settings.probe_seconds / 3600.0
            self.probe_cost += np.where(ok, self.job.n_min * self.SP[zz, self.rows] * hours, 0.0)
        return ok

    def first_spot(self, order: np.ndarray) -> np.ndarray:
        """The first zone of each window's `order` (W, k) whose spot could host the job now, -1 if none: launch
        attempts in turn, where a failed one costs nothing and the one that succeeds is the launch itself."""
        order = np.asarray(order, dtype=np.int64)
        if order.ndim != 2 or order.shape[0] != self.W:
            raise ValueError(f"first_spot: order must be (windows, k), got shape {order.shape}")
        zz = np.clip(order, 0, self.Z - 1)
        ok = (order >= 0) & (order < self.Z) & (self.A[zz, self.rows[:, None]] >= self.job.n_min)
        first = np.argmax(ok, axis=1)
        return np.where(ok.any(axis=1) & self.active, order[self.rows, first], -1)

    def transfer_h(self, running: np.ndarray, new_zone: np.ndarray) -> np.ndarray:
        """Hours a move adds to the restart while the checkpoint travels (with the rules' `transfer_time`)."""
        src = np.where(self.leader >= 0, self.leader, new_zone)
        return np.where(running & (self.leader >= 0), self.move_h[src, new_zone], 0.0)

    def charges(self, cost: np.ndarray, running: np.ndarray, new_zone: np.ndarray, finishing: np.ndarray,
                o: np.ndarray, s: np.ndarray, billed: np.ndarray) -> np.ndarray:
        """This slot's bill with the zone rules: egress where the job starts in another region than it last ran
        in, the probes, and the rules' quirks (the completing slot left out; hours kept for final-zone prices)."""
        src = np.where(self.leader >= 0, self.leader, new_zone)
        egress = np.where(running & (self.leader >= 0), self.egress[src, new_zone], 0.0)
        billed = billed * 1.0
        probes = self.probe_cost
        if not self.settings.bill_completing_slot and self.Z > 1:  # the slot's bill, probes included, left out
            billed, cost, probes = (np.where(finishing, 0.0, x) for x in (billed, cost, probes))
        self.leader = np.where(running, new_zone, self.leader)
        self.od_hours += o * billed
        self.spot_hours += s * billed
        self.extras += probes + egress
        if self.slots is not None:
            self.slots[:, :, self.t] = o * billed, s * billed, probes + egress
        return cost + probes + egress

    def final_zone_cost(self, zone: np.ndarray, cost: np.ndarray | None) -> np.ndarray:
        """Every slot priced at the zone the run ends in, spot at that zone's first-slot price (the leaderboard);
        egress and probes as they were. `cost`, the per-slot record where kept, is re-priced in place."""
        first_sp = np.stack([e.spot_price[:, 0] for e in self.zoned.zones])[zone, self.rows]
        first_od = np.stack([e.od_price[:, 0] for e in self.zoned.zones])[zone, self.rows]
        if cost is not None and self.slots is not None:
            od_h, spot_h, extras = self.slots[:, :, : cost.shape[1]]
            cost[:] = od_h * first_od[:, None] + spot_h * first_sp[:, None] + extras
        return self.od_hours * first_od + self.spot_hours * first_sp + self.extras


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
    if not isinstance(market, (Market, Episodes, ZonedEpisodes)):
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
