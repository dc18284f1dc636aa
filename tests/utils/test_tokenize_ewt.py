"""The "ud" tokenizer measured on UD English-EWT (needs the shared data; slow).

The raw text of each document is rebuilt from the ``# text`` comments of
its sentences: the sentences of a paragraph joined by a space, the
paragraphs by a blank line (``layout="paragraphs"``, as the raw text of the
CoNLL 2018 shared task), or the whole document on one line
(``layout="document"``). Tokens, words and sentences are scored as in the
shared task's evaluation: F1 of exact character spans, a multiword token
("don't") counted once among the tokens and as its words among the words.

Run ``python tests/utils/test_tokenize_ewt.py [test|dev|train]`` to print
the scores.
"""

import os
import sys
from pathlib import Path

import pytest

from sksparse_struct.utils._tokenize import tokenize


def _documents(path):
    """Per document, its paragraphs; per paragraph, its sentences as (text, tokens).

    A token is ``(form, words)``: ``words`` is ``None`` for a plain word, the
    word forms for a multiword token.
    """
    documents, sentence, tokens, last_range = [], None, None, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# newdoc"):
                documents.append([])
            elif line.startswith("# newpar") or (line.startswith("#") and not documents):
                if not documents:
                    documents.append([])
                documents[-1].append([])
            elif line.startswith("# text = "):
                sentence = line[len("# text = "):]
                tokens = []
                if not documents[-1]:
                    documents[-1].append([])
            elif line and line[0].isdigit():
                cols = line.split("\t")
                if "." in cols[0]:
                    continue
                if "-" in cols[0]:
                    first, last = map(int, cols[0].split("-"))
                    tokens.append((cols[1], []))
                    last_range = last
                elif last_range and int(cols[0]) <= last_range:
                    tokens[-1][1].append(cols[1])
                else:
                    last_range = 0
                    tokens.append((cols[1], None))
            elif not line and tokens is not None:
                documents[-1][-1].append((sentence, tokens))
                tokens, last_range = None, 0
    return documents


def _gold(documents, layout):
    """The raw texts, with the gold token, word and sentence spans."""
    texts, gold = [], []
    for paragraphs in documents:
        parts, tok, word, sent = [], set(), set(), set()
        offset = 0
        for p, sentences in enumerate(paragraphs):
            if p:
                sep = "\n\n" if layout == "paragraphs" else " "
                parts.append(sep)
                offset += len(sep)
            for s, (text, tokens) in enumerate(sentences):
                if s:
                    parts.append(" ")
                    offset += 1
                parts.append(text)
                at, first = 0, None
                for form, words in tokens:
                    while text[at].isspace():
                        at += 1
                    assert text.startswith(form, at), (text, form)
                    a, b = offset + at, offset + at + len(form)
                    tok.add((a, b))
                    first = a if first is None else first
                    if words is None:
                        word.add((a, b))
                    elif "".join(words) == form:
                        for w in words:
                            word.add((a, a + len(w)))
                            a += len(w)
                    else:  # words that do not spell their token: never matched
                        word.update((a, b, k) for k in range(len(words)))
                    at += len(form)
                sent.add((first, offset + at))
                offset += len(text)
        texts.append("".join(parts))
        gold.append((tok, word, sent))
    return texts, gold


def _predicted(text):
    t = tokenize(text)
    starts, ends = t.starts.tolist(), t.ends.tolist()
    words = set(zip(starts, ends))
    in_multiword = set()
    tokens = set()
    for first, last in t.multiword:
        tokens.add((starts[first], ends[last]))
        in_multiword.update(range(first, last + 1))
    tokens.update((starts[i], ends[i]) for i in range(len(starts)) if i not in in_multiword)
    bounds = t.sentence_starts.tolist()
    sentences = {(starts[i], ends[j - 1]) for i, j in zip(bounds[:-1], bounds[1:])}
    return tokens, words, sentences


def ewt_scores(path, layout="paragraphs"):
    """``{"tokens": F1, "words": F1, "sentences": F1}`` (percent) on a CoNLL-U file."""
    texts, gold = _gold(_documents(path), layout)
    counts = {name: [0, 0, 0] for name in ("tokens", "words", "sentences")}
    for text, spans in zip(texts, gold):
        for name, g, p in zip(counts, spans, _predicted(text)):
            counts[name][0] += len(g & p)
            counts[name][1] += len(g)
            counts[name][2] += len(p)
    return {name: 200 * c / (g + p) for name, (c, g, p) in counts.items()}


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["paragraphs", "document"])
def test_ewt_test_scores(shared_data, layout):
    path = shared_data / "ud" / "UD_English-EWT" / "en_ewt-ud-test.conllu"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    scores = ewt_scores(path, layout)
    # The scores of doc/large_corpora.rst, rounded down.
    assert scores["tokens"] >= 99.2
    assert scores["words"] >= 99.0
    assert scores["sentences"] >= (84.1 if layout == "paragraphs" else 68.6)


if __name__ == "__main__":
    split = sys.argv[1] if len(sys.argv) > 1 else "test"
    data = Path(os.environ.get("SKSPARSE_STRUCT_SHARED_DATA", "../shared/data"))
    for layout in ("paragraphs", "document"):
        scores = ewt_scores(data / "ud" / "UD_English-EWT" / f"en_ewt-ud-{split}.conllu", layout)
        print(split, layout, " ".join(f"{k} {v:.2f}" for k, v in scores.items()))
