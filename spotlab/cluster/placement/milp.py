"""``milp``: the choice among `scored`'s candidates made by a small integer program (HiGHS, in-process).

The program does not score the candidates beforehand: it picks one (binary ``x_c``, exactly one) and models what
that choice does to the nodes, so that fragmentation, the next job's room and the load are terms of its
objective, read from node variables. For every node slot ``i`` (the nodes some candidate touches, plus the ``q``
untouched nodes with the most free GPUs, all the next job could use besides), with ``f_i`` its free GPUs,
``a_ci`` the GPUs candidate ``c`` takes there, ``t_i = sum_{c touches i} x_c``, ``P`` the node size and
``after_i = f_i - sum_c a_ci x_c``:

- fragmentation: ``s_i >= after_i - P e_i`` with ``e_i`` binary, the node whole and free afterwards
  (``e_i + t_i <= 1``, ``e_i = 0`` unless ``f_i = P``), so at the optimum ``s_i`` is the node's stranded GPUs;
- next fit: ``v_i <= after_i``, ``v_i <= min(f_i, g) w_i``, ``sum_i w_i <= q``, ``sum_i v_i + g b >= g`` (``g`` the
  next job's GPUs, ``q = ceil(g / P)``, ``w_i`` and ``b`` binary), so ``b`` (blocked) is 0 exactly when ``q``
  nodes hold it;
- load: ``P L >= sum_{c touches i} (P - f_i + a_ci) x_c``, the busiest node the job lands on.

minimise ``w_frag / P sum_i s_i + w_next b + w_waste sum_c extra_c x_c + w_load L + TIE sum_c c x_c`` plus the
stranded GPUs of the nodes outside the slots (a constant): at the optimum, the number
`score.PlacementProblem.score` gives the chosen candidate, so both choose the same one, ties included. The model
is built once (for up to ``2 per_size`` candidates and a number of node slots that only grows, unused slots
switched off by their bounds) and re-solved with new coefficients, bounds and costs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import SolverError
from ...optimum.solvers.highs import quiet_highs
from .score import TIE, PlacementProblem, stranded
from .scored import ScoredPlacement

__all__ = ["MilpPlacement", "PlacementMilp"]

# Exact (no gap) on one thread, without the heuristics and restarts that cost more than the search they save on a
# model of a few dozen columns: the feasibility jump alone took the median solve from ~2.5 ms to ~5.5 ms.
_OPTIONS = {"output_flag": False, "threads": 1, "mip_rel_gap": 0.0, "mip_abs_gap": 1e-9,
            "mip_heuristic_run_feasibility_jump": False, "mip_heuristic_run_rins": False,
            "mip_heuristic_run_rens": False, "mip_heuristic_run_root_reduced_cost": False,
            "mip_detect_symmetry": False, "mip_allow_restart": False}


class PlacementMilp:
    """The HiGHS model of the module doc for up to ``max_candidates`` candidates, re-solved per problem."""

    def __init__(self, max_candidates: int) -> None:
        self.C = int(max_candidates)
        self.N = 0
        self._h: Any = None

    # columns: x_c | e_i | s_i | w_i | v_i | b | L;  rows: sum x = 1 | Ra_i | Rb_i | Rc_i | Rd_i | Re_i | Rw | Rv
    def _cols(self) -> int:
        return self.C + 4 * self.N + 2

    def _rows(self) -> int:
        return 3 + 5 * self.N

    def _build(self, n_slots: int) -> None:
        """A fresh model with room for ``n_slots`` node slots (rounded up to a multiple of 8)."""
        import highspy

        self.N = -(-n_slots // 8) * 8
        C, N = self.C, self.N
        h = quiet_highs()
        for option, value in _OPTIONS.items():
            h.setOptionValue(option, value)
        inf = highspy.kHighsInf
        nc, nr = self._cols(), self._rows()
        A = np.zeros((nr, nc))
        A[0, :C] = 1
        for i in range(N):
            A[1 + i, C + N + i] = 1            # Ra: s_i + sum a x + P e_i >= f_i
            A[1 + N + i, C + i] = 1            # Rb: e_i + sum_{c touches i} x_c <= 1
            A[1 + 2 * N + i, C + 3 * N + i] = 1  # Rc: v_i + sum a x <= f_i
            A[1 + 3 * N + i, C + 3 * N + i] = 1  # Rd: v_i - min(f_i, g) w_i <= 0
        A[1 + 5 * N, C + 2 * N:C + 3 * N] = 1   # Rw: sum w <= q
        A[2 + 5 * N, C + 3 * N:C + 4 * N] = 1   # Rv: sum v + g b >= g
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = nc, nr
        lp.col_cost_ = np.zeros(nc)
        lp.col_lower_ = np.zeros(nc)
        upper = np.full(nc, inf)
        upper[:C + N] = 1
        upper[C + 2 * N:C + 3 * N] = 1
        upper[C + 4 * N] = 1
        lp.col_upper_ = upper
        lp.row_lower_ = np.full(nr, -inf)
        lp.row_upper_ = np.full(nr, inf)
        cols = A.T.copy()
        start, index, value = [0], [], []
        for c in range(nc):
            nz = np.flatnonzero(cols[c])
            index.extend(nz.tolist())
            value.extend(cols[c][nz].tolist())
            start.append(len(index))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
        integer = np.zeros(nc, dtype=bool)
        integer[:C + N] = True
        integer[C + 2 * N:C + 3 * N] = True
        integer[C + 4 * N] = True
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous for b in integer]
        h.passModel(lp)
        self._h, self._A, self._inf, self._optimal = h, A, inf, highspy.HighsModelStatus.kOptimal

    def solve(self, p: PlacementProblem) -> tuple[int, float]:
        """The index of the candidate the program chooses and its objective value."""
        n_cand = len(p.candidates)
        if n_cand > self.C:
            raise SolverError(f"placement MILP: {n_cand} candidates, the model holds {self.C}")
        touched = sorted({node for alloc in p.candidates for node, _ in alloc})
        per, g = p.gpus_per_node, p.next_gpus
        q = -(-g // per) if g else 0
        seen = set(touched)
        others = sorted((n for n in range(len(p.free)) if n not in seen), key=lambda n: (-p.free[n], n))[:q]
        slots = touched + others
        if self._h is None or len(slots) > self.N:
            self._build(len(slots))
        C, N, h, inf = self.C, self.N, self._h, self._inf
        f = np.zeros(N)
        f[:len(slots)] = [p.free[n] for n in slots]
        pos = {n: i for i, n in enumerate(slots)}
        a = np.zeros((C, N))
        for c, alloc in enumerate(p.candidates):
            for node, n in alloc:
                a[c, pos[node]] = n
        A = self._A.copy()
        ra, rb, rc, rd, re = (1 + k * N for k in range(5))
        A[ra:ra + N, :C] = a.T
        A[rc:rc + N, :C] = a.T
        touches = (a.T > 0)
        A[rb:rb + N, :C] = touches
        A[re:re + N, :C] = -(per - f[:, None] + a.T) * touches
        diag = np.arange(N)
        A[ra + diag, C + diag] = per
        A[rd + diag, C + 2 * N + diag] = -np.minimum(f, g)
        A[re:re + N, C + 4 * N + 1] = per  # Re: P L - sum_{c touches i} (P - f_i + a_ci) x_c >= 0
        A[2 + 5 * N, C + 4 * N] = g
        rows, cols = np.nonzero(A != self._A)
        for r, c in zip(rows.tolist(), cols.tolist()):
            h.changeCoeff(r, c, float(A[r, c]))
        self._A = A
        lo = np.full(self._rows(), -inf)
        hi = np.full(self._rows(), inf)
        lo[0] = hi[0] = 1
        lo[ra:ra + N] = f
        hi[rb:rb + N] = 1
        hi[rc:rc + N] = f
        hi[rd:rd + N] = 0
        lo[re:re + N] = 0
        hi[1 + 5 * N] = q
        lo[2 + 5 * N] = g
        h.changeRowsBounds(self._rows(), np.arange(self._rows(), dtype=np.int32), lo, hi)
        x_hi = np.zeros(C + N)
        x_hi[:n_cand] = 1
        x_hi[C:] = f == per
        h.changeColsBounds(C + N, np.arange(C + N, dtype=np.int32), np.zeros(C + N), x_hi)
        w = p.weights
        cost = np.zeros(self._cols())
        cost[:n_cand] = [w.waste * (len(alloc) - p.fewest) + TIE * c for c, alloc in enumerate(p.candidates)]
        cost[C + N:C + N + len(slots)] = w.frag / per
        cost[C + 4 * N] = w.next_fit
        cost[C + 4 * N + 1] = w.load
        h.changeColsCost(self._cols(), np.arange(self._cols(), dtype=np.int32), cost)
        outside = stranded([p.free[n] for n in range(len(p.free)) if n not in pos], per)
        h.changeObjectiveOffset(w.frag * outside / per)
        h.run()
        status = h.getModelStatus()
        if status != self._optimal:
            raise SolverError(f"placement MILP: HiGHS ended with {h.modelStatusToString(status)}")
        x = np.asarray(h.getSolution().col_value[:n_cand])
        return int(np.argmax(x)), float(h.getInfo().objective_function_value)


class MilpPlacement(ScoredPlacement):
    """`scored`'s candidates and criteria, the choice made by the integer program of the module doc."""

    name = "milp"

    def __init__(self, spread: bool = True, per_size: int = 4, w_frag: float = 1.0, w_next: float = 1.0,
                 w_waste: float = 0.5, w_load: float = 0.25, lookahead: int = 32) -> None:
        super().__init__(spread, per_size, w_frag, w_next, w_waste, w_load, lookahead)
        self._milp = PlacementMilp(2 * per_size)

    def decide(self, problem: PlacementProblem) -> tuple[int, float]:
        """The index of the chosen candidate and the program's objective value."""
        if len(problem.candidates) > self._milp.C:
            self._milp = PlacementMilp(len(problem.candidates))
        return self._milp.solve(problem)
