"""The loaders read small files the tests write in the real formats, and refuse pickles that carry code."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from rosetta.bench.datasets import (CIFAR_TEST, CIFAR_TRAIN, imdb_sequences, load_cifar10, load_imdb,
                                    synthetic_cifar10, synthetic_imdb)
from rosetta.errors import RosettaError


def _write_cifar(folder, per_batch: int = 4):
    rng = np.random.default_rng(0)
    for name in CIFAR_TRAIN + (CIFAR_TEST,):
        batch = {b"batch_label": name.encode(), b"labels": list(rng.integers(0, 10, per_batch)),
                 b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8), b"filenames": [b"x.png"] * per_batch}
        with open(folder / name, "wb") as handle:
            pickle.dump(batch, handle, protocol=2)


def test_cifar10_python_batches(tmp_path):
    _write_cifar(tmp_path)
    data = load_cifar10(tmp_path)
    assert data.train.x.shape == (20, 3, 32, 32) and data.train.x.dtype == np.float32
    assert data.test.x.shape == (4, 3, 32, 32) and data.train.y.dtype == np.int64
    assert 0.0 <= data.train.x.min() and data.train.x.max() <= 1.0
    with open(tmp_path / CIFAR_TEST, "rb") as handle:
        raw = pickle.load(handle, encoding="bytes")
    # channels-first: the first 1024 values of a row are the red plane
    np.testing.assert_allclose(data.test.x[0, 0].ravel(), raw[b"data"][0, :1024] / 255.0, rtol=1e-6)


def test_cifar10_missing_batch_is_a_clear_error(tmp_path):
    _write_cifar(tmp_path)
    (tmp_path / "data_batch_3").unlink()
    with pytest.raises(RosettaError, match="missing data_batch_3"):
        load_cifar10(tmp_path)


class _Boom:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_pickle_that_carries_code_is_refused(tmp_path):
    _write_cifar(tmp_path)
    with open(tmp_path / "data_batch_1", "wb") as handle:
        pickle.dump({b"data": _Boom(), b"labels": []}, handle)
    with pytest.raises(RosettaError, match="refusing to load builtins.print"):
        load_cifar10(tmp_path)


def test_imdb_npz_processed_as_dlf(tmp_path):
    reviews = np.empty(2, dtype=object)
    reviews[0], reviews[1] = [5, 29_999, 7], list(range(1, 201))
    np.savez(tmp_path / "imdb.npz", x_train=reviews, y_train=np.array([0, 1]), x_test=reviews, y_test=np.array([1, 0]))
    data = load_imdb(tmp_path)
    assert data.train.x.shape == (2, 150) and data.train.x.dtype == np.int64
    # start token, words shifted by 3, >= 30000 out of vocabulary, zero-padded at the front
    assert data.train.x[0, -4:].tolist() == [1, 8, 2, 10] and not data.train.x[0, :-4].any()
    # truncated at the front: the last 150 of [1, 4, 5, ..., 203]
    assert data.train.x[1, -1] == 203 and data.train.x[1, 0] == 203 - 149
    assert data.test.y.tolist() == [1, 0]


def test_imdb_sequences_match_keras_conventions():
    assert imdb_sequences([[0, 1]], length=4).tolist() == [[0, 1, 3, 4]]


def test_imdb_missing_arrays_and_bad_files(tmp_path):
    np.savez(tmp_path / "imdb.npz", x_train=np.zeros(2))
    with pytest.raises(RosettaError, match="missing x_test, y_test, y_train"):
        load_imdb(tmp_path / "imdb.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(RosettaError, match="not a readable .npz"):
        load_imdb(tmp_path / "bad.npz")


def test_synthetic_data_has_the_real_shapes_and_is_seeded():
    a, b = synthetic_cifar10(8, 4, seed=1), synthetic_cifar10(8, 4, seed=1)
    assert a.train.x.shape == (8, 3, 32, 32) and a.train.x.dtype == np.float32 and a.train.y.dtype == np.int64
    np.testing.assert_array_equal(a.train.x, b.train.x)
    imdb = synthetic_imdb(8, 4)
    assert imdb.train.x.shape == (8, 150) and imdb.train.x.max() < 30_000
