"""Assertions for test suites: `assert_same_function(reference, candidate)` in a pytest, next to the model
that was just written.

    import rosetta.testing

    def test_the_keras_port_is_the_same_function():
        rosetta.testing.assert_same_function(build_torch_model(), build_keras_port(),
                                             inputs=["image:Nx3x32x32:float32"])
"""

from __future__ import annotations

from rosetta.api import verify

__all__ = ["assert_same_function"]


def assert_same_function(reference, candidate, **verify_options) -> None:
    """AssertionError unless `candidate` computes the same function as `reference` (rosetta.verify, which takes
    `verify_options`; `locate` defaults to True here). The message is the verdict, the worst output's error
    against its tolerance and, where located, the layer where the candidate first diverges:
    'FAIL: output logits: max |err| 3.1e-02 > tolerance 4.0e-06 (10.5 x noise floor); diverges first at conv2
    (introduced)'."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    verify_options.setdefault("locate", True)
    report = verify(reference, candidate, **verify_options)
    if not report.passed:
        raise AssertionError(report.message())
