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
    return error_stats_and_difference(target, reference)[0]


def error_stats_and_difference(target: np.ndarray, reference: np.ndarray) -> tuple[ErrorStats, np.ndarray]:
    """The figures, and |target - reference| in float64 (what a tolerance is checked against): few passes
    and temporaries, since a training row compares every weight of a model (ResNet-50: 23.5 M values)."""
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf targets give NaN figures; counted elsewhere
        return _error_stats(np.asarray(target, dtype=np.float64), np.asarray(reference, dtype=np.float64))


def _error_stats(t: np.ndarray, r: np.ndarray) -> tuple[ErrorStats, np.ndarray]:
    diff = np.subtract(t, r)
    np.abs(diff, out=diff)
    if not diff.size:
        return ErrorStats(0.0, 0.0, 0.0, 0.0, 1.0, [], 0.0, 0.0), diff
    scale = max(float(np.max(r)), -float(np.min(r)))  # max |reference|
    largest = float(np.max(diff))  # NaN or Inf when any difference is
    flat = diff.ravel()
    # where the difference is largest; where any is NaN or Inf, the first of those
    finite = np.isfinite(largest)
    worst_flat = int(np.argmax(flat if finite else np.where(np.isfinite(flat), flat, np.inf)))
    worst = np.unravel_index(worst_flat, diff.shape)
    relative = np.abs(r).ravel()
    np.maximum(relative, max(RELATIVE_FLOOR * scale, np.finfo(np.float64).tiny), out=relative)
    np.divide(flat, relative, out=relative)
    t_flat, r_flat = t.ravel(), r.ravel()
    norm = float(np.linalg.norm(t_flat) * np.linalg.norm(r_flat))
    return ErrorStats(
        max_abs_error=largest,
        max_rel_error=float(np.max(relative)),
        scaled_error=largest / scale if scale > 0 else largest,
        rms_error=float(np.sqrt(np.dot(flat, flat) / flat.size)),
        cosine=float(np.dot(t_flat, r_flat) / norm) if norm > 0 else (1.0 if not np.any(diff) else 0.0),
        worst_index=[int(i) for i in worst],
        worst_target=float(t[worst]),
        worst_reference=float(r[worst]),
    ), diff


def non_finite_counts(array: np.ndarray) -> tuple[int, int]:
    """(NaN count, Inf count) of an array; zero for integer arrays."""
    if not np.issubdtype(array.dtype, np.floating):
        return 0, 0
    return int(np.isnan(array).sum()), int(np.isinf(array).sum())
