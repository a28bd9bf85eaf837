"""Candidate allocations of ``gpus`` GPUs in one pool, built from the free GPUs per node alone.

A placement that weighs alternatives (``scored``, ``milp``) chooses among a few allocations rather than taking
the first that fits. With ``spread`` (RLTune's rule: a job may take part of several nodes' GPUs) the candidates
span ``m`` nodes, the fewest whose free GPUs add up to the job's, and ``m + 1`` nodes, every node giving at least
one GPU. For each size ``k`` a few node choices, in this order:

- *tight*: the ``k - 1`` nodes with the most free GPUs, then the node that best fits what is left (``k = 1``:
  one candidate per free count that holds the job, tightest first, so the first is `best_fit`'s choice);
- *partial first*: partly used nodes (most free first) before whole free ones, keeping whole nodes for big jobs;
- *emptiest*: the ``k`` nodes with the most free GPUs, filled in that order;
- *balanced*: the same nodes, the GPUs split as evenly as their free GPUs allow.

Without ``spread``, the engine's rule (`NodePool.never_fits`, `best_fit`): a job up to a node's size takes one
node (one candidate per free count that holds it, tightest first), a larger one ``gpus / gpus_per_node`` whole
free nodes. Among nodes with the same free count the lowest ids are used, an allocation lists its nodes by id,
and no allocation is listed twice; ``per_size`` caps the candidates of each size.
"""

from __future__ import annotations

from typing import Sequence

from ..state import Allocation

__all__ = ["candidate_allocations", "fewest_nodes", "fits_compactly"]


def fewest_nodes(free: Sequence[int], gpus_per_node: int, gpus: int, spread: bool = True) -> int:
    """The fewest nodes that can hold ``gpus`` GPUs now (0: they do not fit now)."""
    if not spread:
        if gpus <= gpus_per_node:
            return 1 if any(f >= gpus for f in free) else 0
        k = gpus // gpus_per_node
        whole = sum(1 for f in free if f == gpus_per_node)
        return k if gpus % gpus_per_node == 0 and whole >= k else 0
    total = 0
    for k, f in enumerate(sorted(free, reverse=True), start=1):
        if f <= 0:
            break
        total += f
        if total >= gpus:
            return k
    return 0


def fits_compactly(free: Sequence[int], gpus_per_node: int, gpus: int) -> bool:
    """Whether ``gpus`` GPUs fit on as few nodes as an empty pool would give them (``ceil(gpus / per)``)."""
    q = -(-gpus // gpus_per_node)
    return sum(sorted(free, reverse=True)[:q]) >= gpus


def _fill(nodes: Sequence[int], free: Sequence[int], gpus: int) -> Allocation | None:
    """One GPU from each node, then the rest in the nodes' order up to their free GPUs (None: they cannot)."""
    if not nodes or len(nodes) > gpus:
        return None
    take = [1] * len(nodes)
    rest = gpus - len(nodes)
    for i, n in enumerate(nodes):
        extra = min(free[n] - 1, rest)
        take[i] += extra
        rest -= extra
    return None if rest else tuple(sorted(zip(nodes, take)))


def _balanced(nodes: Sequence[int], free: Sequence[int], gpus: int) -> Allocation | None:
    """The GPUs split as evenly as the nodes' free GPUs allow (water filling; ties to the earlier node)."""
    if not nodes or len(nodes) > gpus or sum(free[n] for n in nodes) < gpus:
        return None
    take = [0] * len(nodes)
    rest = gpus
    while rest:
        open_ = [i for i, n in enumerate(nodes) if take[i] < free[nodes[i]]]
        share = max(rest // len(open_), 1)
        for i in open_:
            give = min(share, free[nodes[i]] - take[i], rest)
            take[i] += give
            rest -= give
            if not rest:
                break
    return tuple(sorted(zip(nodes, take)))


def _one_node(free: Sequence[int], gpus: int, limit: int) -> list[Allocation]:
    """One node per free count that holds the job, tightest first (lowest id within a count)."""
    first: dict[int, int] = {}
    for n, f in enumerate(free):
        if f >= gpus and f not in first:
            first[f] = n
    return [((first[f], gpus),) for f in sorted(first)][:limit]


def _of_size(k: int, free: Sequence[int], gpus_per_node: int, gpus: int, desc: list[int]) -> list[Allocation]:
    """The rule-built candidates spanning ``k`` nodes (module doc), before de-duplication and the cap."""
    out: list[Allocation | None] = []
    base = desc[:k - 1]
    need = max(gpus - sum(free[n] for n in base), 1)
    rest = [n for n in desc[k - 1:] if free[n] >= need]
    if rest:
        last = min(rest, key=lambda n: (free[n], n))
        out.append(_fill(base + [last], free, gpus))
    partial = [n for n in desc if free[n] < gpus_per_node] + [n for n in desc if free[n] == gpus_per_node]
    if sum(free[n] for n in partial[:k]) >= gpus:
        out.append(_fill(partial[:k], free, gpus))
    out.append(_fill(desc[:k], free, gpus))
    out.append(_balanced(desc[:k], free, gpus))
    return [a for a in out if a is not None]


def candidate_allocations(free: Sequence[int], gpus_per_node: int, gpus: int, *, spread: bool = True,
                          per_size: int = 4) -> tuple[Allocation, ...]:
    """The candidates for ``gpus`` GPUs given the free GPUs per node (module doc); empty when they do not fit."""
    m = fewest_nodes(free, gpus_per_node, gpus, spread)
    if m == 0:
        return ()
    if not spread:
        if gpus <= gpus_per_node:
            return tuple(_one_node(free, gpus, per_size))
        whole = [n for n, f in enumerate(free) if f == gpus_per_node][:m]
        return (tuple((n, gpus_per_node) for n in whole),)
    desc = sorted((n for n, f in enumerate(free) if f > 0), key=lambda n: (-free[n], n))
    seen: set[Allocation] = set()
    found: list[Allocation] = []
    for k in (m, m + 1):
        if k > len(desc) or k > gpus:
            break
        built = _one_node(free, gpus, per_size) if k == 1 else _of_size(k, free, gpus_per_node, gpus, desc)
        size = 0
        for alloc in built:
            if alloc not in seen and size < per_size:
                seen.add(alloc)
                found.append(alloc)
                size += 1
    return tuple(found)
