"""predict_file on a dask cluster: the same output as on this process.

Processes of a ``dask.distributed.LocalCluster`` stand for the machines of
a cluster: they share nothing with the test but what dask sends them (the
pickled estimator and the chunks of text).
"""

import gzip

import pytest

distributed = pytest.importorskip(
    "distributed", reason="needs dask.distributed (pip install '.[dask]' from the clone)")

from joblib import parallel_config
from sklearn.pipeline import make_pipeline

from sksparse_struct import LinearChainCRF
from sksparse_struct.datasets import _predict_file, load_ewt_sample, predict_file
from sksparse_struct.feature_extraction import TokenFeatures

from .test_predict_file import ewt_test_text


def _models_held():
    """Run on each worker: the estimators predict_file unpickled there."""
    return len(_predict_file._UNPICKLED)


def test_predict_file_on_a_dask_cluster(tmp_path):
    X, y = load_ewt_sample("train", return_X_y=True)
    tagger = make_pipeline(TokenFeatures(preset="pos"),
                           LinearChainCRF(loss="perceptron", max_iter=3, random_state=0))
    tagger.fit(X, y)
    path = tmp_path / "test.conllu"
    path.write_text(ewt_test_text(), encoding="utf-8")
    predict_file(tagger, path, tmp_path / "local.conllu", label="upos", chunk_size=1000)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client, parallel_config(backend="dask"):
        predict_file(tagger, path, tmp_path / "dask.conllu.gz", label="upos", chunk_size=10)
        held = client.run(_models_held)
    # The workers unpickled the estimator: they predicted the chunks.
    assert len(held) == 2 and sum(held.values()) >= 1, held
    local = (tmp_path / "local.conllu").read_bytes()
    assert gzip.decompress((tmp_path / "dask.conllu.gz").read_bytes()) == local
