"""Fault drill: the solver killed and resumed, servers stopped mid-load, damaged files (marker
``faults``, pyproject.toml). Fixtures come from tests/conftest.py; helpers from tests/support/."""
