"""A batch whose one pair has a stored distance its graph does not reach: that pair fails as its
own item (distances_inconsistent, with both figures), the others are answered; the single-pair
route answers that pair with a 503."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient
from scipy.sparse.csgraph import dijkstra
from support.build_fixture import make_build

from pipeline.builds.layout import ResultsLayout
from pipeline.store.adios import write_distances_bp
from services.api.main import create_app
from services.api.settings import Settings


def test_one_inconsistent_pair_fails_alone(tmp_path):
    build = make_build(tmp_path, n_concepts=30, n_abstracts=20, seed=7)
    matrix = dijkstra(build.adjacency.to_scipy(), directed=True).astype(np.float32)
    reachable = np.argwhere(np.isfinite(matrix) & (matrix > 0))
    s, t = (int(v) for v in reachable[len(reachable) // 2])
    # a distance shorter than any path: the walk over tight edges and the exact search both
    # find the true cost, which disagrees with it
    matrix[s, t] = matrix[t, s] = matrix[s, t] / 2
    distances = ResultsLayout(tmp_path).build(build.build_id).graph("full").distances
    attributes = {"graph_digest": build.digest, "process_grid": "1x1", "algorithm": "test", "solver_version": "test"}
    write_distances_bp(distances, matrix, attributes)
    others = [(int(a), int(b)) for a, b in reachable[:2]]
    pairs = [others[0], (s, t), others[1]]
    with TestClient(create_app(Settings(results_dir=tmp_path))) as client:
        body = {"pairs": [{"source": build.keys[a], "target": build.keys[b]} for a, b in pairs], "evidence": False}
        response = client.post("/v1/paths", json=body)
        assert response.status_code == 200, response.text
        first, bad, last = response.json()["results"]
        assert first["error"] is None and first["path"]["reachable"] is True
        assert last["error"] is None and last["path"]["reachable"] is True
        assert bad["path"] is None and bad["error"]["code"] == "distances_inconsistent"
        assert bad["error"]["detail"]["stored_distance"] < bad["error"]["detail"]["path_cost"]
        single = client.get("/v1/path", params={"source": build.keys[s], "target": build.keys[t]})
        assert single.status_code == 503 and single.json()["error"]["code"] == "distances_inconsistent"
