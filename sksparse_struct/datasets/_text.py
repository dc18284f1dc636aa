"""Plain text as sentences of words: :func:`tokenize_text`, :func:`read_text`.

The sentences and words are those of the rule-based tokenizer of
``utils._tokenize`` (style ``"ud"``, the conventions of UD English-EWT);
this module turns them into the token dicts of :func:`read_conllu` and
into CoNLL-U lines, for :func:`predict_file` on plain text.
"""

from typing import NamedTuple

from ..utils._tokenize import tokenize
from ._stream import TextSource

__all__ = ["TextSentence", "read_text", "text_sentences", "text_tokens", "tokenize_text"]


class TextSentence(NamedTuple):
    """A sentence of plain text, as the tokenizer cut it.

    ``forms`` are its words; ``multiword`` the runs of words that are one
    token of the text, ``(first, last)`` 0-based and inclusive;
    ``space_after[i]`` whether whitespace (or the end of the text) follows
    word ``i``; ``text`` the sentence as written, from its first word to its
    last; ``newpar`` whether it starts a paragraph (it is the first of the
    text, or a blank line comes before it); ``start`` the offset of its
    first character in the text.
    """

    forms: list
    multiword: list
    space_after: list
    text: str
    newpar: bool
    start: int


def text_sentences(text, newlines_before=2):
    """The sentences of ``text``, as :class:`TextSentence`.

    ``newlines_before`` is the number of line breaks between the last word
    before ``text`` and its start (2 or more: ``text`` starts a paragraph).
    """
    t = tokenize(text, style="ud")
    starts, ends = t.starts.tolist(), t.ends.tolist()
    bounds = t.sentence_starts.tolist()
    multiword = t.multiword
    m = 0
    previous_end = 0
    sentences = []
    for i, j in zip(bounds[:-1], bounds[1:]):
        newlines = text.count("\n", previous_end, starts[i]) + (newlines_before if i == 0 else 0)
        runs = []
        while m < len(multiword) and multiword[m][0] < j:
            runs.append((multiword[m][0] - i, multiword[m][1] - i))
            m += 1
        # The last word of the text is followed by its end, taken as a space.
        space_after = [k + 1 == len(starts) or ends[k] < starts[k + 1] for k in range(i, j)]
        sentences.append(TextSentence([text[a:b] for a, b in zip(starts[i:j], ends[i:j])],
                                      runs, space_after, text[starts[i]:ends[j - 1]],
                                      newlines >= 2, starts[i]))
        previous_end = ends[j - 1]
    return sentences


def text_tokens(sentence):
    """The token dicts of a :class:`TextSentence`, as :func:`read_conllu` gives them."""
    return [{"form": form, "lemma": "_", "upos": "_", "xpos": "_", "feats": "_"}
            for form in sentence.forms]


def tokenize_text(text, *, return_offsets=False):
    """Split English text into sentences of words, by a small set of rules.

    The rules follow the tokenization of the Universal Dependencies English
    Web Treebank (EWT) where a regular expression can: clitics are split
    off ("do" "n't", "I" "'m", "John" "'s", "can" "not"), hyphenated
    compounds are split ("well" "-" "known") but not after a prefix
    ("e-mail", "non-profit"), and URLs, e-mail addresses, file names,
    numbers ("3.5", "1,000", "10:30"), abbreviations ("Mr.", "U.S.",
    "e.g."), runs of punctuation ("...", "?!") and emoticons (":)") stay
    whole. A sentence ends at a line break and after ``.``, ``!``, ``?``
    or ``…`` (and runs of them, with a closing quote or bracket that follows
    at once), but not after a title or an initial ("Mr.", "J."), nor after
    an ellipsis before a lower-case word. Every word is a slice of the
    text; text already split into words by spaces keeps its splits. See
    :ref:`text-input` for the rules and their measured accuracy.

    Parameters
    ----------
    text : str
        The text.
    return_offsets : bool, default=False
        Also return the character offsets of the words.

    Returns
    -------
    sentences : list of list of str
        The words of each sentence.
    offsets : list of list of tuple
        ``(start, end)`` of each word: ``text[start:end]`` is the word. Only
        if ``return_offsets``.

    See Also
    --------
    read_text : A text file as sentences of token dicts.

    Examples
    --------
    >>> from sksparse_struct.datasets import tokenize_text
    >>> tokenize_text("Mr. Li didn't pay $3.50 for e-mail. Why?")
    [['Mr.', 'Li', 'did', "n't", 'pay', '$', '3.50', 'for', 'e-mail', '.'], ['Why', '?']]
    >>> tokenize_text("I'm here.", return_offsets=True)
    ([['I', "'m", 'here', '.']], [[(0, 1), (1, 3), (4, 8), (8, 9)]])
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}.")
    t = tokenize(text, style="ud")
    starts, ends = t.starts.tolist(), t.ends.tolist()
    bounds = t.sentence_starts.tolist()
    sentences = [[text[a:b] for a, b in zip(starts[i:j], ends[i:j])]
                 for i, j in zip(bounds[:-1], bounds[1:])]
    if not return_offsets:
        return sentences
    offsets = [list(zip(starts[i:j], ends[i:j])) for i, j in zip(bounds[:-1], bounds[1:])]
    return sentences, offsets


def read_text(path, *, return_multiword=False, encoding="utf-8"):
    """Read a plain-text file as sentences of token dicts, ready for a parser.

    The text is cut into sentences and words by the rules of
    :func:`tokenize_text`. Each word is a dict like those of
    :func:`read_conllu`, with its form and ``"_"`` (unspecified) for the
    other fields; the metadata of each sentence give it a ``sent_id`` (1,
    2, ...), its ``text`` as written and, at the start of a paragraph (the
    first sentence, and each after a blank line), ``newpar``, so that
    :func:`write_conllu` writes them as a CoNLL-U file's comments.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The file, plain or gzip-compressed (recognised from the content). A
        file object may be opened in text or binary mode.
    return_multiword : bool, default=False
        Also return the multiword tokens, the words split from one token of
        the text ("don't" is "do" and "n't"), as :func:`read_conllu` gives
        them.
    encoding : str, default="utf-8"
        The text encoding of the file.

    Returns
    -------
    X : list of list of dict
        One list per sentence, one dict per word with the keys ``"form"``,
        ``"lemma"``, ``"upos"``, ``"xpos"`` and ``"feats"``.
    metadata : list of dict
        Per sentence, ``{"sent_id": ..., "newpar": None, "text": ...}``
        (``newpar`` only where a paragraph starts).
    multiword : list of list of tuple
        Per sentence, ``(first, last, form)`` for each multiword token
        (1-based word numbers). Only if ``return_multiword``.

    Raises
    ------
    ValueError
        On text that is not valid in ``encoding`` (naming the file and the
        line) and on truncated or corrupt gzip data.
    OSError
        If ``path`` cannot be opened.

    See Also
    --------
    predict_file : Tag or parse a plain-text file of any size, lazily.

    Examples
    --------
    >>> import io
    >>> from sksparse_struct.datasets import read_text
    >>> X, metadata = read_text(io.StringIO("I don't know.\\n\\nMe neither."))
    >>> [[token["form"] for token in sentence] for sentence in X]
    [['I', 'do', "n't", 'know', '.'], ['Me', 'neither', '.']]
    >>> X[1][0]
    {'form': 'Me', 'lemma': '_', 'upos': '_', 'xpos': '_', 'feats': '_'}
    >>> metadata[0]
    {'sent_id': '1', 'newpar': None, 'text': "I don't know."}
    """
    source = TextSource(path, encoding)
    source.check_readable()
    text = "".join(source.fragments())
    X, metadata, multiword = [], [], []
    for k, sentence in enumerate(text_sentences(text), 1):
        X.append(text_tokens(sentence))
        entry = {"sent_id": str(k)}
        if sentence.newpar:
            entry["newpar"] = None
        entry["text"] = sentence.text
        metadata.append(entry)
        multiword.append([(a + 1, b + 1, _token_form(sentence, a, b))
                          for a, b in sentence.multiword])
    if return_multiword:
        return X, metadata, multiword
    return X, metadata


def _token_form(sentence, first, last):
    return "".join(sentence.forms[first:last + 1])


def conllu_block(sentence, columns):
    """A sentence's CoNLL-U lines, its comments but ``# sent_id`` included.

    ``columns`` maps a 0-based column index (2 LEMMA to 7 DEPREL) to the
    values of the sentence's words; the other columns are ``"_"``. MISC says
    ``SpaceAfter=No`` where no whitespace follows a token. Ends with the
    blank line that ends the sentence.
    """
    lines = ["# newpar"] if sentence.newpar else []
    lines.append(f"# text = {sentence.text}")
    starts = {a: b for a, b in sentence.multiword}
    inside = set()
    for a, b in sentence.multiword:
        inside.update(range(a, b + 1))
    for i, form in enumerate(sentence.forms):
        if i in starts:
            last = starts[i]
            misc = "_" if sentence.space_after[last] else "SpaceAfter=No"
            lines.append(f"{i + 1}-{last + 1}\t{_token_form(sentence, i, last)}\t_\t_\t_\t_\t_"
                         f"\t_\t_\t{misc}")
        fields = [str(i + 1), form] + ["_"] * 8
        for column, values in columns.items():
            fields[column] = values[i]
        if i not in inside and not sentence.space_after[i]:
            fields[9] = "SpaceAfter=No"
        lines.append("\t".join(fields))
    lines.append("\n")
    return "\n".join(lines)
