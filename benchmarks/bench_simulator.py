"""Simulator speed, whole process, against a plain per-window Python loop of the same rules (issue 15).

One run prints:
1. start-up: wall time of `spotlab --help` and of `spotlab simulate` on one window (median of 5 processes);
2. end to end on 30,000 Can't Be Late windows (uniform progress, 48 h of work, 52 h deadline, 0.1 h restart
   overhead, the Can't Be Late rules): `spotlab simulate ... --json` as a process against a process that reads
   the same files with the standard library and replays each window in a plain Python loop; both print the
   mean cost, which must agree. The ratio is the plain loop's wall time over spotlab's;
3. the lockstep engine against replaying the 300 published windows one at a time (the previous way).

The plain loop is the reference a user would write: one window after another, one tick after another, scalar
state. It is a second, independent implementation of the rules, so the agreement of the means is also a check.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE = "sky_spot_traces/adrs-cant-be-late-traces/"
TRACE = BASE + "ping_based__us-west-2a_v100_1.json"
WINDOWS = BASE + "random_start__us-west-2a_v100_1__windows.csv"
WORK_H, DEADLINE_H, OVERHEAD_H, OD_PRICE, SPOT_PRICE = 48.0, 52.0, 0.1, 3.06, 0.9731
N_WINDOWS = 30_000
REPEATS = 3
EPS = 1e-9


def plain_loop(trace: str, windows: str) -> float:
    """Mean cost of uniform progress (with hysteresis) over the windows, one window and one tick at a time,
    with the Can't Be Late rules: one GPU, the last tick billed in full, its deadline guard."""
    with open(trace) as f:
        doc = json.load(f)
    dt = doc["metadata"]["gap_seconds"] / 3600.0
    avail = [1 - int(v) for v in doc["data"]]  # 1 = preempted in these traces
    with open(windows, newline="") as f:
        starts = [int(r["start_tick"]) for r in csv.DictReader(f)]
    horizon = math.ceil(DEADLINE_H / dt - 1e-7)
    line = WORK_H / DEADLINE_H
    tol = EPS * WORK_H

    def pressed(remaining: float, t_h: float, restarts: int) -> bool:
        need = math.ceil((remaining + restarts * OVERHEAD_H) / dt - 1e-7)
        return need >= math.floor((DEADLINE_H - t_h) / dt + 1e-7)

    total = 0.0
    for a0 in starts:
        remaining, pending, prev_o, prev_s, cost = WORK_H, 0.0, 0, 0, 0.0
        for t in range(horizon):
            a, t_h = avail[a0 + t], t * dt
            held_s = min(prev_s, a)
            preempted = prev_s - held_s
            # uniform progress
            s = 1 if a >= 1 else 0
            o = 0
            done = WORK_H - remaining
            if done < t_h * line - tol:
                o = 1 - s
            if prev_o > 0 and (s == 0 or done <= (t_h + 2 * OVERHEAD_H) * line + tol):
                o, s = prev_o, held_s
            # Greedy's two deadline rules
            on_spot = held_s > 0
            if not on_spot and pressed(remaining, t_h, 2):
                o, s = 1, 0
            need1 = pressed(remaining, t_h, 1)
            if need1:
                o, s = (prev_o, held_s) if on_spot and pending <= EPS and prev_o + held_s == 1 else (1, 0)
            # the Can't Be Late guard (the safety net)
            if need1:
                o, s = (prev_o, prev_s) if pending <= EPS and prev_s > 0 else (1, 0)
            s = min(s, a)
            if o + s == 0:
                prev_o, prev_s = 0, 0
                continue
            if o != prev_o or s != prev_s or preempted > 0:
                pending = OVERHEAD_H
            lost = min(pending, dt)
            cost += (o * OD_PRICE + s * SPOT_PRICE) * dt
            pending = max(pending - dt, 0.0)
            capacity = dt - lost
            if capacity >= remaining - tol:
                break
            remaining -= capacity
            prev_o, prev_s = o, s
        total += cost
    return total / len(starts)


def _timed(cmd: list[str]) -> tuple[float, str, float]:
    """(wall seconds, stdout, CPU seconds) of one process."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, out, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _write_windows(path: Path, n_ticks: int, length: int, n: int) -> None:
    import numpy as np

    starts = np.random.default_rng(0).integers(0, n_ticks - length, n)
    with open(path, "w") as f:
        f.write("window,start_tick,end_tick\n")
        f.writelines(f"{i},{a},{a + length}\n" for i, a in enumerate(starts))


def main() -> None:
    from spotlab.data.locate import dataset_path

    trace, published = str(dataset_path(TRACE)), str(dataset_path(WINDOWS))
    spotlab = [str(Path(sys.executable).with_name("spotlab"))]
    job = ["--policy", "uniform_progress", "--work-hours", str(WORK_H), "--deadline-hours", str(DEADLINE_H),
           "--restart-overhead-hours", str(OVERHEAD_H), "--on-demand-price", str(OD_PRICE),
           "--spot-price", str(SPOT_PRICE), "--json", "--no-timings", "--no-progress"]
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "one.csv"
        one.write_text("window,start_tick,end_tick\n0,684,1238\n")
        many = Path(tmp) / "many.csv"
        n_ticks = len(json.loads(Path(trace).read_text())["data"])
        _write_windows(many, n_ticks, 554, N_WINDOWS)

        helps = [_timed(spotlab + ["--help"]) for _ in range(5)]
        ones = [_timed(spotlab + ["simulate", "--trace", trace, "--windows", str(one)] + job) for _ in range(5)]
        floor = [_timed([sys.executable, "-c", "import numpy, pandas"]) for _ in range(5)]
        med = statistics.median
        print(f"start-up (median of 5 processes, wall / CPU; goal < 0.5 s): spotlab --help "
              f"{med(h[0] for h in helps):.2f} / {med(h[2] for h in helps):.2f} s; spotlab simulate on one window "
              f"{med(o[0] for o in ones):.2f} / {med(o[2] for o in ones):.2f} s, of which importing numpy and "
              f"pandas alone {med(f[0] for f in floor):.2f} / {med(f[2] for f in floor):.2f} s")

        plain, ours = [], []
        for _ in range(REPEATS):  # alternating, best of each: other jobs on the machine slow both alike
            plain.append(_timed([sys.executable, __file__, "--plain-loop", trace, str(many)]))
            ours.append(_timed(spotlab + ["simulate", "--trace", trace, "--windows", str(many)] + job))
        plain_s, ours_s = min(p[0] for p in plain), min(o[0] for o in ours)
        plain_cpu, ours_cpu = min(p[2] for p in plain), min(o[2] for o in ours)
        ours_cost, plain_cost = json.loads(ours[0][1])["mean_cost"], float(plain[0][1])
        print(f"{N_WINDOWS:,} windows, uniform progress, whole process (best of {REPEATS}): plain loop "
              f"{plain_s:.2f} s, spotlab simulate {ours_s:.2f} s -> {plain_s / ours_s:.1f}x (goal >= 7x); "
              f"CPU time {plain_cpu:.2f} s vs {ours_cpu:.2f} s -> {plain_cpu / ours_cpu:.1f}x; mean cost "
              f"{ours_cost:.4f} vs {plain_cost:.4f} ({'agree' if abs(ours_cost - plain_cost) < 1e-6 else 'DIFFER'})")

    _lockstep_vs_one_by_one(trace, published)


def _lockstep_vs_one_by_one(trace: str, windows: str) -> None:
    """The previous comparison: all windows in lockstep against the same engine on one window at a time."""
    import numpy as np

    from spotlab.jobs.job import Job
    from spotlab.market.load import load_market
    from spotlab.market.windows import cut_windows
    from spotlab.policies.registry import make_policy
    from spotlab.simulation.engine import simulate
    from spotlab.simulation.settings import SimSettings

    np.seterr(all="ignore")
    market = load_market(trace, spot_price=SPOT_PRICE, od_price=OD_PRICE)
    loaded = cut_windows(market, windows=windows)
    ep = loaded
    job = Job.from_gpu_hours(WORK_H, DEADLINE_H, overhead_h=OVERHEAD_H)
    cbl = SimSettings.cant_be_late()
    for name in ("greedy", "uniform_progress"):
        t = time.perf_counter()
        simulate(make_policy(name, safety_net="cbl"), ep, job, cbl)
        t_lock = time.perf_counter() - t
        windows_ = [market.window(int(a), int(a) + int(n)) for a, n in zip(ep.starts, ep.length)]
        t = time.perf_counter()
        for w in windows_:
            simulate(make_policy(name, safety_net="cbl"), w, job, cbl)
        t_one = time.perf_counter() - t
        print(f"{ep.n} windows, {name}: lockstep {t_lock:.3f} s, one window at a time {t_one:.2f} s "
              f"-> {t_one / t_lock:.0f}x")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--plain-loop":
        print(repr(plain_loop(sys.argv[2], sys.argv[3])))
    else:
        main()
