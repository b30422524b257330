"""Start-up stays small: each command imports the heavy packages it uses and no others
(torch, libcst, rich, pygls, click), measured in a fresh interpreter (``import
syncguard.runtime`` has its own such test, in tests/runtime/test_audit_plugin.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("click", "rich", "pygments", "markdown_it", "libcst", "pygls", "lsprotocol", "torch")
HEAVY += ("multiprocessing",)  # stdlib, but ~0.1 s: only a run big enough for a pool needs it
CLEAN = "def f(x):\n    return x + 1\n"
FIXABLE = "import torch\n\n@torch.compile\ndef step(x):\n    staged = x.cpu()\n    return staged\n"


def heavy_imports(code: str, cwd: Path) -> set[str]:
    """The heavy packages imported once ``code`` has run."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    modules = json.loads(result.stdout.splitlines()[-1])
    return {name for name in HEAVY if name in modules}


def cli(*args: str) -> str:
    return f"from syncguard.cli import main\nmain({list(args)!r})"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (cli("check", "clean.py", "--output-format", "concise"), {"click"}),
        (cli("check", ".", "--output-format", "full", "--statistics"), {"click"}),
        (cli("rule", "SG101"), {"click"}),
        (cli("verify", "--help"), {"click"}),
        (cli("check", "fixable.py", "--diff", "--unsafe-fixes"), {"click", "libcst"}),
        (cli("check", "fixable.py", "--output-format", "json"), {"click", "libcst"}),
    ],
    ids=["check-clean", "check-full", "rule", "verify-help",
         "diff", "json-with-a-fix"],
)  # fmt: skip
def test_each_command_imports_only_what_it_uses(tmp_path: Path, code: str, expected: set) -> None:
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "fixable.py").write_text(FIXABLE)
    assert heavy_imports(code, tmp_path) == expected


def test_a_run_whose_facts_are_all_cached_imports_no_analysis_pass(tmp_path: Path) -> None:
    """The per-file passes (``syncguard.analysis`` and what it imports) load only when a
    file is analysed: not on a second run over unchanged files."""
    (tmp_path / "clean.py").write_text(CLEAN)
    probe = f"{cli('check', 'clean.py', '--cache-dir', 'cache')}\n"
    probe += "import json, sys\nprint(json.dumps(sorted(sys.modules)))\n"

    def modules() -> set[str]:
        result = subprocess.run(
            [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        return set(json.loads(result.stdout.splitlines()[-1]))

    assert "syncguard.analysis" in modules()  # the first run analyses the file
    assert "syncguard.analysis" not in modules()


def test_a_json_run_over_unchanged_files_reads_its_fix_edits_back(tmp_path: Path) -> None:
    """The fixes' text edits are kept in the cache: a second json (or sarif) run over the
    same files prints the same report without loading LibCST; an edited file's edits
    are worked out again."""
    (tmp_path / "fixable.py").write_text(FIXABLE)
    probe = f"{cli('check', 'fixable.py', '--output-format', 'json', '--cache-dir', 'c')}\n"
    probe += "import sys\nsys.stderr.write('libcst' in sys.modules and 'LIBCST' or 'NONE')\n"

    def run() -> tuple[str, str]:
        result = subprocess.run(
            [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True
        )
        return result.stdout, result.stderr.splitlines()[-1]

    first, loaded = run()
    assert '"edits"' in first and loaded == "LIBCST"
    assert run() == (first, "NONE")
    (tmp_path / "fixable.py").write_text("\n" + FIXABLE)  # the edit moves a line down
    moved, loaded = run()
    (before,), (after,) = json.loads(first), json.loads(moved)
    rows = [edit["location"]["row"] for edit in before["fix"]["edits"]]
    assert loaded == "LIBCST"
    assert [edit["location"]["row"] for edit in after["fix"]["edits"]] == [r + 1 for r in rows]
