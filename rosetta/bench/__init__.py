"""Timing harness (warm-up, synchronised clock reads, repeats) shared by every benchmark."""
