#!/usr/bin/env bash
# Snakemake runs this inside the new conda environment of litpath.yaml, from its working
# directory, the repository root (litpath.yaml's ../../ paths assume the same): it installs
# litpath itself, whose dependencies the hashed lock has already installed, with the lock's
# setuptools (nothing fetched unhashed).
set -euo pipefail
python -m pip install --quiet --no-deps --no-build-isolation -e .
