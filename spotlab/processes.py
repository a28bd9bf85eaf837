"""Worker processes: how many workers a step may start, and a clean stop on Ctrl-C or SIGTERM.

Inside a joblib worker, a nested `Parallel` runs on threads, and neither GLPK nor Pyomo's model compiler
is thread-safe: a policy that parallelises its solves (the optimum, policy selection) must then run
them one after another. The outer level (several methods, markets or sweep points) keeps the cores busy.

A command stopped by a signal must not leave work behind: joblib's loky workers and papermill's kernels
are child processes that would otherwise go on computing for as long as their current task lasts. So the
command line turns SIGTERM into the same exception as Ctrl-C and, whatever way it ends early, ends every
process it started (`stop_children`).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .errors import Interrupted


def at_most_cores(n_jobs: int) -> int:
    """`n_jobs` (joblib's meaning: -1 all cores), but never more workers than cores: `n_jobs=10000` would
    start ten thousand processes for the same result."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return min(int(n_jobs), cores)


def worker_count(n_jobs: int) -> int:
    """`n_jobs` (at most the cores) in the main process, 1 inside a worker process."""
    return at_most_cores(n_jobs) if multiprocessing.current_process().name == "MainProcess" else 1


def _raise_interrupted(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Interrupted(f"signal {signum}")


def _not_a_stop(record: logging.LogRecord) -> bool:
    """False for a library's log of the exception a stop raised (Pyomo logs "Constructing component ... failed:
    Interrupted" before re-raising it): a stop is reported once, by the command line."""
    kind = sys.exc_info()[0]
    return not (kind is not None and issubclass(kind, KeyboardInterrupt))


def stop_on_sigterm() -> None:
    """Make SIGTERM raise `Interrupted` in the main thread (as Ctrl-C raises KeyboardInterrupt), and keep the
    solvers' model builder from logging that exception as an error of its own."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupted)
    pyomo = logging.getLogger("pyomo.core")
    if _not_a_stop not in pyomo.filters:
        pyomo.addFilter(_not_a_stop)


def descendants(pid: int | None = None) -> list[int]:
    """Process ids of every descendant of `pid` (default: this process), read from /proc (Linux); [] elsewhere."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def stop_children(grace_s: float = 3.0) -> None:
    """End every process this one started, and theirs: SIGTERM, then SIGKILL after `grace_s`."""
    if "joblib" in sys.modules:  # joblib's reusable pool first, so that it does not respawn what we kill
        _shut_loky_pool(grace_s)
    # workers and kernels first; the resource trackers last (they would report the workers' semaphores as
    # leaked, and joblib relaunches a tracker that died before its workers)
    found = descendants()
    _end([p for p in found if not _is_resource_tracker(p)], grace_s)
    _end([p for p in found if _is_resource_tracker(p)], 0.0)  # they ignore SIGTERM


def _shut_loky_pool(grace_s: float) -> None:
    """Kill joblib's reusable pool's workers and wait (at most `grace_s`) for its manager to finish: it then
    unregisters the pool's resources from the resource tracker, and doing that after the tracker is killed makes
    it start a new tracker (a "died unexpectedly" warning, and the new tracker's KeyErrors on stderr)."""
    with contextlib.suppress(Exception):
        from joblib.externals.loky import reusable_executor

        pool = reusable_executor._executor
        if pool is None:  # never started: asking for it would start one
            return
        done = threading.Thread(target=pool.shutdown, kwargs={"wait": True, "kill_workers": True}, daemon=True)
        done.start()
        done.join(grace_s)


def _end(pids: list[int], grace_s: float) -> None:
    for sig in ((signal.SIGTERM, signal.SIGKILL) if grace_s > 0 else (signal.SIGKILL,)):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 1.0)
        while time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            if not pids:
                return
            time.sleep(0.05)


def _is_resource_tracker(pid: int) -> bool:
    """A resource tracker of multiprocessing or joblib (a helper process, not a worker)."""
    try:
        return b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def quiet_exit_stderr() -> None:
    """After the one line that says a command was stopped: the interpreter's teardown (joblib's and
    asyncio's warnings about the processes just ended) must not add more."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stderr.fileno())


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)  # reap our own children so they do not linger as zombies
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


