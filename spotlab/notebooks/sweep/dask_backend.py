"""The Dask back end: each point a task on a Dask distributed cluster (`scheduler="tcp://HOST:PORT"`).

The workers must see the sweep's output folder and the notebook at the same paths (a shared filesystem)
and have spotlab installed: each task writes its own record there. A task whose worker dies is run again on
another worker (up to the scheduler's `distributed.scheduler.allowed-failures`); a point that still has no
record is run by the next sweep. Interrupting the sweep cancels the queued points; running ones finish.
"""

from __future__ import annotations

import socket
import uuid

from ...errors import SweepError
from .point import run_point


def run_dask(todo: list[tuple[str, dict]], args: tuple, scheduler: str, retries: int, bar, on_done) -> None:
    """Run the points `todo` ((key, params) pairs) as tasks on the cluster; `on_done` takes each outcome."""
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise SweepError("a Dask scheduler needs dask[distributed]: pip install 'spotlab[dist]'") from None
    host, _, port = scheduler.partition("://")[2].rpartition(":")
    if scheduler.startswith("tcp://") and port.isdigit():  # a refused connection fails now, not after the timeout
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
        except OSError as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    try:
        client = Client(scheduler, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    with client:
        ipynb, out, cwd, retry_failed = args
        futures = {client.submit(run_point, ipynb, params, key, str(out / "points" / key), cwd, retry_failed,
                                 pure=False, retries=retries, key=f"sweep-point-{key}-{uuid.uuid4().hex[:8]}"): key
                   for key, params in todo}
        try:
            for fut in as_completed(futures):
                key = futures[fut]
                try:
                    on_done(key, fut.result())
                except Exception as exc:  # e.g. KilledWorker: the point itself keeps killing workers
                    on_done(key, None, exc)
                bar.update()
        except BaseException:
            client.cancel(list(futures))  # queued points stop; running ones finish and write their records
            raise
