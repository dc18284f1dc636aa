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


def brute_force(fg, theta, fs):
    """Best score over all assignments (exact evaluation of every factor)."""
    from sksparse_struct.inference._ad3 import evaluate

    cg = fg.compile()
    best, best_x = -np.inf, None
    for bits in itertools.product([0, 1], repeat=fg.n_variables):
        x = np.array(bits)
        ok, val, _ = evaluate(cg, theta, fs, x)
        if ok and val > best + 1e-12:
            best, best_x = val, x
    return best, best_x
