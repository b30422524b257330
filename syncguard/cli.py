"""The ``syncguard`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from syncguard._version import __version__

if TYPE_CHECKING:
    from syncguard.config import Settings
    from syncguard.engine import LintResult
    from syncguard.progress import ProgressBar

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _parser(with_verify: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="syncguard",
        description="Find GPU host-device synchronizations in the hot paths of PyTorch code.",
    )
    parser.add_argument("--version", action="version", version=f"syncguard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="lint files or folders (default: .)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    check.add_argument(
        "--output-format",
        choices=("full", "concise", "json", "sarif", "github"),
        help="full (default on a terminal), concise, json, sarif or github",
    )
    check.add_argument("--select", help="comma list of codes or prefixes to report (SG1,SG201)")
    check.add_argument("--ignore", help="comma list of codes or prefixes not to report")
    check.add_argument(
        "--hot", action="append", default=[], metavar="PATTERN",
        help="glob over qualified names (pkg.mod.Class.method) of extra hot functions; repeatable",
    )  # fmt: skip
    check.add_argument(
        "--scope", choices=("hot", "all"),
        help="hot (default): only hot paths; all: also elsewhere, as warnings",
    )  # fmt: skip
    check.add_argument(
        "--config", metavar="FILE", help="pyproject.toml to read [tool.syncguard] from"
    )
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument("--statistics", action="store_true", help="count findings per rule")
    check.add_argument("--no-color", action="store_true", help="never use ANSI colours")
    check.add_argument(
        "--jobs", "-j", type=_job_count, metavar="N",
        help="analyse files in N processes (default: the number of CPU cores)",
    )  # fmt: skip
    check.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    check.add_argument(
        "--cache-dir", metavar="DIR",
        help="cache folder (default: .syncguard_cache beside the config file, or in the "
        "current directory)",
    )  # fmt: skip
    check.add_argument("--fix", action="store_true", help="apply safe fixes to the files")
    check.add_argument(
        "--unsafe-fixes", action="store_true",
        help="with --fix or --diff: also apply unsafe fixes (they may change behaviour)",
    )  # fmt: skip
    check.add_argument(
        "--diff", action="store_true",
        help="print the fixes as a unified diff, write nothing; exit 1 if there are any",
    )  # fmt: skip

    rule = commands.add_parser("rule", help="explain a rule (syncguard rule SG101)")
    rule.add_argument("code", nargs="?", help="rule code, e.g. SG101")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")

    verify = commands.add_parser(
        "verify", help="run a callable under the runtime audit and cross-check the linter"
    )
    if with_verify:  # its options live in syncguard.runtime.verify: import it only when used
        from syncguard.runtime.verify import add_verify_arguments

        add_verify_arguments(verify)
    return parser


def _job_count(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes >= 1, got {text!r}")
    return jobs


def _default_jobs() -> int:
    """CPU cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def _cache_dir(args: argparse.Namespace, settings: Settings) -> Path | None:
    """Where the cache lives for this run; None with --no-cache."""
    from syncguard.cache import CACHE_FOLDER

    if args.no_cache:
        return None
    if args.cache_dir:
        return Path(args.cache_dir)
    base = settings.source.parent if settings.source is not None else Path.cwd()
    return base / CACHE_FOLDER


def _error(message: str) -> int:
    sys.stderr.write(f"syncguard: error: {message}\n")
    return EXIT_ERROR


def _check(args: argparse.Namespace) -> int:
    from syncguard.config import ConfigError, check_selectors, find_config, load, parse_codes
    from syncguard.reporting import WRITERS, summary, write_statistics
    from syncguard.rules import all_rules

    try:
        if args.config:
            config_path: Path | None = Path(args.config)
        else:
            config_path = find_config(Path.cwd())
        settings = load(config_path)
        overrides = {
            "select": parse_codes(args.select, "--select") if args.select else None,
            "ignore": parse_codes(args.ignore, "--ignore") if args.ignore else None,
            "scope": args.scope,
            "hot_functions": (*settings.hot_functions, *args.hot) if args.hot else None,
        }
        settings = settings.with_overrides(**overrides)
        check_selectors(settings, list(all_rules()))
    except ConfigError as error:
        return _error(str(error))

    if args.diff:
        return _diff(args, settings)
    fix_note = ""
    if args.fix:
        from syncguard.fixes import fix_paths, write_fixes

        run = fix_paths(args.paths, settings=settings, unsafe=args.unsafe_fixes)
        write_errors = write_fixes(run)
        for message in write_errors:
            sys.stderr.write(f"{message}\n")
        if write_errors:
            return EXIT_ERROR
        result = run.result
        fix_note = (
            f"Applied {run.applied} fixes to {len(run.fixed)} files."
            if run.applied
            else "No fixes applied."
        )
    else:
        result = _lint(args, settings)
    output_format = args.output_format or ("full" if sys.stdout.isatty() else "concise")
    color = sys.stdout.isatty() and not args.no_color and "NO_COLOR" not in os.environ
    WRITERS[output_format](result.findings, result.rules, sys.stdout, color)
    if args.statistics:
        write_statistics(result.findings, result.rules, sys.stdout)
    for problem in result.problems:
        sys.stderr.write(f"{problem}\n")
    for warning in result.warnings:
        sys.stderr.write(f"syncguard: warning: {warning}\n")
    if output_format in ("full", "concise"):
        sys.stdout.write(summary(result.findings, result.files) + "\n")
        if fix_note:
            sys.stdout.write(fix_note + "\n")
    if result.problems:
        return EXIT_ERROR
    if result.findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def progress_bar(output_format: str | None) -> ProgressBar | None:
    """A progress bar on stderr when it is a terminal and the output is meant for people
    (never with json, sarif or github output, which tools read)."""
    from syncguard.progress import ProgressBar

    if output_format not in (None, "full", "concise") or not sys.stderr.isatty():
        return None
    return ProgressBar(sys.stderr)


def _lint(args: argparse.Namespace, settings: Settings) -> LintResult:
    """Lint with the run options (processes, cache, progress bar on a terminal)."""
    from syncguard.engine import lint_files

    progress = progress_bar(args.output_format)
    try:
        return lint_files(
            args.paths,
            settings=settings,
            jobs=args.jobs or _default_jobs(),
            cache_dir=_cache_dir(args, settings),
            progress=progress,
        )
    finally:
        if progress is not None:
            progress.close()


def _diff(args: argparse.Namespace, settings: Settings) -> int:
    """``--diff``: print what the fixes would change; exit 1 when they would change anything."""
    from syncguard.fixes import fix_paths, unified_diff

    run = fix_paths(args.paths, settings=settings, unsafe=args.unsafe_fixes)
    sys.stdout.write(unified_diff(run.original, run.fixed))
    for problem in run.result.problems:
        sys.stderr.write(f"{problem}\n")
    if run.fixed:
        return EXIT_FINDINGS
    return EXIT_ERROR if run.result.problems else EXIT_CLEAN


def _rule(args: argparse.Namespace) -> int:
    from syncguard.ruledoc import rule_listing, rule_text
    from syncguard.rules import all_rules

    rules = all_rules()
    if args.all or not args.code:
        sys.stdout.write(rule_listing(rules, args.output_format))
        return EXIT_CLEAN
    code = args.code.upper()
    if code not in rules:
        return _error(f"unknown rule {args.code!r}; `syncguard rule --all` lists them")
    sys.stdout.write(rule_text(rules[code], args.output_format))
    return EXIT_CLEAN


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(with_verify=bool(arguments) and arguments[0] == "verify")
    args = parser.parse_args(arguments)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args)
        if args.command == "verify":
            from syncguard.runtime.verify import run_verify

            return run_verify(args)
        parser.print_help()
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("syncguard: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN
    except Exception as error:
        return _error(f"internal error: {type(error).__name__}: {error} (please report this)")
