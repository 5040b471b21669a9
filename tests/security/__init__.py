"""Attack tests of the trust boundary; the two helpers every one of them uses."""

from __future__ import annotations


def run(*argv) -> tuple[int, str]:
    """`rosetta ARGV` in this process (tests.test_cli.run_here), without progress bars: (exit status, stderr)."""
    from tests.test_cli import run_here

    done = run_here(*argv, *(["--no-progress"] if argv[0] in ("convert", "verify") else []))
    return done.returncode, done.stderr


def one_line_refusal(code: int, err: str, *fragments: str) -> str:
    """A usage-level refusal: exit 2 and one `rosetta: error:` line holding every fragment."""
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rosetta: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
