"""Exceptions that carry a message a user can act on.

Every error a user can cause (bad trace, impossible job, unknown policy, solver trouble) is a
`SpotlabError`; the CLI prints its message and exits non-zero instead of showing a traceback.
"""

from __future__ import annotations


class SpotlabError(Exception):
    """Base class: the message names the problem and, where possible, the fix."""


class DataNotFoundError(SpotlabError):
    """A dataset could not be found locally nor fetched."""


class TraceError(SpotlabError):
    """A market trace is malformed (missing columns, bad values, wrong order...)."""


class JobError(SpotlabError):
    """A job is ill-specified or cannot meet its deadline even on on-demand GPUs."""


class PolicyError(SpotlabError):
    """Unknown policy, bad policy parameter, or a policy that returned an invalid action."""


class SolverError(SpotlabError):
    """The optimisation model could not be solved (infeasible, time-out without a solution, bad data)."""


class PredictionError(SpotlabError):
    """A forecast cannot be made as asked (unknown model, too little history, gaps, bad horizon...)."""


class ArgumentError(SpotlabError, TypeError):
    """A Python API function was called with an argument of the wrong kind (a policy name where a policy object
    is expected, a path where a market is expected, None for a job); also a TypeError, which it is."""
