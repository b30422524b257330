"""SARIF for code scanning: valid against the official 2.1.0 schema (tests/data), with
repo-relative URIs, stable fingerprints, rule help, named code-flow steps, fixes, and
the files that failed as notifications."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import FIXTURES, REPO
from syncguard import sarif
from syncguard.cli import main

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "adoption", root)
    (root / "engine" / "broken.py").write_text("def half_written(x:\n    return x\n")
    (root / ".git").mkdir()  # the checkout's root
    return root


def sarif_of(*args: str, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    main(["check", *args, "--no-cache", "--output-format", "sarif"])
    return json.loads(capsys.readouterr().out)


def uris(log: dict) -> set[str]:
    text = json.dumps(log)
    return set(re.findall(r'"uri": "([^"]*)"', text))


def test_valid_against_the_official_schema(tree: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tree)
    log = sarif_of(".", capsys=capsys)
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(log), key=str)
    assert errors == []
    (run,) = log["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["SG101", "SG304", "SG001"]
    # a schema-valid log that is not a SARIF log fails: the check can fail
    assert list(jsonschema.Draft4Validator(SCHEMA).iter_errors({"version": "2.1.0"}))


@pytest.mark.parametrize("where", ["root", "subfolder", "absolute", "outside"])
def test_uris_are_relative_to_the_checkout_however_invoked(
    tree: Path, where: str, monkeypatch, capsys
) -> None:
    if where == "subfolder":
        monkeypatch.chdir(tree / "engine")
        log = sarif_of("..", capsys=capsys)
    elif where == "absolute":
        monkeypatch.chdir(tree)
        log = sarif_of(str(tree.resolve()), capsys=capsys)
    elif where == "outside":  # from a folder that is not the checkout: a common root
        monkeypatch.chdir(tree.parent)
        log = sarif_of(str(tree / "engine"), capsys=capsys)
    else:
        monkeypatch.chdir(tree)
        log = sarif_of(".", capsys=capsys)
    found = uris(log)
    prefix = "repo/" if where == "outside" else ""
    assert {f"{prefix}engine/runner.py", f"{prefix}engine/broken.py"} <= found
    assert all(not uri.startswith(("/", "..", "file:")) and "/../" not in uri for uri in found)
    locations = [
        loc["physicalLocation"]["artifactLocation"]
        for result in log["runs"][0]["results"]
        for loc in result["locations"]
    ]
    assert all(location["uriBaseId"] == "%SRCROOT%" for location in locations)


def test_fingerprints_survive_inserted_lines_and_unrelated_renames(
    tree: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tree)

    def prints() -> dict[str, str]:
        results = sarif_of(".", capsys=capsys)["runs"][0]["results"]
        return {r["ruleId"]: r["partialFingerprints"]["syncguardKey/v1"] for r in results}

    before = prints()
    runner = tree / "engine" / "runner.py"
    text = runner.read_text().replace('"""A speculative', '# moved down\n\n"""A speculative')
    runner.write_text(text)
    sampling = tree / "engine" / "sampling.py"
    sampling.write_text(sampling.read_text().replace("pad_to_block", "round_up"))
    runner.write_text(runner.read_text().replace("pad_to_block", "round_up"))
    after = prints()
    assert after["SG101"] == before["SG101"] and after["SG304"] == before["SG304"]


def test_rules_help_code_flows_fixes_and_notifications(tree: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tree)
    run = sarif_of(".", capsys=capsys)["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert "Why it syncs" in rules["SG101"]["help"]["text"]
    assert rules["SG101"]["help"]["markdown"].startswith("## SG101 item-sync")
    by_rule = {result["ruleId"]: result for result in run["results"]}
    steps = by_rule["SG101"]["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [step["location"]["message"]["text"] for step in steps] == [
        "engine.runner.DraftRunner.forward",
        "engine.sampling.count_accepted",
    ]
    (fix,) = by_rule["SG304"]["fixes"]
    (change,) = fix["artifactChanges"]
    (replacement,) = change["replacements"]
    region = replacement["deletedRegion"]
    line = (tree / "engine" / "runner.py").read_text().splitlines()[region["startLine"] - 1]
    assert region["endLine"] == region["startLine"]
    fixed = (
        line[: region["startColumn"] - 1]
        + replacement["insertedContent"]["text"]
        + line[region["endColumn"] - 1 :]
    )
    assert fixed == "        self.slots[0:1] = 0"
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["descriptor"]["id"] == "SG000" and note["level"] == "error"


def test_help_uris_point_at_headings_of_docs_rules_md(tree: Path, monkeypatch, capsys) -> None:
    """With a documentation URL in the package metadata, every rule links to its heading
    in docs/rules.md (GitHub's anchors: the heading lower-cased, blanks as dashes)."""
    monkeypatch.setattr(sarif, "documentation_url", lambda: "https://docs.example/syncguard")
    monkeypatch.chdir(tree)
    driver = sarif_of(".", capsys=capsys)["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://docs.example/syncguard"
    headings = re.findall(r"^## (.+)$", (REPO / "docs" / "rules.md").read_text(), re.M)
    anchors = {heading.lower().replace(" ", "-") for heading in headings}
    for rule in driver["rules"]:
        uri = rule["helpUri"]
        assert uri.startswith("https://docs.example/syncguard/docs/rules.md#")
        assert uri.partition("#")[2] in anchors, rule["id"]


def test_within_github_code_scanning_limits(tree: Path, monkeypatch, capsys) -> None:
    """The limits GitHub documents for SARIF uploads (runs per file, results and rules
    per run, locations and thread-flow locations per result, tags per rule)."""
    monkeypatch.chdir(tree)
    log = sarif_of(".", capsys=capsys)
    assert len(log["runs"]) <= 20
    (run,) = log["runs"]
    assert len(run["results"]) <= 25_000 and len(run["tool"]["driver"]["rules"]) <= 25_000
    for rule in run["tool"]["driver"]["rules"]:
        assert len(rule["properties"]["tags"]) <= 20
    for result in run["results"]:
        assert len(result["locations"]) <= 1_000
        for flow in result.get("codeFlows", []):
            assert sum(len(t["locations"]) for t in flow["threadFlows"]) <= 10_000
        assert result["message"]["text"] and result["ruleId"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1


def test_git_checkout_root(tmp_path: Path, monkeypatch, capsys) -> None:
    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "adoption", root / "src")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    monkeypatch.chdir(root / "src")
    assert {"src/engine/runner.py"} <= uris(sarif_of(".", capsys=capsys))
