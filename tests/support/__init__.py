"""Helpers shared by the tests, one package imported one way (``from support.<module> import``;
pytest puts tests/ on the path, pyproject.toml ``pythonpath``): fresh checkouts, fuzzing
mutations, spill residue, small corpora and graphs, the service's fixture builds and a running
service. Fixtures stay in the conftest.py files."""
