"""Reader for CORD-19 ``metadata.csv`` (UTF-8, header row, RFC 4180 quoting).

Columns are found by header name; required: ``cord_uid``, ``title``, ``doi``, ``pubmed_id``,
``abstract``, ``publish_time`` (the others — sha, source_x, pmcid, license, authors, journal,
… — are ignored). A row is one CSV record (the line is that of its first physical line).

Each accepted row gives one ``documents`` row: ``doc_id`` = ``PMID:<pubmed_id>`` when
pubmed_id is present, else ``CORD:<cord_uid>``; ``doi`` lower-cased, ``cord_uid`` kept, year =
the leading four digits of ``publish_time`` (``2020-03-01``, ``2020``). The merge step
turns a ``CORD:`` paper whose DOI matches a PubMed record into that ``PMID:`` paper.

Quarantined: wrong column count, missing cord_uid, non-numeric pubmed_id, bytes that are
not UTF-8 (field named). A UTF-16 file or a header without the required columns is an
:class:`IngestError`.
"""

from __future__ import annotations

import re

from pipeline.ingest.base import IngestRun, InputFile, Reader, parse_int
from pipeline.ingest.records import (
    RowError,
    for_each_row,
    malformed_row_reason,
    printable_raw,
    read_header,
    utf8_csv_records,
)

REQUIRED = ("cord_uid", "title", "doi", "pubmed_id", "abstract", "publish_time")
_YEAR = re.compile(r"(\d{4})")


def read_metadata(source: InputFile, run: IngestRun) -> None:
    records = utf8_csv_records(source)
    header = read_header(records, source, REQUIRED)
    column = {name: header.index(name) for name in REQUIRED}

    def parse_row(fields: list[str]) -> None:
        malformed = malformed_row_reason(header, fields)
        if malformed:
            raise RowError(*malformed)
        cord_uid = fields[column["cord_uid"]].strip()
        if not cord_uid:
            raise RowError("cord_uid", "missing cord_uid")
        pubmed_text = fields[column["pubmed_id"]].strip()
        pmid = None
        if pubmed_text:
            pmid = parse_int(pubmed_text)
            if pmid is None:
                raise RowError("pubmed_id", f"pubmed_id is not numeric: {pubmed_text!r}")
            if pmid < 1:  # PMIDs start at 1: a 0 would become the document PMID:0
                raise RowError("pubmed_id", f"pubmed_id is not a PMID: {pubmed_text!r}")
        year_match = _YEAR.match(fields[column["publish_time"]].strip())
        run.add(
            "documents",
            {
                "doc_id": f"PMID:{pmid}" if pmid is not None else f"CORD:{cord_uid}",
                "pmid": pmid,
                "doi": fields[column["doi"]].strip().lower() or None,
                "cord_uid": cord_uid,
                "title": fields[column["title"]].strip() or None,
                "abstract": fields[column["abstract"]].strip() or None,
                "year": int(year_match.group(1)) if year_match else None,
                "source": "cord19",
                "source_file": run.source_file,
            },
        )

    # Only a row whose fields hold no undecodable bytes passes malformed_row_reason, so the raw
    # text of any row quarantined later is valid UTF-8 and printable_raw leaves it as it is.
    for_each_row(records, run, parse_row, printable_raw)


READERS = (Reader("cord19_metadata", produces=("documents",), read=read_metadata),)
