# Over 600 lines: one writer per dump layout (SemMedDB x4, PubMed, CORD-19, OCC), each small, sharing one corpus model.
"""Synthetic literature corpus in the real dump layouts, for tests, ``make run`` and benchmarks.

:func:`generate_corpus` writes, deterministically for a seed:

* ``semmeddb/semmedVER43_R_{PREDICATION,SENTENCE,ENTITY}.csv.gz`` and
  ``semmedVER43_R_CITATIONS.csv`` -- no header, latin-1, ``"``-enclosed fields, ``\\N`` NULLs,
  backslash escapes (``\\'``, ``\\"``, ``\\\\``), commas inside names, CUI fields such as
  ``C0796614|931`` (CUI + gene id), ``6520`` (gene only) and ``3429|5715`` (two genes);
* ``pubmed/baseline/pubmed25nNNNN.xml.gz`` and ``pubmed/updatefiles/pubmed25nNNNN.xml.gz``
  -- MEDLINE XML with MeSH headings, ``ReferenceList`` citations and, in update files,
  revised records, new records and ``DeleteCitation`` (with two or more update files a PMID
  deleted by the first is re-added by the second);
* ``cord19/metadata.csv`` -- the CORD-19 header; rows overlap PubMed by ``pubmed_id``, by
  DOI only (DOI in other letter case), or not at all;
* ``citations/open_citation_collection.csv`` -- ``citing,referenced`` (NIH OCC layout).

``scale`` is the number of PREDICATION rows. The compact profile (the default): about ``scale /
5`` papers, about one sentence and two ENTITY rows per predication, concept frequencies following
a Zipf law over a vocabulary of about ``3 * scale**0.55`` concepts (dense: nearly every path one
hop at 30M). The calibrated profile (:mod:`pipeline.ingest.synth_release`): a sample of a
release-sized corpus, whose rows per predication, row sizes and concept graph follow a SemMedDB
release and the COAST paper's graph at every scale (tests/ingest/test_synth_release.py).
SemMedDB files are built column-wise with Arrow string kernels and streamed in chunks, so
10 million predications take bounded memory (the XML is written record by record).

Deliberate quirks that readers must quarantine are listed in the returned manifest under
``expected_quarantine`` (file name -> rows): PREDICATION rows with an invalid CUI field
(``1|medd``) and one OCC row with a non-numeric PMID. Everything else reads cleanly.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, BinaryIO
from xml.sax.saxutils import escape

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.synth_columns import binary as _binary
from pipeline.ingest.synth_columns import gzip_writer as _gzip_writer
from pipeline.ingest.synth_columns import join as _join
from pipeline.ingest.synth_columns import numbers as _numbers
from pipeline.ingest.synth_columns import write_lines as _write_lines
from pipeline.ingest.synth_release import MODEL, ReleaseSample
from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import Progress

PMID_BASE = 10_000_000
# "calibrated": a sample of a release-sized corpus (pipeline.ingest.synth_release), the yardsticks'
# profile; "compact": a small vocabulary that stays dense at a few thousand predications (tests and
# the bundled sample, whose comparison needs its anchors joined by paths).
PROFILES = ("calibrated", "compact")
DOCS_PER_PREDICATION = 5
CHUNK_DOCS = 50_000
PREDICATES = (
    ("PROCESS_OF", 14), ("LOCATION_OF", 10), ("TREATS", 9), ("INTERACTS_WITH", 9), ("PART_OF", 8),
    ("ASSOCIATED_WITH", 7), ("COEXISTS_WITH", 7), ("ISA", 6), ("AFFECTS", 5), ("CAUSES", 5),
    ("STIMULATES", 4), ("INHIBITS", 4), ("AUGMENTS", 3), ("ADMINISTERED_TO", 3), ("PREVENTS", 2),
    ("PREDISPOSES", 2), ("DIAGNOSES", 1), ("USES", 1), ("NEG_TREATS", 1),
)  # fmt: skip
SEMTYPES = (
    "dsyn",
    "aapp",
    "phsu",
    "orch",
    "celf",
    "patf",
    "neop",
    "bpoc",
    "humn",
    "topp",
    "fndg",
    "cell",
    "bacs",
)
SYLLABLES = ("ca", "lo", "mi", "ra", "te", "ne", "zo", "pri", "ly", "sta", "ven", "dor", "gal", "tri", "phe",
             "mor", "xi", "an", "cy", "to", "kin", "ase", "rol", "ium", "fen", "ola", "quin", "dro")  # fmt: skip
SUFFIXES = (
    "",
    "",
    "",
    " receptor",
    " syndrome",
    " protein",
    " disease",
    " cells",
    " inhibitor",
    " deficiency",
)
LATIN1_NAMES = ("Sjögren", "Ménière", "Behçet", "Grüneisen", "Gaßner", "Ångström", "Niño", "Sørensen")
CORD_HEADER = ("cord_uid", "sha", "source_x", "title", "doi", "pmcid", "pubmed_id", "license", "abstract",
               "publish_time", "authors", "journal", "mag_id", "who_covidence_id", "arxiv_id",
               "pdf_json_files", "pmc_json_files", "url", "s2_id")  # fmt: skip


def _mysql_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("'", "\\'")


class _Vocabulary:
    """Concepts with Zipf-distributed popularity and their preformatted CSV fields."""

    def __init__(
        self,
        rng: np.random.Generator,
        scale: int,
        anchors: list[tuple[str, str, str]] = (),
        *,
        size: int | None = None,
        calibrated: bool = False,
    ) -> None:
        """``size`` concepts (the compact profile: about 3 * scale**0.55). ``calibrated``: the
        release profile's vocabulary (:mod:`pipeline.ingest.synth_release`), where a concept's
        index is its popularity rank and popular concepts have short names, as in SemMedDB
        ("Patients", "Cells"), which is what makes its rows as long as a release's."""
        n = size if size is not None else max(60, int(3 * scale**0.55), 2 * len(anchors))
        self.n = n
        cui_numbers = rng.choice(9_999_999, size=n, replace=False) + 1
        kind = rng.choice(4, size=n, p=[0.85, 0.10, 0.04, 0.01])  # cui | cui+gene | gene | two genes
        gene_ids = rng.choice(max(400_000, 4 * n), size=2 * n, replace=False) + 1
        self.keys: list[list[str]] = []
        self.names: list[list[str]] = []
        self.semtypes: list[str] = []
        cui_fields, gene_fields, gene_names = [], [], []
        for i in range(n):
            name = self._name(rng, i, self._syllables(i, calibrated), calibrated)
            cui = f"C{cui_numbers[i]:07d}"
            g1, g2 = int(gene_ids[2 * i]), int(gene_ids[2 * i + 1])
            symbol = name.split(" ")[0].upper()[:6] + str(i % 10)
            if i < len(anchors):
                # A real concept (e.g. one the bundled SPOKE sample maps), used as given.
                anchor_cui, anchor_name, anchor_semtype = anchors[i]
                keys, field, names, semtype, gene, gname = (
                    [anchor_cui],
                    anchor_cui,
                    [anchor_name],
                    anchor_semtype,
                    None,
                    None,
                )
            elif kind[i] == 0:
                keys, field, names, semtype, gene, gname = (
                    [cui],
                    cui,
                    [name],
                    SEMTYPES[i % len(SEMTYPES)],
                    None,
                    None,
                )
            elif kind[i] == 1:
                keys, field, names, semtype, gene, gname = (
                    [cui],
                    f"{cui}|{g1}",
                    [name],
                    "gngm",
                    str(g1),
                    symbol,
                )
            elif kind[i] == 2:
                keys, field, names, semtype, gene, gname = (
                    [f"GENE:{g1}"],
                    str(g1),
                    [symbol],
                    "gngm",
                    str(g1),
                    symbol,
                )
            else:
                other = symbol[:-1] + "B"
                keys, field, names = [f"GENE:{g1}", f"GENE:{g2}"], f"{g1}|{g2}", [symbol, other]
                semtype, gene, gname = "gngm", f"{g1}|{g2}", f"{symbol}|{other}"
            self.keys.append(keys)
            self.names.append(names)
            self.semtypes.append(semtype)
            cui_fields.append(field)
            gene_fields.append(gene)
            gene_names.append(gname)
        display = ["|".join(n_) for n_ in self.names]
        novelty = ["0" if i % 17 == 0 else "1" for i in range(n)]  # a few generic concepts
        enc = [(_mysql_escape(d)).encode("latin-1") for d in display]
        self.name_field = _binary(enc)
        self.predication_block = _binary(
            [
                b'"%s","%s","%s","%s"'
                % (cui_fields[i].encode(), enc[i], self.semtypes[i].encode(), novelty[i].encode())
                for i in range(n)
            ]
        )
        gene_only = [i >= len(anchors) and kind[i] in (2, 3) for i in range(n)]  # anchors are CUIs
        self.entity_block = _binary(
            [
                b'%s,"%s","%s",%s,%s,"%s"'
                % (
                    b"\\N" if gene_only[i] else b'"' + cui_fields[i].encode() + b'"',
                    enc[i],
                    self.semtypes[i].encode(),
                    b"\\N" if gene_fields[i] is None else b'"' + gene_fields[i].encode() + b'"',
                    b"\\N" if gene_names[i] is None else b'"' + gene_names[i].encode() + b'"',
                    enc[i],
                )
                for i in range(n)
            ]
        )
        # The fields the calibrated profile lays out its own way (synth_release).
        self.cui_fields, self.gene_fields, self.gene_names = cui_fields, gene_fields, gene_names
        self.encoded_names, self.novelty, self.gene_only = enc, novelty, gene_only
        ranks = np.arange(1, n + 1, dtype=np.float64)
        weights = 1.0 / ranks
        self.cdf = np.cumsum(weights / weights.sum())
        # Anchors take every other rank among the most frequent concepts, so they co-occur
        # often enough to be joined by literature paths even in a small sample.
        others = np.arange(len(anchors), n) if calibrated else rng.permutation(np.arange(len(anchors), n))
        order = list(others)
        for i in range(len(anchors)):
            order.insert(2 * i, i)
        self.rank_to_concept = np.asarray(order[:n], dtype=np.int64)

    @staticmethod
    def _syllables(i: int, calibrated: bool) -> int:
        """Syllables of the name of concept ``i``: 2-3; in the calibrated profile (where i is the
        popularity rank) 1 among the 3,000 most frequent concepts, 1-2 among the 20,000 most frequent,
        2-4 for the rest: SemMedDB's frequent concepts have short names."""
        if not calibrated:
            return 2 + i % 2
        return 1 if i < 3_000 else 1 + i % 2 if i < 20_000 else 2 + i % 3

    @staticmethod
    def _name(rng: np.random.Generator, i: int, syllables: int, calibrated: bool = False) -> str:
        stem = "".join(SYLLABLES[j] for j in rng.integers(0, len(SYLLABLES), size=syllables)).capitalize()
        # The calibrated profile's frequent concepts are single words ("Patients", "Cells").
        name = stem + ("" if calibrated and i < 20_000 else SUFFIXES[i % len(SUFFIXES)])
        if i % 19 == 3:
            name = f"{LATIN1_NAMES[i % len(LATIN1_NAMES)]} {name.lower()}"
        if i % 23 == 5:
            name = f"{name}, familial"
        if i % 29 == 7:
            name = f"{stem}'s {name.lower()}"
        if i % 31 == 11:
            name = f'"{name}" variant'
        if i % 97 == 13:
            name = f"{name}\\type 2"
        return name

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        ranks = np.searchsorted(self.cdf, rng.random(size), side="right")
        return self.rank_to_concept[np.minimum(ranks, self.n - 1)]

    def text(self, concept: int) -> str:
        return " and ".join(self.names[concept])


def _xml_article(
    pmid: int, title: str, abstract: str, year: int, doi: str, mesh: list[tuple[str, str]], refs: list[int]
) -> str:
    mesh_xml = "".join(
        f'<MeshHeading><DescriptorName UI="{ui}" MajorTopicYN="N">{escape(name)}</DescriptorName></MeshHeading>'
        for ui, name in mesh
    )
    refs_xml = ""
    if refs:
        refs_xml = (
            "<ReferenceList>"
            + "".join(
                f"<Reference><Citation>Ref {r}.</Citation><ArticleIdList>"
                f'<ArticleId IdType="pubmed">{r}</ArticleId></ArticleIdList></Reference>'
                for r in refs
            )
            + "</ReferenceList>"
        )
    return (
        f'<PubmedArticle>\n<MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">{pmid}</PMID>'
        f'<Article PubModel="Print"><Journal><JournalIssue CitedMedium="Print"><PubDate><Year>{year}</Year>'
        f"</PubDate></JournalIssue><Title>Journal of Synthetic Medicine</Title></Journal>"
        f"<ArticleTitle>{escape(title)}</ArticleTitle>"
        f'<ELocationID EIdType="doi" ValidYN="Y">{doi}</ELocationID>'
        f'<Abstract><AbstractText Label="BACKGROUND">{escape(abstract)}</AbstractText></Abstract>'
        f"<Language>eng</Language></Article>"
        f"<MeshHeadingList>{mesh_xml}</MeshHeadingList></MedlineCitation>"
        f'<PubmedData><ArticleIdList><ArticleId IdType="pubmed">{pmid}</ArticleId>'
        f'<ArticleId IdType="doi">{doi}</ArticleId></ArticleIdList>{refs_xml}</PubmedData>\n</PubmedArticle>\n'
    )


_XML_HEAD = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
    '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n<PubmedArticleSet>\n'
)


class _Corpus:
    def __init__(
        self,
        out_dir: Path,
        scale: int,
        seed: int,
        n_update_files: int,
        anchors: list[tuple[str, str, str]] = (),
        profile: str = "calibrated",
        n_citation_updates: int = 0,
    ) -> None:
        if scale < 1:
            raise ValueError("scale must be >= 1")
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
        self.out = Path(out_dir)
        self.scale = scale
        self.profile = profile
        self.rng = np.random.default_rng(seed)
        self.n_update_files = n_update_files
        self.n_citation_updates = n_citation_updates
        self.release: ReleaseSample | None = None
        if profile == "calibrated":
            size = max(MODEL.concept_universe, 2 * len(anchors))
            self.vocab = _Vocabulary(self.rng, scale, list(anchors), size=size, calibrated=True)
            self.release = ReleaseSample(self.rng, scale, self.vocab)
            self.n_docs = self.release.n_docs
        else:
            self.vocab = _Vocabulary(self.rng, scale, list(anchors))
            self.n_docs = max(20, scale // DOCS_PER_PREDICATION)
        self.pmids = (
            PMID_BASE + np.arange(self.n_docs, dtype=np.int64) * 3 + self.rng.integers(0, 3, self.n_docs)
        )
        self.years = (
            1990 + np.arange(self.n_docs) * 35 // self.n_docs + self.rng.integers(0, 2, self.n_docs)
        ).astype(np.int64)
        if self.release is not None:
            self.preds_per_doc = self.release.predications_per_paper
            self.has_reference_list = self.rng.random(self.n_docs) < 0.5
            self.ref_owner = self.release.ref_owner
            self.ref_cited = self.pmids[self.release.ref_cited]
            self.ref_offsets = np.searchsorted(self.ref_owner, np.arange(self.n_docs + 1))
        else:
            self.preds_per_doc = self.rng.multinomial(scale, np.full(self.n_docs, 1.0 / self.n_docs))
            self.has_reference_list = self.rng.random(self.n_docs) < 0.5
            self._draw_references()
        self.expected_quarantine: dict[str, int] = {}
        self.files: list[dict[str, str]] = []
        self.stats: dict[str, int] = {}
        predicate_weights = np.array([w for _, w in PREDICATES], dtype=np.float64)
        self.predicate_p = predicate_weights / predicate_weights.sum()
        self.predicate_field = _binary([f'"{p}"'.encode() for p, _ in PREDICATES])
        self.predicate_text = _binary([p.lower().replace("_", " ").encode() for p, _ in PREDICATES])
        # the first concept of each paper gives its title and MeSH; filled while writing SemMedDB
        self.doc_topic = np.zeros(self.n_docs, dtype=np.int64)
        self.progress = Progress("litpath synth", scale, "predications")

    def doi(self, pmid: int) -> str:
        return f"10.5555/synth.{pmid}"

    def record(self, kind: str, path: Path) -> None:
        self.files.append({"kind": kind, "path": str(path.relative_to(self.out))})

    # --- SemMedDB -------------------------------------------------------------------------
    def semmeddb(self) -> None:
        folder = self.out / "semmeddb"
        folder.mkdir(parents=True, exist_ok=True)
        paths = {
            name: folder / f"semmedVER43_R_{name}.csv.gz" for name in ("PREDICATION", "SENTENCE", "ENTITY")
        }
        paths["CITATIONS"] = folder / "semmedVER43_R_CITATIONS.csv"
        streams: dict[str, BinaryIO] = {
            name: _gzip_writer(path, fast=self.release is not None) for name, path in paths.items() if name != "CITATIONS"
        }
        streams["CITATIONS"] = open(paths["CITATIONS"], "wb")  # noqa: SIM115 - closed below
        n_bad = max(1, self.scale // 200_000)
        if self.release is not None:
            try:
                self._release_semmeddb(streams, n_bad)
            finally:
                for stream in streams.values():
                    stream.close()
            self._record_semmeddb(paths, n_bad)
            return
        predication_id = 0
        entity_id = 0
        try:
            for start in range(0, self.n_docs, CHUNK_DOCS):
                stop = min(self.n_docs, start + CHUNK_DOCS)
                counts = self.preds_per_doc[start:stop]
                doc = np.repeat(np.arange(start, stop), counts)
                n = len(doc)
                self._citations_rows(streams["CITATIONS"], start, stop)
                if n == 0:
                    continue
                subject = self.vocab.sample(self.rng, n)
                obj = self.vocab.sample(self.rng, n)
                obj = np.where(obj == subject, (obj + 1) % self.vocab.n, obj)
                first_of_doc = np.r_[0, np.cumsum(counts)[:-1]][counts > 0]
                self.doc_topic[start:stop][counts > 0] = subject[first_of_doc]
                predicate = self.rng.choice(len(PREDICATES), size=n, p=self.predicate_p)
                sentence_number = self.rng.integers(0, 8, n)
                sentence_id = doc.astype(np.int64) * 10 + sentence_number + 1
                pids = np.arange(predication_id + 1, predication_id + n + 1, dtype=np.int64)
                predication_id += n
                pmid = _numbers(self.pmids[doc])
                lines = _join(
                    b'"', _numbers(pids), b'","', _numbers(sentence_id), b'","', pmid, b'",',
                    pc.take(self.predicate_field, pa.array(predicate)), b",",
                    pc.take(self.vocab.predication_block, pa.array(subject)), b",",
                    pc.take(self.vocab.predication_block, pa.array(obj)), b",\\N,\\N,\\N\n",
                )  # fmt: skip
                _write_lines(streams["PREDICATION"], lines)

                # one SENTENCE row per distinct sentence, stating every predication read from it
                # ("A treats B; C causes D."), so that each quoted sentence names its hop's concepts
                unique_sentences, first = np.unique(sentence_id, return_index=True)
                numbers = sentence_number[first]
                clauses = _join(
                    pc.take(self.vocab.name_field, pa.array(subject)), b" ",
                    pc.take(self.predicate_text, pa.array(predicate)), b" ",
                    pc.take(self.vocab.name_field, pa.array(obj)),
                )  # fmt: skip
                in_sentence_order = np.argsort(sentence_id, kind="stable")  # each sentence's clauses in row order
                per_sentence = np.bincount(np.searchsorted(unique_sentences, sentence_id), minlength=len(unique_sentences))
                offsets = pa.array(np.r_[0, np.cumsum(per_sentence)].astype(np.int32))
                grouped = pa.ListArray.from_arrays(offsets, pc.take(clauses, pa.array(in_sentence_order)))
                text = _join(pc.binary_join(grouped, b"; "), b".")
                types = pc.take(_binary([b'"ti"', b'"ab"']), pa.array(np.minimum(numbers, 1)))
                sentence_lines = _join(
                    b'"', _numbers(unique_sentences), b'","', _numbers(self.pmids[doc[first]]), b'",', types,
                    b',"', _numbers(numbers), b'","0","', text, b'","', _numbers(pc.binary_length(text).to_numpy()),
                    b'",\\N,\\N\n',
                )  # fmt: skip
                _write_lines(streams["SENTENCE"], sentence_lines)

                # ENTITY: subject and object of every predication are entities of its sentence
                concepts = np.concatenate([subject, obj])
                entity_sentence = np.concatenate([sentence_id, sentence_id])
                eids = np.arange(entity_id + 1, entity_id + 2 * n + 1, dtype=np.int64)
                entity_id += 2 * n
                entity_lines = _join(
                    b'"', _numbers(eids), b'","', _numbers(entity_sentence), b'",',
                    pc.take(self.vocab.entity_block, pa.array(concepts)), b',"1000","0","12"\n',
                )  # fmt: skip
                _write_lines(streams["ENTITY"], entity_lines)

                if start == 0:  # the deliberate quirk: invalid CUI fields
                    bad = b"".join(
                        b'"%d","%d","%d","TREATS","1|medd","Medd","dsyn","1","C0000001","X","dsyn","1",\\N,\\N,\\N\n'
                        % (900_000_000 + k, int(sentence_id[0]), int(self.pmids[0]))
                        for k in range(n_bad)
                    )
                    streams["PREDICATION"].write(bad)
        finally:
            for stream in streams.values():
                stream.close()
        self.stats.update(predications=predication_id, entities=entity_id, concepts=self.vocab.n)
        self._record_semmeddb(paths, n_bad)

    def _record_semmeddb(self, paths: dict[str, Path], n_bad: int) -> None:
        self.expected_quarantine[paths["PREDICATION"].name] = n_bad
        for name, kind in (("CITATIONS", "semmeddb_citations"), ("SENTENCE", "semmeddb_sentence"),
                           ("ENTITY", "semmeddb_entity"), ("PREDICATION", "semmeddb_predication")):  # fmt: skip
            self.record(kind, paths[name])

    def _release_semmeddb(self, streams: dict[str, BinaryIO], n_bad: int) -> None:
        """The calibrated profile's SemMedDB tables (:meth:`ReleaseSample.write_semmeddb`), after
        the deliberately invalid CUI fields that the reader must quarantine."""
        release = self.release
        sentence = int(release.first_sentence[0]) + 1
        streams["PREDICATION"].write(b"".join(
            b'%d,%d,%d,"TREATS","1|medd","Medd","dsyn","1","C0000001","X","dsyn","1"\n'
            % (900_000_000 + k, sentence, int(self.pmids[0])) for k in range(n_bad)
        ))  # fmt: skip
        self.progress.stage("SemMedDB")
        rows = release.write_semmeddb(streams, self.pmids, self.years,
                                      (self.predicate_p, self.predicate_field, self.predicate_text), self.progress)  # fmt: skip
        self.doc_topic = release.doc_topic
        self.stats.update(predications=rows["predications"], sentences=rows["sentences"], entities=rows["entities"],
                          concepts=self.vocab.n, papers=self.n_docs,
                          papers_with_predications=len(release.papers_with_predications))  # fmt: skip

    def _citations_rows(self, stream: BinaryIO, start: int, stop: int) -> None:
        index = np.arange(start, stop)
        issn = pc.take(_binary([b'"0028-4793"', b"\\N", b'"1474-547X"']), pa.array(index % 3))
        lines = _join(
            b'"', _numbers(self.pmids[start:stop]), b'",', issn, b',"', _numbers(self.years[start:stop]),
            b'0115","', _numbers(self.years[start:stop]), b'/01/10 00:00","', _numbers(self.years[start:stop]), b'"\n',
        )  # fmt: skip
        _write_lines(stream, lines)

    # --- citations ------------------------------------------------------------------------
    def references(self, doc: int) -> list[int]:
        """PMIDs of the earlier papers that ``doc`` cites (see ``_draw_references``)."""
        return self.ref_cited[self.ref_offsets[doc] : self.ref_offsets[doc + 1]].tolist()

    def _draw_references(self) -> None:
        """About three references per paper, to earlier papers, old papers cited more."""
        k = self.rng.poisson(3, self.n_docs)
        k[0] = 0
        owner = np.repeat(np.arange(self.n_docs, dtype=np.int64), k)
        cited = (owner * self.rng.random(len(owner)) ** 2).astype(np.int64)
        order = np.lexsort((cited, owner))
        owner, cited = owner[order], cited[order]
        keep = np.ones(len(owner), dtype=bool)
        keep[1:] = (owner[1:] != owner[:-1]) | (cited[1:] != cited[:-1])
        self.ref_owner = owner[keep]
        self.ref_cited = self.pmids[cited[keep]]
        self.ref_offsets = np.searchsorted(self.ref_owner, np.arange(self.n_docs + 1))

    # --- PubMed ---------------------------------------------------------------------------
    def _article(self, doc: int, pmid: int, year: int, revised: bool = False) -> str:
        topic = int(self.doc_topic[doc]) if doc < self.n_docs else doc % self.vocab.n
        other = (topic * 7 + 3) % self.vocab.n
        title = f"{self.vocab.text(topic)} in patients with {self.vocab.text(other)}: cohort {doc}"
        if revised:
            title = "[Revised] " + title
        abstract = f"We studied {self.vocab.text(topic)} (β-analysis) and {self.vocab.text(other)} in {10 + doc % 90} patients."
        mesh = [
            (f"D{100000 + topic:06d}", self.vocab.text(topic)),
            (f"D{100000 + other:06d}", self.vocab.text(other)),
        ]
        refs = self.references(doc) if doc < self.n_docs and self.has_reference_list[doc] else []
        return _xml_article(pmid, title, abstract, year, self.doi(pmid), mesh, refs)

    def pubmed(self) -> None:
        baseline = self.out / "pubmed" / "baseline"
        baseline.mkdir(parents=True, exist_ok=True)
        per_file = min(30_000, max(100, math.ceil(self.n_docs / 2)))
        file_number = 0
        progress = Progress("litpath synth PubMed", self.n_docs, "papers")
        for start in range(0, self.n_docs, per_file):
            file_number += 1
            path = baseline / f"pubmed25n{file_number:04d}.xml.gz"
            with _gzip_writer(path, fast=self.release is not None) as stream, io.TextIOWrapper(stream, encoding="utf-8") as text:
                text.write(_XML_HEAD)
                for doc in range(start, min(self.n_docs, start + per_file)):
                    text.write(self._article(doc, int(self.pmids[doc]), int(self.years[doc])))
                text.write("</PubmedArticleSet>\n")
            self.record("pubmed_xml", path)
            progress.update(min(self.n_docs, start + per_file))
        progress.finish(f"{file_number} baseline files")
        self.baseline_files = file_number

    def pubmed_updates(self) -> None:
        updates = self.out / "pubmed" / "updatefiles"
        updates.mkdir(parents=True, exist_ok=True)
        if self.release is not None:
            n_new, n_revised, n_deleted = self.release.update_sizes()
        else:
            n_new, n_revised, n_deleted = max(2, self.n_docs // 50), max(1, self.n_docs // 100), max(1, self.n_docs // 200)
        next_pmid = int(self.pmids[-1]) + 10
        previously_deleted: list[int] = []
        deleted_total = readded = 0
        for u in range(self.n_update_files):
            rng = np.random.default_rng([u, 11, int(self.pmids[0])])
            path = updates / f"pubmed25n{self.baseline_files + u + 1:04d}.xml.gz"
            revised = np.sort(rng.choice(self.n_docs, size=min(n_revised, self.n_docs), replace=False))
            deleted = np.sort(rng.choice(self.n_docs, size=min(n_deleted, self.n_docs), replace=False))
            deleted = deleted[~np.isin(deleted, revised)]
            with _gzip_writer(path, fast=self.release is not None) as stream, io.TextIOWrapper(stream, encoding="utf-8") as text:
                text.write(_XML_HEAD)
                for doc in revised:
                    text.write(
                        self._article(int(doc), int(self.pmids[doc]), int(self.years[doc]), revised=True)
                    )
                for doc in previously_deleted:  # re-added by this later update file
                    text.write(self._article(doc, int(self.pmids[doc]), int(self.years[doc]), revised=True))
                    readded += 1
                for k in range(n_new):
                    text.write(self._article(self.n_docs + u * n_new + k, next_pmid, 2025))
                    next_pmid += 3
                text.write("<DeleteCitation>\n")
                for doc in deleted:
                    text.write(f'<PMID Version="1">{int(self.pmids[doc])}</PMID>\n')
                text.write("</DeleteCitation>\n</PubmedArticleSet>\n")
            deleted_total += len(deleted)
            previously_deleted = [int(d) for d in deleted[:1]]
            self.record("pubmed_xml", path)
        self.stats.update(update_files=self.n_update_files, deleted=deleted_total, readded=readded)

    # --- CORD-19 and OCC ------------------------------------------------------------------
    def cord19(self) -> None:
        folder = self.out / "cord19"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "metadata.csv"
        n = max(6, self.n_docs // 10)
        rng = np.random.default_rng([int(self.pmids[0]), 19])
        docs = np.sort(rng.choice(self.n_docs, size=min(n, self.n_docs), replace=False))
        alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
        with open(path, "w", encoding="utf-8", newline="") as stream:
            writer = csv.writer(stream, lineterminator="\n")
            writer.writerow(CORD_HEADER)
            for i, doc in enumerate(docs):
                uid = "".join(rng.choice(alphabet, 8))
                mode = i % 3  # 0: has pubmed_id, 1: DOI match only, 2: CORD-only paper
                pmid = int(self.pmids[doc])
                doi = self.doi(pmid) if mode < 2 else f"10.1101/2020.{i:06d}"
                if mode == 1:
                    doi = doi.upper()
                title = f"SARS-CoV-2 and {self.vocab.text(int(self.doc_topic[doc]))}: report {i}"
                writer.writerow(
                    [uid, "", "Medline; PMC" if mode < 2 else "biorxiv", title, doi, "", str(pmid) if mode == 0 else "",
                     "cc-by", f"Abstract, with \"quotes\" and a line\nbreak ({i}).", f"{self.years[doc]}-03-0{1 + i % 9}",
                     "Doe, J.; Roe, R.", "Synthetic Journal", "", "", "", "", "", "https://example.org", ""]
                )  # fmt: skip
        self.stats["cord19_rows"] = len(docs)
        self.record("cord19_metadata", path)

    def open_citations(self) -> None:
        folder = self.out / "citations"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "open_citation_collection.csv"
        with open(path, "wb") as stream:
            stream.write(b"citing,referenced\n")
            for start in range(0, len(self.ref_owner), 1_000_000):
                owner = self.ref_owner[start : start + 1_000_000]
                cited = self.ref_cited[start : start + 1_000_000]
                _write_lines(stream, _join(_numbers(self.pmids[owner]), b",", _numbers(cited), b"\n"))
            rows = len(self.ref_owner)
            stream.write(b"PMC7102012,31978945\n")  # the deliberate quirk: not a PMID
        self.stats["citations_csv_rows"] = rows
        self.expected_quarantine[path.name] = 1
        self.record("citations_table", path)
        for u in range(self.n_citation_updates):
            rng = np.random.default_rng([u, 23, int(self.pmids[0])])
            citing, cited = self.release.citation_update(rng) if self.release is not None else self._citation_update(rng)
            path = folder / f"open_citation_collection_update_{u + 1:02d}.csv"
            with open(path, "wb") as stream:
                stream.write(b"citing,referenced\n")
                _write_lines(stream, _join(_numbers(self.pmids[citing]), b",", _numbers(self.pmids[cited]), b"\n"))
            self.stats[f"citation_update_{u + 1:02d}_rows"] = len(citing)
            self.record("citations_table", path)

    def _citation_update(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(citing, cited) paper indexes of an extra citation file of the compact profile."""
        n = max(1, len(self.ref_owner) // 20)
        owner = rng.integers(1, self.n_docs, n)
        return owner, (owner * rng.random(n)).astype(np.int64)


def read_anchor_concepts(path: Path) -> list[tuple[str, str, str]]:
    """Anchor concepts from a TSV with a header ``cui<TAB>name<TAB>semtype``."""
    anchors = []
    with Path(path).open(encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        if header != ["cui", "name", "semtype"]:
            raise ValueError(f"{path}:1: expected the header cui, name, semtype; found {header}")
        for number, line in enumerate(handle, start=2):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3 or not fields[0].startswith("C") or not fields[0][1:].isdigit():
                raise ValueError(f"{path}:{number}: expected cui<TAB>name<TAB>semtype, found {line!r}")
            anchors.append((fields[0], fields[1], fields[2]))
    return anchors


def generate_corpus(
    out_dir: Path,
    scale: int,
    seed: int = 0,
    n_update_files: int = 1,
    anchors: list[tuple[str, str, str]] = (),
    *,
    profile: str = "compact",
    n_citation_updates: int = 0,
) -> dict[str, Any]:
    """Write a synthetic corpus in every input layout under ``out_dir``; return its manifest.

    ``anchors`` are real concepts (cui, name, semantic type) placed among the most frequent
    ones, so that a sample can share CUIs with a real vocabulary or SPOKE sample.

    ``profile`` (:data:`PROFILES`): ``"calibrated"`` draws a sample of a release-sized corpus
    (:mod:`pipeline.ingest.synth_release`; ``litpath synth --profile calibrated``, the
    yardsticks' profile); ``"compact"``, the default, a small dense corpus for tests and the
    bundled sample.
    ``n_citation_updates`` extra OCC files of new citation pairs follow the first.

    The manifest (also written as ``manifest.json``) lists the files in ingest order
    (``files``: kind + path relative to ``out_dir``), the rows each file's reader must
    quarantine (``expected_quarantine``) and generation statistics.
    """
    corpus = _Corpus(Path(out_dir), scale, seed, n_update_files, anchors, profile, n_citation_updates)
    corpus.out.mkdir(parents=True, exist_ok=True)
    corpus.semmeddb()
    corpus.progress.finish(f"SemMedDB tables of {corpus.stats['predications']:,} predications written")
    corpus.pubmed()
    corpus.cord19()
    corpus.open_citations()
    corpus.pubmed_updates()
    manifest = {
        "generator": "litpath.synth",
        # the compact profile's manifest is as it was before profiles existed (the bundled sample's)
        **({"profile": profile} if profile != "compact" else {}),
        "scale": scale,
        "seed": seed,
        "n_update_files": n_update_files,
        **({"n_citation_updates": n_citation_updates} if n_citation_updates else {}),
        "anchors": [cui for cui, _, _ in anchors],
        "files": corpus.files,
        "expected_quarantine": corpus.expected_quarantine,
        "stats": corpus.stats,
    }
    write_atomically(corpus.out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return manifest


def write_corpus_config(corpus_dir: Path, manifest: dict[str, Any], base: Path, out: Path) -> Path:
    """A workflow config for a generated corpus: ``base``'s settings, its inputs replaced by the
    corpus files (paths as given, relative to the working directory like any config's)."""
    import yaml

    from pipeline.config import read_yaml

    config = read_yaml(Path(base).read_text()) or {}
    inputs: dict[str, list[str]] = {}
    for entry in manifest["files"]:
        inputs.setdefault(entry["kind"], []).append(str(Path(corpus_dir) / entry["path"]))
    config["inputs"] = inputs
    copied = _copy_sample_references(config, Path(corpus_dir) / "reference")
    header = (
        f"# Workflow config for the synthetic corpus in {corpus_dir} ({manifest['scale']:,} predications,\n"
        f"# seed {manifest['seed']}), written by `litpath synth --config-out`; every other setting is\n"
        f"# {base}'s (see it for what each key means)"
        + (f", its {copied} bundled-sample reference files (SPOKE, mapping,\n# query set) copied under "
           f"{Path(corpus_dir) / 'reference'}.\n" if copied else ".\n")
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, header + yaml.safe_dump(config, sort_keys=False))
    return out


def _copy_sample_references(config: dict[str, Any], into: Path) -> int:
    """Copy the files the config names under config/sample/ (SPOKE, the mapping sources, the
    query set) into ``into`` and point the config at the copies; returns how many were copied.

    The corpus's config is a config of its own, which the workflow refuses to let name sample
    files (pipeline.config.refuse_sample_files): the copies are the corpus's reference data.
    """
    import shutil

    from pipeline.config import SAMPLE_DIR, file_settings

    sample = SAMPLE_DIR.resolve()
    copied = 0
    for key, value in file_settings(config):
        if key.startswith("inputs."):
            continue
        source = Path(value) if Path(value).is_absolute() else Path.cwd() / value
        source = source.resolve()
        if not (source == sample or sample in source.parents) or not source.exists():
            continue
        target = into / source.relative_to(sample)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
        section, name = key.split(".")
        current = config[section][name]
        config[section][name] = (
            [str(target) if v == value else v for v in current] if isinstance(current, list) else str(target)
        )
        copied += 1
    return copied

