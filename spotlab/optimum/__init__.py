"""The offline optimum: Pyomo model (`build_model`), GLPK/HiGHS solve (`solve_optimum`), and the exact
dynamic programmes where the structure allows them (`dp`: a fixed GPU count, or work on a lattice)."""
