"""``python -m sksparse_struct``: the ``sksparse-struct`` command (see ``_cli.py``).

Without a command it runs the quickstart (``_quickstart.py``).
"""

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())
