"""Declarative parameters for policies and predictors, in scikit-learn's estimator conventions.

Every `__init__` argument is stored unchanged under its own name (so `get_params`, `set_params`, `clone` and
`repr` work, and `sklearn.base.clone` accepts the objects), and what a valid value is is declared once per
class in `_parameter_constraints`, checked in one place (`Params.check_params`), the way scikit-learn's
`_parameter_constraints` are. Why not subclass `sklearn.base.BaseEstimator` itself: importing it costs about
a second (scipy), and the command line must start and simulate a rule in well under that; these objects
follow the same protocol without the import.

A constraint list says which kinds of value a parameter accepts (any one of them will do):
`Interval(Integral, 1, None)`, `Interval(Real, 0, 1, closed="right")`, `Options("glpk", "highs")`,
`Boolean()`, `None`, or a callable returning "" for a valid value and an error text otherwise.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Callable, ClassVar

import numpy as np

from .errors import SpotlabError


@dataclass(frozen=True)
class Interval:
    """Numbers of a `kind` (Integral or Real; bools never count) between `lo` and `hi` (None: unbounded),
    finite; `closed` says which ends belong: "both", "left", "right" or "neither"."""

    kind: type
    lo: float | None
    hi: float | None
    closed: str = "both"

    def accepts(self, v: Any) -> bool:
        if isinstance(v, (bool, np.bool_)):
            return False
        if self.kind is Integral and not isinstance(v, (Integral, np.integer)):
            return False
        if not isinstance(v, (Real, np.integer, np.floating)) or not math.isfinite(float(v)):
            return False
        lo_ok = self.lo is None or (v >= self.lo if self.closed in ("both", "left") else v > self.lo)
        hi_ok = self.hi is None or (v <= self.hi if self.closed in ("both", "right") else v < self.hi)
        return bool(lo_ok and hi_ok)

    def describe(self) -> str:
        what = "a whole number" if self.kind is Integral else "a finite number"
        lo_in, hi_in = self.closed in ("both", "left"), self.closed in ("both", "right")
        if self.lo is not None and self.hi is not None:
            return f"{what} in {'[' if lo_in else '('}{self.lo:g}, {self.hi:g}{']' if hi_in else ')'}"
        if self.lo is not None:
            return f"{what} {'>=' if lo_in else '>'} {self.lo:g}"
        if self.hi is not None:
            return f"{what} {'<=' if hi_in else '<'} {self.hi:g}"
        return what


@dataclass(frozen=True, init=False)
class Options:
    """One of a fixed set of values (strings, usually)."""

    values: tuple

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", tuple(values))

    def accepts(self, v: Any) -> bool:
        try:
            return v in self.values
        except TypeError:  # unhashable or incomparable
            return False

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Boolean:
    def accepts(self, v: Any) -> bool:
        return isinstance(v, (bool, np.bool_))

    def describe(self) -> str:
        return "true or false"


def _accepts(c: Any, v: Any) -> bool:
    if c is None:
        return v is None
    if isinstance(c, (Interval, Options, Boolean)):
        return c.accepts(v)
    return not c(v)


def _describe(c: Any, v: Any) -> str:
    if c is None:
        return "None"
    if isinstance(c, (Interval, Options, Boolean)):
        return c.describe()
    return c(v) or "valid"


def init_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The keyword parameters of `cls.__init__`: what a registered class can be configured with."""
    sig = inspect.signature(cls.__init__)
    return {k: p for k, p in sig.parameters.items()
            if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


class Params:
    """Base of the registered classes: parameters stored under their own names, declared constraints.

    Subclasses set `_parameter_constraints` (name -> list of accepted kinds, see the module doc), beside it
    `_parameter_help` (name -> what the parameter means, one line: what `spotlab policies NAME` prints), `name`
    (used in messages) and `param_error` (the `SpotlabError` subclass raised); `_check_together()` may add
    the checks that involve several parameters at once."""

    _parameter_constraints: ClassVar[dict[str, list]] = {}
    _parameter_help: ClassVar[dict[str, str]] = {}
    param_error: ClassVar[type[SpotlabError]] = SpotlabError

    @classmethod
    def param_names(cls) -> list[str]:
        return list(init_parameters(cls))

    @classmethod
    def parameter_help(cls) -> list[tuple[str, Any, str]]:
        """(name, default, meaning) of every parameter, in `__init__`'s order."""
        where = f"see the docstring of {cls.__module__}"
        return [(k, p.default, cls._parameter_help.get(k, where)) for k, p in init_parameters(cls).items()]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The `__init__` arguments as given (scikit-learn's protocol; `deep` has nothing to recurse into)."""
        return {k: getattr(self, k) for k in self.param_names()}

    def set_params(self, **params: Any) -> "Params":
        names = self.param_names()
        for k, v in params.items():
            if k not in names:
                raise self.param_error(f"{self._label()} has no parameter {k!r}; its parameters: {', '.join(names)}")
            setattr(self, k, v)
        self.check_params()
        return self

    def clone(self) -> "Params":
        """A fresh, unfitted copy with the same parameters."""
        return type(self)(**self.get_params())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _label(self) -> str:
        return str(getattr(self, "name", type(self).__name__))

    def check_params(self) -> None:
        """Raise `param_error` naming the first parameter that none of its declared kinds accepts."""
        for key, kinds in self._parameter_constraints.items():
            v = getattr(self, key)
            if not any(_accepts(c, v) for c in kinds):
                what = " or ".join(_describe(c, v) for c in kinds)
                raise self.param_error(f"{self._label()}: {key} must be {what} (got {v!r})")
        self._check_together()

    def _check_together(self) -> None:
        """Checks across parameters (e.g. a commitment no longer than the window); none by default."""


def positive_hours(v: Any) -> str:
    """A constraint: a finite number of hours > 0."""
    return "" if Interval(Real, 0, None, "neither").accepts(v) else "a finite number of hours > 0"


Constraint = Interval | Options | Boolean | Callable[[Any], str] | None


def check_seed(seed: Any, error: type[SpotlabError] = SpotlabError) -> int:
    """A seed as an int: a whole number >= 0 (numpy's generators refuse negative ones), else `error`."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise error(f"seed must be a whole number >= 0, got {seed!r}")
    return int(seed)
