"""Reading [tool.syncguard]: every TOML spelling, located errors, rule selection."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli
from syncguard.config import (
    ConfigError,
    Selection,
    Settings,
    check_selectors,
    load,
    parse_codes,
)
from syncguard.hierarchy import ConfigTree
from syncguard.rules import all_rules

HOT = "import torch\n\n@torch.compile\ndef step(x):\n    return x.item(), x.tolist()\n"
KNOWN = list(all_rules())


def find_config(folder: Path) -> Path | None:
    """The config that applies to the files in ``folder``."""
    return ConfigTree().settings_for(str(folder)).source


def codes(tree: Path, *args: str, cwd: Path | None = None) -> list[str]:
    result = run_cli("check", *args, "--output-format", "json", cwd=cwd or tree)
    assert result.returncode in (0, 1), result.stderr
    return sorted(finding["code"] for finding in json.loads(result.stdout))


@pytest.mark.parametrize(
    "toml",
    [
        '[tool.syncguard]\nselect = ["SG101"]\n',
        'tool.syncguard.select = ["SG101"]\n',
        '[tool]\nsyncguard = { select = ["SG101"] }\n',
        '[tool]\nsyncguard.select = ["SG101"]\n',
        '[project]\nname = "x"\n\n[tool . "syncguard"]\nselect = ["SG101"]\n',
        '[tool.ruff]\nline-length = 100\n[tool.syncguard.per-file-ignores]\n"a.py" = ["SG102"]\n',
    ],
    ids=["header", "dotted", "inline-table", "dotted-in-tool", "quoted-spaced", "sub-table"],
)
def test_every_toml_spelling_of_the_table_is_read(tmp_path: Path, toml: str) -> None:
    (tmp_path / "pyproject.toml").write_text(toml)
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    settings = load(tmp_path / "pyproject.toml")
    if "per-file-ignores" in toml:
        assert settings.per_file_ignores == (("a.py", ("SG102",)),)
    else:
        assert settings.select == ("SG101",)


def test_dotted_keys_configure_the_command_line_run(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('tool.syncguard.select = ["SG101"]\n')
    (tmp_path / "a.py").write_text(HOT)
    assert codes(tmp_path, ".") == ["SG101"]


def test_a_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.syncguard]\nselect = ["SG102"]\n')
    inner = tmp_path / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[tool.ruff]\nselect = ["E"]\n# [tool.syncguard]\n')
    assert find_config(inner) == tmp_path / "pyproject.toml"


@pytest.mark.parametrize(
    ("content", "where", "needle"),
    [
        (b'[tool.syncguard]\nselect = ["SG1"\nignore = []\n', ":3:1:", "invalid TOML"),
        (b"[tool.syncguard]\nselect = [\n", ":2:11:", "invalid TOML"),
        (b'[tool.syncguard]\n# caf\xe9\nselect = ["SG1"]\n', ":2:6:", "not UTF-8"),
        (b'tool = "x"\n', ":1:1:", "`tool` must be a table"),
        (b'[project]\nname = "p"\n[tool]\nsyncguard = 3\n', ":4:1:", "`tool.syncguard`"),
    ],
    ids=["unclosed-list", "end-of-file", "latin-1-byte", "tool-string", "table-number"],
)
def test_a_broken_pyproject_is_a_located_error_not_a_fall_through(
    tmp_path: Path, content: bytes, where: str, needle: str
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.syncguard]\nselect = ["SG102"]\n')
    inner = tmp_path / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_bytes(content)
    (inner / "a.py").write_text(HOT)
    with pytest.raises(ConfigError) as raised:
        find_config(inner)
    assert f"pyproject.toml{where}" in str(raised.value) and needle in str(raised.value)
    result = run_cli("check", ".", cwd=inner)
    assert result.returncode == 2
    assert f"pyproject.toml{where} {needle}" in result.stderr.replace(":  ", ": ")
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stdout == ""  # nothing linted with the parent's config


def test_a_fifo_named_pyproject_is_an_error_and_never_blocks(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pyproject.toml")
    (tmp_path / "a.py").write_text(HOT)
    with pytest.raises(ConfigError, match=r"pyproject.toml:1:1: not a regular file \(a FIFO\)"):
        find_config(tmp_path)


@pytest.mark.parametrize(
    ("body", "located", "needle"),
    [
        ('select = ["SG1"]\nselct = ["SG1"]\n', ":3:1:", "unknown key `selct`"),
        ('exclud = ["x"]\n', ":2:1:", "did you mean `exclude`?"),
        ("per-file-ignore = {}\n", ":2:1:", "did you mean `per-file-ignores`?"),
        ('hot-function = ["a.b"]\n', ":2:1:", "did you mean `hot-functions`?"),
        ('colour = "red"\n', ":2:1:", "known: select, extend-select"),
        ('\n\nscope = "everywhere"\n', ":4:1:", "`scope` must be one of hot, all"),
        ('force-exclude = "yes"\n', ":2:1:", "`force-exclude` must be true or false"),
        ('per-file-ignores = { "t/*" = ["E501"] }\n', ":2:1:", "not a rule code"),
    ],
)
def test_key_errors_are_located_and_suggest_the_closest_key(
    tmp_path: Path, body: str, located: str, needle: str
) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.syncguard]\n" + body)
    with pytest.raises(ConfigError) as raised:
        load(config)
    assert f"{config}{located}" in str(raised.value)
    assert needle in str(raised.value)


def test_a_dotted_key_error_is_located_on_its_line(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('# lint\n\ntool.syncguard.scope = "al"\n\n[project]\nname = "p"\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml:3:16: `scope` must be one of"):
        load(config)


def test_an_explicit_config_without_the_table_is_an_error(tmp_path: Path) -> None:
    config = tmp_path / "lint.toml"
    config.write_text('[tool.ruff]\nselect = ["E"]\n')
    with pytest.raises(ConfigError, match=r"no \[tool.syncguard\] table"):
        load(config)


def test_extend_select_and_extend_ignore_add_to_the_selection(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text(
        "[tool.syncguard]\n"
        'select = ["SG1"]\nextend-select = ["SG201"]\n'
        'ignore = ["SG102"]\nextend-ignore = ["SG103"]\n'
    )
    settings = load(config)
    assert settings.selects("SG101") and settings.selects("SG201")
    assert not settings.selects("SG102") and not settings.selects("SG103")
    assert not settings.selects("SG301")
    (tmp_path / "a.py").write_text(HOT)
    assert codes(tmp_path, ".") == ["SG101"]


def test_command_line_selection_is_a_layer_over_the_config() -> None:
    """As in ruff: --select starts afresh (a config's ignore no longer applies), while
    --extend-select and --ignore change the config's selection."""
    config = Settings(select=("SG1",), ignore=("SG102",))
    fresh = config.with_overrides(command_line=Selection(select=("SG10",)))
    assert fresh.selects("SG102") and not fresh.selects("SG201")
    extended = config.with_overrides(command_line=Selection(extend_select=("SG2",)))
    assert extended.selects("SG201") and not extended.selects("SG102")
    assert extended.selects("SG101")
    narrowed = config.with_overrides(command_line=Selection(ignore=("SG101",)))
    assert not narrowed.selects("SG101") and narrowed.selects("SG103")
    specific = config.with_overrides(command_line=Selection(extend_select=("SG102",)))
    assert specific.selects("SG102")


@pytest.mark.parametrize("text", [",", " , ", ""])
def test_an_empty_code_list_on_the_command_line_is_an_error(text: str) -> None:
    with pytest.raises(ConfigError, match="needs at least one rule code"):
        parse_codes(text, "--select")


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("select = []\n", "pyproject.toml:2:1: `select` leaves no rule to report"),
        ('ignore = ["SG"]\n', "pyproject.toml:2:1: `ignore` leaves no rule to report"),
        ('select = ["SG1"]\nignore = ["SG10", "SG11"]\n', "`ignore` leaves no rule"),
    ],
)
def test_an_empty_selection_in_the_config_is_an_error(
    tmp_path: Path, body: str, needle: str
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.syncguard]\n" + body)
    with pytest.raises(ConfigError) as raised:
        check_selectors(load(tmp_path / "pyproject.toml"), KNOWN)
    assert needle in str(raised.value)


def test_empty_selections_exit_2_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(HOT)
    for args in (["--select", ","], ["--ignore", "SG"], ["--select", "SG1", "--ignore", "SG1"]):
        result = run_cli("check", ".", *args, cwd=tmp_path)
        assert result.returncode == 2, args
        assert "rule" in result.stderr and "Traceback" not in result.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.syncguard]\nselect = []\n")
    result = run_cli("check", ".", cwd=tmp_path)
    assert result.returncode == 2 and "`select` leaves no rule to report" in result.stderr
    assert codes(tmp_path, ".", "--select", "SG102") == ["SG102"]  # the command line fills it


def test_selectors_matching_no_rule_are_located(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.syncguard]\nselect = ["SG1"]\n\nignore = ["SG9"]\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml:4:1: `ignore`: no rule matches 'SG9'"):
        check_selectors(load(config), KNOWN)
    options = Settings(command_line=Selection(extend_select=("SG8",)))
    with pytest.raises(ConfigError, match="`--extend-select`: no rule matches 'SG8'"):
        check_selectors(options, KNOWN)
