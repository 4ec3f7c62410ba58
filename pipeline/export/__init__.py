"""A build in the knowledge-graph community's interchange formats: its graphs as KGX TSV
(:mod:`pipeline.export.kgx`), its CUI -> SPOKE mapping as SSSOM TSV (:mod:`pipeline.export.sssom`);
``litpath export``."""
