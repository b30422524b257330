"""The ``syncguard`` command line: a click group of subcommands.

Each subcommand's options are the decorators above its function, and nowhere else: adding
an option is one ``@click.option`` there; its value reaches the ``_run_*`` function as an
attribute of ``args`` (a namespace of every parameter, named as click names them). Usage
errors exit 2, as click's do. The subcommands import what they need when they run, so
``--help`` and a lint of one file stay quick.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TextIO

import click

from syncguard._version import __version__

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from syncguard.config import Settings
    from syncguard.engine import LintResult
    from syncguard.fixes import FixRun
    from syncguard.progress import ProgressBar

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# Why a write to an open descriptor fails: full disk, quota, I/O error, closed or read-only.
_DEVICE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF, errno.EFBIG})
OUTPUT_FORMATS = ("full", "concise", "json", "sarif", "github")
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT, invoke_without_command=True)
@click.version_option(__version__, prog_name="syncguard", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Find GPU host-device synchronizations in the hot paths of PyTorch code.

    Shell completion: eval "$(_SYNCGUARD_COMPLETE=bash_source syncguard)" in ~/.bashrc
    (zsh_source for zsh, fish_source for fish).
    """
    if ctx.invoked_subcommand is None:  # a bare `syncguard` is a usage error: help, exit 2
        click.echo(ctx.get_help(), err=True)
        ctx.exit(EXIT_ERROR)


# ---------------------------------------------------------------- check


@cli.command(
    epilog="Exit codes: 0 no findings, 1 findings, 2 usage or config error, or a file that "
    "could not be analysed."
)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option(
    "--output-format",
    type=click.Choice(OUTPUT_FORMATS),
    help="full (default on a terminal), concise, json, sarif or github",
)
@click.option("--select", help="comma list of codes or prefixes to report (SG1,SG201)")
@click.option("--extend-select", help="like --select, added to the config's selection")
@click.option("--ignore", help="comma list of codes or prefixes not to report")
@click.option("--extend-ignore", help="the same as --ignore (as in ruff)")
@click.option(
    "--hot", multiple=True, metavar="PATTERN",
    help="glob over qualified names (pkg.mod.Class.method) of extra hot functions; repeatable",
)  # fmt: skip
@click.option(
    "--scope", type=click.Choice(("hot", "all")),
    help="hot (default): only hot paths; all: also elsewhere, as warnings",
)  # fmt: skip
@click.option("--config", metavar="FILE", help="pyproject.toml to read [tool.syncguard] from")
@click.option("--force-exclude", is_flag=True, help="apply exclude to paths named here too")
@click.option(
    "--require-reason", is_flag=True,
    help="a suppression without `-- reason` is a finding (SG004); also: require-reason = true",
)  # fmt: skip
@click.option(
    "--no-project", is_flag=True,
    help="lint only the named files; by default, files named inside a project (the config "
    "file's folder, else the git root) are linted with the whole project as their context",
)  # fmt: skip
@click.option("--show-settings", is_flag=True, help="print the settings, their files and why")
@click.option(
    "--explain", metavar="PATH:LINE",
    help="say why a line is or is not reported: why it is hot, where its data lives, callers",
)  # fmt: skip
@click.option("--show-files", is_flag=True, help="print the files that would be linted")
@click.option("--exit-zero", is_flag=True, help="exit 0 even with findings")
@click.option("--statistics", is_flag=True, help="count findings per rule")
@click.option("--no-color", is_flag=True, help="never use colours (also: NO_COLOR=1)")
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), metavar="N",
    help="analyse files in N processes (default: the number of CPU cores)",
)  # fmt: skip
@click.option("--no-cache", is_flag=True, help="neither read nor write the cache")
@click.option(
    "--cache-dir", metavar="DIR",
    help="cache folder (default: .syncguard_cache beside the config file, or in the current "
    "directory)",
)  # fmt: skip
@click.option(
    "--output-file", "-o", metavar="FILE", help="write the report to FILE instead of stdout"
)
@click.option("--quiet", "-q", is_flag=True, help="print the findings and nothing else")
@click.option(
    "--stdin-filename", metavar="NAME",
    help="with PATH `-`: lint the source read from stdin as the file NAME",
)  # fmt: skip
@click.option(
    "--baseline", metavar="FILE",
    help="report only findings not in FILE (written by `syncguard baseline`)",
)  # fmt: skip
@click.option(
    "--fail-on-stale", is_flag=True,
    help="with --baseline: exit 1 when baseline entries match no finding any more",
)  # fmt: skip
@click.option(
    "--add-noqa", is_flag=True,
    help="add a `# noqa: CODE` comment for every finding instead of reporting them",
)  # fmt: skip
@click.option("--reason", metavar="TEXT", help="with --add-noqa: the `-- TEXT` reason to add")
@click.option("--fix", is_flag=True, help="apply safe fixes to the files")
@click.option(
    "--unsafe-fixes", is_flag=True,
    help="with --fix or --diff: also apply unsafe fixes (they may change behaviour)",
)  # fmt: skip
@click.option(
    "--diff", is_flag=True,
    help="print the fixes as a unified diff, write nothing; exit 1 if there are any",
)  # fmt: skip
def check(**params: Any) -> int:
    """Lint files or folders (default: .) for syncs in hot paths."""
    args = SimpleNamespace(**params)
    args.paths = list(args.paths) or ["."]
    if not _working_directory_exists():
        return EXIT_ERROR
    return _run_check(args)


def _working_directory_exists() -> bool:
    """False, after saying so, when the current folder was deleted (or moved) under us."""
    try:
        os.getcwd()
    except FileNotFoundError:
        _error(".: the current folder no longer exists (deleted or moved?): cd to one that does")
        return False
    return True


def _default_jobs() -> int:
    """CPU cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def _cache_dir(args: SimpleNamespace, settings: Settings, root: Path | None = None) -> Path | None:
    """Where the cache lives for this run (beside the config file, else at the project
    ``root``, else here); None with --no-cache."""
    from syncguard.cache import CACHE_FOLDER

    if args.no_cache:
        return None
    if args.cache_dir:
        return Path(args.cache_dir)
    base = settings.source.parent if settings.source is not None else root or Path.cwd()
    return base / CACHE_FOLDER


def _error(message: str) -> int:
    sys.stderr.write(f"syncguard: error: {message}\n")
    return EXIT_ERROR


def _settings(args: SimpleNamespace) -> Settings:
    """The run's project-wide settings, the command line's options applied; raises
    ConfigError."""
    from syncguard.hierarchy import ConfigTree, overrides_of
    from syncguard.rules import all_rules

    config = Path(args.config) if args.config else None
    tree = ConfigTree(overrides_of(vars(args)), list(all_rules()), config)
    settings = tree.settings_for_paths(args.paths)
    return settings.with_overrides(require_reason=args.require_reason or None)


def _explain(args: SimpleNamespace, settings: Settings) -> int:
    """``--explain PATH:LINE``: why that line is or is not reported."""
    from syncguard.engine import build_project
    from syncguard.explain import explain

    path, _, line = args.explain.rpartition(":")
    if not path or not line.isdigit():
        return _error(f"--explain needs PATH:LINE, got {args.explain!r}")
    project, result = build_project(
        args.paths,
        settings=settings,
        cache_dir=_cache_dir(args, settings),
        jobs=_jobs(args.jobs),
        scope="hot",  # what explain asks
    )
    for problem in result.problems:
        sys.stderr.write(f"{problem}\n")
    try:
        sys.stdout.write(explain(project, path, int(line)).render())
    except LookupError as error:
        return _error(str(error))
    return EXIT_CLEAN


def _run_check(args: SimpleNamespace) -> int:
    from syncguard.config import ConfigError
    from syncguard.diagnostics import UnanalysableFile, problem_findings
    from syncguard.hierarchy import show
    from syncguard.reporting import WRITERS, display, summary, write_statistics

    try:
        settings = _settings(args)
    except ConfigError as error:
        return _error(str(error))
    if args.stdin_filename and args.paths != ["-"]:
        return _error("--stdin-filename needs the path `-` (the source is read from stdin)")
    if args.show_settings or args.show_files:
        return show(args.paths, settings, args.show_files, args.show_settings)
    if args.explain:
        return _explain(args, settings)

    if args.diff:
        return _diff(args, settings)
    fix_note = ""
    if args.fix:
        from syncguard.fixes import write_fixes

        run = _fix(args, settings)
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
    stale = _apply_baseline(args, settings, result)
    if isinstance(stale, int):
        return stale
    if args.add_noqa:
        return _add_noqa(args, settings, result)
    output_format = args.output_format or ("full" if sys.stdout.isatty() else "concise")
    # Files that could not be analysed are entries of the report too (SG000), in every format.
    entries = sorted(
        [*result.findings, *problem_findings(result.problems)], key=lambda f: f.sort_key
    )
    rules = {**result.rules, UnanalysableFile.code: UnanalysableFile}
    for_people = output_format in ("full", "concise")
    with contextlib.ExitStack() as files:
        try:
            stream = files.enter_context(_report_file(args.output_file))
        except OSError as error:
            return _error(f"{args.output_file}: cannot write the report: {error.strerror or error}")
        output = _Output(stream)
        shown = display(stream or sys.stdout, args.no_color)

        def report(out: TextIO) -> None:
            if args.statistics and for_people and shown.rich:  # a table for people
                from syncguard import terminal

                terminal.write_statistics(entries, rules, terminal.console(out, shown.color))
            elif args.statistics:  # the counts instead of the findings, as ruff does
                write_statistics(entries, rules, out, output_format in ("json", "sarif"))
            elif for_people and shown.color:
                from syncguard import terminal

                draw = terminal.write_full if output_format == "full" else terminal.write_concise
                draw(entries, rules, terminal.console(out, color=True))
            elif output_format in ("json", "sarif"):  # with the fixes' edits, kept
                from syncguard.fixedits import FixEdits
                from syncguard.reporting import write_json
                from syncguard.sarif import write_sarif

                edits = FixEdits(_cache_dir(args, settings, _root(args, settings)))
                write = write_json if output_format == "json" else write_sarif
                write(entries, rules, out, edits)
                edits.save()
            else:
                WRITERS[output_format](entries, rules, out)

        def closing(out: TextIO) -> None:
            if output_format in ("full", "concise") and not args.quiet:
                out.write(summary(result.findings, result.files, len(result.problems)) + "\n")
                if fix_note:
                    out.write(fix_note + "\n")

        output.write(report)
        # Also where people read while tools read stdout.
        output.notes([str(problem) for problem in result.problems])
        output.notes([f"syncguard: warning: {warning}" for warning in result.warnings])
        if not args.quiet:
            output.notes(
                [f"syncguard: stale baseline entry (nothing matches it): {key}" for key in stale]
            )
        output.write(closing)
    if result.problems:
        return EXIT_ERROR
    if result.findings and not args.exit_zero:
        return output.status(EXIT_FINDINGS)
    if stale and args.fail_on_stale:
        return output.status(EXIT_FINDINGS)
    return output.status(EXIT_CLEAN)


@contextlib.contextmanager
def _report_file(path: str | None) -> Iterator[TextIO | None]:
    """The ``--output-file`` opened for writing (its folder created); None without one.
    Raises OSError."""
    if not path:
        yield None
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as stream:
        yield stream


def _apply_baseline(
    args: SimpleNamespace, settings: Settings, result: LintResult
) -> list[Any] | int:
    """With ``--baseline``: drop the findings it holds from ``result``; returns the stale
    entries, or the exit code when the baseline cannot be read."""
    if not args.baseline:
        return []
    from syncguard.baseline import BaselineError, apply, load
    from syncguard.workspace import project_root

    try:
        keys = load(args.baseline)
    except BaselineError as error:
        return _error(str(error))
    applied = apply(result.findings, keys, project_root(settings) or Path.cwd(), args.paths)
    result.findings = applied.new
    return list(applied.stale)


def _add_noqa(args: SimpleNamespace, settings: Settings, result: LintResult) -> int:
    """``--add-noqa``: write suppression comments for the findings of ``result`` (in the
    linted folders, and in the project around named files)."""
    from syncguard.fixes import write_fixes
    from syncguard.noqa import add_noqa
    from syncguard.writing import linted_roots

    root = _root(args, settings)
    folders = [path for path in args.paths if path != "-"] + ([str(root)] if root else [])
    run, lines = add_noqa(result.findings, args.reason, linted_roots(folders))
    errors = write_fixes(run)
    for message in [*errors, *map(str, result.problems)]:
        sys.stderr.write(f"{message}\n")
    if not args.quiet:
        sys.stdout.write(
            f"Added suppression comments to {lines} lines in {len(run.fixed)} files.\n"
        )
    return EXIT_ERROR if errors or result.problems else EXIT_CLEAN


class _Output:
    """The command's output on stdout. A reader that stops reading (``| head``) is no
    error: the run ends as if it had read everything. Output the device refuses (a full
    disk, a closed descriptor) is an error, said once on stderr."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.failed = False
        self.stream = stream  # instead of stdout (``--output-file``)

    def write(self, produce: Callable[[TextIO], object]) -> None:
        out = self.stream or sys.stdout
        try:
            produce(out)
            out.flush()
        except BrokenPipeError:
            _discard(out)
        except OSError as error:
            _discard(out)
            if not self.failed:
                self.failed = True
                _error(f"cannot write the output: {error.strerror or error}")

    def notes(self, lines: Sequence[str]) -> None:
        """``lines`` on stderr, which may be the same closed pipe (``2>&1 | head``)."""
        try:
            for line in lines:
                sys.stderr.write(f"{line}\n")
            sys.stderr.flush()
        except BrokenPipeError:
            _discard(sys.stderr)

    def status(self, status: int) -> int:
        return EXIT_ERROR if self.failed else status


def _write_bytes(out: TextIO, data: bytes) -> None:
    """``data`` as it is on ``out`` (a diff holds each file's own encoding); decoded as
    UTF-8 where ``out`` takes only text."""
    binary = getattr(out, "buffer", None)
    if binary is None:
        out.write(data.decode("utf-8", "replace"))
        return
    out.flush()
    binary.write(data)
    binary.flush()


def _discard(stream: TextIO) -> None:
    """Send what ``stream`` still holds, and anything written later, to the null device (so
    that the flush at exit raises nothing)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's capture)
        pass


def progress_bar(output_format: str | None, no_color: bool = False) -> ProgressBar | None:
    """A progress bar on stderr when it is a terminal (not a dumb one) and the output is
    meant for people (never with json, sarif or github output, which tools read)."""
    from syncguard.progress import ProgressBar
    from syncguard.reporting import display

    if output_format not in (None, "full", "concise") or not sys.stderr.isatty():
        return None
    shown = display(sys.stderr, no_color)
    return ProgressBar(sys.stderr, color=shown.color) if shown.rich else None


def _lint(args: SimpleNamespace, settings: Settings) -> LintResult:
    """Lint with the run options (processes, cache, progress bar on a terminal): files
    named inside a project with the project as their context (:mod:`syncguard.changed`),
    ``-`` as the source on stdin."""
    from syncguard.changed import in_project, lint_changed
    from syncguard.engine import lint_files

    root = _root(args, settings)
    paths, options = args.paths, _run_options(args, settings, root)
    if paths == ["-"]:
        paths = [os.path.normpath(args.stdin_filename or "stdin.py")]
        options["sources"] = {paths[0]: sys.stdin.read()}
    with _progress(args) as progress:
        if root is not None and in_project(paths, root):
            return lint_changed(paths, root, settings=settings, progress=progress, **options)
        return lint_files(paths, settings=settings, progress=progress, **options)


def _root(args: SimpleNamespace, settings: Settings) -> Path | None:
    """The project root of a run (none with ``--no-project``)."""
    from syncguard.workspace import project_root

    return None if args.no_project else project_root(settings)


def _fix(args: SimpleNamespace, settings: Settings) -> FixRun:
    """The fixes of ``--fix`` / ``--diff``, made in memory with the run options."""
    from syncguard.fixes import fix_paths

    with _progress(args) as progress:
        return fix_paths(
            args.paths,
            settings=settings,
            unsafe=args.unsafe_fixes,
            progress=progress,
            **_run_options(args, settings),
        )


def _run_options(
    args: SimpleNamespace, settings: Settings, root: Path | None = None
) -> dict[str, Any]:
    return {"jobs": _jobs(args.jobs), "cache_dir": _cache_dir(args, settings, root)}


def _jobs(asked: int | None) -> int:
    """Worker processes: as asked, but no more than the CPU cores (each costs memory and
    more would only wait for a core)."""
    cores = _default_jobs()
    if asked is not None and asked > cores:
        noun = "core" if cores == 1 else "cores"
        sys.stderr.write(
            f"syncguard: note: --jobs {asked} is more than the {cores} CPU {noun}: using {cores}\n"
        )
    return min(asked or cores, cores)


@contextlib.contextmanager
def _progress(args: SimpleNamespace) -> Iterator[ProgressBar | None]:
    """A progress bar for the per-file phase where one is wanted, erased afterwards."""
    progress = progress_bar(args.output_format, args.no_color)
    try:
        yield progress
    finally:
        if progress is not None:
            progress.close()


def _diff(args: SimpleNamespace, settings: Settings) -> int:
    """``--diff``: print what the fixes would change; exit 1 when they would change anything."""
    from syncguard.fixes import unified_diff

    run = _fix(args, settings)
    output = _Output()
    output.write(lambda out: _write_bytes(out, unified_diff(run)))
    output.notes([str(problem) for problem in run.result.problems])
    if run.fixed:
        return output.status(EXIT_FINDINGS)
    return EXIT_ERROR if run.result.problems else output.status(EXIT_CLEAN)


# ---------------------------------------------------------------- baseline


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option(
    "--output", "-o", "baseline_file", required=True, metavar="FILE",
    help="the baseline file to write (JSON; commit it, then `check --baseline FILE`)",
)  # fmt: skip
def baseline(**params: Any) -> int:
    """Record the current findings of PATHS (default: .) so that `syncguard check
    --baseline FILE` reports only new ones: adopt syncguard on a tree with findings."""
    from syncguard.baseline import dumps, finding_keys
    from syncguard.config import ConfigError
    from syncguard.workspace import project_root

    args = SimpleNamespace(**params, output_format=None, stdin_filename=None, no_color=False)
    args.paths = list(args.paths) or ["."]
    try:
        settings = _settings(args)
    except ConfigError as error:
        return _error(str(error))
    result = _lint(args, settings)
    for problem in result.problems:
        sys.stderr.write(f"{problem}\n")
    keys = finding_keys(result.findings, project_root(settings) or Path.cwd())
    try:
        Path(args.baseline_file).write_text(dumps(keys), encoding="utf-8")
    except OSError as error:
        return _error(f"{args.baseline_file}: cannot write the baseline: {error.strerror or error}")
    sys.stdout.write(f"Wrote {len(keys)} findings to {args.baseline_file}.\n")
    return EXIT_ERROR if result.problems else EXIT_CLEAN


# What decides a baseline's findings: the options of `check` that choose what is analysed.
_ANALYSIS_OPTIONS = frozenset(
    {"select", "extend_select", "ignore", "extend_ignore", "hot", "scope", "config",
     "force_exclude", "require_reason", "no_project", "jobs", "no_cache", "cache_dir"}
)  # fmt: skip
baseline.params[1:1] = [param for param in check.params if param.name in _ANALYSIS_OPTIONS]


# ---------------------------------------------------------------- rule


def _complete_rule_code(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    from syncguard.rules import all_rules

    return [
        CompletionItem(code, help=rule.name)
        for code, rule in all_rules().items()
        if code.startswith(incomplete.upper())
    ]


@cli.command()
@click.argument("code", required=False, shell_complete=_complete_rule_code)
@click.option("--all", "show_all", is_flag=True, help="list every rule")
@click.option("--output-format", type=click.Choice(("text", "json")), default="text")
def rule(**params: Any) -> int:
    """Explain a rule: what it flags, why it syncs, its measured cost and its fix
    (syncguard rule SG101), or list them all."""
    return _run_rule(SimpleNamespace(**params))


def _run_rule(args: SimpleNamespace) -> int:
    from syncguard.reporting import display
    from syncguard.ruledoc import listing_markdown, rule_listing, rule_markdown, rule_text
    from syncguard.rules import all_rules

    rules = all_rules()
    code = (args.code or "").upper()
    if code and not args.show_all and code not in rules:
        return _error(f"unknown rule {args.code!r}; `syncguard rule --all` lists them")
    shown = display(sys.stdout)
    output = _Output()
    if args.output_format == "text" and shown.rich:  # a terminal: rendered Markdown
        from syncguard import terminal

        text = rule_markdown(rules[code]) if code and not args.show_all else listing_markdown(rules)
        output.write(lambda out: terminal.write_markdown(text, terminal.console(out, shown.color)))
    elif args.show_all or not code:
        output.write(lambda out: out.write(rule_listing(rules, args.output_format)))
    else:
        output.write(lambda out: out.write(rule_text(rules[code], args.output_format)))
    return output.status(EXIT_CLEAN)


# ---------------------------------------------------------------- verify


@cli.command()
@click.argument("target", metavar="MODULE:CALLABLE")
@click.option(
    "--args-factory", metavar="MODULE:CALLABLE",
    help="called first (unaudited); returns the target's arguments: a tuple, a dict or None",
)  # fmt: skip
@click.option(
    "--path", "paths", multiple=True, metavar="FILE",
    help="also lint FILE (repeatable); the target's module is always linted",
)  # fmt: skip
@click.option("--scope", type=click.Choice(("all", "hot")), default="all", help="linter scope")
@click.option(
    "--simulate", type=click.Choice(("auto", "yes", "no")), default="auto",
    help="simulation: auto (when CUDA is unavailable), yes, or no",
)  # fmt: skip
@click.option("--format", type=click.Choice(("text", "json")), default="text")
def verify(**params: Any) -> int:
    """Run MODULE:CALLABLE under the runtime sync audit and cross-check the linter: exit 0
    when every runtime sync in the linted files is a finding, 1 when the linter missed one,
    2 when the target cannot be loaded or raises."""
    from syncguard.runtime.verify import run_verify

    if not _working_directory_exists():
        return EXIT_ERROR
    return run_verify(verify_arguments(params))


def verify_arguments(params: dict[str, Any]) -> SimpleNamespace:
    """The namespace ``run_verify`` reads, from the parameters of ``syncguard verify``."""
    return SimpleNamespace(**{**params, "paths": list(params.get("paths", ()))})


# ---------------------------------------------------------------- server


@cli.command()
def server() -> int:
    """Run the language server on stdin/stdout, for editors: diagnostics on open and save,
    quick fixes, suppressions and hover docs (see docs/editors.md)."""
    try:
        from syncguard.server import serve
    except ImportError as error:
        if (error.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        return _error("`syncguard server` needs pygls: pip install 'syncguard[server]'")
    return serve()


# ---------------------------------------------------------------- entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    if sys.stdout is None:  # started with descriptor 1 closed
        if sys.stderr is not None:
            _error("standard output is closed: nowhere to write the results")
        return EXIT_ERROR
    try:
        code = cli.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name="syncguard",
            standalone_mode=False,
        )
    except click.ClickException as error:  # usage errors: exit 2
        error.show()
        return error.exit_code
    except (click.Abort, KeyboardInterrupt):
        sys.stderr.write("syncguard: interrupted\n")
        return 130
    except BrokenPipeError:  # help or version text to a reader that stopped reading
        _discard(sys.stdout)
        return EXIT_CLEAN
    except OSError as error:
        if error.filename is not None or error.errno not in _DEVICE_ERRORS:
            return _error(f"internal error: {type(error).__name__}: {error} (please report this)")
        _discard(sys.stdout)  # help or version text that the device refused
        return _error(f"cannot write the output: {error.strerror or error}")
    except Exception as error:
        return _error(f"internal error: {type(error).__name__}: {error} (please report this)")
    return code if isinstance(code, int) else EXIT_CLEAN
