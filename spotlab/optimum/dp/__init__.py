"""Exact offline optima by dynamic programming where the structure allows it, and a Lagrangian bound.

- `fixed_count.FixedCountDP`: a fixed GPU count (N_min = N_max; the Can't Be Late single instance), all windows
  at once, over the lost-time levels of `lost_time.py`.
- `work_lattice.WorkLatticeDP`: any GPU range when every slot's work is a whole multiple of one quantum (one window).
- `pareto_labels.ParetoLabelDP`: any job of value >= 0, over Pareto labels (work done, utility so far).
- `relaxation.AllocationRelaxation`: for any job, an upper bound on the optimum and near-optimal schedules (the
  MILP's warm start and outside bound when no DP applies).
- `exact.exact_dp` picks the DP that applies.

All follow the simulator's rules (`spotlab.simulation.engine`) and the MILP's value and billing conventions
(`optimum/model.py`), and return `OptimumResult`s like `OptimumProblem.solve_window`.
"""
