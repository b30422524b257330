"""SARIF 2.1.0 output, for code-scanning services (GitHub, Azure DevOps, IDE viewers)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from syncguard._version import __version__
from syncguard.project import Finding
from syncguard.rule import Rule


def write_sarif(findings: Sequence[Finding], rules: Mapping[str, type[Rule]], out: TextIO) -> None:
    codes = sorted(rules)
    index = {code: position for position, code in enumerate(codes)}
    results = []
    for finding in findings:
        span = finding.span
        result: dict[str, Any] = {
            "ruleId": finding.code,
            "ruleIndex": index.get(finding.code, 0),
            "level": finding.severity,
            "message": {"text": f"{finding.message}. Fix: {finding.suggestion}"},
            "locations": [_sarif_location(finding.path, span.line, span.column, span)],
        }
        if len(finding.chain) > 1:
            result["codeFlows"] = [
                {
                    "threadFlows": [
                        {
                            "locations": [
                                {"location": _sarif_location(step.path, step.line, 1, None)}
                                for step in finding.chain
                            ]
                        }
                    ]
                }
            ]
        results.append(result)
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "syncguard",
                        "version": __version__,
                        "rules": [
                            {
                                "id": code,
                                "name": rules[code].name,
                                "shortDescription": {"text": rules[code].message},
                                "fullDescription": {"text": (rules[code].__doc__ or "").strip()},
                            }
                            for code in codes
                        ],
                    }
                },
                "results": results,
            }
        ],
    }
    json.dump(document, out, indent=2)
    out.write("\n")


def _sarif_location(path: str, line: int, column: int, span: Any) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": line, "startColumn": column}
    if span is not None:
        region.update(endLine=span.end_line, endColumn=span.end_column)
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": path.replace(os.sep, "/")},
            "region": region,
        }
    }
