"""Schemathesis hooks of the API fuzz test (tests/api/test_api_fuzz.py), loaded through
``SCHEMATHESIS_HOOKS``: constraints the OpenAPI document cannot state."""

from __future__ import annotations

import schemathesis


@schemathesis.hook("filter_case").apply_to(path="/v1/compare/pair")
def distinct_endpoints(ctx, case):
    """A pair's ends must differ: OpenAPI has no way to relate two parameters, so the document
    says it in words (``target``'s description and the operation's own 422), which a generator
    cannot read. Every phase applies ``filter_case`` (coverage included)."""
    query = case.query
    return not isinstance(query, dict) or query.get("source") != query.get("target")
