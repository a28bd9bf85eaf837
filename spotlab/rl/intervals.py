"""95% intervals over paired windows: a mean's t-interval, and a bootstrap interval for the change of a mean.

Every scheduler runs on the same windows, so comparisons pair them window by window. `t_interval` gives a mean
over windows with its Student's t-interval; `paired_change` gives mean(a) / mean(b) - 1 with a percentile
bootstrap interval, resampling whole windows (both schedulers' values of a window together). Used by
`spotlab.rl.evaluate` and `spotlab.experiments.rl_scheduling`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["paired_change", "t_interval"]


def t_interval(x: np.ndarray) -> tuple[float, float, float]:
    """The mean of ``x`` and its 95% Student's t-interval (NaN ends for fewer than 2 values)."""
    from scipy.special import stdtrit  # Student's t quantile, without scipy.stats' import time

    m = float(np.mean(x))
    if len(x) < 2:
        return m, math.nan, math.nan
    half = float(stdtrit(len(x) - 1, 0.975) * np.std(x, ddof=1) / math.sqrt(len(x)))
    return m, m - half, m + half


def paired_change(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, draws: int = 2000) -> tuple:
    """mean(a) / mean(b) - 1 with a 95% bootstrap interval over paired windows."""
    change = float(np.mean(a) / np.mean(b) - 1) if np.mean(b) != 0 else math.nan
    idx = rng.integers(len(a), size=(draws, len(a)))
    mb = b[idx].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = a[idx].mean(axis=1) / mb - 1
    boot = boot[np.isfinite(boot)]
    if not boot.size:
        return change, math.nan, math.nan
    return change, float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))
