"""The paper's job model sized to a market, and the methods run side by side: the shared set-up of notebooks
03-07 and `spotlab heldout` (SPEC §7). The markets are `spotlab.market.load.load_market`'s (named markets by key),
cut into jobs by `spotlab.market.windows.cut_windows`.

- `JobSpec` -> `Job`: a multi-GPU job sized to the market (N_max = min(requested GPUs, `n_max`)) whose work
  takes `load` of the soft deadline at full speed, with value = `value_factor` x its all-on-demand cost, so
  that a job is worth running and the utilities of different markets are comparable.
- `run_methods`: every method (a registered policy and its parameters) on the same windows.

Throughput H(n) = alpha n + beta comes from the fitted profiles of `spotlab.jobs.profiles` (notebook 00): the
LoRA fine-tuning of `JobSpec.model` on the market's GPU (H100 traces: the H100 fit; the V100 and A100
traces: the A100 fit, the only other profile; normalised fits differ by under 1% between GPUs).
`JobSpec(alpha=..., beta=...)` overrides it, e.g. with a measured profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..errors import JobError, TraceError
from ..jobs.job import Job, Throughput
from ..market.episodes import Episodes
from ..market.market import Market
from ..policies.semantics import Semantics
from ..processes import at_most_cores
from ..simulation.engine import simulate


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

    def __post_init__(self) -> None:
        """Each field checked by its own name: a bad one fails here, not as a derived number (the work, the hard
        deadline) once the job is built. N_min above a market's GPUs is left to `job` (sized to the market)."""
        def number(name: str, low: float, strict: bool, whole: bool = False, high: float | None = None) -> None:
            v = getattr(self, name)
            ok = not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating)) and np.isfinite(v)
            if not ok:
                raise JobError(f"job field {name}={v!r} is not a finite number")
            if whole and v != int(v):
                raise JobError(f"job field {name}={v!r} is not a whole number")
            if v < low or (strict and v == low):
                raise JobError(f"job field {name}={v!r} must be {'>' if strict else '>='} {low:g}")
            if high is not None and v > high:
                raise JobError(f"job field {name}={v!r} must be at most {high:g}")

        number("deadline_h", 0.0, True)
        number("gamma", 1.0, False)
        number("load", 0.0, True)
        if self.load > self.gamma:
            raise JobError(f"job field load={self.load!r} must be at most gamma={self.gamma!r}: the work at N_max "
                           "must fit before the hard deadline")
        number("n_max", 1, False, whole=True)
        number("n_min", 1, False, whole=True)
        if self.n_min > self.n_max:
            raise JobError(f"job field n_min={self.n_min!r} must be at most n_max={self.n_max!r}")
        number("overhead_h", 0.0, False)
        number("value_factor", 0.0, False)
        number("miss_factor", 0.0, False)
        if not isinstance(self.model, str):
            raise JobError(f"job field model={self.model!r} is not a model name")
        for name in ("alpha", "beta"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))
                                  or not np.isfinite(v)):
                raise JobError(f"job field {name}={v!r} is not a finite number")
        if self.alpha is not None and self.beta is not None:
            for n in sorted({int(self.n_min), int(self.n_max)}):  # linear: positive at both ends, positive between
                if not self.alpha * n + self.beta > 0:
                    raise JobError(f"job fields alpha={self.alpha!r}, beta={self.beta!r}: H({n}) = alpha*{n} + beta "
                                   f"= {self.alpha * n + self.beta:g} must be > 0 for every GPU count n_min..n_max "
                                   f"({self.n_min}..{self.n_max})")

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
        """The job on `market`: N_max = min(n_max, the market's requested GPUs), N_min = min(n_min, N_max)."""
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
        from ..progress import tqdm_bar

        items = tqdm_bar(items, desc="methods", leave=False, enabled=True)
    frames = Parallel(n_jobs=at_most_cores(n_jobs))(delayed(one)(label, n, dict(p)) for label, (n, p) in items)
    return pd.concat(frames, ignore_index=True)


def describe(job: Job, market: Market, episodes: Episodes) -> dict[str, Any]:
    """What a figure caption needs to say about the set-up."""
    return {"market": market.name, "slot_hours": market.slot_hours, "jobs": episodes.n,
            "work": job.work, "deadline_h": job.deadline_h, "hard_deadline_h": job.hard_deadline_h,
            "n_min": job.n_min, "n_max": job.n_max, "alpha": job.throughput.alpha, "beta": job.throughput.beta,
            "overhead_h": job.overhead_h, "value": job.value, "miss_penalty": job.miss_penalty,
            "hours_at_n_max": job.work / job.max_rate, "od_cost": job.n_max * float(np.nanmax(market.od_price))
            * (job.work / job.max_rate)}


