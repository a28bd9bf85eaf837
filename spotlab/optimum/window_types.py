"""The window problem's data (`window.py`): the true state a window starts from (`WindowState`), what the plan
assumes after it (`TailForecast`, over the blocks of `tail_blocks`, at the work rates of `work_segments`), the
numbers every method solves (`WindowTerms`) and the plan (`WindowPlan`).

Why a module of its own: the MILP (`window.py`) and the dynamic programme (`window_dp.py`) both read these, and
`window.py` picks between the two methods, so it imports `window_dp.py`, which imports this, not `window.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..jobs.job import Job


@dataclass(frozen=True)
class WindowState:
    """The true state of one job at the first slot of a window."""

    time_h: float  # hours since the job started, at the start of the window's first slot
    remaining: float  # work units left
    prev_o: int = 0  # allocation that ran in the previous slot
    prev_s: int = 0
    pending_h: float = 0.0  # overhead still to pay if that allocation is kept


@dataclass(frozen=True)
class TailForecast:
    """What the plan assumes after its window, per block (see `tail_blocks`): lengths in hours, expected
    spot GPU-hours obtainable, spot and on-demand prices in $/GPU-h, and the hours of each block the job is
    expected to stand still in restarts (None: none). Why the stalled hours: a restart stops the whole job,
    on-demand GPUs included, so spot that comes and goes takes time from the block, not only spot GPU-hours;
    without them a plan counted on finishing the tail at full speed and finished late
    (docs/decisions/chc-restart-discount.md).
    `mixed_gpu_hours` at `mixed_price` (None: none) are a second, dearer tier: hours when spot runs the job only
    beside on-demand GPUs (fewer than N_min spot GPUs), at their blended price. Why a tier of its own: pooled with
    spot at one average price they looked as cheap as spot at the margin, and a plan waited for them instead of
    mixing on-demand GPUs in while it could. `forecast`: the blocks are a forecast of their own slots (the
    oracle's), not the past's average; a job that may give up may then leave the tail unfinished."""

    hours: np.ndarray
    spot_gpu_hours: np.ndarray
    spot_price: np.ndarray
    od_price: np.ndarray
    stalled_hours: np.ndarray | None = None
    mixed_gpu_hours: np.ndarray | None = None
    mixed_price: np.ndarray | None = None
    forecast: bool = False


@dataclass(frozen=True)
class WindowTerms:
    """The numbers of one window problem from one state, as every method reads them: per slot t of the window
    (arrays of w) and per tail block j (arrays of `blocks`). Costs in $, work in throughput units."""

    remaining: float  # work left at the start of the window
    prev_o: int  # allocation that ran in the slot before the window
    prev_s: int
    running: bool
    pending_h: float  # overhead still to pay if that allocation is kept (0 unless running)
    left: int  # slots of the window before the hard deadline: nothing runs in the others
    slot_hours: float
    s_hi: np.ndarray  # spot GPUs slot t may use (0 where nothing runs)
    o_hi: np.ndarray  # on-demand GPUs slot t may use
    od_cost: np.ndarray  # price of one on-demand GPU for the whole slot, the timing tie-break included
    sp_cost: np.ndarray  # the same for one spot GPU
    od_refund: np.ndarray  # refund per on-demand GPU and share of the finishing slot left unused
    sp_refund: np.ndarray
    constant_od: bool  # one on-demand price over the window (the MILP then adds its symmetry cut)
    lim: np.ndarray  # the safety net: after slot t at most lim[t] work may be left, else it runs N_max on demand
    value_end: np.ndarray  # (w + blocks): value if finished by the end of slot t / tail block j
    value_unused: np.ndarray  # value per share of the finishing slot left unused (where V is linear in it)
    unfinished: float  # what a plan that does not finish earns, before its costs (penalties)
    may_stop: bool  # where the net fires, the plan may stop the job instead (give-up): it then earns `stop_value`
    stop_value: float  # what a stopped job earns, before its costs (minus the miss penalty)
    shortfall_price: float  # $ per work unit left beyond what window and tail can do (0: the plan may give up)
    tail_hours: np.ndarray  # length of each tail block (0: none)
    tail_spot_gpu_hours: np.ndarray  # spot GPU-hours the tail block offers
    tail_spot_price: np.ndarray  # $/GPU-h
    tail_od_price: np.ndarray
    tail_mixed_gpu_hours: np.ndarray  # GPU-hours of the dearer tier: spot beside on-demand GPUs (see TailForecast)
    tail_mixed_price: np.ndarray


@dataclass(frozen=True)
class WindowPlan:
    o: np.ndarray
    s: np.ndarray
    work: np.ndarray  # work units the plan counts on per slot
    objective: float
    status: str  # "optimal" (within the gap) or "time_limit" (a schedule, not proven)
    seconds: float
    method: str = "milp"  # what found it: "milp" or "dp"
    bound: float | None = None  # proven upper bound on the objective of every plan (None: not known)


def work_segments(job: Job) -> tuple[tuple[float, float, float], ...]:
    """The tail's work rate as a function of GPUs: the concave envelope of H over {0} and the job's GPU counts
    (H(0) = 0), up to its peak, as segments (GPUs wide, work per GPU-hour, intercept of the segment's line) of
    falling slope. Why: a fluid block runs any mix of the job's counts, so g GPU-hours per hour do at most
    the envelope at g; one rate per GPU-hour (the best, at few GPUs) would overstate what many GPUs do when
    H grows slower than n (beta > 0), and a plan would count on finishing the tail faster than it can."""
    tp = job.throughput
    counts = range(job.n_min, job.n_max + 1) if tp.is_linear else \
        sorted(int(n) for n, _ in tp.table if job.n_min <= n <= job.n_max)
    hull = [(0.0, 0.0)]
    for x, y in ((float(n), float(tp(n))) for n in counts):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (y2 - y1) * (x - x1) <= (y - y1) * (x2 - x1):  # hull[-1] is not above the chord: drop it
                hull.pop()
            else:
                break
        hull.append((x, y))
    out = []
    for (x1, y1), (x2, y2) in zip(hull, hull[1:]):
        slope = (y2 - y1) / (x2 - x1)
        if slope <= 0:  # past the peak more GPUs do no more work
            break
        out.append((x2 - x1, slope, y1 - slope * x1))
    return tuple(out)


def tail_blocks(start_h: float, job: Job, slot_hours: float, blocks: int) -> np.ndarray:
    """Boundaries (hours since the job started) of at most `blocks` tail blocks from `start_h` to the hard
    deadline: one per slot if they fit; otherwise the blocks go first to the time after the soft deadline
    (where the value changes and its shape needs resolution), in proportion to the two spans' lengths."""
    end = float(job.hard_deadline_h)
    if start_h >= end - 1e-9 or blocks < 1:
        return np.array([start_h])
    n_slots = int(math.ceil((end - start_h) / slot_hours - 1e-9))
    if n_slots <= blocks:
        return np.minimum(start_h + slot_hours * np.arange(n_slots + 1), end)
    d = min(max(float(job.deadline_h), start_h), end)
    before, after = d - start_h, end - d
    if before <= 1e-9 or after <= 1e-9:
        return np.linspace(start_h, end, blocks + 1)
    n_after = min(blocks - 1, max(1, int(round(blocks * after / (before + after)))))
    n_before = blocks - n_after
    return np.concatenate([np.linspace(start_h, d, n_before + 1), np.linspace(d, end, n_after + 1)[1:]])
