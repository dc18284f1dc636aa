"""TagParsePipeline: a ColumnTagger and a parser, the parser trained on predicted and gold tags."""

from time import perf_counter

from sklearn.pipeline import Pipeline

from ._column_tagger import ColumnTagger

__all__ = ["TagParsePipeline"]


class TagParsePipeline(Pipeline):
    """A :class:`ColumnTagger` then a parser, the parser trained on predicted and gold tags.

    A :class:`~sklearn.pipeline.Pipeline` of two steps, a
    :class:`ColumnTagger` and a model that reads its columns (typically a
    :class:`~sksparse_struct.SparseMAPParser`), that differs from it in
    ``fit`` only: with ``gold_copy``, the parser is trained on every training
    sentence twice, once with the tagger's jackknifed tags (as in a
    ``Pipeline``: tags as wrong as those of new text) and once with its gold
    tags, with the fields the tagger does not predict cleared alike. The
    second copy shows the parser what each tag means when it is right; the
    first, how far to trust it. Prediction is the pipeline's: the tagger tags
    the words, the parser parses them. Every method but ``fit`` is
    :class:`~sklearn.pipeline.Pipeline`'s.

    Parameters
    ----------
    steps : list of (str, estimator) tuples
        Two steps: a :class:`ColumnTagger`, then the final model, fitted on
        the tagger's output and ``y``.
    gold_copy : bool, default=True
        Whether the final model is also trained on the gold-tag copy of the
        training sentences (twice the sentences, ``y`` repeated). False
        fits as a ``Pipeline`` does.
    transform_input : list of str or None, default=None
        As in :class:`~sklearn.pipeline.Pipeline`; with ``gold_copy`` the
        pipeline takes no fit parameters, so it must be None.
    memory : None, default=None
        As in :class:`~sklearn.pipeline.Pipeline`; must be None with
        ``gold_copy`` (the tagger is fitted each time).
    verbose : bool, default=False
        Print the time each step takes to fit.

    Attributes
    ----------
    named_steps : :class:`~sklearn.utils.Bunch`
        The steps by name, as in :class:`~sklearn.pipeline.Pipeline`.

    See Also
    --------
    ColumnTagger : The tagger step; its ``fit_transform`` jackknifes.
    sklearn.pipeline.Pipeline : The same without the gold-tag copy.

    Examples
    --------
    >>> from sksparse_struct import ColumnTagger, SparseMAPParser, TagParsePipeline
    >>> from sksparse_struct.datasets import load_ewt_sample
    >>> X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    >>> model = TagParsePipeline([
    ...     ("tags", ColumnTagger(random_state=0)),
    ...     ("parser", SparseMAPParser("margin_sparsemap", projective=True, random_state=0)),
    ... ]).fit(X, y)  # the parser sees 2 x 360 sentences
    >>> words = [[{"form": word} for word in "She saw a man with a telescope .".split()]]
    >>> model.predict(words)[0].tolist()
    [2, 0, 4, 2, 7, 7, 4, 2]
    """

    _parameter_constraints: dict = {**Pipeline._parameter_constraints, "gold_copy": ["boolean"]}

    def __init__(self, steps, *, gold_copy=True, transform_input=None, memory=None,
                 verbose=False):
        super().__init__(steps, transform_input=transform_input, memory=memory, verbose=verbose)
        self.gold_copy = gold_copy

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Sentences of token dicts in, as the ColumnTagger takes them; a
        # Pipeline's tags would say 2-D arrays.
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = True
        return tags

    def fit(self, X, y=None, **params):
        """Fit the tagger, then the final model on the jackknifed and the gold-tag sentences.

        Parameters
        ----------
        X : list of list of dict
            Training sentences of token dicts with the word and the gold
            columns of the tagger.
        y : list
            The final model's targets, one per sentence (e.g. the parser's
            heads, or ``(heads, deprels)`` pairs).
        **params : dict
            Fit parameters, as :meth:`Pipeline.fit <sklearn.pipeline.Pipeline.fit>`
            takes them; only without ``gold_copy``.

        Returns
        -------
        self : TagParsePipeline
        """
        self._validate_params()
        if not self.gold_copy:
            return super().fit(X, y, **params)
        self._validate_steps()
        (tagger_name, tagger), (final_name, final) = self._two_steps()
        if params or self.transform_input is not None or self.memory is not None:
            raise ValueError(
                "TagParsePipeline: with gold_copy=True, fit takes no fit parameters and "
                "transform_input and memory must be None."
            )
        if y is None:
            raise ValueError("TagParsePipeline: fit needs y, the final model's targets.")
        if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__iter__"):
            raise ValueError(
                "TagParsePipeline: X must be a list of sentences, each a list of token "
                f"dicts; got {type(X).__name__}."
            )
        X, y = list(X), list(y)
        if len(y) != len(X):
            raise ValueError(
                f"TagParsePipeline: X has {len(X)} sentences but y has {len(y)} targets."
            )
        start = perf_counter()
        X_tagged = tagger.fit_transform(X)
        X_gold = tagger.gold_transform(X)
        self._report(1, tagger_name, start)
        start = perf_counter()
        final.fit(X_tagged + X_gold, y + y)
        self._report(2, final_name, start)
        return self

    def _report(self, position, name, start):
        if self.verbose:
            print(f"[TagParsePipeline] (step {position} of 2) Processing {name}, "
                  f"total={perf_counter() - start:5.1f}s", flush=True)

    def _two_steps(self):
        if len(self.steps) != 2:
            raise ValueError(
                f"TagParsePipeline: needs two steps, a ColumnTagger and the final model; "
                f"got {len(self.steps)}: {[name for name, _ in self.steps]}."
            )
        (tagger_name, tagger), (final_name, final) = self.steps
        if not isinstance(tagger, ColumnTagger):
            raise ValueError(
                f"TagParsePipeline: the first step must be a ColumnTagger, got "
                f"{type(tagger).__name__} ({tagger_name!r})."
            )
        if final is None or final == "passthrough":
            raise ValueError("TagParsePipeline: the final step must be an estimator.")
        return self.steps
