"""rosetta: convert deep-learning models between frameworks, prove the copy is the same function, time it."""

import os

__version__ = "0.1.0"

# ONNX Runtime's own telemetry (on in its Linux wheels of late: 1.31 here) writes a session file, $TMPDIR/.ses,
# and a device id at import, and would send events: rosetta runs offline and leaves no file behind, so it is off
# unless the user set the variable (workers inherit it)
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
