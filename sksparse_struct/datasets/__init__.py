"""Readers for CoNLL files and argument-mining corpora, bundled samples and their loaders.

- Sequence labelling and parsing: :func:`read_conll`, :func:`read_conllu`,
  :func:`write_conllu`; lazily, for corpora of any size, :func:`iter_conll`
  and :func:`iter_conllu`; :func:`predict_file` tags or parses a file of any
  size into another, in parallel.
- Plain text: :func:`tokenize_text` splits English text into sentences of
  words by a few documented rules, :func:`read_text` reads a text file as
  sentences of token dicts; ``predict_file`` tags or parses text files too.
- Argument mining: :func:`read_cdcp` (the CDCP corpus's folders) and
  :func:`read_brat` (brat standoff, e.g. the persuasive essays) return
  ``(X, y)``: a document dict per text (``"id"``, ``"text"``,
  ``"propositions"`` as character spans, ``"paragraphs"``,
  ``"proposition_paragraph"``, ``"corenlp"``, ``"discourse"``) and a
  ``(labels, links)`` target per document.

The package ships small samples so that examples and smoke tests run
without downloading anything: a slice of the Universal Dependencies English
Web Treebank (CC BY-SA 4.0; see ``data/EWT_SAMPLE_LICENSE.txt``), loaded by
:func:`load_ewt_sample`, and 28 documents of the CDCP argument-mining corpus
(ODbL 1.0 / DbCL 1.0; see ``data/CDCP_SAMPLE_LICENSE.txt``), loaded by
:func:`load_cdcp_sample`.
"""

from ._brat import read_brat
from ._cdcp import read_cdcp
from ._conll import iter_conll, read_conll
from ._predict_file import predict_file
from ._samples import load_cdcp_sample, load_ewt_sample
from ._text import read_text, tokenize_text
from ._treebank import iter_conllu, read_conllu, write_conllu

__all__ = ["iter_conll", "iter_conllu", "load_cdcp_sample", "load_ewt_sample", "predict_file",
           "read_brat", "read_cdcp", "read_conll", "read_conllu", "read_text", "tokenize_text",
           "write_conllu"]
