"""Reader for a plain citation table ``citing,referenced`` of PMIDs (NIH Open Citation
Collection layout: UTF-8 CSV with that header row; extra columns are ignored).

A row is one CSV record after the header; accepted rows give ``citations``
(``PMID:<citing>`` -> ``PMID:<referenced>``). Non-numeric ids, missing columns and bytes
that are not UTF-8 are quarantined with line and field.
"""

from __future__ import annotations

from pipeline.ingest.common import IngestRun, InputFile, parse_int
from pipeline.ingest.cord19 import iter_csv, malformed_row_reason, printable_raw, read_header

REQUIRED = ("citing", "referenced")


def read_citations_table(source: InputFile, run: IngestRun) -> None:
    records = iter_csv(source)
    header = read_header(records, source, REQUIRED)
    citing_at, referenced_at = header.index("citing"), header.index("referenced")
    for line, fields, raw, error in records:
        if fields is None or fields == []:
            run.quarantine(line, None, error or "empty line", printable_raw(raw))
            continue
        malformed = malformed_row_reason(header, fields)
        if malformed:
            run.quarantine(line, *malformed, printable_raw(raw))
            continue
        citing = parse_int(fields[citing_at].strip())
        if citing is None:
            run.quarantine(line, "citing", f"citing PMID is not numeric: {fields[citing_at]!r}", raw)
            continue
        referenced = parse_int(fields[referenced_at].strip())
        if referenced is None:
            run.quarantine(
                line, "referenced", f"referenced PMID is not numeric: {fields[referenced_at]!r}", raw
            )
            continue
        run.accept()
        run.add("citations", {"citing": f"PMID:{citing}", "cited": f"PMID:{referenced}"})
