"""The local back end: tasks one after another in this process (`jobs=1`), or `jobs` at a time in local worker
processes (joblib), or on `jobs` threads (`threads=True`: for tasks that wait on a process of their own, such as
a notebook's kernel).

Interrupted (Ctrl-C, SIGTERM), the tasks not started are dropped and the exception goes on (the command line
then ends the processes started here, `processes.stop_children`). A worker process that dies takes the joblib
pool with it: the results already written stay, the tasks without one are for the next run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from .task import OnDone, Task


def _warn(text: str) -> None:
    print(text, file=sys.stderr)


def run_local(tasks: Sequence[Task], on_done: OnDone, jobs: int = 1, threads: bool = False,
              warn: Callable[[str], None] = _warn) -> None:
    """Run `tasks` here (`jobs` 1), on `jobs` threads or in `jobs` processes; `on_done` takes each outcome."""
    if threads:  # also for one at a time: this thread stays free to take Ctrl-C
        _on_threads(tasks, on_done, jobs)
        return
    if jobs == 1 or len(tasks) <= 1:
        for t in tasks:
            try:
                result, error = t.fn(*t.args), None
            except Exception as exc:
                result, error = None, exc
            if on_done(t.key, result, error):
                return
        return
    from joblib import Parallel, delayed
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    def keyed(key: str, fn: Callable, args: tuple) -> tuple[str, object]:
        return key, fn(*args)

    try:
        for key, result in Parallel(n_jobs=jobs, return_as="generator_unordered")(
                delayed(keyed)(t.key, t.fn, t.args) for t in tasks):
            if on_done(key, result, None):
                return
    except TerminatedWorkerError as exc:  # the pool is gone; results already written stay, the rest is missing
        warn(f"spotlab: a worker process died ({' '.join(str(exc).split())[:300]}); "
             "the tasks without a result run at the next run")


def _on_threads(tasks: Sequence[Task], on_done: OnDone, jobs: int) -> None:
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(t.fn, *t.args): t.key for t in tasks}
        for fut in as_completed(futures):
            if fut.cancelled():
                continue
            try:
                result, error = fut.result(), None
            except Exception as exc:
                result, error = None, exc
            if on_done(futures[fut], result, error):
                for other in futures:
                    other.cancel()  # nothing new starts; the running ones finish
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # the caller stops what the running tasks started
        raise
    pool.shutdown(wait=True)
