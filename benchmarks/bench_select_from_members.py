"""A3 (select, pool "default") on a slice of the ADRS leaderboard (one env, its first windows, one deadline and
overhead): simulated through `leaderboard.run` (every member replayed on every window, as notebook 01c did) against
made from its members' rows (`run(from_members=["select"])`, the members run first under their own labels, as the
notebook runs them anyway). Both give the same rows (checked here, every column but `seconds`). One run each, one
process (select's own replay on one worker: `n_jobs=1`), so the seconds are one core's.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from spotlab.experiments import leaderboard as lb

MEMBERS = ["chc_persistence", "prediction_free", "uniform_progress", "greedy"]  # the default pool, as labels


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default=lb.ENVS[1])
    ap.add_argument("--windows", type=int, default=30)
    ap.add_argument("--deadline", type=float, default=52.0)
    ap.add_argument("--overhead", type=float, default=0.1)
    args = ap.parse_args()
    w = lb.leaderboard_windows()
    w = w[w["env"] == args.env].head(args.windows)
    names = {label: name for label, (name, _) in lb.VARIANTS.items()} | {"select": "select"}
    params = {label: p for label, (_, p) in lb.VARIANTS.items()} | {"select": {"pool": "default", "n_jobs": 1}}
    kw = dict(deadlines=[args.deadline], overheads=[args.overhead], names=names, params=params, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.csv"
        before_s, before = timed(lambda: lb.run(w, policies=["select"], **kw))
        member_s = {}
        for m in MEMBERS:
            member_s[m], _ = timed(lambda: lb.run(w, policies=[m], out_csv=out, **kw))
        after_s, after = timed(lambda: lb.run(w, policies=["select"], from_members=["select"], out_csv=out, **kw))
    cols = [c for c in lb.ROW_COLUMNS if c != "seconds"]
    assert before[cols].equals(after[cols]), "the rows made from the members differ from select simulated"
    print(f"{args.env}, {len(w)} windows, deadline {args.deadline:g} h, overhead {args.overhead:g} h "
          f"(rows identical; mean cost {after['cost'].mean():.4f}, fallback rate {after['fallback_rate'].mean():g})")
    print(f"select simulated:              {before_s:8.1f} s")
    print(f"select from its members' rows: {after_s:8.1f} s  ({before_s / after_s:.1f}x)")
    print("its members, run on their own: " + ", ".join(f"{m} {s:.1f} s" for m, s in member_s.items())
          + f"; with them {after_s + sum(member_s.values()):.1f} s")


if __name__ == "__main__":
    main()
