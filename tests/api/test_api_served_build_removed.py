"""What a running service says when its results folder changes under it: ``latest`` moving on
to a newer build (still ready, and says so), and the served build removed by retention (not
ready, and its report names why)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from support.build_fixture import make_build

from pipeline.builds.layout import ResultsLayout
from pipeline.store.retention import remove_builds
from services.api.main import create_app
from services.api.settings import Settings


def test_latest_moving_on_and_the_served_build_removed(tmp_path):
    first = make_build(tmp_path, n_concepts=20, n_abstracts=10, seed=7, build_id="first000001")
    with TestClient(create_app(Settings(results_dir=tmp_path))) as client:
        ready = client.get("/v1/ready")
        assert ready.status_code == 200 and ready.json()["checks"]["build"]["message"] == "build first000001"

        make_build(tmp_path, n_concepts=20, n_abstracts=10, seed=8, build_id="second00001")
        ready = client.get("/v1/ready")
        assert ready.status_code == 200, ready.text
        assert ready.json()["build_id"] == "first000001"
        assert ready.json()["checks"]["build"]["message"] == (
            "build first000001; latest now names build second00001 (restart the service to serve it)"
        )

        remove_builds(ResultsLayout(tmp_path), None, ["first000001"], compact=False)
        assert not first.build_dir.exists()
        ready = client.get("/v1/ready")
        assert ready.status_code == 503, ready.text
        message = ready.json()["error"]["detail"]["checks"]["build"]["message"]
        assert "build first000001:" in message and "is gone (the build was removed" in message
        report = client.get("/v1/reports/latest")
        assert report.status_code == 404
        assert report.json()["error"]["message"].endswith("the served build's folder is gone (removed by litpath builds rm or prune)")
        # the graphs already open still answer
        path = client.get("/v1/distance", params={"source": first.keys[0], "target": first.keys[1]})
        assert path.status_code == 200, path.text


def test_a_pinned_build_is_not_told_about_latest(tmp_path):
    make_build(tmp_path, n_concepts=20, n_abstracts=10, seed=7, build_id="first000001")
    make_build(tmp_path, n_concepts=20, n_abstracts=10, seed=8, build_id="second00001")
    with TestClient(create_app(Settings(results_dir=tmp_path, build="first000001"))) as client:
        ready = client.get("/v1/ready")
        assert ready.status_code == 200 and ready.json()["checks"]["build"]["message"] == "build first000001"
