"""The fine-tuning job: work, deadlines, GPU range, throughput, value and utility (SPEC §2).

Work is measured in *throughput units*: one GPU-hour of work on one GPU is `H(1)` units, so a job
given as "W hours on one GPU" has `work = W * H(1)` (`make_job`, the builder from user units). Times are hours
from the start of the job's window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping

import numpy as np

from ..errors import JobError

MIN_WORK = 1e-3  # throughput units: the simulator resolves work to 1e-9 of them, so less is no job at all
MAX_GPUS = 100_000  # beyond any cluster: a larger N_max is a typo, and arrays sized by it would not fit in memory


@dataclass(frozen=True)
class Throughput:
    """Training throughput `H(n)` as a function of the GPU count n, with `H(0) = 0`.

    Either the paper's linear fit `H(n) = alpha*n + beta` (n >= 1) or a measured profile table
    `{n: throughput}`; a table is looked up exactly (a policy may only use the listed counts between
    N_min and N_max, so a missing count is an error, not an interpolation).
    """

    alpha: float = 1.0
    beta: float = 0.0
    table: tuple[tuple[int, float], ...] | None = None

    def __post_init__(self) -> None:
        if self.table is not None:
            counts = [n for n, _ in self.table]
            if len(set(counts)) != len(counts) or any(n < 1 for n in counts):
                raise JobError("throughput table needs distinct GPU counts >= 1")
            if any(not np.isfinite(h) or h <= 0 for _, h in self.table):
                raise JobError("throughput table values must be finite and > 0")
        elif not (np.isfinite(self.alpha) and np.isfinite(self.beta)):
            raise JobError(f"throughput alpha={self.alpha}, beta={self.beta} must be finite")

    @classmethod
    def from_table(cls, table: Mapping[int, float]) -> "Throughput":
        return cls(table=tuple(sorted((int(n), float(h)) for n, h in table.items())))

    @property
    def is_linear(self) -> bool:
        return self.table is None

    def __call__(self, n: np.ndarray | int) -> np.ndarray:
        """Vectorised `H(n)`; `H(0) = 0`."""
        n_arr = np.asarray(n)
        if self.table is None:
            return np.where(n_arr > 0, self.alpha * n_arr + self.beta, 0.0)
        lookup = np.zeros(max(c for c, _ in self.table) + 1)
        lookup[[c for c, _ in self.table]] = [h for _, h in self.table]
        if np.any(n_arr >= lookup.size) or np.any(n_arr < 0):
            raise JobError(f"GPU count outside the throughput table: {np.unique(n_arr)}")
        out = lookup[n_arr]
        if np.any((n_arr > 0) & (out == 0)):
            raise JobError(f"GPU count missing from the throughput table: {np.unique(n_arr[(n_arr > 0) & (out == 0)])}")
        return out


@dataclass(frozen=True)
class Job:
    """One fine-tuning job `{L, d, gamma*d, N_min, N_max}` plus its value and overhead.

    `deadline_h` is the soft deadline d (full value `value` up to it), `hard_deadline_h` is gamma*d
    (value falls linearly to 0 between them; a job not done by then earns `-miss_penalty`).
    `overhead_h` is the reconfiguration overhead delta: hours of zero progress (still billed) after
    every start, count change, spot/on-demand swap or preemption recovery. `checkpoint_gb` is what a move
    to another zone carries (the egress it pays across regions; `jobs.profiles.checkpoint_gb`).
    """

    work: float
    deadline_h: float
    hard_deadline_h: float | None = None
    n_min: int = 1
    n_max: int = 1
    throughput: Throughput = field(default_factory=Throughput)
    value: float = 0.0
    miss_penalty: float = 0.0
    overhead_h: float = 0.0
    checkpoint_gb: float = 0.0

    def __post_init__(self) -> None:
        if self.hard_deadline_h is None:
            object.__setattr__(self, "hard_deadline_h", float(self.deadline_h))
        checks = [
            (np.isfinite(self.work) and self.work > 0, f"work must be > 0 (got {self.work:g})"),
            (not self.work < MIN_WORK, (f"work must be at least {MIN_WORK:g} throughput units (got {self.work:g}): "
                                        "the simulator resolves work to 1e-9 of them")),
            (np.isfinite(self.deadline_h) and self.deadline_h > 0, f"deadline must be > 0 hours (got {self.deadline_h})"),
            (self.hard_deadline_h >= self.deadline_h,
             f"hard deadline ({self.hard_deadline_h} h) must not be before the soft deadline ({self.deadline_h} h)"),
            (int(self.n_min) == self.n_min and int(self.n_max) == self.n_max and 1 <= self.n_min <= self.n_max,
             f"need integers 1 <= N_min <= N_max (got N_min={self.n_min}, N_max={self.n_max})"),
            (self.n_max <= MAX_GPUS, f"N_max must be at most {MAX_GPUS} GPUs (got {self.n_max})"),
            (np.isfinite(self.overhead_h) and self.overhead_h >= 0, f"overhead must be >= 0 hours (got {self.overhead_h})"),
            (np.isfinite(self.checkpoint_gb) and self.checkpoint_gb >= 0,
             f"checkpoint size must be >= 0 GB (got {self.checkpoint_gb})"),
            (np.isfinite(self.value) and np.isfinite(self.miss_penalty) and self.miss_penalty >= 0,
             f"value must be finite and miss penalty >= 0 (got {self.value}, {self.miss_penalty})"),
        ]
        for ok, msg in checks:
            if not ok:
                raise JobError(msg)
        # linear: positive at both ends is positive in between (and N_max may be large)
        counts = np.unique([self.n_min, self.n_max]) if self.throughput.is_linear else np.arange(self.n_min,
                                                                                                   self.n_max + 1)
        h = self.throughput(counts)
        if np.any(h <= 0):
            raise JobError(f"throughput H(n) must be > 0 for N_min..N_max, got H({counts.tolist()}) = {h.tolist()}")

    @classmethod
    def from_gpu_hours(cls, work_hours: float, deadline_h: float, **kw) -> "Job":
        """Work given as hours on one GPU, converted to throughput units `W * H(1)`."""
        tp = kw.get("throughput", Throughput())
        if not (np.isfinite(work_hours) and work_hours > 0):
            raise JobError(f"work must be > 0 GPU-hours (got {work_hours})")
        h1 = float(tp(1)) if (tp.is_linear or any(n == 1 for n, _ in tp.table)) else None
        if h1 is None:
            raise JobError("work in GPU-hours needs H(1); the throughput table has no entry for 1 GPU")
        return cls(work=work_hours * h1, deadline_h=deadline_h, **kw)

    @cached_property
    def max_rate(self) -> float:
        """Throughput on N_max GPUs: the fastest the job can go (cached: the deadline rules ask every slot)."""
        return float(self.throughput(self.n_max))

    def value_at(self, completion_h: np.ndarray | float) -> np.ndarray:
        """V(T): full value by d, linear to 0 at gamma*d, `-miss_penalty` if not done (T = NaN or > gamma*d)."""
        t = np.asarray(completion_h, dtype=float)
        d, hd = self.deadline_h, self.hard_deadline_h
        eps = 1e-9
        done = np.isfinite(t) & (t <= hd + eps)
        if hd > d:
            frac = np.clip((hd - t) / (hd - d), 0.0, 1.0)
        else:
            frac = np.ones_like(t)
        v = np.where(t <= d + eps, self.value, self.value * frac)
        return np.where(done, v, -self.miss_penalty)

    def check_feasible(self, slot_hours: float) -> None:
        """Raise if even N_max on-demand GPUs from slot 0 cannot finish by the hard deadline."""
        need = self.overhead_h + self.work / self.max_rate
        slots_avail = np.floor(self.hard_deadline_h / slot_hours + 1e-9)
        if need > slots_avail * slot_hours + 1e-9:
            if slots_avail < 1:
                raise JobError(f"the hard deadline ({self.hard_deadline_h:g} h) is shorter than one slot of the "
                               f"market ({slot_hours:g} h): resample it to shorter slots (CLI: --slot-hours, "
                               "Python: slot_hours=)")
            raise JobError(
                f"impossible deadline: the job needs {need:.4g} h on {self.n_max} on-demand GPU(s) "
                f"(work {self.work:g} at H({self.n_max})={self.max_rate:g}/h plus {self.overhead_h:g} h overhead) "
                f"but the hard deadline leaves {slots_avail * slot_hours:.4g} h "
                f"({slots_avail:.0f} slots of {slot_hours:g} h)"
            )


def make_job(
    work_hours: float,
    deadline_hours: float,
    hard_deadline_hours: float | None = None,
    overhead_hours: float = 0.0,
    gpus: int | None = None,
    gpus_min: int | None = None,
    gpus_max: int | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    value: float = 0.0,
    miss_penalty: float = 0.0,
    checkpoint_gb: float = 0.0,
) -> Job:
    """A job from user units (work in hours of one GPU, times in hours), checked: the one builder the CLI, the
    notebooks and the experiments use (`Job(...)` itself takes work in throughput units). `checkpoint_gb`: what
    a move between zones carries (`jobs.profiles.checkpoint_gb` gives it for a model and a method)."""
    for name, v in (("work_hours", work_hours), ("deadline_hours", deadline_hours),
                    ("hard_deadline_hours", hard_deadline_hours), ("overhead_hours", overhead_hours),
                    ("alpha", alpha), ("beta", beta), ("value", value), ("miss_penalty", miss_penalty),
                    ("checkpoint_gb", checkpoint_gb)):
        required = name in ("work_hours", "deadline_hours")
        if (v is not None or required) and (isinstance(v, bool) or not isinstance(v, (int, float, np.integer,
                                                                                          np.floating))
                                            or not np.isfinite(v)):
            raise JobError(f"{name} must be a finite number, got {v!r}")
    if overhead_hours < 0:
        raise JobError(f"overhead_hours must be >= 0, got {overhead_hours!r} (CLI: --restart-overhead-hours)")
    if miss_penalty < 0:
        raise JobError(f"miss_penalty must be >= 0, got {miss_penalty!r} (CLI: --miss-penalty)")
    for name, v in (("gpus", gpus), ("gpus_min", gpus_min), ("gpus_max", gpus_max)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise JobError(f"{name} must be a whole number of GPUs >= 1, got {v!r}")
    if gpus is not None and (gpus_min is not None or gpus_max is not None):
        raise JobError("give either gpus (N_min = N_max) or gpus_min/gpus_max, not both")
    n_max = gpus_max if gpus_max is not None else (gpus if gpus is not None else 1)
    n_min = gpus_min if gpus_min is not None else (gpus if gpus is not None else 1)
    lo = n_min if n_min is not None else 1
    if n_min > n_max:
        raise JobError(f"gpus_min={n_min} is above gpus_max={n_max} (CLI: --gpus-min/--gpus-max)")
    if n_max > MAX_GPUS:
        raise JobError(f"gpus_max={n_max} is more than {MAX_GPUS} GPUs (CLI: --gpus/--gpus-max)")
    for n in sorted({lo, max(lo, n_max)}):  # linear: positive at both ends is positive in between
        if not alpha * n + beta > 0:
            raise JobError(f"throughput H({n}) = alpha*{n} + beta = {alpha * n + beta:g} must be > 0 for every "
                           f"GPU count the job may use ({lo}..{n_max}); check --throughput-alpha/--throughput-beta")
    h1 = alpha + beta
    if np.isfinite(work_hours) and work_hours > 0 and work_hours * h1 < MIN_WORK:
        raise JobError(f"work_hours={work_hours:g} at H(1) = alpha + beta = {h1:g} is {work_hours * h1:g} throughput "
                       f"units, below the {MIN_WORK:g} the simulator resolves: scale alpha and beta up together, "
                       "only their ratio matters (CLI: --throughput-alpha/--throughput-beta)")
    return Job.from_gpu_hours(
        work_hours, deadline_hours, hard_deadline_h=hard_deadline_hours, overhead_h=overhead_hours,
        n_min=n_min, n_max=n_max, throughput=Throughput(alpha=alpha, beta=beta), value=value,
        miss_penalty=miss_penalty, checkpoint_gb=checkpoint_gb,
    )
