"""Readers for CoNLL files, bundled sample data and their loaders.

The package ships a small slice of the Universal Dependencies English Web
Treebank (CC BY-SA 4.0; see ``data/EWT_SAMPLE_LICENSE.txt``) so that examples
and smoke tests run without downloading anything.
"""

from ._cdcp import read_cdcp
from ._conll import read_conll
from ._samples import load_ewt_sample
from ._treebank import read_conllu, write_conllu

__all__ = ["load_ewt_sample", "read_cdcp", "read_conll", "read_conllu", "write_conllu"]
