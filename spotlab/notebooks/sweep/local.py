"""The local back end: points one after another in the sweep's process (`jobs=1`, the default, since
notebooks often parallelise inside), or in `jobs` local worker processes (joblib).

A worker process that dies takes the pool with it: the records already written stay, and the points
without one are run by the next sweep.
"""

from __future__ import annotations

from .point import run_point


def run_local(todo: list[tuple[str, dict]], args: tuple, jobs: int, bar, on_done) -> None:
    """Run the points `todo` ((key, params) pairs) here or in `jobs` processes; `on_done` takes each outcome."""
    ipynb, out, cwd, retry_failed = args
    if jobs == 1:
        for key, params in todo:
            on_done(key, run_point(ipynb, params, key, str(out / "points" / key), cwd, retry_failed))
            bar.update()
        return
    from joblib import Parallel, delayed
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    def task(key: str, params: dict) -> tuple[str, dict]:
        return key, run_point(ipynb, params, key, str(out / "points" / key), cwd, retry_failed)

    try:
        for key, outcome in Parallel(n_jobs=jobs, return_as="generator_unordered")(
                delayed(task)(key, params) for key, params in todo):
            on_done(key, outcome)
            bar.update()
    except TerminatedWorkerError as exc:  # the pool is gone; records already written stay, the rest is missing
        bar.write(f"spotlab: a worker process died ({' '.join(str(exc).split())[:300]}); "
                  "the points without a record run at the next sweep")
