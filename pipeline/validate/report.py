"""The time-slice validation's report: the record as JSON, a Markdown page and the ROC curve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.builds.layout import ValidationFolder
from pipeline.runtime.files import write_atomically


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def markdown(record: dict[str, Any]) -> str:
    """The report page: the cut, the counts, the scores and how they were computed."""
    method = record["method"]
    precision = record["precision_at_k"]
    lines = [
        f"# Time-slice validation: literature up to {record['until_year']}",
        "",
        f"Slice build `{record['slice_build']}` (papers up to {record['until_year']}), later build "
        f"`{record['later_build']}` ({'no cut' if record['later_until_year'] is None else 'papers up to ' + str(record['later_until_year'])}), "
        f"{record['graph']} graph.",
        "",
        "| | |",
        "|---|---|",
        f"| cut year | {record['until_year']} |",
        f"| concepts in the slice's graph | {record['concepts']:,} |",
        f"| source concepts | {record['sources']:,} ({method['sources']}) |",
        f"| pairs already adjacent at {record['until_year']} (left out) | {record['adjacent_at_year']:,} |",
        f"| candidate pairs (not adjacent at {record['until_year']}) | {record['candidates']:,} |",
        f"| of which connected by a path in the slice | {record['reachable_candidates']:,} |",
        f"| positives (adjacent in the later build) | {record['positives']:,} |",
        f"| base rate (positives / candidates) | {_number(record['base_rate'], 4)} |",
        f"| **ROC AUC** | **{_number(record['roc_auc'])}** |",
        *(f"| precision at {k} | {_number(v)} |" for k, v in precision.items()),
        f"| median path cost, positives / negatives | {_number(record['positive_cost_median'])} / "
        f"{_number(record['negative_cost_median'])} |",
        "",
        "## Method",
        "",
        f"- candidates: {method['candidates']};",
        f"- positive: {method['positive']};",
        f"- score: {method['score']};",
        f"- ROC AUC: {method['roc_auc']} (0.5 is chance);",
        f"- precision at k: {method['precision_at_k']} (a random ranking has the base rate).",
        "",
        "The test follows the time-sliced validation of hypothesis-generation systems (MOLIERE, "
        "KDD 2017, which the COAST paper cites for its path-and-distance paradigm; AGATHA, 2020): "
        "predict from the literature up to a year, score against what was published after it. "
        "See `pipeline/validate/time_slice.py` for litpath's reading.",
        "",
        "## The ten candidates of smallest cost",
        "",
        "| source | target | cost | adjacent later |",
        "|---|---|---|---|",
        *(
            f"| {c['source_name'] or ''} ({c['source']}) | {c['target_name'] or ''} ({c['target']}) | "
            f"{c['cost']:.3f} | {'yes' if c['became_adjacent'] else 'no'} |"
            for c in record["top_candidates"]
        ),
        "",
    ]
    return "\n".join(lines)


def write_report(record: dict[str, Any], out: Path) -> ValidationFolder:
    """``validation.json``, ``validation.md`` and ``roc.png`` in ``out``."""
    folder = ValidationFolder(out)
    Path(out).mkdir(parents=True, exist_ok=True)
    write_atomically(folder.record, json.dumps(record, indent=2) + "\n")
    write_atomically(folder.report, markdown(record))
    _roc_figure(record, folder.figure)
    return folder


def _roc_figure(record: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(4.5, 4.5))
    curve = record["roc_curve"]
    if curve["fpr"]:
        axes.plot(curve["fpr"], curve["tpr"], label=f"path cost (AUC {_number(record['roc_auc'])})")
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", label="chance")
    axes.set_xlabel("false positive rate")
    axes.set_ylabel("true positive rate")
    axes.set_title(f"Pairs adjacent after {record['until_year']}")
    axes.legend(loc="lower right")
    figure.tight_layout()
    partial = path.with_name(f".{path.name}.partial.png")
    figure.savefig(partial, dpi=100)
    plt.close(figure)
    partial.replace(path)
