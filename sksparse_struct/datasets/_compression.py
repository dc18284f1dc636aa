"""Gzip-compressed input, recognised from its first bytes, with readable errors."""

import gzip
import zlib

__all__ = ["GZIP_ERRORS", "GZIP_MAGIC", "gunzip_if_compressed", "gzip_error"]

GZIP_MAGIC = b"\x1f\x8b"
# What gzip raises on truncated or corrupt data.
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)
_CHUNK = 1 << 16


def _chunks_of(data):
    for start in range(0, len(data), _CHUNK):
        yield data[start:start + _CHUNK]


def _lines_before_damage(chunks):
    """How many complete lines of text a broken gzip stream yields before it fails.

    ``chunks`` are the compressed bytes, in pieces of any size: the file is
    not held in memory.
    """
    inflater = zlib.decompressobj(wbits=31)  # with the gzip header and trailer
    n_lines = 0
    for chunk in chunks:
        saved = inflater.copy()
        try:
            n_lines += inflater.decompress(chunk).count(b"\n")
        except zlib.error:
            # Again byte by byte, to count the lines of the failing chunk too.
            inflater = saved
            try:
                for k in range(len(chunk)):
                    n_lines += inflater.decompress(chunk[k:k + 1]).count(b"\n")
            except zlib.error:
                pass
            break
    return n_lines


def gzip_error(exc, source, chunks):
    """The ValueError for a gzip error ``exc`` raised while reading ``source``.

    ``chunks`` are the compressed bytes again, from the start, to find the
    line of the decompressed text after which the damage comes; ``None``
    when they cannot be read again (the message then says less).
    """
    if isinstance(exc, EOFError):
        problem = "the compressed data end too early (a truncated file?)"
    else:
        problem = f"corrupt gzip data ({exc})"
    where = ""
    if chunks is not None:
        n_lines = _lines_before_damage(chunks)
        where = (f", after line {n_lines} of the decompressed text" if n_lines
                 else ", before the first line of the decompressed text")
    return ValueError(f"{source}: not a readable gzip file: {problem}{where}.")


def gunzip_if_compressed(data, source):
    """``data`` gunzipped if it starts with the gzip magic bytes, else unchanged.

    Raises
    ------
    ValueError
        If the gzip data are truncated or corrupt, naming ``source`` and
        the line of the decompressed text after which the damage comes, rather than
        letting ``EOFError``, ``gzip.BadGzipFile`` or ``zlib.error`` through.
    """
    if data[:2] != GZIP_MAGIC:
        return data
    try:
        return gzip.decompress(data)
    except GZIP_ERRORS as exc:
        raise gzip_error(exc, source, _chunks_of(data)) from None
