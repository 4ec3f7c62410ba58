"""Validate `litpath export`'s KGX TSV with the kgx library itself, on a machine without internet.

kgx cannot be installed beside litpath's pins (kgx 2.6 needs numpy < 2 and pyarrow 15), so this
runs in a virtual environment of its own:

    python3 -m venv /tmp/kgx-env && /tmp/kgx-env/bin/pip install kgx==2.6.0 numpy==1.26.4 pyarrow==15.0.2
    /tmp/kgx-env/bin/python scripts/kgx_validate.py results/latest/export/full_nodes.tsv \\
        results/latest/export/full_edges.tsv

kgx and bmt fetch the Biolink model, its predicate map and the prefix contexts from GitHub when
they load; here they come from the biolink-model package installed with them (the predicate map,
which only qualifier mappings use, is left empty). Prints the Biolink version and kgx's error
report (``{}`` when it found nothing); exits 1 when the report has errors. kgx's file reader
needs the names to end in ``_nodes.tsv`` and ``_edges.tsv``, as litpath's do.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.resources import files


def offline_toolkit():
    """bmt's Toolkit on the biolink-model package's schema, set as every later Toolkit's default."""
    from bmt import Toolkit

    schema = str(files("biolink_model") / "schema" / "biolink_model.yaml")
    Toolkit.__init__.__defaults__ = (schema, {"predicate mappings": []})
    return Toolkit()


def offline_contexts() -> None:
    """kgx's JSON-LD prefix contexts from the biolink-model package's prefix map."""
    import kgx.config

    prefix_map = json.loads(
        (files("biolink_model") / "prefixmaps" / "biolink-model-prefix-map.json").read_text()
    )
    kgx.config.jsonld_context_map.update(
        {"biolink": dict(prefix_map), "monarch_context": {}, "obo_context": {}}
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("nodes", help="a *_nodes.tsv file")
    parser.add_argument("edges", help="the matching *_edges.tsv file")
    args = parser.parse_args()
    toolkit = offline_toolkit()  # before kgx is imported: kgx.utils makes a Toolkit at import
    offline_contexts()
    import kgx.utils.kgx_utils as kgx_utils
    from kgx.transformer import Transformer
    from kgx.validator import Validator

    version = toolkit.get_model_version()
    kgx_utils._default_toolkit = toolkit
    kgx_utils._toolkit_versions[version] = toolkit
    Validator.set_biolink_model(version)
    validator = Validator(verbose=False)
    Transformer(stream=True).transform(
        input_args={"filename": [args.nodes, args.edges], "format": "tsv"},
        output_args={"format": "null"},
        inspector=validator,
    )
    errors = validator.get_errors()
    print(f"Biolink {version}")
    print(json.dumps(errors, indent=1, default=str))
    return 1 if errors.get("ERROR") else 0


if __name__ == "__main__":
    sys.exit(main())
