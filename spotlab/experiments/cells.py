"""The experiment-cell runner: compute the cells of an experiment not already in its results CSV, appending
each cell's rows as soon as it finishes, so that an interrupted run resumes where it stopped.

A **cell** is one unit of an experiment, (experiment name, parameters): a policy on a market's jobs, a
(deadline, policy) pair, a (policy, knowledge source) cluster run. Its `key` is a hash of its parameters
(`cell_key`, stable across runs, processes and hosts); its `labels` are the columns that tell its rows apart
in the table besides the key (market, method, ...), and its `seed` is checked to be recorded in every row.
A `Table` says where the rows go and when a cell found there is finished (how many rows it must have).

`run` reads the table once, reuses the finished cells, computes the others (in `n_jobs` joblib workers when
asked, with a progress bar) and appends each cell's rows in one write from the main process, so a killed run
loses only the cells in flight; a torn last line is dropped before the next append. On Ctrl-C or SIGTERM
(`processes.stop_on_sigterm`) joblib ends its workers and the exception goes on to the caller.

Why not `joblib.Memory`: it pickles each call's result into a cache folder of its own, not rows into the CSV
that the figures and the claims read, so that table would neither grow as cells finish nor be what resumes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import ExperimentError
from ..progress import progress as progress_bar
from ..processes import worker_count


def json_default(x: Any) -> Any:
    """JSON for what `json` cannot write itself: numpy numbers as numbers, anything else as its text."""
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, tuple):
        return list(x)
    return str(x)


def cell_key(params: Mapping[str, Any], length: int = 16) -> str:
    """A stable key of a cell's parameters: the same values give the same key in every run (key order,
    numpy vs Python numbers and tuples vs lists do not matter)."""
    blob = json.dumps(dict(params), sort_keys=True, default=json_default)
    return hashlib.sha1(blob.encode()).hexdigest()[:length]


@dataclass(frozen=True)
class Cell:
    """One unit of an experiment. `params` determine its result (hashed into `key`); `labels` are stored in
    its rows and identify them together with the key; `inputs` are the objects the computation works on
    (built from the parameters, not hashed)."""

    experiment: str
    params: Mapping[str, Any]
    labels: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    inputs: Any = field(default=None, compare=False, repr=False)
    key_length: int = 16

    @property
    def key(self) -> str:
        return cell_key(self.params, self.key_length)


@dataclass(frozen=True)
class Table:
    """Where a run's rows go and how a finished cell is recognised there.

    `columns`: the header (an existing file with another one is refused; None: whatever the rows have).
    `key`: the column holding each cell's key (None: the labels alone identify a cell). `rows(cell)`: how many
    rows a finished cell has (None: at least one). `unique`: within a cell, the last row per these columns
    counts (sorted by them). `supersede`: labels whose earlier rows a newly computed cell replaces (the file
    is rewritten), instead of appending beside them. `required`: columns a file must have to be this table.
    """

    path: Path
    columns: tuple[str, ...] | None = None
    key: str | None = None
    rows: Callable[[Cell], int] | None = None
    unique: tuple[str, ...] = ()
    supersede: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    owner: str = "this experiment"


@dataclass(frozen=True)
class Done:
    """A finished cell, as `run` hands it to `on_done`: its rows, what else its computation returned (None
    for a cell read back) and whether it was computed in this call."""

    rows: pd.DataFrame
    extra: Any
    computed: bool


# ------------------------------------------------------------------------------------------- the table


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _norm(value: Any) -> Any:
    """How a label is compared with the table's column: numbers to 1e-9 (floats read back from text), the
    rest as text."""
    return round(float(value), 9) if _is_number(value) else str(value)


def _id_columns(table: Table | None, cells: Sequence[Cell]) -> list[str]:
    """The columns that identify a cell's rows: its labels, the key column, the seed."""
    if not cells:
        return []
    return (list(cells[0].labels) + ([table.key] if table is not None and table.key else [])
            + (["seed"] if cells[0].seed is not None else []))


def _identity(cell: Cell, table: Table | None) -> tuple:
    values = [_norm(v) for v in cell.labels.values()]
    if table is not None and table.key:
        values.append(cell.key)
    if cell.seed is not None:
        values.append(_norm(int(cell.seed)))
    return tuple(values)


def _drop_torn_line(path: Path) -> None:
    """A write cut short (a killed process) leaves a last line without its newline: drop that fragment."""
    with open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - (1 << 16))
            f.seek(start)
            chunk = f.read(end - start)
            if end == size and chunk.endswith(b"\n"):
                return
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                f.truncate(start + cut + 1)
                return
            end = start
        f.truncate(0)


def _exists(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def _read(table: Table, text_cols: Sequence[str]) -> pd.DataFrame:
    frame = pd.read_csv(table.path, dtype={c: str for c in text_cols})
    missing = [c for c in table.required if c not in frame.columns]
    if missing:
        raise ExperimentError(f"{table.path} is not a results file of {table.owner} (no column {missing[0]!r}); "
                              "delete it or choose another file")
    return frame


def _check_header(table: Table) -> None:
    if table.columns is None or not _exists(table.path):
        return
    header = pd.read_csv(table.path, nrows=0).columns.tolist()
    if header != list(table.columns):
        raise ExperimentError(f"{table.path} has other columns than this version writes; delete it or choose "
                              "another file")


def _index(frame: pd.DataFrame, cols: list[str], text: set[str]) -> dict[tuple, np.ndarray]:
    """Row positions of each cell identity found in the table."""
    if frame.empty or any(c not in frame.columns for c in cols):
        return {}
    keys = [frame[c].astype(str) if c in text else pd.to_numeric(frame[c], errors="coerce").round(9) for c in cols]
    ident = pd.MultiIndex.from_arrays(keys) if len(keys) > 1 else pd.Index(keys[0])
    out: dict[tuple, list[int]] = {}
    for pos, k in enumerate(ident):
        out.setdefault(k if isinstance(k, tuple) else (k,), []).append(pos)
    return {k: np.asarray(v) for k, v in out.items()}


def _finished(table: Table, cell: Cell, rows: pd.DataFrame) -> pd.DataFrame | None:
    if table.unique:
        rows = rows.drop_duplicates(list(table.unique), keep="last").sort_values(list(table.unique), kind="stable")
    want = table.rows(cell) if table.rows is not None else None
    if (want is not None and len(rows) != want) or len(rows) == 0:
        return None
    if table.columns is not None:
        rows = rows[list(table.columns)]
    return rows.reset_index(drop=True)


def append_rows(path: Path, rows: pd.DataFrame) -> None:
    """The rows at the end of the CSV file in one write (header only for a new file), so a killed process
    leaves whole rows or a torn last line that the next append drops."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not _exists(path)
    if not new:
        _drop_torn_line(path)
    data = rows.to_csv(index=False, header=new).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _replace(table: Table, cell: Cell, rows: pd.DataFrame, text_cols: Sequence[str]) -> None:
    """The file without the rows of the cell's `supersede` labels, then the cell's rows (atomic rewrite)."""
    path = table.path
    if not _exists(path):
        append_rows(path, rows)
        return
    _drop_torn_line(path)
    old = pd.read_csv(path, dtype={c: str for c in text_cols})
    stale = np.ones(len(old), dtype=bool)
    for c in table.supersede:
        want = _norm(cell.labels[c])
        col = old[c].astype(str) if c in text_cols else pd.to_numeric(old[c], errors="coerce").round(9)
        stale &= (col == want).to_numpy()
    if not stale.any():
        append_rows(path, rows)
        return
    tmp = path.with_name(path.name + ".tmp")
    pd.concat([old[~stale], rows], ignore_index=True).to_csv(tmp, index=False)
    os.replace(tmp, path)


# -------------------------------------------------------------------------------------------- running


def _task(compute: Callable[[Cell], Any], i: int, cell: Cell) -> tuple[int, Any]:
    return i, compute(cell)


def _check_cells(cells: Sequence[Cell], table: Table | None) -> None:
    seen: dict[tuple, Cell] = {}
    for c in cells:
        if list(c.labels) != list(cells[0].labels) or (c.seed is None) != (cells[0].seed is None):
            raise ExperimentError(f"the cells of {c.experiment} must have the same labels and all a seed or none "
                                  f"({list(cells[0].labels)}, seed {cells[0].seed} vs {list(c.labels)}, seed {c.seed})")
        ident = _identity(c, table) + (c.key,)
        if ident in seen:
            raise ExperimentError(f"two cells of {c.experiment} are the same ({dict(c.labels)}, key {c.key})")
        seen[ident] = c


def _split(result: Any) -> tuple[pd.DataFrame, Any]:
    if isinstance(result, tuple):
        rows, extra = result
    else:
        rows, extra = result, None
    if not isinstance(rows, pd.DataFrame):
        raise ExperimentError(f"a cell's computation must return a DataFrame, got {type(rows).__name__}")
    return rows, extra


def _recorded(cell: Cell, table: Table | None, rows: pd.DataFrame) -> pd.DataFrame:
    """Every row records its cell: the labels, the key (when the table keeps one) and the seed it ran with,
    added where the computation did not write them and checked where it did."""
    want = dict(cell.labels)
    if table is not None and table.key:
        want[table.key] = cell.key
    if cell.seed is not None:
        want["seed"] = int(cell.seed)
    for col, value in want.items():
        if col not in rows.columns:
            rows = rows.assign(**{col: value})
            continue
        got = {_norm(x) for x in rows[col].tolist()}
        if got - {_norm(value)}:
            raise ExperimentError(f"{cell.experiment} {dict(cell.labels)}: its rows record {col} = "
                                  f"{sorted(map(str, got))}, the cell is {value!r}")
    return rows


def run(cells: Sequence[Cell], compute: Callable[[Cell], Any], table: Table | None = None, *, n_jobs: int = 1,
        resume: bool = True, progress: bool | None = None,
        on_done: Callable[[Cell, Done], None] | None = None) -> list[pd.DataFrame]:
    """Every cell's rows, in the order of `cells`: read back from `table` when finished there (`resume`),
    else `compute(cell)` (a DataFrame, or (DataFrame, anything else) for `on_done`), appended to the table
    as it finishes. `n_jobs` joblib workers (1: in this process); `progress`: a bar on stderr (None: when
    stderr is a terminal). `on_done(cell, Done)` runs in this process for each cell, reused ones first."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ExperimentError(f"n_jobs must be a non-zero whole number (got {n_jobs!r})")
    cells = list(cells)
    _check_cells(cells, table)
    results: dict[int, pd.DataFrame] = {}
    # identifying columns read as text: the key and the labels that are not numbers (a hex key or a label
    # such as "1e5" must not be parsed as a number)
    text = {c for c in (cells[0].labels if cells else ()) if any(not _is_number(x.labels[c]) for x in cells)}
    text |= {table.key} if table is not None and table.key else set()
    todo = list(range(len(cells)))
    if table is not None:
        if _exists(table.path):
            _drop_torn_line(table.path)
        if _exists(table.path):
            frame = _read(table, sorted(text))
            index = _index(frame, _id_columns(table, cells), text) if resume else {}
            todo = []
            for i, cell in enumerate(cells):
                pos = index.get(_identity(cell, table))
                rows = None if pos is None else _finished(table, cell, frame.iloc[pos])
                if rows is None:
                    todo.append(i)
                    continue
                results[i] = rows
                if on_done is not None:
                    on_done(cell, Done(rows, None, False))

    checked: list[bool] = []

    def finish(i: int, result: Any) -> None:
        cell = cells[i]
        rows, extra = _split(result)
        rows = _recorded(cell, table, rows)
        if table is not None and table.columns is not None:
            rows = rows[list(table.columns)]
        if table is not None:
            if not checked:  # an older file with other columns is refused before anything is added to it
                _check_header(table)
                checked.append(True)
            if table.supersede:
                _replace(table, cell, rows, sorted(text))
            else:
                append_rows(table.path, rows)
        results[i] = rows
        if on_done is not None:
            on_done(cell, Done(rows, extra, True))

    jobs = worker_count(int(n_jobs))
    desc = cells[0].experiment if cells else "cells"
    with progress_bar(total=len(todo), desc=desc, unit="cell", enabled=progress if todo else False) as bar:
        if jobs == 1 or len(todo) <= 1:
            for i in todo:
                finish(i, compute(cells[i]))
                bar.update()
        else:
            from joblib import Parallel, delayed

            runner = Parallel(n_jobs=jobs, return_as="generator_unordered")
            for i, result in runner(delayed(_task)(compute, i, cells[i]) for i in todo):
                finish(i, result)
                bar.update()
    return [results[i] for i in range(len(cells))]


__all__ = ["Cell", "Done", "ExperimentError", "Table", "append_rows", "cell_key", "json_default", "run"]
