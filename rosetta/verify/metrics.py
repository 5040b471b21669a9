"""Error statistics of one output against one reference, in the spirit of Polygraphy's comparator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Relative errors divide by max(|reference|, RELATIVE_FLOOR * max|reference|): near-zero reference
# elements (post-ReLU zeros, logits that cross zero) would otherwise turn tiny absolute errors into huge
# relative ones.
RELATIVE_FLOOR = 1e-3


@dataclass
class ErrorStats:
    max_abs_error: float
    max_rel_error: float
    scaled_error: float  # max_abs_error / max|reference|
    rms_error: float
    cosine: float
    worst_index: list[int]  # where |target - reference| is largest: where it diverges
    worst_target: float
    worst_reference: float


def error_stats(target: np.ndarray, reference: np.ndarray) -> ErrorStats:
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf targets give NaN figures; counted elsewhere
        return _error_stats(target, reference)


def _error_stats(target: np.ndarray, reference: np.ndarray) -> ErrorStats:
    t = target.astype(np.float64)
    r = reference.astype(np.float64)
    diff = np.abs(t - r)
    scale = float(np.max(np.abs(r))) if r.size else 0.0
    finite = np.isfinite(diff)
    safe_diff = np.where(finite, diff, np.inf)
    worst = np.unravel_index(int(np.argmax(safe_diff)), diff.shape) if diff.size else ()
    denominator = np.maximum(np.abs(r), max(RELATIVE_FLOOR * scale, np.finfo(np.float64).tiny))
    norm = float(np.linalg.norm(t.ravel()) * np.linalg.norm(r.ravel()))
    return ErrorStats(
        max_abs_error=float(np.max(diff)) if diff.size else 0.0,
        max_rel_error=float(np.max(diff / denominator)) if diff.size else 0.0,
        scaled_error=float(np.max(diff)) / scale if scale > 0 else float(np.max(diff, initial=0.0)),
        rms_error=float(np.sqrt(np.mean(diff ** 2))) if diff.size else 0.0,
        cosine=float(np.dot(t.ravel(), r.ravel()) / norm) if norm > 0 else (1.0 if not np.any(diff) else 0.0),
        worst_index=[int(i) for i in worst],
        worst_target=float(t[worst]) if diff.size else 0.0,
        worst_reference=float(r[worst]) if diff.size else 0.0,
    )


def non_finite_counts(array: np.ndarray) -> tuple[int, int]:
    """(NaN count, Inf count) of an array; zero for integer arrays."""
    if not np.issubdtype(array.dtype, np.floating):
        return 0, 0
    return int(np.isnan(array).sum()), int(np.isinf(array).sum())
