"""Text files read piece by piece, each piece a run of whole sentences.

Every reader of the package reads its input through :class:`TextSource`:
the file (a path or a file object, plain or gzip-compressed) is read,
gunzipped and decoded in fragments of bounded size, and
:func:`sentence_pieces` cuts the text at blank lines into pieces that the
format's parser reads one at a time, numbering lines from the piece's first
line. The eager readers (``read_conll``, ``read_conllu``) concatenate what
the parser gives for each piece; the lazy ones (``iter_conll``,
``iter_conllu``) yield it sentence by sentence; ``predict_file`` sends the
pieces to workers. The same code therefore raises the same errors, naming
the same file and line, in all of them.
"""

import codecs
import contextlib
import functools
import gc
import gzip
import io
import os
import re
import tempfile

from ._compression import GZIP_ERRORS, GZIP_MAGIC, gzip_error

__all__ = ["BLANK_LINES", "PIECE_CHARS", "TextSink", "TextSource", "gc_paused",
           "sentence_pieces", "source_name"]

_READ_SIZE = 1 << 16
# The size of the pieces the readers parse at a time, in characters: large
# enough for the parsers' whole-text fast paths to pay off, small enough
# for the memory of a lazy reader to stay a few megabytes.
PIECE_CHARS = 1 << 18
# A blank line, which ends a sentence in both formats: in CoNLL-U an empty
# line (a CRLF file's "\r" before the "\n" included), in the column files
# also one of spaces and tabs. A run of them counts once.
BLANK_LINES = {
    "conllu": re.compile(r"\n(?:\r*\n)+"),
    "conll": re.compile(r"\n(?:[ \t\r\f\v]*\n)+"),
}


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection inside the block.

    A parse allocates millions of small objects, none of them cyclic; the
    collector would scan them again and again.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def source_name(path):
    """How error messages name a path or a file object."""
    if hasattr(path, "read"):
        return str(getattr(path, "name", "<file object>"))
    return os.fspath(path)


class _Prefixed:
    """A binary file object whose first bytes were already read."""

    def __init__(self, head, fileobj):
        self._head = head
        self._fileobj = fileobj

    def read(self, size=-1):
        if self._head:
            head, self._head = self._head, b""
            if size is None or size < 0:
                return head + _as_bytes(self._fileobj.read())
            if len(head) >= size:
                head, self._head = head[:size], head[size:]
                return head
            return head + _as_bytes(self._fileobj.read(size - len(head)))
        return _as_bytes(self._fileobj.read(size))


def _as_bytes(data):
    return b"" if data is None else data


class TextSource:
    """The decoded text of a path or file object, read in fragments.

    Parameters
    ----------
    path : str, os.PathLike or file object
        A path is opened (and closed) by :meth:`fragments`; a file object,
        in text or binary mode, is read from where it stands.
    encoding : str
        The text encoding of a path or of a binary file object.
    """

    def __init__(self, path, encoding):
        self.path = path
        self.encoding = encoding
        self.source = source_name(path)
        self._raw = None  # the open binary or text file being read
        self._size = None
        self._done = False

    def check_readable(self):
        """Raise the ``OSError`` of a path that cannot be opened, now rather than later."""
        if not hasattr(self.path, "read"):
            with open(self.path, "rb"):
                pass

    def fraction_read(self):
        """How much of the file has been read (0 to 1), or ``None`` if unknown."""
        try:
            if self._raw is None or not self._size:
                return None
            if self._done:
                return 1.0
            return min(1.0, self._raw.tell() / self._size)
        except (OSError, ValueError, AttributeError):
            return None

    def fragments(self):
        """Yield the text in fragments of any length (at least one character each).

        A byte order mark at the start is dropped. Raises ``ValueError``,
        naming the file and the line, on text that is not valid in the
        encoding and on truncated or corrupt gzip data.
        """
        if hasattr(self.path, "read"):
            yield from self._fragments(self.path, self._rereader(self.path))
            return
        with open(self.path, "rb") as f:
            try:
                self._size = os.fstat(f.fileno()).st_size
            except OSError:
                self._size = None
            yield from self._fragments(f, functools.partial(open, self.path, "rb"))
            self._done = True

    def _rereader(self, fileobj):
        """How to read a file object's compressed bytes again, or ``None``."""
        try:
            if not fileobj.seekable():
                return None
            start = fileobj.tell()
        except (AttributeError, OSError, ValueError):
            return None

        class Again:
            def __enter__(self):
                fileobj.seek(start)
                return fileobj

            def __exit__(self, *exc):
                return False

        return Again

    def _fragments(self, raw, reopen):
        self._raw = raw
        head = raw.read(_READ_SIZE)
        if isinstance(head, str):
            yield from self._text_fragments(raw, head)
            return
        head = _as_bytes(head)
        if not isinstance(head, (bytes, bytearray)):
            raise TypeError(f"{self.source}: reading the file object returned "
                             f"{type(head).__name__}, not str or bytes.")
        while 0 < len(head) < len(GZIP_MAGIC):  # a short read (e.g. a pipe)
            more = _as_bytes(raw.read(_READ_SIZE))
            if not more:
                break
            head += more
        if head[:2] == GZIP_MAGIC:
            chunks = self._gunzipped(gzip.GzipFile(fileobj=_Prefixed(head, raw), mode="rb"),
                                     reopen)
        else:
            chunks = self._binary_chunks(raw, head)
        yield from self._decoded(chunks)

    def _text_fragments(self, raw, head):
        at_start = True
        while head:
            if not isinstance(head, str):
                raise TypeError(f"{self.source}: reading the file object returned "
                                 f"{type(head).__name__} after str.")
            if at_start:
                head = head.lstrip("\ufeff")
                at_start = not head
            if head:
                yield head
            head = raw.read(_READ_SIZE)

    def _binary_chunks(self, raw, head):
        while head:
            if not isinstance(head, (bytes, bytearray)):
                raise TypeError(f"{self.source}: reading the file object returned "
                                 f"{type(head).__name__} after bytes.")
            yield head
            head = _as_bytes(raw.read(_READ_SIZE))

    def _gunzipped(self, gz, reopen):
        while True:
            try:
                chunk = gz.read(_READ_SIZE)
            except GZIP_ERRORS as exc:
                error = exc
                break
            if not chunk:
                return
            yield chunk
        # Read the compressed bytes again to find the line of the damage.
        if reopen is None:
            raise gzip_error(error, self.source, None) from None
        with reopen() as again:
            raise gzip_error(error, self.source, self._binary_chunks(
                again, _as_bytes(again.read(_READ_SIZE)))) from None

    def _decoded(self, chunks):
        decoder = codecs.getincrementaldecoder(self.encoding)()
        n_bytes = n_lines = 0  # before the current chunk
        at_start = True
        final = False
        while not final:
            chunk = next(chunks, None)
            final = chunk is None
            data = b"" if final else chunk
            try:
                text = decoder.decode(data, final)
            except UnicodeDecodeError as exc:
                # exc.object is the decoder's pending bytes followed by data.
                pending = exc.object[:len(exc.object) - len(data)]
                start = n_bytes - len(pending)
                lineno = (n_lines - pending.count(b"\n")
                          + exc.object.count(b"\n", 0, exc.start) + 1)
                raise ValueError(
                    f"{self.source}, line {lineno}: not valid {self.encoding} ({exc.reason} "
                    f"at byte {start + exc.start}); pass encoding= (e.g. 'latin-1' for the "
                    "CoNLL-2002 Spanish and Dutch files)."
                ) from None
            n_bytes += len(data)
            n_lines += data.count(b"\n")
            if at_start:
                text = text.lstrip("\ufeff")
                at_start = not text
            if text:
                yield text


def sentence_pieces(fragments, blank_lines, *, min_chars=None, n_sentences=None):
    """Cut text into pieces of whole sentences at blank lines.

    A piece ends right after a run of blank lines: the first one that ends
    at or after ``min_chars`` characters, or the ``n_sentences``-th one (a
    run of blank lines after comment lines or a document marker counts as
    well). The last piece holds the rest of the text, whatever it is.

    Parameters
    ----------
    fragments : iterable of str
        The text, in fragments of any length.
    blank_lines : re.Pattern
        A run of blank lines, from the ``"\\n"`` before the first to the
        ``"\\n"`` of the last (:data:`BLANK_LINES`).

    Yields
    ------
    piece : str
        A run of lines (ending with ``"\\n"``, except maybe the last piece).
    first_line : int
        The 1-based line number of its first line in the text.
    """
    head, head_length = [], 0  # text not yet yielded, before the current one
    # The end of the text from its last line break on, when only blanks
    # follow that line break: a run of blank lines may go on in the next
    # fragment, so it is searched again with the next fragment.
    carry = ""
    count = 0  # runs of blank lines in the text not yet yielded
    first_line = 1
    for fragment in fragments:
        text = carry + fragment
        start = scan = 0  # text[:start] is yielded; the search resumes at scan
        for match in blank_lines.finditer(text):
            count += 1
            end = match.end()
            if ((n_sentences is not None and count >= n_sentences)
                    or (min_chars is not None and head_length + end - start >= min_chars)):
                head.append(text[start:end])
                piece = "".join(head)
                yield piece, first_line
                first_line += piece.count("\n")
                head, head_length, count, start = [], 0, 0, end
            scan = end
        k = text.rfind("\n", scan)
        if k < 0 or text[k + 1:].strip(" \t\r\f\v"):
            k = len(text)
        k = max(k, start)
        head.append(text[start:k])
        head_length += k - start
        carry = text[k:]
    if head or carry:
        head.append(carry)
        piece = "".join(head)
        if piece:
            yield piece, first_line


class TextSink:
    """Text written out: to a file object, or to a path via a temporary file.

    The counterpart of :class:`TextSource` for the writers (``write_conllu``,
    ``predict_file``): a context manager with ``write(text)``. A path is
    written next to its destination and renamed at the end, so an error
    half-way leaves no truncated file; a name ending in ``.gz`` is written
    gzip-compressed, reproducibly (no time stamp, no name). A binary file
    object gets the text encoded with ``encoding``, a text one the text.

    A path that exists and is not a regular file (``/dev/null``, a named
    pipe) is written to directly.
    """

    def __init__(self, path, encoding):
        self.path = path
        self.encoding = encoding
        self._tmp = None

    def __enter__(self):
        if hasattr(self.path, "write"):
            self._file = self.path
            self._binary = isinstance(self.path, (io.RawIOBase, io.BufferedIOBase))
            return self
        if os.path.exists(self.path) and not os.path.isfile(self.path):
            self._raw = self._file = open(self.path, "wb")
            self._binary = True
            return self
        # Written next to the destination and renamed at the end: an error
        # half-way leaves no truncated output that looks complete.
        directory, name = os.path.split(os.path.abspath(self.path))
        fd, self._tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".part")
        self._raw = os.fdopen(fd, "wb")
        self._file = self._raw
        if os.fspath(self.path).lower().endswith(".gz"):
            # mtime=0 and no name: the same predictions give the same bytes.
            self._file = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0)
        self._binary = True
        return self

    def write(self, text):
        self._file.write(text.encode(self.encoding) if self._binary else text)

    def __exit__(self, exc_type, exc, tb):
        if self._tmp is None:
            if not hasattr(self.path, "write"):
                self._raw.close()
            return False
        try:
            if self._file is not self._raw:
                self._file.close()
            self._raw.close()
            if exc_type is None:
                os.replace(self._tmp, self.path)
        finally:
            if os.path.exists(self._tmp):
                os.remove(self._tmp)
        return False
