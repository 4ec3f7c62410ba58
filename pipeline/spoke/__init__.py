"""SPOKE in Neo4j and the CUI <-> SPOKE mapping.

* :mod:`.hetionet` -- Hetionet metaedges (``DaG`` -> ``ASSOCIATES_DaG``), kind -> label;
* :mod:`.dump` -- readers of the Hetionet release layout and litpath's CSV layout;
* :mod:`.load` -- checked, batched, idempotent, verified load into Neo4j;
* :mod:`.mapping` -- the identity / direct / indirect CUI mapping table (rules, nodes, xrefs, build);
* :mod:`.coverage` -- what the mapping covers, unmapped literature concepts counted;
* :mod:`.commands` -- ``load-spoke`` and ``build-mapping``.
"""
