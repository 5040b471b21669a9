"""The one exception type for errors a user can cause; the CLI prints its message on one line and exits 2."""


class RosettaError(Exception):
    """A problem with the user's input or environment, with a one-line message saying what to do."""


def one_line(error: BaseException) -> str:
    """'Type: first line of the message', for a FAIL row's reason (the traceback goes to its detail); rosetta's
    own errors are already written for the user and keep just their first line."""
    text = str(error).strip().splitlines()
    if isinstance(error, RosettaError) and text:
        return text[0]
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
