"""The calibrated profile of ``litpath synth`` (``--profile calibrated``): every corpus is a sample
of one release-sized corpus.

A corpus of ``scale`` predications is drawn as if it were the papers of a ``scale /
126,268,045`` sample of a full SemMedDB release, whose figures this module is fitted to:

* **A SemMedDB release** (the load log of a recent release, quoted in issue 27): 126,268,045
  PREDICATION rows (13.0 GB of CSV), 253,029,872 SENTENCE rows (43.2 GB), 1,887,317,669 ENTITY
  rows (137.7 GB) and 36,151,516 CITATIONS rows (1.4 GB). These fix the rows of each table per
  predication (:data:`PER_PREDICATION`) and the bytes of a row (:data:`CSV_BYTES_PER_ROW`).
* **The COAST paper's graph** (Kannan et al., SC22, appendix XI-E): "over 290,000 unique
  concepts", "18.5 million vertices and 213 million relations ... 14 million relations between
  concepts, 196 million relations between papers and concepts, and 3 million citation relations
  between papers". These fix the papers that have predications (18.5M vertices less the 290k
  concepts: 18.2M abstracts), the paper--concept relations per predication, the citations per
  predication, and, at the full size, the concepts and the concept pairs
  (:data:`PAPER_GRAPH`, :func:`expected_graph`).

The two sources are not the same release (the paper's SemMedDB is older), so the model takes
the paper's graph as what a release of the issue's size would give; the docs say so.

The model (its parameters, :data:`MODEL`, were fitted by :func:`fit_summary` at the full size;
the result is in docs/design.md §3):

* concepts: a universe of ``concept_universe`` concepts with Zipf popularity (exponent 1);
* concept pairs: a universe of ``pair_universe`` ranked pairs with Zipf popularity (exponent 1);
  pair rank r joins two concepts drawn from the concept popularity by a hash of r
  (:func:`pair_concepts`), so popular concepts meet in many pairs and the concept graph of a
  sample is as dense as that sample of the release would be;
* papers: 18.2M of the 36.2M CITATIONS papers have predications, 6.93 on average; within a
  paper a predication restates an earlier one of the same paper (the same pair) with
  probability ``repeat``, which is what makes 126M predications give 196M (not 240M)
  paper--concept relations;
* sentences: one title sentence plus an abstract; predications sit in the sentences of their
  paper; ENTITY rows are the arguments of each sentence's predications plus further concept
  mentions drawn from the concept popularity, so that there are 14.95 per predication.

Only the vocabulary (names, CUI fields) is shared with the compact profile
(:class:`pipeline.ingest.synth._Vocabulary`); the writers of the other dumps (PubMed, CORD-19,
OCC) take this profile's papers, references and update sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.runtime.columnar import distinct_sorted

# --- the figures the profile is fitted to -----------------------------------------------------

RELEASE_ROWS = {
    "PREDICATION": 126_268_045,
    "SENTENCE": 253_029_872,
    "ENTITY": 1_887_317_669,
    "CITATIONS": 36_151_516,
}
RELEASE_CSV_BYTES = {"PREDICATION": 13.0e9, "SENTENCE": 43.2e9, "ENTITY": 137.7e9, "CITATIONS": 1.4e9}
CSV_BYTES_PER_ROW = {table: RELEASE_CSV_BYTES[table] / rows for table, rows in RELEASE_ROWS.items()}
PAPER_GRAPH = {
    "concepts": 290_000,
    "concept_concept": 14_000_000,
    "paper_concept": 196_000_000,
    "citation": 3_000_000,
    "vertices": 18_500_000,
}
RELEASE_PREDICATIONS = RELEASE_ROWS["PREDICATION"]
# Rows and relations per predication: the same at every scale.
PER_PREDICATION = {
    "papers": RELEASE_ROWS["CITATIONS"] / RELEASE_PREDICATIONS,  # 0.286
    "papers_with_predications": (PAPER_GRAPH["vertices"] - PAPER_GRAPH["concepts"]) / RELEASE_PREDICATIONS,  # 0.144
    "sentences": RELEASE_ROWS["SENTENCE"] / RELEASE_PREDICATIONS,  # 2.00
    "entities": RELEASE_ROWS["ENTITY"] / RELEASE_PREDICATIONS,  # 14.95
    "paper_concept": PAPER_GRAPH["paper_concept"] / RELEASE_PREDICATIONS,  # 1.55
    "citation": PAPER_GRAPH["citation"] / RELEASE_PREDICATIONS,  # 0.024
}


@dataclass(frozen=True)
class ReleaseModel:
    """The parameters of the sample model (see the module docstring)."""

    concept_universe: int
    pair_universe: int
    repeat: float  # probability that a predication restates an earlier one of its paper
    # Sentences of a paper without predications (a title, a short abstract or none), beyond the title.
    abstract_sentences_without_predications: float = 2.0
    # Each PubMed update file: this many records at most (NLM's files hold tens of thousands; a
    # daily update of the 36M-paper baseline), else 2 % of the papers; 60 % of them new papers,
    # 40 % revisions, and deletions of 1 % as many papers.
    update_records: int = 30_000
    update_fraction: float = 0.02
    update_new_share: float = 0.6
    update_deleted_share: float = 0.01
    # Each extra OCC citation file: this share of the corpus's citation pairs, new.
    citation_update_share: float = 0.05


# Fitted at the full size (126,268,045 predications) by fit_summary(), 270 s on AMD EPYC: 290,000
# concepts (the paper: 290k), 196.3M paper-concept relations (196M), 13.98M concept pairs (14M).
# A pair universe of 100M gave 9.56M pairs, 800M gave 13.33M; docs/design.md §3 records the fit.
MODEL = ReleaseModel(concept_universe=290_000, pair_universe=1_200_000_000, repeat=0.217)


# --- the pair universe ------------------------------------------------------------------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a well-mixed 64-bit hash of each value (uint64 wraps around)."""
    z = values.astype(np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _unit(hashed: np.ndarray) -> np.ndarray:
    """A uniform double in [0, 1) from the top 53 bits of each hash."""
    return (hashed >> np.uint64(11)).astype(np.float64) * 2.0**-53


def zipf_ranks(uniform: np.ndarray, universe: int) -> np.ndarray:
    """Ranks 0..universe-1 with probability ~ 1/(rank+1) (Zipf, exponent 1), by the inverse of
    the continuous distribution: rank = floor((universe+1)^u) - 1. :func:`pair_rank_probability`
    is its exact probability per rank."""
    return np.minimum(np.floor(np.exp(uniform * np.log(universe + 1.0))).astype(np.int64) - 1, universe - 1)


def pair_rank_probability(ranks: np.ndarray, universe: int) -> np.ndarray:
    """P(zipf_ranks gives rank r) = log((r+2)/(r+1)) / log(universe+1)."""
    ranks = np.asarray(ranks, dtype=np.float64)
    return np.log((ranks + 2.0) / (ranks + 1.0)) / np.log(universe + 1.0)


def concept_cdf(universe: int) -> np.ndarray:
    """Cumulative Zipf (exponent 1) probabilities of concept ranks 0..universe-1."""
    weights = 1.0 / np.arange(1, universe + 1, dtype=np.float64)
    return np.cumsum(weights / weights.sum())


def pair_concepts(ranks: np.ndarray, cdf: np.ndarray, salt: int) -> tuple[np.ndarray, np.ndarray]:
    """The two concept ranks of each pair rank: each drawn from the concept popularity ``cdf``
    by a hash of (rank, salt), so the same pair rank always joins the same two concepts; a pair
    that would join a concept to itself takes the next concept instead."""
    universe = len(cdf)
    base = ranks.astype(np.uint64) * np.uint64(2) + np.uint64(salt) * np.uint64(0x100000000)
    first = np.minimum(np.searchsorted(cdf, _unit(_splitmix64(base)), side="right"), universe - 1)
    second = np.minimum(np.searchsorted(cdf, _unit(_splitmix64(base + np.uint64(1))), side="right"), universe - 1)
    second = np.where(first == second, (second + 1) % universe, second)
    return first, second


def restated(first_of_paper: np.ndarray, position: np.ndarray, rng: np.random.Generator, repeat: float) -> np.ndarray:
    """For each predication (``position`` within its paper, whose first row is
    ``first_of_paper``), the row whose pair it takes: itself, or with probability ``repeat`` an
    earlier predication of the same paper (uniformly), followed to the first that is not itself
    a restatement (pointer jumping: log2 of the longest chain steps)."""
    n = len(position)
    own = np.arange(n, dtype=np.int64)
    again = (position > 0) & (rng.random(n) < repeat)
    source = np.where(again, first_of_paper + np.floor(rng.random(n) * position).astype(np.int64), own)
    while True:
        onward = source[source]
        if np.array_equal(onward, source):
            return source
        source = onward


# --- fitting ----------------------------------------------------------------------------------


def expected_graph(predications: int, model: ReleaseModel = MODEL, seed: int = 0, chunk: int = 5_000_000) -> dict[str, Any]:
    """The concept-level graph a sample of ``predications`` gives under ``model``, by drawing
    only the index arrays (no text): concepts, distinct concept pairs and paper--concept
    relations, in chunks of ``chunk`` predications (papers never span chunks, and the pair keys
    are made distinct per chunk, then over all). At the full size this takes minutes and a few
    GB; the tests run it at small sizes against the generator itself."""
    rng = np.random.default_rng(seed)
    cdf = concept_cdf(model.concept_universe)
    seen = np.zeros(model.concept_universe, dtype=bool)
    pair_keys = []
    paper_concept = 0
    per_paper = PER_PREDICATION["papers_with_predications"]
    done = 0
    while done < predications:
        n = min(chunk, predications - done)
        done += n
        papers = max(1, min(n, round(n * per_paper)))
        counts = 1 + rng.multinomial(n - papers, np.full(papers, 1.0 / papers))
        paper = np.repeat(np.arange(papers, dtype=np.int64), counts)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        source = restated(first, np.arange(n) - first, rng, model.repeat)
        ranks = zipf_ranks(rng.random(n), model.pair_universe)[source]
        a, b = pair_concepts(ranks, cdf, salt=0)
        seen[a] = True
        seen[b] = True
        universe = model.concept_universe
        pair_keys.append(distinct_sorted(np.minimum(a, b) * universe + np.maximum(a, b)))
        paper_concept += distinct_sorted(paper * universe + a, paper * universe + b).size
    pairs = distinct_sorted(*pair_keys).size if pair_keys else 0
    return {
        "predications": predications,
        "concepts": int(seen.sum()),
        "concept_concept": int(pairs),
        "paper_concept": int(paper_concept),
    }


def fit_summary(model: ReleaseModel = MODEL) -> dict[str, Any]:
    """The full-size graph under ``model`` beside the paper's (what MODEL was fitted to)."""
    full = expected_graph(RELEASE_PREDICATIONS, model)
    return {key: {"model": full[key], "paper": PAPER_GRAPH[key]} for key in ("concepts", "concept_concept", "paper_concept")}


def scaled_paper_graph(predications: int) -> dict[str, float]:
    """The paper's graph scaled to a corpus of ``predications``: the relations that grow with the
    corpus in proportion (papers, paper--concept, citation relations), and for concepts and concept
    pairs the full size (a sample has fewer; :func:`expected_graph` says how many)."""
    share = predications / RELEASE_PREDICATIONS
    return {
        "share_of_release": share,
        "abstracts": (PAPER_GRAPH["vertices"] - PAPER_GRAPH["concepts"]) * share,
        "paper_concept": PAPER_GRAPH["paper_concept"] * share,
        "citation": PAPER_GRAPH["citation"] * share,
        "concepts_full_release": PAPER_GRAPH["concepts"],
        "concept_concept_full_release": PAPER_GRAPH["concept_concept"],
    }


# --- the writer -------------------------------------------------------------------------------

# Words of the sentences' filler text (what a sentence says beside the concepts it names).
_FILLER_WORDS = (
    "in", "the", "of", "and", "with", "was", "were", "patients", "study", "results", "significantly",
    "associated", "increased", "compared", "treatment", "group", "observed", "levels", "expression",
    "analysis", "clinical", "data", "showed", "effect", "after", "during", "response", "cases",
    "control", "years", "higher", "lower", "than", "these", "findings", "suggest", "that", "may",
)  # fmt: skip
# Filler phrases per sentence: their lengths spread so that a SENTENCE row averages a release's
# 171 bytes (tests/ingest/test_synth_release.py holds it to that).
_FILLER_PHRASES = 256
_FILLER_MEAN_CHARS = 119
_ENTITY_SCORES = (b"1000", b"1000", b"1000", b"888", b"901", b"861", b"827", b"790")
CHUNK_PAPERS = 100_000


class ReleaseSample:
    """One sample of the release model: its papers, how many predications and sentences each
    has, its citations, and the writer of its four SemMedDB tables (:meth:`write_semmeddb`).

    ``vocab`` is the corpus's calibrated vocabulary (:class:`pipeline.ingest.synth._Vocabulary`
    with ``calibrated=True``): concept ``i`` is the concept of popularity rank ``i``, less the
    anchors placed among the first ranks (``vocab.rank_to_concept``).
    """

    def __init__(self, rng: np.random.Generator, scale: int, vocab: Any, model: ReleaseModel = MODEL) -> None:
        self.rng = rng
        self.scale = scale
        self.vocab = vocab
        self.model = model
        self.n_docs = max(20, round(scale * PER_PREDICATION["papers"]))
        n_with = min(scale, self.n_docs, max(1, round(scale * PER_PREDICATION["papers_with_predications"])))
        with_predications = np.sort(rng.choice(self.n_docs, size=n_with, replace=False))
        self.predications_per_paper = np.zeros(self.n_docs, dtype=np.int64)
        self.predications_per_paper[with_predications] = 1 + rng.multinomial(
            scale - n_with, np.full(n_with, 1.0 / n_with)
        )
        self.papers_with_predications = with_predications
        # Sentences: a title, plus an abstract whose length makes SENTENCE rows 2.00 per predication.
        target = scale * PER_PREDICATION["sentences"]
        without = self.n_docs - n_with
        short = model.abstract_sentences_without_predications
        per_paper_with = max(0.0, (target - n_with - without * (1 + short)) / n_with)
        mean = np.where(self.predications_per_paper > 0, per_paper_with, short)
        self.sentences_per_paper = 1 + rng.poisson(mean)
        self.first_sentence = np.cumsum(self.sentences_per_paper) - self.sentences_per_paper  # 0-based
        self.salt = int(rng.integers(1, 1 << 30))
        self.filler = self._filler_phrases(rng)
        self.doc_topic = np.zeros(self.n_docs, dtype=np.int64)
        self._draw_references(rng)

    @property
    def n_sentences(self) -> int:
        return int(self.sentences_per_paper.sum())

    @staticmethod
    def _filler_phrases(rng: np.random.Generator) -> list[bytes]:
        lengths = rng.integers(_FILLER_MEAN_CHARS // 3, 5 * _FILLER_MEAN_CHARS // 3, _FILLER_PHRASES)
        phrases = []
        for length in lengths.tolist():
            words: list[str] = []
            while sum(len(w) + 1 for w in words) < length:
                words.append(_FILLER_WORDS[int(rng.integers(len(_FILLER_WORDS)))])
            phrases.append(" ".join(words).encode())
        return phrases

    def _draw_references(self, rng: np.random.Generator) -> None:
        """Citations among the papers with predications (both ends become abstract vertices), 0.024
        per predication as in the paper's graph; each cites earlier papers, older ones more.
        ``ref_owner`` (paper index), ``ref_cited`` (paper index), sorted, distinct."""
        papers = self.papers_with_predications
        per_paper = PER_PREDICATION["citation"] * self.scale / max(1, len(papers))
        k = rng.poisson(per_paper, len(papers))
        k[0] = 0
        owner_position = np.repeat(np.arange(len(papers), dtype=np.int64), k)
        cited_position = (owner_position * rng.random(len(owner_position)) ** 2).astype(np.int64)
        pairs = np.unique(np.stack([papers[owner_position], papers[cited_position]], axis=1), axis=0)
        self.ref_owner = pairs[:, 0] if len(pairs) else np.zeros(0, np.int64)
        self.ref_cited = pairs[:, 1] if len(pairs) else np.zeros(0, np.int64)

    def citation_update(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(citing, cited) paper indexes of an extra citation file: new pairs among the papers
        with predications, ``citation_update_share`` as many as the corpus has."""
        papers = self.papers_with_predications
        n = max(1, round(self.model.citation_update_share * len(self.ref_owner)))
        owner = rng.integers(1, max(2, len(papers)), n)
        cited = (owner * rng.random(n)).astype(np.int64)
        return papers[np.minimum(owner, len(papers) - 1)], papers[cited]

    def update_sizes(self) -> tuple[int, int, int]:
        """(new, revised, deleted) records of one PubMed update file."""
        records = max(3, min(self.model.update_records, round(self.model.update_fraction * self.n_docs)))
        new = max(1, round(self.model.update_new_share * records))
        return new, max(1, records - new), max(1, round(self.model.update_deleted_share * records))

    # --- SemMedDB ---------------------------------------------------------------------------
    def write_semmeddb(self, streams: dict[str, Any], pmids: np.ndarray, years: np.ndarray,
                       predicates: Any, progress: Any) -> dict[str, int]:  # fmt: skip
        """Every paper's PREDICATION, SENTENCE, ENTITY and CITATIONS rows, a chunk of papers at a
        time; returns the rows written per table. ``predicates``: (probabilities, quoted field,
        text) of the predicate names."""
        from pipeline.ingest.synth_columns import write_lines

        blocks = _ReleaseBlocks(self.vocab, predicates)
        self._predicate_p = predicates[0]
        rows = {"predications": 0, "sentences": 0, "entities": 0, "citations": 0}
        predication_id = entity_id = 0
        for start in range(0, self.n_docs, CHUNK_PAPERS):
            stop = min(self.n_docs, start + CHUNK_PAPERS)
            chunk = self._predications(start, stop)
            chunk["predication_id"] = np.arange(predication_id + 1, predication_id + chunk["n"] + 1)
            predication_id += chunk["n"]
            write_lines(streams["PREDICATION"], blocks.predication_lines(chunk, pmids))
            sentences = self._sentences(start, stop, chunk)
            write_lines(streams["SENTENCE"], blocks.sentence_lines(sentences, chunk, pmids, self.filler))
            entities = self._entities(sentences, chunk)
            entities["entity_id"] = np.arange(entity_id + 1, entity_id + len(entities["sentence_id"]) + 1)
            entity_id += len(entities["sentence_id"])
            write_lines(streams["ENTITY"], blocks.entity_lines(entities, self.rng))
            write_lines(streams["CITATIONS"], blocks.citation_lines(pmids[start:stop], years[start:stop], start))
            rows["predications"] += chunk["n"]
            rows["sentences"] += len(sentences["sentence_id"])
            rows["entities"] += len(entities["sentence_id"])
            rows["citations"] += stop - start
            progress.update(rows["predications"])
        return rows

    def _predications(self, start: int, stop: int) -> dict[str, Any]:
        """The predications of papers [start, stop): paper, sentence, predicate, subject and
        object concept of each, the paper's first subject becoming its topic."""
        rng = self.rng
        counts = self.predications_per_paper[start:stop]
        n = int(counts.sum())
        paper = np.repeat(np.arange(start, stop, dtype=np.int64), counts)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        ranks = zipf_ranks(rng.random(n), self.model.pair_universe)
        ranks = ranks[restated(first, np.arange(n) - first, rng, self.model.repeat)]
        subject_rank, object_rank = pair_concepts(ranks, self.vocab.cdf, self.salt)
        order = self.vocab.rank_to_concept
        subject, obj = order[subject_rank], order[object_rank]
        predicate = rng.choice(len(self._predicate_p), size=n, p=self._predicate_p)
        sentence_in_paper = np.floor(rng.random(n) * self.sentences_per_paper[paper]).astype(np.int64)
        sentence_id = self.first_sentence[paper] + sentence_in_paper + 1
        has = counts > 0
        starts = (np.cumsum(counts) - counts)[has]
        self.doc_topic[start:stop][has] = subject[starts]
        self.doc_topic[start:stop][~has] = self.vocab.sample(rng, int((~has).sum()))
        return {"n": n, "paper": paper, "sentence_id": sentence_id, "predicate": predicate,
                "subject": subject, "object": obj}  # fmt: skip

    def _sentences(self, start: int, stop: int, chunk: dict[str, Any]) -> dict[str, Any]:
        """Every sentence of papers [start, stop) and, for those with predications, the first."""
        counts = self.sentences_per_paper[start:stop]
        paper = np.repeat(np.arange(start, stop, dtype=np.int64), counts)
        number = np.arange(len(paper)) - np.repeat(np.cumsum(counts) - counts, counts) + 1
        sentence_id = self.first_sentence[paper] + number
        with_predication = np.full(len(paper), -1, dtype=np.int64)
        if chunk["n"]:
            unique, first = np.unique(chunk["sentence_id"], return_index=True)
            with_predication[unique - sentence_id[0]] = first
        return {"sentence_id": sentence_id, "paper": paper, "number": number, "predication": with_predication}

    def _entities(self, sentences: dict[str, Any], chunk: dict[str, Any]) -> dict[str, Any]:
        """ENTITY rows of the chunk's sentences, in sentence order: the distinct arguments of each
        sentence's predications, then further concept mentions (Poisson per sentence) so that
        the rows are 14.95 per predication of the chunk."""
        rng = self.rng
        universe = self.vocab.n
        keys = distinct_sorted(chunk["sentence_id"] * universe + chunk["subject"],
                               chunk["sentence_id"] * universe + chunk["object"])  # fmt: skip
        argument_sentence, argument_concept = keys // universe, keys % universe
        n_sentences = len(sentences["sentence_id"])
        target = PER_PREDICATION["entities"] * chunk["n"]
        extra_mean = max(0.0, (target - len(keys)) / max(1, n_sentences))
        extra = rng.poisson(extra_mean, n_sentences)
        extra_sentence = np.repeat(sentences["sentence_id"], extra)
        extra_concept = self.vocab.sample(rng, len(extra_sentence))
        sentence = np.concatenate([argument_sentence, extra_sentence])
        concept = np.concatenate([argument_concept, extra_concept])
        order = np.argsort(sentence, kind="stable")
        return {"sentence_id": sentence[order], "concept": concept[order]}


def _escaped(text: str) -> bytes:
    """Text as a dump field's content (latin-1, MySQL's backslash escapes)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("'", "\\'").encode("latin-1")


class _ReleaseBlocks:
    """The calibrated profile's CSV fields per concept and the line builders of its four tables.
    Numbers are unquoted (the dump dialect allows it, and a release's row sizes imply it)."""

    def __init__(self, vocab: Any, predicates: Any) -> None:
        from pipeline.ingest.synth_columns import binary

        _, quoted, text = predicates
        self.predicate_field, self.predicate_text = quoted, text
        enc, fields = vocab.encoded_names, vocab.cui_fields
        self.name_field = binary(enc)
        self.predication_block = binary([
            b'"%s","%s","%s","%s"' % (fields[i].encode(), enc[i], vocab.semtypes[i].encode(), vocab.novelty[i].encode())
            for i in range(vocab.n)
        ])  # fmt: skip
        # ENTITY's TEXT is the surface form found in the sentence: the name's first word here.
        self.entity_block = binary([
            b'%s,"%s","%s",%s,%s,"%s"' % (
                b"\\N" if vocab.gene_only[i] else b'"' + fields[i].encode() + b'"',
                enc[i],
                vocab.semtypes[i].encode(),
                b"\\N" if vocab.gene_fields[i] is None else b'"' + vocab.gene_fields[i].encode() + b'"',
                b"\\N" if vocab.gene_names[i] is None else b'"' + _escaped(vocab.gene_names[i]) + b'"',
                _escaped(vocab.names[i][0].split(" ")[0].strip(',"')),
            )
            for i in range(vocab.n)
        ])  # fmt: skip

    def predication_lines(self, chunk: dict[str, Any], pmids: np.ndarray) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        from pipeline.ingest.synth_columns import join, numbers

        return join(
            numbers(chunk["predication_id"]), b",", numbers(chunk["sentence_id"]), b",", numbers(pmids[chunk["paper"]]),
            b",", pc.take(self.predicate_field, pa.array(chunk["predicate"])), b",",
            pc.take(self.predication_block, pa.array(chunk["subject"])), b",",
            pc.take(self.predication_block, pa.array(chunk["object"])), b"\n",
        )  # fmt: skip

    def sentence_lines(self, sentences: dict[str, Any], chunk: dict[str, Any], pmids: np.ndarray,
                       filler: list[bytes]) -> Any:  # fmt: skip
        import pyarrow as pa
        import pyarrow.compute as pc

        from pipeline.ingest.synth_columns import binary, join, numbers

        n = len(sentences["sentence_id"])
        phrase = pc.take(binary(filler), pa.array((sentences["sentence_id"] * 2654435761) % len(filler)))
        first = sentences["predication"]
        said = first >= 0
        text = phrase
        if said.any():
            which = first[said]
            statement = join(
                pc.take(self.name_field, pa.array(chunk["subject"][which])), b" ",
                pc.take(self.predicate_text, pa.array(chunk["predicate"][which])), b" ",
                pc.take(self.name_field, pa.array(chunk["object"][which])), b", ",
            )  # fmt: skip
            text = pc.replace_with_mask(phrase, pa.array(said), join(statement, pc.filter(phrase, pa.array(said))))
        text = join(text, b".")
        length = pc.binary_length(text).to_numpy()
        paper = sentences["paper"]
        # SENT_START_INDEX: the characters of the paper's sentences before this one
        ends = np.cumsum(length + 1)
        paper_start = np.r_[0, np.flatnonzero(paper[1:] != paper[:-1]) + 1]
        offset = np.repeat(np.r_[0, ends][paper_start], np.diff(np.r_[paper_start, n]))
        start_index = np.r_[0, ends[:-1]] - offset
        kind = pc.take(binary([b'"ti"', b'"ab"']), pa.array(np.minimum(sentences["number"] - 1, 1)))
        return join(
            numbers(sentences["sentence_id"]), b",", numbers(pmids[paper]), b",", kind, b",",
            numbers(sentences["number"]), b",", numbers(start_index), b',"', text, b'",',
            numbers(start_index + length), b",\\N,\\N\n",
        )  # fmt: skip

    def entity_lines(self, entities: dict[str, Any], rng: np.random.Generator) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        from pipeline.ingest.synth_columns import binary, join, numbers

        n = len(entities["sentence_id"])
        start = rng.integers(0, 100, n)
        score = pc.take(binary(list(_ENTITY_SCORES)), pa.array(rng.integers(0, len(_ENTITY_SCORES), n)))
        return join(
            numbers(entities["entity_id"]), b",", numbers(entities["sentence_id"]), b",",
            pc.take(self.entity_block, pa.array(entities["concept"])), b",", score, b",",
            numbers(start), b",", numbers(start + 4 + start % 9), b"\n",
        )  # fmt: skip

    def citation_lines(self, pmids: np.ndarray, years: np.ndarray, start: int) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        from pipeline.ingest.synth_columns import binary, join, numbers

        index = np.arange(start, start + len(pmids))
        issn = pc.take(binary([b'"0028-4793"', b"\\N", b"\\N", b'"1474-547X"', b"\\N"] * 2), pa.array(index % 10))
        year = numbers(years)
        completed = pc.if_else(pa.array(index % 2 == 0), join(year, b"0115"), pa.scalar(b"\\N", pa.binary()))
        return join(
            numbers(pmids), b",", issn, b",", completed, b',"', year, b'-01-10",', year, b"\n",
        )  # fmt: skip
