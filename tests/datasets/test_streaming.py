"""Lazy readers (iter_conll, iter_conllu) and the pieces every reader reads files in.

The readers read a file a piece of whole sentences at a time
(``_stream.PIECE_CHARS`` characters, cut at blank lines). With a piece
larger than the file, the file is parsed in one go, as the readers always
did; every test here compares that with pieces of a few characters, with
the lazy readers, and with independent references.
"""

import gzip
import io
import random
import re
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.datasets import (
    _stream,
    iter_conll,
    iter_conllu,
    read_conll,
    read_conllu,
)
from sksparse_struct.datasets._conllu import parse_conllu
from sksparse_struct.datasets._stream import BLANK_LINES, sentence_pieces

from ..test_conllu import broken_gzip_files

WHOLE = 10**9  # one piece: the whole file at once
PIECES = [1, 50, 700, WHOLE]
UPOS = ["NOUN", "VERB", "ADJ", "DET", "PUNCT"]


def treebank_text(n_sentences, seed=0, newline="\n"):
    """A CoNLL-U text with comments, multiword tokens, empty nodes, FEATS and runs of blanks."""
    rng = random.Random(seed)
    out = []
    for s in range(n_sentences):
        lines = [f"# sent_id = s{s}"]
        if rng.random() < 0.3:
            lines.append("# text = whatever it was")
        n = rng.randint(1, 12)
        in_range = False
        for j in range(1, n + 1):
            if j < n and not in_range and rng.random() < 0.1:
                in_range = True
                lines.append(f"{j}-{j + 1}\tww\t_\t_\t_\t_\t_\t_\t_\t_")
            else:
                in_range = False
            head = 0 if j == 1 else rng.randint(0, j - 1)
            feats = rng.choice(["_", "Number=Sing", "Case=Nom|Number=Plur"])
            form = rng.choice(["w", "dog", "café", "New York"])
            lines.append(f"{j}\t{form}\t{form.lower()}\t{rng.choice(UPOS)}\tNN\t{feats}\t{head}"
                         f"\t{rng.choice(['dep', 'nsubj', 'obj'])}\t_\t_")
            if rng.random() < 0.05:
                lines.append(f"{j}.1\tx\tx\tNOUN\tNN\t_\t_\t_\t{j}:dep\t_")
        out.append(newline.join(lines) + newline + newline * rng.choice([1, 1, 1, 2, 3]))
    return "".join(out)


def columns_text(n_sentences, seed=0):
    """A CoNLL-2000 style text with document markers and blank-looking lines."""
    rng = random.Random(seed)
    words, separators = ["He", "runs", "the", "caf\xe9"], [" ", "\t", "  "]
    out = []
    for _ in range(n_sentences):
        if rng.random() < 0.1:
            out.append("-DOCSTART- -X- O\n\n")
        for _ in range(rng.randint(1, 10)):
            out.append(rng.choice(words) + rng.choice(separators) + rng.choice(["NN", "VB"])
                       + " " + rng.choice(["B-NP", "I-NP", "O"]) + "\n")
        out.append(rng.choice(["\n", "\n", " \n", "\n\n"]))
    return "".join(out)


def as_sentences(columns):
    """read_conllu's lists, transposed: one tuple per sentence."""
    return list(zip(*columns))


def same(a, b):
    """Equality of nested lists / tuples whose leaves may be arrays."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and np.array_equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def outcome(fn):
    """What ``fn()`` returns, or the message of the ValueError it raises."""
    try:
        return fn()
    except ValueError as exc:
        return f"ValueError: {exc}"


# --------------------------------------------------------------------------
# The pieces


@given(st.lists(st.sampled_from(["a", "b\n", "\n", "\r", " ", "\t", "\n\n", "x y"]),
                max_size=40),
       st.lists(st.integers(0, 60), max_size=6),
       st.sampled_from(["conll", "conllu"]),
       st.one_of(st.builds(dict, n_sentences=st.integers(1, 3)),
                 st.builds(dict, min_chars=st.integers(0, 30))))
def test_pieces_cut_the_text_at_blank_lines(parts, cuts, fmt, size):
    text = "".join(parts)
    cuts = sorted({min(c, len(text)) for c in cuts})
    fragments = [text[i:j] for i, j in zip([0] + cuts, cuts + [len(text)]) if i < j]
    pieces = list(sentence_pieces(fragments, BLANK_LINES[fmt], **size))
    assert "".join(piece for piece, _ in pieces) == text
    blank = r"[ \t\r\f\v]*" if fmt == "conll" else r"\r*"
    line = 1
    for k, (piece, first_line) in enumerate(pieces):
        assert piece and first_line == line
        line += piece.count("\n")
        if k < len(pieces) - 1:
            # A piece ends right after a blank line: between two sentences.
            *_, before, last = [""] + piece.split("\n")
            assert last == "" and re.fullmatch(blank, before), piece
            # ...and no earlier than it must: the first past the size.
            if "min_chars" in size:
                ends = [m.end() for m in BLANK_LINES[fmt].finditer(piece)]
                assert ends[-1] == len(piece)
                assert all(end < size["min_chars"] for end in ends[:-1])


def test_pieces_hold_at_least_n_sentences_and_long_sentences_whole():
    text = "".join(f"{k} a\n{k} b\n\n" for k in range(10))
    pieces = [p for p, _ in sentence_pieces([text], BLANK_LINES["conll"], n_sentences=3)]
    assert [p.count("\n\n") for p in pieces] == [3, 3, 3, 1]
    long = "w\n" * 5000 + "\n"
    pieces = list(sentence_pieces([long[i:i + 7] for i in range(0, len(long), 7)] + ["z\n"],
                                  BLANK_LINES["conllu"], min_chars=10))
    assert pieces == [(long, 1), ("z\n", 5002)]


# --------------------------------------------------------------------------
# iter_conllu / read_conllu: the same sentences for any piece size


OPTIONS = {"return_deprel": True, "return_metadata": True, "return_multiword": True}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_iter_conllu_is_read_conllu_for_any_piece_size(monkeypatch, newline):
    text = "\ufeff" + treebank_text(60, newline=newline)
    data = text.encode()
    monkeypatch.setattr(_stream, "PIECE_CHARS", WHOLE)
    reference = read_conllu(io.BytesIO(data), **OPTIONS)
    # Independently, the strict line-by-line parser.
    strict = parse_conllu(text[1:].split("\n"))
    assert [[t["form"] for t in s] for s in reference[0]] == \
        [[t["form"] for t in s] for s in strict]
    assert [h.tolist() for h in reference[1]] == [[t["head"] for t in s] for s in strict]
    assert len(reference[0]) == 60
    for size in PIECES:
        monkeypatch.setattr(_stream, "PIECE_CHARS", size)
        assert same(read_conllu(io.BytesIO(data), **OPTIONS), reference)
        assert same(list(iter_conllu(io.BytesIO(data), **OPTIONS)), as_sentences(reference))
    # Only what is asked for, in read_conllu's order.
    sentences = list(iter_conllu(io.StringIO(text), return_metadata=True))
    assert same(sentences, as_sentences((reference[0], reference[1], reference[3])))
    assert all(h.dtype == np.int64 and h.flags.owndata for _, h, _ in sentences)


@pytest.mark.parametrize("kind", ["path", "gzip", "text", "binary", "gzip-object"])
def test_iter_conllu_reads_paths_file_objects_and_gzip(tmp_path, monkeypatch, kind):
    monkeypatch.setattr(_stream, "PIECE_CHARS", 300)
    text = treebank_text(40)
    reference = as_sentences(read_conllu(io.StringIO(text), return_deprel=True))
    path = tmp_path / "t.conllu"
    packed = gzip.compress(text.encode())
    path.write_bytes(packed if kind.startswith("gzip") else text.encode())
    if kind in ("path", "gzip"):
        got = list(iter_conllu(path, return_deprel=True))
    elif kind == "text":
        with open(path, encoding="utf-8") as f:
            got = list(iter_conllu(f, return_deprel=True))
            assert not f.closed  # the caller's file object stays open
    else:
        with open(path, "rb") as f:
            got = list(iter_conllu(f, return_deprel=True))
    assert same(got, reference)


CONLLU_ERRORS = [
    # A malformed sentence, and the line of the error within it (1-based).
    ("1\tw\tw\tNOUN\tNN\t_\t0\troot\t_\n", 1, r"expected 10 tab-separated columns"),
    ("1\tw\tw\tNOUN\tNN\t_\t0\troot\t_\t_\n2\tv\tv\tBAD\tNN\t_\t1\tdep\t_\t_\n", 2,
     r"UPOS 'BAD' of word 2"),
    ("1\tw\tw\tNOUN\tNN\t_\t2\tdep\t_\t_\n2\tv\tv\tNOUN\tNN\t_\t1\tdep\t_\t_\n", 1,
     r"sentence 8 \(sent_id bad\): no word is attached to the root"),
    ("1\tw\tw\tNOUN\tNN\t_\t5\tdep\t_\t_\n", 1, r"HEAD 5 of word 1 is out of range"),
    ("1\tw\tw\tNOUN\tNN\tBad\t0\troot\t_\t_\n", 1, r"FEATS item 'Bad'"),
    ("1\tw\tw\tNOUN\tNN\t_\t0\troot\t_\t_\n# late\n", 2, r"comment line after the token"),
    ("1\tw\tw\tNOUN\tNN\t_\t0\troot\t_\t_\n3\tw\tw\tNOUN\tNN\t_\t1\tdep\t_\t_\n", 2,
     r"word ID 3 is out of sequence"),
]


@pytest.mark.parametrize("bad, offset, message", CONLLU_ERRORS)
def test_conllu_errors_name_the_same_line_for_any_piece_size(monkeypatch, bad, offset,
                                                               message):
    before = treebank_text(7)
    text = before + "# sent_id = bad\n" + bad + "\n" + treebank_text(5, seed=1)
    line = before.count("\n") + 1 + offset
    treebank, strict = set(), set()
    for size in PIECES:
        monkeypatch.setattr(_stream, "PIECE_CHARS", size)
        treebank.add(outcome(lambda: read_conllu(io.StringIO(text))))
        treebank.add(outcome(lambda: list(iter_conllu(io.StringIO(text)))))
        # read_conll's strict line-by-line parser (which leaves trees to the
        # parsers): whatever it says, the same for every piece size.
        strict.add(str(outcome(lambda: read_conll(io.StringIO(text), label="upos",
                                                  format="conllu"))))
    assert len(treebank) == 1 and len(strict) == 1, (treebank, strict)
    (said,) = treebank
    assert said.startswith(f"ValueError: <file object>, line {line}: "), said
    assert re.search(message, said)


@given(st.lists(st.sampled_from([
    "1\tw\tw\tNOUN\tNN\t_\t0\troot\t_\t_", "2\tv\tv\tVERB\tVB\tX=Y\t1\tobj\t_\t_",
    "1-2\tvw\t_\t_\t_\t_\t_\t_\t_\t_", "1.1\te\te\tX\t_\t_\t_\t_\t1:dep\t_",
    "# sent_id = a", "# note", "", "", "\r", "  ", "1\tw\tw\tNOUN\tNN\t_\t0\troot\t_\t_\r",
]), max_size=25), st.sampled_from([1, 9, 60]))
def test_conllu_any_text_any_piece_size(lines, size):
    # Heads are trees whenever the IDs are in sequence: only format errors.
    text = "\n".join(lines) + "\n"

    def read():
        return read_conllu(io.StringIO(text), **OPTIONS)

    saved = _stream.PIECE_CHARS
    try:
        _stream.PIECE_CHARS = WHOLE
        whole = outcome(read)
        _stream.PIECE_CHARS = size
        assert same(outcome(read), whole)
        lazy = outcome(lambda: list(iter_conllu(io.StringIO(text), **OPTIONS)))
        assert same(lazy, whole if isinstance(whole, str) else as_sentences(whole))
    finally:
        _stream.PIECE_CHARS = saved


# --------------------------------------------------------------------------
# iter_conll / read_conll


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_iter_conll_is_read_conll_for_any_piece_size(monkeypatch, newline):
    text = columns_text(80).replace("\n", newline)
    monkeypatch.setattr(_stream, "PIECE_CHARS", WHOLE)
    reference = read_conll(io.StringIO(text))
    assert len(reference[0]) == 80
    unlabelled = read_conll(io.StringIO(text), label=None)
    conllu = treebank_text(30)
    reference_u = read_conll(io.StringIO(conllu), format="conllu", label="xpos")
    for size in PIECES:
        monkeypatch.setattr(_stream, "PIECE_CHARS", size)
        assert read_conll(io.StringIO(text)) == reference
        assert list(iter_conll(io.StringIO(text))) == list(zip(*reference))
        assert list(iter_conll(io.StringIO(text), label=None)) == unlabelled
        assert list(iter_conll(io.StringIO(conllu), format="conllu", label="xpos")) == \
            list(zip(*reference_u))


@given(st.lists(st.sampled_from([
    "a b c", "x\ty z", "", "", " ", "\t \r", "-DOCSTART- -X- O", "a b", "p\xa0q r s",
    "a b c\r", "\x1c",
]), max_size=25), st.sampled_from([1, 7, 40]))
def test_column_files_any_text_any_piece_size(lines, size):
    text = "\n".join(lines)
    saved = _stream.PIECE_CHARS
    try:
        _stream.PIECE_CHARS = WHOLE
        whole = outcome(lambda: read_conll(io.StringIO(text)))
        _stream.PIECE_CHARS = size
        assert outcome(lambda: read_conll(io.StringIO(text))) == whole
        lazy = outcome(lambda: list(iter_conll(io.StringIO(text))))
        assert lazy == (whole if isinstance(whole, str) else list(zip(*whole)))
    finally:
        _stream.PIECE_CHARS = saved


def test_column_errors_name_the_line(monkeypatch):
    text = columns_text(50) + "too many columns here\n"
    line = text.count("\n")
    for size in PIECES:
        monkeypatch.setattr(_stream, "PIECE_CHARS", size)
        with pytest.raises(ValueError, match=rf"^<file object>, line {line}: expected 3 "):
            list(iter_conll(io.StringIO(text)))


# --------------------------------------------------------------------------
# Bytes: decoding and gzip


def test_decoding_errors_name_the_line_and_byte_whatever_the_fragments(monkeypatch):
    # Multi-byte characters across every read boundary, and bad bytes late.
    body = columns_text(5000).encode()
    assert len(body) > 3 * (1 << 16)
    for position in (1 << 16, (1 << 16) + 1, 2 * (1 << 16) - 1, len(body) - 5):
        data = body[:position] + b"\xe9" + body[position:]
        with pytest.raises(UnicodeDecodeError) as expected:
            data.decode("utf-8")
        start = expected.value.start
        line = data.count(b"\n", 0, start) + 1
        message = (rf"^<file object>, line {line}: not valid utf-8 "
                   rf"\({re.escape(expected.value.reason)} at byte {start}\)")
        for size in (500, WHOLE):
            monkeypatch.setattr(_stream, "PIECE_CHARS", size)
            with pytest.raises(ValueError, match=message):
                read_conll(io.BytesIO(data))
            with pytest.raises(ValueError, match=message):
                list(iter_conll(io.BytesIO(data)))
    # A character cut at the end of the file.
    with pytest.raises(ValueError, match=r"line 2: not valid utf-8 \(unexpected end of data"):
        list(iter_conll(io.BytesIO(b"a b c\nd e \xc3")))
    # Latin-1 decodes anything; "é" split across reads decodes whole.
    text = "caf\xe9 NN O\n" * 20000
    [(_, labels)] = iter_conll(io.BytesIO(text.encode("latin-1")), encoding="latin-1")
    assert labels == ["O"] * 20000
    [(tokens, _)] = iter_conll(io.BytesIO(text.encode()))
    assert tokens[-1]["word"] == "caf\xe9"


@pytest.mark.parametrize("reader", ["iter_conllu", "iter_conll"])
def test_broken_gzip_files_as_the_eager_readers_say(tmp_path, monkeypatch, reader):
    monkeypatch.setattr(_stream, "PIECE_CHARS", 2000)
    lazy = {"iter_conllu": lambda f: list(iter_conllu(f)),
            "iter_conll": lambda f: list(iter_conll(f, label="upos", format="conllu"))}[reader]
    eager = {"iter_conllu": read_conllu,
             "iter_conll": lambda f: read_conll(f, label="upos", format="conllu")}[reader]
    text = treebank_text(3000)
    for path, problem, n_lines in broken_gzip_files(tmp_path, text):
        message = outcome(lambda path=path: eager(path))
        assert re.match(rf"ValueError: {re.escape(str(path))}: not a readable gzip file: "
                        rf"{problem}.*, after line {n_lines} of the decompressed", message)
        assert outcome(lambda path=path: lazy(path)) == message
        with open(path, "rb") as f:
            assert outcome(lambda: lazy(f)) == message
    # A stream that cannot be read again: the problem, without the line.
    class Pipe:
        def __init__(self, data):
            self._data = io.BytesIO(data)

        def read(self, size=-1):
            return self._data.read(size)

    truncated = Pipe(gzip.compress(text.encode())[:5000])
    with pytest.raises(ValueError, match=r"^<file object>: not a readable gzip file: the "
                       r"compressed data end too early \(a truncated file\?\)\.$"):
        lazy(truncated)


def test_a_truncated_gzip_file_gives_its_sentences_before_the_error(tmp_path, monkeypatch):
    monkeypatch.setattr(_stream, "PIECE_CHARS", 1000)
    text = treebank_text(2000)
    path = tmp_path / "cut.conllu.gz"
    packed = gzip.compress(text.encode())
    path.write_bytes(packed[:len(packed) // 2])
    sentences = iter_conllu(path)
    got = [next(sentences) for _ in range(100)]
    assert same(got, as_sentences(read_conllu(io.StringIO(text)))[:100])
    with pytest.raises(ValueError, match="the compressed data end too early"):
        list(sentences)


def test_byte_order_marks(tmp_path):
    text = "\ufeff" + treebank_text(3)
    expected = as_sentences(read_conllu(io.StringIO(text[1:])))
    for data in (text.encode(), gzip.compress(text.encode())):
        assert same(list(iter_conllu(io.BytesIO(data))), expected)
    assert same(list(iter_conllu(io.StringIO(text))), expected)


# --------------------------------------------------------------------------
# Laziness


class EndlessTreebank(io.RawIOBase):
    """A binary stream that repeats a sentence forever, and counts what was read."""

    SENTENCE = b"1\tw\tw\tNOUN\tNN\t_\t0\troot\t_\t_\n\n"

    def __init__(self):
        self.n_read = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        n, k = len(buffer), self.n_read % len(self.SENTENCE)
        buffer[:n] = (self.SENTENCE * (n // len(self.SENTENCE) + 2))[k:k + n]
        self.n_read += n
        return n


def test_iteration_reads_only_what_it_needs():
    stream = EndlessTreebank()
    sentences = iter_conllu(stream)
    assert stream.n_read == 0  # nothing before the first item is asked for
    for _ in range(10):
        _, heads = next(sentences)
        assert heads.tolist() == [0]
    assert stream.n_read <= 2 * _stream.PIECE_CHARS + (1 << 17)
    stream = EndlessTreebank()
    assert next(iter_conll(stream, label="upos", format="conllu"))[1] == ["NOUN"]


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _consume(iterator):
    for _ in iterator:
        pass


def test_memory_of_a_lazy_read_does_not_grow_with_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(_stream, "PIECE_CHARS", 8192)
    small, large = tmp_path / "small.conllu", tmp_path / "large.conllu"
    text = treebank_text(300)
    small.write_text(text, encoding="utf-8")
    large.write_text(text * 8, encoding="utf-8")
    assert large.stat().st_size > 80 * 8192
    lazy_small = _peak(lambda: _consume(iter_conllu(small, return_deprel=True)))
    lazy_large = _peak(lambda: _consume(iter_conllu(large, return_deprel=True)))
    eager_large = _peak(lambda: read_conllu(large, return_deprel=True))
    columns_large = _peak(lambda: _consume(iter_conll(large, label="upos")))
    # Eight times the file: the eager read takes about eight times the
    # memory; the lazy ones about the same (CPython's free lists of small
    # objects, which tracemalloc counts as allocated, grow a little).
    assert lazy_large < eager_large / 10
    assert lazy_large - lazy_small < eager_large / 40, (lazy_small, lazy_large, eager_large)
    assert columns_large < eager_large / 10


# --------------------------------------------------------------------------
# Arguments


def test_arguments_are_checked_at_the_call(tmp_path):
    with pytest.raises(ValueError, match="return_deprel must be True or False"):
        iter_conllu(io.StringIO(""), return_deprel=1)
    with pytest.raises(ValueError, match="single_root must be True or False"):
        iter_conllu(io.StringIO(""), single_root="yes")
    with pytest.raises(ValueError, match="label 'ner' is not one of columns"):
        iter_conll(io.StringIO(""), label="ner")
    with pytest.raises(ValueError, match="format must be"):
        iter_conll(io.StringIO(""), format="csv")
    with pytest.raises(FileNotFoundError):
        iter_conllu(tmp_path / "absent.conllu")
    with pytest.raises(FileNotFoundError):
        iter_conll(tmp_path / "absent.txt")
    assert list(iter_conllu(io.StringIO(""))) == []
    assert list(iter_conll(io.BytesIO(b""))) == []


def test_a_file_object_that_does_not_give_text():
    class Odd:
        def read(self, size=-1):
            return 42

    with pytest.raises(TypeError, match="reading the file object returned int"):
        list(iter_conll(Odd()))
