"""Wall time of one sweep run serially, on joblib (2 processes) and on Dask (2 local workers), side by side.

Default: 20 points of a tiny notebook (a cell tagged `parameters`, a little arithmetic, `sweep_result.json`),
so the time is what each point costs the sweep itself: a kernel start, papermill and the record.
`--project` sweeps `notebooks/06_policy_selection.py` with `quick=True` over seeds instead (about 8 s a
point on 2 cores, and the notebook already runs 2 processes of its own). The Dask scheduler and workers are
separate processes on 127.0.0.1, started before the clock runs (their start-up is printed apart).

    python benchmarks/bench_sweep.py [--points 20] [--project]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spotlab.notebooks.execute import ROOT
from spotlab.notebooks.sweep.run import run_sweep

TINY = '''# %% tags=["parameters"]
x = 1
out_dir = "."

# %%
import json
import pathlib

y = sum(i * x for i in range(200_000))
pathlib.Path(out_dir, "sweep_result.json").write_text(json.dumps({"y": y}))
'''


def start_cluster(tmp: Path, workers: int) -> tuple[str, list[subprocess.Popen]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).with_name("dask"))
    log = open(tmp / "dask.log", "w")
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)]
    for i in range(workers):
        procs.append(subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--name", f"w{i}",
                                       "--no-dashboard", "--host", "127.0.0.1"],
                                      stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
    from dask.distributed import Client

    with Client(address, timeout="30s") as c:
        c.wait_for_workers(workers, timeout=60)
    return address, procs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=20)
    ap.add_argument("--project", action="store_true", help="sweep notebooks/06_policy_selection.py (quick)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.project:
            notebook, grid = ROOT / "notebooks" / "06_policy_selection.py", {"seed": list(range(args.points)),
                                                                             "fixed": {"quick": True}}
        else:
            notebook, grid = tmp / "tiny.py", {"x": list(range(1, args.points + 1))}
            notebook.write_text(TINY)
        t0 = time.perf_counter()
        address, procs = start_cluster(tmp, 2)
        print(f"{args.points} points of {notebook.name}; Dask cluster (scheduler + 2 workers) up in "
              f"{time.perf_counter() - t0:.1f} s, {os.cpu_count()} cores")
        try:
            walls = {}
            modes = (("serial", {}), ("joblib 2 jobs", {"jobs": 2}), ("dask 2 workers", {"scheduler": address}))
            for label, kw in modes:
                t0 = time.perf_counter()
                res = run_sweep(notebook, grid, tmp / label.replace(" ", "_"), progress=False, **kw)
                walls[label] = time.perf_counter() - t0
                assert res.done == args.points and res.ran == args.points, res.summary()
        finally:
            for p in procs[::-1]:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(30)
    print(f"{'mode':>15} {'wall s':>8} {'s/point':>8} {'speed-up':>9}")
    for label, wall in walls.items():
        print(f"{label:>15} {wall:8.1f} {wall / args.points:8.2f} {walls['serial'] / wall:8.2f}x")


if __name__ == "__main__":
    main()
