"""Tests for the bundled UD English EWT sample and its loader."""

import gzip
import hashlib
import importlib.resources
import io
import pickle
import re

import numpy as np
import pytest

from sksparse_struct.datasets import load_ewt_sample, write_conllu
from sksparse_struct.datasets._conllu import UPOS_TAGS, Sentence, parse_conllu
from sksparse_struct.datasets._samples import EWT_SAMPLE_FILES

N_SENTENCES = {"train": 360, "test": 100}
N_WORDS = {"train": 5684, "test": 1182}
SOURCE_COMMIT = "15d613d8447b3478787d4c278730a1e48a945efb"
# Every file of the package's data folder (the CDCP sample is tested in
# tests/datasets/test_cdcp_sample.py).
DATA_FILES = [*EWT_SAMPLE_FILES.values(), "EWT_SAMPLE_LICENSE.txt",
              "cdcp_sample.json.gz", "CDCP_SAMPLE_LICENSE.txt"]

# How the slice was taken (also stated in EWT_SAMPLE_LICENSE.txt): runs of
# consecutive sentences starting at evenly spaced indices of the source file,
# so that every genre (weblog, email, newsgroup, answers, reviews) appears.
RUNS = {"train": (36, 10), "test": (20, 5)}


def sentence_blocks(conllu_bytes):
    """The sentences of a CoNLL-U file as byte strings, each with its comment
    lines and its closing blank line, exactly as in the file."""
    assert conllu_bytes.endswith(b"\n\n") and b"\n\n\n" not in conllu_bytes
    return [block + b"\n\n" for block in conllu_bytes[:-2].split(b"\n\n")]


def ewt_slice(source_blocks, n_runs, run_length):
    """The sample rule: ``n_runs`` runs of ``run_length`` consecutive
    sentences, run ``i`` starting at index ``i * len(source_blocks) // n_runs``."""
    n = len(source_blocks)
    starts = [i * n // n_runs for i in range(n_runs)]
    return [source_blocks[s + j] for s in starts for j in range(run_length)]


def bundled_bytes(subset):
    path = importlib.resources.files("sksparse_struct.datasets") / "data"
    return gzip.decompress((path / EWT_SAMPLE_FILES[subset]).read_bytes())


def sent_id(block):
    return re.search(rb"^# sent_id = (\S+)$", block, re.M).group(1).decode()


# --------------------------------------------------------------------------
# The bundled files


def test_data_files_are_small_and_present():
    data = importlib.resources.files("sksparse_struct.datasets") / "data"
    names = sorted(p.name for p in data.iterdir() if p.is_file())
    assert names == sorted(DATA_FILES)
    total = sum(len((data / name).read_bytes()) for name in names)
    assert total < 200_000


@pytest.mark.parametrize("subset", ["train", "test"])
def test_gzip_files_are_reproducible(subset):
    # mtime=0 and no file name in the header: recompressing the content gives
    # the same bytes, so regenerating the sample does not churn the repository.
    data = importlib.resources.files("sksparse_struct.datasets") / "data"
    stored = (data / EWT_SAMPLE_FILES[subset]).read_bytes()
    assert gzip.compress(gzip.decompress(stored), compresslevel=9, mtime=0) == stored


def test_license_file_attributes_the_treebank():
    data = importlib.resources.files("sksparse_struct.datasets") / "data"
    text = (data / "EWT_SAMPLE_LICENSE.txt").read_text(encoding="utf-8")
    for needle in [
        "CC BY-SA 4.0",
        "https://creativecommons.org/licenses/by-sa/4.0/",
        "https://github.com/UniversalDependencies/UD_English-EWT",
        SOURCE_COMMIT,
        "Leland Stanford Junior University",
        "silveira14gold",
        "Natalia Silveira",
        "unmodified",
        *EWT_SAMPLE_FILES.values(),
    ]:
        assert needle in text, needle


@pytest.mark.parametrize("subset", ["train", "test"])
def test_license_file_lists_every_run(subset):
    data = importlib.resources.files("sksparse_struct.datasets") / "data"
    text = (data / "EWT_SAMPLE_LICENSE.txt").read_text(encoding="utf-8")
    blocks = sentence_blocks(bundled_bytes(subset))
    n_runs, run_length = RUNS[subset]
    for r in range(n_runs):
        first, last = sent_id(blocks[r * run_length]), sent_id(blocks[(r + 1) * run_length - 1])
        assert f"{first} .. {last}" in text


# --------------------------------------------------------------------------
# The loader


@pytest.mark.parametrize("subset", ["train", "test"])
def test_counts(subset):
    sentences = load_ewt_sample(subset)
    assert len(sentences) == N_SENTENCES[subset]
    assert sum(len(s) for s in sentences) == N_WORDS[subset]


@pytest.mark.parametrize("subset", ["train", "test"])
def test_sentences_are_well_formed(subset):
    sentences = load_ewt_sample(subset)
    sent_ids = [s.metadata["sent_id"] for s in sentences]
    assert len(set(sent_ids)) == len(sent_ids)
    for sentence in sentences:
        assert isinstance(sentence, Sentence)
        assert sentence.metadata["text"]
        assert [t["id"] for t in sentence] == list(range(1, len(sentence) + 1))
        assert all(t["upos"] in UPOS_TAGS for t in sentence)
        assert all(0 <= t["head"] <= len(sentence) for t in sentence)
        assert sum(t["head"] == 0 for t in sentence) == 1
        assert all(t["form"] and t["deprel"] for t in sentence)
        # The words, joined, spell the text (up to spaces): forms are not
        # shifted between sentences or columns.
        assert "".join(t["form"] for t in sentence) == "".join(
            sentence.metadata["text"].split()
        )


def test_train_and_test_share_no_sentence():
    train = {s.metadata["sent_id"] for s in load_ewt_sample("train")}
    test = {s.metadata["sent_id"] for s in load_ewt_sample("test")}
    assert not train & test


def test_every_genre_and_most_tags_present():
    sentences = load_ewt_sample("train")
    genres = {s.metadata["sent_id"].split("-")[0] for s in sentences}
    assert genres == {"weblog", "email", "newsgroup", "answers", "reviews"}
    tags = {t["upos"] for s in sentences for t in s}
    assert tags == set(UPOS_TAGS)


def test_first_train_sentence():
    first = load_ewt_sample("train")[0]
    assert first.metadata["sent_id"].endswith("-0001")
    assert first.metadata["text"].startswith("Al-Zaman : American forces killed")
    assert first[6] == {
        "id": 7, "form": "killed", "lemma": "kill", "upos": "VERB", "xpos": "VBD",
        "feats": {"Mood": "Ind", "Number": "Plur", "Person": "3", "Tense": "Past",
                  "VerbForm": "Fin"},
        "head": 1, "deprel": "parataxis",
    }


@pytest.mark.parametrize("subset", ["train", "test"])
def test_return_X_y(subset):
    sentences = load_ewt_sample(subset)
    X, y = load_ewt_sample(subset, return_X_y=True)
    assert len(X) == len(y) == len(sentences)
    for words, tags, sentence in zip(X, y, sentences):
        assert words == [t["form"] for t in sentence]
        assert tags == [t["upos"] for t in sentence]
        assert all(isinstance(w, str) for w in words)


@pytest.mark.parametrize("subset", ["train", "test"])
def test_tree_targets(subset):
    # What a parser fits on: token dicts as read_conllu gives them and
    # (heads, deprels) pairs; the same sentences as the full annotation.
    sentences = load_ewt_sample(subset)
    X, y = load_ewt_sample(subset, return_X_y=True, target="tree")
    assert len(X) == len(y) == len(sentences)
    for tokens, (heads, deprels), sentence in zip(X, y, sentences):
        assert heads.dtype == np.int64 and heads.tolist() == [t["head"] for t in sentence]
        assert deprels == [t["deprel"] for t in sentence]
        for token, full in zip(tokens, sentence, strict=True):
            assert set(token) == {"form", "lemma", "upos", "xpos", "feats"}
            assert all(token[k] == full[k] for k in ("form", "lemma", "upos", "xpos"))
            # FEATS as written in the file (the dict keeps the file's order).
            assert token["feats"] == ("|".join(f"{k}={v}" for k, v in full["feats"].items())
                                      or "_")


def test_tree_targets_fit_a_parser():
    from sksparse_struct.parsing import SparseMAPParser

    X, y = load_ewt_sample("test", return_X_y=True, target="tree")
    parser = SparseMAPParser(loss="perceptron", max_iter=1, random_state=0).fit(X[:20], y[:20])
    heads, deprels = parser.predict(X[:3], return_deprel=True)
    assert [len(h) for h in heads] == [len(d) for d in deprels] == [len(s) for s in X[:3]]


@pytest.mark.parametrize("subset", ["train", "test"])
def test_sample_round_trips_through_write_conllu(subset):
    # The sentences (FEATS as dicts) can be written back and read again.
    sentences = load_ewt_sample(subset)
    heads = [[t["head"] for t in s] for s in sentences]
    deprels = [[t["deprel"] for t in s] for s in sentences]
    text = write_conllu(io.StringIO(), sentences, heads, deprels,
                        comments=[s.comments for s in sentences]).getvalue()
    again = parse_conllu(text.splitlines())
    assert again == sentences
    assert [s.comments for s in again] == [s.comments for s in sentences]
    assert [s.metadata for s in again] == [s.metadata for s in sentences]
    # Line for line the bundled file, but for what the token dicts do not
    # hold: multiword-token lines, DEPS and MISC.
    bundled = [line.split("\t") for line in bundled_bytes(subset).decode().split("\n")]
    bundled = [cols[:8] for cols in bundled if len(cols) != 10 or "-" not in cols[0]]
    written = [line.split("\t")[:8] for line in text.split("\n")]
    assert written == bundled


def test_bad_target():
    with pytest.raises(ValueError, match=r"target must be 'upos' or 'tree'; got 'heads'"):
        load_ewt_sample("train", return_X_y=True, target="heads")
    with pytest.raises(ValueError, match=r"target='tree' says what y holds: pass "
                       r"return_X_y=True too"):
        load_ewt_sample("train", target="tree")


def test_each_call_returns_fresh_objects():
    # Callers may mutate what they get; that must not leak into later calls.
    a = load_ewt_sample("test")
    a[0][0]["upos"] = "CHANGED"
    a.pop()
    b = load_ewt_sample("test")
    assert len(b) == N_SENTENCES["test"] and b[0][0]["upos"] != "CHANGED"


def test_sentences_pickle():
    sentences = load_ewt_sample("test")
    again = pickle.loads(pickle.dumps(sentences))
    assert again == sentences
    assert [s.metadata for s in again] == [s.metadata for s in sentences]
    assert [s.comments for s in again] == [s.comments for s in sentences]


@pytest.mark.parametrize("bad", ["dev", "Train", "all", None, 0])
def test_bad_subset(bad):
    with pytest.raises(ValueError, match="subset must be 'train' or 'test'"):
        load_ewt_sample(bad)


def test_bad_return_X_y():
    with pytest.raises(ValueError, match="return_X_y"):
        load_ewt_sample("train", return_X_y="yes")


# --------------------------------------------------------------------------
# Against the full treebank in ../shared/data


def _source_blocks(shared_data, subset):
    path = shared_data / "ud" / "UD_English-EWT" / f"en_ewt-ud-{subset}.conllu"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return sentence_blocks(path.read_bytes())


@pytest.mark.shared_data
@pytest.mark.parametrize("subset", ["train", "test"])
def test_sample_is_byte_identical_to_source(shared_data, subset):
    source = _source_blocks(shared_data, subset)
    by_id = {sent_id(b): (i, b) for i, b in enumerate(source)}
    bundled = sentence_blocks(bundled_bytes(subset))
    positions = []
    for block in bundled:
        i, original = by_id[sent_id(block)]
        assert block == original, sent_id(block)
        positions.append(i)
    assert positions == sorted(positions)  # in the order of the source file


@pytest.mark.shared_data
@pytest.mark.parametrize("subset", ["train", "test"])
def test_sample_follows_the_stated_rule(shared_data, subset):
    source = _source_blocks(shared_data, subset)
    expected = b"".join(ewt_slice(source, *RUNS[subset]))
    got = bundled_bytes(subset)
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(expected).hexdigest()


@pytest.mark.shared_data
def test_source_is_the_stated_commit(shared_data):
    text = (shared_data / "ud" / "UD_English-EWT" / "SOURCE").read_text()
    assert SOURCE_COMMIT in text


# --------------------------------------------------------------------------
# From a real (non-editable) installation


@pytest.mark.slow
def test_loader_works_from_a_built_copy(tmp_path):
    # Build the package the way `pip install .` does (setuptools' build step,
    # which copies package_data; the wheel is a zip of its output), from a
    # copy of the sources so that nothing is written into the checkout, then
    # load the sample in a fresh interpreter that imports the built copy.
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    src = tmp_path / "src"
    src.mkdir()
    for name in ["setup.py", "README.rst", "LICENSE", "MANIFEST.in"]:
        shutil.copy(root / name, src / name)
    shutil.copytree(root / "sksparse_struct", src / "sksparse_struct",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc",
                                                  "data"))
    # Only the files that git tracks in data/ (a stray local file must not
    # make the test pass).
    (src / "sksparse_struct" / "datasets" / "data").mkdir()
    for name in DATA_FILES:
        shutil.copy(root / "sksparse_struct" / "datasets" / "data" / name,
                    src / "sksparse_struct" / "datasets" / "data" / name)
    build = tmp_path / "build"
    subprocess.run([sys.executable, "setup.py", "-q", "build", "--build-base", str(build)],
                   cwd=src, check=True, capture_output=True, timeout=600)
    site = build / "lib"
    assert sorted(p.name for p in (site / "sksparse_struct" / "datasets" / "data").iterdir()) == \
        sorted(DATA_FILES)
    code = (
        "import sksparse_struct.datasets as d; "
        "print(d.__file__); "
        "print(len(d.load_ewt_sample('train')), len(d.load_ewt_sample('test')), "
        "*map(len, d.load_cdcp_sample()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert done.returncode == 0, done.stderr
    where, counts = done.stdout.splitlines()
    assert where.startswith(str(site))  # the built copy, not the checkout
    assert counts == "360 100 20 20 8 8"
