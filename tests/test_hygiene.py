"""The suppression checks (SG001-SG004): unused, unknown, malformed, without a reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from syncguard.cli import main
from syncguard.config import Settings
from syncguard.fixes import fix_paths
from syncguard.hygiene import INDEX_FILE
from syncguard.suppression import parse_line
from syncguard.testing import lint_snippet, lint_tree

STEP = """
import torch

@torch.compile
def step(x, n):
    {line}
"""


def codes(line: str, **settings: object) -> list[str]:
    result = lint_snippet(STEP.format(line=line), settings=Settings(**settings))  # type: ignore[arg-type]
    return [finding.code for finding in result.findings]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("return x.item()  # noqa: SG101", []),
        ("return n + 1  # noqa: SG101", ["SG001"]),
        ("return n + 1  # syncguard: ignore", ["SG001"]),
        ("return n + 1  # noqa", []),  # a bare noqa may be another linter's
        ("return n + 1  # noqa: E501", []),  # other tools' codes are theirs
        ("return x.item()  # noqa: SG101, SG102", ["SG001"]),
        ("return x.item()  # noqa: SG1O1", ["SG002", "SG101"]),  # letter O: silences nothing
        ("return x.item()  # syncguard: ignore[SG999]", ["SG002", "SG101"]),
        ("return x.item()  # syncguard: ignore[E501]", ["SG002", "SG101"]),
        ("return x.item()  # noqa SG101", ["SG003", "SG101"]),  # no colon: silences nothing
        ("return n + 1  # noqa E501", []),  # another linter's malformed comment: its business
        ("return x.item()  # noqa E501", ["SG101"]),  # ... and it silences nothing of ours
        ("return x.item()  # syncguard: ignore[]", ["SG003", "SG101"]),
        ("return x.item()  # noqa: SG101, SG001", []),
    ],
)
def test_checks(line: str, expected: list[str]) -> None:
    assert sorted(codes(line)) == expected


def test_unknown_code_suggests_the_closest_one() -> None:
    result = lint_snippet(STEP.format(line="return x.item()  # noqa: SG1O1"))
    (unknown,) = [finding for finding in result.findings if finding.code == "SG002"]
    assert "`SG1O1` is not a syncguard code" in unknown.message
    assert unknown.suggestion == "did you mean SG101?"
    assert unknown.severity == "warning" and (unknown.span.line, unknown.span.column) == (5, 22)


def test_require_reason() -> None:
    assert codes("return x.item()  # noqa: SG101", require_reason=True) == ["SG004"]
    assert codes("return x.item()  # noqa: SG101 -- once per step", require_reason=True) == []
    reasoned = "return x.item()  # syncguard: ignore[SG101] -- once, after the sampler"
    assert codes(reasoned, require_reason=True) == []
    assert codes("return x.item()  # noqa", require_reason=True) == ["SG004"]
    assert codes("return n + 1  # noqa: E501", require_reason=True) == []


def test_used_through_a_helper_and_whatever_is_selected() -> None:
    """A suppression at a helper's sync silences its hot call sites: it is used; and it is
    used by findings of codes the run does not select."""
    source = """
        import torch

        def helper(cu):
            return cu.tolist()  # syncguard: ignore[SG102] -- tiny, once per step

        @torch.compile
        def step(cu):
            return helper(cu)
        """
    assert lint_snippet(source).findings == []
    assert lint_snippet(source, select=("SG001",)).findings == []
    assert codes("return x.item()  # noqa: SG101", select=("SG001",)) == []


def test_fix_removes_unused_and_unknown_codes_keeping_the_rest(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = (
        "import torch\n\n@torch.compile\ndef step(x, n):\n"
        "    a = x.item()  # noqa: SG101, SG102, E501\n"
        "    b = n + 1  # type: int  # noqa: SG103\n"
        "    c = n * 2  # noqa: SG103 keep this note\n"
        "    d = x.item()  # noqa: SG1O1\n"
        "    e = x.item()  # noqa SG101\n"
        "    return a + b + c + d + e  # syncguard: ignore[SG1] -- was a sync\n"
    )
    (tmp_path / "m.py").write_text(source)
    run = fix_paths(["m.py"])
    assert run.fixed["m.py"].splitlines()[4:] == [
        "    a = x.item()  # noqa: SG101, E501",
        "    b = n + 1  # type: int",
        "    c = n * 2  # keep this note",
        "    d = x.item()",
        "    e = x.item()  # noqa: SG101",
        "    return a + b + c + d + e",
    ]
    assert [f.code for f in run.result.findings] == ["SG101"]  # line 8, its noqa was a typo
    (tmp_path / "m.py").write_text(run.fixed["m.py"])
    assert fix_paths(["m.py"]).fixed == {}  # a second --fix changes nothing


def test_cache_keeps_the_directives_between_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(STEP.format(line="return n + 1  # noqa: SG101"))
    (tmp_path / "clean.py").write_text("def f(x):\n    return x\n")

    def run() -> list[tuple[str, str]]:
        capsys.readouterr()
        main(["check", ".", "--output-format", "json"])
        return [(f["path"], f["code"]) for f in json.loads(capsys.readouterr().out)]

    assert run() == [("m.py", "SG001")]
    assert (tmp_path / ".syncguard_cache" / INDEX_FILE).is_file()
    assert run() == [("m.py", "SG001")]  # from the index this time
    (tmp_path / "m.py").write_text(STEP.format(line="return n + 1"))
    assert run() == []
    (tmp_path / "clean.py").write_text("def f(x):\n    return x  # syncguard: ignore\n")
    assert run() == [("clean.py", "SG001")]


def test_a_run_over_some_files_keeps_the_other_files_directives(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    from syncguard.cache import _read_pack

    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(STEP.format(line="return n + 1  # noqa: SG101"))
    index = tmp_path / ".syncguard_cache" / INDEX_FILE
    main(["check", ".", "--output-format", "json"])
    assert len(_read_pack(index)) == 3
    main(["check", "a.py", "--output-format", "json"])  # the hook's files, one file alone
    assert len(_read_pack(index)) == 3  # b.py and c.py are not tokenized again next time
    (tmp_path / "b.py").write_text(STEP.format(line="return n + 1"))
    capsys.readouterr()
    main(["check", ".", "--output-format", "json"])  # b.py's old entry is dead weight now
    assert [(f["path"], f["code"]) for f in json.loads(capsys.readouterr().out)] == [
        ("a.py", "SG001"),
        ("c.py", "SG001"),
    ]
    assert len(_read_pack(index)) == 4
    monkeypatch.setattr("syncguard.hygiene.MAX_INDEX_ENTRIES", 4)
    (tmp_path / "c.py").unlink()
    main(["check", ".", "--output-format", "json"])  # over the cap: only this run's entries
    assert len(_read_pack(index)) == 2


def test_require_reason_setting_and_option(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(STEP.format(line="return x.item()  # noqa: SG101"))
    assert main(["check", ".", "--no-cache"]) == 0
    assert main(["check", ".", "--no-cache", "--require-reason"]) == 1
    assert "SG004" in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text("[tool.syncguard]\nrequire-reason = true\n")
    assert main(["check", ".", "--no-cache"]) == 1
    (tmp_path / "pyproject.toml").write_text('[tool.syncguard]\nrequire-reason = "yes"\n')
    assert main(["check", ".", "--no-cache"]) == 2
    assert "`require-reason` must be true or false" in capsys.readouterr().err


def test_runtime_reads_the_same_comments() -> None:
    """The runtime audit (runtime/_policy.py) asks parse_line: typos and malformed
    comments do not excuse a sync there either."""
    assert parse_line("x.item()  # noqa: SG1O1").covers("SG101") is False  # type: ignore[union-attr]
    assert parse_line("x.item()  # noqa SG101") is None
    assert parse_line("x.item()  # noqa: SG101").covers("SG101")  # type: ignore[union-attr]


def test_ruff_keeps_syncguard_noqa_with_external_setting(tmp_path: Path) -> None:
    """ruff's noqa checks (RUF100 did it in older ruff releases, RUF102 in
    current ones) delete `# noqa: SG101` with `--fix` unless `[tool.ruff.lint] external =
    ["SG"]` says the code is another tool's."""
    source = (
        "def step(x):\n    return x.item()  # noqa: SG101\n\n\n"
        "def g(x):\n    return x.item()  # the count  # noqa: SG101 -- legacy, see #12\n"
    )

    def after_ruff(config: str) -> str:
        (tmp_path / "pyproject.toml").write_text(config)
        (tmp_path / "m.py").write_text(source)
        subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--select", "RUF100,RUF102", "--fix",
             "--no-cache", "m.py"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        return (tmp_path / "m.py").read_text()

    assert after_ruff("[tool.ruff.lint]\n") == (
        "def step(x):\n    return x.item()\n\n\ndef g(x):\n    return x.item()  # the count\n"
    )
    assert after_ruff('[tool.ruff.lint]\nexternal = ["SG"]\n') == source


def test_lint_tree_reports_unused_only_in_linted_files() -> None:
    result = lint_tree({"a.py": "x = 1  # noqa: SG101\n", "b.py": "y = 2\n"})
    assert [(f.path, f.code) for f in result.findings] == [("a.py", "SG001")]
