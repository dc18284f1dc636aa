"""Reader for the Cornell eRulemaking Corpus (CDCP) argument-mining format.

A CDCP folder holds, per document ``<id>``: the raw text ``<id>.txt``, the
argument annotation ``<id>.ann.json`` and, optionally, Stanford CoreNLP
output ``<id>.txt.json`` and PDTB-style discourse relations ``<id>.txt.pipe``.
:func:`read_cdcp` turns it into ``(X, y)``: one document dict and one
``(labels, links)`` target per document.
"""

import itertools
import json
import os

__all__ = ["read_cdcp"]

# When the propositions merged into one carry different labels, the merged
# proposition takes the first of these present (the paper's convention).
LABEL_PRIORITY = ("policy", "value", "testimony", "reference", "fact")

# The parts of a CoreNLP document that feature extractors use; the rest
# (sentiment, NER, whitespace, other dependency views) is dropped on loading.
SENTENCE_KEYS = ("index", "parse", "basic-dependencies",
                 "collapsed-ccprocessed-dependencies")
TOKEN_KEYS = ("word", "originalText", "lemma", "pos", "characterOffsetBegin",
              "characterOffsetEnd", "index")
ARC_KEYS = ("dep", "governor", "dependent")

# PDTB pipe format: 48 fields; the ones read here.
PIPE_N_FIELDS = 48
PIPE_RELTYPE, PIPE_SEM_CLASS, PIPE_ARG1, PIPE_ARG2 = 0, 11, 22, 32


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _read_file(path, doc_id):
    # newline="" keeps "\r\n" as two characters: the offsets count them.
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"document {doc_id!r}: {path} is not UTF-8 ({exc.reason})") from None


def _parse_json(content, doc_id, what, source):
    try:
        return json.loads(content)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"document {doc_id!r}: {what} {source} is not valid JSON "
            f"(line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None


def _check_annotation(ann, doc_id, path, n_chars):
    """Validated ``(offsets, labels, links)`` of a ``.ann.json`` dict.

    ``links`` are ``((i, j), k)``: propositions ``i..j`` support ``k``, in
    the order reasons then evidences.
    """
    where = f"document {doc_id!r} ({path})"
    if not isinstance(ann, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(ann).__name__}")
    missing = [key for key in ("prop_offsets", "prop_labels") if key not in ann]
    if missing:
        raise ValueError(f"{where}: missing key(s) {missing}")
    offsets = ann["prop_offsets"]
    if not isinstance(offsets, list):
        raise ValueError(f"{where}: prop_offsets must be a list of [start, end] pairs")
    spans = []
    for p, span in enumerate(offsets):
        if (not isinstance(span, list) or len(span) != 2
                or not all(_is_int(v) for v in span)):
            raise ValueError(
                f"{where}: prop_offsets[{p}] = {span!r} is not a pair of integers")
        start, end = span
        if not 0 <= start < end <= n_chars:
            raise ValueError(
                f"{where}: proposition {p} span [{start}, {end}) is empty or out "
                f"of range for a text of {n_chars} characters")
        if spans and start < spans[-1][1]:
            prev = spans[-1]
            if start < prev[0]:
                raise ValueError(
                    f"{where}: proposition spans are not sorted: proposition {p} "
                    f"[{start}, {end}) starts before proposition {p - 1} "
                    f"[{prev[0]}, {prev[1]})")
            raise ValueError(
                f"{where}: proposition {p} [{start}, {end}) overlaps proposition "
                f"{p - 1} [{prev[0]}, {prev[1]})")
        spans.append((start, end))
    n = len(spans)
    labels = ann["prop_labels"]
    if not isinstance(labels, list) or not all(isinstance(a, str) for a in labels):
        raise ValueError(f"{where}: prop_labels must be a list of strings")
    if len(labels) != n:
        raise ValueError(
            f"{where}: {len(labels)} prop_labels for {n} propositions (prop_offsets)")
    links = []
    for key in ("reasons", "evidences"):
        entries = ann.get(key, [])
        if entries is None:
            entries = []
        if not isinstance(entries, list):
            raise ValueError(f"{where}: {key} must be a list")
        for e, entry in enumerate(entries):
            ok = (isinstance(entry, list) and len(entry) == 2
                  and isinstance(entry[0], list) and len(entry[0]) == 2
                  and all(_is_int(v) for v in entry[0]) and _is_int(entry[1]))
            if not ok:
                raise ValueError(
                    f"{where}: {key}[{e}] = {entry!r} is not [[source_start, "
                    "source_end], target]")
            (i, j), k = entry
            if not (0 <= i <= j < n and 0 <= k < n):
                raise ValueError(
                    f"{where}: {key}[{e}] = {entry!r} refers to a proposition that "
                    f"does not exist (the document has {n} propositions)")
            if i <= k <= j:
                raise ValueError(
                    f"{where}: {key}[{e}] = {entry!r} links proposition {k} to itself")
            links.append(((i, j), k))
    return spans, list(labels), links


def _merge_nested(spans, labels, links, doc_id):
    """Merge multi-proposition link sources into single propositions.

    Returns the new spans, labels and direct links (re-indexed, sorted) and
    the number of links dropped.
    """
    merged = {}         # first original index -> last, of merged propositions
    new_links = []
    n_dropped = 0
    for (i, j), k in links:
        if i == j:
            new_links.append((i, k))
            continue
        # A multi-proposition source is rejected when another link starts in
        # it or points into it: merging would destroy that link's endpoints.
        nested = any(
            (i2, j2) != (i, j) and (i <= i2 and j2 <= j or i <= k2 <= j)
            for (i2, j2), k2 in links
        )
        if nested:
            n_dropped += 1
            continue
        merged[i] = j
        new_links.append((i, k))
    # Partially overlapping merged sources (i <= i2 <= j < j2) would give
    # overlapping propositions: the annotation cannot be normalised.
    firsts = sorted(merged)
    for a, b in itertools.pairwise(firsts):
        if b <= merged[a]:
            raise ValueError(
                f"document {doc_id!r}: multi-proposition link sources {a}..{merged[a]} "
                f"and {b}..{merged[b]} overlap; they cannot be merged "
                "(read with merge_nested=False)")
    covered = set()
    for i, j in merged.items():
        covered.update(range(i, j + 1))
    # Every proposition not inside a merged one stays, linked or not.
    starts = sorted(set(range(len(spans))) - covered | set(merged))
    new_index = {old: new for new, old in enumerate(starts)}
    new_spans, new_labels = [], []
    for old in starts:
        last = merged.get(old, old)
        new_spans.append((spans[old][0], spans[last][1]))
        parts = labels[old:last + 1]
        if len(set(parts)) == 1:
            new_labels.append(parts[0])
        else:
            new_labels.append(next((a for a in LABEL_PRIORITY if a in parts), parts[0]))
    new_links = sorted({(new_index[s], new_index[t]) for s, t in new_links})
    return new_spans, new_labels, new_links, n_dropped


def _expand_sources(links):
    """Links with every proposition of a multi-proposition source as a source."""
    return sorted({(s, k) for (i, j), k in links for s in range(i, j + 1)})


def _transitive_closure(links, n):
    """The transitive closure of a set of links over ``n`` nodes, without self-links.

    Parameters
    ----------
    links : iterable of (int, int)
        Directed links ``(source, target)``.
    n : int
        Number of nodes.

    Returns
    -------
    closure : list of (int, int)
        Sorted: ``(a, c)`` for every path ``a -> ... -> c`` of at least one
        link with ``a != c``.
    """
    successors = [set() for _ in range(n)]
    for s, t in links:
        successors[s].add(t)
    closure = set()
    for a in range(n):
        # Depth-first search from a: everything reachable is a target.
        seen, stack = set(), list(successors[a])
        while stack:
            b = stack.pop()
            if b in seen:
                continue
            seen.add(b)
            stack.extend(successors[b] - seen)
        closure.update((a, c) for c in seen if c != a)
    return sorted(closure)


def _lean_corenlp(doc, doc_id, path):
    """The parts of a CoreNLP JSON document that feature extraction needs."""
    where = f"document {doc_id!r} ({path})"
    if not isinstance(doc, dict) or not isinstance(doc.get("sentences"), list):
        raise ValueError(f"{where}: expected a CoreNLP JSON object with a 'sentences' list")
    sentences = []
    for s, sentence in enumerate(doc["sentences"]):
        if not isinstance(sentence, dict):
            raise ValueError(f"{where}: sentence {s} is not a JSON object")
        missing = [key for key in SENTENCE_KEYS + ("tokens",) if key not in sentence]
        if missing:
            raise ValueError(f"{where}: sentence {s} lacks the key(s) {missing}")
        tokens = []
        for t, token in enumerate(sentence["tokens"]):
            try:
                tokens.append({key: token[key] for key in TOKEN_KEYS})
            except (KeyError, TypeError):
                raise ValueError(
                    f"{where}: sentence {s}, token {t} lacks one of the keys "
                    f"{list(TOKEN_KEYS)}") from None
        lean = {"index": sentence["index"], "parse": sentence["parse"]}
        for view in SENTENCE_KEYS[2:]:
            try:
                lean[view] = [{key: arc[key] for key in ARC_KEYS}
                              for arc in sentence[view]]
            except (KeyError, TypeError):
                raise ValueError(
                    f"{where}: sentence {s}: an arc of {view} lacks one of the keys "
                    f"{list(ARC_KEYS)}") from None
        lean["tokens"] = tokens
        sentences.append(lean)
    return {"sentences": sentences}


def _parse_spans(field):
    spans = []
    for piece in field.split(";"):
        a, sep, b = piece.partition("..")
        if not sep:
            raise ValueError(piece)
        a, b = int(a), int(b)
        if not 0 <= a <= b:
            raise ValueError(piece)
        spans.append((a, b))
    return spans


def _parse_pipe(content, doc_id, source, n_chars):
    """The relations of a PDTB pipe file: ``(reltype, sem_class, arg1, arg2)``.

    ``arg1`` and ``arg2`` are lists of ``(a, b)`` character spans (empty
    when the field is empty).
    """
    relations = []
    for lineno, line in enumerate(content.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("|")
        where = f"document {doc_id!r} ({source}), line {lineno}"
        if len(fields) != PIPE_N_FIELDS:
            raise ValueError(
                f"{where}: {len(fields)} '|'-separated fields, expected {PIPE_N_FIELDS}")
        args = []
        for name, col in (("arg1", PIPE_ARG1), ("arg2", PIPE_ARG2)):
            field = fields[col].strip()
            try:
                spans = _parse_spans(field) if field else []
            except ValueError:
                raise ValueError(
                    f"{where}: bad {name} span field {field!r} (field {col}); expected "
                    "'a..b' pieces separated by ';'") from None
            if any(b > n_chars for _, b in spans):
                raise ValueError(
                    f"{where}: {name} span {field!r} goes past the end of the text "
                    f"({n_chars} characters)")
            args.append(spans)
        relations.append((fields[PIPE_RELTYPE], fields[PIPE_SEM_CLASS], args[0], args[1]))
    return relations


# The files of a document, by suffix; the first two are required.
SUFFIXES = (".txt", ".ann.json", ".txt.json", ".txt.pipe")


def cdcp_document(doc_id, contents, sources, *, merge_nested=True, closure=True):
    """One document and its target from the contents of its files.

    ``contents`` maps each suffix of ``SUFFIXES`` to the file's text (None
    when absent; the CoreNLP and pipe files are then skipped) and
    ``sources`` to a name for error messages (the path).
    """
    text = contents[".txt"]
    if contents.get(".ann.json") is None:
        raise ValueError(
            f"document {doc_id!r}: annotation file {sources['.ann.json']} is missing")
    ann = _parse_json(contents[".ann.json"], doc_id, "annotation file", sources[".ann.json"])
    spans, labels, raw_links = _check_annotation(ann, doc_id, sources[".ann.json"], len(text))
    if merge_nested:
        spans, labels, links, _ = _merge_nested(spans, labels, raw_links, doc_id)
    else:
        links = _expand_sources(raw_links)
    if closure:
        links = _transitive_closure(links, len(spans))
    corenlp = discourse = None
    if contents.get(".txt.json") is not None:
        source = sources[".txt.json"]
        corenlp = _lean_corenlp(
            _parse_json(contents[".txt.json"], doc_id, "CoreNLP file", source), doc_id, source)
    if contents.get(".txt.pipe") is not None:
        discourse = _parse_pipe(contents[".txt.pipe"], doc_id, sources[".txt.pipe"], len(text))
    doc = {
        "id": doc_id,
        "text": text,
        "propositions": spans,
        "paragraphs": [(0, len(text))],
        "proposition_paragraph": [0] * len(spans),
        "corenlp": corenlp,
        "discourse": discourse,
    }
    return doc, (labels, links)


def _read_document(folder, doc_id, merge_nested, closure, annotations):
    suffixes = SUFFIXES if annotations else SUFFIXES[:2]
    sources = {suffix: os.path.join(folder, doc_id + suffix) for suffix in SUFFIXES}
    contents = {suffix: _read_file(sources[suffix], doc_id)
                if os.path.isfile(sources[suffix]) else None for suffix in suffixes}
    return cdcp_document(doc_id, contents, sources, merge_nested=merge_nested,
                         closure=closure)


def read_cdcp(folder, *, merge_nested=True, transitive_closure=True, annotations=True):
    """Read a folder of CDCP argument-mining documents.

    The Cornell eRulemaking Corpus (CDCP, Park & Cardie 2018) annotates user
    comments with elementary units ("propositions") of five types (``fact``,
    ``policy``, ``reference``, ``testimony``, ``value``) and support links
    between them. Each document ``<id>`` of ``folder`` has:

    - ``<id>.txt``: the text (UTF-8);
    - ``<id>.ann.json``: ``prop_offsets`` (``[start, end)`` character spans,
      sorted, non-overlapping), ``prop_labels`` (one per proposition), and
      ``reasons`` and ``evidences``, lists of ``[[i, j], k]``: propositions
      ``i`` to ``j`` (inclusive) support proposition ``k``. Reasons and
      evidences are read as one set of links;
    - optionally ``<id>.txt.json``, Stanford CoreNLP's JSON output, and
      ``<id>.txt.pipe``, discourse relations in the PDTB pipe format (48
      ``|``-separated fields; the relation type, first semantic class and
      the two argument spans ``a..b`` are read).

    Parameters
    ----------
    folder : str or path-like
        The folder; every ``*.txt`` file in it is a document.
    merge_nested : bool, default=True
        Normalise links whose source is several propositions, as Niculae,
        Park and Cardie (2017) do. Links are visited reasons first, then
        evidences. A source ``i..j`` with ``i < j`` becomes one merged
        proposition (the text from the start of ``i`` to the end of ``j``)
        unless another link's source lies inside ``i..j`` or another link
        points into ``i..j``; then the link is dropped. A merged proposition
        keeps its parts' label when they agree and otherwise takes the first
        of ``policy, value, testimony, reference, fact`` among them. If
        False, nothing is merged and every proposition of a source span
        supports the target.
    transitive_closure : bool, default=True
        Replace the links by their transitive closure (``a -> b`` and
        ``b -> c`` give ``a -> c``), as in the paper's training and
        evaluation. If False, the links are the annotated (direct) ones.
    annotations : bool, default=True
        Read the CoreNLP and discourse files when present. If False they
        are skipped (faster) and the documents' ``"corenlp"`` and
        ``"discourse"`` are None.

    Returns
    -------
    X : list of dict
        One document per ``.txt`` file, sorted by id, with the keys

        - ``"id"``: the file name without ``.txt``;
        - ``"text"``: the text;
        - ``"propositions"``: list of ``(start, end)`` character spans,
          sorted and non-overlapping (after merging);
        - ``"paragraphs"``: ``[(0, len(text))]`` (a CDCP document is one
          paragraph) and ``"proposition_paragraph"``: ``[0, 0, ...]``;
        - ``"corenlp"``: the CoreNLP document, reduced to what feature
          extraction uses: ``{"sentences": [...]}``, each sentence with
          ``index``, ``parse``, ``basic-dependencies`` and
          ``collapsed-ccprocessed-dependencies`` (arcs with ``dep``,
          ``governor``, ``dependent``) and ``tokens`` (``word``,
          ``originalText``, ``lemma``, ``pos``, ``characterOffsetBegin``,
          ``characterOffsetEnd``, ``index``); None without the file;
        - ``"discourse"``: list of ``(reltype, sem_class, arg1_spans,
          arg2_spans)`` from the pipe file, spans as lists of ``(a, b)``;
          None without the file.
    y : list of tuple
        ``(labels, links)`` per document: ``labels`` a list of str, one per
        proposition, and ``links`` a sorted list of ``(source, target)``
        proposition indices (source supports target).

    Raises
    ------
    ValueError
        On malformed input, naming the document (and the line of a pipe
        file): a missing or invalid ``.ann.json``, spans that overlap, are
        unsorted or out of range, a label list of the wrong length, a link
        to a missing proposition or to its own source, a bad CoreNLP or pipe
        file, or (with ``merge_nested=True``) two multi-proposition sources
        that overlap without one containing the other.

    See Also
    --------
    read_brat : Read argument-mining corpora in brat standoff format.
    load_cdcp_sample : A small CDCP sample shipped with the package.

    Examples
    --------
    >>> import os, tempfile
    >>> from sksparse_struct.datasets import read_cdcp
    >>> folder = tempfile.mkdtemp()
    >>> text = "Fees are too high. They hurt the poor. Cap them."
    >>> ann = ('{"prop_offsets": [[0, 18], [19, 38], [39, 48]], '
    ...        '"prop_labels": ["value", "value", "policy"], '
    ...        '"reasons": [[[1, 1], 0], [[0, 0], 2]], "evidences": []}')
    >>> with open(os.path.join(folder, "00001.txt"), "w") as f:
    ...     _ = f.write(text)
    >>> with open(os.path.join(folder, "00001.ann.json"), "w") as f:
    ...     _ = f.write(ann)
    >>> X, y = read_cdcp(folder)
    >>> [X[0]["text"][a:b] for a, b in X[0]["propositions"]]
    ['Fees are too high.', 'They hurt the poor.', 'Cap them.']
    >>> y[0]
    (['value', 'value', 'policy'], [(0, 2), (1, 0), (1, 2)])
    >>> read_cdcp(folder, transitive_closure=False)[1][0][1]
    [(0, 2), (1, 0)]
    """
    for name, value in (("merge_nested", merge_nested),
                        ("transitive_closure", transitive_closure),
                        ("annotations", annotations)):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False; got {value!r}")
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ValueError(f"{folder!r} is not a folder")
    names = os.listdir(folder)
    ids = sorted(name[:-4] for name in names if name.endswith(".txt")
                 and os.path.isfile(os.path.join(folder, name)))
    if not ids:
        raise ValueError(f"no documents (<id>.txt files) in {folder!r}")
    orphans = sorted({name[:-9] for name in names if name.endswith(".ann.json")}
                     - set(ids))
    if orphans:
        raise ValueError(
            f"document {orphans[0]!r}: {orphans[0]}.ann.json has no text file "
            f"{orphans[0]}.txt in {folder!r}")
    X, y = [], []
    for doc_id in ids:
        doc, target = _read_document(folder, doc_id, merge_nested, transitive_closure,
                                     annotations)
        X.append(doc)
        y.append(target)
    return X, y
