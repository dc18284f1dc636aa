"""Reference tools shared by the tests: finite differences and generic solvers."""

import numpy as np


def central_difference_vjp(forward, z, dp, eps=1e-6):
    """``J(z)^T dp`` by central finite differences of a vector function.

    ``forward`` maps a 1-D float64 vector to a 1-D vector; the result is the
    gradient of ``dp . forward(z)`` with respect to ``z``.
    """
    z = np.asarray(z, dtype=np.float64)
    grad = np.empty_like(z)
    for i in range(z.shape[0]):
        step = np.zeros_like(z)
        step[i] = eps
        grad[i] = (dp @ forward(z + step) - dp @ forward(z - step)) / (2 * eps)
    return grad


def central_difference_jacobian(forward, z, eps=1e-6):
    """Full Jacobian ``d forward / d z`` (rows: outputs) by central differences."""
    z = np.asarray(z, dtype=np.float64)
    cols = []
    for i in range(z.shape[0]):
        step = np.zeros_like(z)
        step[i] = eps
        cols.append((forward(z + step) - forward(z - step)) / (2 * eps))
    return np.stack(cols, axis=1)


def solve_on_simplex(objective, d, upper=None, x0=None):
    """Minimise a smooth convex ``objective`` over the (capped) simplex with SLSQP.

    A slow, generic reference for the mappings' forward passes: it knows
    nothing of thresholds or supports.
    """
    from scipy.optimize import minimize

    bounds = [(0.0, 1.0 if upper is None else float(u)) for u in (upper if upper is not None else [None] * d)]
    if x0 is None:
        x0 = np.full(d, 1.0 / d)
        if upper is not None:
            x0 = np.minimum(x0, upper)
    res = minimize(
        objective,
        x0,
        method="SLSQP",
        bounds=bounds,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones_like(x)}],
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    return res.x


def hull_qp(M, theta):
    """SparseMAP by brute force: ``max_p theta . p - ||M^T p||^2 / 2`` on the simplex.

    ``M`` holds one structure's unary indicators per row, ``theta`` their
    scores (SLSQP with exact gradients). Returns the objective and ``u = M^T p``.
    """
    from scipy.optimize import minimize

    d = theta.shape[0]

    def fun(p):
        u = M.T @ p
        return -(theta @ p - 0.5 * u @ u), -(theta - M @ u)

    res = minimize(fun, np.full(d, 1.0 / d), jac=True, method="SLSQP", bounds=[(0, 1)] * d,
                   constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0,
                                 "jac": lambda p: np.ones_like(p)}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    return -res.fun, M.T @ res.x


def is_tree(heads):
    """Whether ``heads`` (``heads[m]`` the head of word ``m``; ``heads[0]`` unused) is a tree."""
    n = len(heads) - 1
    for m in range(1, n + 1):
        seen = set()
        h = m
        while h != 0:
            if h in seen:
                return False
            seen.add(h)
            h = heads[h]
    return True


def is_projective(heads):
    """Whether no two arcs of ``heads`` cross (with the root at position 0)."""
    import itertools

    arcs = [(min(heads[m], m), max(heads[m], m)) for m in range(1, len(heads))]
    return not any(a < c < b < d or c < a < d < b
                   for (a, b), (c, d) in itertools.combinations(arcs, 2))


def all_trees(n, projective, single_root):
    """Every tree over ``n`` words as an int64 head array of length ``n + 1`` (``-1`` first)."""
    import itertools

    trees = []
    for choice in itertools.product(range(n + 1), repeat=n):
        heads = (-1,) + choice
        if any(heads[m] == m for m in range(1, n + 1)):
            continue
        if single_root and sum(h == 0 for h in choice) != 1:
            continue
        if not is_tree(heads):
            continue
        if projective and not is_projective(heads):
            continue
        trees.append(np.array(heads, dtype=np.int64))
    return trees


def generic_sparsemap(structure, *potentials, **kwargs):
    """``sparsemap`` through the generic Python active set (the compiled loop switched off)."""
    import sksparse_struct.inference._sparsemap as sm
    from sksparse_struct.inference import sparsemap

    original = sm._compiled_oracle
    sm._compiled_oracle = lambda *args: None
    try:
        return sparsemap(structure, *potentials, **kwargs)
    finally:
        sm._compiled_oracle = original


def compiled_kind(structure, method="active_set", init=None):
    """The oracle kind SparseMAP's compiled loop would run for ``structure``, or None."""
    import sksparse_struct.inference._sparsemap as sm
    from sksparse_struct.structures import Sequence

    potentials = ((np.zeros((2, 2)), np.zeros((2, 2))) if isinstance(structure, Sequence)
                  else (np.zeros((3, 3)),))
    spec = sm._compiled_oracle(structure, structure.encode(*potentials), method, init)
    return None if spec is None else spec.kind
