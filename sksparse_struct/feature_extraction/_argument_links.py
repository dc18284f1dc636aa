"""Link features of :class:`ArgumentFeatures`: candidate links and what their two ends share.

A candidate link is an ordered pair of distinct propositions of the same
paragraph (:func:`_candidates`). Its sparse features gather the columns of
its source and its target (:func:`_gather_rows`); its dense ones come from
the pair (shared nouns, same sentence, distance) and the PMI of the
propositions' lemmas with incoming and outgoing links.
"""

import numpy as np

def _candidates(prop_para):
    """Ordered pairs of distinct propositions of the same paragraph, source-major."""
    n = len(prop_para)
    s, t = np.nonzero((prop_para[:, None] == prop_para[None, :]) & ~np.eye(n, dtype=bool))
    return np.column_stack([s, t]).astype(np.int64).reshape(-1, 2)


def _gather_rows(indptr, indices, rows):
    """(output row, column) of the entries of CSR ``rows``, one output row per entry of rows."""
    lens = indptr[rows + 1] - indptr[rows]
    total = int(lens.sum())
    first = np.repeat(indptr[rows] - (np.cumsum(lens) - lens), lens)
    return np.repeat(np.arange(len(rows)), lens), indices[first + np.arange(total)]


def _nouns(d):
    return d.attrs["nouns"] if d.attrs["nouns"] else [set() for _ in range(d.n_props)]


def _shared_counts(d):
    """|N_x ∩ N_y| for every pair of propositions."""
    nouns = _nouns(d)
    vocab = {w: i for i, w in enumerate(sorted(set().union(*nouns)))}
    N = np.zeros((d.n_props, max(len(vocab), 1)))
    for k, ns in enumerate(nouns):
        N[k, [vocab[w] for w in ns]] = 1.0
    return N @ N.T


def _same_sentence(d):
    S = np.zeros((d.n_props, max(d.n_sents, 1)))
    for k, ss in enumerate(d.prop_sents):
        S[k, ss] = 1.0
    return (S @ S.T) > 0
