"""HyPerMod: hyperbolic performance models of apsp-fw, and the planner built on them.

``hypermod`` (fit y = a*eta/(eta+d)), ``machine`` (fitted machine files), ``model``
(compose into per-iteration and total time, memory per rank), ``search`` (rank
configurations), ``auto`` (resolve ``auto`` solver settings), ``calibrate`` (measure this
machine), ``check`` (predicted vs measured), ``heatmap`` (Figure 8), ``commands`` (CLI).
"""

from pipeline.solve.plan.auto import resolve_auto
from pipeline.solve.plan.hypermod import Hyperbola, fit_hyperbola
from pipeline.solve.plan.machine import Machine, load_machine
from pipeline.solve.plan.model import Prediction, SolverConfig, memory_per_rank, predict

__all__ = [
    "Hyperbola",
    "Machine",
    "Prediction",
    "SolverConfig",
    "fit_hyperbola",
    "load_machine",
    "memory_per_rank",
    "predict",
    "resolve_auto",
]
