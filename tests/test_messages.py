"""What the estimators tell their users: progress lines and warnings.

Every estimator with ``verbose`` prints progress in one format (checked with
one regular expression on a tiny fit of each); every warning is issued once
per call and points at the user's line (this file), also from nested
layers and through scikit-learn's wrappers; the convergence warnings follow
scikit-learn's rule (warn when ``tol`` is set and ``max_iter`` ends the fit).
"""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from sksparse_struct import (
    EasyFirstTagger,
    FenchelYoungClassifier,
    LinearChainCRF,
    NeuralEasyFirstTagger,
    SparseMAPParser,
    StructuredSVMArgumentMiner,
)
from sksparse_struct.datasets import load_cdcp_sample, load_ewt_sample
from sksparse_struct.feature_extraction import (
    ArcFeatures,
    ArgumentFeatures,
    TokenFeatures,
)
from sksparse_struct.inference import sparsemap
from sksparse_struct.losses import structured_loss
from sksparse_struct.losses._kinds_fast import SparseMAPOptions
from sksparse_struct.mappings import sq_pnorm_max
from sksparse_struct.structures import DependencyTree
from sksparse_struct.utils._reporting import (
    Progress,
    format_progress,
    user_stacklevel,
    warn,
)

# The format, written independently of the code that prints it: the class
# name in brackets, the unit and its number out of the most, "name value"
# fields two spaces apart, the unit's time and the total time.
LINE = re.compile(
    r"^\[(?P<name>[A-Za-z_]\w*)\] (?P<unit>iteration|epoch|pass) +(?P<k>\d+)/(?P<total>\d+)"
    r"(?P<fields>(?:  [a-z][a-z0-9_]* [^ ]+)*)"
    r"  (?P=unit)_time (?P<step>\d+\.\d\d) s  total_time (?P<elapsed>\d+\.\d\d) s$"
)


def progress_lines(out, name, unit, total):
    """The parsed lines of ``out``, each checked against the format; fields as dicts."""
    lines = out.strip().splitlines()
    assert lines, "nothing was printed"
    parsed = []
    for line in lines:
        match = LINE.match(line)
        assert match, f"not in the progress format: {line!r}"
        assert (match["name"], match["unit"], int(match["total"])) == (name, unit, total), line
        items = match["fields"].split("  ")[1:]
        fields = dict(item.split(" ") for item in items)
        for value in fields.values():
            float(value)  # every value is a number
        parsed.append((int(match["k"]), fields, float(match["step"]), float(match["elapsed"])))
    elapsed = [p[3] for p in parsed]
    assert elapsed == sorted(elapsed)
    return parsed


def caught(func, *args, **kwargs):
    """Run ``func`` recording every warning (none filtered out)."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    return result, record


def the_one(record, category=ConvergenceWarning):
    """The single warning of ``record``, checked to point at this file."""
    assert len(record) == 1, [str(w.message) for w in record]
    (w,) = record
    assert issubclass(w.category, category)
    assert w.filename == __file__, (w.filename, str(w.message))
    return str(w.message)


# --- data -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tagging():
    X, y = load_ewt_sample("train", return_X_y=True)
    X, y = X[:40], y[:40]
    return TokenFeatures(preset="pos").fit_transform(X), y, X


@pytest.fixture(scope="module")
def parsing():
    X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    return X[:30], y[:30]


def small_parser(**params):
    return SparseMAPParser(features=ArcFeatures(n_features=2**16), random_state=0, **params)


# --- the helpers ----------------------------------------------------------------------


def test_format_progress():
    line = format_progress("X", "pass", 7, 120, [("dual", -1.5), ("gap", None), ("n", 3)],
                           0.123, 45.678)
    assert line == "[X] pass   7/120  dual -1.5  n 3  pass_time 0.12 s  total_time 45.68 s"
    assert LINE.match(line)
    assert format_progress("X", "epoch", 3, None, [], 0, 1).startswith("[X] epoch 3  epoch_time")


def test_progress_prints_every_kth_line_and_times_every_iteration(capsys, monkeypatch):
    clock = iter([10.0, 11.0, 13.0, 16.0, 20.0, 30.0, 31.0])
    monkeypatch.setattr("sksparse_struct.utils._reporting.perf_counter", lambda: next(clock))
    progress = Progress(LinearChainCRF(), 2, "epoch", 4)
    assert progress
    for k in range(1, 5):
        progress.update(k, [("loss", float(k))])
    out = capsys.readouterr().out
    # Epochs 2 and 4: each timed alone (2 s, 4 s), not since the last line.
    assert out.splitlines() == [
        "[LinearChainCRF] epoch 2/4  loss 2  epoch_time 2.00 s  total_time 3.00 s",
        "[LinearChainCRF] epoch 4/4  loss 4  epoch_time 4.00 s  total_time 10.00 s",
    ]
    progress.note("compiling")
    assert capsys.readouterr().out == "[LinearChainCRF] compiling\n"
    quiet = Progress("Y", 0, "epoch", 4)
    assert not quiet
    quiet.update(1, [], force=True)
    quiet.note("compiling")
    assert capsys.readouterr().out == ""


def _nested_warning():
    # Stands for a package function warning from deep inside: the helper
    # skips the frames of the package (and of scikit-learn) only.
    warn("deep", UserWarning)


def test_warn_points_at_the_first_frame_outside_the_package():
    _, record = caught(_nested_warning)
    # This test file is outside the package: the warning is attributed to
    # the frame of _nested_warning, here.
    assert the_one(record, UserWarning) == "deep"
    assert record[0].lineno == _nested_warning.__code__.co_firstlineno + 3
    assert user_stacklevel() == 1


# --- progress lines of every estimator --------------------------------------------------


# (The SparseMAP loss may warn of a few unconverged solves: not the point here.)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("loss, solver, unit, fields", [
    ("crf", "lbfgs", "iteration", {"objective", "grad_norm"}),
    ("crf", "adagrad", "epoch", {"loss"}),
    ("sparsemap", "adagrad", "epoch", {"loss", "sparsemap_unconverged"}),
    ("perceptron", "perceptron", "epoch", {"loss", "mistakes"}),
    ("hinge", "bcfw", "pass", {"dual", "mistakes"}),
])
def test_linear_chain_progress(tagging, capsys, loss, solver, unit, fields):
    X, y, _ = tagging
    LinearChainCRF(loss=loss, solver=solver, c2=0.1, max_iter=3, tol=None, verbose=1,
                   random_state=0).fit(X, y)
    lines = progress_lines(capsys.readouterr().out, "LinearChainCRF", unit, 3)
    assert [k for k, *_ in lines] == [1, 2, 3]
    assert set(lines[0][1]) == fields
    if solver == "bcfw":  # the last pass computes the duality gap
        assert set(lines[-1][1]) == fields | {"objective", "duality_gap"}


def test_verbose_k_prints_every_kth(tagging, capsys):
    X, y, _ = tagging
    LinearChainCRF(c2=0.1, max_iter=5, tol=None, verbose=2).fit(X, y)
    lines = progress_lines(capsys.readouterr().out, "LinearChainCRF", "iteration", 5)
    assert [k for k, *_ in lines] == [2, 4]


def test_parser_progress(parsing, capsys):
    X, y = parsing
    small_parser(max_iter=2, tol=None, early_stopping=True, verbose=1).fit(X, y)
    lines = progress_lines(capsys.readouterr().out, "SparseMAPParser", "epoch", 2)
    assert [k for k, *_ in lines] == [1, 2]
    assert set(lines[0][1]) == {"loss", "label_loss", "val_uas", "sparsemap_unconverged"}
    small_parser(loss="perceptron", max_iter=1, tol=None, verbose=1).fit(
        X, [heads for heads, _ in y])
    (line,) = progress_lines(capsys.readouterr().out, "SparseMAPParser", "epoch", 1)
    assert set(line[1]) == {"loss"}


def test_easy_first_progress(tagging, capsys):
    X, y, _ = tagging
    EasyFirstTagger(max_iter=2, early_stopping=True, random_state=0, verbose=1).fit(X, y)
    lines = progress_lines(capsys.readouterr().out, "EasyFirstTagger", "epoch", 2)
    assert set(lines[0][1]) == {"mistakes", "val_acc"}


def test_neural_easy_first_progress(tagging, capsys):
    _, y, words = tagging
    NeuralEasyFirstTagger(max_iter=2, word_dim=8, affix_dim=4, hidden_dim=8, sketch_dim=6,
                          attention_dim=6, random_state=0, verbose=1).fit(words[:15], y[:15])
    lines = progress_lines(capsys.readouterr().out, "NeuralEasyFirstTagger", "epoch", 2)
    assert set(lines[0][1]) == {"loss", "val_acc"}


def test_argument_miner_progress(capsys):
    X_train, y_train, _, _ = load_cdcp_sample()
    X = ArgumentFeatures().fit(X_train, y_train).transform(X_train[:15])
    StructuredSVMArgumentMiner(max_iter=2, random_state=0, verbose=1).fit(X, y_train[:15])
    lines = progress_lines(capsys.readouterr().out, "StructuredSVMArgumentMiner", "pass", 2)
    assert set(lines[0][1]) == {"dual", "integral", "ad3_iterations"}
    assert set(lines[1][1]) == {"dual", "objective", "duality_gap", "integral",
                                "ad3_iterations"}


def test_fenchel_young_progress(capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = rng.integers(3, size=30)
    FenchelYoungClassifier(max_iter=50, verbose=1).fit(X, y)
    lines = progress_lines(capsys.readouterr().out, "FenchelYoungClassifier", "iteration", 50)
    assert set(lines[0][1]) == {"objective", "grad_max"}


# --- the convergence rule: warn when tol is set and max_iter ends the fit ----------------


@pytest.mark.parametrize("loss, solver, unit", [
    ("crf", "lbfgs", "iterations"), ("crf", "adagrad", "epochs"),
    ("perceptron", "perceptron", "epochs"), ("hinge", "bcfw", "passes"),
])
def test_linear_chain_warns_when_max_iter_ends_the_fit(tagging, loss, solver, unit):
    X, y, _ = tagging
    crf = LinearChainCRF(loss=loss, solver=solver, c2=0.1, max_iter=2, random_state=0)
    _, record = caught(crf.fit, X, y)
    message = the_one(record)
    assert message.startswith(f"LinearChainCRF (solver={solver!r}) did not converge: "
                              f"max_iter=2 {unit} ended the fit before ")
    assert "tol=1e-05" in message and "tol=None runs max_iter" in message
    # A fixed number of iterations asked for: no warning.
    for tol in (None, 0):
        _, record = caught(crf.set_params(tol=tol).fit, X, y)
        assert not record, [str(w.message) for w in record]


def test_linear_chain_does_not_warn_when_it_converges(tagging):
    X, y, _ = tagging
    for params in ({"solver": "lbfgs", "max_iter": 500},
                   {"solver": "adagrad", "max_iter": 10, "tol": 1e9}):
        crf = LinearChainCRF(c2=0.1, random_state=0, **params)
        _, record = caught(crf.fit, X, y)
        assert not record and crf.n_iter_ < crf.max_iter


def test_parser_warns_when_max_iter_ends_the_fit(parsing):
    X, y = parsing
    parser = small_parser(max_iter=2)
    _, record = caught(parser.fit, X, y)
    assert the_one(record).startswith(
        "SparseMAPParser did not converge: max_iter=2 epochs ended the fit before the mean "
        "training loss stopped falling by more than tol=0.0001 (3 epochs in a row).")
    _, record = caught(parser.set_params(early_stopping=True).fit, X, y)
    assert "the validation UAS stopped rising by more than tol=0.0001" in the_one(record)
    _, record = caught(parser.set_params(tol=None).fit, X, y)
    assert not record
    # The stopping rule fires (a tolerance no epoch can beat): no warning.
    _, record = caught(parser.set_params(tol=1e9, max_iter=10).fit, X, y)
    assert not record and parser.n_iter_ == 4


# --- warnings of the inner SparseMAP solves -------------------------------------------------


def test_parser_warns_once_for_its_unconverged_sparsemap_solves(parsing):
    X, y = parsing
    parser = small_parser(max_iter=2, tol=None, sparsemap_max_iter=2)
    _, record = caught(parser.fit, X, y)
    message = the_one(record)
    n = parser.n_sparsemap_not_converged_
    assert 0 < n <= 2 * len(X)
    assert message == (
        f"SparseMAPParser (loss='sparsemap'): {n} of {2 * len(X)} SparseMAP solves in "
        "training (one per sentence and epoch) did not converge in sparsemap_max_iter=2 "
        "active-set iterations, so their losses and gradients are approximate. Increase "
        "sparsemap_max_iter.")
    # At prediction too (the trained scores need fewer iterations): one
    # warning for all the sentences.
    parser.set_params(sparsemap_max_iter=1)
    for method in (parser.predict_sparse, parser.predict_marginals):
        _, record = caught(method, X)
        assert re.match(r"SparseMAPParser: SparseMAP did not converge in sparsemap_max_iter=1 "
                        rf"active-set iterations on \d+ of {len(X)} sentences", the_one(record))
    _, record = caught(parser.set_params(sparsemap_max_iter=200).fit, X, y)
    assert not record and parser.n_sparsemap_not_converged_ == 0
    # The default, None: SparseMAPOptions' own limit (growing with the
    # sentence), in training and in prediction.
    assert parser.set_params(sparsemap_max_iter=None)._sparsemap_options().max_iter is None
    supports, record = caught(parser.predict_sparse, X)
    assert not record and len(supports) == len(X)


def test_linear_chain_warns_once_for_its_unconverged_sparsemap_solves(tagging):
    X, y, _ = tagging
    for solver, each in (("adagrad", "one per sequence and epoch"),
                         ("lbfgs", "one per sequence and evaluation of the objective")):
        crf = LinearChainCRF(loss="sparsemap", solver=solver, max_iter=2, tol=None,
                             sparsemap_max_iter=1, random_state=0)
        _, record = caught(crf.fit, X, y)
        message = the_one(record)
        assert re.match(r"LinearChainCRF \(loss='sparsemap'\): \d+ of \d+ SparseMAP solves in "
                        rf"training \({each}\) did not converge in sparsemap_max_iter=1 ",
                        message)
        if solver == "lbfgs":
            # The approximate gradients stop L-BFGS: said in the same warning.
            assert f"L-BFGS stopped after {crf.n_iter_} iterations, where its line" in message
    _, record = caught(crf.predict_sparse, X, max_iter=1)
    assert re.match(r"LinearChainCRF.predict_sparse: SparseMAP did not converge in max_iter=1 "
                    rf"iterations on \d+ of {len(X)} sequences", the_one(record))


def test_nested_sparsemap_warnings_point_at_the_caller():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(9, 9))
    _, record = caught(sparsemap, DependencyTree(), S, max_iter=1)
    assert the_one(record).startswith("sparsemap (method='active_set') did not converge")
    # structured_loss solves SparseMAP through sparsemap_parts: one warning, here.
    heads = np.array([-1, 0, 1, 2, 3, 4, 5, 6, 7])
    _, record = caught(structured_loss, DependencyTree(), S, y=heads, loss="sparsemap",
                       sparsemap_options=SparseMAPOptions(max_iter=1))
    assert "did not converge" in the_one(record)
    _, record = caught(sq_pnorm_max, rng.normal(size=(3, 6)), p=1.2, max_iter=1)
    assert the_one(record).startswith("sq_pnorm_max")


# --- L-BFGS's line search ---------------------------------------------------------------


def _scaled_chains(scale, n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = [sp.csr_matrix(rng.normal(size=(5, 3)) * scale) for _ in range(n)]
    y = [list(rng.choice(["a", "b"], size=5)) for _ in range(n)]
    return X, y


@pytest.mark.parametrize("scale, c1, at_start", [(3e9, 0.0, True), (1e6, 0.1, True),
                                                   (1e9, 0.0, False)])
def test_lbfgs_line_search_failure_is_explained_in_terms_of_the_features(scale, c1, at_start):
    X, y = _scaled_chains(scale)
    crf = LinearChainCRF(c1=c1, c2=1.0 if at_start else 0.0)
    _, record = caught(crf.fit, X, y)
    message = the_one(record)
    largest = max(np.abs(x.data).max() for x in X)
    assert f"The largest feature value is {largest:.3g} in magnitude" in message
    assert "Rescale the features" in message
    if at_start:
        assert crf.n_iter_ == 0 and "could not take a single step" in message
        assert np.all(crf.coef_.data == 0)
    else:
        assert crf.n_iter_ > 0 and f"stopped after {crf.n_iter_} iterations" in message
    # Rescaled, the same data fit without a warning.
    _, record = caught(crf.fit, [x / largest for x in X], y)
    assert not record


def test_lbfgs_line_search_failure_with_moderate_features():
    from sksparse_struct.tagging._linear_chain import _warn_line_search

    _, record = caught(_warn_line_search, "LinearChainCRF (solver='lbfgs')", 12, 1.0, 0.25)
    message = the_one(record)
    assert message.startswith("LinearChainCRF (solver='lbfgs') stopped after 12 iterations")
    assert "away from the optimum (the gradient norm relative to the weights is 0.25)" in message
    assert "Rescale" not in message


@pytest.mark.parametrize("c2", [0.0, 0.1])
def test_lbfgs_round_off_limit_is_no_failure(c2):
    # tol=None asks for max_iter iterations; near the optimum rounding hides
    # what is left to gain and L-BFGS stops there, converged: no warning,
    # also where c2=0 lets the weights grow on separable chains.
    rng = np.random.default_rng(0)
    y = [list(rng.choice(["a", "b", "c"], size=int(rng.integers(2, 6)))) for _ in range(20)]
    X = [[{f"w={label}": 1.0, "bias": 1.0} for label in labels] for labels in y]
    crf = LinearChainCRF(c2=c2, tol=None, max_iter=1000)
    _, record = caught(crf.fit, X, y)
    assert not record
    assert crf.n_iter_ < 1000
    assert crf.score(X, y) == 1.0


# --- through scikit-learn's wrappers ---------------------------------------------------


def test_warnings_point_at_the_user_through_a_pipeline(tagging):
    _, y, words = tagging
    pipe = make_pipeline(TokenFeatures(preset="pos"), LinearChainCRF(max_iter=2))
    _, record = caught(pipe.fit, words, y)
    assert "did not converge" in the_one(record)


def test_fenchel_young_warning_points_at_the_user():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = rng.integers(3, size=30)
    _, record = caught(FenchelYoungClassifier(max_iter=1).fit, X, y)
    assert "did not converge" in the_one(record)
