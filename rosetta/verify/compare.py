"""Compare a target's outputs with the float32 and float64 reference outputs and give the verdict."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from rosetta.verify.metrics import error_stats, error_stats_and_difference, non_finite_counts
from rosetta.verify.results import FAIL, INCONCLUSIVE, PASS, OutputComparison
from rosetta.verify.tolerance import DEFAULT_MULTIPLE, FLOAT32_EPS, FLOOR_CEILING, TolerancePolicy, noise_floor


def compare_output(name: str, target: np.ndarray | None, reference32: np.ndarray, reference64: np.ndarray,
                   policy: TolerancePolicy) -> OutputComparison:
    if np.ndim(reference64) == 0:  # compared as one element: the floor and the statistics index arrays
        one32, one64 = np.reshape(reference32, (1,)), np.reshape(reference64, (1,))
        if target is not None and np.ndim(target) != 0:
            return _failed(name, list(np.shape(target)), noise_floor(one32, one64),
                           f"{name}: shape {tuple(np.shape(target))}, the reference gives ()")
        return _zero_dimensional(compare_output(name, None if target is None else np.reshape(target, (1,)), one32,
                                                one64, policy))
    floor = noise_floor(reference32, reference64)
    policy = policy.for_output(name)
    if target is None:
        return _failed(name, list(reference64.shape), floor, f"{name}: the target has no output of this name")
    target = np.asarray(target)
    if target.shape != reference64.shape:
        return _failed(name, list(target.shape), floor,
                       f"{name}: shape {tuple(target.shape)}, the reference gives {tuple(reference64.shape)}")
    if target.size == 0:  # no element agreed or differed: a verdict here would say nothing
        return _failed(name, list(target.shape), floor,
                       f"{name}: shape {tuple(target.shape)} has no elements, so nothing was compared; choose "
                       "input shapes (inputs=) or a batch= that give a non-empty output")
    nans, infs = non_finite_counts(target)
    reference_nans, reference_infs = non_finite_counts(reference32)
    if reference_nans or reference_infs:
        return _failed(name, list(target.shape), floor,
                       f"{name}: the reference itself gives {reference_nans} NaN and {reference_infs} Inf values "
                       f"(the target {nans} NaN and {infs} Inf); check the model and its input ranges")
    stats, diff = error_stats_and_difference(target, reference64)
    limit = policy.elementwise_limit(np.asarray(reference64, dtype=np.float64), floor)
    within = float(np.count_nonzero(diff <= limit)) / diff.size
    ratio = stats.max_abs_error / floor
    where = "[" + ", ".join(map(str, stats.worst_index)) + "]"
    spread, noise = policy.spread_of(name), ""
    if nans or infs:
        passed, reason = False, f"{name}: {nans} NaN and {infs} Inf values"
    elif spread and (within < 1.0 or spread > float(np.max(limit))):
        passed, reason, noise = _judged_with_spread(name, stats.max_abs_error, float(np.max(limit)), spread,
                                                    within == 1.0)
    elif within < 1.0:
        passed = False
        if policy.calibrated:
            reason = (f"{name}: max abs error {stats.max_abs_error:.3g} is {ratio:.3g}x the noise floor "
                      f"{floor:.3g} (limit {policy.multiple:g}x) at {where}: {stats.worst_target:.6g} vs {stats.worst_reference:.6g}")
        else:
            reason = (f"{name}: {100 * (1 - within):.3g}% of elements exceed atol={policy.atol or 0:g} "
                      f"rtol={policy.rtol or 0:g}; worst at {where}: {stats.worst_target:.6g} vs {stats.worst_reference:.6g}")
    else:
        passed, reason = True, ""
    vs32 = error_stats(target, reference32)
    scale = max(float(np.max(reference64)), -float(np.min(reference64)))
    return OutputComparison(
        name=name, shape=list(target.shape), passed=passed, reason=reason,
        max_abs_error=stats.max_abs_error, max_rel_error=stats.max_rel_error, scaled_error=stats.scaled_error,
        rms_error=stats.rms_error, cosine=stats.cosine, within_tolerance=within, nan_count=nans, inf_count=infs,
        noise_floor=floor, error_ratio=ratio, worst_index=stats.worst_index, worst_target=stats.worst_target,
        worst_reference=stats.worst_reference,
        vs_float32={k: v for k, v in asdict(vs32).items() if not k.startswith("worst")},
        noise_floor_ulps=floor / (FLOAT32_EPS * scale) if scale > 0 else 0.0,
        reference_doubt=noise or _floor_in_doubt(name, floor, scale, policy),
    )


def _floor_in_doubt(name: str, floor: float, scale: float, policy: TolerancePolicy) -> str:
    """Why this output's noise floor is more than float32 arithmetic explains (FLOOR_CEILING), or ""."""
    if not (policy.calibrated and policy.float64_reference) or policy.float64_checked or scale <= 0 or \
            floor <= FLOOR_CEILING * scale:
        return ""
    return (f"{name}: the reference's float32 and float64 runs differ by {floor / scale:.2g} of the output's scale "
            f"(float32 arithmetic explains under {FLOOR_CEILING:g}), so one of them computes another function: the "
            "reference is in doubt; a target within a floor that large proves little: compare with atol=/rtol=, "
            "or check the reference")


# How many times the reference's own run-to-run difference a target's error must exceed to be called a FAIL where
# the reference is not deterministic: a deterministic, correct target differs from one run of a noisy reference by
# about that run's own noise, which is at most about the largest difference between two runs; the calibrated
# multiple keeps a margin of the same size as the deterministic rule's.
SPREAD_MULTIPLE = DEFAULT_MULTIPLE


def _judged_with_spread(name: str, error: float, limit: float, spread: float, within: bool) -> tuple[bool, str, str]:
    """(passed, reason, doubt) of an output whose reference gives other numbers on each run (`spread`: the largest
    difference between two of its runs on the same inputs), where the tolerance `limit` cannot settle it: an
    error beyond what that noise explains is a FAIL; one within it, or a match within a limit that the
    reference's own runs do not keep, proves nothing either way (passed, with the doubt: INCONCLUSIVE)."""
    said = f"the reference is not deterministic: two of its runs on the same inputs differ by up to {spread:.3g}"
    if not within and error > limit + SPREAD_MULTIPLE * spread:
        return False, (f"{name}: max abs error {error:.3g} is beyond the tolerance {limit:.3g} and {error / spread:.3g}x "
                       f"the reference's own run-to-run difference {spread:.3g} (it is not deterministic), more than "
                       "its noise explains"), ""
    if not within:
        return True, "", (f"{name}: max abs error {error:.3g} is beyond the tolerance {limit:.3g}, but {said}, which "
                          "explains an error of that size: no verdict can be drawn; make the reference deterministic "
                          "(eval mode, no sampling, seeded) to compare")
    return True, "", (f"{name}: within the tolerance {limit:.3g}, but {said}, more than the tolerance, so agreeing "
                      "with one of its runs proves little; make the reference deterministic to compare")


def _zero_dimensional(output: OutputComparison) -> OutputComparison:
    """A 0-d output's comparison, made on it as one element: its own shape, and no index."""
    output.shape, output.worst_index = [], []
    output.reason = output.reason.replace(" at [0]:", ":")
    return output


CONSTANT_SPREAD = 1e-6  # spread across the batch, relative to the output's largest value, below which it is constant


def uninformative(reference: np.ndarray, second: np.ndarray | None = None) -> str:
    """Why a target that matches this reference output has proved nothing, or "": an output that is all
    zeros, or that does not depend on the input (e.g. random weights whose activations saturate, a softmax
    that is uniform, a constant), would be matched by a conversion that ignores its input.

    Not depending on the input is seen across the batch: the same for every input of it. Where the batch
    cannot show it (a 0-d output, one without a batch axis, a batch of 1), the caller runs the reference on a
    second, different batch of inputs, `second` (its float32 outputs): the same output on both is constant."""
    reference = np.asarray(reference, dtype=np.float64)
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    if reference.size and scale == 0.0:
        return "all zeros"
    if second is not None:
        second = np.asarray(second, dtype=np.float64)
        if second.shape != reference.shape or not reference.size:
            return ""
        change = float(np.max(np.abs(second - reference)))
        if change <= CONSTANT_SPREAD * scale:
            return (f"the same for a second, different batch of inputs (change {change:.2g}, largest value "
                    f"{scale:.2g})")
        return ""
    if reference.ndim and reference.shape[0] >= 2:
        spread = float(np.max(np.ptp(reference, axis=0)))
        if spread <= CONSTANT_SPREAD * scale:
            return f"the same for all {reference.shape[0]} inputs of the batch (spread {spread:.2g}, largest value {scale:.2g})"
    return ""


def _failed(name: str, shape: list[int], floor: float, reason: str) -> OutputComparison:
    nan = float("nan")
    return OutputComparison(name=name, shape=shape, passed=False, reason=reason, max_abs_error=nan,
                            max_rel_error=nan, scaled_error=nan, rms_error=nan, cosine=nan, within_tolerance=0.0,
                            nan_count=0, inf_count=0, noise_floor=floor, error_ratio=nan)


def compare_outputs(target: dict[str, np.ndarray], reference32: dict[str, np.ndarray],
                    reference64: dict[str, np.ndarray], policy: TolerancePolicy,
                    second: dict[str, np.ndarray] | None = None) -> tuple[list[OutputComparison], str, str]:
    """Per-output comparisons plus the overall (verdict, reason): PASS only when every output passes, and at
    least one of them could have failed (else INCONCLUSIVE; an output that could not is named in the reason).
    `second`: the reference's outputs on a second batch of inputs, for those whose batch cannot show whether
    they depend on the input (see uninformative)."""
    outputs = [compare_output(name, target.get(name), reference32[name], reference64[name], policy)
               for name in reference64]
    extra = sorted(set(target) - set(reference64))
    reasons = [o.reason for o in outputs if not o.passed]
    if extra:
        reasons.append(f"unexpected outputs {extra}")
    if reasons:
        return outputs, FAIL, "; ".join(reasons)
    doubts = [o.reference_doubt for o in outputs if o.reference_doubt]
    if doubts:
        return outputs, INCONCLUSIVE, "; ".join(doubts)
    for output in outputs:
        output.uninformative = uninformative(reference64[output.name], (second or {}).get(output.name))
    vacuous = [f"{o.name} is {o.uninformative}" for o in outputs if o.uninformative]
    if not vacuous:
        return outputs, PASS, ""
    if len(vacuous) == len(outputs):
        return outputs, INCONCLUSIVE, ("; ".join(vacuous) + ": a conversion that ignored its input would match "
                                       "too; give weights or inputs that make the output vary")
    return outputs, PASS, "note: " + "; ".join(vacuous)
