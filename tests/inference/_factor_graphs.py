"""Random factor graphs for the AD3 tests: every factor kind, always feasible.

A hidden 0/1 assignment is drawn first and every hard factor is chosen so that
it allows it, so that the LP and the MAP are always feasible.
"""

import itertools
import warnings

import numpy as np

from sksparse_struct.inference import FactorGraph

KINDS = ("xor", "at_most_one", "or", "implication", "pair", "dense")


def random_graph(rng, n_vars, n_factors, kinds=KINDS, max_arity=4):
    """``(graph, planted assignment)`` with ``n_factors`` random factors of ``kinds``."""
    x = rng.integers(0, 2, n_vars)
    fg = FactorGraph(n_vars)
    ones = np.flatnonzero(x == 1)
    zeros = np.flatnonzero(x == 0)
    for _ in range(n_factors):
        kind = kinds[rng.integers(len(kinds))]
        a = int(rng.integers(2, max_arity + 1))
        if kind in ("xor", "at_most_one"):
            if kind == "xor" and (ones.size == 0 or zeros.size < a - 1):
                continue
            n_one = 1 if kind == "xor" else int(rng.integers(0, 2))
            if ones.size < n_one or zeros.size < a - n_one:
                continue
            v = np.concatenate([rng.choice(ones, n_one, replace=False),
                                rng.choice(zeros, a - n_one, replace=False)])
            rng.shuffle(v)
            (fg.add_xor if kind == "xor" else fg.add_at_most_one)(v)
        elif kind in ("or", "implication"):
            v = rng.choice(n_vars, min(a, n_vars), replace=False)
            neg = rng.integers(0, 2, v.size).astype(bool)
            lit = np.where(neg, 1 - x[v], x[v])
            if not lit.any():
                j = rng.integers(v.size)
                neg[j] = not neg[j]
            if kind == "or":
                fg.add_or(v, neg)
            else:
                # the implication's literals: antecedent literal i is NOT (v_i xor neg_i)
                neg2 = neg.copy()
                neg2[:-1] = ~neg[:-1]
                fg.add_implication(v[:-1], v[-1], neg2)
        elif kind == "pair":
            if n_vars < 2:
                continue
            v = rng.choice(n_vars, 2, replace=False)
            fg.add_pair(v[0], v[1])
        else:
            a = min(a, 3, n_vars)
            v = rng.choice(n_vars, a, replace=False)
            allc = np.array(list(itertools.product([0, 1], repeat=a)))
            keep = rng.random(len(allc)) < 0.6
            planted = (allc == x[v]).all(axis=1)
            keep |= planted
            C = allc[keep]
            # some listed configurations forbidden, never the planted one
            forbidden = (rng.random(C.shape[0]) < 0.2) & ~planted[keep]
            fg.add_dense(v, C, forbidden if forbidden.any() else None)
    return fg, x


def random_scores(rng, fg, scale=1.0):
    return (rng.normal(scale=scale, size=fg.n_variables),
            rng.normal(scale=scale, size=fg.n_factor_scores))


def reference_score(fg, theta, fs, x):
    """Score of the 0/1 assignment ``x``, or None if a factor forbids it.

    Written from the factors' definitions, on the graph's own records of
    what was added (not the compiled arrays or kernels the solvers use), so
    that it is an independent reference for them.
    """
    from sksparse_struct.inference._ad3_fast import AT_MOST_ONE, DENSE, OR, PAIR, XOR
    from sksparse_struct.structures import DependencyTree, Sequence

    from .._helpers import is_projective, is_tree

    x = np.asarray(x)
    score = float(theta @ x)
    for kind, V, neg, offsets, table in fg._blocks:
        for r in range(V.shape[0]):
            lit = np.where(neg[r], 1 - x[V[r]], x[V[r]])
            if kind == XOR and lit.sum() != 1:
                return None
            if kind == AT_MOST_ONE and lit.sum() > 1:
                return None
            if kind == OR and lit.sum() < 1:
                return None
            if kind == PAIR:
                score += fs[offsets[r]] * lit[0] * lit[1]
            if kind == DENSE:
                C, forbidden = fg._tables[table], fg._masks[table]
                match = [c for c in range(C.shape[0])
                         if not forbidden[c] and np.array_equal(C[c], x[V[r]])]
                if not match:
                    return None
                score += max(fs[offsets[r] + c] for c in match)
    for structure, V, parts, offset, n_v in fg._structures:
        xs = x[V]
        if isinstance(structure, DependencyTree):
            n = parts.context
            on = xs.reshape(n, n)
            if not (on.sum(axis=1) == 1).all():
                return None
            heads = [-1] + [int(j if j < m else j + 1)
                            for m, j in zip(range(1, n + 1), on.argmax(axis=1))]
            if not is_tree(heads) or (structure.projective and not is_projective(heads)):
                return None
            if structure.single_root and sum(h == 0 for h in heads[1:]) != 1:
                return None
            value = np.array(heads)
        elif isinstance(structure, Sequence):
            n, K = parts.context[:2]
            on = xs.reshape(n, K)
            if not (on.sum(axis=1) == 1).all():
                return None
            value = on.argmax(axis=1)
        else:
            raise NotImplementedError(type(structure).__name__)
        m, h = structure.indicators(value, parts)
        used = m != 0
        score += float(parts.eta_u[used] @ m[used])
        score += float((parts.eta_v + fs[offset:offset + n_v]) @ h)
        if not np.isfinite(score):
            return None
    return score


def brute_force(fg, theta, fs):
    """Best score over all assignments, and one assignment reaching it (by :func:`reference_score`)."""
    best, best_x = -np.inf, None
    for bits in itertools.product([0, 1], repeat=fg.n_variables):
        x = np.array(bits)
        val = reference_score(fg, theta, fs, x)
        if val is not None and val > best + 1e-12:
            best, best_x = val, x
    return best, best_x


def factor_configurations(fg):
    """Every factor's allowed configurations, for an explicit local polytope.

    One entry ``(variables, X, H, offset, const)`` per factor, from the
    factors' definitions on the graph's own records (as
    :func:`reference_score`): ``X`` holds the allowed 0/1 values of the
    factor's variables (one row per configuration), ``H`` the additional
    indicators each configuration gives the factor's scores at ``offset``
    (``offset`` is -1 without scores) and ``const`` the structure factors'
    fixed part scores.
    """
    from sksparse_struct.inference._ad3_fast import AT_MOST_ONE, DENSE, OR, PAIR, XOR

    out = []
    for kind, V, neg, offsets, table in fg._blocks:
        for r in range(V.shape[0]):
            a = V.shape[1]
            rows, extra = [], []
            if kind == DENSE:
                C, forbidden = fg._tables[table], fg._masks[table]
                for c in range(C.shape[0]):
                    if not forbidden[c]:
                        rows.append(C[c])
                        extra.append(np.eye(C.shape[0])[c])
            else:
                for bits in itertools.product([0, 1], repeat=a):
                    x = np.array(bits)
                    lit = np.where(neg[r], 1 - x, x)
                    if ((kind == XOR and lit.sum() != 1) or (kind == AT_MOST_ONE and lit.sum() > 1)
                            or (kind == OR and lit.sum() < 1)):
                        continue
                    rows.append(x)
                    if kind == PAIR:
                        extra.append(np.array([lit[0] * lit[1]]))
            X = np.array(rows, dtype=float)
            H = np.array(extra, dtype=float) if extra else np.zeros((X.shape[0], 0))
            off = int(offsets[r]) if offsets is not None else -1
            out.append((V[r], X, H, off, np.zeros(X.shape[0])))
    for structure, V, parts, offset, n_v in fg._structures:
        rows, extra, const = [], [], []
        for bits in itertools.product([0, 1], repeat=V.shape[0]):
            x = np.zeros(fg.n_variables, dtype=np.int64)
            x[V] = bits
            # reference_score of this factor alone: a graph without the others
            solo = type(fg)(fg.n_variables)
            solo.add_structure(structure, V, *_potentials_of(structure, parts))
            zero_fs = np.zeros(n_v)
            val = reference_score(solo, np.zeros(fg.n_variables), zero_fs, x)
            if val is None:
                continue
            value = _value_of(structure, parts, np.array(bits))
            m, h = structure.indicators(value, parts)
            rows.append(np.array(bits, dtype=float))
            extra.append(np.asarray(h, dtype=float))
            used = m != 0
            const.append(float(parts.eta_u[used] @ m[used]) + float(parts.eta_v @ h))
        out.append((V, np.array(rows), np.array(extra).reshape(len(rows), n_v), offset,
                    np.array(const)))
    return out


def _potentials_of(structure, parts):
    from sksparse_struct.structures import DependencyTree

    if isinstance(structure, DependencyTree):
        n = parts.context
        scores = np.zeros((n + 1, n + 1))
        return (scores,)
    n, K = parts.context[:2]
    return np.zeros((n, K)), np.zeros((K, K))


def _value_of(structure, parts, bits):
    from sksparse_struct.structures import DependencyTree

    if isinstance(structure, DependencyTree):
        n = parts.context
        on = bits.reshape(n, n)
        return np.array([-1] + [int(j if j < m else j + 1)
                                for m, j in zip(range(1, n + 1), on.argmax(axis=1))])
    n, K = parts.context[:2]
    return bits.reshape(n, K).argmax(axis=1)


def lp_sparsemap_reference(fg, theta, fs):
    """LP-SparseMAP by a generic solver (scipy's trust-constr) over the explicit local polytope.

    Unknowns: the variables ``z`` and a distribution over each factor's
    configurations; the distributions' means must equal ``z``. Returns
    ``(objective, z)``.
    """
    import scipy.linalg
    from scipy.optimize import Bounds, LinearConstraint, minimize

    facs = factor_configurations(fg)
    n = fg.n_variables
    sizes = [X.shape[0] for _, X, _, _, _ in facs]
    starts = np.concatenate([[n], n + np.cumsum(sizes)]).astype(int)
    gains = []
    for (V, X, H, off, const) in facs:
        g = const.copy()
        if H.shape[1]:
            g += H @ fs[off:off + H.shape[1]]
        gains.append(g)
    gain = np.concatenate([np.zeros(n)] + gains)

    def fun(w):
        z = w[:n]
        return -(theta @ z - 0.5 * z @ z + gain @ w)

    hess = np.zeros((starts[-1], starts[-1]))
    hess[np.arange(n), np.arange(n)] = 1.0

    def jac(w):
        g = -gain.copy()
        g[:n] -= theta - w[:n]
        return g

    blocks, rhs = [], []
    for k, (V, X, H, off, const) in enumerate(facs):
        a, b = starts[k], starts[k + 1]
        A = np.zeros((len(V) + 1, starts[-1]))
        A[:len(V), a:b] = X.T
        A[np.arange(len(V)), V] -= 1.0
        A[len(V), a:b] = 1.0
        blocks.append(A)
        rhs.append(np.eye(len(V) + 1)[-1])
    A, rhs = np.vstack(blocks), np.concatenate(rhs)
    # SLSQP needs independent equality rows (an XOR's agreement rows sum to its
    # normalisation row): keep a basis of them.
    _, R, piv = scipy.linalg.qr(A.T, pivoting=True, mode="economic")
    rank = int((np.abs(np.diag(R)) > 1e-10 * np.abs(R[0, 0])).sum())
    A, rhs = A[np.sort(piv[:rank])], rhs[np.sort(piv[:rank])]
    w0 = np.concatenate([np.full(n, 0.5)] + [np.full(s, 1.0 / s) for s in sizes])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # trust-constr's notes on degenerate constraints
        res = minimize(fun, w0, jac=jac, hess=lambda w: hess, method="trust-constr",
                       bounds=Bounds(np.zeros(starts[-1]), np.ones(starts[-1])),
                       constraints=[LinearConstraint(A, rhs, rhs)],
                       options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 20000})
    return -res.fun, res.x[:n]


def in_local_polytope(fg, z, v, tol=1e-7):
    """Whether ``(z, v)`` is in the local polytope, by an LP (HiGHS) over the explicit one.

    Feasibility of: a distribution over each factor's configurations whose
    mean is ``z`` on its variables and ``v`` on its scores.
    """
    from scipy.optimize import linprog

    facs = factor_configurations(fg)
    ok = True
    for V, X, H, off, _ in facs:
        rows = [X.T, np.ones((1, X.shape[0]))]
        rhs = [z[V], [1.0]]
        if H.shape[1]:
            rows.append(H.T)
            rhs.append(v[off:off + H.shape[1]])
        A, b = np.vstack(rows), np.concatenate(rhs)
        # min the total violation |A p - b| as slack variables
        k = A.shape[0]
        A_eq = np.hstack([A, np.eye(k), -np.eye(k)])
        c = np.concatenate([np.zeros(X.shape[0]), np.ones(2 * k)])
        res = linprog(c, A_eq=A_eq, b_eq=b, bounds=(0, None), method="highs")
        ok &= res.status == 0 and res.fun <= tol
    return ok
