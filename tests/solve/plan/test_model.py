"""The composition reproduces hand-computed predictions (SC22 eqs 1-4 per iteration)."""

import pytest

from pipeline.solve.plan.machine import hops
from pipeline.solve.plan.model import SolverConfig, memory_per_rank, predict


def test_one_rank_prediction_by_hand(toy_machine):
    # n = 1024, b = 256: nb = 4 iterations; 1 rank, 2 threads (rate 2e11), no broadcasts.
    p = predict(1024, SolverConfig(1, 1, 256, "ring", True), toy_machine)
    tile_ops = 2 * 256**3
    outer_tiles = ((4 - 2) * 4 * 4 + 4) / 4  # = 9 = (nb - 1)^2
    t_outer = outer_tiles * tile_ops / 2e11
    t_diag = tile_ops / 1e10
    t_panel = 6 * tile_ops / 2e11  # 3 + 3 panel tiles on 2 threads: 2 + 2 rounds -> no imbalance loss
    assert p.threads == 2
    assert p.iterations == 4
    assert p.seconds == pytest.approx(4 * (t_diag + t_panel * (4 / 3) + t_outer), rel=1e-6)
    assert p.rate == pytest.approx(2 * 1024**3 / p.seconds)


def test_two_rank_overlap_and_no_overlap_by_hand(toy_machine):
    # n = 512, b = 128, grid 1x2: nb = 4; rank (0,0) owns R = 4 rows, C = 2 cols; 1 thread.
    cfg = SolverConfig(1, 2, 128, "ring", True)
    p = predict(512, cfg, toy_machine)
    tile_ops = 2 * 128**3
    tau = 1 / 1e11
    t_diag = tile_ops / 1e10
    t_dbcast = (128 * 128 * 4 + 1e3) / 1e9  # along the row (2 ranks); the column has 1
    t_panel = (4 + 2 - 2) * tile_ops * tau
    t_pbcast = (4 * 128 * 128 * 4 + 1e3) / 1e9  # column panel (R tiles) along the row
    outer_tiles = ((4 - 2) * 4 * 2 + 2) / 4  # D = ceil(4 / lcm(1, 2)) = 2
    t_outer = outer_tiles * tile_ops * tau
    assert p.per_iteration["diagonal_broadcast"] == pytest.approx(t_dbcast)
    assert p.per_iteration["panel_broadcast"] == pytest.approx(t_pbcast)
    assert p.seconds_overlap == pytest.approx(4 * (t_diag + t_dbcast + t_panel + max(t_outer, t_pbcast)))
    assert p.seconds_no_overlap == pytest.approx(4 * (t_diag + t_dbcast + t_panel + t_outer + t_pbcast))
    off = predict(512, SolverConfig(1, 2, 128, "ring", False), toy_machine)
    assert off.seconds == pytest.approx(p.seconds_no_overlap)
    assert p.seconds <= off.seconds


def test_memory_matches_the_solver_formula():
    # core/driver.cpp bytes_needed_per_rank for rank (0,0): n = 1000, b = 256, 2x2 grid.
    # nb = 4, R = C = 2; tile = 256 KiB; store 4, panels 2*(2+2), diagonal 1, output 4 tiles.
    tile = 256 * 256 * 4
    assert memory_per_rank(1000, 2, 2, 256, True) == (4 + 8 + 1 + 4) * tile
    assert memory_per_rank(1000, 2, 2, 256, False) == (4 + 4 + 1 + 4) * tile


def test_oversubscription_slows_every_rank(toy_machine):
    two = predict(2048, SolverConfig(1, 2, 256, "ring"), toy_machine)
    four = predict(2048, SolverConfig(2, 2, 256, "ring"), toy_machine)
    # Four single-thread ranks on two cores: each runs at half speed on half the work.
    assert four.per_iteration["outer"] == pytest.approx(two.per_iteration["outer"], rel=0.35)


def test_hop_counts():
    assert hops("ring", 4) == 3
    assert hops("bcast", 4) == 2
    assert hops("two-ring", 2) == 1
    assert hops("chunked-ring", 4, nbytes=8e6, chunk_bytes=2e6) == pytest.approx(1.5)
