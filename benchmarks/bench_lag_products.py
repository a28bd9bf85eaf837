"""The lag products of CHC's tail from the past (`predict.reversion.lag_products`) against numpy's correlate row by
row, in one run, with the same numbers checked.

The rows are what `policies.past_tail.past_tails` reads on the Can't Be Late leaderboard: per window of every env,
the last week observed (the gap-free history before the job and the slots seen so far) at a few slots of the job,
as the one-GPU job's spot tier, stacked by length as `past_tails` stacks them; the lags are those of a 52-hour job's
tail after a 12-slot window.

    python benchmarks/bench_lag_products.py [--per-env 30] [--repeats 3]

Prints the seconds of each path (the median of the repeats) and their ratio; exits 1 if a number differs.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from spotlab.experiments import leaderboard as lb
from spotlab.market.episodes import concat
from spotlab.predict.reversion import lag_products

WEEK = 7 * 24 * 6  # 10-minute slots: CHC's `train_hours` (168 h)
SLOTS = (0, 60, 120, 180, 240, 300)  # slots of the job the tail is read at
LAGS = np.arange(1, 301)  # a 52-hour job's tail: up to 300 slots beyond the window


def groups(per_env: int) -> list[np.ndarray]:
    """Per (slot, length of the past): the rows `past_tails` stacks."""
    w = lb.leaderboard_windows().groupby("env").head(per_env)
    ep = concat([lb.windows_episodes(lb.env_market(e), w[w.env == e]) for e in lb.ENVS])
    out = []
    for t in SLOTS:
        rows = []
        for i in range(ep.n):
            before = ep.history_avail[i]
            gaps = np.flatnonzero(~np.isfinite(before))
            past = np.concatenate([before[gaps[-1] + 1:] if gaps.size else before, ep.avail[i, :t + 1]])[-WEEK:]
            rows.append(np.minimum(np.where(np.isfinite(past), past, 0.0), 1.0))  # the spot tier of one GPU
        sizes = np.array([r.size for r in rows])
        out += [np.array([rows[r] for r in np.flatnonzero(sizes == n)]) for n in np.unique(sizes)]
    return out


def summed(rows: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """What the tail did before: numpy's correlate of each row alone."""
    n = rows.shape[1]
    return np.array([np.correlate(row, row, mode="full")[n - 1 + lags] for row in rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-env", type=int, default=30, help="leaderboard windows per env (30: all)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    parts = groups(args.per_env)
    lags = [LAGS[LAGS < g.shape[1]] for g in parts]
    print(f"{len(parts)} groups of {sum(g.shape[0] for g in parts)} rows, {min(g.shape[1] for g in parts)}-"
          f"{max(g.shape[1] for g in parts)} slots long, {LAGS.size} lags")
    times: dict[str, list[float]] = {"correlate": [], "lag_products": []}
    same = True
    for _ in range(args.repeats):  # alternating, so that a drift of the machine's speed hits both
        got = {}
        for name, fn in (("correlate", summed), ("lag_products", lag_products)):
            tic = time.perf_counter()
            got[name] = [fn(g, h) for g, h in zip(parts, lags)]
            times[name].append(time.perf_counter() - tic)
        same &= all(a.tobytes() == b.tobytes() for a, b in zip(got["correlate"], got["lag_products"]))
    old, new = (float(np.median(times[k])) for k in ("correlate", "lag_products"))
    print(f"correlate row by row {old:.3f} s, lag_products {new:.3f} s: ratio {new / old:.2f}; "
          f"numbers {'the same to the bit' if same else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
