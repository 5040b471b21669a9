"""Attack tests of the trust boundary; the two helpers every one of them uses."""

from __future__ import annotations


def run(capsys, *argv) -> tuple[int, str]:
    """`rosetta ARGV` in this process: (exit status, stderr)."""
    from rosetta.cli import main

    code = main([str(a) for a in argv] + (["--no-progress"] if argv[0] in ("convert", "verify") else []))
    return code, capsys.readouterr().err


def one_line_refusal(code: int, err: str, *fragments: str) -> str:
    """A usage-level refusal: exit 2 and one `rosetta: error:` line holding every fragment."""
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rosetta: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
