"""ColumnTagger: jackknifed tags as token columns, and a parser trained on them."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline

from sksparse_struct import ColumnTagger, SparseMAPParser
from sksparse_struct.datasets import load_ewt_sample

FIELDS = ("lemma", "upos", "xpos", "feats")


class MemoTagger(BaseEstimator):
    """A tagger stand-in that memorises its training sentences.

    On a sentence it was trained on it returns the gold tags; on any other it
    returns ``"n<k>"`` for every token, ``k`` the number of its training
    sentences. It keeps its training tokens to show what a tagger was fed.
    """

    def fit(self, X, y):
        self.memory_ = {tuple(t["form"] for t in s): list(tags) for s, tags in zip(X, y)}
        self.X_ = copy.deepcopy(X)
        return self

    def predict(self, X):
        unseen = f"n{len(self.X_)}"
        return [self.memory_.get(tuple(t["form"] for t in s), [unseen] * len(s)) for s in X]


def _unique_sample(n):
    """``n`` training sentences of the bundled sample with distinct word sequences."""
    X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    seen, keep = set(), []
    for i, sentence in enumerate(X):
        words = tuple(t["form"] for t in sentence)
        if words not in seen:
            seen.add(words)
            keep.append(i)
    keep = keep[:n]
    return [X[i] for i in keep], [y[i] for i in keep]


def _column(X, name):
    return [[token[name] for token in sentence] for sentence in X]


def test_jackknife_holds_out_each_fold():
    X, _ = _unique_sample(30)
    tags = ColumnTagger(tagger=MemoTagger(), cv=3, random_state=0)
    X_new = tags.fit_transform(X)
    # Every sentence is tagged by a tagger that never saw it, trained on the
    # other two folds (20 sentences), for both columns.
    assert _column(X_new, "upos") == [["n20"] * len(s) for s in X]
    assert _column(X_new, "xpos") == [["n20"] * len(s) for s in X]
    # The final taggers saw all of them: transform gives the gold tags back.
    X_final = tags.transform(X)
    assert _column(X_final, "upos") == _column(X, "upos")
    assert _column(X_final, "xpos") == _column(X, "xpos")
    assert len(tags.taggers_["upos"].X_) == 30


class TrainSetTagger(BaseEstimator):
    """Tags every token with the words of its training sentences' first tokens."""

    def fit(self, X, y):
        self.seen_ = " ".join(sentence[0]["form"] for sentence in X)
        return self

    def predict(self, X):
        return [[self.seen_] * len(sentence) for sentence in X]


@pytest.mark.parametrize("shuffle", [False, True])
def test_folds(shuffle):
    # Sentence i is the word w<i>: each sentence's tag names the training
    # sentences of the tagger that tagged it.
    X = [[{"form": f"w{i}", "upos": "X", "xpos": "Y"}] for i in range(12)]
    X_new = ColumnTagger(tagger=TrainSetTagger(), cv=3, shuffle=shuffle,
                         random_state=0).fit_transform(X)
    trained_on = [set(s[0]["upos"].split()) for s in X_new]
    held_out = {}
    for i, words in enumerate(trained_on):
        assert f"w{i}" not in words and len(words) == 8
        held_out.setdefault(frozenset(words), []).append(i)
    # Three folds of four sentences, each tagged by a tagger trained on the others.
    assert sorted(map(len, held_out.values())) == [4, 4, 4]
    for words, fold in held_out.items():
        assert words == {f"w{i}" for i in range(12) if i not in fold}
    folds = sorted(held_out.values())
    # Consecutive sentences by default (a document stays in one fold).
    assert (folds == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]) != shuffle
    assert X_new[0][0]["xpos"] == X_new[0][0]["upos"]


def test_jackknifed_tags_are_worse_than_the_final_ones():
    # With a real tagger the jackknifed tags are worse than the final
    # taggers' tags on their own training sentences, and different per cv.
    X, _ = _unique_sample(60)
    tags = ColumnTagger(columns=("upos",), cv=3, random_state=0)
    jackknifed = _column(tags.fit_transform(X), "upos")
    final = _column(tags.transform(X), "upos")
    gold = _column(X, "upos")

    def accuracy(pred):
        return np.mean([p == g for ps, gs in zip(pred, gold) for p, g in zip(ps, gs)])

    assert accuracy(jackknifed) < accuracy(final) - 0.05
    assert 0.5 < accuracy(jackknifed) < 0.95


def test_feed_predicted_gives_later_taggers_the_jackknifed_tags():
    X, _ = _unique_sample(12)
    tags = ColumnTagger(tagger=MemoTagger(), cv=4, feed_predicted=True)
    X_new = tags.fit_transform(X)
    upos_tagger, xpos_tagger = tags.taggers_["upos"], tags.taggers_["xpos"]
    # The UPOS tagger sees only the words; the XPOS tagger the words and the
    # jackknifed UPOS, never the gold tags.
    assert {k for s in upos_tagger.X_ for t in s for k in t} == {"form"}
    assert {k for s in xpos_tagger.X_ for t in s for k in t} == {"form", "upos"}
    assert _column(xpos_tagger.X_, "upos") == _column(X_new, "upos") == [
        ["n9"] * len(s) for s in X]
    # On new text the XPOS tagger gets the final UPOS tagger's tags.
    X_final = tags.transform([[{"form": "unseen"}, {"form": "words"}]])
    assert X_final[0][0]["upos"] == "n12"

    unfed = ColumnTagger(tagger=MemoTagger(), cv=4).fit(X)  # the default
    assert {k for s in unfed.taggers_["xpos"].X_ for t in s for k in t} == {"form"}


def test_fit_skips_the_last_columns_jackknife_only():
    # fit needs the jackknifed UPOS (it feeds the XPOS tagger) but not the
    # jackknifed XPOS; the final taggers are those of fit_transform.
    X, _ = _unique_sample(12)
    a = ColumnTagger(tagger=MemoTagger(), cv=3, feed_predicted=True).fit(X)
    b = ColumnTagger(tagger=MemoTagger(), cv=3, feed_predicted=True)
    b.fit_transform(X)
    for column in ("upos", "xpos"):
        assert a.taggers_[column].X_ == b.taggers_[column].X_
    assert a.classes_ == b.classes_


def test_output_fields_and_input_not_mutated():
    X, _ = _unique_sample(12)
    X[0][0] = dict(X[0][0], misc="SpaceAfter=No")
    before = copy.deepcopy(X)
    tags = ColumnTagger(tagger=MemoTagger(), cv=3, random_state=0)
    X_new = tags.fit_transform(X)
    X_final = tags.transform(X)
    assert X == before
    for out in (X_new, X_final):
        assert out[0][0]["misc"] == "SpaceAfter=No"
        assert all(list(t)[:5] == ["form", *FIELDS] for s in out for t in s)
        assert all(t["lemma"] == "_" and t["feats"] == "_" for s in out for t in s)
        assert _column(out, "form") == _column(X, "form")
        assert all(out[i][j] is not X[i][j] for i in range(len(X)) for j in range(len(X[i])))
    # Without clearing, the fields not predicted pass through.
    kept = ColumnTagger(columns=("upos",), tagger=MemoTagger(), cv=3,
                        clear_unpredicted=False).fit(X)
    out = kept.transform(X)
    assert _column(out, "lemma") == _column(X, "lemma")
    assert _column(out, "xpos") == _column(X, "xpos")
    assert X == before
    # Only words in, every field out.
    assert kept.transform([[{"form": "Hi"}]]) == [[{"form": "Hi", "upos": "n12"}]]
    assert tags.transform([[{"form": "Hi"}]]) == [[
        {"form": "Hi", "lemma": "_", "upos": "n12", "xpos": "n12", "feats": "_"}]]


def test_other_word_column_and_one_column():
    X = [[{"word": w, "pos": p} for w, p in zip("a b c".split(), "X Y Z".split())],
         [{"word": w, "pos": p} for w, p in zip("b c".split(), "Y Z".split())]]
    tags = ColumnTagger(columns=("pos",), tagger=MemoTagger(), cv=2, word_column="word")
    with pytest.raises(KeyError):  # MemoTagger reads "form"
        tags.fit(X)
    tags = ColumnTagger(columns=("pos",), cv=2, word_column="word", random_state=0)
    out = tags.fit(X).transform(X)
    assert _column(out, "pos") == _column(X, "pos")
    assert tags.classes_ == {"pos": ["X", "Y", "Z"]}


def test_reproducible_and_same_for_every_n_jobs():
    X, _ = _unique_sample(20)
    one = ColumnTagger(cv=2, random_state=0).fit_transform(X)
    again = ColumnTagger(cv=2, random_state=0).fit_transform(X)
    two = ColumnTagger(cv=2, random_state=0, n_jobs=2).fit_transform(X)
    assert one == again == two


def test_verbose(capsys):
    X, _ = _unique_sample(6)
    ColumnTagger(tagger=MemoTagger(), cv=2, verbose=1).fit_transform(X)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6
    assert lines[0].startswith("[ColumnTagger] upos: fold 1/2 fitted in ")
    assert lines[-1].startswith("[ColumnTagger] xpos: final tagger fitted in ")


def test_pickle_and_clone():
    X, _ = _unique_sample(30)
    tags = ColumnTagger(cv=2, random_state=0).fit(X)
    restored = pickle.loads(pickle.dumps(tags))
    new = [[{"form": w} for w in "The dogs barked at the mailman .".split()]]
    assert restored.transform(new) == tags.transform(new)
    fresh = clone(tags)
    assert fresh.get_params() == tags.get_params()
    assert not hasattr(fresh, "taggers_")


def test_pipeline_with_parser_on_raw_words():
    X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    X_test, y_test = load_ewt_sample("test", return_X_y=True, target="tree")
    model = Pipeline([("tags", ColumnTagger(cv=3, random_state=0)),
                      ("parser", SparseMAPParser(max_iter=3, tol=None, random_state=0))])
    model.fit(X, y)
    raw = [[{"form": t["form"]} for t in s] for s in X_test]
    heads_test = [heads for heads, _ in y_test]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "fields missing" warning on raw words
        uas_raw = model.score(raw, heads_test)
    # The gold tags of X_test are replaced, so they change nothing.
    assert model.score(X_test, heads_test) == uas_raw
    assert 0.6 < uas_raw < 0.9
    # The parser was trained on the tags, with no lemmas ("_" for features
    # counts as given: it is what raw text gets too).
    assert model.named_steps["parser"].token_fields_ == ("upos", "xpos", "feats")


def test_not_fitted():
    with pytest.raises(NotFittedError):
        ColumnTagger().transform([[{"form": "a"}]])


@pytest.mark.parametrize("params, X, message", [
    ({}, [[{"form": "a", "upos": "X"}]] * 5, "sentence 0 token 0 lacks column 'xpos'"),
    ({"columns": ("upos", "deprel")}, [[{"form": "a", "upos": "X", "xpos": "Y"}]] * 5,
     "sentence 0 token 0 lacks column 'deprel'"),
    ({}, [[{"form": "a", "upos": "X", "xpos": "Y"}]] * 4
     + [[{"form": "a", "upos": "X", "xpos": "Y"}, {"upos": "X", "xpos": "Y"}]],
     "sentence 4 token 1 lacks column 'form'"),
    ({}, [[{"form": "a", "upos": "X", "xpos": 3}]] * 5,
     "sentence 0 token 0 has a non-string column 'xpos' (3)"),
    ({}, [], "cannot fit taggers on zero sentences"),
    ({}, [[{"form": "a", "upos": "X", "xpos": "Y"}]] * 4,
     "cv=5 folds need at least 5 training sentences, got 4"),
    ({}, [[{"form": "a", "upos": "X", "xpos": "Y"}]] * 4 + [[]], "sentence 4 has no tokens"),
    ({}, [[("a", "X")]] * 5, "sentence 0 token 0 must be a dict, got tuple"),
    ({}, "a sentence", "X must be a list of sentences"),
    ({}, ["a sentence"] * 5, "sentence 0 must be a list of token dicts, got str"),
    ({"columns": ()}, [[{"form": "a"}]] * 5, "columns must be a non-empty tuple"),
    ({"columns": ("upos", "upos")}, [[{"form": "a", "upos": "X"}]] * 5, "repeated names"),
    ({"columns": ("form",)}, [[{"form": "a"}]] * 5, "the word column 'form' cannot be"),
])
def test_bad_input(params, X, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ColumnTagger(**params).fit(X)


def test_bad_input_in_transform():
    X, _ = _unique_sample(6)
    tags = ColumnTagger(tagger=MemoTagger(), cv=2).fit(X)
    with pytest.raises(ValueError, match="sentence 1 token 0 lacks column 'form'"):
        tags.transform([[{"form": "a"}], [{"word": "b"}]])
    assert tags.transform([]) == []


def test_bad_parameters():
    X, _ = _unique_sample(6)
    with pytest.raises(ValueError, match="cv"):
        ColumnTagger(cv=1).fit(X)


class ShortTagger(MemoTagger):
    def predict(self, X):
        return [tags[:-1] for tags in super().predict(X)]


def test_tagger_with_wrong_output():
    X, _ = _unique_sample(6)
    with pytest.raises(ValueError, match="tagger of column 'upos' did not return one tag"):
        # The held-out tags of the first column are checked as they come.
        ColumnTagger(tagger=ShortTagger(), cv=2).fit_transform(X)
    tags = ColumnTagger(columns=("upos",), tagger=ShortTagger(), cv=2).fit(X)
    with pytest.raises(ValueError, match="tagger of column 'upos' did not return one tag"):
        tags.transform(X)


class CountingTagger(MemoTagger):
    fits = 0  # over all clones, in this process (n_jobs=None)

    def fit(self, X, y):
        CountingTagger.fits += 1
        return super().fit(X, y)


def test_fit_jackknifes_only_what_a_later_tagger_reads():
    # fit keeps the final taggers only: without feed_predicted no fold is fitted;
    # with it, the first column's folds are (the second tagger reads their tags).
    X, _ = _unique_sample(6)
    CountingTagger.fits = 0
    ColumnTagger(tagger=CountingTagger(), cv=2).fit(X)
    assert CountingTagger.fits == 2
    CountingTagger.fits = 0
    ColumnTagger(tagger=CountingTagger(), cv=2, feed_predicted=True).fit(X)
    assert CountingTagger.fits == 1 + 2 + 1
    CountingTagger.fits = 0
    ColumnTagger(tagger=CountingTagger(), cv=2).fit_transform(X)
    assert CountingTagger.fits == 2 * (1 + 2)
