"""The grid of a sweep: the YAML file, its checks, and the key (hash) that names each point's folder.

Grid file (YAML)::

    alpha: [0.5, 1.0, 2.0]     # a parameter of the notebook -> the values to try
    seed: [0, 1]               # points = the cartesian product (here 3 x 2 = 6)
    fixed:                     # optional: the same value at every point
      quick: true

Every name must be defined in the notebook's cell tagged `parameters`; `out_dir` is set by the sweep.
A point's key hashes only its swept values, so changing a `fixed` value (e.g. to fix what made a point
fail, then `retry_failed`) keeps the finished points; each record keeps the full parameters it ran with.
Values are only what papermill passes as literals and JSON records keep: checked here, before any point runs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SweepError
from ...input_paths import input_file

RESERVED = ("out_dir",)  # set by the sweep for each point


@dataclass(frozen=True)
class Grid:
    """Swept values (name -> tuple of values, in file order) and the values every point shares."""

    swept: Mapping[str, tuple]
    fixed: Mapping[str, Any]

    def points(self) -> list[dict[str, Any]]:
        """The swept values of every point, in the order of the cartesian product."""
        names = list(self.swept)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.swept[n] for n in names))]

    def names(self) -> list[str]:
        return [*self.swept, *self.fixed]


def point_hash(params: Mapping[str, Any]) -> str:
    """A stable key of a point: the same values give the same folder in every run and on every host."""
    text = json.dumps(dict(params), sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_value(where: str, value: Any) -> None:
    """Papermill passes values as Python literals and records keep them as JSON: allow only what both hold."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return
    if isinstance(value, list):
        for v in value:
            _check_value(where, v)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise SweepError(f"{where}: mapping keys must be strings, got {k!r}")
            _check_value(where, v)
        return
    raise SweepError(f"{where}: {value!r} ({type(value).__name__}) is not a number, string, boolean, null, list "
                     "or mapping (quote dates and other special values)")


def _yaml_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """A repeated key in a grid is a mistake that the plain loader would hide by keeping the last one."""

    def mapping(loader, node, deep=False):
        keys = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in keys:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            keys.add(key)
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return yaml, Loader


def grid_from_mapping(data: Any, source: str = "the grid") -> Grid:
    """Check a grid given as a mapping (what the YAML file holds) and freeze it."""
    if not isinstance(data, Mapping):
        raise SweepError(f"{source} must be a mapping of parameter names to lists of values (plus an optional "
                         f"`fixed:` mapping), got {type(data).__name__}")
    fixed = data.get("fixed", {}) or {}
    if not isinstance(fixed, Mapping):
        raise SweepError(f"{source}: `fixed` must be a mapping of parameter names to values, got {fixed!r}")
    swept: dict[str, tuple] = {}
    for name, values in data.items():
        if name == "fixed":
            continue
        if not isinstance(name, str) or not name.isidentifier():
            raise SweepError(f"{source}: {name!r} is not a parameter name")
        if not isinstance(values, list):
            raise SweepError(f"{source}: parameter {name!r} must be a list of values, got {values!r} "
                             "(put a single value under `fixed:`)")
        if not values:
            raise SweepError(f"{source}: parameter {name!r} has an empty list of values")
        for v in values:
            _check_value(f"{source}: parameter {name!r}", v)
        seen: set[str] = set()
        for v in values:
            key = json.dumps(v, sort_keys=True)
            if key in seen:
                raise SweepError(f"{source}: parameter {name!r} lists the value {v!r} twice")
            seen.add(key)
        swept[name] = tuple(values)
    for name, value in fixed.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SweepError(f"{source}: {name!r} under `fixed` is not a parameter name")
        if name in swept:
            raise SweepError(f"{source}: {name!r} is both swept and fixed")
        _check_value(f"{source}: fixed {name!r}", value)
    if not swept:
        raise SweepError(f"{source} sweeps no parameter: add at least one `name: [value, ...]`")
    for name in RESERVED:
        if name in swept or name in fixed:
            raise SweepError(f"{source}: {name!r} is set by the sweep (each point's own folder); remove it")
    return Grid(swept=swept, fixed=dict(fixed))


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid YAML file (format in the module docstring)."""
    path = input_file(path, "a grid file (YAML: parameter -> list of values)", SweepError)
    try:
        yaml, Loader = _yaml_loader()
    except ImportError:
        raise SweepError("reading a grid needs PyYAML: pip install 'spotlab[dist]'") from None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SweepError(f"grid file {path} is not a text file (YAML: parameter -> list of values)") from None
    try:
        data = yaml.load(text, Loader=Loader)
    except yaml.YAMLError as exc:
        raise SweepError(f"grid file {path} is not valid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        raise SweepError(f"grid file {path} is empty")
    return grid_from_mapping(data, f"grid file {path}")


def check_against_notebook(grid: Grid, nb_params: Mapping[str, Any], notebook: Path) -> None:
    """The notebook must define every name of the grid, and `out_dir`, in its `parameters` cell."""
    unknown = [n for n in grid.names() if n not in nb_params]
    if unknown:
        raise SweepError(f"notebook {notebook.name} does not define {', '.join(map(repr, unknown))} in its "
                         f"`parameters` cell (it defines: {', '.join(nb_params)})")
    if "out_dir" not in nb_params:
        raise SweepError(f"notebook {notebook.name} has no `out_dir` in its `parameters` cell: the sweep gives "
                         "each point its own folder through it")
