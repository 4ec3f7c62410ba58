"""Liveness (``/v1/health``) and readiness (``/v1/ready``)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from pipeline.builds.layout import SCOPES, BuildLayout, ResultsLayout
from pipeline.store.retention import latest_build_id
from services.api import API_VERSION
from services.api.deps import StateDep, require_api_key, run_bounded
from services.api.errors import NotReady, error_responses
from services.api.models import HealthOut, ReadyOut
from services.api.state import ServiceState

router = APIRouter(prefix="/v1", tags=["health"])


@router.get("/health", response_model=HealthOut, responses=error_responses(400, 413, 500))
async def health() -> dict:
    """The process is up (no dependency is checked)."""
    return {"status": "ok", "version": API_VERSION}


def _unreachable(exc: Exception) -> str:
    """A short reason naming the exception type only: driver messages carry addresses, and
    connection strings never leak."""
    return f"unreachable: {type(exc).__name__} (checked again on every request)"


def served_build_check(state: ServiceState) -> dict:
    """The served build, checked against its results folder: a build whose folder was removed
    (``litpath builds rm`` or ``prune``) is not ready -- the graphs already open still answer,
    but its report, its evidence in MongoDB and its files are gone -- and a service that serves
    ``latest`` says when ``latest`` has moved on to a newer build since it started."""
    build = state.require_build()
    record = BuildLayout(build.build_dir).record
    if not record.exists():
        return {"ok": False, "message": (
            f"build {build.build_id}: {record} is gone (the build was removed: litpath builds rm or "
            "prune); restart the service to serve another"
        )}  # fmt: skip
    message = f"build {build.build_id}"
    if state.settings.build == "latest":
        now = latest_build_id(ResultsLayout(state.settings.results_dir))
        if now is not None and now != build.build_id:
            message += f"; latest now names build {now} (restart the service to serve it)"
    return {"ok": True, "message": message}


def readiness(state: ServiceState) -> dict:
    """Checks every dependency afresh on each call, so a database that comes back (the clients
    reconnect by themselves) makes the service ready again without a restart."""
    checks: dict[str, dict] = {}
    build = state.build
    if build is None:
        checks["build"] = {"ok": False, "message": f"no build loaded: {state.load_error}"}
    else:
        checks["build"] = served_build_check(state)
        for scope in SCOPES:
            graph = build.graphs.get(scope)
            if graph is None:
                reason = build.graph_errors.get(scope, "not in this build")
                checks[f"graph_{scope}"] = {"ok": False, "message": f"{scope} graph not loaded: {reason}"}
                continue
            where = {"dense": "stored (dense)", "rows": "stored rows + on demand"}.get(graph.method, "on demand")
            summary = f"{scope} graph: {graph.n} vertices, {graph.adjacency.nnz // 2} edges; distances {where}"
            checks[f"graph_{scope}"] = (
                {"ok": False, "message": f"{summary}; {graph.stale_reason}"}
                if graph.stale_reason
                else {"ok": True, "message": f"{summary}; digest {str(graph.graph_digest)[:12]}..."}
            )
    if state.mongo is not None:
        try:
            state.mongo.admin.command("ping")
            checks["mongo"] = {"ok": True, "message": "reachable"}
        except Exception as exc:  # noqa: BLE001
            checks["mongo"] = {"ok": False, "message": _unreachable(exc)}
    if state.neo4j is not None:
        try:
            state.neo4j.verify_connectivity()
            checks["neo4j"] = {"ok": True, "message": "reachable"}
        except Exception as exc:  # noqa: BLE001
            checks["neo4j"] = {"ok": False, "message": _unreachable(exc)}
    return {
        "ready": all(c["ok"] for c in checks.values()),
        "build_id": None if build is None else build.build_id,
        "checks": checks,
    }


@router.get(
    "/ready",
    response_model=ReadyOut,
    responses=error_responses(400, 401, 413, 500, 503, 504),
    dependencies=[Depends(require_api_key)],  # its reasons name the build; health stays open
)
async def ready(state: StateDep) -> dict:
    """200 when the build is loaded, its distances match its graph and the databases answer;
    503 (with the same checks as its detail) otherwise."""
    report = await run_bounded(state, readiness, state, pool="probe")
    if not report["ready"]:
        failed = "; ".join(f"{name}: {c['message']}" for name, c in report["checks"].items() if not c["ok"])
        raise NotReady(f"not ready: {failed}", report)
    return report
