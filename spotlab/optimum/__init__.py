"""The offline optimum: Pyomo model (`build_model`), GLPK/HiGHS solve (`solve_optimum`), and the exact
dynamic programmes where the structure allows them (`dp`: a fixed GPU count, or work on a lattice)."""

from .model import build_model, schedule_of
from .solve import SOLVERS, OptimumProblem, OptimumResult, solve_model, solve_optimum
from .dp import AllocationRelaxation, FixedCountDP, WorkLatticeDP, exact_dp

__all__ = ["build_model", "schedule_of", "solve_model", "solve_optimum", "OptimumResult", "OptimumProblem", "SOLVERS",
           "FixedCountDP", "WorkLatticeDP", "AllocationRelaxation", "exact_dp"]
