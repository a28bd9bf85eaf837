"""Regret of a selection run against its best member: the worst-case bounds of Hedge and EXP3, and the log-log slope
that checks the O(sqrt(T)) growth (SPEC §6, A3)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import PolicyError
from .selection_run import check_positive_int, check_range


def _bound_args(T, K, lo, hi) -> tuple[np.ndarray, int, float]:
    lo, hi = check_range(lo, hi)
    K = check_positive_int(K, "K")
    try:
        T_arr = np.asarray(T, dtype=float)
    except (TypeError, ValueError):
        raise PolicyError(f"T must be a positive number of rounds, got {T!r}") from None
    if T_arr.size == 0 or not np.all(np.isfinite(T_arr)) or np.any(T_arr < 1):
        raise PolicyError(f"T must be >= 1 (rounds), got {T!r}")
    return T_arr, K, hi - lo


def regret_bound_hedge(T, K: int, lo: float, hi: float, anytime: bool = False):
    """Worst-case bound on Hedge's expected regret after T rounds, in utility units (T may be an array).

    From Cesa-Bianchi & Lugosi, *Prediction, Learning, and Games* (2006), losses in [0, 1] scaled by
    ``hi - lo``:

    - fixed ``η = sqrt(8 ln K / T)`` (Thm 2.2): ``(hi - lo) sqrt(T ln K / 2)``. The proof gives
      ``ln K / η + n η / 8`` after n rounds, so the same value bounds the regret at every n <= T;
    - anytime ``η_t = sqrt(8 ln K / t)`` (Thm 2.3): ``(hi - lo) (sqrt(2 T ln K) + sqrt(ln K / 8))``, i.e.
      twice the fixed-η bound plus a constant, holding for every T simultaneously.

    Valid only when every utility lies in ``[lo, hi]`` (otherwise losses are clipped).
    """
    T_arr, K, scale = _bound_args(T, K, lo, hi)
    ln_k = math.log(K)
    if anytime:
        out = scale * (np.sqrt(2 * T_arr * ln_k) + math.sqrt(ln_k / 8))
    else:
        out = scale * np.sqrt(T_arr * ln_k / 2)
    return float(out) if out.ndim == 0 else out


def regret_bound_exp3(T, K: int, lo: float, hi: float, anytime: bool = False):
    """Bound on loss-based EXP3's pseudo-regret (γ = 0), in utility units (Bubeck & Cesa-Bianchi 2012).

    Fixed ``η = sqrt(2 ln K / (T K))``: ``(hi - lo) sqrt(2 T K ln K)``; anytime
    ``η_t = sqrt(ln K / (t K))``: ``(hi - lo) 2 sqrt(T K ln K)``. Larger than Hedge's by about sqrt(K):
    the price of seeing one member per round.
    """
    T_arr, K, scale = _bound_args(T, K, lo, hi)
    ln_k = math.log(K)
    out = scale * (2 * np.sqrt(T_arr * K * ln_k) if anytime else np.sqrt(2 * T_arr * K * ln_k))
    return float(out) if out.ndim == 0 else out


def loglog_slope(rounds, regret, start: int = 10) -> float:
    """Least-squares slope of log(regret) against log(round), over rounds >= ``start`` with regret > 0.

    The empirical check of SPEC §6 A3: regret growing like sqrt(T) gives slope 0.5, bounded regret (a
    selector that has locked onto the best member) gives a slope that tends to 0, linear regret (no
    learning) slope 1. ``start`` (default 10) skips the first rounds, where the best member in hindsight
    is still changing and the regret is mostly noise. Rounds with non-positive regret are ignored (the
    logarithm is undefined there); fewer than 3 usable points raise `PolicyError`, and so does a regret that ends
    at or below 0: the selector has caught up with the best member, and a fit through the positive rounds before
    that would read a fall to 0 as a steep negative slope (-12.6 on notebook 06's market), not as a growth rate.
    """
    try:
        r = np.asarray(rounds, dtype=float)
        g = np.asarray(regret, dtype=float)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"rounds and regret must be numeric: {exc}") from None
    if r.ndim != 1 or g.ndim != 1 or r.shape != g.shape:
        raise PolicyError(
            f"rounds and regret must be 1-D arrays of the same length, got shapes {r.shape} and {g.shape}"
        )
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise PolicyError("rounds must be finite and positive (numbered from 1)")
    finite = g[np.isfinite(g)]
    if finite.size and finite[-1] <= 0:
        raise PolicyError(f"the regret ends at {float(finite[-1]):.3g} <= 0 (the selector caught up with the best "
                          "member): there is no growth to fit a slope to")
    use = (r >= start) & np.isfinite(g) & (g > 0)
    n = int(use.sum())
    if n < 3:
        raise PolicyError(
            f"loglog_slope needs at least 3 rounds >= start={start} with positive regret, got {n}"
        )
    x, y = np.log(r[use]), np.log(g[use])
    if np.ptp(x) == 0:
        raise PolicyError("loglog_slope needs at least two distinct rounds")
    slope, _ = np.polyfit(x, y, 1)
    return float(slope)
