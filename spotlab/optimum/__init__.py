"""The offline optimum: Pyomo model (`build_model`), GLPK/HiGHS solve (`solve_optimum`)."""

from .model import build_model, schedule_of
from .solve import SOLVERS, OptimumProblem, OptimumResult, solve_model, solve_optimum

__all__ = ["build_model", "schedule_of", "solve_model", "solve_optimum", "OptimumResult", "OptimumProblem", "SOLVERS"]
