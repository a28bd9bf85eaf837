"""The offline optimum: Pyomo model (`model.py`), its standard form (`matrix.py`) solved by GLPK or HiGHS
(`solvers/`, `solve.py`), the exact dynamic programmes where the structure allows them (`dp/`), and CHC's
window problem (`window_types.py`, `window.py`, `window_dp.py`)."""
