"""Checks of dependency heads shared by the readers, the metrics and the parser.

Heads follow the CoNLL-U convention: ``heads[j]`` is the head of word
``j + 1`` of a sentence, ``0`` for the root, otherwise the 1-based index of
the head word.
"""

import numbers

import numpy as np

__all__ = ["as_heads", "first_bad_tree", "is_labelled_pair", "tree_error"]


def as_heads(seq, name, i):
    """One sentence's heads as an int64 array, checked to lie in ``[0, n]``.

    Only the range is checked, not that the heads form a tree (see
    :func:`tree_error`).

    Parameters
    ----------
    seq : sequence of int or ndarray of shape (n,)
        The heads of the ``n`` words of sentence ``i``.
    name : str
        Name of the argument holding the sentences, for error messages.
    i : int
        Index of the sentence in that argument, for error messages.

    Returns
    -------
    heads : ndarray of shape (n,), dtype int64

    Raises
    ------
    ValueError
        If ``seq`` is not a flat sequence of integers, or a head is negative
        or larger than the number of words. The message names the element,
        as ``name[i][j]``.

    Examples
    --------
    >>> from sksparse_struct.utils import as_heads
    >>> as_heads([2, 0, 2], "y", 0)
    array([2, 0, 2])
    >>> as_heads([2, 0, 4], "heads_pred", 3)
    Traceback (most recent call last):
        ...
    ValueError: heads_pred[3][2] (word 3 of sentence 3) is 4, outside [0, 3]: a head is 0 for the root or the 1-based index of a word of the same sentence, which has 3 words.
    """
    try:
        arr = np.asarray(seq)
    except Exception as exc:  # ragged nesting and the like
        raise ValueError(f"{name}[{i}] could not be read as heads: {exc}") from exc
    if arr.ndim != 1:
        raise ValueError(
            f"{name}[{i}] must be a flat sequence of heads (one integer per "
            f"word); got an array of shape {arr.shape}."
        )
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        if isinstance(seq, np.ndarray):
            raise ValueError(
                f"heads must be integers (0 for the root, else a 1-based word "
                f"index); {name}[{i}] is an array of dtype {arr.dtype}."
            )
        # Point at the first element that is not an integer.
        j, value = next(
            (j, value) for j, value in enumerate(seq)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral))
        raise ValueError(
            f"heads must be integers (0 for the root, else a 1-based word "
            f"index); {name}[{i}][{j}] (word {j + 1} of sentence {i}) is the "
            f"{type(value).__name__} {value!r:.60}."
        )
    arr = arr.astype(np.int64, copy=False)
    n = arr.shape[0]
    bad = np.flatnonzero((arr < 0) | (arr > n))
    if bad.size:
        j = int(bad[0])
        raise ValueError(
            f"{name}[{i}][{j}] (word {j + 1} of sentence {i}) is {int(arr[j])}, "
            f"outside [0, {n}]: a head is 0 for the root or the 1-based index "
            f"of a word of the same sentence, which has {n} words."
        )
    return arr


def is_labelled_pair(item):
    """Whether one sentence's target is a ``(heads, deprels)`` pair.

    A head sequence holds integers, never sequences, so a pair is told apart
    by its second element being a sequence.

    Parameters
    ----------
    item : object
        One sentence's target: a head sequence or a ``(heads, deprels)``
        pair.

    Returns
    -------
    bool

    Examples
    --------
    >>> from sksparse_struct.utils import is_labelled_pair
    >>> is_labelled_pair(([2, 0], ["det", "root"]))
    True
    >>> is_labelled_pair([2, 0])
    False
    >>> is_labelled_pair(([0], "root"))
    False
    """
    if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 2:
        return False
    second = item[1]
    return not isinstance(second, (str, bytes)) and hasattr(second, "__len__")


def tree_error(heads, single_root=False):
    """What makes ``heads`` not a tree, as ``(word, message)``, or ``None``.

    The checks, in order: a head out of range, a word that is its own head,
    a cycle (listing its words, and saying so when no word is attached to
    the root, which always leaves a cycle), and with ``single_root`` more
    than one word attached to the root (listing them).

    Parameters
    ----------
    heads : sequence of int
        ``heads[i]`` is the head of word ``i + 1`` (0 for the root).
    single_root : bool, default=False
        Whether exactly one word may be attached to the root.

    Returns
    -------
    error : tuple of (int, str) or None
        ``None`` if ``heads`` is a tree, else ``(word, message)``: the
        1-based word the message is about, and what is wrong.

    See Also
    --------
    first_bad_tree : The same test on many sentences at once.

    Examples
    --------
    >>> from sksparse_struct.utils import tree_error
    >>> tree_error([2, 0, 2]) is None
    True
    >>> tree_error([0, 3, 4, 2])
    (2, 'words 2 -> 3 -> 4 -> 2 form a cycle (their heads never reach the root)')
    >>> tree_error([0, 0], single_root=True)
    (2, 'words 1 and 2 are both attached to the root (single_root=True)')
    """
    n = len(heads)
    for i, h in enumerate(heads):
        if h < 0 or h > n:
            return i + 1, (f"HEAD {h} of word {i + 1} is out of range: the "
                           f"sentence has {n} words")
        if h == i + 1:
            return i + 1, f"word {h} is its own head"
    roots = [i + 1 for i, h in enumerate(heads) if h == 0]
    state = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, n + 1):
        path = []
        v = start
        while state[v] == 0:
            state[v] = 1
            path.append(v)
            v = heads[v - 1]
        if state[v] == 1:
            cycle = path[path.index(v):]
            # Start the cycle at its smallest word, so the message is stable.
            k = cycle.index(min(cycle))
            cycle = cycle[k:] + cycle[:k]
            words = " -> ".join(map(str, cycle + cycle[:1]))
            if not roots:
                return cycle[0], ("no word is attached to the root (HEAD 0): "
                                  f"words {words} form a cycle")
            return cycle[0], (f"words {words} form a cycle (their heads never "
                              "reach the root)")
        for u in path:
            state[u] = 2
    if single_root and len(roots) > 1:
        listed = ", ".join(map(str, roots[:-1])) + f" and {roots[-1]}"
        both = "both" if len(roots) == 2 else "all"
        return roots[1], (f"words {listed} are {both} attached to the root "
                          "(single_root=True)")
    return None


def first_bad_tree(flat_heads, lengths, single_root=False):
    """Index of the first sentence whose heads are not a tree, or ``None``.

    All sentences at once: words are followed up to the root by pointer
    doubling, so a sentence costs O(n log n) NumPy work instead of a Python
    loop per word. :func:`tree_error` then says what is wrong with that
    sentence.

    Parameters
    ----------
    flat_heads : ndarray of shape (n_words,), dtype int64
        The heads of every sentence, one sentence after the other (0 for
        the root, else the 1-based index of a word of the same sentence).
    lengths : ndarray of shape (n_sentences,), dtype int64
        The number of words of each sentence.
    single_root : bool, default=False
        Whether exactly one word of a sentence may be attached to the root.

    Returns
    -------
    index : int or None
        The index of the first sentence that is not a tree, ``None`` if
        they all are.

    See Also
    --------
    tree_error : What is wrong with one sentence.

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.utils import first_bad_tree
    >>> lengths = np.array([3, 2, 1])
    >>> first_bad_tree(np.array([2, 0, 2, 2, 1, 0]), lengths)
    1
    >>> first_bad_tree(np.array([2, 0, 2, 0, 1, 0]), lengths) is None
    True
    >>> first_bad_tree(np.array([2, 0, 0, 0, 1, 0]), lengths, single_root=True)
    0
    """
    n_total = flat_heads.shape[0]
    n_sent = lengths.shape[0]
    if n_sent == 0:
        return None
    starts = np.zeros(n_sent, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    sentence = np.repeat(np.arange(n_sent), lengths)
    position = np.arange(n_total) - starts[sentence]  # 0-based word index
    bad = (flat_heads < 0) | (flat_heads > lengths[sentence]) | (flat_heads == position + 1)
    bad_sentence = np.zeros(n_sent, dtype=bool)
    bad_sentence[sentence[bad]] = True
    is_root = flat_heads == 0
    n_roots = np.bincount(sentence[is_root], minlength=n_sent)
    bad_sentence |= n_roots == 0
    if single_root:
        bad_sentence |= n_roots > 1
    # parent[g] is the global index of the head of word g; n_total is the root.
    parent = np.where(is_root | bad, n_total, starts[sentence] + flat_heads - 1)
    parent = np.append(parent, n_total)
    longest = int(lengths.max())
    steps = 1
    while (1 << steps) < longest + 1:
        steps += 1
    for _ in range(steps):
        parent = parent[parent]
    bad_sentence[sentence[parent[:-1] != n_total]] = True
    found = np.flatnonzero(bad_sentence)
    return int(found[0]) if found.shape[0] else None
