"""The one exception type for errors a user can cause; the CLI prints its message on one line and exits 2."""


class RosettaError(Exception):
    """A problem with the user's input or environment, with a one-line message saying what to do."""
