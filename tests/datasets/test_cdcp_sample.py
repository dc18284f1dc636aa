"""Tests for the bundled CDCP sample and load_cdcp_sample."""

import gzip
import importlib.resources
import itertools
import json

import pytest

from sksparse_struct.datasets import load_cdcp_sample, read_cdcp
from sksparse_struct.datasets._cdcp import _merge_nested
from sksparse_struct.datasets._samples import CDCP_SAMPLE_FILE

IDS = {
    "train": ["00219", "00472", "00484", "00491", "00499", "00534", "00541", "00588",
              "00597", "00600", "00692", "00739", "00803", "00865", "00974", "01061",
              "01076", "01284", "01288", "01292"],
    "test": ["00341", "00485", "00486", "00536", "00722", "01005", "01283", "01418"],
}
SOURCE_COMMIT = "c4915868997bb7891429c03faa1ac0adead3fb33"
TOKEN_KEYS = {"word", "originalText", "lemma", "pos", "characterOffsetBegin",
              "characterOffsetEnd", "index"}


def data_dir():
    return importlib.resources.files("sksparse_struct.datasets") / "data"


def bundle():
    return json.loads(gzip.decompress((data_dir() / CDCP_SAMPLE_FILE).read_bytes()))


@pytest.fixture(scope="module")
def sample():
    X_train, y_train, X_test, y_test = load_cdcp_sample()
    return {"train": (X_train, y_train), "test": (X_test, y_test)}


def test_file_is_small_and_reproducible():
    stored = (data_dir() / CDCP_SAMPLE_FILE).read_bytes()
    assert len(stored) < 700_000
    assert gzip.compress(gzip.decompress(stored), compresslevel=9, mtime=0) == stored
    assert sorted(bundle()) == ["test", "train"]


def test_license_names_source_license_and_every_document():
    text = (data_dir() / "CDCP_SAMPLE_LICENSE.txt").read_text()
    for needle in ("Open Database License (ODbL) v1.0", "Database Contents License (DbCL) v1.0",
                   "http://opendatacommons.org/licenses/odbl/1.0/", SOURCE_COMMIT,
                   "Park", "Niculae"):
        assert needle in text
    for split, ids in IDS.items():
        assert " ".join(ids[:10]) in " ".join(text.split())
        assert sorted(bundle()[split]) == ids


def test_counts(sample):
    counts = {split: (len(X), sum(len(labels) for labels, _ in y),
                      sum(len(links) for _, links in y))
              for split, (X, y) in sample.items()}
    assert counts == {"train": (20, 101, 53), "test": (8, 43, 19)}
    for split, (X, _) in sample.items():
        assert [doc["id"] for doc in X] == IDS[split]


def test_documents_are_well_formed(sample):
    for X, y in sample.values():
        for doc, (labels, links) in zip(X, y):
            text, spans = doc["text"], doc["propositions"]
            assert len(labels) == len(spans) >= 2
            assert all(0 <= a < b <= c < d <= len(text)
                       for (a, b), (c, d) in itertools.pairwise(spans))
            assert doc["paragraphs"] == [(0, len(text))]
            assert doc["proposition_paragraph"] == [0] * len(spans)
            assert all(s != t and 0 <= s < len(spans) and 0 <= t < len(spans)
                       for s, t in links)
            assert isinstance(doc["discourse"], list)
            for sentence in doc["corenlp"]["sentences"]:
                for token in sentence["tokens"]:
                    assert set(token) == TOKEN_KEYS
                    begin, end = token["characterOffsetBegin"], token["characterOffsetEnd"]
                    assert 0 <= begin < end <= len(text)


def test_special_cases_stated_in_the_license():
    for split, merged_doc, dropped_doc, reference_docs in [
            ("train", "00499", "00865", {"00484", "00739"}),
            ("test", "00486", "01283", {"01418"})]:
        for doc_id, files in bundle()[split].items():
            ann = json.loads(files[".ann.json"])
            links = [((i, j), k) for key in ("reasons", "evidences") for (i, j), k in ann[key]]
            spans = [tuple(span) for span in ann["prop_offsets"]]
            new_spans, _, _, dropped = _merge_nested(spans, ann["prop_labels"], links, doc_id)
            if doc_id == merged_doc:
                assert len(new_spans) < len(spans)
            if doc_id == dropped_doc:
                assert dropped > 0
            assert ("reference" in ann["prop_labels"]) == (doc_id in reference_docs)
    ann = json.loads(bundle()["train"]["00484"][".ann.json"])
    assert ann["evidences"]
    ann = json.loads(bundle()["train"]["00472"][".ann.json"])
    assert not ann["reasons"] and not ann["evidences"]


def test_options(sample):
    X_train, y_train, X_test, _ = load_cdcp_sample(transitive_closure=False, annotations=False)
    assert sum(len(links) for _, links in y_train) == 45
    assert all(doc["corenlp"] is None and doc["discourse"] is None for doc in X_train + X_test)
    assert [labels for labels, _ in y_train] == [labels for labels, _ in sample["train"][1]]
    _, y_train, _, _ = load_cdcp_sample(merge_nested=False)
    assert sum(len(labels) for labels, _ in y_train) > 101
    with pytest.raises(ValueError, match="annotations must be True or False"):
        load_cdcp_sample(annotations="no")


def test_each_call_returns_fresh_objects(sample):
    X_train, y_train, _, _ = load_cdcp_sample()
    X_train[0]["propositions"].clear()
    y_train[0][1].clear()
    assert load_cdcp_sample()[0][0]["propositions"]
    assert load_cdcp_sample()[1][0][1]


@pytest.mark.shared_data
@pytest.mark.parametrize("split", ["train", "test"])
def test_sample_equals_the_corpus_documents(shared_data, split, tmp_path):
    source = shared_data / "cdcp" / split
    assert SOURCE_COMMIT in (shared_data / "cdcp" / "SOURCE").read_text()
    # Texts, annotations and discourse files are byte-identical copies.
    for doc_id, files in bundle()[split].items():
        for suffix in (".txt", ".ann.json", ".txt.pipe"):
            with open(source / f"{doc_id}{suffix}", encoding="utf-8", newline="") as f:
                assert files[suffix] == f.read(), (doc_id, suffix)
    # Loading the sample equals loading those documents from the corpus.
    for name in (f"{doc_id}{suffix}" for doc_id in IDS[split]
                 for suffix in (".txt", ".ann.json", ".txt.json", ".txt.pipe")):
        (tmp_path / name).symlink_to(source / name)
    index = 0 if split == "train" else 2
    for options in ({}, {"merge_nested": False, "transitive_closure": False}):
        expected = read_cdcp(tmp_path, **options)
        got = load_cdcp_sample(**options)[index:index + 2]
        assert got[0] == expected[0]
        assert got[1] == expected[1]
