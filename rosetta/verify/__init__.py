"""Comparison metrics, the calibrated tolerance policy, verdicts, and the verification matrix of cells."""
