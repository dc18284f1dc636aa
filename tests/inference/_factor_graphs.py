"""Random factor graphs for the AD3 tests: every factor kind, always feasible.

A hidden 0/1 assignment is drawn first and every hard factor is chosen so that
it allows it, so that the LP and the MAP are always feasible.
"""

import itertools

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
