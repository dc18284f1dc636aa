"""Fits on the bundled EWT sample whose results are recorded in ``reference_fits.json``.

A guard for refactorings that must not change any result: every tagger and
parser configuration below is fitted and its learned weights, iteration
counts, loss curves and predictions are digested (SHA-256 of the exact
bytes) together with a few summary numbers. ``test_reference_fits.py``
refits them and compares.

Floating-point results can differ in their last bits between processors
(BLAS kernels, libm variants), so the digests are only compared on the
processor they were recorded on (``llvmlite``'s host CPU name), with the
same kernels (no ``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES``,
``OPENBLAS_CORETYPE`` or ``GLIBC_TUNABLES`` override, as in CI's second
run); elsewhere the summary numbers are compared with the tolerances of
``test_reference_fits._off_host_tolerance`` and the predictions' accuracy
to within a point.

To record the current results (only when a change of results is intended,
and say which and why in the commit)::

    python -m tests._reference_fits --write

or, to re-record only the entries a change moved (the others keep their
record and the processor it was made on)::

    python -m tests._reference_fits --write NAME [NAME ...]

An entry recorded alone on another processor than the file's ``host`` has
its own under ``hosts`` (``entry_host``); its digests are compared on that
processor only.
"""

import hashlib
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

from sksparse_struct import LinearChainCRF, SparseMAPParser
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.feature_extraction import ArcFeatures, TokenFeatures

REFERENCE_FILE = Path(__file__).with_name("reference_fits.json")

# name -> LinearChainCRF parameters (UPOS tagging of the sample).
TAGGER_CONFIGS = {}
for _jobs in (1, 2):
    TAGGER_CONFIGS.update({
        f"tagger-crf-lbfgs-j{_jobs}": dict(loss="crf", c2=0.1, max_iter=25, n_jobs=_jobs),
        f"tagger-hinge-adagrad-j{_jobs}": dict(loss="hinge", c2=0.1, max_iter=3,
                                               random_state=0, n_jobs=_jobs),
        f"tagger-perceptron-j{_jobs}": dict(loss="perceptron", max_iter=3, random_state=0,
                                            n_jobs=_jobs),
        f"tagger-sparsemap-adagrad-j{_jobs}": dict(loss="sparsemap", c2=0.1, max_iter=3,
                                                   random_state=0, n_jobs=_jobs),
        f"tagger-margin_sparsemap-adagrad-j{_jobs}": dict(
            loss="margin_sparsemap", c2=0.1, max_iter=3, random_state=0, n_jobs=_jobs),
        f"tagger-sparsemap-lbfgs-j{_jobs}": dict(loss="sparsemap", solver="lbfgs", c2=0.1,
                                                 max_iter=8, n_jobs=_jobs),
        f"tagger-margin_sparsemap-lbfgs-j{_jobs}": dict(
            loss="margin_sparsemap", solver="lbfgs", c2=0.1, max_iter=8, n_jobs=_jobs),
    })
TAGGER_CONFIGS.update({
    "tagger-crf-owlqn": dict(loss="crf", c1=0.05, c2=0.01, max_iter=20),
    "tagger-crf-adagrad-l1": dict(loss="crf", solver="adagrad", c1=0.05, c2=0.01, max_iter=3,
                                  random_state=0),
    "tagger-crf-lbfgs-seen-transitions": dict(loss="crf", c2=0.1, max_iter=15,
                                              all_possible_transitions=False,
                                              all_possible_states=True),
})

# name -> SparseMAPParser parameters (sample with relation labels).
PARSER_CONFIGS = {}
for _loss in ("perceptron", "hinge", "crf", "sparsemap", "margin_sparsemap"):
    for _jobs in (1, 2):
        PARSER_CONFIGS[f"parser-{_loss}-j{_jobs}"] = dict(loss=_loss, max_iter=2,
                                                          random_state=0, n_jobs=_jobs)
PARSER_CONFIGS.update({
    "parser-crf-projective": dict(loss="crf", projective=True, max_iter=2, random_state=0),
    "parser-sparsemap-projective-j2": dict(loss="sparsemap", projective=True, max_iter=2,
                                           random_state=0, n_jobs=2),
    "parser-hinge-tags-filter-alpha0": dict(loss="hinge", arc_filter="tags", alpha=0.0,
                                            max_iter=2, random_state=0),
    "parser-margin_sparsemap-early-stopping": dict(
        loss="margin_sparsemap", early_stopping=True, n_iter_no_change=1, tol=0.0,
        max_iter=3, random_state=0, min_arc_gradient=0.0),
    "parser-perceptron-multiroot-batch1": dict(loss="perceptron", single_root=False,
                                               batch_size=1, max_iter=1, random_state=0),
})
_PARSER_FEATURES = dict(preset="rich", n_features=2**16)
_N_TRAIN = 200


def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _tagger_data():
    X, y = load_ewt_sample("train", return_X_y=True)
    Xt, yt = load_ewt_sample("test", return_X_y=True)
    features = TokenFeatures(preset="pos").fit(X)
    return (features.transform(X[:_N_TRAIN]), y[:_N_TRAIN], features.transform(Xt), yt)


def _parser_data():
    train = load_ewt_sample("train")[:_N_TRAIN]
    test = load_ewt_sample("test")
    encoder = ArcFeatures(**_PARSER_FEATURES)
    X = encoder.fit_transform(train)
    y = [([t["head"] for t in s], [t["deprel"] for t in s]) for s in train]
    Xt = encoder.transform(test)
    yt = [[t["head"] for t in s] for s in test]
    return X, y, Xt, yt


def tagger_record(params, data):
    X, y, Xt, yt = data
    model = LinearChainCRF(**params).fit(X, y)
    coef = model.coef_.tocsr()
    weights = np.concatenate([coef.data, model.transition_.ravel(), model.start_transition_,
                              model.end_transition_])
    pred = model.predict(Xt)
    flat_pred = np.array([lab for s in pred for lab in s])
    flat_true = np.array([lab for s in yt for lab in s])
    finite = weights[np.isfinite(weights)]
    return {
        "weights": _digest(coef.data, coef.indices, coef.indptr, model.transition_,
                           model.start_transition_, model.end_transition_),
        "predictions": _digest(flat_pred.astype("U")),
        "n_iter": int(model.n_iter_),
        "objective": float(model.objective_),
        "weight_sum": float(finite.sum()),
        "weight_norm": float(np.sqrt(finite @ finite)),
        "accuracy": float(np.mean(flat_pred == flat_true)),
    }


def parser_record(params, data):
    X, y, Xt, yt = data
    model = SparseMAPParser(**params).fit(X, y)
    heads, deprels = model.predict(Xt, return_deprel=True)
    flat_heads = np.concatenate(heads)
    flat_true = np.concatenate([np.asarray(h) for h in yt])
    return {
        "weights": _digest(model.coef_),
        "predictions": _digest(flat_heads, np.array([d for s in deprels for d in s])),
        "n_iter": int(model.n_iter_),
        "loss_curve": _digest(np.array(model.loss_curve_), np.array(model.label_loss_curve_)),
        "final_loss": float(model.loss_curve_[-1]),
        "weight_sum": float(model.coef_.sum()),
        "weight_norm": float(np.sqrt(model.coef_ @ model.coef_)),
        "accuracy": float(np.mean(flat_heads == flat_true)),
    }


# Environment variables that choose other compiled kernels on the same
# processor: numba's target CPU and features, OpenBLAS's core type, glibc's
# choice of libm variants.
KERNEL_OVERRIDES = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "OPENBLAS_CORETYPE",
                    "GLIBC_TUNABLES")


def host():
    """What the digests depend on: processor, kernel choices, the numerical libraries' versions.

    The kernel overrides appear only when set, so that a record made without
    them matches a run without them.
    """
    import llvmlite.binding as llvm
    import numba

    info = {"cpu": llvm.get_host_cpu_name(), "machine": platform.machine(),
            "numpy": np.__version__, "numba": numba.__version__}
    info.update({name: os.environ[name] for name in KERNEL_OVERRIDES if os.environ.get(name)})
    return info


def entry_host(record, name):
    """The host entry ``name`` of ``record`` was made on: its own, else the file's."""
    return record.get("hosts", {}).get(name, record["host"])


def record_all(names=None):
    """The records of the configurations ``names`` (default: all of them)."""
    names = list(TAGGER_CONFIGS) + list(PARSER_CONFIGS) if names is None else names
    records = {}
    if any(name in TAGGER_CONFIGS for name in names):
        tagger_data = _tagger_data()
        records.update({name: tagger_record(TAGGER_CONFIGS[name], tagger_data)
                        for name in names if name in TAGGER_CONFIGS})
    if any(name in PARSER_CONFIGS for name in names):
        parser_data = _parser_data()
        records.update({name: parser_record(PARSER_CONFIGS[name], parser_data)
                        for name in names if name in PARSER_CONFIGS})
    return records


def rerecord(record, names):
    """``record`` with the entries ``names`` made again, here; the others unchanged."""
    here = host()
    hosts = dict(record.get("hosts", {}))
    fits = dict(record["fits"])
    fits.update(record_all(names))
    for name in names:
        if here == record["host"]:
            hosts.pop(name, None)
        else:
            hosts[name] = here
    out = {"host": record["host"], "fits": fits}
    if hosts:
        out["hosts"] = hosts
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--write" not in args:
        sys.exit("usage: python -m tests._reference_fits --write [NAME ...]")
    names = [a for a in args if a != "--write"]
    unknown = sorted(set(names) - set(TAGGER_CONFIGS) - set(PARSER_CONFIGS))
    if unknown:
        sys.exit(f"unknown configurations: {unknown}")
    if names:
        record = rerecord(json.loads(REFERENCE_FILE.read_text()), names)
    else:
        record = {"host": host(), "fits": record_all()}
    REFERENCE_FILE.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE_FILE}" + (f" ({', '.join(names)})" if names else ""))
