"""noqa / syncguard: ignore comments, file-level ignores."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from syncguard.suppression import parse_line
from syncguard.testing import lint_snippet

TEMPLATE = """
import torch

@torch.compile
def step(x):
    {line}
"""


def reported(line: str) -> bool:
    """True when the sync on ``line`` is reported (suppression checks aside)."""
    findings = lint_snippet(TEMPLATE.format(line=line)).findings
    return any(not finding.code.startswith("SG0") for finding in findings)


@pytest.mark.parametrize(
    "line",
    [
        "return x.item()  # noqa: SG101",
        "return x.item()  # noqa: SG1",
        "return x.item()  # noqa",
        "return x.item()  # NOQA:SG101,SG102",
        "return x.item()  # syncguard: ignore[SG101]",
        "return x.item()  # syncguard: ignore[SG101] -- read once per step, after the sampler",
        "return x.item()  # syncguard: ignore",
    ],
)
def test_suppressed(line: str) -> None:
    assert not reported(line)


@pytest.mark.parametrize(
    "line",
    [
        "return x.item()",
        "return x.item()  # noqa: SG102",
        "return x.item()  # noqa: E501",
        "return x.item()  # syncguard: ignore[SG2]",
        "return x.item(), '# noqa'",  # inside a string: not a comment
        "return x.item()  # noqa: SG1O1",  # letter O: not SG1 followed by junk
        "return x.item()  # noqa SG101",  # no colon: malformed, silences nothing
        "return x.item()  # noqa:",
        "return x.item()  # syncguard: ignore[SG999]",
        "return x.item()  # syncguard: ignore[]",
    ],
)
def test_not_suppressed(line: str) -> None:
    assert reported(line)


def test_multiline_statement_first_or_last_line() -> None:
    first = """
        import torch

        @torch.compile
        def step(x):
            return max(  # noqa: SG101
                1,
                x.item(),
            )
        """
    last = first.replace("max(  # noqa: SG101", "max(").replace(
        "            )", "            )  # noqa"
    )
    middle_only = first.replace("max(  # noqa: SG101", "max(")
    assert lint_snippet(first).findings == []
    assert lint_snippet(last).findings == []
    assert len(lint_snippet(middle_only).findings) == 1


def test_ignore_file() -> None:
    source = "# syncguard: ignore-file\n" + TEMPLATE.format(line="return x.item()")
    assert lint_snippet(source).findings == []


def test_suppression_at_the_sync_line_covers_hidden_reports() -> None:
    source = """
        import torch

        def helper(cu):
            return cu.tolist()  # syncguard: ignore[SG102] -- tiny, once per step

        @torch.compile
        def step(cu):
            return helper(cu)
        """
    assert lint_snippet(source).findings == []


def test_parse_line() -> None:
    assert parse_line("x = 1") is None
    assert parse_line("x  # noqa").covers("SG999")  # type: ignore[union-attr]
    suppression = parse_line("x  # syncguard: ignore[SG101, SG2] -- because")
    assert suppression is not None
    assert suppression.covers("SG101") and suppression.covers("SG201")
    assert not suppression.covers("SG102")


def test_ruff_keeps_syncguard_codes_only_when_they_are_external(tmp_path: Path) -> None:
    """The README's ruff note: RUF100's fix drops SG codes from a ``noqa`` comment whose
    ruff code is unused, unless ``[tool.ruff.lint] external = ["SG"]``."""
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    source = "import os  # noqa: F401, SG102\nprint(os.sep)\n"
    kept = {}
    for external in (False, True):
        path = tmp_path / f"external_{external}.py"
        path.write_text(source)
        options = ["--config", 'lint.external = ["SG"]'] if external else []
        command = [ruff, "check", "--isolated", *options, "--select", "RUF100,F401", "--fix"]
        subprocess.run([*command, "-q", str(path)], check=False, timeout=60)
        kept[external] = path.read_text().splitlines()[0]
    assert kept == {False: "import os", True: "import os  # noqa: SG102"}


_TRICKY = '''\
x = 1  # noqa: SG101
s = """
# noqa: SG102 inside a string, not a comment
"""
y = (2,  # syncguard: ignore[SG105] -- in a bracket
     3)
z = "# noqa"  # a plain comment
t = """still open # noqa
'''


@pytest.mark.parametrize(
    "source",
    [
        _TRICKY,
        _TRICKY.replace("\n", "\r\n"),
        "a = 1  # NOQA\n" + "b = 2  # plain\n" * 50,
        "def f(:\n    pass  # noqa\n",
        "no directive here  # plain\n",
        "",
    ],
)
def test_directive_comments_match_a_whole_file_tokenization(source: str) -> None:
    """Tokenizing only as far as the last line that mentions a directive finds exactly
    the directive-looking comments a whole-file tokenization finds."""
    from syncguard.suppression import comments, directive_comments, may_suppress

    expected = [found for found in comments(source) if may_suppress(found[2])]
    assert directive_comments(source) == expected


def test_directive_comments_agree_on_this_repository() -> None:
    from syncguard.suppression import comments, directive_comments, may_suppress

    root = Path(__file__).resolve().parents[1]
    checked = 0
    for path in sorted(
        [*root.glob("syncguard/*.py"), *root.glob("tests/*.py"), *root.glob("rules/*.py")]
    ):
        source = path.read_text(encoding="utf-8")
        expected = [found for found in comments(source) if may_suppress(found[2])]
        assert directive_comments(source) == expected, path.name
        checked += bool(expected)
    assert checked > 5  # files with directives were among them
