"""Draw a reproducible random sample of findings for manual triage.

Reads the JSON written by ``syncguard check PATH --output-format json`` and prints
a markdown table skeleton (finding, code, why it is hot, verdict and reason left
blank) for ``--count`` findings chosen uniformly at random with ``--seed``::

    syncguard check CORPUS --output-format json > findings.json
    python benchmarks/triage_sample.py findings.json --seed 1 --count 50 --root CORPUS

``--details`` adds, below the table, each finding's message and call chain: what
the reader needs to judge it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from typing import Any

Finding = dict[str, Any]


def load_findings(path: str) -> list[Finding]:
    """The findings of a JSON report, or a clear error for a file that is not one."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as error:
        raise SystemExit(f"{path}: cannot read: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise SystemExit(f"{path}:{error.lineno}:{error.colno}: not JSON: {error.msg}") from None
    if not isinstance(data, list) or not all(
        isinstance(item, dict) and {"code", "path", "line"} <= item.keys() for item in data
    ):
        raise SystemExit(f"{path}: not a syncguard JSON report (a list of findings)")
    return data


def sample(findings: list[Finding], seed: int, count: int) -> list[Finding]:
    """``count`` findings drawn without replacement, in report order."""
    chosen = random.Random(seed).sample(range(len(findings)), min(count, len(findings)))
    return [findings[index] for index in sorted(chosen)]


def relative(path: str, root: str) -> str:
    """``path`` (or a ``path:line function`` chain step) without the ``root`` folder."""
    prefix = os.path.join(root, "") if root else ""
    return path[len(prefix) :] if prefix and path.startswith(prefix) else path


def location(finding: Finding, root: str) -> str:
    return f"{relative(finding['path'], root)}:{finding['line']}"


def hot_reason(finding: Finding) -> str:
    """Why the finding is hot, with the root's short name (``called from X.forward``)."""
    reason = finding.get("hot") or "not hot"
    prefix = "called from "
    if reason.startswith(prefix):
        parts = reason[len(prefix) :].split(".")
        return prefix + ".".join(parts[-2:])
    return reason


def table(findings: list[Finding], root: str) -> str:
    rows = [
        "| # | finding | code | hot | verdict | why |",
        "|---|---|---|---|---|---|",
    ]
    for number, finding in enumerate(findings, 1):
        rows.append(
            f"| {number} | `{location(finding, root)}` | {finding['code']} "
            f"| {hot_reason(finding)} |  |  |"
        )
    return "\n".join(rows)


def details(findings: list[Finding], root: str) -> str:
    blocks = []
    for number, finding in enumerate(findings, 1):
        chain = "\n".join(f"    {relative(step, root)}" for step in finding.get("chain", ()))
        blocks.append(
            f"{number}. {location(finding, root)} {finding['code']}: {finding.get('message', '')}"
            f"\n{chain}"
        )
    return "\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("findings", help="JSON report of `syncguard check --output-format json`")
    parser.add_argument("--seed", type=int, required=True, help="random seed (reproducible)")
    parser.add_argument("--count", type=int, default=50, help="sample size (default 50)")
    parser.add_argument("--root", default="", help="show paths relative to this folder")
    parser.add_argument("--details", action="store_true", help="also print messages and chains")
    options = parser.parse_args(argv)
    if options.count < 1:
        parser.error("--count must be at least 1")
    findings = load_findings(options.findings)
    chosen = sample(findings, options.seed, options.count)
    codes = Counter(finding["code"] for finding in findings)
    print(
        f"{len(chosen)} of {len(findings)} findings, seed {options.seed} "
        f"({', '.join(f'{code} {n}' for code, n in sorted(codes.items()))})\n"
    )
    print(table(chosen, options.root))
    if options.details:
        print()
        print(details(chosen, options.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
