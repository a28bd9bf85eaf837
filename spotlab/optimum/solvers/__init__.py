"""The MILP solvers behind the optimum: one module per backend (`glpk.py`, `highs.py`), and the table of
backends with the checked solve of a standard form (`backends.py`)."""
