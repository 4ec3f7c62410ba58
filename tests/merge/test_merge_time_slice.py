"""ingest.until_year: the merged tables of a slice are the full merge's rows of the papers
published up to the year, and the year is part of the build id only when it is set."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from support.pipeline_runs import ingested

from pipeline.builds.identity import build_id, resolve_inputs
from pipeline.builds.layout import TableFolder
from pipeline.config import ConfigError, validate_config
from pipeline.merge import merge_ingested


@pytest.fixture(scope="module")
def merges(tmp_path_factory):
    root = tmp_path_factory.mktemp("slice")
    folders = ingested(root, scale=3000, seed=11)
    merge_ingested(folders, root / "full", {})
    merge_ingested(folders, root / "slice", {"until_year": 2005})
    return root / "full", root / "slice"


def _frame(folder, table: str) -> pd.DataFrame:
    return pq.read_table(TableFolder(folder).table(table)).to_pandas()


def test_slice_keeps_exactly_the_rows_of_papers_up_to_the_year(merges):
    full, cut = merges
    documents = _frame(full, "documents")
    kept = set(documents.loc[documents["year"].notna() & (documents["year"] <= 2005), "doc_id"])
    assert 0 < len(kept) < len(documents), "the corpus must have papers on both sides of the cut"
    assert set(_frame(cut, "documents")["doc_id"]) == kept
    for table, columns in (
        ("mentions", ["doc_id"]),
        ("predications", ["doc_id"]),
        ("citations", ["citing", "cited"]),
    ):
        whole, sliced = _frame(full, table), _frame(cut, table)
        expected = whole[whole[columns].isin(kept).all(axis=1)].reset_index(drop=True)
        pd.testing.assert_frame_equal(sliced.reset_index(drop=True), expected, check_dtype=True)
    # the concepts table is the dictionary of names and stays whole
    pd.testing.assert_frame_equal(_frame(cut, "concepts"), _frame(full, "concepts"))


def test_slice_counts_what_it_removed(merges):
    full, cut = merges
    record = json.loads(TableFolder(cut).counts.read_text())
    documents = _frame(full, "documents")
    after = int((documents["year"] > 2005).sum())
    assert record["time_slice"]["until_year"] == 2005
    assert record["time_slice"]["papers_after_year"] == after
    assert record["time_slice"]["papers_without_year"] == int(documents["year"].isna().sum())
    for table, rows in record["time_slice"]["rows"].items():
        assert (
            rows["kept"]
            == pq.ParquetFile(TableFolder(cut).table(table)).metadata.num_rows
            == record["tables"][table]
        )
        assert rows["before"] == pq.ParquetFile(TableFolder(full).table(table)).metadata.num_rows
    assert "time_slice" not in json.loads(TableFolder(full).counts.read_text())


def test_until_year_is_in_the_build_id_only_when_set(tmp_path):
    (tmp_path / "p.csv").write_text("1,2,3\n")
    inputs = resolve_inputs({"inputs": {"semmeddb_predication": [str(tmp_path / "p.csv")]}})
    unset = build_id(inputs, validate_config({}))
    # a config from before the key existed (no until_year at all) keeps its build id
    legacy = validate_config({})
    del legacy["ingest"]["until_year"]
    assert build_id(inputs, legacy) == unset
    cut_2010 = build_id(inputs, validate_config({"ingest": {"until_year": 2010}}))
    assert cut_2010 != unset
    assert build_id(inputs, validate_config({"ingest": {"until_year": 2011}})) not in {unset, cut_2010}


def test_until_year_must_be_a_year():
    with pytest.raises(ConfigError, match="until_year"):
        validate_config({"ingest": {"until_year": "2010"}})
