"""The guard that keeps a learned forecaster from being worse than persistence, one horizon at a time.

A model fitted on a week of step-like availability easily memorises noise, and persistence is MAE-optimal
whenever "no change" is likelier than not. So a model's forecast of horizon h is used only if, on validation
rows later in time than its training rows, its loss beats persistence's by a relative margin and by ``z``
block standard errors of the paired difference. Used by `gbm` (the boosted trees) and `duration` (the
run-length tables).
"""

from __future__ import annotations

import numpy as np

__all__ = ["beats_persistence"]


def beats_persistence(model_err: np.ndarray, pers_err: np.ndarray, loss, h: int, min_gain: float, z: float) -> bool:
    """Use the model at horizon h only if its validation loss beats persistence's by `min_gain` and by
    `z` standard errors of the paired difference. Errors of overlapping h-step forecasts are correlated,
    so the standard error is taken over blocks of max(h, 6) consecutive origins."""
    if model_err.size == 0:
        return False
    base = loss(pers_err)
    if not loss(model_err) < (1.0 - min_gain) * base:
        return False
    per_row = np.abs(model_err) - np.abs(pers_err) if loss(np.array([-1.0])) == 1.0 else model_err**2 - pers_err**2
    L = max(h, 6)
    nb = per_row.size // L
    if nb < 2:
        return False
    blocks = per_row[: nb * L].reshape(nb, L).mean(axis=1)
    return bool(blocks.mean() + z * blocks.std(ddof=1) / np.sqrt(nb) < 0)
