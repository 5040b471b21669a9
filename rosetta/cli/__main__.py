"""`python -m rosetta.cli`: the `rosetta` command."""

import sys

from rosetta.cli import main

sys.exit(main())
