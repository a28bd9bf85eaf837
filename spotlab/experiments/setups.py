"""The paper's job model on real and synthetic markets: the shared set-up of notebooks 03-07 (SPEC §7).

One place says which market, which job and which episodes an experiment runs on, so the notebooks only
choose keys and parameters:

- `MARKET_SPECS`: the real traces of `markets/` and the synthetic regimes. Count traces without prices get an
  assumed spot price (a fixed share of on-demand, stated in `MarketSpec.note`), since a schedule needs a
  cost; the V100 p3.2xlarge trace is the one with real per-tick spot prices (single GPU).
- `JobSpec` -> `Job`: a multi-GPU job sized to the market (N_max = min(requested GPUs, `n_max`)) whose work
  takes `load` of the soft deadline at full speed, with value = `value_factor` x its all-on-demand cost, so
  that a job is worth running and the utilities of different markets are comparable.
- `job_episodes`: jobs one after another on a trace (a window of the hard-deadline horizon every
  `stride_hours`), each with the week before it as forecasting history.

Throughput H(n) = alpha n + beta comes from the fitted profiles of `spotlab.jobs.profiles` (notebook 00): the
LoRA fine-tuning of `JobSpec.model` on the market's GPU (H100 traces: the H100 fit; the V100 and A100
traces: the A100 fit, the only other profile; normalised fits differ by under 1% between GPUs).
`JobSpec(alpha=..., beta=...)` overrides it, e.g. with a measured profile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..data.locate import dataset_path
from ..errors import TraceError
from ..jobs.job import Job, Throughput
from ..market.market import Market
from ..simulation.runs import Semantics
from ..market.episodes import Episodes, stride_starts
from ..simulation.engine import horizon_slots, simulate
from ..market.synthetic import synthetic_market
from ..market.traces import load_tidy_csv, load_trace


@dataclass(frozen=True)
class MarketSpec:
    title: str
    relpath: str | None  # None: synthetic
    zone: str | None = None
    regime: str | None = None
    spot_share: float | None = None  # assumed spot price = share x on-demand, where the trace has none
    od_price: float | None = None  # assumed on-demand price, where the trace has none
    note: str = ""
    last_hours: float | None = None  # keep only the trace's last hours (run time; see the entry's note)


MARKET_SPECS: dict[str, MarketSpec] = {
    "h100": MarketSpec("GCP H100, us-central1-a (counts of 16, list prices)", "markets/gcp_h100_probes.csv.gz",
                       "us-central1-a"),
    "v100_prices": MarketSpec("AWS V100 p3.2xlarge, us-east-1a (real per-tick spot price, 1 GPU)",
                              "markets/aws_v100_p3.2xlarge.csv.gz", "us-east-1a"),
    "v100_16": MarketSpec("AWS V100, us-west-2a (counts of 16)", "markets/aws_v100_16node_counts.csv.gz",
                          "us-west-2a", spot_share=0.3,
                          note="spot price assumed 0.3 x on-demand (the trace has none)"),
    "a100": MarketSpec("GCP A100-40GB, asia-northeast1-a (counts of 4)", "markets/gcp_a100_counts.csv.gz",
                       "asia-northeast1-a", spot_share=0.3, od_price=3.67,
                       note="prices assumed: on-demand 3.67 $/GPU-h (GCP a2 list price per GPU), spot 0.3 x that"),
    "marketplace": MarketSpec("GPU-cloud marketplace, H100 SXM5, all providers (8 requested, 30 min snapshots)",
                              "markets/gpu-price-tracker/H100_80GB_SXM5.jsonl.gz", "all", last_hours=24 * 16,
                              note="spot = cheapest flagged-interruptible offer, else the p10 price; on-demand = "
                                   "median listing; GPUs = listed at the spot price (spotlab.market.marketplace); last "
                                   "16 days (from 2025-10-31: a week of history, then 9 days of jobs, DataCrunch's "
                                   "flagged spot offers included) to keep the notebooks' run time small"),
    "calm": MarketSpec("synthetic, calm regime", None, regime="calm"),
    "volatile": MarketSpec("synthetic, volatile regime", None, regime="volatile"),
}


MARKETS = MARKET_SPECS  # old name, kept for existing code


def load_market(key: str, slot_hours: float = 1.0, hours: float = 24 * 21, seed: int = 0,
                zone: str | None = None, od_price: float | None = None, spot_share: float | None = None) -> Market:
    """The market `key` of `MARKET_SPECS` on a grid of `slot_hours` (synthetic: `hours` long, seeded), or a
    trace of one's own: `key` a path to a tidy CSV or sky_spot JSON trace, `"PATH#ZONE"` for one zone of a
    CSV. A trace without spot prices needs `spot_share` (spot price = share x on-demand) and, if it has no
    on-demand price either, `od_price`: a schedule needs a cost, and the assumption is the user's to state."""
    if key not in MARKET_SPECS:
        return _user_market(key, slot_hours, zone, od_price, spot_share)
    spec = MARKET_SPECS[key]
    if spec.relpath is None:
        return synthetic_market(hours, slot_hours=slot_hours, requested=8, od_price=3.0, regime=spec.regime,
                                seed=seed)
    market = load_tidy_csv(dataset_path(spec.relpath), zone or spec.zone, slot_hours)  # or a marketplace file
    if spec.last_hours is not None and len(market) * market.slot_hours > spec.last_hours:
        market = market.window(len(market) - int(round(spec.last_hours / market.slot_hours)), len(market))
    if spec.spot_share is not None:
        od = spec.od_price if spec.od_price is not None else float(np.nanmedian(market.od_price))
        market = market.with_prices(spec.spot_share * od, od)
    return market


def _user_market(key: str, slot_hours: float, zone: str | None, od_price: float | None,
                 spot_share: float | None) -> Market:
    path, _, zone_in_key = str(key).partition("#")
    if not Path(path).is_file():
        raise TraceError(f"unknown market {key!r}: neither a key of setups.MARKET_SPECS ({', '.join(MARKET_SPECS)}) "
                         f"nor a trace file (tidy CSV or sky_spot JSON; 'PATH#ZONE' for one zone of a CSV)")
    market = load_trace(path, zone or zone_in_key or None, slot_hours)
    od = np.asarray(market.od_price, dtype=float)
    if od_price is not None:
        if not (np.isfinite(od_price) and od_price > 0):
            raise TraceError(f"od_price must be a positive number of USD per GPU-hour (got {od_price!r})")
        od = np.full(len(market), float(od_price))
    if spot_share is not None:
        if not (np.isfinite(spot_share) and spot_share > 0):
            raise TraceError(f"spot_share must be a positive share of the on-demand price (got {spot_share!r})")
        if not np.all(np.isfinite(od)):
            raise TraceError(f"{path}: the trace has no on-demand price; give od_price (USD per GPU-hour)")
        return replace(market, spot_price=spot_share * od, od_price=od)
    missing = [name for name, arr in (("spot", market.spot_price), ("on-demand", od)) if not np.all(np.isfinite(arr))]
    if missing:
        raise TraceError(f"{path}: the trace has no {' and no '.join(missing)} price in some slots; give spot_share "
                         f"(and od_price if it has no on-demand price) to assume them")
    return replace(market, od_price=od) if od_price is not None else market


@dataclass(frozen=True)
class JobSpec:
    """A job relative to the market it runs on (see the module docstring)."""

    deadline_h: float = 12.0
    gamma: float = 1.25  # hard deadline = gamma x soft deadline
    load: float = 0.5  # work at N_max takes this share of the soft deadline
    n_min: int = 1
    n_max: int = 8
    model: str = "llama2-7b"  # the fine-tuning workload of the throughput profile
    alpha: float | None = None  # both given: this H(n) instead of the profile
    beta: float | None = None
    overhead_h: float = 0.2
    value_factor: float = 1.5
    miss_factor: float = 0.5  # miss penalty = miss_factor x value

    def throughput(self, market: Market) -> Throughput:
        """The profile's fitted H(n) for this market's GPU, unless alpha and beta are given."""
        if self.alpha is not None and self.beta is not None:
            return Throughput(float(self.alpha), float(self.beta))
        if (self.alpha is None) != (self.beta is None):
            raise TraceError("JobSpec: give both alpha and beta, or neither (then the fitted profile is used)")
        from ..jobs.profiles import job_throughput

        gpu = "h100" if "H100" in str(market.meta.get("gpu", "")).upper() else "a100"
        return job_throughput(self.model, gpu)

    def job(self, market: Market) -> Job:
        n_max = max(1, min(int(self.n_max), int(market.requested)))
        n_min = min(int(self.n_min), n_max)
        tp = self.throughput(market)
        rate = float(tp(n_max))
        if not rate > 0:
            raise TraceError(f"H(N_max={n_max}) = {rate:g}: the throughput must be positive")
        work = self.load * self.deadline_h * rate
        od = float(np.nanmax(market.od_price))
        od_cost = n_max * od * (work / rate + self.overhead_h)
        value = self.value_factor * od_cost
        return Job(work=work, deadline_h=self.deadline_h, hard_deadline_h=self.gamma * self.deadline_h,
                   n_min=n_min, n_max=n_max, throughput=tp, value=value, miss_penalty=self.miss_factor * value,
                   overhead_h=self.overhead_h)


def job_episodes(market: Market, job: Job, stride_hours: float = 6.0, max_jobs: int | None = None,
                 history_hours: float = 168.0, skip_hours: float | None = None) -> Episodes:
    """Jobs one after another: windows of the job's horizon starting every `stride_hours`, after the first
    `skip_hours` (default: the history, so every job has a full week to learn from)."""
    dt = market.slot_hours
    length = horizon_slots(job, dt)
    skip = int(round((history_hours if skip_hours is None else skip_hours) / dt))
    stride = max(1, int(round(stride_hours / dt)))
    if skip + length > len(market):  # a short trace (A100: 32 h): the jobs learn from what there is
        skip = 0
    starts = stride_starts(len(market), length, stride, skip, max_jobs)
    if starts.size == 0:
        raise TraceError(f"{market.name}: {len(market)} slots leave no job window of {length} slots after "
                         f"{skip} slots of history; use a longer trace or less history")
    return Episodes.from_windows(market, starts, starts + length, history=int(round(history_hours / dt)))


def run_methods(methods: Mapping[str, tuple[str, dict[str, Any]]], episodes: Episodes, job: Job,
                semantics: Semantics | None = None, seed: int = 0, n_jobs: int = 1,
                progress: bool = True) -> pd.DataFrame:
    """Simulate every method (label -> (policy, params)) on the same episodes; one row per (method, job)
    with utility, cost, value, completion time, deadline flags and the policy's report. Online policies run
    inside the semantics' safety net (spotlab's strict net by default), hindsight plans as they are."""
    from joblib import Parallel, delayed

    semantics = semantics or Semantics()

    def one(label: str, name: str, params: dict[str, Any]) -> pd.DataFrame:
        res = simulate(semantics.policy(name, params), episodes, job, semantics.settings, seed)
        df = res.summary()
        df.insert(0, "method", label)
        df.insert(1, "job", np.arange(len(df)))
        df["policy"] = name
        df["seed"] = seed
        # share of the policy's decisions that were not its own (a planner's time-outs): every table shows it
        df["fallback_rate"] = float(res.policy_report.get("fallback_rate", 0.0))
        return df

    items = list(methods.items())
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(items, desc="methods", leave=False)
    frames = Parallel(n_jobs=n_jobs)(delayed(one)(label, n, dict(p)) for label, (n, p) in items)
    return pd.concat(frames, ignore_index=True)


def describe(job: Job, market: Market, episodes: Episodes) -> dict[str, Any]:
    """What a figure caption needs to say about the set-up."""
    return {"market": market.name, "slot_hours": market.slot_hours, "jobs": episodes.n,
            "work": job.work, "deadline_h": job.deadline_h, "hard_deadline_h": job.hard_deadline_h,
            "n_min": job.n_min, "n_max": job.n_max, "alpha": job.throughput.alpha, "beta": job.throughput.beta,
            "overhead_h": job.overhead_h, "value": job.value, "miss_penalty": job.miss_penalty,
            "hours_at_n_max": job.work / job.max_rate, "od_cost": job.n_max * float(np.nanmax(market.od_price))
            * (job.work / job.max_rate)}


__all__ = ["MARKETS", "MARKET_SPECS", "JobSpec", "MarketSpec", "describe", "job_episodes", "load_market", "run_methods"]
