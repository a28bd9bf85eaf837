"""One run of a selection algorithm over a pool: its inputs checked (utilities, their range, seeds, names, when each
round's outcome is known) and what it produced (`SelectionRun`: choices, weights, regret)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import PolicyError

if TYPE_CHECKING:
    import pandas as pd


def check_range(lo: float, hi: float) -> tuple[float, float]:
    try:
        lo_f, hi_f = float(lo), float(hi)
    except (TypeError, ValueError):
        raise PolicyError(f"utility range must be two numbers, got lo={lo!r}, hi={hi!r}") from None
    if not (math.isfinite(lo_f) and math.isfinite(hi_f)):
        raise PolicyError(f"utility range must be finite, got lo={lo_f}, hi={hi_f}")
    if lo_f >= hi_f:
        raise PolicyError(f"utility range needs lo < hi, got lo={lo_f}, hi={hi_f}")
    return lo_f, hi_f


def check_utilities(U) -> np.ndarray:
    try:
        arr = np.array(U, dtype=float)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"utilities must be numeric: {exc}") from None
    if arr.ndim != 2:
        raise PolicyError(f"utilities must have shape (rounds, K), got an array of shape {arr.shape}")
    rounds, k = arr.shape
    if k < 1:
        raise PolicyError(f"the pool needs at least one member (K >= 1), got K={k} (shape {arr.shape})")
    if rounds < 1:
        raise PolicyError(f"utilities need at least one round, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        r, m = np.argwhere(bad)[0]
        kind = "NaN" if np.isnan(arr[r, m]) else "infinite"
        raise PolicyError(
            f"utilities must be finite: {int(bad.sum())} entries are NaN or infinite, "
            f"first at round {int(r)}, member {int(m)} ({kind})"
        )
    arr.setflags(write=False)
    return arr


def check_positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise PolicyError(f"{what} must be a positive integer, got {value!r}")
    return int(value)



def check_names(names: Sequence[str] | None, k: int) -> tuple[str, ...]:
    if names is None or len(names) == 0:
        return tuple(f"m{i}" for i in range(k))
    out = tuple(names)
    if len(out) != k:
        raise PolicyError(f"names must give one name per member: {len(out)} names for K={k} members")
    if not all(isinstance(n, str) and n for n in out):
        raise PolicyError(f"member names must be non-empty strings, got {out!r}")
    if len(set(out)) != k:
        raise PolicyError(f"member names must be distinct, got {out!r}")
    return out


def check_known_from(known_from, rounds: int) -> np.ndarray:
    """`known_from[i]`: the first round whose choice may use round i's outcome (default i + 1)."""
    if known_from is None:
        return np.arange(1, rounds + 1)
    arr = np.asarray(known_from)
    if arr.shape != (rounds,) or not np.issubdtype(arr.dtype, np.integer):
        raise PolicyError(f"known_from must be {rounds} whole round indices (got shape {arr.shape})")
    bad = np.flatnonzero(arr <= np.arange(rounds))
    if bad.size:
        i = int(bad[0])
        raise PolicyError(f"known_from[{i}] = {arr[i]}: a round's outcome is known only after it, i.e. from "
                          f"round {i + 1} on")
    return arr.astype(np.int64)


def losses_from_utilities(U, lo: float, hi: float) -> np.ndarray:
    """Losses in [0, 1]: ``(hi - u) / (hi - lo)``, clipped.

    The regret bounds assume losses in [0, 1]; a utility outside ``[lo, hi]`` is clipped, so regret bounds
    stated in utility units only hold when every utility lies in the range.
    """
    lo, hi = check_range(lo, hi)
    arr = check_utilities(U)
    return np.clip((hi - arr) / (hi - lo), 0.0, 1.0)


@dataclass(frozen=True, eq=False)
class SelectionRun:
    """What an online selector did, round by round, and how it compares with each fixed member.

    Arrays are read-only. ``probabilities[t]`` are the weights *before* round t is seen; ``chosen[t]`` is
    the member drawn from them; ``utility_expected[t] = probabilities[t] @ member_utilities[t]`` is the
    utility in expectation over that draw (for EXP3 it uses the utilities of members it did not see, for
    evaluation only).
    """

    algorithm: str
    member_utilities: np.ndarray  # (rounds, K)
    probabilities: np.ndarray  # (rounds, K)
    chosen: np.ndarray  # (rounds,) int
    utility_chosen: np.ndarray  # (rounds,)
    utility_expected: np.ndarray  # (rounds,)
    eta: np.ndarray  # (rounds,) learning rate used to form probabilities[t]
    seed: int
    lo: float
    hi: float
    gamma: float = 0.0
    names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        # Copies, so that making them read-only never freezes an array the caller still owns.
        U = np.array(self.member_utilities, dtype=float)
        if U.ndim != 2:
            raise PolicyError(f"member_utilities must have shape (rounds, K), got {U.shape}")
        rounds, k = U.shape
        arrays = {
            "probabilities": (np.array(self.probabilities, dtype=float), (rounds, k)),
            "chosen": (np.array(self.chosen, dtype=np.int64), (rounds,)),
            "utility_chosen": (np.array(self.utility_chosen, dtype=float), (rounds,)),
            "utility_expected": (np.array(self.utility_expected, dtype=float), (rounds,)),
            "eta": (np.array(self.eta, dtype=float), (rounds,)),
        }
        for name, (arr, shape) in arrays.items():
            if arr.shape != shape:
                raise PolicyError(f"{name} must have shape {shape}, got {arr.shape}")
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        U.setflags(write=False)
        object.__setattr__(self, "member_utilities", U)
        object.__setattr__(self, "names", check_names(self.names, k))

    @property
    def rounds(self) -> int:
        return int(self.member_utilities.shape[0])

    @property
    def n_members(self) -> int:
        return int(self.member_utilities.shape[1])

    def cumulative_regret(self, expected: bool = True) -> np.ndarray:
        """Regret after each round, in utility units, against the best fixed member *up to that round*.

        ``max_k sum_{s<=t} U[s, k] - sum_{s<=t} u_alg[s]``, with ``u_alg`` the expected utility (default;
        removes the selector's own sampling noise) or the realised one. It can be negative.
        """
        best = np.cumsum(self.member_utilities, axis=0).max(axis=1)
        own = self.utility_expected if expected else self.utility_chosen
        return best - np.cumsum(own)

    @property
    def best_member(self) -> int:
        """Index of the best fixed member over all rounds (the lowest index on ties)."""
        return int(np.argmax(self.member_utilities.sum(axis=0)))

    @property
    def regret(self) -> float:
        """Final expected regret against the best fixed member in hindsight."""
        return float(self.cumulative_regret(expected=True)[-1])

    def to_frame(self) -> pd.DataFrame:
        """One row per round (rounds numbered from 1): choice, utilities, regrets, η and the weights.

        Columns: ``round, chosen, member, utility_chosen, utility_expected, regret, regret_realised, eta``
        and one ``weight_<name>`` column per member (the probabilities before the round).
        """
        import pandas as pd
        df = pd.DataFrame(
            {
                "round": np.arange(1, self.rounds + 1),
                "chosen": self.chosen,
                "member": [self.names[i] for i in self.chosen],
                "utility_chosen": self.utility_chosen,
                "utility_expected": self.utility_expected,
                "regret": self.cumulative_regret(expected=True),
                "regret_realised": self.cumulative_regret(expected=False),
                "eta": self.eta,
            }
        )
        for i, name in enumerate(self.names):
            df[f"weight_{name}"] = self.probabilities[:, i]
        return df
