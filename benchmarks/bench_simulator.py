"""Simulator throughput on the 300 Can't Be Late windows: lockstep engine vs one window at a time.

Prints slot-steps per second (one step = one window advanced by one slot) for greedy and
uniform_progress, measured side by side in one run, and the speed-up of simulating all windows in
lockstep over replaying them one by one with the same engine.
"""

from __future__ import annotations

import time

import numpy as np

from spotlab.data import dataset_path
from spotlab.job import Job
from spotlab.policies import make_policy
from spotlab.runs import load_episodes
from spotlab.simulator import SimSettings, simulate

BASE = "sky_spot_traces/adrs-cant-be-late-traces/"


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    loaded = load_episodes(dataset_path(BASE + "ping_based__us-west-2a_v100_1.json"),
                           dataset_path(BASE + "random_start__us-west-2a_v100_1__windows.csv"),
                           spot_price=0.9731, od_price=3.06)
    ep, market = loaded.episodes, loaded.market
    job = Job.from_gpu_hours(48, 52, overhead_h=0.1)
    cbl = SimSettings.cant_be_late()
    starts = [int(n.split("[")[1].split(":")[0]) for n in ep.names]
    print(f"{ep.n} windows x up to 312 slots (52 h of 10-min ticks)")
    print(f"{'policy':18s} {'lockstep steps/s':>18s} {'one-by-one steps/s':>20s} {'speed-up':>9s}")
    for name in ("greedy", "uniform_progress"):
        res = simulate(make_policy(name), ep, job, cbl)
        steps = int(res.arrays["alive"].sum())
        t_lock = best_of(lambda: simulate(make_policy(name), ep, job, cbl))
        windows = [market.window(a, a + int(ep.length[i])) for i, a in enumerate(starts)]
        t_one = best_of(lambda: [simulate(make_policy(name), w, job, cbl) for w in windows], repeat=1)
        print(f"{name:18s} {steps / t_lock:18,.0f} {steps / t_one:20,.0f} {t_one / t_lock:8.1f}x")
    print(f"(mean cost check: greedy {simulate(make_policy('greedy'), ep, job, cbl).metrics()['mean_cost']:.2f})")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
