"""Forecast scores, per horizon, on paired forecast/actual arrays.

- MAE, RMSE: in the target's units (GPUs, USD per GPU-hour).
- sMAPE, percent in [0, 200]: 200 * |f - a| / (|f| + |a|), counted as 0 when both are 0 (zero GPUs
  forecast and seen is a perfect forecast; plain MAPE is undefined whenever availability is 0).
- hit rate of "at least k GPUs": how often the forecast, rounded to whole GPUs, is right about whether
  k or more will be available; precision: when it says "at least k", how often that came true.
- coverage of an assured forecast with probability q: how often the outcome was at least as good
  (availability >= forecast, price <= forecast); calibrated when close to q. Pinball loss scores the
  same quantile (lower is better).
- Brier score of a probability forecast p of an event o (0/1): mean (p - o)^2, 0 is perfect, 0.25 is "always
  50%". For availability it scores P(available at t+h) (the point forecast as a share of the requested GPUs: for
  a 0/1 series the forecast probability itself) and P(the current spell lasts through t+h) (`evaluate.spell_lasts`).
"""


from __future__ import annotations

import numpy as np


def mae(f: np.ndarray, a: np.ndarray) -> float:
    return float(np.mean(np.abs(f - a))) if f.size else float("nan")


def rmse(f: np.ndarray, a: np.ndarray) -> float:
    return float(np.sqrt(np.mean((f - a) ** 2))) if f.size else float("nan")


def smape(f: np.ndarray, a: np.ndarray) -> float:
    if not f.size:
        return float("nan")
    den = np.abs(f) + np.abs(a)
    ratio = np.divide(2.0 * np.abs(f - a), den, out=np.zeros_like(den, dtype=float), where=den > 0)
    return float(100.0 * np.mean(ratio))


def hit_rate(f: np.ndarray, a: np.ndarray, k: int) -> float:
    if not f.size:
        return float("nan")
    return float(np.mean((np.round(f) >= k) == (a >= k)))


def precision(f: np.ndarray, a: np.ndarray, k: int) -> float:
    said = np.round(f) >= k
    return float(np.mean(a[said] >= k)) if said.any() else float("nan")


def coverage(f: np.ndarray, a: np.ndarray, target: str) -> float:
    if not f.size:
        return float("nan")
    ok = a >= f - 1e-9 if target == "availability" else a <= f + 1e-9
    return float(np.mean(ok))


def pinball(f: np.ndarray, a: np.ndarray, level: float) -> float:
    """Quantile loss of `f` as the `level`-quantile of `a` (level = P(a <= f))."""
    if not f.size:
        return float("nan")
    d = a - f
    return float(np.mean(np.maximum(level * d, (level - 1.0) * d)))


def brier(p: np.ndarray, o: np.ndarray) -> float:
    """Mean squared difference between probabilities `p` and outcomes `o` (0/1, or shares in [0, 1])."""
    return float(np.mean((np.asarray(p, dtype=float) - np.asarray(o, dtype=float)) ** 2)) if np.size(p) else float("nan")
