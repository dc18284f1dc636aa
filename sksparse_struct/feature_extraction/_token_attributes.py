"""Token attributes derived from the word: spelling flags, shapes, affixes.

The attribute names that templates of :class:`TokenFeatures` may use besides
the columns, and the functions that compute them, shared by its dict and
matrix outputs.
"""

import unicodedata

__all__ = ["ALL_FLAGS", "short_word_shape", "word_shape"]

# Boolean spelling flags of a word.
_FLAGS = {
    "is_title": str.istitle,
    "is_upper": str.isupper,
    "is_lower": str.islower,
    "is_digit": str.isdigit,
    "has_digit": lambda w: any(c.isdigit() for c in w),
    "has_upper": lambda w: any(c.isupper() for c in w),
    "has_hyphen": lambda w: "-" in w,
    "is_punct": lambda w: bool(w)
    and all(unicodedata.category(c).startswith("P") for c in w),
}
ALL_FLAGS = tuple(_FLAGS)

# Attributes derived from the word; any other attribute name is a column.
_WORD_ATTRS = ("w", "lower", "shape", "short_shape")

def _is_affix(attr):
    return attr[:6] in ("prefix", "suffix") and attr[6:].isdigit() and int(attr[6:]) > 0


def _is_word_attr(attr):
    """Whether an attribute is derived from the word (else it is a column)."""
    return attr in _WORD_ATTRS or attr in _FLAGS or _is_affix(attr)


def word_shape(word):
    """The shape of a word: upper-case letters become ``X``, lower-case ``x``,
    digits ``d``; other characters are kept.

    >>> from sksparse_struct.feature_extraction._token_attributes import (
    ...     short_word_shape, word_shape)
    >>> word_shape("McDonald's-2"), short_word_shape("McDonald's-2")
    ("XxXxxxxx'x-d", "XxXx'x-d")
    """
    return "".join(
        "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c
        for c in word
    )


def short_word_shape(word):
    """:func:`word_shape` with runs of the same character collapsed."""
    out = []
    for c in word_shape(word):
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


class _WordInfo(dict):
    """word -> tuple of derived attribute values, computed on first use."""

    def __init__(self, attrs):
        super().__init__()
        funcs = []
        for attr in attrs:
            if attr == "lower":
                funcs.append(str.lower)
            elif attr == "shape":
                funcs.append(word_shape)
            elif attr == "short_shape":
                funcs.append(short_word_shape)
            elif attr in _FLAGS:
                funcs.append(_FLAGS[attr])
            elif attr.startswith("prefix"):
                k = int(attr[6:])
                funcs.append(lambda w, k=k: w[:k] if len(w) >= k else None)
            else:
                k = int(attr[6:])
                funcs.append(lambda w, k=k: w[-k:] if len(w) >= k else None)
        self.funcs = funcs

    def __missing__(self, word):
        info = self[word] = tuple(f(word) for f in self.funcs)
        return info
