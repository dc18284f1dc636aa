"""Reader for argument-mining corpora in brat standoff format.

brat (https://brat.nlplab.org) stores a document as ``<name>.txt`` and its
annotation ``<name>.ann``: one annotation per line, text-bound annotations
(``T``) for the argument components and relations (``R``) for the links.
This is the format of the persuasive essays corpus (Stab and Gurevych) and
of many other argument-mining corpora.
"""

import csv
import itertools
import os

__all__ = ["read_brat"]


def _bad(source, lineno, message):
    return ValueError(f"{source}, line {lineno}: {message}")


def _parse_component(fields, source, lineno, text):
    """``(type, start, end)`` of a ``T`` line split on tabs."""
    if len(fields) < 3:
        raise _bad(source, lineno, "a T line needs three tab-separated fields: "
                                   "id, 'type start end' and the text")
    parts = fields[1].split(" ")
    if len(parts) < 3:
        raise _bad(source, lineno, f"expected 'type start end', got {fields[1]!r}")
    if ";" in fields[1]:
        raise _bad(source, lineno, f"discontinuous span {' '.join(parts[1:])!r} of "
                                   f"{fields[0]}: not supported")
    if len(parts) != 3:
        raise _bad(source, lineno, f"expected 'type start end', got {fields[1]!r}")
    kind, start, end = parts
    try:
        start, end = int(start), int(end)
    except ValueError:
        raise _bad(source, lineno, f"offsets {start!r} {end!r} are not integers") from None
    if not 0 <= start < end <= len(text):
        raise _bad(source, lineno, f"span [{start}, {end}) of {fields[0]} is empty or out "
                                   f"of range for a text of {len(text)} characters")
    covered = text[start:end]
    # brat writes line breaks inside a span as spaces: compare up to whitespace.
    if covered != fields[2] and covered.split() != fields[2].split():
        raise _bad(source, lineno, f"the text of {fields[0]}, {fields[2]!r:.60}, differs "
                                   f"from the text at [{start}, {end}): {covered!r:.60}")
    return kind, start, end


def _parse_relation(fields, source, lineno):
    """``(type, arg1, arg2)`` of an ``R`` line split on tabs."""
    parts = fields[1].split() if len(fields) > 1 else []
    args = dict(part.split(":", 1) for part in parts[1:] if ":" in part)
    if len(parts) != 3 or set(args) != {"Arg1", "Arg2"}:
        raise _bad(source, lineno, "expected 'R<n>\\t<type> Arg1:<id> Arg2:<id>', got "
                                   f"{chr(9).join(fields)!r}")
    return parts[0], args["Arg1"], args["Arg2"]


def _read_utf8(path, doc_id):
    # newline="": offsets count "\r\n" as two characters. "utf-8-sig" drops a
    # byte-order mark: brat's offsets count the characters of the text after it.
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"document {doc_id!r}: {path} is not UTF-8 ({exc.reason})") from None


def _paragraphs(text):
    """Spans of the lines of ``text`` (a trailing ``\\r`` excluded)."""
    spans, start = [], 0
    for line in text.split("\n"):
        end = start + len(line)
        spans.append((start, end - 1 if line.endswith("\r") else end))
        start = end + 1
    return spans


def _read_one(ann_path, labels, link_types, paragraphs):
    base = ann_path[:-4]
    doc_id = os.path.basename(base)
    txt_path = base + ".txt"
    if not os.path.isfile(txt_path):
        raise ValueError(f"document {doc_id!r}: text file {txt_path} is missing")
    text = _read_utf8(txt_path, doc_id)
    lines = _read_utf8(ann_path, doc_id).split("\n")
    components = {}     # id -> (start, end, type, line)
    ignored = set()     # ids of components whose type is not in labels
    relations = []      # (type, arg1, arg2, line)
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t", 2)
        ann_id = fields[0]
        if ann_id.startswith("T"):
            kind, start, end = _parse_component(fields, ann_path, lineno, text)
            if ann_id in components or ann_id in ignored:
                raise _bad(ann_path, lineno, f"duplicate annotation id {ann_id}")
            if labels is not None and kind not in labels:
                ignored.add(ann_id)
            else:
                components[ann_id] = (start, end, kind, lineno)
        elif ann_id.startswith("R"):
            kind, arg1, arg2 = _parse_relation(line.split("\t"), ann_path, lineno)
            relations.append((kind, arg1, arg2, lineno))
        # A (attributes such as stance), #, E, N, M, *: not used.
    order = sorted(components, key=lambda c: components[c][:2])
    for a, b in itertools.pairwise(order):
        if components[b][0] < components[a][1]:
            raise ValueError(
                f"{ann_path}: components {a} (line {components[a][3]}) and {b} (line "
                f"{components[b][3]}) overlap")
    index = {c: i for i, c in enumerate(order)}
    links = set()
    for kind, arg1, arg2, lineno in relations:
        for arg in (arg1, arg2):
            if arg not in index and arg not in ignored:
                raise _bad(ann_path, lineno, f"relation refers to {arg}, which is not "
                                             "a component (T line) of the document")
        if link_types is not None and kind not in link_types:
            continue
        if arg1 in ignored or arg2 in ignored:
            continue
        if arg1 == arg2:
            raise _bad(ann_path, lineno, f"relation links {arg1} to itself")
        links.add((index[arg1], index[arg2]))
    spans = [components[c][:2] for c in order]
    if paragraphs:
        paras = _paragraphs(text)
        starts = [a for a, _ in paras]
        # The paragraph of a proposition is the line its start is on.
        prop_para = [_last_le(starts, start) for start, _ in spans]
    else:
        paras = [(0, len(text))]
        prop_para = [0] * len(spans)
    doc = {
        "id": doc_id,
        "text": text,
        "propositions": spans,
        "paragraphs": paras,
        "proposition_paragraph": prop_para,
        "corenlp": None,
        "discourse": None,
    }
    return doc, ([components[c][2] for c in order], sorted(links))


def _last_le(starts, value):
    """Index of the last element of sorted ``starts`` that is ``<= value``."""
    lo, hi = 0, len(starts)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if starts[mid] <= value:
            lo = mid
        else:
            hi = mid
    return lo


def _ann_files(path, documents, where):
    """The ``.ann`` files to read; ``documents`` (names) selects them in a folder."""
    if isinstance(path, (str, os.PathLike)):
        path = os.fspath(path)
        if os.path.isdir(path):
            if documents is not None:
                return _named_files(path, documents, where)
            names = sorted(name for name in os.listdir(path) if name.endswith(".ann"))
            if not names:
                raise ValueError(f"no .ann files in {path!r}")
            return [os.path.join(path, name) for name in names]
        if not os.path.exists(path) and not path.endswith(".ann"):
            raise ValueError(f"folder not found: {path!r} (and it is not a .ann file)")
        if documents is not None:
            raise ValueError(f"{where} selects documents in a folder, but path {path!r} is not "
                             "a folder")
        paths = [path]
    else:
        if documents is not None:
            raise ValueError(f"{where} selects documents in a folder; path must be that "
                             "folder, not a list of files")
        paths = [os.fspath(p) for p in path]
        if not paths:
            raise ValueError("path is an empty list of .ann files")
    for p in paths:
        if not p.endswith(".ann"):
            raise ValueError(f"{p!r} is not a .ann file")
        if not os.path.isfile(p):
            raise ValueError(f"{p!r} does not exist")
    return paths


def _named_files(folder, documents, where):
    """``<folder>/<name>.ann`` for each name, in order; every file must exist."""
    paths, missing = [], []
    for name in documents:
        name = name[:-4] if name.endswith((".ann", ".txt")) else name
        ann = os.path.join(folder, name + ".ann")
        (paths if os.path.isfile(ann) else missing).append(ann)
    if missing:
        shown = ", ".join(repr(os.path.basename(m)[:-4]) for m in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ValueError(f"{where} names {len(missing)} document(s) that have no .ann file in "
                         f"{folder!r}: {shown}{more}")
    return paths


def _split_documents(split_file, split):
    """The document names of the rows of ``split_file`` whose set is ``split``."""
    split_file = os.fspath(split_file)
    if not os.path.isfile(split_file):
        raise ValueError(f"split_file not found: {split_file!r}")
    try:
        with open(split_file, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"split_file {split_file!r} is not UTF-8 ({exc.reason})") from None
    # Any line ending: "\n", "\r\n" or "\r" (as old Mac OS wrote them).
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((line for line in lines if line.strip()), "")
    delimiter = max(";,\t", key=first.count)
    rows = [(lineno, [field.strip() for field in row])
            for lineno, row in enumerate(csv.reader(lines, delimiter=delimiter), 1)
            if any(field.strip() for field in row)]
    if not rows:
        raise ValueError(f"split_file {split_file!r} is empty")
    header = [field.lower() for field in rows[0][1]]
    name_col, set_col = 0, 1
    if "id" in header or "set" in header:
        name_col = header.index("id") if "id" in header else 0
        set_col = header.index("set") if "set" in header else 1 - name_col
        rows = rows[1:]
    names, sets = [], {}
    for lineno, row in rows:
        if len(row) <= max(name_col, set_col):
            raise ValueError(f"{split_file}, line {lineno}: expected a document name and its "
                             f"set separated by {delimiter!r}, got {delimiter.join(row)!r}")
        sets[row[set_col]] = sets.get(row[set_col], 0) + 1
        if row[set_col] == split:
            names.append(row[name_col])
    if not names:
        found = ", ".join(f"{k!r} ({v})" for k, v in sorted(sets.items()))
        raise ValueError(f"split_file {split_file!r} lists no document of set {split!r}; its "
                         f"sets (documents): {found or 'none'}")
    return names


def _check_types(value, name):
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset([value])
    try:
        out = frozenset(value)
    except TypeError:
        raise ValueError(f"{name} must be None or a collection of str; got {value!r}") from None
    if not all(isinstance(v, str) for v in out):
        raise ValueError(f"{name} must be None or a collection of str; got {value!r}")
    return out


def read_brat(path, *, labels=None, link_types=("supports", "attacks"), paragraphs=True,
              documents=None, split_file=None, split=None):
    """Read argument-mining documents in brat standoff format.

    Each document is a text ``<name>.txt`` and its annotation ``<name>.ann``
    (UTF-8, with or without a byte-order mark; the offsets count the
    characters after it). Of the annotation lines, ``T`` lines (``T<n>\\t<type> <start>
    <end>\\t<text>``) are the argument components, which become the
    propositions, and ``R`` lines (``R<n>\\t<type> Arg1:T<x> Arg2:T<y>``)
    the links: ``T<x>`` (the source) supports or attacks ``T<y>`` (the
    target). Other lines (attributes ``A`` such as the stance, notes ``#``,
    events, normalisations) are ignored. This reads, for example, the
    persuasive essays corpus of Stab and Gurevych (components
    ``MajorClaim``, ``Claim``, ``Premise``; relations ``supports``,
    ``attacks``).

    Parameters
    ----------
    path : str, path-like or list of them
        A folder (every ``*.ann`` file in it, sorted by name), one ``.ann``
        file, or a list of ``.ann`` files (read in that order). The text of
        ``<name>.ann`` is ``<name>.txt`` beside it.
    labels : collection of str, default=None
        The component types read as propositions; other ``T`` annotations
        and the relations that touch them are ignored. None: every type.
    link_types : collection of str or None, default=("supports", "attacks")
        The relation types read as links (all counted as positive links,
        without their type); other relations are ignored. None: every type.
    paragraphs : bool, default=True
        Split the text into paragraphs at every line break (``"\\n"``); a
        proposition belongs to the paragraph its start is in. In the
        persuasive essays, paragraph 0 is the title, 1 the empty line after
        it, 2 the introduction and the last one the conclusion. If False, the
        whole text is one paragraph.
    documents : sequence of str, default=None
        With ``path`` a folder: the names of the documents to read (file
        names without ``.ann``), in that order. None: every ``.ann`` file.
    split_file : str or path-like, default=None
        With ``path`` a folder: a CSV file that assigns each document to a
        set, such as the persuasive essays' ``train-test-split.csv``
        (``"ID";"SET"`` then lines like ``"essay001";"TRAIN"``). Fields are
        separated by ``;``, ``,`` or tabs (whichever the first line has
        most of), optionally quoted; lines end in ``\\n``, ``\\r\\n`` or
        ``\\r``. A first line with a field ``ID`` or ``SET`` (any case) is
        the header naming the two columns; without one, the first column
        is the name and the second the set. Only the documents of set
        ``split`` are read, in the file's order.
    split : str, default=None
        The set to read from ``split_file``, e.g. ``"TRAIN"`` or ``"TEST"``
        (compared exactly); required with ``split_file``.

    Returns
    -------
    X : list of dict
        One document per ``.ann`` file: ``"id"`` (the file name without
        ``.ann``), ``"text"``, ``"propositions"`` (``(start, end)``
        character spans sorted by offset), ``"paragraphs"`` (``(start,
        end)`` spans of the lines, without the line break),
        ``"proposition_paragraph"`` (the paragraph index of each
        proposition), and ``"corenlp"`` and ``"discourse"`` set to None.
    y : list of tuple
        ``(labels, links)`` per document: the component type of each
        proposition, and the sorted ``(source, target)`` proposition-index
        pairs of the relations (a relation given twice counts once).

    Raises
    ------
    ValueError
        Naming the file and the line: a malformed ``T`` or ``R`` line, a
        component whose text differs from the text at its offsets, a
        discontinuous span (not supported), overlapping components, a
        relation to an unknown id or to itself, a duplicate id, a missing
        ``.txt`` file; a folder that does not exist ("folder not found");
        documents named in ``documents`` or ``split_file`` without a
        ``.ann`` file; a ``split`` that ``split_file`` does not list.

    See Also
    --------
    read_cdcp : Read the CDCP corpus.

    Examples
    --------
    >>> import os, tempfile
    >>> from sksparse_struct.datasets import read_brat
    >>> folder = tempfile.mkdtemp()
    >>> text = "Cities\\n\\nCars should go. They pollute. Buses are cheap."
    >>> ann = ("T1\\tMajorClaim 8 22\\tCars should go\\n"
    ...        "T2\\tPremise 24 36\\tThey pollute\\n"
    ...        "A1\\tStance T2 For\\n"
    ...        "R1\\tsupports Arg1:T2 Arg2:T1\\t\\n")
    >>> with open(os.path.join(folder, "essay.txt"), "w") as f:
    ...     _ = f.write(text)
    >>> with open(os.path.join(folder, "essay.ann"), "w") as f:
    ...     _ = f.write(ann)
    >>> X, y = read_brat(folder)
    >>> [X[0]["text"][a:b] for a, b in X[0]["propositions"]]
    ['Cars should go', 'They pollute']
    >>> y[0]
    (['MajorClaim', 'Premise'], [(1, 0)])
    >>> X[0]["paragraphs"], X[0]["proposition_paragraph"]
    ([(0, 6), (7, 7), (8, 54)], [2, 2])

    The documents of one set of a split file:

    >>> with open(os.path.join(folder, "split.csv"), "w") as f:
    ...     _ = f.write('"ID";"SET"\\n"essay";"TRAIN"\\n')
    >>> X, y = read_brat(folder, split_file=os.path.join(folder, "split.csv"), split="TRAIN")
    >>> [doc["id"] for doc in X]
    ['essay']
    """
    labels = _check_types(labels, "labels")
    link_types = _check_types(link_types, "link_types")
    if not isinstance(paragraphs, bool):
        raise ValueError(f"paragraphs must be True or False; got {paragraphs!r}")
    if isinstance(path, (str, os.PathLike)) and not os.path.exists(path) and \
            not os.fspath(path).endswith(".ann"):
        raise ValueError(f"folder not found: {os.fspath(path)!r} (and it is not a .ann file)")
    where = None
    if split_file is not None:
        if documents is not None:
            raise ValueError("pass documents or split_file, not both")
        if not isinstance(split, str):
            raise ValueError(f"split_file needs split, the set to read (e.g. 'TRAIN'); got "
                             f"split={split!r}")
        where = f"split_file {os.fspath(split_file)!r} (split {split!r})"
        documents = _split_documents(split_file, split)
    elif split is not None:
        raise ValueError(f"split={split!r} needs split_file, the file that lists the sets")
    elif documents is not None:
        if isinstance(documents, str) or not all(isinstance(d, str) for d in documents):
            raise ValueError(f"documents must be a sequence of document names (str); got "
                             f"{documents!r}")
        documents = list(documents)
        if not documents:
            raise ValueError("documents is empty: name at least one document")
        where = "documents"
    X, y = [], []
    for ann_path in _ann_files(path, documents, where):
        doc, target = _read_one(ann_path, labels, link_types, paragraphs)
        X.append(doc)
        y.append(target)
    return X, y
