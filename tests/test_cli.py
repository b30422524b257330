"""The command line: exit codes, config, output formats, bad input."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from syncguard.cli import main
from syncguard.engine import analyze_source
from syncguard.facts import FileError
from syncguard.rule import Context, Rule
from syncguard.rules import all_rules

HOT_ITEM = "import torch\n\n@torch.compile\ndef step(x):\n    return x.item()\n"
HOT_TOLIST = "import torch\n\n@torch.compile\ndef step(x):\n    return x.tolist()\n"
CLEAN = "def f(x):\n    return x + 1\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(HOT_ITEM)
    (tmp_path / "b.py").write_text(HOT_TOLIST)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_exit_codes(tree: Path) -> None:
    assert run_cli("check", "clean.py", cwd=tree).returncode == 0
    assert run_cli("check", ".", cwd=tree).returncode == 1
    assert run_cli("check", ".", "--exit-zero", cwd=tree).returncode == 0
    usage = run_cli("check", "--output-format", "xml", cwd=tree)
    assert usage.returncode == 2 and "'xml' is not one of" in usage.stderr


def test_json_contract_is_sorted_relative_and_stable(tree: Path) -> None:
    first = run_cli("check", ".", "--output-format", "json", cwd=tree)
    second = run_cli("check", "b.py", "a.py", "--output-format", "json", cwd=tree)
    findings = json.loads(first.stdout)
    assert json.loads(second.stdout) == findings
    assert [(f["path"], f["line"]) for f in findings] == [("a.py", 5), ("b.py", 5)]
    keys = {"code", "name", "message", "path", "line", "column", "end_line", "end_column",
            "severity", "hot", "chain", "fix", "suggestion"}  # fmt: skip
    for finding in findings:
        assert keys <= set(finding)
        assert finding["severity"] == "error" and finding["hot"] == "torch.compile"
        assert finding["column"] == 12 and finding["end_line"] == 5
        assert finding["chain"] == [f"{finding['path']}:5 {finding['path'][0]}.step"]
        assert finding["suggestion"]
    assert findings[0]["name"] == "item-sync"


def test_select_ignore_and_prefixes(tree: Path) -> None:
    def codes(*args: str) -> list[str]:
        out = run_cli("check", ".", "--output-format", "json", *args, cwd=tree).stdout
        return [f["code"] for f in json.loads(out)]

    assert codes("--select", "SG101") == ["SG101"]
    assert codes("--select", "SG1", "--ignore", "SG102") == ["SG101"]
    assert codes("--ignore", "SG1") == []
    bad = run_cli("check", ".", "--select", "SG9", cwd=tree)
    assert bad.returncode == 2 and "SG9" in bad.stderr
    bad = run_cli("check", ".", "--select", "E501", cwd=tree)
    assert bad.returncode == 2 and "E501" in bad.stderr


def test_config_file_settings(tree: Path) -> None:
    (tree / "pyproject.toml").write_text(
        "[tool.syncguard]\n"
        'ignore = ["SG102"]\n'
        'per-file-ignores = { "a.py" = ["SG101"] }\n'
        'exclude = ["skipped"]\n'
        'hot-functions = ["c.Runner.step"]\n'
    )
    (tree / "skipped").mkdir()
    (tree / "skipped" / "x.py").write_text(HOT_ITEM)
    (tree / "c.py").write_text("class Runner:\n    def step(self, x):\n        return x.item()\n")
    out = run_cli("check", ".", "--output-format", "json", cwd=tree)
    assert [(f["path"], f["code"], f["hot"]) for f in json.loads(out.stdout)] == [
        ("c.py", "SG101", "hot-functions: c.Runner.step")
    ]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('colour = "red"\n', "unknown key `colour`"),
        ('select = "SG1x"\n', "`select`"),
        ("hot-functions = 3\n", "`hot-functions`"),
        ("host-parameters = [1]\n", "`host-parameters`"),
        ('scope = "everywhere"\n', "`scope`"),
        ("select = [\n", "invalid TOML"),
    ],
)
def test_bad_config_exits_2_naming_key_and_file(tree: Path, body: str, needle: str) -> None:
    (tree / "pyproject.toml").write_text("[tool.syncguard]\n" + body)
    result = run_cli("check", ".", cwd=tree)
    assert result.returncode == 2
    assert needle in result.stderr and "pyproject.toml" in result.stderr
    assert "Traceback" not in result.stderr


def test_explicit_config_path(tree: Path) -> None:
    config = tree / "lint.toml"
    config.write_text('[tool.syncguard]\nselect = ["SG102"]\n')
    out = run_cli("check", ".", "--config", str(config), "--output-format", "json", cwd=tree)
    assert [f["code"] for f in json.loads(out.stdout)] == ["SG102"]
    missing = run_cli("check", ".", "--config", "nope.toml", cwd=tree)
    assert missing.returncode == 2 and "nope.toml" in missing.stderr


def test_bad_input_is_located_and_does_not_stop_other_files(tree: Path) -> None:
    (tree / "broken.py").write_text("def f(:\n    pass\n")
    (tree / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    (tree / "binary.py").write_bytes(b"\x00\x01\x02")
    result = run_cli("check", ".", "missing_dir", "--output-format", "json", cwd=tree)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "broken.py:1:7: syntax error" in result.stderr
    assert "latin.py:1:6: cannot decode" in result.stderr
    assert "binary.py:1:1: not a text file" in result.stderr
    assert "missing_dir:1:1: no such file or directory" in result.stderr
    entries = json.loads(result.stdout)
    assert [f["path"] for f in entries if f["code"] != "SG000"] == ["a.py", "b.py"]
    assert [(f["path"], f["line"]) for f in entries if f["code"] == "SG000"] == [
        ("binary.py", 1), ("broken.py", 1), ("latin.py", 1), ("missing_dir", 1)
    ]  # fmt: skip


def test_full_output_has_code_frame_caret_and_help(tree: Path) -> None:
    out = run_cli("check", "a.py", "--output-format", "full", cwd=tree).stdout
    assert "a.py:5:12: SG101 [error]" in out
    assert "5 |     return x.item()" in out
    assert "|            ^^^^^^^^ SG101" in out
    assert "= hot: torch.compile" in out and "= help:" in out
    assert "Found 1 finding" in out


def test_concise_github_sarif_and_statistics(tree: Path) -> None:
    concise = run_cli("check", ".", "--output-format", "concise", cwd=tree).stdout
    assert "a.py:5:12: SG101 " in concise and "[torch.compile]" in concise
    github = run_cli("check", ".", "--output-format", "github", cwd=tree).stdout
    assert github.startswith("::error file=a.py,line=5,col=12,endLine=5,endColumn=20,")
    sarif = json.loads(run_cli("check", ".", "--output-format", "sarif", cwd=tree).stdout)
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["SG101", "SG102"]
    rule_ids = [rule["id"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]]
    assert "SG101" in rule_ids
    stats = run_cli("check", ".", "--statistics", "--output-format", "concise", cwd=tree).stdout
    assert "1  SG101" in stats and "1  SG102" in stats


def test_rule_command_and_version() -> None:
    text = run_cli("rule", "SG101").stdout
    assert "SG101 item-sync" in text and "Why it syncs" in text and "How to fix" in text
    listing = run_cli("rule", "--all").stdout
    assert "SG102" in listing and "tolist-sync" in listing
    as_json = json.loads(run_cli("rule", "--all", "--output-format", "json").stdout)
    assert {"code", "name", "family", "fix"} <= set(as_json[0])
    unknown = run_cli("rule", "SG999")
    assert unknown.returncode == 2 and "SG999" in unknown.stderr
    assert run_cli("--version").stdout.startswith("syncguard ")


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ((), "Commands:"),
        (("check",), "--unsafe-fixes"),
        (("rule",), "--all"),
        (("verify",), "--args-factory"),
        (("server",), "language server"),
    ],
)
def test_every_command_has_help(command: tuple[str, ...], needle: str, capsys) -> None:
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: syncguard {' '.join(command)}".rstrip())
    assert needle in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "Commands:"),  # a bare `syncguard`: the help, on stderr
        (("lint",), "No such command 'lint'"),
        (("check", "--colour"), "No such option '--colour'"),
        (("check", "--jobs", "0"), "0 is not in the range x>=1"),
        (("rule", "SG101", "--output-format", "sarif"), "'sarif' is not one of"),
        (("verify",), "Missing argument 'MODULE:CALLABLE'"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], needle: str, capsys) -> None:
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_shell_completion_offers_subcommands_options_and_rule_codes(monkeypatch, capsys) -> None:
    def complete(*words: str) -> list[str]:
        monkeypatch.setenv("_SYNCGUARD_COMPLETE", "bash_complete")
        monkeypatch.setenv("COMP_WORDS", " ".join(("syncguard", *words)))
        monkeypatch.setenv("COMP_CWORD", str(len(words)))
        with pytest.raises(SystemExit) as exited:
            main([])
        assert exited.value.code == 0
        return [line.split(",", 1)[1] for line in capsys.readouterr().out.splitlines()]

    assert {"check", "rule", "verify"} <= set(complete(""))
    assert "--output-format" in complete("check", "--out")
    assert complete("rule", "sg30") == [code for code in all_rules() if code.startswith("SG30")]
    monkeypatch.setenv("_SYNCGUARD_COMPLETE", "bash_source")
    with pytest.raises(SystemExit):
        main([])
    assert "complete -o nosort -F" in capsys.readouterr().out


def test_installed_console_script_runs_in_a_subprocess() -> None:
    executable = shutil.which("syncguard")
    assert executable is not None, "the console script is not installed"
    result = subprocess.run(
        [executable, "check", "fixtures/chunked/before", "--output-format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert {f["code"] for f in json.loads(result.stdout)} >= {"SG101", "SG102"}


def test_verify_subcommand_confirms_runtime_syncs_against_the_linter(tmp_path: Path) -> None:
    (tmp_path / "steps.py").write_text(
        "import torch\n\n"
        "def make():\n    return (torch.arange(6),)\n\n"
        "def step(x):\n    total = x.sum().item()\n    return x.nonzero(), total\n\n"
        "def hidden(x):\n    return x.tolist()  # syncguard: ignore[SG102]\n"
    )
    result = run_cli("verify", "steps:step", "--args-factory", "steps:make", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "confirmed 2, missed by the linter 0" in result.stdout
    assert "steps.py:7" in result.stdout and "steps.py:8" in result.stdout
    bad = run_cli("verify", "steps:nope", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* is Python 3.11 syntax")
def test_try_with_except_star_is_analysed(tree: Path) -> None:
    (tree / "groups.py").write_text(
        "import torch\n\n@torch.compile\ndef step(x):\n    try:\n        return x.item()\n"
        "    except* ValueError:\n        return 0\n"
    )
    result = run_cli("check", "groups.py", "--output-format", "json", cwd=tree)
    assert result.returncode == 1, result.stderr
    assert [(f["code"], f["line"]) for f in json.loads(result.stdout)] == [("SG101", 6)]


def test_an_analysis_bug_is_located_in_its_file() -> None:
    class Exploding(Rule):
        code = "SG999"
        name = "exploding"
        message = "raises"

        def visit_Call(self, node: ast.Call, ctx: Context) -> None:
            raise RuntimeError("boom")

    error = analyze_source("f(x)\n", "m", False, [Exploding()])
    assert isinstance(error, FileError)
    assert (
        error.message == "internal error while analysing: RuntimeError: boom (please report this)"
    )


# ------------------------------------------------------------ hostile surroundings


def syncguard_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "syncguard", *args]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("check", "."), ("--help",)])
def test_output_to_a_full_device_is_a_clear_error(tree: Path, args: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            syncguard_command(*args), cwd=tree, stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert result.returncode == 2
    assert result.stderr == "syncguard: error: cannot write the output: No space left on device\n"


def test_a_closed_stdout_is_a_clear_error(tree: Path) -> None:
    result = subprocess.run(
        syncguard_command("check", "."),
        cwd=tree,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),  # only this runs in the child
    )
    assert result.returncode == 2
    assert (
        result.stderr
        == "syncguard: error: standard output is closed: nowhere to write the results\n"
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("check", ".", "--output-format", "json"), 1),
        (("check", ".", "--exit-zero"), 0),
        (("check", "clean.py"), 0),
        (("check", ".", "--diff", "--unsafe-fixes"), 1),
    ],
)
def test_a_reader_that_stops_reading_ends_the_run_as_if_complete(
    tree: Path, args: tuple[str, ...], code: int
) -> None:
    (tree / "c.py").write_text(
        "import torch\n\n@torch.compile\ndef f(x):\n    staged = x.cpu()\n    return staged\n"
    )
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -0`: every write fails with EPIPE
    try:
        result = subprocess.run(
            syncguard_command(*args), cwd=tree, stdout=write_end, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (code, "")


@pytest.mark.parametrize("output_format", ["concise", "full"])
def test_a_reader_that_stops_after_the_first_line_ends_the_run_with_the_findings_code(
    tmp_path: Path, output_format: str
) -> None:
    """`syncguard check . | head -1` with more findings than a pipe holds: the write
    fails part-way, the run still exits 1 and says nothing on stderr."""
    syncs = "".join(f"    n{index} = x.item()\n" for index in range(2000))
    (tmp_path / "m.py").write_text(f"import torch\n\n@torch.compile\ndef f(x):\n{syncs}")
    command = syncguard_command("check", ".", "--no-cache", "--output-format", output_format)
    with subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.readline()
        child.stdout.close()  # `head -1` exits
        errors = child.stderr.read()
    assert (child.returncode, errors) == (1, b"")


def test_output_and_errors_to_one_closed_pipe_keep_the_exit_code(tree: Path) -> None:
    (tree / "broken.py").write_text("def f(:\n")  # a located error on stderr: exit 2
    read_end, write_end = os.pipe()
    os.close(read_end)  # `2>&1 | head -0`
    try:
        result = subprocess.run(
            syncguard_command("check", "."), cwd=tree, stdout=write_end, stderr=write_end
        )
    finally:
        os.close(write_end)
    assert result.returncode == 2


def test_jobs_beyond_the_cpu_count_are_capped_with_a_note(tree: Path) -> None:
    plain = run_cli("check", ".", "--output-format", "json", cwd=tree)
    many = run_cli("check", ".", "--output-format", "json", "--jobs", "100000", cwd=tree)
    assert (many.returncode, many.stdout) == (plain.returncode, plain.stdout)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert f"syncguard: note: --jobs 100000 is more than the {cores} CPU" in many.stderr


def test_a_deleted_working_directory_is_a_clear_error(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = 'cd "$1" && rmdir "$1" && exec "$2" -m syncguard check .'
    result = subprocess.run(
        ["bash", "-c", script, "-", str(gone), sys.executable],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode == 2
    assert "the current folder no longer exists" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


_STEP = (
    "import torch\n\n@torch.compile\ndef step(x):\n"
    "    staged = x.to('cpu')  # copy back\n    return staged\n"
)
# Files git reads differently from Python's splitlines, or in another encoding than the
# terminal's: each must come back from `--diff | git apply` as `--fix` would write it.
_AWKWARD_FILES = {
    "form_feeds.py": _STEP.replace("\n\n", "\n\x0c\n").encode(),
    "separators.py": _STEP.replace("copy back", "copy\u2028back\u2029\x85").encode(),
    "crlf.py": _STEP.replace("\n", "\r\n").encode(),
    "cr.py": _STEP.replace("\n", "\r").encode(),
    "no_final_newline.py": _STEP.rstrip("\n").encode(),
    "latin1.py": ("# -*- coding: latin-1 -*-\n" + _STEP.replace("back", "\xe9t\xe9")).encode(
        "latin-1"
    ),
}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_diff_output_applies_with_git_to_files_of_any_line_ending_and_encoding(
    tmp_path: Path,
) -> None:
    for name, data in _AWKWARD_FILES.items():
        (tmp_path / name).write_bytes(data)

    def git(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", *args], cwd=tmp_path, input=stdin, capture_output=True)

    assert git("init", "-q", stdin=b"").returncode == 0
    diff = subprocess.run(
        syncguard_command("check", ".", "--diff", "--unsafe-fixes", "--no-cache"),
        cwd=tmp_path,
        capture_output=True,
    )
    assert diff.returncode == 1, diff.stderr
    assert diff.stdout.count(b"\n+++ b/") == len(_AWKWARD_FILES)
    checked = git("apply", "--check", "-", stdin=diff.stdout)
    assert checked.returncode == 0, checked.stderr.decode()
    assert git("apply", "-", stdin=diff.stdout).returncode == 0
    for name, data in _AWKWARD_FILES.items():
        fixed = data.replace(b"x.to('cpu')", b"x.to('cpu', non_blocking=True)")
        assert (tmp_path / name).read_bytes() == fixed, name
