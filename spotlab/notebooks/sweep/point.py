"""Running one point: its notebook executed by papermill in the point's folder, under a lease, to a record.

The point's folder is its notebook's `out_dir`. A notebook that writes `sweep_result.json` (a flat JSON
object of numbers, strings, booleans or nulls) there gets those values as columns of the sweep's table;
otherwise the row has only the parameters, status, error and seconds. A failing notebook is a `failed`
record, not an error of the sweep. The same function runs in the sweep's process, a joblib worker or a
Dask worker, and an attempt at a point another attempt already finished returns that record unrun.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from ...errors import SweepError
from ...input_paths import input_file
from ..execute import error_line, kernel_manager_logging_to
from ..backends.leases import CLAIM_FILE, lease
from .record import RECORD_FILE, read_record, utc_now, write_json_atomic

NOTEBOOK = "a notebook (jupytext percent .py or .ipynb)"

RESULT_FILE = "sweep_result.json"
KERNEL_LOG = "kernel.log"  # the kernel process's own output, not the notebook's
Scalar = str | int | float | bool | None


def prepare_notebook(notebook: str | Path, out_dir: Path) -> tuple[Path, dict[str, Any]]:
    """An executable .ipynb of the notebook inside `out_dir` (workers read it there) and its parameters."""
    import jupytext
    import papermill as pm

    src = input_file(notebook, NOTEBOOK, SweepError)
    if src.suffix not in (".py", ".ipynb"):
        raise SweepError(f"notebook {src} must be a jupytext percent .py file or an .ipynb")
    try:
        nb = jupytext.read(src)
    except Exception as exc:
        raise SweepError(f"cannot read notebook {src}: {exc}") from None
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    out_dir.mkdir(parents=True, exist_ok=True)
    ipynb = out_dir / f"{src.stem}.ipynb"
    tmp = ipynb.with_name(f".{uuid.uuid4().hex}.{ipynb.name}")
    jupytext.write(nb, tmp, fmt="ipynb")
    os.replace(tmp, ipynb)  # a task of an earlier, still running sweep may be reading the old copy
    params = pm.inspect_notebook(str(ipynb))
    if not params:
        raise SweepError(f"notebook {src} has no cell tagged `parameters`: a sweep sets its values there")
    return ipynb, params


def _read_result(point_dir: Path) -> dict[str, Scalar]:
    path = point_dir / RESULT_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SweepError(f"{RESULT_FILE} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SweepError(f"{RESULT_FILE} must hold a JSON object, got {type(data).__name__}")
    for k, v in data.items():
        if not (isinstance(v, (str, int, float, bool)) or v is None):
            raise SweepError(f"{RESULT_FILE} must be flat: key {k!r} holds a {type(v).__name__}")
    return data


def run_point(ipynb: str, params: dict[str, Any], key: str, point_dir: str, cwd: str,
              retry_failed: bool = False) -> dict:
    """Execute one point and write its record; runs in the sweep's process, a joblib worker or a Dask worker.

    Returns {"record": ..., "ran": bool}. A point that another attempt already finished is not run again
    (`ran` False): that makes a rescheduled or duplicated task harmless.
    """
    import papermill as pm

    folder = Path(point_dir)
    folder.mkdir(parents=True, exist_ok=True)
    first = read_record(folder)
    to_retry = first if first and first["status"] == "failed" and retry_failed else None

    def settled() -> bool:  # done, or failed in another attempt than the one to retry
        rec = read_record(folder)
        return bool(rec) and (rec["status"] == "done" or to_retry is None or rec != to_retry)

    with lease(folder / CLAIM_FILE, settled) as token:
        if token is None:
            return {"record": read_record(folder), "ran": False}
        (folder / RESULT_FILE).unlink(missing_ok=True)  # an earlier attempt's result must not leak in
        record: dict[str, Any] = {"hash": key, "params": params, "status": "done", "error": None,
                                  "notebook": Path(ipynb).stem, "host": socket.gethostname(),
                                  "attempt": token, "started": utc_now()}
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(ipynb, str(folder / Path(ipynb).name), parameters={**params, "out_dir": str(folder)},
                                kernel_name="python3", progress_bar=False, log_output=False,
                                kernel_manager_class=kernel_manager_logging_to(folder / KERNEL_LOG, cwd=cwd))
            record["results"] = _read_result(folder)
        except Exception as exc:  # the notebook's failure is this point's result, not the sweep's
            record.update(status="failed", error=error_line(exc), results={})
        record.update(seconds=round(time.perf_counter() - t0, 3), finished=utc_now())
        write_json_atomic(folder / RECORD_FILE, record)
        return {"record": record, "ran": True}
