"""Loaders for the small data samples shipped inside the package."""

import importlib.resources

from ._conllu import read_conllu_binary, words_and_tags

__all__ = ["load_ewt_sample"]

EWT_SAMPLE_FILES = {
    "train": "en_ewt-ud-train-sample.conllu.gz",
    "test": "en_ewt-ud-test-sample.conllu.gz",
}


def load_ewt_sample(subset="train", *, return_X_y=False):
    """Load the bundled sample of the UD English Web Treebank.

    A slice of the Universal Dependencies English Web Treebank (UD_English-EWT
    v2.15, commit ``15d613d``) shipped with the package for examples and
    smoke tests: 360 training sentences (5,684 words) taken from
    ``en_ewt-ud-train.conllu`` and 100 test sentences (1,182 words) from
    ``en_ewt-ud-test.conllu``, from all five genres (weblogs, emails,
    newsgroups, Yahoo! answers, reviews). Each subset is a set of runs of
    consecutive sentences at evenly spaced positions of its source file. The
    sentences are unmodified (every column and comment line as in the
    treebank).

    The data are licensed under CC BY-SA 4.0
    (https://creativecommons.org/licenses/by-sa/4.0/), not under the
    package's BSD license. Annotations (c) 2013-2021 The Board of Trustees
    of The Leland Stanford Junior University. If you use them, cite
    Silveira et al. (2014), "A Gold Standard Dependency Corpus for English",
    LREC. Attribution and the list of sentences taken are in
    ``sksparse_struct/datasets/data/EWT_SAMPLE_LICENSE.txt``.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which slice to load.
    return_X_y : bool, default=False
        If True, return the word forms and UPOS tags of each sentence
        instead of the full annotation.

    Returns
    -------
    sentences : list of Sentence
        When ``return_X_y=False``. Each sentence is a list of token dicts
        with the keys ``id``, ``form``, ``lemma``, ``upos``, ``xpos``,
        ``feats`` (a dict), ``head`` and ``deprel``, one per syntactic word
        (contractions such as "don't" are two words, "do" and "n't"). Its
        ``metadata`` attribute maps comment keys (``sent_id``, ``text``, ...)
        to values, and ``comments`` holds the raw comment lines. Every call
        returns new objects.
    (X, y) : tuple of two lists of lists of str
        When ``return_X_y=True``: ``X[i]`` the words of sentence ``i`` and
        ``y[i]`` their universal POS tags (17 tags: ``ADJ``, ``ADP``, ...,
        ``X``).

    Examples
    --------
    >>> from sksparse_struct.datasets import load_ewt_sample
    >>> sentences = load_ewt_sample("test")
    >>> len(sentences)
    100
    >>> [(t["form"], t["upos"]) for t in sentences[0]][:3]
    [('What', 'PRON'), ('if', 'SCONJ'), ('Google', 'PROPN')]
    >>> X, y = load_ewt_sample("train", return_X_y=True)
    >>> len(X), sum(len(words) for words in X)
    (360, 5684)
    """
    if not isinstance(subset, str) or subset not in EWT_SAMPLE_FILES:
        raise ValueError(f"subset must be 'train' or 'test'; got {subset!r}")
    if not isinstance(return_X_y, bool):
        raise ValueError(f"return_X_y must be True or False; got {return_X_y!r}")
    name = EWT_SAMPLE_FILES[subset]
    # importlib.resources rather than __file__, so that the data are found
    # wherever and however the package is installed (wheel, zip, editable).
    resource = importlib.resources.files(__package__) / "data" / name
    with resource.open("rb") as f:
        sentences = read_conllu_binary(f, f"sksparse_struct/datasets/data/{name}")
    if return_X_y:
        return words_and_tags(sentences, tag="upos")
    return sentences
