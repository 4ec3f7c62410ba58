"""Reader for PubMed/MEDLINE XML baseline and update files (``.xml`` or ``.xml.gz``).

Streams with ``xml.etree.ElementTree.iterparse`` and clears each record after use, so
memory is bounded by one record. Rows (for the counts invariant):

* each ``PubmedArticle`` (and ``PubmedBookArticle``): accepted -> one ``documents`` row
  (``PMID:<pmid>``, title, abstract, year, DOI, MeSH descriptor UIs), or quarantined when it
  has no numeric PMID (``line`` = 1-based record index in the file);
* each PMID cited through ``ReferenceList/Reference/ArticleIdList/ArticleId[@IdType="pubmed"]``
  of an accepted article: accepted -> one ``citations`` row (citing = the article), or
  quarantined when not numeric; references without a PubMed id are not rows;
* each ``PMID`` inside ``DeleteCitation``: accepted -> one ``deletions`` row.

Year: ``Journal/JournalIssue/PubDate/Year``, else the first four digits of ``MedlineDate``,
else ``ArticleDate/Year``. DOI: the article's own ``PubmedData/ArticleIdList`` entry, else
``ELocationID[@EIdType="doi"]``. MeSH: descriptor UIs (``D…``), the name where no UI.

Broken XML or a truncated gzip raises :class:`IngestError` naming the file and position.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from pipeline.ingest.base import INT32_MAX, IngestError, IngestRun, InputFile, Reader, parse_int

_YEAR = re.compile(r"(\d{4})")


def _at(element: ET.Element | None, *tags: str) -> ET.Element | None:
    """The first element down the child path ``tags`` in document order, as ElementPath's find of
    "A/B/C" gives it (searching every A, not only the first), or None."""
    found = _all(element, *tags)
    return found[0] if found else None


def _all(element: ET.Element | None, *tags: str) -> list[ET.Element]:
    """Every element down the child path ``tags``, in document order, as ElementPath's findall of
    "A/B/C" gives them. Chained one-tag findalls, because ElementTree answers a one-tag find in C
    and a path in Python (ElementPath), about 20 times slower: the paths were most of a PubMed
    file's parse time after the XML itself."""
    found = [] if element is None else [element]
    for tag in tags:
        found = [child for parent in found for child in parent.findall(tag)]
    return found


def _text_at(element: ET.Element | None, *tags: str) -> str | None:
    """``findtext`` of the child path ``tags``: the text of its first element ("" when it has
    none), None when there is no such element."""
    found = _at(element, *tags)
    return None if found is None else (found.text or "")


def _text(element: ET.Element | None) -> str | None:
    if element is None:
        return None
    value = " ".join("".join(element.itertext()).split())  # inline markup leaves runs of blanks
    return value or None


def _year(article: ET.Element) -> int | None:
    pub_date = _at(article, "Journal", "JournalIssue", "PubDate")
    candidates = []
    if pub_date is not None:
        candidates += [pub_date.findtext("Year"), pub_date.findtext("MedlineDate")]
    candidates.append(_text_at(article, "ArticleDate", "Year"))
    for value in candidates:
        if value and (match := _YEAR.search(value)):
            return int(match.group(1))
    return None


def _abstract(parent: ET.Element | None) -> str | None:
    if parent is None:
        return None
    parts = []
    for piece in _all(parent, "Abstract", "AbstractText"):
        text = _text(piece)
        if text:
            label = piece.get("Label")
            parts.append(f"{label}: {text}" if label else text)
    return "\n".join(parts) or None


def _doi(record: ET.Element, article: ET.Element | None) -> str | None:
    for article_id in _all(record, "PubmedData", "ArticleIdList", "ArticleId"):
        if article_id.get("IdType") == "doi" and article_id.text:
            return article_id.text.strip().lower()
    if article is not None:
        for location in article.findall("ELocationID"):
            if location.get("EIdType") == "doi" and location.text:
                return location.text.strip().lower()
    return None


def _mesh(citation: ET.Element | None) -> list[str] | None:
    if citation is None:
        return None
    headings = []
    for descriptor in _all(citation, "MeshHeadingList", "MeshHeading", "DescriptorName"):
        value = descriptor.get("UI") or _text(descriptor)
        if value:
            headings.append(value)
    return headings or None


def _article(record: ET.Element, index: int, run: IngestRun) -> None:
    book = record.tag == "PubmedBookArticle"
    citation = record.find("BookDocument" if book else "MedlineCitation")
    pmid_text = citation.findtext("PMID") if citation is not None else None
    pmid = parse_int(pmid_text.strip() if pmid_text else None)
    if pmid is None:
        run.quarantine(
            index, "PMID", f"{record.tag} without a numeric PMID (got {pmid_text!r})", _snippet(record)
        )
        return
    run.accept()
    article = citation.find("Article") if not book else citation
    doc_id = f"PMID:{pmid}"
    title = _text(article.find("ArticleTitle")) if article is not None else None
    if book and title is None:
        title = _text(_at(citation, "Book", "BookTitle"))
    year = _year(article) if article is not None and not book else None
    if book:
        year_text = _text_at(citation, "Book", "PubDate", "Year")
        year = parse_int(year_text.strip() if year_text else None, INT32_MAX)
    run.add(
        "documents",
        {
            "doc_id": doc_id,
            "pmid": pmid,
            "doi": _doi(record, article),
            "title": title,
            "abstract": _abstract(article),
            "year": year,
            "source": "pubmed",
            "mesh": _mesh(citation),
            "source_file": run.source_file,
        },
    )
    for reference in record.iter("Reference"):
        for article_id in _all(reference, "ArticleIdList", "ArticleId"):
            if article_id.get("IdType") != "pubmed":
                continue
            value = (article_id.text or "").strip()
            cited = parse_int(value)
            if cited is None:
                run.quarantine(
                    index,
                    "ReferenceList/ArticleId",
                    f"cited PubMed id is not numeric: {value!r} (citing {doc_id})",
                    value,
                )
                continue
            run.accept()
            run.add("citations", {"citing": doc_id, "cited": f"PMID:{cited}"})


def _snippet(record: ET.Element) -> str:
    return ET.tostring(record, encoding="unicode")[:2000]


# The root of NLM's baseline and update files (pubmed_250101.dtd): their records are its children.
PUBMED_ROOT = "PubmedArticleSet"


def read_pubmed_xml(source: InputFile, run: IngestRun) -> None:
    stream = source.binary()
    index = 0
    root: ET.Element | None = None
    depth = 0
    try:
        for event, element in ET.iterparse(stream, events=("start", "end")):
            if event == "start":
                if root is None:
                    root = element
                    if element.tag != PUBMED_ROOT:  # else every record would be skipped, and the file read as empty
                        raise IngestError(
                            f"{source.path}: the root element is <{element.tag}>, not <{PUBMED_ROOT}>: not a "
                            "PubMed baseline or update file (MEDLINE/PubMed XML)"
                        )
                depth += 1
                continue
            depth -= 1
            if depth != 1:  # only direct children of the root are records
                continue
            if element.tag in ("PubmedArticle", "PubmedBookArticle"):
                index += 1
                _article(element, index, run)
            elif element.tag == "DeleteCitation":
                for pmid_element in element.findall("PMID"):
                    index += 1
                    value = (pmid_element.text or "").strip()
                    pmid = parse_int(value)
                    if pmid is None:
                        run.quarantine(
                            index, "DeleteCitation/PMID", f"deleted PMID is not numeric: {value!r}", value
                        )
                        continue
                    run.accept()
                    run.add("deletions", {"doc_id": f"PMID:{pmid}", "source_file": run.source_file})
            root.clear()
    except ET.ParseError as exc:
        line, column = exc.position
        raise IngestError(
            f"{source.path}: broken XML at line {line}, column {column} after {index} records ({exc})"
        ) from exc
    if root is None:
        raise IngestError(f"{source.path}: empty XML file")


READERS = (Reader("pubmed_xml", produces=("documents", "citations", "deletions"), read=read_pubmed_xml),)
