"""rosetta: convert deep-learning models between frameworks, prove the copy is the same function, time it."""

__version__ = "0.1.0"
