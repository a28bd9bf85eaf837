"""What `make reproduce` and `spotlab sweep` share to execute a notebook: the folder notebooks run from
(the project root, so relative paths in them mean the same everywhere) and a kernel manager that keeps the
kernel's own output out of the terminal."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]


# the variables the numerical libraries read for their thread pools (OpenMP: scikit-learn's boosting and torch;
# OpenBLAS / MKL: the linear algebra under statsmodels and scipy)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def kernel_manager_logging_to(log: Path, threads: int | None = None, cwd: str | Path | None = None,
                              cells_to: str | None = None, on_launch: Callable[[int], None] | None = None) -> type:
    """A kernel manager whose kernel writes its process-level stdout/stderr to `log`, started in `cwd`.

    The kernel gets its folder here, not from papermill's `cwd`: papermill changes the whole process's folder
    for the run, and notebooks run at once on threads (`reproduce --jobs 2`) restored each other's, leaving
    the process in the wrong folder and a relative `--out` written there.

    With `threads`, the kernel's numerical libraries use at most that many threads (a variable the user set
    stays as set): notebooks run side by side on as many cores otherwise each start a thread per core, and on
    small fits (ARIMA, boosting on a week of slots) the oversubscribed threads spin instead of working, which
    costs about twice the CPU for no gain in wall time.

    With `cells_to` (a Dask scheduler's address), the kernel starts by sending its joblib work there
    (`backends.dask_cluster.send_cells`): a notebook run on a cluster spreads its cells over the cluster.

    The kernel app logs a TCP warning and the shutdown interrupt of every point, and a race in ipykernel's
    shutdown sometimes logs a zmq traceback; none of it is the point's result (that is in the executed copy
    and the record), so it goes to the point's folder instead of the sweep's terminal.

    `on_launch` is called with the kernel's process id once it runs (`cpu_meter.ProcessTreeCPU.watch`).
    """
    from jupyter_client.manager import AsyncKernelManager

    class PointKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            if cwd is not None:
                kw["cwd"] = str(cwd)
            if cells_to is not None:
                kernel_cmd = [*kernel_cmd, "--IPKernelApp.exec_lines=from spotlab.notebooks.backends.dask_cluster "
                              f"import send_cells; _spotlab_cells = send_cells({str(cells_to)!r})"]
            if threads is not None:
                env = kw.setdefault("env", dict(os.environ))
                for var in THREAD_VARIABLES:
                    env.setdefault(var, str(int(threads)))
            with open(log, "ab") as out:
                kw.setdefault("stdout", out)
                kw.setdefault("stderr", out)
                await super()._async_launch_kernel(kernel_cmd, **kw)
            if on_launch is not None and getattr(self.provisioner, "pid", None) is not None:
                on_launch(int(self.provisioner.pid))

    return PointKernelManager


def error_line(exc: BaseException) -> str:
    """The notebook's own exception (name: message) rather than papermill's report, which repeats the cell's
    traceback: a reader needs the message (a missing dataset says where it looked and how to get it), and the
    executed copy keeps the traceback."""
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        return f"{ename}: {evalue}"
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[-1]}" if lines else type(exc).__name__
