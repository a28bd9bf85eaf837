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
    """A market or job trace is malformed (missing columns, bad values, wrong order...)."""


class JobTableError(SpotlabError):
    """A job table cannot be built or transformed as asked (unknown trace, bad share/load/window parameter)."""


class JobError(SpotlabError):
    """A job is ill-specified or cannot meet its deadline even on on-demand GPUs."""


class ClusterError(SpotlabError):
    """A cluster, job, option, scheduler, placement or cluster-simulation setting is ill-specified."""


class RLError(SpotlabError):
    """A learning-scheduler setting, training budget or saved agent is unusable (spotlab.rl)."""


class PolicyError(SpotlabError):
    """Unknown policy, bad policy parameter, or a policy that returned an invalid action."""


class SolverError(SpotlabError):
    """The optimisation model could not be solved (infeasible, time-out without a solution, bad data)."""


class PredictionError(SpotlabError):
    """A forecast cannot be made as asked (unknown model, too little history, gaps, bad horizon...)."""


class ArgumentError(SpotlabError, TypeError):
    """A Python API function was called with an argument of the wrong kind (a policy name where a policy object
    is expected, a path where a market is expected, None for a job); also a TypeError, which it is."""


class ProfileError(SpotlabError):
    """A throughput profile cannot be built or fitted (bad measured CSV, unknown model/GPU, bad setup...)."""


class RunsError(SpotlabError):
    """A run file or frame is missing, unreadable or malformed; or generator arguments are bad."""


class ConfigError(SpotlabError):
    """A configuration or partial configuration names an unknown parameter or value."""


class PredictorError(SpotlabError):
    """Predictors cannot be fitted or used as asked (empty data, missing columns, one class only...)."""


class PredictorNotFittedError(PredictorError, ValueError, AttributeError):
    """`predict` before `fit` (the bases of scikit-learn's `NotFittedError`, without importing scikit-learn)."""


class WorkloadError(SpotlabError):
    """A trace file or a workload argument is unusable (missing column, bad value, impossible request)."""


class SweepError(SpotlabError):
    """The sweep cannot start as asked (notebook, grid, output or scheduler)."""


class ExperimentError(SpotlabError):
    """An experiment was asked for with inconsistent or invalid parameters, or its results file is not its own."""


class OutputError(SpotlabError):
    """An output cannot be written as asked (a folder where a file is wanted, a read-only or full disk), or a
    notebook's declared output is asked for in a kind it was not declared in."""


# Signals inside spotlab, not errors a user sees: each is caught where it is raised and turned into behaviour (or
# into one of the errors above), so they live here too, with every other exception spotlab defines.


class SourceUnavailable(Exception):
    """A dataset's download route failed, and why; folded into one `DataNotFoundError` listing every place tried."""


class TooManyLabels(Exception):
    """The exact label DP of the optimum outgrew its budget; the caller falls back to the MILP."""


class Interrupted(KeyboardInterrupt):
    """A stop asked from outside (SIGTERM); a subclass of KeyboardInterrupt so every `except
    KeyboardInterrupt` that cleans up (joblib aborting its workers, papermill shutting its kernel) runs."""

