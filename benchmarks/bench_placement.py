"""The placement MILP against brute-force scoring: time per decision, and whether they agree.

States: one pool of ``--nodes`` nodes of ``--per`` GPUs (default 20 x 8, the large pool of the ``philly`` preset),
each node's free GPUs drawn uniformly from 0..per; the job's and the next job's GPUs drawn from philly-gpw's mix
(1: 80%, 2: 3%, 4: 6%, 8: 10%, 16: 1%); candidates from `candidate_allocations` (spread, ``per_size`` 4), states
with fewer than two candidates redrawn. Each state is decided by the MILP (`PlacementMilp`: one HiGHS model,
re-solved with new coefficients) and by scoring every candidate (`PlacementProblem.best`), alternating so both see
the same machine load. Prints the median and 90th percentile of each, the ratio of the medians (MILP / brute
force), and how many choices and objective values differed (0 expected).

    python benchmarks/bench_placement.py [--states 500] [--nodes 20] [--per 8] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spotlab.cluster.placement.candidates import candidate_allocations, fewest_nodes
from spotlab.cluster.placement.milp import PlacementMilp
from spotlab.cluster.placement.score import PlacementProblem, Weights

SIZES, SHARES = (1, 2, 4, 8, 16), (0.80, 0.03, 0.06, 0.10, 0.01)


def states(n: int, nodes: int, per: int, seed: int) -> list[PlacementProblem]:
    """``n`` random placement problems (module doc)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        free = [int(f) for f in rng.integers(0, per + 1, nodes)]
        gpus, nxt = (int(g) for g in rng.choice(SIZES, size=2, p=SHARES))
        cands = candidate_allocations(free, per, gpus, per_size=4)
        if len(cands) >= 2:
            out.append(PlacementProblem(tuple(free), per, cands, fewest_nodes(free, per, gpus), nxt, Weights()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--states", type=int, default=500)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--per", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    problems = states(args.states, args.nodes, args.per, args.seed)
    milp = PlacementMilp(8)
    milp.solve(problems[0])  # build the model once, outside the timing
    t_milp, t_brute, differ = [], [], 0
    for p in problems:
        t0 = time.perf_counter()
        chosen, value = milp.solve(p)
        t1 = time.perf_counter()
        best, score = p.best()
        t2 = time.perf_counter()
        t_milp.append(t1 - t0)
        t_brute.append(t2 - t1)
        differ += chosen != best or abs(value - score) > 1e-6
    ms = lambda xs, q: float(np.percentile(xs, q)) * 1e3  # noqa: E731
    cands = np.mean([len(p.candidates) for p in problems])
    print(f"{len(problems)} states, {args.nodes} nodes x {args.per} GPUs, {cands:.1f} candidates on average")
    print(f"MILP (HiGHS)   median {ms(t_milp, 50):.3f} ms   p90 {ms(t_milp, 90):.3f} ms   (goal: median < 5 ms)")
    print(f"brute force    median {ms(t_brute, 50):.3f} ms   p90 {ms(t_brute, 90):.3f} ms")
    print(f"ratio of medians MILP / brute force: {ms(t_milp, 50) / ms(t_brute, 50):.0f}x")
    print(f"choices or objective values that differ: {differ}")


if __name__ == "__main__":
    main()
