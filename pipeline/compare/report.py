"""Outputs of a comparison run: tables (Parquet + CSV), figure (PNG), report (HTML + Markdown).

Written under the run's output folder:

``paths.parquet`` / ``paths.csv``   one row per pair: scenario, literature path, SPOKE evidence,
                                    documents, and the full record as JSON (``detail``)
``hops.parquet`` / ``hops.csv``     one row per hop checked in SPOKE
``scenarios.png``                   the scenario counts (the paper's Fig. 10), under both readings of
                                    "found in the SPOKE shortest paths", 4 and none split by cause
``report.html``                     self-contained (figure embedded as base64 PNG, no network)
``report.md``                       the same content in Markdown, figure linked
``run.json``                        provenance, coverage, counts, timings, Neo4j round trips
"""

from __future__ import annotations

import base64
import io
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pipeline.builds.layout import CompareFolder
from pipeline.compare.classify import CAUSES, PAPER_PHRASE, READINGS, SCENARIOS, Comparison, description
from pipeline.compare.literature import TIE_RULE
from pipeline.compare.run import CompareRun

PATHS_SCHEMA = pa.schema(
    [
        ("source", pa.string()), ("target", pa.string()),
        ("source_name", pa.string()), ("target_name", pa.string()),
        ("scenario", pa.string()), ("hop_limit", pa.int32()),
        ("literature_reachable", pa.bool_()), ("literature_path", pa.string()),
        ("literature_names", pa.string()), ("total_cost", pa.float64()),
        ("n_concepts", pa.int32()), ("n_mapped", pa.int32()), ("unmapped", pa.string()),
        ("n_spoke_hops", pa.int32()), ("n_connected", pa.int32()), ("spoke_paths", pa.string()),
        ("documents", pa.string()), ("evidence_status", pa.string()),
        ("cause", pa.string()), ("literature_cause", pa.string()), ("spoke_distance", pa.int32()),
        ("walk_length", pa.int32()), ("shortest_in_spoke", pa.bool_()), ("scenario_strict", pa.string()),
        ("shortest_paths", pa.int64()), ("detail", pa.string()),
    ]
)  # fmt: skip
HOPS_SCHEMA = pa.schema(
    [
        ("source", pa.string()), ("target", pa.string()), ("scenario", pa.string()), ("hop", pa.int32()),
        ("from_cui", pa.string()), ("to_cui", pa.string()), ("skipped", pa.string()),
        ("connected", pa.bool_()), ("spoke_length", pa.int32()), ("relationships", pa.string()),
        ("spoke_path", pa.string()), ("documents", pa.string()),
    ]
)  # fmt: skip
EXAMPLES_PER_SCENARIO = 3
EXAMPLE_DOCUMENTS_PER_HOP = 5  # documents listed per hop in the report's examples
EXAMPLE_PREDICATES_PER_HOP = 3  # the most frequent predicates named per hop in the examples


def _names(run_names: dict[str, str | None], keys: list[str]) -> str:
    return " → ".join(f"{k} {run_names.get(k) or ''}".strip() for k in keys)


def spoke_text(comp: Comparison) -> str:
    """The SPOKE column of Table VI: each hop's SPOKE path, or that no link was found."""
    if comp.pair_link is not None:
        return comp.pair_link.describe() or f"not connected within {comp.hops} hop(s)"
    parts = []
    if comp.unmapped:
        parts.append(f"after removing unmapped {', '.join(comp.unmapped)}:")
    for hop in comp.spoke_hops:
        if hop.link.connected:
            parts.append(
                hop.link.describe() if hop.link.length else f"{hop.source} = {hop.target} (same SPOKE node)"
            )
        else:
            parts.append(f"no link between {hop.source} and {hop.target} within {comp.hops} hop(s)")
    if not comp.spoke_hops:
        parts.append("fewer than two mapped concepts")
    return "; ".join(parts)


def hop_documents(comp: Comparison) -> list[list[str] | None]:
    """Literature documents of each SPOKE hop: those of the literature hops it spans (None: unknown)."""
    lit = comp.literature
    if lit is None or not lit.hops or not comp.spoke_hops:
        return [None] * len(comp.spoke_hops)
    kept = [i for i, c in enumerate(comp.concepts) if c in comp.mapped]
    out = []
    for k in range(len(comp.spoke_hops)):
        docs: list[str] = []
        known = True
        for hop in lit.hops[kept[k] : kept[k + 1]]:
            if hop.documents is None:
                known = False
            else:
                docs.extend(d for d in hop.documents if d not in docs)
        out.append(docs if known else None)
    return out


def _documents_text(comp: Comparison, per_hop: int | None = None) -> str | None:
    """Each literature hop's documents, ``source-target: d1,d2; ...`` (``?`` unknown, ``-`` none);
    with ``per_hop``, at most that many per hop and how many more (a hop of a large corpus can
    rest on thousands of papers: the tables keep them all, the report's examples show a few)."""
    lit = comp.literature
    if lit is None or not lit.hops:
        return None
    parts = []
    for hop in lit.hops:
        if hop.documents is None:
            docs = "?"
        elif per_hop is not None and len(hop.documents) > per_hop:
            docs = ",".join(hop.documents[:per_hop]) + f" and {len(hop.documents) - per_hop:,} more"
        else:
            docs = ",".join(hop.documents) or "-"
        parts.append(f"{hop.source}-{hop.target}: {docs}")
    return "; ".join(parts)


def evidence_text(comp: Comparison, per_hop: int = EXAMPLE_PREDICATES_PER_HOP) -> str:
    """Why each direct literature hop holds, for the report's examples: its most frequent predicates
    with their counts and the first of its quoted sentences (the most recent), ``source-target:
    TREATS ×3, CAUSES ×1 — "text" (PMID 1002, 2020)``; hops whose evidence is unknown are left out."""
    lit = comp.literature
    parts = []
    for hop in lit.hops if lit is not None else ():
        if not hop.predicates:
            continue
        named = ", ".join(f"{p['predicate']} \u00d7{p['count']:,}" for p in hop.predicates[:per_hop])
        if len(hop.predicates) > per_hop:
            named += f" and {len(hop.predicates) - per_hop:,} more"
        quote = ""
        if hop.sentences:
            first = hop.sentences[0]
            where = ", ".join(str(v) for v in (f"PMID {first['pmid']}" if first["pmid"] else None, first["year"]) if v)
            quote = f' \u2014 "{first["text"] or "(no text)"}" ({where})'
        parts.append(f"{hop.source}-{hop.target}: {named}{quote}")
    return "; ".join(parts)


def paths_table(run: CompareRun, names: dict[str, str | None]) -> pa.Table:
    rows: dict[str, list] = {f.name: [] for f in PATHS_SCHEMA}
    for comp in run.comparisons:
        lit = comp.literature
        reachable = bool(lit is not None and lit.reachable)
        values = {
            "source": comp.source, "target": comp.target,
            "source_name": names.get(comp.source), "target_name": names.get(comp.target),
            "scenario": comp.scenario, "hop_limit": comp.hops,
            "literature_reachable": reachable,
            "literature_path": " > ".join(lit.vertices) if reachable else None,
            "literature_names": _names(names, lit.concepts) if reachable else None,
            "total_cost": lit.total_cost if reachable else None,
            "n_concepts": len(comp.concepts), "n_mapped": len(comp.mapped),
            "unmapped": ";".join(comp.unmapped),
            "n_spoke_hops": len(comp.spoke_hops), "n_connected": comp.n_connected,
            "spoke_paths": spoke_text(comp),
            "documents": _documents_text(comp),
            "evidence_status": lit.evidence_status if reachable else None,
            "cause": comp.cause, "literature_cause": comp.literature_cause,
            "spoke_distance": comp.spoke_distance, "walk_length": comp.walk_length,
            "shortest_in_spoke": comp.shortest_in_spoke, "scenario_strict": comp.scenario_strict or comp.scenario,
            "shortest_paths": lit.shortest_paths if reachable else None,
            "detail": json.dumps(comp.as_dict(), default=str),
        }  # fmt: skip
        for key, value in values.items():
            rows[key].append(value)
    return pa.table(rows, schema=PATHS_SCHEMA)


def hops_table(run: CompareRun) -> pa.Table:
    rows: dict[str, list] = {f.name: [] for f in HOPS_SCHEMA}
    for comp in run.comparisons:
        for i, (hop, docs) in enumerate(zip(comp.spoke_hops, hop_documents(comp), strict=True)):
            values = {
                "source": comp.source, "target": comp.target, "scenario": comp.scenario, "hop": i,
                "from_cui": hop.source, "to_cui": hop.target, "skipped": ";".join(hop.skipped),
                "connected": hop.link.connected, "spoke_length": hop.link.length,
                "relationships": "|".join(r["type"] for r in hop.link.relationships),
                "spoke_path": hop.link.describe(),
                "documents": None if docs is None else ",".join(docs),
            }  # fmt: skip
            for key, value in values.items():
                rows[key].append(value)
    return pa.table(rows, schema=HOPS_SCHEMA)


CAUSE_NAMES = {  # short names of the causes, for the figure and the tables
    "literature-disconnected": "both ends in the literature graph",
    "literature-absent": "an end not in the literature graph",
    "unmapped": "an end unmapped",
    "spoke-disconnected": "not connected in SPOKE",
}


def count_rows(run: CompareRun) -> list[dict[str, Any]]:
    """The counts table: each scenario under both readings, the paper's groups 2 (2a + 2b) and 3
    (3a + 3b + 3c), and 4 and none split by cause (the paper's numbers kept)."""
    per_hop, strict, causes = run.counts("adjacency"), run.counts("shortest"), run.cause_counts()
    hops = run.provenance.get("hop_limit", 1)
    rows: list[dict[str, Any]] = []
    for scenario in SCENARIOS:
        rows.append({"scenario": scenario, "kind": "scenario", "meaning": description(scenario, hops),
                     "adjacency": per_hop[scenario], "shortest": strict[scenario]})  # fmt: skip
        for cause, meaning in CAUSES.get(scenario, {}).items():
            n = causes[scenario][cause]
            rows.append({"scenario": f"{scenario}: {CAUSE_NAMES[cause]}", "kind": "cause", "meaning": meaning,
                         "adjacency": n, "shortest": n, "cause": cause})  # fmt: skip
        for group, parts in (("2", ("2a", "2b")), ("3", ("3a", "3b", "3c"))):
            if scenario == parts[-1]:
                rows.append({"scenario": f"{group} ({' + '.join(parts)})", "kind": "total",
                             "meaning": f"scenario {group} of the paper, all its cases",
                             "adjacency": sum(per_hop[p] for p in parts),
                             "shortest": sum(strict[p] for p in parts)})  # fmt: skip
    return rows


def scenario_figure(run: CompareRun, title: str) -> bytes:
    """Fig. 10 as PNG bytes (matplotlib Agg, no display needed): per scenario, the pairs under the
    per-hop reading and under the shortest-path reading side by side; 4 and none stacked by cause."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    per_hop, strict, causes = run.counts("adjacency"), run.counts("shortest"), run.cause_counts()
    x = np.arange(len(SCENARIOS))
    width = 0.38
    fig, ax = plt.subplots(figsize=(8.5, 4.2), dpi=100)
    colours = {"adjacency": "#4C72B0", "shortest": "#DD8452"}
    shades = {
        "literature-disconnected": 1.0,
        "literature-absent": 0.55,
        "unmapped": 0.55,
        "spoke-disconnected": 1.0,
    }
    for offset, reading, counts in ((-width / 2, "adjacency", per_hop), (width / 2, "shortest", strict)):
        plain = [counts[s] if s not in CAUSES else 0 for s in SCENARIOS]
        label = "per-hop reading (default)" if reading == "adjacency" else "shortest-path reading"
        bars = ax.bar(x + offset, plain, width, color=colours[reading], label=label)
        ax.bar_label(bars, labels=[str(v) if s not in CAUSES else "" for s, v in zip(SCENARIOS, plain, strict=True)],
                     padding=2, fontsize=7)  # fmt: skip
        for scenario, split in causes.items():
            i, bottom = SCENARIOS.index(scenario), 0
            for cause, n in split.items():
                ax.bar(x[i] + offset, n, width, bottom=bottom, color=colours[reading], alpha=shades[cause],
                       edgecolor="white", hatch="//" if shades[cause] < 1 else None)  # fmt: skip
                if n:
                    ax.text(x[i] + offset, bottom + n / 2, str(n), ha="center", va="center", fontsize=7)
                bottom += n
            ax.text(x[i] + offset, bottom, str(bottom), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, [f"Scenario {s}" if s != "none" else "none" for s in SCENARIOS])
    ax.set_ylabel("pairs")
    ax.set_title(title, fontsize=10)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    ax.legend(fontsize=7, title="hatched: 4, an end not in the literature graph; none, an end unmapped",
              title_fontsize=7)  # fmt: skip
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


GRAPH_NAMES = {
    "cooccurrence": "the co-occurrence graph (concepts and concept–concept edges only, as in the paper)",
    "full": "the full concept–abstract graph",
}


def graph_sentence(prov: dict[str, Any]) -> str:
    """Which literature graph the paths came from, and how its distances were obtained."""
    scope = prov.get("graph", "full")
    kinds = ", ".join(prov.get("graph_edge_kinds") or []) or "?"
    used = prov.get("paths_from") or {}
    how = ", ".join(f"{n} {where}" for where, n in sorted(used.items()) if n) or "none"
    return (
        f"Literature graph: {GRAPH_NAMES.get(scope, scope)}; edge kinds {kinds}; "
        f"{prov.get('graph_vertices', '?')} vertices; distances {prov.get('graph_distances', '?')} "
        f"(paths: {how})."
    )


def settings_sentence(prov: dict[str, Any]) -> str:
    cap = prov.get("scenario4_max_hops")
    same = prov.get("same_node_pairs") or []
    relationships = prov.get("relationships") or {}
    followed = (
        "only " + ", ".join(relationships["allow"]) if relationships.get("allow")
        else "all but " + ", ".join(relationships["deny"]) if relationships.get("deny")
        else "every relationship type (no filter)"
    )  # fmt: skip
    text = (
        f"SPOKE hop limit h = {prov['hop_limit']} (a hop is connected when SPOKE joins its two concepts within "
        f"h relationships); scenario 4 searches SPOKE up to {cap} relationships (a safety cap: the paper sets "
        "no bound; 'none' is not a scenario of the paper, it means no SPOKE path within the cap). "
        f"SPOKE paths follow {followed}"
    )
    if prov.get("obsolete_property"):
        text += f", and never a node marked obsolete ({prov['obsolete_property']})"
    text += "."
    if same:
        text += f" {len(same)} pair(s) of CUIs of one SPOKE node are not classified (trivially connected)."
    return text


def readings_sentence() -> str:
    return (
        f'Table VI says a path is "{PAPER_PHRASE}" (2b, 3a, 3b). Counted under two readings: '
        f"{READINGS['adjacency']}; and {READINGS['shortest']}."
    )


def ties_sentence(run: CompareRun) -> str:
    ties = run.tie_counts()
    text = (
        f"Ties: {ties['pairs_tied']} of {ties['pairs_counted']} pairs with a literature path have more than one "
        f"shortest path (at most {ties['most_paths']}); one is classified: {TIE_RULE}."
    )
    if run.provenance.get("zero_cost_ties"):
        text += f" {run.provenance['zero_cost_ties']} pair(s) have zero-cost edges on them: their counts are lower bounds."
    return text


def releases_sentence(prov: dict[str, Any]) -> str:
    releases = prov.get("releases") or {}
    names = {"spoke": "SPOKE", "umls": "UMLS", "semmeddb": "SemMedDB"}
    return (
        "Releases: " + "; ".join(f"{names.get(k, k)} {v}" for k, v in releases.items()) + "."
        if releases
        else ""
    )


# paper_scaled's keys -> how the sentence names them
SCALED_NAMES = {
    "abstract_vertices": "abstracts",
    "edges_concept_abstract": "paper–concept relations",
    "edges_abstract_abstract": "citation relations",
    "concept_vertices": "concepts",
    "edges_concept_concept": "concept–concept relations",
}


def scale_sentence(prov: dict[str, Any]) -> str:
    """The compared graph beside the COAST paper's figures, scaled to this build's share of a
    release (empty for a run without ``paper_scaled``): a ratio far from 1 says the build counts
    something else than the paper did (science review S5). Where the compared graph is not the
    full graph, the sentence says where the full graph's figures are (its abstracts, paper--concept
    and citation relations: the ones the mention source decides)."""
    scaled = prov.get("paper_scaled") or {}
    if not scaled.get("predication_rows"):
        return ""
    parts = []
    for key, name in SCALED_NAMES.items():
        row = scaled.get(key)
        if not row:
            continue
        if "paper_scaled" in row:
            ratio = f", ratio {row['ratio']:.2f}" if row.get("ratio") is not None else ""
            parts.append(f"{name} {row['build']:,} (paper, scaled: {row['paper_scaled']:,}{ratio})")
        else:
            parts.append(f"{name} {row['build']:,} (paper, whole release: {row['paper_full_release']:,})")
    graph = prov.get("paper_scaled_graph", "full")
    text = (
        f"Size beside the COAST paper ({_GRAPH_NAMES.get(graph, graph)}): this build read "
        f"{scaled['predication_rows']:,} PREDICATION rows, {100 * scaled['share_of_release']:.1f} % of a release; "
        f"the paper's counts that grow with the corpus are scaled by that share, the saturating ones given for "
        f"the whole release: " + "; ".join(parts) + "."
    )
    if graph != "full":
        text += (" The full graph's abstracts, paper–concept and citation relations beside the paper's: "
                 "`paper_scaled` in graph/graph_counts.json, and `litpath describe`.")  # fmt: skip
    return text


_GRAPH_NAMES = {"full": "the full graph", "cooccurrence": "the co-occurrence graph compared here"}


def query_sentence(prov: dict[str, Any]) -> str:
    hood = prov.get("query_neighbourhood")
    text = f"Query set: {prov.get('query_file')}"
    if hood:
        seed = hood.get("seed") or {}
        labels = ", ".join(f"{n} {label}" for label, n in (hood.get("nodes_by_label") or {}).items())
        text += (
            f"; SPOKE neighbourhood of {seed.get('identifier')} {seed.get('name') or ''} "
            f"({seed.get('label')}) within {hood.get('hops')} relationship(s): {labels or 'no nodes'}"
        )
        if hood.get("summary"):
            text += f"; {hood['summary']} ({hood.get('nodes_found')} found, {hood.get('nodes_kept')} kept, in the order {hood.get('order')})"
    return text + "."


def mapping_routes(run: CompareRun) -> list[tuple[str, str, int]]:
    """How the concepts on the compared paths were mapped: (label, method, concepts) counts."""
    seen: dict[tuple[str, str], set[str]] = {}
    for comp in run.comparisons:
        for cui, nodes in comp.mapped.items():
            for node in nodes:
                seen.setdefault((node["label"], str(node.get("method"))), set()).add(cui)
    counted = Counter({key: len(cuis) for key, cuis in seen.items()})
    return [(label, method, n) for (label, method), n in sorted(counted.items())]


def examples(run: CompareRun, names: dict[str, str | None], per_scenario: int = EXAMPLES_PER_SCENARIO):
    """Up to ``per_scenario`` rows per scenario for the Table VI style section (shortest paths first)."""
    out: dict[str, list[dict[str, str]]] = {}
    for scenario in SCENARIOS:
        chosen = sorted(
            (c for c in run.comparisons if c.scenario == scenario),
            key=lambda c: (len(c.concepts), c.source, c.target),
        )[:per_scenario]
        out[scenario] = [
            {
                "pair": f"{c.source} – {c.target}",
                "literature": _names(names, c.concepts)
                if c.literature is not None and c.literature.reachable
                else "no path in the literature graph"
                + (f" ({CAUSE_NAMES[c.cause]})" if c.cause in CAUSE_NAMES else ""),
                "spoke": spoke_text(c),
                "documents": _documents_text(c, EXAMPLE_DOCUMENTS_PER_HOP) or "",
                "evidence": evidence_text(c),
            }
            for c in chosen
        ]
    return out


HTML_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>litpath SPOKE comparison — {{ prov.build_id }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:0.3em 0.6em;text-align:left;vertical-align:top;font-size:0.9em}
th{background:#f0f0f0} .note{background:#fff3cd;padding:0.6em;border:1px solid #e0c060}
code{font-size:0.9em}
</style></head><body>
<h1>Literature paths compared with SPOKE</h1>
<p>Build <code>{{ prov.build_id }}</code>, {{ total }} pairs ({{ prov.pairs }}).</p>
<p id="graph">{{ graph_text }}</p>
<p id="settings">{{ settings_text }}</p>
<p id="query">{{ query_text }}</p>
<p id="readings">{{ readings_text }}</p>
<p id="ties">{{ ties_text }}</p>
{% if releases_text %}<p id="releases">{{ releases_text }}</p>{% endif %}
{% if scale_text %}<p id="paper-scaled">{{ scale_text }}</p>{% endif %}
{% for w in warnings %}<p class="note warning">Warning: {{ w }}</p>{% endfor %}
{% if no_mapped %}<p class="note" id="no-mapped">No concept of the query set maps to a SPOKE node present in Neo4j: every pair is scenario 3c, 4 or none only by construction. Check the mapping file and the query identifiers.</p>{% endif %}
<h2>Scenarios</h2>
<img id="scenario-figure" alt="scenario counts" src="data:image/png;base64,{{ figure }}">
<table id="scenario-counts"><tr><th>scenario</th><th>meaning</th><th>pairs (per-hop reading)</th><th>pairs (shortest-path reading)</th></tr>
{% for row in count_rows %}<tr class="{{ row.kind }}">{% if row.kind == "scenario" %}<td>{{ row.scenario }}</td><td>{{ row.meaning }}</td><td class="count" data-scenario="{{ row.scenario }}">{{ row.adjacency }}</td><td class="count-shortest" data-scenario-shortest="{{ row.scenario }}">{{ row.shortest }}</td>{% elif row.kind == "cause" %}<td>&nbsp;&nbsp;{{ row.scenario }}</td><td>{{ row.meaning }}</td><td data-cause="{{ row.cause }}">{{ row.adjacency }}</td><td>{{ row.shortest }}</td>{% else %}<th>{{ row.scenario }}</th><td>{{ row.meaning }}</td><th data-total="{{ row.scenario }}">{{ row.adjacency }}</th><th>{{ row.shortest }}</th>{% endif %}</tr>
{% endfor %}<tr><th colspan="2">total</th><th>{{ total }}</th><th>{{ total }}</th></tr></table>
<h2>Examples per scenario</h2>
{% for s in scenarios %}{% if example_rows[s] %}<h3>Scenario {{ s }}: {{ descriptions[s] }}</h3>
<table><tr><th>pair</th><th>literature path</th><th>SPOKE path</th><th>literature documents</th><th>why each hop holds: predicates, a sentence</th></tr>
{% for row in example_rows[s] %}<tr><td>{{ row.pair }}</td><td>{{ row.literature }}</td><td>{{ row.spoke }}</td><td>{{ row.documents }}</td><td class="evidence">{{ row.evidence }}</td></tr>
{% endfor %}</table>{% endif %}{% endfor %}
<h2>Mapping routes used</h2>
<table id="routes"><tr><th>SPOKE label</th><th>route (method)</th><th>concepts on the paths</th></tr>
{% for label, method, n in routes %}<tr><td>{{ label }}</td><td>{{ method }}</td><td>{{ n }}</td></tr>
{% endfor %}</table>
<h2>Mapping coverage</h2>
<table id="coverage">
{% if coverage.get("query") %}<tr><th>query entries</th><td>{{ coverage.query.entries }}</td></tr>
<tr><th>query entries with no CUI</th><td>{{ coverage.query.entries_unresolved|join(", ") or "none" }}</td></tr>
<tr><th>query concepts</th><td>{{ coverage.query.concepts }}</td></tr>
<tr><th>… in the literature graph</th><td>{{ coverage.query.in_graph }}</td></tr>
<tr><th>… mapped to SPOKE</th><td>{{ coverage.query.mapped }}</td></tr>
<tr><th>… in the mapping, node missing in Neo4j</th><td>{{ coverage.query.in_mapping_not_in_neo4j|join(", ") or "none" }}</td></tr>{% endif %}
<tr><th>concepts on the paths</th><td>{{ coverage.paths.concepts }}</td></tr>
<tr><th>… mapped</th><td>{{ coverage.paths.mapped }}</td></tr>
<tr><th>… unmapped</th><td>{{ coverage.paths.unmapped }}</td></tr>
{% for t, n in coverage.paths.unmapped_by_semtype.items() %}<tr><td>unmapped, semantic type {{ t }}</td><td>{{ n }}</td></tr>{% endfor %}
</table>
<h2>Provenance</h2>
<table id="provenance">{% for k, v in prov.items() %}<tr><th>{{ k }}</th><td><code>{{ v }}</code></td></tr>{% endfor %}
<tr><th>Neo4j round trips</th><td>{{ round_trips }}</td></tr>
{% for k, v in timings.items() %}<tr><th>seconds: {{ k }}</th><td>{{ "%.3f"|format(v) }}</td></tr>{% endfor %}
</table>
<p>Tables: <code>paths.parquet</code>/<code>paths.csv</code> (one row per pair), <code>hops.parquet</code>/<code>hops.csv</code> (one row per SPOKE hop).</p>
</body></html>
"""


def _md_cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def markdown(run: CompareRun, names: dict[str, str | None], example_rows, no_mapped: bool) -> str:
    prov, total = run.provenance, len(run.comparisons)
    lines = [
        "# Literature paths compared with SPOKE",
        "",
        f"Build `{prov['build_id']}`, {total} pairs ({prov['pairs']}).",
        "",
        graph_sentence(prov),
        "",
        settings_sentence(prov),
        "",
        query_sentence(prov),
        "",
    ]
    if no_mapped:
        lines += ["> **No concept of the query set maps to a SPOKE node present in Neo4j.**", ""]
    lines += [readings_sentence(), "", ties_sentence(run), ""]
    if releases_sentence(prov):
        lines += [releases_sentence(prov), ""]
    if scale_sentence(prov):
        lines += [scale_sentence(prov), ""]
    lines += [f"> **Warning:** {w}" for w in prov.get("warnings", [])]
    if prov.get("warnings"):
        lines.append("")
    lines += [
        "![scenario counts](scenarios.png)",
        "",
        "| scenario | meaning | pairs (per-hop reading) | pairs (shortest-path reading) |",
        "|---|---|---|---|",
    ]
    descriptions = {s: description(s, prov["hop_limit"]) for s in SCENARIOS}
    for row in count_rows(run):
        if row["kind"] == "total":
            lines.append(
                f"| **{row['scenario']}** | {row['meaning']} | **{row['adjacency']}** | **{row['shortest']}** |"
            )
        elif row["kind"] == "cause":
            lines.append(
                f"| ↳ {row['scenario']} | {row['meaning']} | {row['adjacency']} | {row['shortest']} |"
            )
        else:
            lines.append(f"| {row['scenario']} | {row['meaning']} | {row['adjacency']} | {row['shortest']} |")
    lines += [f"| **total** | | **{total}** | **{total}** |", "", "## Examples per scenario", ""]
    for s in SCENARIOS:
        if not example_rows[s]:
            continue
        lines += [
            f"### Scenario {s}: {descriptions[s]}",
            "",
            "| pair | literature path | SPOKE path | documents | predicates, a sentence |",
        ]
        lines += ["|---|---|---|---|---|"]
        lines += [
            f"| {_md_cell(r['pair'])} | {_md_cell(r['literature'])} | {_md_cell(r['spoke'])} | {_md_cell(r['documents'])} "
            f"| {_md_cell(r['evidence'])} |"
            for r in example_rows[s]
        ]
        lines.append("")
    lines += [
        "## Mapping routes used",
        "",
        "| SPOKE label | route (method) | concepts on the paths |",
        "|---|---|---|",
    ]
    lines += [f"| {label} | {method} | {n} |" for label, method, n in mapping_routes(run)]
    lines += ["", "## Mapping coverage", "", "```", json.dumps(run.coverage, indent=2), "```", ""]
    lines += ["## Provenance", "", "| key | value |", "|---|---|"]
    lines += [f"| {k} | `{_md_cell(v)}` |" for k, v in prov.items()]
    lines += [f"| Neo4j round trips | {run.round_trips} |"]
    lines += [f"| seconds: {k} | {v:.3f} |" for k, v in run.timings.items()]
    return "\n".join(lines) + "\n"


def no_mapped_concepts(run: CompareRun) -> bool:
    """True when no query concept (or, without a query set, no concept on any path) maps to SPOKE."""
    query = run.coverage.get("query")
    if query is not None:
        return query["mapped"] == 0
    return not any(c.mapped for c in run.comparisons)


def write_report(run: CompareRun, out_dir: str | Path, names: dict[str, str | None]) -> dict[str, Path]:
    """Write every output of the run under ``out_dir``; returns their paths by name."""
    import jinja2

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = CompareFolder(out).outputs()
    table = paths_table(run, names)
    pq.write_table(table, paths["paths_parquet"])
    pacsv.write_csv(table, paths["paths_csv"])
    hops = hops_table(run)
    pq.write_table(hops, paths["hops_parquet"])
    pacsv.write_csv(hops, paths["hops_csv"])

    counts = run.counts()
    prov = run.provenance
    png = scenario_figure(
        run,
        f"SPOKE comparison, build {prov['build_id']}, {prov.get('graph', 'full')} graph, h = {prov['hop_limit']}",
    )
    paths["figure"].write_bytes(png)
    no_mapped = no_mapped_concepts(run)
    example_rows = examples(run, names)
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.from_string(HTML_TEMPLATE).render(
        prov=prov, total=len(run.comparisons), counts=counts, scenarios=SCENARIOS,
        descriptions={s: description(s, prov["hop_limit"]) for s in SCENARIOS},
        figure=base64.b64encode(png).decode("ascii"), example_rows=example_rows,
        coverage=run.coverage, round_trips=run.round_trips, timings=run.timings, no_mapped=no_mapped,
        graph_text=graph_sentence(prov), settings_text=settings_sentence(prov), query_text=query_sentence(prov),
        routes=mapping_routes(run), count_rows=count_rows(run), readings_text=readings_sentence(),
        ties_text=ties_sentence(run), releases_text=releases_sentence(prov), scale_text=scale_sentence(prov), warnings=prov.get("warnings", []),
    )  # fmt: skip
    # Through a temporary file and a rename: the path service serves this file, never half of it.
    partial = paths["html"].with_name(f".{paths['html'].name}.{os.getpid()}.partial")
    partial.write_text(html, encoding="utf-8")
    partial.replace(paths["html"])
    paths["markdown"].write_text(markdown(run, names, example_rows, no_mapped), encoding="utf-8")
    record = {
        "provenance": run.provenance,
        "coverage": run.coverage,
        "counts": counts,
        "counts_shortest_reading": run.counts("shortest"),
        "causes": run.cause_counts(),
        "totals": {
            row["scenario"]: {"adjacency": row["adjacency"], "shortest": row["shortest"]}
            for row in count_rows(run)
            if row["kind"] == "total"
        },
        "ties": run.tie_counts(),
        "pairs": len(run.comparisons),
        "neo4j_round_trips": run.round_trips,
        "seconds": run.timings,
        "no_mapped_concepts": no_mapped,
    }
    paths["run"].write_text(json.dumps(record, indent=2, default=str) + "\n")
    return paths


__all__ = [
    "HOPS_SCHEMA",
    "PATHS_SCHEMA",
    "count_rows",
    "hops_table",
    "paths_table",
    "scenario_figure",
    "spoke_text",
    "write_report",
]
