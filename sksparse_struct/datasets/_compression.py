"""Gzip-compressed input, recognised from its first bytes, with readable errors."""

import gzip
import zlib

__all__ = ["GZIP_MAGIC", "gunzip_if_compressed"]

GZIP_MAGIC = b"\x1f\x8b"


def _lines_before_damage(data):
    """How many complete lines of text a broken gzip stream yields before it fails."""
    inflater = zlib.decompressobj(wbits=31)  # with the gzip header and trailer
    n_lines = 0
    chunk = 1 << 16
    for start in range(0, len(data), chunk):
        saved = inflater.copy()
        try:
            n_lines += inflater.decompress(data[start:start + chunk]).count(b"\n")
        except zlib.error:
            # Again byte by byte, to count the lines of the failing chunk too.
            inflater = saved
            try:
                for k in range(start, min(start + chunk, len(data))):
                    n_lines += inflater.decompress(data[k:k + 1]).count(b"\n")
            except zlib.error:
                pass
            break
    return n_lines


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
    except EOFError:
        problem = "the compressed data end too early (a truncated file?)"
    except (gzip.BadGzipFile, zlib.error) as exc:
        problem = f"corrupt gzip data ({exc})"
    n_lines = _lines_before_damage(data)
    where = f"after line {n_lines}" if n_lines else "before the first line"
    raise ValueError(f"{source}: not a readable gzip file: {problem}, {where} of "
                     "the decompressed text.") from None
