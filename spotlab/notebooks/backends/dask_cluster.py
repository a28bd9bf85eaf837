"""The Dask back end: each task a task on a Dask distributed cluster (`scheduler="tcp://HOST:PORT"`).

The workers must see the outputs' folders and the notebooks at the same paths (a shared filesystem) and have
spotlab installed: each task writes its own results there. A task whose worker dies is run again on another
worker (up to the scheduler's `distributed.scheduler.allowed-failures`); a task that still has no result is run
by the next run. Interrupting the client cancels the queued tasks; running ones finish on their workers (a
task's lease, `leases.py`, keeps a rerun from starting it a second time beside them). Tasks are started in the
order given (Dask priorities). An address that does not answer is one line (the caller's error) within
`CONNECT_S` seconds. A notebook run on the cluster sends its experiments' cells (joblib's `Parallel`) to the same
cluster (`send_cells`).
"""

from __future__ import annotations

import socket
import sys
import threading
import uuid
from collections.abc import Sequence

from ...errors import SpotlabError
from .task import OnDone, Task

CONNECT_S = 10.0  # how long a scheduler may take to answer


def connect(scheduler: str, error: type[SpotlabError] = SpotlabError):
    """A `dask.distributed.Client` of the scheduler at `scheduler`, or `error` with one line saying why not."""
    if "://" not in scheduler:
        raise error(f"scheduler address {scheduler!r} should look like tcp://HOST:PORT")
    try:
        from dask.distributed import Client
    except ImportError:
        raise error("a Dask scheduler needs dask[distributed]: pip install 'spotlab[dist]'") from None
    host, _, port = scheduler.partition("://")[2].rpartition(":")
    if scheduler.startswith("tcp://") and port.isdigit():  # a refused connection fails now, not after the timeout
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_S).close()
        except OSError as exc:
            raise error(f"cannot reach the Dask scheduler at {scheduler}: {exc or type(exc).__name__}") from None
    got: dict = {}

    def attempt() -> None:  # on a thread: a peer that accepts the connection but never answers must not hang us
        try:
            got["client"] = Client(scheduler, timeout=f"{CONNECT_S:.0f}s")
        except BaseException as exc:  # e.g. a peer that is no Dask scheduler answers with bytes Dask misreads
            got["error"] = exc

    thread = threading.Thread(target=attempt, daemon=True, name="spotlab-dask-connect")
    thread.start()
    thread.join(CONNECT_S + 5.0)
    if "client" in got:
        return got["client"]
    why = got.get("error")
    why = f"{type(why).__name__}: {why}" if why is not None else f"no answer within {CONNECT_S + 5.0:.0f} s"
    raise error(f"cannot reach the Dask scheduler at {scheduler} (is it one?): {' '.join(why.split())[:200]}")


def worker_address() -> str | None:
    """The address of the Dask worker running the calling task; None outside a Dask task."""
    if "distributed" not in sys.modules:  # not imported: not a worker (and no import on local runs)
        return None
    from distributed import get_worker

    try:
        return str(get_worker().address)
    except ValueError:
        return None


def run_dask(tasks: Sequence[Task], scheduler: str, on_done: OnDone, retries: int = 0,
             error: type[SpotlabError] = SpotlabError, name: str = "task", one_per_thread: bool = False) -> None:
    """Run `tasks` on the cluster at `scheduler`, in their order; `on_done` takes each outcome. With
    `one_per_thread`, at most one task per worker thread (as the cluster was at the start) is on the cluster at a
    time, the next sent as one finishes: for tasks that give their thread up to tasks of their own (`secede`), which
    the scheduler would otherwise start all at once."""
    from dask.distributed import as_completed

    with connect(scheduler, error) as client:
        run_id = uuid.uuid4().hex[:8]
        queue = list(enumerate(tasks))
        futures: dict = {}

        def send(n: int) -> list:
            sent = []
            for _ in range(n):
                if not queue:
                    break
                i, t = queue.pop(0)
                fut = client.submit(t.fn, *t.args, pure=False, retries=retries, priority=len(tasks) - i,
                                    key=f"{name}-{t.key}-{run_id}")
                futures[fut] = t.key
                sent.append(fut)
            return sent

        try:
            at_once = max(1, sum(client.nthreads().values())) if one_per_thread else None
            running = as_completed(send(len(tasks) if at_once is None else at_once))
            for fut in running:
                if fut.cancelled():
                    continue
                try:
                    result, exc = fut.result(), None
                except Exception as e:  # the task's own error, or e.g. KilledWorker: it keeps killing workers
                    result, exc = None, e
                if on_done(futures[fut], result, exc):
                    queue.clear()  # nothing new starts
                    client.cancel([f for f in futures if not f.done()])  # queued ones never start
                    continue
                for new in send(1 if at_once is not None else 0):
                    running.add(new)
        except BaseException:
            queue.clear()
            client.cancel(list(futures))  # queued tasks stop; running ones finish and write their results
            raise


def send_cells(scheduler: str):
    """Make every joblib `Parallel` of the calling thread (a notebook's kernel) run its tasks on the Dask cluster at
    `scheduler` (joblib's Dask back end), so that an experiment's cells spread over the cluster's workers, not the
    kernel's machine. Returns what must stay referenced while they run (the client and the joblib setting)."""
    import joblib

    client = connect(scheduler)
    config = joblib.parallel_config(backend="dask")
    config.__enter__()
    return client, config
