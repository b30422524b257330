"""Recall on real code: draw a seeded sample of sync-looking lines, then score a report.

Two steps, both reproducible:

``sample`` draws ``--count`` lines uniformly at random (``--seed``) from every line of the
corpus's ``.py`` files that matches the sync-looking pattern (``.item()``, ``.tolist()``,
``.nonzero()``, ``.cpu()``, ``torch.nonzero(``) and prints a label sheet, a TSV with a
row per line: ``path`` (relative to the corpus), ``line``, ``op``, and empty ``label`` and
``reason`` columns for a person who reads the code::

    python benchmarks/recall_sample.py sample CORPUS --seed 1 --count 80 > sheet.tsv

A label is one of ``hot-device`` (device data, on a path that runs every forward, decode
step, training step, batch or request), ``cold-device`` (device data, but once: set-up,
loading, warm-up, capture, tests, debugging), ``host`` (the data is already on the host:
no sync) or ``unclear``.

``score`` reads a filled sheet and the JSON of ``syncguard check CORPUS --output-format
json`` and prints a Markdown table: how many ``hot-device`` lines the report reaches (a
finding on that line, or a finding whose chain ends at it) and which it misses, and how
many of the other lines it reports::

    syncguard check CORPUS --output-format json > report.json
    python benchmarks/recall_sample.py score sheet.tsv report.json --root CORPUS
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

PATTERN = re.compile(r"\.(item|tolist|nonzero|cpu)\(\)|torch\.nonzero\(")
LABELS = ("hot-device", "cold-device", "host", "unclear")
COLUMNS = ("path", "line", "op", "label", "reason")


def candidate_lines(root: str) -> Iterator[tuple[str, int, str]]:
    """``(relative path, line number, op)`` of every matching line, in path order."""
    for folder, folders, files in os.walk(root):
        folders.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    lines = handle.read().splitlines()
            except OSError:
                continue
            relative = os.path.relpath(path, root)
            for number, text in enumerate(lines, 1):
                match = PATTERN.search(text)
                if match:
                    yield relative, number, match.group(1) or "nonzero"


def draw(root: str, seed: int, count: int) -> list[tuple[str, int, str]]:
    """``count`` candidate lines drawn without replacement, in path order."""
    candidates = list(candidate_lines(root))
    chosen = random.Random(seed).sample(range(len(candidates)), min(count, len(candidates)))
    return [candidates[index] for index in sorted(chosen)]


def read_sheet(path: str) -> list[dict[str, str]]:
    """The rows of a label sheet; a clear error for a row with an unknown label."""
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    for number, row in enumerate(rows, 2):
        if row.get("label", "") not in LABELS:
            raise SystemExit(f"{path}:{number}: label {row.get('label')!r} is not one of {LABELS}")
    return rows


def _step_location(step: str, root: str) -> tuple[str, int] | None:
    """``(relative path, line)`` of a ``path:line qualified.name`` chain step."""
    where = step.split(" ", 1)[0]
    path, _, line = where.rpartition(":")
    if not line.isdigit():
        return None
    return os.path.relpath(path, root), int(line)


def reported_lines(report: list[dict[str, Any]], root: str) -> set[tuple[str, int]]:
    """Every line a finding is on, and the last step (the sync line) of every chain."""
    lines: set[tuple[str, int]] = set()
    for finding in report:
        lines.add((os.path.relpath(finding["path"], root), int(finding["line"])))
        chain = finding.get("chain") or []
        if chain:
            last = _step_location(chain[-1], root)
            if last is not None:
                lines.add(last)
    return lines


def score(sheet: str, report_path: str, root: str) -> str:
    rows = read_sheet(sheet)
    with open(report_path, encoding="utf-8") as handle:
        report = json.load(handle)
    if isinstance(report, dict):
        report = report.get("findings", [])
    reached = reported_lines(report, root)
    counts: Counter[tuple[str, bool]] = Counter()
    missed = []
    for row in rows:
        hit = (os.path.normpath(row["path"]), int(row["line"])) in reached
        counts[row["label"], hit] += 1
        if row["label"] == "hot-device" and not hit:
            missed.append(f"{row['path']}:{row['line']} ({row['reason']})")
    hot = counts["hot-device", True] + counts["hot-device", False]
    recall = counts["hot-device", True] / hot if hot else float("nan")
    out = ["| label | lines | reported |", "|---|---|---|"]
    for label in LABELS:
        total = counts[label, True] + counts[label, False]
        out.append(f"| {label} | {total} | {counts[label, True]} |")
    out.append("")
    out.append(
        f"recall (hot-device lines reported): {counts['hot-device', True]}/{hot} = {recall:.2f}"
    )
    if missed:
        out.append("")
        out.append("missed:")
        out.extend(f"- {line}" for line in missed)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    sample = commands.add_parser("sample", help="print a label sheet of sampled lines")
    sample.add_argument("corpus")
    sample.add_argument("--seed", type=int, required=True)
    sample.add_argument("--count", type=int, default=80)
    scoring = commands.add_parser("score", help="recall of a report against a filled sheet")
    scoring.add_argument("sheet")
    scoring.add_argument("report")
    scoring.add_argument("--root", required=True, help="the corpus folder the report was run on")
    args = parser.parse_args(argv)
    if args.command == "sample":
        if not os.path.isdir(args.corpus):
            raise SystemExit(f"{args.corpus}: not a folder")
        writer = csv.writer(sys.stdout, delimiter="\t", lineterminator="\n")
        writer.writerow(COLUMNS)
        for path, line, op in draw(args.corpus, args.seed, args.count):
            writer.writerow((path, line, op, "", ""))
        return 0
    print(score(args.sheet, args.report, args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
