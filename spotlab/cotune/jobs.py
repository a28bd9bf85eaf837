"""Fine-tuning jobs on a shared GPU cluster, and how each configuration source decides how to run them.

A job of the cluster experiment takes its arrival time and requested GPU count from an Alibaba GPU pod and its
runtime from a Philly job (`spotlab.cluster.alibaba_philly_workload.TraceJob`). What the traces do not have is drawn (seeded):
the fine-tuning job itself — model, method, tokens per sample and batch size, uniformly among the combinations
that can run somewhere on the cluster's GPU types. Its work (dataset tokens) is the Philly runtime times the
throughput of its best configuration, so the trace's runtime is how long the job takes when well configured.

The scheduler fills in the rest (GPU model, software version, number of GPUs). Each configuration source
(`SOURCES`) turns that into an ordered list of options for the simulator (`spotlab.cluster.Option`):

- `user`: the user's guess — the GPU count the trace requested (rounded up to 1/2/4/8), a software version
  drawn per job, either GPU model; after a failure the job is resubmitted on another GPU model or with twice the
  GPUs (fewer GPUs last, for batches that do not split), and with the other software version when nothing
  worked (trial and error). The scheduler knows nothing of its speed (an estimate proportional to GPUs).
- `profiling`: short profiling runs of every completion allowed by the rules reveal which ones run and how fast
  (measured with the generator's noise), at a cost of `profile_s` per candidate charged before the job's work
  starts on its first allocation (wasted GPU time; an approximation: all profiling runs on that allocation).
- predicted knowledge (`spotlab.cotune.knowledge.PredictedKnowledge`, or any `Knowledge`): the valid
  completions ranked by predicted throughput per GPU; estimates are the predictions. A source that predicts
  nothing valid for a job falls back to the user's guess.
- `oracle`: the ground truth; never picks a configuration that fails.

When every configuration a source offered has failed (wrong predictions), the job falls back to the user's
trial and error (`SimJob.primary`), so a source's mistakes cost time and GPU-hours, never a lost job — and mean
JCT never improves by losing the hardest jobs.

Whatever a source believes, what happens when a configuration runs is the same for all sources (common random
numbers): it fails with the ground truth's out-of-memory probability, drawn once per (job, configuration, seed),
and otherwise runs at the ground truth's throughput.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..cluster.state import Cluster, Option, SimJob
from .knowledge import Knowledge, OracleKnowledge
from .perf import DEFAULT, PerfModel
from .recommend import rank
from .space import PARAMETERS, VALUES, enumerate_space, rule_violations, space_frame
from ..errors import ConfigError
from ..cluster.alibaba_philly_workload import TraceJob

__all__ = ["JOB_PARAMETERS", "FREE_PARAMETERS", "FineTuneJob", "fine_tune_jobs", "sim_jobs", "SOURCES",
           "outcome", "offered_load", "time_scale_for_load", "scaled"]

JOB_PARAMETERS = ("model_name", "method", "tokens_per_sample", "batch_size")  # the user defines these
FREE_PARAMETERS = ("gpu_model", "software_version", "number_gpus")  # the scheduler fills these in
SOURCES = ("user", "profiling", "predicted", "oracle")


@dataclass(frozen=True)
class FineTuneJob:
    """A trace job dressed as a fine-tuning job (module doc)."""

    job_id: int
    arrival_s: float
    requested_gpus: int
    runtime_s: float
    spec: Mapping[str, Any] = field(hash=False)
    work: float  # dataset tokens
    best: Mapping[str, Any] = field(hash=False)  # the ground truth's best configuration (throughput per GPU)


def _space(cluster: Cluster, values: Mapping[str, Sequence[Any]] | None) -> dict[str, tuple]:
    vals = {k: tuple(v) for k, v in (values or VALUES).items()}
    gpus = tuple(g for g in vals["gpu_model"] if any(p.gpu == g for p in cluster.pools))
    if not gpus:
        raise ConfigError(f"the cluster's GPU types {[p.gpu for p in cluster.pools]} are none of the space's "
                          f"GPU models {list(vals['gpu_model'])}")
    vals["gpu_model"] = gpus
    biggest = {p.gpu: p.nodes * p.gpus_per_node for p in cluster.pools}
    vals["number_gpus"] = tuple(n for n in vals["number_gpus"] if n <= max(biggest.values()))
    return vals


def fine_tune_jobs(trace: Iterable[TraceJob], cluster: Cluster, seed: int = 0, perf: PerfModel = DEFAULT,
                   values: Mapping[str, Sequence[Any]] | None = None) -> list[FineTuneJob]:
    """Draw each trace job's fine-tuning spec and its work (module doc). Seeded; the seed fixes the specs."""
    vals = _space(cluster, values)
    truth = rank(OracleKnowledge(perf).assess(space_frame(enumerate_space(vals))), "throughput_per_gpu")
    best = truth.drop_duplicates(list(JOB_PARAMETERS), keep="first").reset_index(drop=True)
    if best.empty:
        raise ConfigError("no configuration of the space runs on this cluster")
    rng = np.random.default_rng(seed)
    jobs = []
    for tj in trace:
        b = best.iloc[int(rng.integers(len(best)))]
        spec = {k: (int(b[k]) if k in ("tokens_per_sample", "batch_size") else str(b[k])) for k in JOB_PARAMETERS}
        cfg = {k: (int(b[k]) if k in ("number_gpus", "batch_size", "tokens_per_sample") else str(b[k]))
               for k in PARAMETERS}
        jobs.append(FineTuneJob(tj.job_id, tj.arrival_s, tj.gpus, tj.runtime_s, spec,
                                float(tj.runtime_s * b["tokens_per_second"]), cfg))
    return jobs


def outcome(job_id: int, config: Mapping[str, Any], seed: int, perf: PerfModel = DEFAULT) -> tuple[bool, float]:
    """What really happens when `config` runs for this job: (fails, true tokens/s). The same for every source."""
    return _outcome(int(job_id), tuple(config[k] for k in PARAMETERS), int(seed), perf)


@lru_cache(maxsize=1 << 18)  # bounded; one comparison of notebook 09 asks about 40,000 per seed
def _outcome(job_id: int, values: tuple, seed: int, perf: PerfModel) -> tuple[bool, float]:
    """`outcome`, a pure function of its arguments, remembered: every source, scheduler and sensitivity point
    asks it again for the same job and configuration (notebook 09: 227,000 calls, a third of its time)."""
    config = dict(zip(PARAMETERS, values))
    key = "|".join(str(v) for v in values)
    h = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    u = np.random.default_rng([seed, job_id, h & 0xFFFFFFFF, h >> 32]).random()
    fails = bool(u < perf.oom_probability(config))
    return fails, (np.nan if fails else perf.throughput(config))


def _option(job_id: int, cfg: Mapping[str, Any], est: float, seed: int, perf: PerfModel) -> Option:
    fails, rate = outcome(job_id, cfg, seed, perf)
    label = f"{cfg['gpu_model']}/{cfg['software_version']}/{cfg['number_gpus']}gpu"
    return Option(str(cfg["gpu_model"]), int(cfg["number_gpus"]), float(est), 0.0 if fails else float(rate),
                  fails, label)


def _row_cfg(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (int(row[k]) if k in ("number_gpus", "batch_size", "tokens_per_sample") else str(row[k]))
            for k in PARAMETERS}


def _user_options(job: FineTuneJob, vals: Mapping[str, tuple], seed: int, perf: PerfModel) -> tuple[Option, ...]:
    """The user's trial-and-error order. Every other source falls back on it, so it is remembered, keyed by
    what it reads (not the arrival time: the same job at another offered load shares it)."""
    return _user_options_of(int(job.job_id), int(job.requested_gpus), tuple(job.spec.items()),
                            tuple((k, tuple(v)) for k, v in vals.items()), int(seed), perf)


@lru_cache(maxsize=1 << 14)  # bounded; notebook 09 holds 3 seeds x 2,497 jobs
def _user_options_of(job_id: int, requested_gpus: int, spec_items: tuple, vals_items: tuple, seed: int,
                     perf: PerfModel) -> tuple[Option, ...]:
    vals, spec = dict(vals_items), dict(spec_items)
    rng = np.random.default_rng([seed, job_id, 7])
    versions = list(vals["software_version"])
    first = versions.pop(int(rng.integers(len(versions))))
    counts = sorted(vals["number_gpus"])
    start = next((n for n in counts if n >= requested_gpus), counts[-1])
    opts = []
    order = [c for c in counts if c >= start] + [c for c in reversed(counts) if c < start]  # fewer GPUs: last
    for sw in [first, *versions]:  # the version the user knows first; the other one when nothing else worked
        for n in order:
            for g in vals["gpu_model"]:
                cfg = {**spec, "gpu_model": g, "software_version": sw, "number_gpus": n}
                opts.append(_option(job_id, cfg, float(n), seed, perf))
    return tuple(opts)


def _profiled_options(job: FineTuneJob, vals: Mapping[str, tuple], seed: int, perf: PerfModel,
                      profile_s: float) -> tuple[list[Option], float]:
    cands = [c.as_dict() for c in enumerate_space(vals, **job.spec) if not rule_violations(c)]
    rng = np.random.default_rng([seed, job.job_id, 11])
    seen = []
    for cfg in cands:
        fails, rate = outcome(job.job_id, cfg, seed, perf)
        if not fails:
            seen.append((rate * float(np.exp(rng.normal(0.0, perf.noise_sigma))), cfg))
    seen.sort(key=lambda t: -t[0] / t[1]["number_gpus"])
    return [_option(job.job_id, cfg, est, seed, perf) for est, cfg in seen], profile_s * len(cands)


def _spec_key(job: FineTuneJob) -> tuple:
    return tuple(job.spec[k] for k in JOB_PARAMETERS)


def _known_rankings(jobs: Sequence[FineTuneJob], vals: Mapping[str, tuple], knowledge: Knowledge,
                   objective: str) -> dict[tuple, list[tuple[dict[str, Any], float]]]:
    """Per distinct job spec, its completions the knowledge deems valid, best first, as (configuration,
    estimated tokens/s). Every spec's completions are assessed in one call: a knowledge source judges each
    configuration on its own (a trained model's per-call overhead is most of its cost on one spec's few
    dozen rows), so the batch gives each row what a call per spec gives it. `rank` sorts stably, so the batch's
    ranking restricted to one spec's rows is that spec's own ranking."""
    specs: dict[tuple, dict[str, Any]] = {}
    for j in jobs:
        specs.setdefault(_spec_key(j), j.spec)
    if not specs:
        return {}
    frames = [space_frame(enumerate_space(vals, **spec)) for spec in specs.values()]
    keys = list(specs)
    owner = np.repeat(np.arange(len(keys)), [len(f) for f in frames])  # row -> its spec
    assessed = knowledge.assess(pd.concat(frames, ignore_index=True)).reset_index(drop=True)  # row i: owner[i]
    ranked = rank(assessed, objective)
    out: dict[tuple, list[tuple[dict[str, Any], float]]] = {key: [] for key in keys}
    for i, r in zip(owner[ranked.index.to_numpy()], ranked.to_dict(orient="records")):
        out[keys[i]].append((_row_cfg(r), float(r["tokens_per_second"])))
    return out


def _known_options(job: FineTuneJob, knowledge_ranked: Mapping[tuple, list], seed: int,
                   perf: PerfModel) -> list[Option]:
    return [_option(job.job_id, cfg, est, seed, perf) for cfg, est in knowledge_ranked[_spec_key(job)]]


def _efficient(opts: list[Option], floor: float) -> list[Option]:
    """Options whose estimated throughput per GPU is at least `floor` times the job's best on the same GPU
    type (order kept): the good configurations of every GPU type stay, so a job can use a slower type."""
    if not opts or floor <= 0:
        return opts
    best: dict[str, float] = {}
    for o in opts:
        best[o.gpu] = max(best.get(o.gpu, 0.0), o.est_rate / o.gpus)
    return [o for o in opts if o.est_rate / o.gpus >= floor * best[o.gpu]]


def sim_jobs(jobs: Sequence[FineTuneJob], cluster: Cluster, source: str | Knowledge, seed: int = 0,
             perf: PerfModel = DEFAULT, values: Mapping[str, Sequence[Any]] | None = None,
             profile_s: float = 60.0, objective: str = "throughput_per_gpu",
             efficiency_floor: float = 0.75) -> list[SimJob]:
    """The simulator's jobs under one configuration source: `"user"`, `"profiling"`, `"oracle"`, or a
    `Knowledge` object (e.g. `PredictedKnowledge`, `NoisyKnowledge`). A source that knows throughputs offers,
    on each GPU type, only configurations within `efficiency_floor` of the job's best estimated throughput per
    GPU on that type (a scheduler that knows a configuration wastes half its GPUs does not start it just
    because they are free). Options that cannot be placed on `cluster` are left out; a job left
    without options keeps the user's guess."""
    vals = _space(cluster, values)
    if isinstance(source, str):
        if source not in ("user", "profiling", "oracle"):
            raise ConfigError(f"unknown configuration source {source!r}; use 'user', 'profiling', 'oracle' or a "
                              "Knowledge object (predicted, noisy)")
        if source == "oracle":
            source = OracleKnowledge(perf)
    if profile_s < 0:
        raise ConfigError(f"profile_s must be >= 0 (got {profile_s})")
    if not 0 <= efficiency_floor <= 1:
        raise ConfigError(f"efficiency_floor must be in [0, 1] (got {efficiency_floor})")
    ranked = _known_rankings(jobs, vals, source, objective) if not isinstance(source, str) else {}
    out = []
    for j in jobs:
        setup = 0.0
        if source == "user":
            opts = list(_user_options(j, vals, seed, perf))
        elif source == "profiling":
            opts, setup = _profiled_options(j, vals, seed, perf, profile_s)
            opts = _efficient(opts, efficiency_floor)
        else:
            opts = _efficient(_known_options(j, ranked, seed, perf), efficiency_floor)
        primary = 0
        if source != "user":  # wrong knowledge ends in the user's trial and error, never in a lost job
            tried = {(o.gpu, o.label) for o in opts}
            fallback = [o for o in _user_options(j, vals, seed, perf) if (o.gpu, o.label) not in tried]
            primary = len(opts) if opts and fallback else 0
            opts = opts + [replace(o, est_rate=0.0) for o in fallback]
        out.append(SimJob(j.job_id, j.arrival_s, j.work, tuple(opts), setup, primary))
    return out


def offered_load(jobs: Sequence[FineTuneJob], cluster: Cluster, perf: PerfModel = DEFAULT) -> float:
    """GPU-time the jobs need on their best configurations over the cluster's GPU-time during their arrivals."""
    if not jobs:
        raise ConfigError("no jobs")
    need = sum(j.best["number_gpus"] * j.work / perf.throughput(j.best) for j in jobs)
    span = max(j.arrival_s for j in jobs) - min(j.arrival_s for j in jobs)
    cap = sum(p.nodes * p.gpus_per_node for p in cluster.pools)
    return float(need / (cap * span)) if span > 0 else float("inf")


def time_scale_for_load(jobs: Sequence[FineTuneJob], cluster: Cluster, load: float,
                        perf: PerfModel = DEFAULT) -> float:
    """The factor on inter-arrival times that makes `offered_load` equal `load` (compress < 1, stretch > 1)."""
    if not load > 0:
        raise ConfigError(f"load must be > 0 (got {load})")
    return offered_load(jobs, cluster, perf) / load


def scaled(jobs: Sequence[FineTuneJob], factor: float) -> list[FineTuneJob]:
    """The same jobs with arrival times (re-based at the first) multiplied by `factor`."""
    if not factor > 0:
        raise ConfigError(f"time scale must be > 0 (got {factor})")
    t0 = min(j.arrival_s for j in jobs)
    return [replace(j, arrival_s=(j.arrival_s - t0) * factor) for j in jobs]
