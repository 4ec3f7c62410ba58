"""Rule 2 (the DOI match) and the doc_id remapping it feeds, against plain-Python references on
random inputs; and the number of lookups they make, which must not grow with the number of files
(a lookup hashes its whole value set: one per file made the merge quadratic in the corpus)."""

from __future__ import annotations

import copy
import json
import pickle
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.builds import tables
from pipeline.merge.documents import DocIdMap, PaperIds, found_in, remapped
from pipeline.merge.inputs import MergeInputs


def _random_ids(rng: random.Random, n: int) -> list[str | None]:
    prefixes = ["CORD:", "PMID:", "A:", "Z:", ""]
    return [None if rng.random() < 0.1 else f"{rng.choice(prefixes)}{rng.randrange(60)}" for _ in range(n)]


@pytest.mark.parametrize("seed", range(6))
def test_remapped_equals_a_dict_lookup(seed):
    rng = random.Random(seed)
    keys = {f"{rng.choice(['CORD:', 'PMID:', 'Q:'])}{rng.randrange(60)}" for _ in range(rng.randrange(1, 30))}
    mapping = {key: f"PMID:{rng.randrange(10**6)}" for key in keys}
    values = _random_ids(rng, rng.randrange(0, 300))
    expected = [None if v is None else mapping.get(v, v) for v in values]
    column = pa.array(values, pa.string())
    for mapping_kind in (mapping, DocIdMap(mapping)):
        assert remapped(column, mapping_kind).to_pylist() == expected
        chunked = pa.chunked_array([column[:7], column[7:]], pa.string())
        assert remapped(chunked, mapping_kind).to_pylist() == expected
        assert remapped(column.dictionary_encode(), mapping_kind).to_pylist() == expected


@pytest.mark.parametrize("seed", range(6))
def test_found_in_equals_a_set_lookup(seed):
    rng = random.Random(seed)
    column = pa.array(_random_ids(rng, rng.randrange(0, 300)), pa.string())
    papers = sorted({f"{rng.choice(['CORD:', 'PMID:', 'Q:'])}{rng.randrange(80)}" for _ in range(rng.randrange(0, 40))})
    expected = [paper in set(column.to_pylist()) for paper in papers]
    papers = pa.array(papers, pa.string())
    for shape in (column, pa.chunked_array([column[:7], column[7:]], pa.string()), column.dictionary_encode()):
        assert found_in(papers, shape).to_pylist() == expected


def test_remapped_edge_cases():
    mapping = DocIdMap({"CORD:b": "PMID:1", "CORD:d": "PMID:2"})
    # a value equal to the smallest or the largest key is remapped; the range check must not skip it
    assert remapped(pa.array(["CORD:b"]), mapping).to_pylist() == ["PMID:1"]
    assert remapped(pa.array(["CORD:d", "PMID:9"]), mapping).to_pylist() == ["PMID:2", "PMID:9"]
    assert remapped(pa.array(["CORD:c"]), mapping).to_pylist() == ["CORD:c"]  # inside the range, no key
    assert remapped(pa.array([], pa.string()), mapping).to_pylist() == []
    assert remapped(pa.array([None, None], pa.string()), mapping).to_pylist() == [None, None]
    assert remapped(pa.array(["x"]), DocIdMap()).to_pylist() == ["x"]


def test_doc_id_map_is_read_only():
    mapping = DocIdMap({"CORD:a": "PMID:1"})
    for change in (lambda: mapping.__setitem__("CORD:b", "PMID:2"), lambda: mapping.update(x="y"),
                   lambda: mapping.pop("CORD:a"), mapping.clear):  # fmt: skip
        with pytest.raises(TypeError):
            change()
    assert mapping == {"CORD:a": "PMID:1"}
    for duplicate in (copy.copy(mapping), copy.deepcopy(mapping), pickle.loads(pickle.dumps(mapping))):
        assert isinstance(duplicate, DocIdMap) and duplicate == mapping
        assert remapped(pa.array(["CORD:a", "x"]), duplicate).to_pylist() == ["PMID:1", "x"]


def _documents_folder(folder, records):
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(records, schema=tables.DOCUMENTS), folder / "documents.parquet")
    (folder / "counts.json").write_text(json.dumps({"rows_read": len(records), "rows_accepted": len(records),
                                                    "rows_quarantined": 0, "tables": {"documents": len(records)}}))  # fmt: skip
    return folder


def _random_files(rng: random.Random, root, files: int):
    """Documents folders of PubMed and CORD-19 records sharing a small pool of DOIs (so several
    PMIDs share one, and a CORD-19 paper may appear in several files with different DOIs)."""
    folders = []
    for index in range(files):
        records = []
        for _ in range(rng.randrange(0, 25)):
            doi = None if rng.random() < 0.2 else f"10.1/{rng.randrange(30)}"
            if rng.random() < 0.6:
                pmid = rng.randrange(1, 200)
                records.append({"doc_id": f"PMID:{pmid}", "pmid": pmid, "doi": doi, "source": "pubmed",
                                "source_file": f"f{index}"})  # fmt: skip
            else:
                records.append({"doc_id": f"CORD:{rng.randrange(40)}", "doi": doi, "source": "cord19",
                                "source_file": f"f{index}"})  # fmt: skip
        folders.append(_documents_folder(root / f"file{index}", records))
    return folders


def _reference_matches(folders) -> dict[str, str]:
    """Rule 2 as the merge's docstring states it, record by record: a CORD-19 paper whose DOI a
    PubMed record has becomes the smallest PMID with that DOI; a paper listed twice takes its
    last record's DOI (files in order)."""
    records = [r for folder in folders for r in pq.read_table(folder / "documents.parquet").to_pylist()]
    smallest: dict[str, int] = {}
    for r in records:
        if r["doc_id"].startswith("PMID:") and r["doi"] is not None:
            smallest[r["doi"]] = min(smallest.get(r["doi"], r["pmid"]), r["pmid"])
    matches = {}
    for r in records:
        if r["doc_id"].startswith("CORD:") and r["doi"] in smallest:
            matches[r["doc_id"]] = f"PMID:{smallest[r['doi']]}"
    return matches


def _lookups(monkeypatch) -> list[int]:
    """The size of each index_in call's value set, recorded as the code under test makes them."""
    sizes: list[int] = []
    index_in = pc.index_in

    def counting(values, value_set=None, **kwargs):
        sizes.append(len(value_set))
        return index_in(values, value_set=value_set, **kwargs)

    monkeypatch.setattr(pc, "index_in", counting)
    return sizes


@pytest.mark.parametrize("seed", range(4))
def test_doi_match_equals_the_reference_with_one_lookup_for_all_files(seed, tmp_path, monkeypatch):
    rng = random.Random(seed)
    folders = _random_files(rng, tmp_path, files=rng.randrange(2, 30))
    inputs = MergeInputs(folders, tmp_path / "out", {})
    inputs.load_counts()
    papers = PaperIds(inputs)
    lookups = _lookups(monkeypatch)
    papers.match_dois()
    expected = _reference_matches(folders)
    assert papers.remap == expected
    assert isinstance(papers.remap, DocIdMap)
    # one hashing of the PubMed DOIs whatever the number of files (there was one per file)
    assert len(lookups) <= 1 and (lookups or not expected)


def test_remapping_a_file_without_candidate_ids_makes_no_lookup(monkeypatch):
    mapping = DocIdMap({f"CORD:{i}": f"PMID:{i}" for i in range(1000)})
    lookups = _lookups(monkeypatch)
    pubmed_ids = pa.array([f"PMID:{i}" for i in range(500)])
    assert remapped(pubmed_ids, mapping) is pubmed_ids
    assert lookups == []
    assert remapped(pa.array(["PMID:1", "CORD:3"]), mapping).to_pylist() == ["PMID:1", "PMID:3"]
    assert lookups == [1000]
