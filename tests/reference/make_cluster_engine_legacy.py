"""Writes cluster_engine_legacy.json: seeded random scenarios and what the simulator the cluster engine replaced
made of them, for `tests/cluster/test_engine.py`. Run once; the old simulator is no longer in the tree:

    git show 96a4def:benchmarks/legacy_cluster.py > /tmp/legacy_cluster.py
    python tests/reference/make_cluster_engine_legacy.py /tmp/legacy_cluster.py

Scenarios (`random.Random(seed)`, seeds 0..SCENARIOS-1) are drawn like the test's hypothesis strategy: small busy
clusters of up to 3 pools, up to 16 jobs arriving close together with up to 3 options (mostly of a GPU type the
cluster has; some never fit, some fail), fallbacks, setup times; round work and rate values half of the time, so
that runs end at the same instant. Each scenario runs twice: FIFO, and Sia with one of six (window, fail_after_s)
settings in turn (`configs`). The file holds the inputs, the two tables with their dtypes (made with pandas 3.1.1:
text columns are "str"), the summary and the rest of each result; reading it back is checked against the runs.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

import pandas as pd

SCENARIOS = 80
SIA = [(window, fail) for window in (64, 1, 2) for fail in (1.0, 30.0)]
OUT = Path(__file__).with_name("cluster_engine_legacy.json")


def configs(seed: int) -> list[tuple[str, int, float]]:
    """(scheduler, window, fail_after_s) of a scenario's two runs: FIFO and one of Sia's settings, in turn."""
    return [("fifo", 64, (1.0, 30.0)[seed % 2]), ("sia", *SIA[seed % len(SIA)])]


def scenario(seed: int) -> tuple[str, list[list]]:
    """A cluster in `Cluster.parse` form and jobs as [job_id, arrival_s, work, options, setup_s, primary] with
    options as [gpu, gpus, est_rate, true_rate, fails, label]."""
    r = random.Random(seed)
    types = [r.choice("AB") for _ in range(r.randint(1, 3))]
    pools = [f"{t}:{r.randint(1, 2)}x{r.choice([1, 2, 4, 8])}" for t in types]

    def option() -> list:
        gpu = r.choice(types) if r.random() < 0.8 else r.choice("ABC")  # mostly a GPU type the cluster has
        rate = r.choice([0.5, 1.0, 2.0, 4.0, 5.0]) if r.random() < 0.5 else r.uniform(0.5, 5.0)
        return [gpu, r.choice([1, 1, 2, 2, 3, 4, 8, 16]), r.choice([0.0, 0.5, 1.0, 2.0, 3.5]), rate,
                r.choice([False, False, True]), r.choice(["", "x"])]

    jobs = []
    for i in range(r.randint(0, 16)):
        work = r.choice([1.0, 2.0, 10.0, 50.0, 100.0]) if r.random() < 0.5 else r.uniform(1.0, 100.0)
        options = [option() for _ in range(r.randint(1, 3))] if r.randint(0, 9) else []
        jobs.append([i, float(r.randint(0, 6)), work, options, r.choice([0.0, 0.0, 7.5]), r.randint(0, 2)])
    return ",".join(pools), jobs


def columns(frame: pd.DataFrame) -> dict[str, list]:
    return {c: [list(v) if isinstance(v, tuple) else v for v in frame[c]] for c in frame.columns}


def dtypes(frame: pd.DataFrame) -> dict[str, str]:
    return {c: str(t) for c, t in frame.dtypes.items()}


def frame(cols: dict[str, list], types: dict[str, str]) -> pd.DataFrame:
    """A table back from the file (the test's reading): nodes as tuples, every column of its recorded dtype."""
    return pd.DataFrame({c: pd.Series([tuple(v) if isinstance(v, list) else v for v in vs], dtype=object)
                         for c, vs in cols.items()}, columns=list(types)).astype(types)


def main() -> None:
    spec = importlib.util.spec_from_file_location("legacy_cluster", sys.argv[1])
    old = sys.modules["legacy_cluster"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    scenarios, results = [], []
    for seed in range(SCENARIOS):
        cluster, jobs = scenario(seed)
        old_jobs = [old.SimJob(j, a, w, tuple(old.Option(*o) for o in opts), s, p) for j, a, w, opts, s, p in jobs]
        runs = []
        for name, window, fail in configs(seed):
            res = old.simulate(old.Cluster.parse(cluster), old_jobs, name, fail_after_s=fail, window=window)
            results.append(res)
            runs.append({"scheduler": name, "window": window, "fail_after_s": fail, "capacity": res.capacity,
                         "policy": res.policy, "options_skipped": res.options_skipped,
                         "summary": list(res.summary().values()), "job_table": columns(res.jobs),
                         "attempts": columns(res.attempts)})
        scenarios.append({"seed": seed, "cluster": cluster, "jobs": jobs, "runs": runs})
    runs = [r for sc in scenarios for r in sc["runs"]]
    # the dtypes of the first table with rows; a table with others (empty, or no GPU type in any row) records its own
    types = {key: next(dtypes(getattr(r, attr)) for r in results if len(getattr(r, attr)))
             for key, attr in (("job_table", "jobs"), ("attempts", "attempts"))}
    for run, res in zip(runs, results, strict=True):
        for key, attr in (("job_table", "jobs"), ("attempts", "attempts")):
            if dtypes(getattr(res, attr)) != types[key]:
                run[f"{key}_dtypes"] = dtypes(getattr(res, attr))
    head = {"about": "made by tests/reference/make_cluster_engine_legacy.py from benchmarks/legacy_cluster.py at "
                     "commit 96a4def (the simulator the cluster engine replaced); read by tests/cluster/test_engine.py",
            "summary_keys": list(results[0].summary()), "dtypes": types}
    with OUT.open("w") as f:
        f.write("{" + json.dumps(head)[1:-1] + ',\n"scenarios": [\n')
        f.write(",\n".join(json.dumps(sc, separators=(",", ":")) for sc in scenarios))
        f.write("\n]}\n")
    back = json.loads(OUT.read_text())  # NaN is written as NaN, which json reads back
    back_runs = [r for sc in back["scenarios"] for r in sc["runs"]]
    for run, res in zip(back_runs, results, strict=True):  # the file holds exactly what the old simulator made
        for key, table in (("job_table", res.jobs), ("attempts", res.attempts)):
            pd.testing.assert_frame_equal(frame(run[key], run.get(f"{key}_dtypes", back["dtypes"][key])), table)
        assert all(math.isnan(a) and math.isnan(b) or a == b
                   for a, b in zip(run["summary"], res.summary().values(), strict=True))
    print(f"{len(runs)} runs of {SCENARIOS} scenarios, {OUT.stat().st_size / 1e3:.0f} kB -> {OUT}")


if __name__ == "__main__":
    main()
