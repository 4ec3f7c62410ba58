"""One version string: pipeline.__version__ is the package's, the API's and (tests/solver/
test_solver_version.py) the solver's."""

from __future__ import annotations

import json
import re
import tomllib

from fastapi.testclient import TestClient

from pipeline import __version__
from pipeline.config import REPO_ROOT
from services.api.main import create_app
from services.api.settings import Settings


def test_version_is_semantic() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_pyproject_reads_the_version_from_the_package() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pipeline.__version__"}


def test_api_states_the_package_version() -> None:
    app = create_app(Settings.model_construct())
    assert app.version == __version__
    response = TestClient(app).get("/v1/health")  # no lifespan needed: health checks nothing
    assert response.status_code == 200
    assert response.json()["version"] == __version__


def test_published_openapi_states_the_package_version() -> None:
    published = json.loads((REPO_ROOT / "schemas" / "openapi.json").read_text())
    assert published["info"]["version"] == __version__


def test_solver_reads_the_version_from_the_package() -> None:
    cmake = (REPO_ROOT / "solver" / "CMakeLists.txt").read_text()
    assert "pipeline/__init__.py" in cmake
    assert re.search(r"^project\(litpath_apsp VERSION \$\{CMAKE_MATCH_1\}", cmake, re.MULTILINE)
