"""What a build is (``results/builds/<id>/``): its identity (``identity``: inputs, checksums,
the build id), where each of its files lives (``layout``), its records (``record``:
config.yaml, run_config.yaml, build.json, ``latest``), and the published table schemas
(``tables``, ``schemas_export``)."""
