"""Experiment building blocks behind the notebooks (SPEC §7): plain functions returning tidy tables.

- `markets`: descriptive statistics of the real spot-market traces (notebook 01);
- `cant_be_late`: the cross-check against the Can't Be Late simulator's published costs (notebook 01b).
"""
