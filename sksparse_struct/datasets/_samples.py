"""Loaders for the small data samples shipped inside the package."""

import importlib.resources
import json

from ._cdcp import SUFFIXES, cdcp_document
from ._compression import gunzip_if_compressed
from ._conllu import read_conllu_binary, words_and_tags
from ._treebank import read_conllu

__all__ = ["load_cdcp_sample", "load_ewt_sample"]

CDCP_SAMPLE_FILE = "cdcp_sample.json.gz"

EWT_SAMPLE_FILES = {
    "train": "en_ewt-ud-train-sample.conllu.gz",
    "test": "en_ewt-ud-test-sample.conllu.gz",
}


def load_ewt_sample(subset="train", *, return_X_y=False, target="upos"):
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
        If True, return ``(X, y)`` for a tagger or a parser (see ``target``)
        instead of the full annotation.
    target : {"upos", "tree"}, default="upos"
        What ``(X, y)`` holds when ``return_X_y=True``: ``"upos"`` the words
        and universal POS tags of each sentence, for a tagger; ``"tree"``
        the token dicts and dependency trees, for a parser (what
        :class:`~sksparse_struct.SparseMAPParser` fits on).

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
        When ``return_X_y=True`` and ``target="upos"``: ``X[i]`` the words
        of sentence ``i`` and ``y[i]`` their universal POS tags (17 tags:
        ``ADJ``, ``ADP``, ..., ``X``).
    (X, y) : tuple of two lists
        When ``return_X_y=True`` and ``target="tree"``: ``X[i]`` the words of
        sentence ``i`` as token dicts with the keys ``form``, ``lemma``,
        ``upos``, ``xpos`` and ``feats`` (as :func:`read_conllu` gives them:
        FEATS as the file's string), and ``y[i] = (heads, deprels)``: an
        int64 array with the head of each word (0 for the root) and the
        list of its relation labels.

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

    For a parser:

    >>> X, y = load_ewt_sample("test", return_X_y=True, target="tree")
    >>> X[75][0]
    {'form': 'Dessert', 'lemma': 'dessert', 'upos': 'NOUN', 'xpos': 'NN', 'feats': 'Number=Sing'}
    >>> heads, deprels = y[75]
    >>> [t["form"] for t in X[75]], heads.tolist(), deprels
    (['Dessert', 'was', 'good', '.'], [3, 3, 0, 3], ['nsubj', 'cop', 'root', 'punct'])
    """
    if not isinstance(subset, str) or subset not in EWT_SAMPLE_FILES:
        raise ValueError(f"subset must be 'train' or 'test'; got {subset!r}")
    if not isinstance(return_X_y, bool):
        raise ValueError(f"return_X_y must be True or False; got {return_X_y!r}")
    if not isinstance(target, str) or target not in ("upos", "tree"):
        raise ValueError(f"target must be 'upos' or 'tree'; got {target!r}")
    if target != "upos" and not return_X_y:
        raise ValueError(f"target={target!r} says what y holds: pass return_X_y=True too")
    name = EWT_SAMPLE_FILES[subset]
    source = f"sksparse_struct/datasets/data/{name}"
    # importlib.resources rather than __file__, so that the data are found
    # wherever and however the package is installed (wheel, zip, editable).
    resource = importlib.resources.files(__package__) / "data" / name
    with resource.open("rb") as f:
        if target == "tree":
            X, heads, deprels = read_conllu(f, return_deprel=True)
            return X, list(zip(heads, deprels))
        sentences = read_conllu_binary(f, source)
    if return_X_y:
        return words_and_tags(sentences, tag="upos")
    return sentences


def load_cdcp_sample(*, merge_nested=True, transitive_closure=True, annotations=True):
    """Load the bundled sample of the CDCP argument-mining corpus.

    28 documents of the Cornell eRulemaking Corpus (CDCP; Park and Cardie,
    2018) as distributed by Niculae, Park and Cardie (2017), shipped with
    the package for examples and smoke tests: 20 documents of the official
    training split (101 propositions) and 8 of the test split (43
    propositions), with their CoreNLP annotations (reduced to what feature
    extraction uses) and PDTB discourse relations. They are read exactly as
    :func:`read_cdcp` reads the corpus's folders.

    The data are licensed under the Open Database License (ODbL) 1.0, the
    contents under the Database Contents License (DbCL) 1.0, not under the
    package's BSD license; see
    ``sksparse_struct/datasets/data/CDCP_SAMPLE_LICENSE.txt``.

    Parameters
    ----------
    merge_nested, transitive_closure, annotations : bool, default=True
        As in :func:`read_cdcp`.

    Returns
    -------
    X_train : list of dict
        The 20 training documents (see :func:`read_cdcp`), sorted by id.
    y_train : list of (labels, links)
        Their targets.
    X_test : list of dict
        The 8 test documents.
    y_test : list of (labels, links)
        Their targets.

    See Also
    --------
    read_cdcp : Read the full corpus from its folders.

    Examples
    --------
    >>> from sksparse_struct.datasets import load_cdcp_sample
    >>> X_train, y_train, X_test, y_test = load_cdcp_sample()
    >>> len(X_train), len(X_test)
    (20, 8)
    >>> doc = X_train[0]
    >>> doc["id"], len(doc["propositions"])
    ('00219', 6)
    >>> y_train[0]
    (['value', 'testimony', 'value', 'fact', 'testimony', 'value'], [(3, 2), (4, 5)])
    >>> sum(len(links) for _, links in y_train), sum(len(links) for _, links in y_test)
    (53, 19)
    """
    for name, value in (("merge_nested", merge_nested),
                        ("transitive_closure", transitive_closure),
                        ("annotations", annotations)):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False; got {value!r}")
    resource = importlib.resources.files(__package__) / "data" / CDCP_SAMPLE_FILE
    with resource.open("rb") as f:
        data = gunzip_if_compressed(f.read(), f"sksparse_struct/datasets/data/{CDCP_SAMPLE_FILE}")
    bundle = json.loads(data.decode("utf-8"))
    out = []
    for split in ("train", "test"):
        X, y = [], []
        for doc_id in sorted(bundle[split]):
            files = bundle[split][doc_id]
            suffixes = SUFFIXES if annotations else SUFFIXES[:2]
            contents = {suffix: files.get(suffix) for suffix in suffixes}
            sources = {suffix: f"{CDCP_SAMPLE_FILE}:{split}/{doc_id}{suffix}"
                       for suffix in SUFFIXES}
            doc, target = cdcp_document(doc_id, contents, sources,
                                        merge_nested=merge_nested,
                                        closure=transitive_closure)
            X.append(doc)
            y.append(target)
        out += [X, y]
    return tuple(out)
