"""The contract of a factor kind, checked for every entry of the table.

A factor kind of the AD3 engine is one function answering three questions
(``_ad3_fast``: ``QP``, ``BEST``, ``CHECK``) and one line of ``factor_op``.
This test asks each kind of ``FACTOR_KINDS`` the three questions on small
factors and compares the answers with what the factor's list of allowed
configurations says (enumerated by ``reference_score``, from the factor's
definition): ``CHECK`` against membership and score, ``BEST`` against the
maximum over the list, ``QP`` against a generic QP solve over the list's
convex hull. A new kind gets a builder in ``BUILDERS`` and is checked the
same way (``doc/developers.rst``, "Adding a factor kind").
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from sksparse_struct.inference import FactorGraph
from sksparse_struct.inference._ad3_fast import BEST, CHECK, QP, Context, _work, factor_op
from sksparse_struct.inference._factor_graph import FACTOR_KINDS
from sksparse_struct.structures import DependencyTree

from ._factor_graphs import reference_score


def _dense(fg):
    fg.add_dense([0, 1, 2], [[0, 0, 0], [1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1]],
                 forbidden=[False, False, False, True, False])


BUILDERS = {
    "XOR": lambda fg: fg.add_xor([0, 1, 2]),
    "AtMostOne": lambda fg: fg.add_at_most_one([0, 1, 2]),
    "OR": lambda fg: fg.add_or([0, 1, 2], [True, False, False]),
    "pair": lambda fg: fg.add_pair(0, 2),
    "dense": _dense,
    # a tree over two words: arcs (0 -> 1), (2 -> 1), (0 -> 2), (1 -> 2)
    "structure": lambda fg: fg.add_structure(DependencyTree(), [0, 1, 2, 3], np.zeros((3, 3))),
}


def test_every_kind_has_a_builder():
    assert set(BUILDERS) == set(FACTOR_KINDS.values())


def _single_factor(name):
    fg = FactorGraph(4 if name == "structure" else 3)
    BUILDERS[name](fg)
    cg = fg.compile()
    assert cg.f_type.tolist() == [next(k for k, v in FACTOR_KINDS.items() if v == name)]
    return fg, cg


def _allowed(fg, fs):
    """The factor's allowed configurations, as rows ``[x | extra marginals]``, and their scores."""
    n = fg.n_variables
    rows, scores = [], []
    for bits in itertools.product([0, 1], repeat=n):
        x = np.array(bits)
        base = reference_score(fg, np.zeros(n), np.zeros_like(fs), x)
        if base is None:
            continue
        # the extra marginals: unit factor scores, one at a time
        extra = [reference_score(fg, np.zeros(n), np.eye(fs.shape[0])[k], x) - base
                 for k in range(fs.shape[0])]
        rows.append(np.concatenate([x, extra]))
        scores.append(reference_score(fg, np.zeros(n), fs, x))
    return np.array(rows, dtype=float), np.array(scores)


def _ask(cg, op, x, fs, add, inv_rho=1.0):
    """The kind's answer on the variables' values ``x`` (turned into literals, as the solver does)."""
    ctx = Context(cg.arrays, cg.dense, cg.structs, _work(cg.arrays, cg.dense, cg.structs, add))
    n = cg.f_start[1]
    buf = np.empty(n)
    neg = cg.slot_neg[:n]
    x = np.array(x, dtype=float)[cg.slot_var[:n]]
    if op == BEST:  # w x = w - w (1 - x): a constant and the negated weight
        const = float(x[neg].sum())
        z = np.where(neg, -x, x)
    else:
        const = 0.0
        z = np.where(neg, 1.0 - x, x)
    value = factor_op(op, cg.f_type[0], ctx, 0, cg.f_score[0], z, n, fs, add, inv_rho, buf)
    return const + value, np.where(neg, 1.0 - z, z)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_kind_contract(name):
    rng = np.random.default_rng(sorted(BUILDERS).index(name))
    fg, cg = _single_factor(name)
    n = fg.n_variables
    for _ in range(5):
        fs = rng.normal(size=fg.n_factor_scores)
        rows, scores = _allowed(fg, fs)
        # CHECK: allowed assignments and their score, others -inf
        for bits in itertools.product([0, 1], repeat=n):
            add = np.zeros(fs.shape[0])
            value, _ = _ask(cg, CHECK, bits, fs, add)
            match = np.flatnonzero((rows[:, :n] == bits).all(axis=1))
            if match.size == 0:
                assert value == -np.inf
            else:
                assert value == pytest.approx(scores[match].max())
        # BEST: max over the allowed configurations of w . x + fs . extra
        w = np.zeros(n)
        w[cg.slot_var] = rng.normal(size=cg.slot_var.shape[0])  # 0 on the others
        value, _ = _ask(cg, BEST, w, fs, np.zeros(fs.shape[0]))
        assert value == pytest.approx(max(rows[:, :n] @ w + rows[:, n:] @ fs))
        # QP: min 1/2 ||q - z||^2 - (fs / rho) . extra over the convex hull
        z = rng.normal(0.5, 0.8, size=n)
        rho = 2.0
        add = np.zeros(fs.shape[0])
        _, q = _ask(cg, QP, z, fs, add, 1.0 / rho)

        k = rows.shape[0]
        ref = minimize(lambda p: objective(p @ rows, z, fs, rho, n), np.full(k, 1.0 / k), method="SLSQP",
                       bounds=[(0, 1)] * k,
                       constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0}],
                       options={"ftol": 1e-14, "maxiter": 1000})
        ours = np.concatenate([z.clip(0, 1), add])  # variables outside the factor: the box
        ours[cg.slot_var] = q
        assert objective(ours, z, fs, rho, n) <= ref.fun + 1e-7
        np.testing.assert_allclose(q, (ref.x @ rows)[cg.slot_var], atol=1e-4)


def objective(point, z, fs, rho, n):
    """The local subproblem at ``point = [x | extra marginals]``."""
    return 0.5 * np.sum((point[:n] - z) ** 2) - point[n:] @ fs / rho
