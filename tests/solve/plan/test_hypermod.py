"""The HyPerMod fitter recovers known (a, d) from noisy synthetic observations."""

import numpy as np
import pytest

from pipeline.solve.plan.hypermod import Hyperbola, fit_hyperbola, log_ratio_objective


@pytest.mark.parametrize("a, d", [(1.0e11, 64.0), (2.0e10, 4.0e6), (7.5, 0.3)])
def test_fit_recovers_known_parameters_from_noisy_observations(a, d):
    rng = np.random.default_rng(42)
    eta = d * np.geomspace(0.05, 50.0, 24)
    truth = Hyperbola(a, d)
    y = truth(eta) * np.exp(rng.normal(0.0, 0.03, eta.size))  # 3 % multiplicative noise
    fit = fit_hyperbola(eta, y)
    assert fit.a == pytest.approx(a, rel=0.06)
    assert fit.d == pytest.approx(d, rel=0.15)


def test_fit_without_noise_is_exact_enough_and_beats_the_plain_heuristic():
    eta = np.array([16, 32, 64, 128, 256, 512], dtype=float)  # far from saturation at the top
    truth = Hyperbola(100.0, 200.0)
    y = truth(eta)
    refined = fit_hyperbola(eta, y)
    heuristic = fit_hyperbola(eta, y, refine_a=False)
    assert heuristic.a == pytest.approx(y.max())  # the papers' a = max(g)
    assert refined.a == pytest.approx(100.0, rel=0.02)
    assert refined.d == pytest.approx(200.0, rel=0.03)
    assert log_ratio_objective(refined.a, refined.d, eta, y) <= log_ratio_objective(
        heuristic.a, heuristic.d, eta, y
    )


def test_fit_rejects_bad_input():
    with pytest.raises(ValueError):
        fit_hyperbola([1, 2], [1.0])
    with pytest.raises(ValueError):
        fit_hyperbola([1, 2], [1.0, -1.0])
