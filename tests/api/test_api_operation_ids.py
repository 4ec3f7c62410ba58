"""The API's operationIds are a published contract: a generated client names its methods after
them, so they are the handlers' names, unique, and changed only on purpose (here and in
schemas/openapi.json together)."""

from __future__ import annotations

import json

from pipeline.builds.schemas_export import SCHEMAS_DIR
from services.api.main import create_app
from services.api.settings import Settings

# (method, path) -> operationId, as clients generated from schemas/openapi.json call them.
PINNED = {
    ("get", "/v1/health"): "health",
    ("get", "/v1/ready"): "ready",
    ("get", "/v1/concepts"): "search_concepts",
    ("get", "/v1/concepts/{cui}"): "get_concept",
    ("get", "/v1/distance"): "get_distance",
    ("get", "/v1/path"): "get_path",
    ("post", "/v1/paths"): "post_paths",
    ("get", "/v1/neighbors/{key}"): "get_neighbors",
    ("post", "/v1/compare/path"): "post_compare_path",
    ("get", "/v1/compare/pair"): "get_compare_pair",
    ("get", "/v1/reports/latest"): "get_latest_report",
}


def _operation_ids(document: dict) -> dict[tuple[str, str], str]:
    return {
        (method, path): operation["operationId"]
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }


def test_openapi_operation_ids_are_the_pinned_handler_names(tmp_path):
    document = create_app(Settings(results_dir=tmp_path)).openapi()
    found = _operation_ids(document)
    assert found == PINNED
    assert len(set(found.values())) == len(found), "two operations share an id"


def test_openapi_published_document_carries_the_same_ids():
    published = json.loads((SCHEMAS_DIR / "openapi.json").read_text())
    assert _operation_ids(published) == PINNED
