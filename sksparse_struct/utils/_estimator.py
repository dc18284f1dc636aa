"""What the package's estimators share: scikit-learn tags, ``score``, threads, held-out splits.

:class:`TagsMixin` writes ``__sklearn_tags__`` once: a class declares the
tags it changes in ``_sklearn_tags`` (dotted paths of scikit-learn's
``Tags``), and the declarations of its bases apply first.
:class:`StructuredEstimatorMixin` adds what every structured estimator (a
tagger, a parser, an argument miner) has: the tags of inputs that are lists
of sequences or documents, ``score`` as the task's metric of ``predict``
(``_score_metric``), and the thread count of ``n_jobs``.
:func:`validation_split` is the one held-out split of the estimators that
stop early.
"""

import numpy as np
from joblib import effective_n_jobs

__all__ = ["StructuredEstimatorMixin", "TagsMixin", "validation_split"]


class TagsMixin:
    """``__sklearn_tags__`` from the ``_sklearn_tags`` declarations of a class and its bases.

    ``_sklearn_tags`` maps a dotted path of scikit-learn's ``Tags`` (e.g.
    ``"input_tags.two_d_array"``) to its value. Put the mixin before
    ``BaseEstimator`` in the bases.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> class Reader(TagsMixin, BaseEstimator):
    ...     _sklearn_tags = {"input_tags.two_d_array": False, "input_tags.string": True}
    >>> tags = Reader().__sklearn_tags__()
    >>> tags.input_tags.two_d_array, tags.input_tags.string
    (False, True)
    """

    _sklearn_tags: dict = {}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        for cls in reversed(type(self).__mro__):
            for path, value in cls.__dict__.get("_sklearn_tags", {}).items():
                *parents, name = path.split(".")
                owner = tags
                for parent in parents:
                    owner = getattr(owner, parent)
                if not hasattr(owner, name):
                    raise AttributeError(f"{cls.__name__}._sklearn_tags: scikit-learn's tags "
                                         f"have no {path!r}.")
                setattr(owner, name, value)
        return tags


class StructuredEstimatorMixin(TagsMixin):
    """The shared part of the structured estimators (taggers, parsers, argument miners).

    Their ``X`` is a list of sequences (or documents) and their ``y`` a list
    of structures, not arrays; their results never depend on chance beyond
    ``random_state``. ``score`` is ``_score_metric(y, self.predict(X))``,
    the task's own metric (a subclass names it), and ``_n_threads`` the
    number of threads ``n_jobs`` asks for (None: 1).
    """

    _sklearn_tags = {
        "input_tags.two_d_array": False,
        "target_tags.required": True,
        "non_deterministic": False,
    }

    @staticmethod
    def _score_metric(y_true, y_pred):
        raise NotImplementedError("a structured estimator names its metric in _score_metric.")

    def score(self, X, y):
        """The task's metric of :meth:`predict` on ``X`` against ``y``.

        Token accuracy for the taggers (tags unseen in training count as
        errors), the unlabelled attachment score for the parser, the mean of
        the link F1 and the proposition macro-F1 for the argument miners.

        Parameters
        ----------
        X : list
            Sequences, sentences or documents, as :meth:`fit` takes them.
        y : list
            Their gold structures.

        Returns
        -------
        score : float
            Higher is better.
        """
        return self._score_metric(y, self.predict(X))

    def _n_threads(self):
        """Threads for ``n_jobs`` (None: 1, -1: every core)."""
        n_jobs = getattr(self, "n_jobs", None)
        return 1 if n_jobs is None else max(1, effective_n_jobs(n_jobs))


def validation_split(ids, fraction, rng, what="sentences"):
    """Split ``ids`` into training and held-out ids for early stopping.

    ``ceil(fraction * len(ids))`` ids, drawn by one permutation of ``rng``,
    are held out; both parts come back sorted.

    Parameters
    ----------
    ids : array-like of int
        The candidate samples.
    fraction : float
        Fraction held out, in (0, 1).
    rng : numpy.random.RandomState
        Draws the permutation.
    what : str, default="sentences"
        What the samples are, for the error message.

    Returns
    -------
    train_ids, validation_ids : ndarray of int64

    Raises
    ------
    ValueError
        When either part would be empty.

    Examples
    --------
    >>> import numpy as np
    >>> train, valid = validation_split(np.arange(10), 0.25, np.random.RandomState(0))
    >>> len(train), len(valid)
    (7, 3)
    """
    ids = np.asarray(ids, dtype=np.int64)
    n = ids.shape[0]
    n_valid = int(np.ceil(fraction * n))
    if n_valid < 1 or n_valid >= n:
        raise ValueError(
            f"early_stopping needs at least one training and one validation item; "
            f"validation_fraction={fraction} of {n} {what} leaves {n - n_valid} for training "
            f"and {n_valid} for validation."
        )
    perm = rng.permutation(n)
    return np.sort(ids[perm[n_valid:]]), np.sort(ids[perm[:n_valid]])
