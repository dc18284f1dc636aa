"""Tests for read_brat on two hand-written essays and on malformed files."""

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.datasets import read_brat

ESSAYS = Path(__file__).parent / "data" / "brat"


def test_reads_the_essays():
    X, y = read_brat(ESSAYS)
    assert [doc["id"] for doc in X] == ["essay_a", "essay_b"]
    doc = X[0]
    texts = [doc["text"][a:b] for a, b in doc["propositions"]]
    assert texts[0] == "city centres should be free of private cars"
    assert texts[-1].startswith("banning cars")
    assert y[0] == (["MajorClaim", "Claim", "Premise", "Claim", "Claim", "Premise",
                     "MajorClaim"],
                    [(1, 3), (2, 1), (5, 4)])
    # Title, blank line, introduction, two body paragraphs, conclusion and
    # the empty line after the final line break.
    assert [doc["text"][a:b] for a, b in doc["paragraphs"]][:2] == [
        "Should cities ban cars from their centres?", ""]
    assert doc["paragraphs"][2][0] == doc["paragraphs"][1][1] + 1
    assert doc["proposition_paragraph"] == [2, 3, 3, 3, 4, 4, 5]
    assert doc["corenlp"] is None and doc["discourse"] is None
    # The T lines of essay_b are out of order: propositions follow the text.
    doc = X[1]
    starts = [a for a, _ in doc["propositions"]]
    assert starts == sorted(starts)
    assert y[1] == (["MajorClaim", "Claim", "Premise", "Premise", "Claim", "MajorClaim"],
                    [(2, 1), (3, 1)])
    for doc in X:
        for (a, b), p in zip(doc["propositions"], doc["proposition_paragraph"]):
            start, end = doc["paragraphs"][p]
            assert start <= a < b <= end


def test_path_forms_and_options():
    X, y = read_brat(ESSAYS / "essay_b.ann")
    assert [doc["id"] for doc in X] == ["essay_b"]
    X2, y2 = read_brat([str(ESSAYS / "essay_b.ann"), ESSAYS / "essay_a.ann"])
    assert [doc["id"] for doc in X2] == ["essay_b", "essay_a"]
    assert y2[0] == y[0]
    _, y = read_brat(ESSAYS, link_types=["attacks"])
    assert [links for _, links in y] == [[(5, 4)], []]
    _, y = read_brat(ESSAYS, link_types="supports")
    assert y[0][1] == [(1, 3), (2, 1)]
    _, y = read_brat(ESSAYS, link_types=None)
    assert y[0][1] == [(1, 3), (2, 1), (5, 4)]
    # Only claims: the premises and their relations are left out.
    X, y = read_brat(ESSAYS, labels={"Claim", "MajorClaim"})
    assert y[0] == (["MajorClaim", "Claim", "Claim", "Claim", "MajorClaim"], [(1, 2)])
    assert len(X[0]["propositions"]) == 5
    X, _ = read_brat(ESSAYS, paragraphs=False)
    assert X[0]["paragraphs"] == [(0, len(X[0]["text"]))]
    assert set(X[0]["proposition_paragraph"]) == {0}


def write(tmp_path, text, ann, name="doc"):
    (tmp_path / f"{name}.txt").write_text(text, encoding="utf-8", newline="")
    (tmp_path / f"{name}.ann").write_text(ann, encoding="utf-8", newline="")
    return tmp_path / f"{name}.ann"


TEXT = "Cars pollute.\r\nBan them now."


def test_crlf_text_and_ann(tmp_path):
    # Offsets count "\r\n" as two characters; the .ann may end lines in "\r\n".
    ann = ("T1\tPremise 0 12\tCars pollute\r\nT2\tClaim 15 23\tBan them\r\n"
           "R1\tsupports Arg1:T1 Arg2:T2\r\n")
    X, y = read_brat(write(tmp_path, TEXT, ann))
    assert X[0]["paragraphs"] == [(0, 13), (15, 28)]
    assert X[0]["proposition_paragraph"] == [0, 1]
    assert y[0] == (["Premise", "Claim"], [(0, 1)])


@pytest.mark.parametrize("ann, match", [
    ("T1\tPremise 0 12\n", r"line 1: a T line needs three tab-separated fields"),
    ("T1\tPremise 0 12\tCars pollute\nT2\tClaim 15\tBan\n", "line 2: expected 'type start end'"),
    ("T1\tPremise 0 x\tCars\n", "line 1: offsets '0' 'x' are not integers"),
    ("T1\tPremise 0 4;5 12\tCars pollute\n", "line 1: discontinuous span '0 4;5 12' of T1"),
    ("T1\tPremise 0 99\tCars\n", r"line 1: span \[0, 99\) of T1 is empty or out of range"),
    ("T1\tPremise 0 12\tCars polluted\n", "line 1: the text of T1, 'Cars polluted', differs"),
    ("T1\tPremise 0 12\tCars pollute\nT2\tClaim 5 23\tpollute. Ban them\n",
     r"components T1 \(line 1\) and T2 \(line 2\) overlap"),
    ("T1\tPremise 0 12\tCars pollute\nR1\tsupports Arg1:T1 Arg2:T9\n",
     "line 2: relation refers to T9"),
    ("T1\tPremise 0 12\tCars pollute\nR1\tsupports Arg1:T1 Arg2:T1\n",
     "line 2: relation links T1 to itself"),
    ("T1\tPremise 0 12\tCars pollute\nR1\tsupports T1 T1\n", "line 2: expected 'R<n>"),
    ("T1\tPremise 0 12\tCars pollute\nT1\tClaim 15 23\tBan them\n",
     "line 2: duplicate annotation id T1"),
])
def test_malformed(tmp_path, ann, match):
    path = write(tmp_path, TEXT, ann)
    with pytest.raises(ValueError, match=f"{path.name}, line|{path.name}: components"):
        read_brat(path)
    with pytest.raises(ValueError, match=match):
        read_brat(tmp_path)


def test_whitespace_in_component_text(tmp_path):
    # brat writes a line break inside a component as a space.
    ann = "T1\tClaim 5 23\tpollute. Ban them\n"
    _, y = read_brat(write(tmp_path, TEXT.replace(".\r\n", ".\n"), ann))
    assert y[0] == (["Claim"], [])


def test_bad_paths_and_options(tmp_path):
    with pytest.raises(ValueError, match="no .ann files"):
        read_brat(tmp_path)
    with pytest.raises(ValueError, match="empty list"):
        read_brat([])
    with pytest.raises(ValueError, match="is not a .ann file"):
        read_brat(tmp_path / "doc.txt")
    with pytest.raises(ValueError, match="does not exist"):
        read_brat(tmp_path / "doc.ann")
    (tmp_path / "doc.ann").write_text("")
    with pytest.raises(ValueError, match=r"document 'doc': text file .*doc\.txt is missing"):
        read_brat(tmp_path)
    (tmp_path / "doc.txt").write_bytes(b"\xff")
    with pytest.raises(ValueError, match="is not UTF-8"):
        read_brat(tmp_path)
    with pytest.raises(ValueError, match="paragraphs must be True or False"):
        read_brat(ESSAYS, paragraphs=None)
    with pytest.raises(ValueError, match="labels must be None or a collection of str"):
        read_brat(ESSAYS, labels=3)
    with pytest.raises(ValueError, match="link_types must be None or a collection of str"):
        read_brat(ESSAYS, link_types=[1])


def test_empty_annotation(tmp_path):
    X, y = read_brat(write(tmp_path, "Nothing here.", "# no components\n"))
    assert X[0]["propositions"] == [] and y[0] == ([], [])


@st.composite
def brat_documents(draw):
    """A random text with non-overlapping components and relations."""
    words = draw(st.lists(st.sampled_from(["alpha", "beta", "gamma\n", "delta", "é"]),
                          min_size=1, max_size=12))
    text = " ".join(words)
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=8)))
    spans = [(a, b) for a, b in zip(cuts[::2], cuts[1::2])
             if a < b and text[a:b].strip() and "\n" not in text[a:b]]
    types = [draw(st.sampled_from(["Claim", "Premise"])) for _ in spans]
    n = len(spans)
    pairs = [(s, t) for s in range(n) for t in range(n) if s != t]
    relations = draw(st.lists(st.tuples(st.sampled_from(pairs),
                                        st.sampled_from(["supports", "attacks", "other"])),
                              max_size=5)) if pairs else []
    ids = draw(st.permutations(range(n)))  # T ids unrelated to text order
    return text, spans, types, relations, ids


@given(brat_documents())
def test_round_trip(document):
    text, spans, types, relations, ids = document
    lines = [f"T{ids[i] + 1}\t{types[i]} {a} {b}\t{text[a:b]}" for i, (a, b) in enumerate(spans)]
    lines += [f"R{r + 1}\t{kind} Arg1:T{ids[s] + 1} Arg2:T{ids[t] + 1}"
              for r, ((s, t), kind) in enumerate(relations)]
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), text, "\n".join(lines[::-1]))
        X, y = read_brat(path)
    assert X[0]["propositions"] == spans
    expected = sorted({pair for pair, kind in relations if kind != "other"})
    assert y[0] == (types, expected)
    starts = [a for a, _ in X[0]["paragraphs"]]
    assert X[0]["proposition_paragraph"] == [text.count("\n", 0, a) for a, _ in spans]
    assert starts[0] == 0 and all(text[s - 1] == "\n" for s in starts[1:])


# --- byte-order marks, missing folders, split files ---------------------------------


def test_a_utf8_byte_order_mark_is_dropped(tmp_path):
    text = "Cars pollute. Ban them."
    ann = ("T1\tPremise 0 12\tCars pollute\nT2\tClaim 14 22\tBan them\n"
           "R1\tsupports Arg1:T1 Arg2:T2\n")
    bom = "\ufeff"
    (tmp_path / "doc.txt").write_text(bom + text, encoding="utf-8")
    (tmp_path / "doc.ann").write_text(bom + ann, encoding="utf-8")
    X, y = read_brat(tmp_path)
    assert X[0]["text"] == text
    assert [X[0]["text"][a:b] for a, b in X[0]["propositions"]] == ["Cars pollute", "Ban them"]
    # The first T line is read although the .ann starts with the mark.
    assert y[0] == (["Premise", "Claim"], [(0, 1)])


def test_a_missing_folder_is_named(tmp_path):
    missing = tmp_path / "brat-project-final"
    with pytest.raises(ValueError, match=r"folder not found: .*brat-project-final"):
        read_brat(missing)
    with pytest.raises(ValueError, match="folder not found"):
        read_brat(str(missing), split_file=missing / "split.csv", split="TRAIN")


def _corpus(tmp_path, names):
    for name in names:
        write(tmp_path, f"Text of {name}.", "T1\tClaim 0 4\tText\n", name=name)
    return tmp_path


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_split_file_with_any_line_ending(tmp_path, newline):
    folder = _corpus(tmp_path, ["essay001", "essay002", "essay003", "essay004"])
    lines = ['"ID";"SET"', '"essay003";"TRAIN"', '"essay001";"TRAIN"', '"essay002";"TEST"',
             "", '"essay004";"TEST"']
    split = tmp_path / "train-test-split.csv"
    split.write_bytes(newline.join(lines).encode("utf-8"))
    X, y = read_brat(folder, split_file=split, split="TRAIN")
    assert [doc["id"] for doc in X] == ["essay003", "essay001"]  # the file's order
    assert y[0] == (["Claim"], [])
    X, _ = read_brat(folder, split_file=str(split), split="TEST")
    assert [doc["id"] for doc in X] == ["essay002", "essay004"]


def test_split_file_forms(tmp_path):
    folder = _corpus(tmp_path, ["a", "b"])
    # no header, commas, a byte-order mark, the names with their extension
    split = tmp_path / "split.csv"
    split.write_text("\ufeffb.ann,dev\na,train\n", encoding="utf-8")
    X, _ = read_brat(folder, split_file=split, split="dev")
    assert [doc["id"] for doc in X] == ["b"]
    # header in another column order, tabs
    split.write_text("set\tid\ntrain\tb\ntrain\ta\n", encoding="utf-8")
    X, _ = read_brat(folder, split_file=split, split="train")
    assert [doc["id"] for doc in X] == ["b", "a"]


def test_documents_by_name(tmp_path):
    folder = _corpus(tmp_path, ["a", "b", "c"])
    X, _ = read_brat(folder, documents=["c", "a"])
    assert [doc["id"] for doc in X] == ["c", "a"]


def test_bad_splits_are_named(tmp_path):
    folder = _corpus(tmp_path, ["essay001"])
    split = tmp_path / "split.csv"
    split.write_text('"ID";"SET"\n"essay001";"TRAIN"\n"essay999";"TRAIN"\n')
    with pytest.raises(ValueError, match=r"names 1 document\(s\) that have no .ann file in "
                                         r".*'essay999'"):
        read_brat(folder, split_file=split, split="TRAIN")
    with pytest.raises(ValueError, match=r"no document of set 'train'.*'TRAIN' \(2\)"):
        read_brat(folder, split_file=split, split="train")
    with pytest.raises(ValueError, match="split_file needs split"):
        read_brat(folder, split_file=split)
    with pytest.raises(ValueError, match="needs split_file"):
        read_brat(folder, split="TRAIN")
    with pytest.raises(ValueError, match="not both"):
        read_brat(folder, documents=["essay001"], split_file=split, split="TRAIN")
    with pytest.raises(ValueError, match="split_file not found"):
        read_brat(folder, split_file=tmp_path / "nope.csv", split="TRAIN")
    with pytest.raises(ValueError, match="documents must be a sequence of document names"):
        read_brat(folder, documents="essay001")
    with pytest.raises(ValueError, match="is not a folder"):
        read_brat(folder / "essay001.ann", documents=["essay001"])
    split.write_text('"ID";"SET"\n"essay001"\n')
    with pytest.raises(ValueError, match=r"split.csv, line 2: expected a document name and "
                                         "its set"):
        read_brat(folder, split_file=split, split="TRAIN")
