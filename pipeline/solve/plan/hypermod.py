"""Hyperbolic performance models (HyPerMod; SC22 COAST section IV-E/F, EuroMPI'23 section 5).

A component's throughput y (semiring ops/s, bytes/s, ...) as a function of one
performance parameter eta (tile edge, message bytes, local matrix bytes) is modelled as

    y = f(eta) = a * eta / (eta + d)            a > 0, d > 0

with two asymptotes: y -> a (peak throughput) as eta -> inf, and y ~ (a/d) * eta as
eta -> 0. For a rate y the time of work W is W / y = (W + W*d/eta) / a; for a
broadcast of eta bytes at effective bandwidth y the time is eta / y = (eta + d) / a,
the alpha-beta model with latency d / a and inverse bandwidth 1 / a.

Estimator (the papers' heuristic, equations 8-9 of SC22, then their objective 7):

1. a  = the maximum observed value;
2. d0 = the eta_i whose observation is nearest a / 2;
3. d  = argmin over a neighbourhood of d0 of  sum_i (1/eta_i) * log(f(eta_i) / g(eta_i))^2.

With ``refine_a`` (default) step 3 sweeps d (over the squared neighbourhood) with a at
its closed-form optimum for that same objective (log a is the 1/eta-weighted mean of
log(g_i * (eta_i + d) / eta_i)), which
removes the bias of "a = max" when the largest eta is still far from saturation or the
observations are noisy; ``refine_a=False`` is the papers' heuristic exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Hyperbola:
    """y = a * eta / (eta + d)."""

    a: float
    d: float

    def __call__(self, eta: float | np.ndarray) -> float | np.ndarray:
        return self.a * eta / (eta + self.d)

    def time_for(self, work: float, eta: float) -> float:
        """Seconds to do ``work`` units at the rate this model predicts for ``eta``."""
        return work / float(self(eta))

    def as_dict(self) -> dict[str, float]:
        return {"a": float(self.a), "d": float(self.d)}

    @classmethod
    def from_dict(cls, data: dict) -> Hyperbola:
        return cls(a=float(data["a"]), d=float(data["d"]))


def log_ratio_objective(a: float, d: float, eta: np.ndarray, y: np.ndarray) -> float:
    """The papers' objective: sum (1/eta_i) * log(f(eta_i) / g(eta_i))^2."""
    f = a * eta / (eta + d)
    return float(np.sum(np.log(f / y) ** 2 / eta))


def _best_a(d: float, eta: np.ndarray, y: np.ndarray) -> float:
    weights = 1.0 / eta
    log_a = np.sum(weights * np.log(y * (eta + d) / eta)) / np.sum(weights)
    return float(math.exp(log_a))


def fit_hyperbola(
    eta: Sequence[float],
    y: Sequence[float],
    *,
    neighbourhood: float = 4.0,
    points: int = 161,
    refine_a: bool = True,
    max_a_factor: float = 1.5,
) -> Hyperbola:
    """Fit y = a*eta/(eta+d) to observations (eta_i, y_i) with the papers' estimator.

    ``max_a_factor``: a refined beyond this multiple of the largest observation means the
    data never approach saturation (only a/d is identified); the fit then keeps the
    papers' a = max(y) and its swept d.

    ``neighbourhood``: d is swept over [d0 / neighbourhood, d0 * neighbourhood] on a
    geometric grid of ``points`` values (then once more, finer, around the best).
    Observations must be positive; at least one is required.
    """
    eta_arr = np.asarray(eta, dtype=float)
    y_arr = np.asarray(y, dtype=float)
    if eta_arr.shape != y_arr.shape or eta_arr.size == 0:
        raise ValueError("fit_hyperbola needs equally many eta and y values, at least one")
    if np.any(eta_arr <= 0) or np.any(y_arr <= 0) or not np.all(np.isfinite(y_arr)):
        raise ValueError("fit_hyperbola needs positive, finite eta and y")
    a = float(np.max(y_arr))
    d0 = float(eta_arr[np.argmin(np.abs(y_arr - a / 2))])
    if eta_arr.size == 1:
        return Hyperbola(a=a, d=d0)

    def sweep(centre: float, spread: float, profile: bool) -> float:
        grid = centre * np.geomspace(1.0 / spread, spread, points)
        scores = [
            log_ratio_objective(_best_a(d, eta_arr, y_arr) if profile else a, d, eta_arr, y_arr) for d in grid
        ]
        return float(grid[int(np.argmin(scores))])

    fine = neighbourhood ** (4.0 / (points - 1))
    d = sweep(d0, neighbourhood, False)
    d = sweep(d, fine, False)
    if refine_a:
        a_heuristic, d_heuristic = a, d
        # a profiled out in closed form: the sweep over d minimises the objective in (a, d).
        d = sweep(d0, neighbourhood**2, True)
        d = sweep(d, fine, True)
        a = _best_a(d, eta_arr, y_arr)
        if a > max_a_factor * float(np.max(y_arr)):
            a, d = a_heuristic, d_heuristic
    return Hyperbola(a=a, d=d)
