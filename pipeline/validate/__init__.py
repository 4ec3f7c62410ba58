"""Validation of what a build predicts: the time-sliced check of hypothesis generation
(:mod:`pipeline.validate.time_slice`, ``litpath validate-slice``) and its report."""
