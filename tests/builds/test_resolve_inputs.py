"""Which files a config's input patterns name (pipeline.builds.identity.resolve_inputs): each
file once whatever its spelling, two files of the same bytes refused (their rows would be read
twice: SemMedDB rows are not deduplicated), a real file whose name holds glob syntax taken as
it is, and a pattern that matches nothing named with the folder a relative one was read from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.builds.identity import resolve_inputs


def _file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_one_file_named_twice_is_read_once(tmp_path: Path) -> None:
    dump = _file(tmp_path / "semmeddb" / "predications.csv", "1,2,3\n")
    other = _file(tmp_path / "semmeddb" / "more.csv", "4,5,6\n")
    spellings = [str(dump), str(tmp_path / "semmeddb" / ".." / "semmeddb" / "predications.csv"), str(tmp_path / "semmeddb" / "*.csv")]
    files = resolve_inputs({"inputs": {"semmeddb_predication": spellings}})
    assert [f.path.resolve() for f in files] == [dump.resolve(), other.resolve()]
    assert [f.order for f in files] == [0, 1]


def test_two_files_of_the_same_bytes_are_refused(tmp_path: Path) -> None:
    first = _file(tmp_path / "a" / "pubmed25n0001.xml", "<PubmedArticleSet/>\n")
    copy = _file(tmp_path / "b" / "pubmed25n0002.xml", "<PubmedArticleSet/>\n")
    with pytest.raises(ValueError) as error:
        resolve_inputs({"inputs": {"pubmed_xml": [str(first), str(copy)]}})
    message = str(error.value)
    assert message.startswith(f"inputs.pubmed_xml: {first} and {copy} hold the same bytes (SHA-256 ")
    assert message.endswith("their rows would be read twice (SemMedDB rows are not deduplicated); name the file once")


def test_a_file_whose_name_holds_glob_syntax(tmp_path: Path) -> None:
    real = _file(tmp_path / "cord[1]" / "metadata.csv", "cord_uid\n")
    files = resolve_inputs({"inputs": {"cord19_metadata": [str(real)]}})
    assert [f.path for f in files] == [real]
    # and a pattern still matches as one
    files = resolve_inputs({"inputs": {"cord19_metadata": [str(tmp_path / "cord*" / "*.csv")]}})
    assert [f.path for f in files] == [real]


def test_no_match_names_the_folder_a_relative_pattern_was_read_from(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as error:
        resolve_inputs({"inputs": {"pubmed_xml": ["data/baseline/*.xml.gz"]}})
    assert str(error.value) == f"inputs.pubmed_xml: no file matches 'data/baseline/*.xml.gz' (relative to {os.getcwd()})"
    with pytest.raises(FileNotFoundError) as error:
        resolve_inputs({"inputs": {"pubmed_xml": [str(tmp_path / "none.xml")]}})
    assert str(error.value) == f"inputs.pubmed_xml: no file matches {str(tmp_path / 'none.xml')!r}"
