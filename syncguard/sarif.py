"""SARIF 2.1.0 output, for code-scanning services (GitHub, Azure DevOps, IDE viewers).

What code scanning needs beyond a schema-valid log:

* file URIs relative to the repository root (the version-control root around the working
  directory, else the working directory; a common ancestor when files lie outside it),
  with ``uriBaseId`` ``%SRCROOT%``: never absolute, never ``../``, however the paths were
  typed;
* ``partialFingerprints``: a hash of the baseline key (:mod:`syncguard.baseline`), so an
  alert stays the same alert across inserted lines and unrelated edits;
* rules with ``help`` (the rule's documentation as text and Markdown) and, when the
  installed package names its documentation URL, ``helpUri`` / ``informationUri``;
* ``codeFlows`` whose steps name their function (message and logical location);
* ``fixes`` for fixable findings, as text replacements;
* files that could not be analysed (SG000) as ``toolExecutionNotifications``, with
  ``executionSuccessful`` false, rather than as results.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TextIO

from syncguard._version import __version__
from syncguard.facts import Edit, Span
from syncguard.fixedits import FixEdits
from syncguard.project import Finding, Step
from syncguard.rule import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT = "syncguardKey/v1"
_FILE_ERROR = "SG000"


@cache
def documentation_url() -> str | None:
    """Where the installed package says its documentation is (``Project-URL``), if it does."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        urls = metadata("syncguard").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    found = dict(
        (label.strip().lower(), url.strip())
        for label, _, url in (entry.partition(",") for entry in urls)
    )
    url = found.get("documentation") or found.get("repository") or found.get("homepage")
    return url.rstrip("/") if url else None


def source_root(paths: Sequence[str], start: Path | None = None) -> Path:
    """The folder file URIs are relative to (see the module docstring)."""
    from syncguard.workspace import vcs_root

    here = (start or Path.cwd()).resolve()
    root = vcs_root(here) or here
    absolute = [os.path.abspath(path) for path in paths]
    if all(_inside(path, root) for path in absolute):
        return root
    return Path(os.path.commonpath([str(root), *absolute]))


def _inside(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root).rstrip(os.sep) + os.sep)


def write_sarif(
    findings: Sequence[Finding],
    rules: Mapping[str, type[Rule]],
    out: TextIO,
    edits: FixEdits | None = None,
) -> None:
    json.dump(sarif_log(findings, rules, edits=edits), out, indent=2)
    out.write("\n")


def sarif_log(
    findings: Sequence[Finding],
    rules: Mapping[str, type[Rule]],
    root: Path | None = None,
    edits: FixEdits | None = None,
) -> dict[str, Any]:
    """The SARIF log of ``findings`` (SG000 ones become notifications); ``edits`` gives
    the fixes' text edits (by default worked out here)."""
    from syncguard.baseline import finding_keys

    results_of = [finding for finding in findings if finding.code != _FILE_ERROR]
    failures = [finding for finding in findings if finding.code == _FILE_ERROR]
    paths = [finding.path for finding in findings]
    paths += [step.path for finding in findings for step in finding.chain]
    root = root or source_root(paths)
    codes = sorted(code for code in rules if code != _FILE_ERROR)
    index = {code: position for position, code in enumerate(codes)}
    keys = finding_keys(results_of, root)
    edits = edits or FixEdits()
    results = []
    for finding, key in zip(results_of, keys, strict=True):
        result: dict[str, Any] = {
            "ruleId": finding.code,
            "level": finding.severity,
            "message": {"text": f"{finding.message}. Fix: {finding.suggestion}"},
            "locations": [_location(finding.path, finding.span, root)],
            "partialFingerprints": {FINGERPRINT: key.fingerprint()},
        }
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        if finding.chain:
            result["codeFlows"] = [_code_flow(finding.chain, root)]
        fix = _fix(finding, root, edits)
        if fix is not None:
            result["fixes"] = [fix]
        results.append(result)
    invocation: dict[str, Any] = {"executionSuccessful": not failures}
    if failures:
        invocation["toolExecutionNotifications"] = [
            {
                "level": "error",
                "message": {"text": f"{failure.message}: the file was not analysed"},
                "locations": [_location(failure.path, failure.span, root)],
                "descriptor": {"id": _FILE_ERROR},
            }
            for failure in failures
        ]
    driver: dict[str, Any] = {
        "name": "syncguard",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": [_rule(rules[code]) for code in codes],
    }
    if _FILE_ERROR in rules:
        driver["notifications"] = [_descriptor(rules[_FILE_ERROR])]
    if documentation_url():
        driver["informationUri"] = documentation_url()
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "invocations": [invocation],
                "originalUriBaseIds": {
                    SRCROOT: {"description": {"text": "The root of the analysed checkout."}}
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _descriptor(rule: type[Rule]) -> dict[str, Any]:
    from syncguard.ruledoc import anchor, rule_markdown, rule_text

    descriptor: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": " ".join((rule.__doc__ or rule.message).split())},
        "help": {"text": rule_text(rule), "markdown": rule_markdown(rule)},
    }
    if documentation_url():
        descriptor["helpUri"] = f"{documentation_url()}/docs/rules.md#{anchor(rule)}"
    return descriptor


def _rule(rule: type[Rule]) -> dict[str, Any]:
    descriptor = _descriptor(rule)
    descriptor["defaultConfiguration"] = {"level": "error"}
    descriptor["properties"] = {"tags": ["performance", rule.family()]}
    return descriptor


def _uri(path: str, root: Path) -> str:
    relative = os.path.relpath(os.path.abspath(path), root)
    return Path(relative).as_posix()


def _region(span: Span) -> dict[str, int]:
    region = {"startLine": span.line, "startColumn": span.column}
    if (span.end_line, span.end_column) > (span.line, span.column):
        region.update(endLine=span.end_line, endColumn=span.end_column)
    return region


def _location(path: str, span: Span, root: Path) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path, root), "uriBaseId": SRCROOT},
            "region": _region(span),
        }
    }


def _code_flow(chain: Sequence[Step], root: Path) -> dict[str, Any]:
    """The chain from the hot root down to the sync, each step naming its function."""
    locations = []
    for depth, step in enumerate(chain):
        location = _location(step.path, Span(step.line, 1, step.line, 1), root)
        location["message"] = {"text": step.function}
        location["logicalLocations"] = [{"fullyQualifiedName": step.function, "kind": "function"}]
        locations.append({"location": location, "nestingLevel": depth})
    return {"threadFlows": [{"locations": locations}]}


def _fix(finding: Finding, root: Path, found: FixEdits) -> dict[str, Any] | None:
    if finding.fix is None:
        return None
    edits: Sequence[Edit] = found.of(finding)
    if not edits:
        return None
    return {
        "description": {"text": f"{finding.fix.description} ({finding.fix.applicability})"},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": _uri(finding.path, root), "uriBaseId": SRCROOT},
                "replacements": [
                    {
                        "deletedRegion": {
                            "startLine": edit.span.line,
                            "startColumn": edit.span.column,
                            "endLine": edit.span.end_line,
                            "endColumn": edit.span.end_column,
                        },
                        "insertedContent": {"text": edit.text},
                    }
                    for edit in edits
                ],
            }
        ],
    }
