"""Model files: a fitted estimator saved with joblib beside a small metadata record.

The file holds one dict, ``{"format": MODEL_FORMAT, "metadata": {...},
"estimator": estimator}``, written by :func:`joblib.dump`. The metadata say
what the model is (the task, the input columns, the predicted label), which
versions wrote it and how it was trained, so that ``sksparse-struct info``
can tell without running anything and ``sksparse-struct predict`` knows how
to read its input.
"""

import datetime
import os
import platform
import warnings

import joblib

from ._version import __version__

__all__ = ["load_model", "save_model"]

MODEL_FORMAT = "sksparse_struct model"
# Bumped when the record's layout changes; a reader knows every version up to it.
FORMAT_VERSION = 1


def _library_versions():
    import numba
    import numpy
    import scipy
    import sklearn

    return {
        "sksparse_struct": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "numba": numba.__version__,
    }


def save_model(estimator, path, *, task=None, columns=None, label=None, summary=None,
               compress=3):
    """Save a fitted estimator with a metadata record, for :func:`load_model`.

    The file can be used by ``sksparse-struct predict``, ``evaluate`` and
    ``info`` (see :ref:`command-line`) as well as from Python.

    Parameters
    ----------
    estimator : object
        The fitted estimator or pipeline.
    path : str or os.PathLike
        Where to write. The file is written next to its final name and
        renamed at the end, so that an error leaves no partial file.
    task : str, default=None
        What the model does: ``"tagger"``, ``"parser"``, ``"tagger+parser"``
        or ``"argument-miner"``; None guesses it from the estimator.
    columns : tuple of str, default=None
        The input columns the model reads (as in
        :func:`~sksparse_struct.datasets.read_conll`).
    label : str, default=None
        The column the model predicts (``"chunk"``, ``"upos"``, ``"head"``).
    summary : dict, default=None
        Anything JSON-like about the training (data, time, scores), shown by
        ``sksparse-struct info``.
    compress : int, default=3
        joblib's compression level, 0 for none.

    Returns
    -------
    metadata : dict
        The record saved beside the estimator.

    Examples
    --------
    >>> import tempfile, os
    >>> from sksparse_struct import LinearChainCRF, load_model, save_model
    >>> tagger = LinearChainCRF(c2=0.01).fit([[{"w": "a"}, {"w": "b"}]], [["X", "Y"]])
    >>> path = os.path.join(tempfile.mkdtemp(), "tagger.joblib")
    >>> save_model(tagger, path, label="chunk")["task"]
    'tagger'
    >>> model, metadata = load_model(path, return_metadata=True)
    >>> model.predict([[{"w": "a"}, {"w": "b"}]]), metadata["label"]
    ([['X', 'Y']], 'chunk')
    """
    if task is None:
        task = infer_task(estimator)
    metadata = {
        "format_version": FORMAT_VERSION,
        "task": task,
        "estimator": _describe(estimator),
        "columns": None if columns is None else list(columns),
        "label": label,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": _library_versions(),
        "summary": dict(summary or {}),
    }
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"cannot save the model to {path}: folder {folder} does not exist.")
    partial = f"{path}.partial-{os.getpid()}"
    try:
        joblib.dump({"format": MODEL_FORMAT, "metadata": metadata, "estimator": estimator},
                    partial, compress=compress)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return metadata


def load_model(path, *, return_metadata=False):
    """Load a model saved by :func:`save_model` (or by ``sksparse-struct train``).

    Loading unpickles the file, which can run code: load only files you
    trust. A file written by another version of sksparse_struct gives a
    warning (it may load and work, or fail in ways that version differences
    explain); a bare estimator pickled with :func:`joblib.dump` loads too,
    with metadata guessed from it.

    Parameters
    ----------
    path : str or os.PathLike
        The model file.
    return_metadata : bool, default=False
        Also return the metadata record.

    Returns
    -------
    estimator : object
        The fitted estimator.
    metadata : dict
        The record written with it. Only if ``return_metadata``.

    Raises
    ------
    ValueError
        When the file does not exist or is not a model file.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"model file {path} does not exist.")
    try:
        content = joblib.load(path)
    except Exception as error:  # a pickle of anything can fail in many ways
        raise ValueError(
            f"{path} is not a model file that this version can read "
            f"({type(error).__name__}: {error})."
        ) from error
    if isinstance(content, dict) and content.get("format") == MODEL_FORMAT:
        estimator, metadata = content["estimator"], dict(content["metadata"])
        saved = metadata.get("versions", {}).get("sksparse_struct")
        if saved != __version__:
            warnings.warn(
                f"{path} was saved by sksparse_struct {saved}, this is {__version__}: "
                "it may not load or predict as it did; retrain it if in doubt.",
                UserWarning, stacklevel=2)
    elif hasattr(content, "predict"):
        estimator = content
        metadata = {"format_version": None, "task": infer_task(estimator),
                    "estimator": _describe(estimator), "columns": None, "label": None,
                    "created": None, "versions": {}, "summary": {}}
    else:
        raise ValueError(
            f"{path} holds a {type(content).__name__}, not a model saved by "
            "sksparse_struct.save_model or sksparse-struct train."
        )
    return (estimator, metadata) if return_metadata else estimator


def _steps(estimator):
    """The estimator itself, or the steps of a pipeline, in order."""
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list):
        return [step for _, step in steps]
    return [estimator]


def _describe(estimator):
    return " -> ".join(type(step).__name__ for step in _steps(estimator))


def infer_task(estimator):
    """The task of an estimator or pipeline, by the classes of its steps."""
    names = {type(step).__name__ for step in _steps(estimator)}
    last = type(_steps(estimator)[-1]).__name__
    if last == "SparseMAPParser":
        return "tagger+parser" if "ColumnTagger" in names else "parser"
    if last.endswith("ArgumentMiner"):
        return "argument-miner"
    return "tagger"
