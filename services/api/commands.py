"""``litpath serve``: run the path service under uvicorn (127.0.0.1 unless told otherwise).

Beyond loopback the service is open to the network, so it refuses to start without
``LITPATH_API_KEY``. On loopback it answers only requests whose Host header is a loopback name
(``LITPATH_ALLOWED_HOSTS``, unless set): a web page in a browser on the same machine cannot reach
it through DNS rebinding.
"""

from __future__ import annotations

import click

from pipeline.cli.options import build_id_option, results_dir_option


@click.command()
@click.option("--host", default=None, help="Bind address (default LITPATH_HOST or 127.0.0.1)")
@click.option("--port", default=None, type=click.IntRange(1, 65535), help="Port (default LITPATH_PORT or 8000)")
@results_dir_option("Folder with builds/ and latest")
@build_id_option("Build id to serve (default: latest complete build)", old=("--build",))
@click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="uvicorn worker processes"
)
@click.option(
    "--log-level", default="info", show_default=True, type=click.Choice(["debug", "info", "warning", "error"])
)
def serve(host, port, results_dir, build_id, workers, log_level) -> None:
    """Serve shortest literature paths over HTTP (/v1, OpenAPI at /docs)."""
    import os

    import uvicorn

    from services.api.settings import LOOPBACK_HOSTS, get_settings

    # Command-line values go through the same settings class (and its validation) as the environment.
    for name, value in (("RESULTS_DIR", results_dir), ("BUILD", build_id), ("HOST", host), ("PORT", port)):
        if value is not None:
            os.environ[f"LITPATH_{name}"] = str(value)
    loopback = (os.environ.get("LITPATH_HOST") or "127.0.0.1") in LOOPBACK_HOSTS
    if loopback and not os.environ.get("LITPATH_ALLOWED_HOSTS"):
        os.environ["LITPATH_ALLOWED_HOSTS"] = ",".join(LOOPBACK_HOSTS)  # read by every worker
    get_settings.cache_clear()
    try:
        settings = get_settings()
    except Exception as exc:  # pydantic ValidationError: name the bad setting
        raise click.BadParameter(str(exc)) from exc
    if not loopback:
        if settings.api_key is None:
            raise click.UsageError(
                f"--host {settings.host} makes the service reachable beyond this machine: set LITPATH_API_KEY "
                "(clients then send it as the X-API-Key header), or serve on 127.0.0.1 behind a proxy"
            )
        click.echo(f"litpath serve: binding to {settings.host}, reachable beyond this machine", err=True)
    uvicorn.run(
        "services.api.main:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=workers,
        log_level=log_level,
        timeout_graceful_shutdown=5,
    )


if __name__ == "__main__":
    serve()
