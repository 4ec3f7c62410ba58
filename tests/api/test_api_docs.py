"""/docs works with no internet: the page and everything it loads come from the service itself."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from services.api.main import create_app
from services.api.settings import Settings


class _Resources(HTMLParser):
    """The URLs an HTML page loads: script sources and linked files (styles, icons)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "script" and named.get("src"):
            self.urls.append(named["src"])
        if tag == "link" and named.get("href"):
            self.urls.append(named["href"])


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    # An API key is set: the documentation needs none, as /openapi.json needs none.
    settings = Settings(results_dir=tmp_path_factory.mktemp("no-build"), api_key="s3cret-key")
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_docs_page_loads_only_local_files(client):
    response = client.get("/docs")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    assert "://" not in page  # no CDN, no online validator: nothing beyond this service
    parser = _Resources()
    parser.feed(page)
    urls = list(parser.urls)
    assert {url.rsplit("/", 1)[-1] for url in urls} >= {"swagger-ui-bundle.js", "swagger-ui.css"}
    urls += re.findall(r"url: '([^']+)'", page)  # the OpenAPI document Swagger UI reads
    assert "/openapi.json" in urls
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
        loaded = client.get(url)
        assert loaded.status_code == 200, (url, loaded.text[:200])
        assert len(loaded.content) > 0, url


def test_docs_swagger_ui_reads_the_openapi_31_document(client):
    """Swagger UI 4 refuses an OpenAPI 3.1 document ("Unable to render this definition")."""
    bundle = client.get("/docs-assets/swagger-ui-bundle.js").text
    version = re.search(r'PACKAGE_VERSION:"(\d+)\.(\d+)\.(\d+)"', bundle)
    assert version is not None
    assert int(version.group(1)) >= 5
    assert client.get("/openapi.json").json()["openapi"].startswith("3.1")


def test_docs_assets_serve_only_swagger_ui_files(client):
    response = client.get("/docs-assets/__init__.py")  # a file of the package, not of the UI
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_docs_oauth2_redirect_is_local(client):
    response = client.get("/docs/oauth2-redirect")
    assert response.status_code == 200
    assert "://" not in response.text


def test_docs_no_cdn_pages_left(client):
    assert client.get("/redoc").status_code == 404  # ReDoc loaded from a CDN: dropped
    document = client.get("/openapi.json").json()
    assert not [path for path in document["paths"] if path.startswith("/docs")]  # not API routes
