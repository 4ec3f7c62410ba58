"""How much of SPOKE and of the literature graph the CUI mapping covers, unmapped concepts counted.

Writes under an output folder:

* ``coverage_by_label.csv`` -- per SPOKE label and method (``any`` first): SPOKE nodes of the
  label, nodes mapped, distinct CUIs mapped (every mappable label is listed, 0 when absent);
* ``coverage_by_method.csv`` -- per method: mapping rows, nodes, CUIs;
* ``coverage_by_route.csv`` -- per SPOKE label and route (the mapping's ``source``, e.g.
  ``uberon.obo:NCIT>MRCONSO:NCI``): its method, mapping rows, nodes, CUIs;
* ``unmapped_by_semtype.csv`` -- per semantic type of the literature concepts: concepts,
  mapped, unmapped (a concept with several types counts under each; none -> ``(none)``);
* ``unmapped_concepts.csv`` -- every unmapped literature concept: cui, name, semtypes (``;``);
* ``coverage.md`` -- the same in one page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.builds.layout import MappingFolder
from pipeline.spoke.mapping.rules import METHODS

NO_SEMTYPE = "(none)"


@dataclass
class CoverageReport:
    by_label: pd.DataFrame  # label, method, spoke_nodes, nodes_mapped, cuis_mapped
    by_method: pd.DataFrame  # method, rows, nodes_mapped, cuis_mapped
    by_route: pd.DataFrame  # label, method, source, rows, nodes_mapped, cuis_mapped
    by_semtype: pd.DataFrame  # semtype, concepts, mapped, unmapped
    unmapped: pd.DataFrame  # cui, name, semtypes
    concepts: int
    concepts_mapped: int

    @property
    def concepts_unmapped(self) -> int:
        return self.concepts - self.concepts_mapped


def compute_coverage(
    mapping: pa.Table | pd.DataFrame,
    spoke_nodes: Mapping[str, int],
    concepts: pa.Table | pd.DataFrame | None = None,
    labels: Iterable[str] = (),
) -> CoverageReport:
    """``spoke_nodes``: nodes per SPOKE label (the denominators); ``concepts``: the CONCEPTS table;
    ``labels``: labels listed even when SPOKE has none of them (e.g. every mappable label)."""
    frame = mapping.to_pandas() if isinstance(mapping, pa.Table) else mapping
    labels = sorted(set(spoke_nodes) | set(frame["spoke_label"]) | set(labels))

    rows = []
    for label in labels:
        of_label = frame[frame["spoke_label"] == label]
        for method in ("any", *METHODS):
            part = of_label if method == "any" else of_label[of_label["method"] == method]
            rows.append(
                {
                    "label": label,
                    "method": method,
                    "spoke_nodes": int(spoke_nodes.get(label, 0)),
                    "nodes_mapped": int(part["spoke_identifier"].nunique()),
                    "cuis_mapped": int(part["cui"].nunique()),
                }
            )
    by_label = pd.DataFrame(rows, columns=["label", "method", "spoke_nodes", "nodes_mapped", "cuis_mapped"])

    method_rows = []
    for method in ("any", *METHODS):
        part = frame if method == "any" else frame[frame["method"] == method]
        nodes = part[["spoke_label", "spoke_identifier"]].drop_duplicates()
        method_rows.append(
            {
                "method": method,
                "rows": len(part),
                "nodes_mapped": len(nodes),
                "cuis_mapped": int(part["cui"].nunique()),
            }
        )
    by_method = pd.DataFrame(method_rows, columns=["method", "rows", "nodes_mapped", "cuis_mapped"])
    by_route = _coverage_by_route(frame)

    mapped_cuis = set(frame["cui"])
    if concepts is None:
        return CoverageReport(
            by_label=by_label,
            by_method=by_method,
            by_route=by_route,
            by_semtype=pd.DataFrame(columns=["semtype", "concepts", "mapped", "unmapped"]),
            unmapped=pd.DataFrame(columns=["cui", "name", "semtypes"]),
            concepts=0,
            concepts_mapped=0,
        )

    concept_frame = concepts.to_pandas() if isinstance(concepts, pa.Table) else concepts
    total: Counter[str] = Counter()
    unmapped_count: Counter[str] = Counter()
    unmapped_rows = []
    mapped = 0
    for cui, name, semtypes in zip(
        concept_frame["cui"], concept_frame["name"], concept_frame["semtypes"], strict=True
    ):
        types = list(semtypes) if semtypes is not None and len(semtypes) else [NO_SEMTYPE]
        is_mapped = cui in mapped_cuis
        mapped += is_mapped
        for semtype in dict.fromkeys(types):
            total[semtype] += 1
            if not is_mapped:
                unmapped_count[semtype] += 1
        if not is_mapped:
            unmapped_rows.append({"cui": cui, "name": name, "semtypes": ";".join(types)})
    by_semtype = pd.DataFrame(
        [
            {
                "semtype": t,
                "concepts": total[t],
                "mapped": total[t] - unmapped_count[t],
                "unmapped": unmapped_count[t],
            }
            for t in total
        ],
        columns=["semtype", "concepts", "mapped", "unmapped"],
    ).sort_values(["unmapped", "semtype"], ascending=[False, True], ignore_index=True)
    unmapped = pd.DataFrame(unmapped_rows, columns=["cui", "name", "semtypes"]).sort_values(
        "cui", ignore_index=True
    )
    return CoverageReport(
        by_label=by_label,
        by_method=by_method,
        by_route=by_route,
        by_semtype=by_semtype,
        unmapped=unmapped,
        concepts=len(concept_frame),
        concepts_mapped=mapped,
    )


def _coverage_by_route(frame: pd.DataFrame) -> pd.DataFrame:
    """Per SPOKE label and route (``source``): method, mapping rows, nodes and CUIs mapped."""
    columns = ["label", "method", "source", "rows", "nodes_mapped", "cuis_mapped"]
    rows = [
        {
            "label": label,
            "method": method,
            "source": source,
            "rows": len(part),
            "nodes_mapped": int(part["spoke_identifier"].nunique()),
            "cuis_mapped": int(part["cui"].nunique()),
        }
        for (label, method, source), part in frame.groupby(["spoke_label", "method", "source"])
    ]
    table = pd.DataFrame(rows, columns=columns)
    method_order = table["method"].map({method: i for i, method in enumerate(METHODS)})
    return (
        table.assign(_order=method_order)
        .sort_values(["label", "_order", "source"], ignore_index=True)
        .drop(columns="_order")
    )


def _markdown_table(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def write_coverage(report: CoverageReport, out_dir: str | Path, unmapped_listed: int = 50) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {**MappingFolder(out).coverage_tables(), "markdown": MappingFolder(out).coverage}
    report.by_label.to_csv(paths["by_label"], index=False)
    report.by_method.to_csv(paths["by_method"], index=False)
    report.by_route.to_csv(paths["by_route"], index=False)
    report.by_semtype.to_csv(paths["by_semtype"], index=False)
    report.unmapped.to_csv(paths["unmapped"], index=False)

    any_method = report.by_label[report.by_label["method"] == "any"].drop(columns="method")
    lines = ["# CUI -> SPOKE mapping coverage", ""]
    if report.concepts:
        share = 100.0 * report.concepts_mapped / report.concepts
        lines += [
            f"Literature concepts: **{report.concepts}**; mapped to SPOKE: **{report.concepts_mapped}** "
            f"({share:.1f}%); unmapped: **{report.concepts_unmapped}** "
            f"(all listed in `{paths['unmapped'].name}`).",
            "",
        ]
    lines += ["## Per method", "", _markdown_table(report.by_method), ""]
    lines += ["## Per SPOKE label (any method)", "", _markdown_table(any_method), ""]
    detail = report.by_label[report.by_label["method"] != "any"]
    detail = detail[detail["nodes_mapped"] > 0]
    lines += ["## Per SPOKE label and method", "", _markdown_table(detail), ""]
    lines += ["## Per SPOKE label and route", "", _markdown_table(report.by_route), ""]
    if report.concepts:
        lines += ["## Literature concepts per semantic type", "", _markdown_table(report.by_semtype), ""]
        if len(report.unmapped):
            shown = report.unmapped.head(unmapped_listed)
            lines += [f"## Unmapped concepts (first {len(shown)} of {len(report.unmapped)})", ""]
            lines += [_markdown_table(shown), ""]
    paths["markdown"].write_text("\n".join(lines))
    return paths


def read_concepts(path: str | Path) -> pa.Table:
    """The literature's CONCEPTS table (cui, name, semtypes) from Parquet."""
    table = pq.read_table(path)
    missing = {"cui", "name", "semtypes"} - set(table.column_names)
    if missing:
        raise ValueError(f"{path}: not a concepts table (missing columns {', '.join(sorted(missing))})")
    return table.select(["cui", "name", "semtypes"])
