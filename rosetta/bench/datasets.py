"""The DLF data sets, read from local files in their standard formats, or synthetic with the same shapes.

- CIFAR-10, the "python version" (`data_batch_1..5`, `test_batch`): images float32 (N, 3, 32, 32) scaled
  from 0-255 to 0-1, labels int64.
- IMDB, Keras' `imdb.npz` (word indices, 1 = most frequent word), processed as DLF and keras.datasets.imdb:
  start token 1, out-of-vocabulary 2, words shifted by 3, vocabulary 30,000, each review padded or
  truncated to 150 tokens at the front (Keras' pad_sequences defaults), tokens int64, labels int64.

Both real formats are pickles underneath (CIFAR-10's batches; imdb.npz's object arrays). They are read with
a restricted unpickler that rebuilds numpy arrays and plain containers only, never arbitrary objects, so
a tampered file cannot run code. No download, ever: without files, `synthetic_*` gives seeded data of the
same shapes and dtypes.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rosetta.errors import RosettaError

CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST = "test_batch"
IMDB_FILE = "imdb.npz"
IMDB_VOCABULARY = 30_000
IMDB_LENGTH = 150
IMDB_START, IMDB_OOV, IMDB_INDEX_FROM = 1, 2, 3


@dataclass
class Split:
    x: np.ndarray
    y: np.ndarray


@dataclass
class Dataset:
    name: str
    train: Split
    test: Split
    source: str  # the folder it was read from, or "synthetic (seed S)"


class _ArraysOnly(pickle.Unpickler):
    """Rebuilds numpy arrays, dtypes and builtin containers; refuses every other global."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("builtins", "list"), ("builtins", "dict"), ("builtins", "tuple"),
        ("copyreg", "_reconstructor"), ("builtins", "object"),
        ("_codecs", "encode"),  # how protocol-2 pickles written by Python 3 rebuild bytes: str -> bytes only
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only numpy arrays are allowed")
        return super().find_class(module, name)


def _unpickle(handle, what: str):
    try:
        return _ArraysOnly(handle, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as error:
        raise RosettaError(f"{what} is not a valid data file ({error})") from None


def _opened(path: Path):
    """`path` open for reading, or one line saying why it cannot be (permissions, a folder in its place)."""
    try:
        return open(path, "rb")
    except OSError as error:
        raise RosettaError(f"data=: cannot read {path}: {error.strerror or error}") from None


def load_cifar10(folder: Path) -> Dataset:
    folder = Path(folder)
    missing = [name for name in CIFAR_TRAIN + (CIFAR_TEST,) if not (folder / name).is_file()]
    if missing:
        raise RosettaError(f"{folder} is not a CIFAR-10 python folder: missing {', '.join(missing)} "
                           "(the 'python version' batches, e.g. cifar-10-batches-py/)")

    def read(name: str) -> Split:
        with _opened(folder / name) as handle:
            batch = _unpickle(handle, folder / name)
        data, labels = batch.get(b"data"), batch.get(b"labels")
        if data is None or labels is None or np.asarray(data).shape[1:] != (3072,):
            raise RosettaError(f"{folder / name} has no (N, 3072) b'data' and b'labels'")
        images = np.asarray(data, dtype=np.uint8).reshape(-1, 3, 32, 32).astype(np.float32) / 255.0
        return Split(images, np.asarray(labels, dtype=np.int64))

    parts = [read(name) for name in CIFAR_TRAIN]
    train = Split(np.concatenate([p.x for p in parts]), np.concatenate([p.y for p in parts]))
    return Dataset("cifar10", train, read(CIFAR_TEST), str(folder))


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """np.load without allow_pickle: object arrays go through the restricted unpickler."""
    arrays = {}
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise RosettaError(f"{path} is not a readable .npz file ({error})") from None
    with archive:
        for member in archive.namelist():
            with archive.open(member) as raw:
                handle = io.BytesIO(raw.read())
            version = np.lib.format.read_magic(handle)
            shape, fortran, dtype = np.lib.format._read_array_header(handle, version)  # noqa: SLF001
            if dtype.hasobject:
                arrays[member.removesuffix(".npy")] = np.asarray(_unpickle(handle, path), dtype=object).reshape(shape)
            else:
                handle.seek(0)
                arrays[member.removesuffix(".npy")] = np.lib.format.read_array(handle, allow_pickle=False)
    return arrays


def imdb_sequences(reviews, vocabulary: int = IMDB_VOCABULARY, length: int = IMDB_LENGTH) -> np.ndarray:
    """keras.datasets.imdb + pad_sequences, as DLF: [1] + (w + 3), words >= vocabulary -> 2, left pad/truncate."""
    out = np.zeros((len(reviews), length), dtype=np.int64)
    for row, review in enumerate(reviews):
        tokens = [IMDB_START] + [int(w) + IMDB_INDEX_FROM for w in review]
        tokens = [t if t < vocabulary else IMDB_OOV for t in tokens][-length:]
        out[row, length - len(tokens):] = tokens
    return out


def load_imdb(path: Path) -> Dataset:
    path = Path(path)
    path = path / IMDB_FILE if path.is_dir() else path
    if not path.is_file():
        raise RosettaError(f"IMDB file {path} not found (Keras' imdb.npz)")
    arrays = _read_npz(path)
    missing = {"x_train", "y_train", "x_test", "y_test"} - set(arrays)
    if missing:
        raise RosettaError(f"{path} is not Keras' imdb.npz: missing {', '.join(sorted(missing))}")
    split = lambda x, y: Split(imdb_sequences(arrays[x]), np.asarray(arrays[y], dtype=np.int64))  # noqa: E731
    return Dataset("imdb", split("x_train", "y_train"), split("x_test", "y_test"), str(path))


def synthetic_cifar10(train: int = 50_000, test: int = 10_000, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    make = lambda n: Split(rng.random((n, 3, 32, 32), dtype=np.float32), rng.integers(0, 10, n, dtype=np.int64))  # noqa: E731
    return Dataset("cifar10", make(train), make(test), f"synthetic (seed {seed})")


def synthetic_imdb(train: int = 25_000, test: int = 25_000, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    make = lambda n: Split(rng.integers(0, IMDB_VOCABULARY, (n, IMDB_LENGTH), dtype=np.int64),  # noqa: E731
                           rng.integers(0, 2, n, dtype=np.int64))
    return Dataset("imdb", make(train), make(test), f"synthetic (seed {seed})")
