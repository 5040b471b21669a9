"""Where jobs run (placeholder while the execution layer is built)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

DEFAULT_TIMEOUT_S = 3600.0


def load_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}
