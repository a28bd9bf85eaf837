"""How many worker processes a parallel step may start (joblib), without nesting them.

Inside a joblib worker, a nested `Parallel` runs on threads, and neither GLPK nor Pyomo's model compiler
is thread-safe: a policy that parallelises its solves (the optimum, policy selection) must then run
them one after another. The outer level (several methods, markets or sweep points) keeps the cores busy.
"""

from __future__ import annotations

import multiprocessing


def worker_count(n_jobs: int) -> int:
    """`n_jobs` in the main process, 1 inside a worker process."""
    return n_jobs if multiprocessing.current_process().name == "MainProcess" else 1
