"""``python -m sksparse_struct``: the quickstart (see ``_quickstart.py``)."""

from ._quickstart import main

if __name__ == "__main__":
    raise SystemExit(main())
