"""The facts cache: encoding, robustness against bad data, invalidation, its folder."""

from __future__ import annotations

import marshal
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from syncguard import cache as cache_module
from syncguard import engine as engine_module
from syncguard.cache import Cache, codec_is_current, decode_facts, encode_facts
from syncguard.discovery import discover, module_name
from syncguard.engine import LintResult, analyze_path, lint_files
from syncguard.facts import FileError, FileFacts
from syncguard.rules import all_rules

HOT = "import torch\n\n@torch.compile\ndef step(x):\n    return x.item()\n"
HELPER = (
    "import torch\nfrom pkg.util import read\n\n@torch.compile\ndef step(x):\n    return read(x)\n"
)
UTIL = "def read(x):\n    return x.tolist()\n"


def codes(result: LintResult) -> list[tuple[str, int, str]]:
    return [(f.code, f.span.line, f.path) for f in result.findings]


def packs(folder: Path, kind: str = "facts") -> list[Path]:
    found = sorted(folder.glob(f"{kind}-*.pack"))
    assert found
    return found


@pytest.fixture
def project(package_tree: Callable[[dict[str, str]], Path]) -> Path:
    return package_tree({"hot": HOT, "model": HELPER, "util": UTIL})


def test_the_codec_knows_every_field_of_the_facts() -> None:
    assert codec_is_current(), "a fact class gained a field: teach syncguard/codec.py about it"


def test_facts_survive_encoding_unchanged() -> None:
    rules = [rule_class() for rule_class in all_rules().values()]
    files, _ = discover([str(FIXTURES)])
    checked = 0
    for path in files:
        facts, _ = analyze_path(path, rules)
        assert decode_facts(encode_facts(facts)) == facts, path
        checked += isinstance(facts, FileFacts) and any(
            function.sites or function.calls for function in facts.functions.values()
        )
    assert checked > 10
    error = FileError(3, 7, "syntax error: invalid syntax")
    assert decode_facts(encode_facts(error)) == error


def test_folder_is_tagged_and_ignored_by_git(project: Path) -> None:
    folder = project / ".syncguard_cache"
    lint_files(["pkg"], cache_dir=folder)
    assert (
        (folder / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    assert (folder / ".gitignore").read_text() == "*\n"
    assert all(found.stat().st_size > 0 for found in packs(folder))
    assert not [p for p in folder.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]),  # one byte flipped
        lambda data: b"not a syncguard cache at all",
        lambda data: b"",
    ],
    ids=["truncated", "flipped", "foreign", "empty"],
)
def test_a_damaged_pack_is_ignored_and_rebuilt(
    project: Path, damage: Callable[[bytes], bytes]
) -> None:
    folder = project / "cache"
    expected = codes(lint_files(["pkg"], cache_dir=folder))
    assert expected
    for target in [*packs(folder), *packs(folder, "runs"), *packs(folder, "calls")]:
        target.write_bytes(damage(target.read_bytes()))
    result = lint_files(["pkg"], cache_dir=folder)
    assert codes(result) == expected and not result.warnings
    rebuilt = Cache(folder)
    assert rebuilt.entry(str(project / "pkg" / "hot.py"), b"x") is None  # wrong key
    for name in ("__init__.py", "hot.py", "model.py", "util.py"):  # every file is back
        path = project / "pkg" / name
        key = cache_module.content_key(path.read_bytes(), *module_name(f"pkg/{name}"))
        assert rebuilt.entry(str(path), key) is not None, name


def test_foreign_entries_in_a_valid_pack_are_recomputed(project: Path) -> None:
    folder = project / "cache"
    expected = codes(lint_files(["pkg"], cache_dir=folder))
    shards: dict[Path, dict[object, object]] = {target: {42: "junk"} for target in packs(folder)}
    stamp = packs(folder)[0].name.split("-")[1]
    for name in ("__init__.py", "hot.py", "model.py", "util.py"):
        path = str(project / "pkg" / name)
        key = cache_module.content_key(Path(path).read_bytes(), *module_name(f"pkg/{name}"))
        target = folder / f"facts-{stamp}-{cache_module.shard_of(path):02d}.pack"
        entry = (key, False, False, marshal.dumps(("facts", "not", "enough", "fields")))
        shards.setdefault(target, {})[path] = entry if name != "__init__.py" else "no entry"
    for target, entries in shards.items():
        cache_module._write_pack(target, entries)  # valid packs holding nonsense
    for target in packs(folder, "runs"):
        target.unlink()  # so that the project phase runs on those facts
    result = lint_files(["pkg"], cache_dir=folder)
    assert codes(result) == expected and not result.warnings
    assert codes(lint_files(["pkg"], cache_dir=folder)) == expected


def test_nonsense_in_a_valid_calls_pack_changes_no_finding(project: Path) -> None:
    folder = project / "cache"
    expected = codes(lint_files(["pkg"], cache_dir=folder))
    (project / "pkg" / "hot.py").write_text(HOT + "\n# edited\n")  # so the project phase runs
    for target in packs(folder, "calls"):
        entries = cache_module._read_pack(target)
        assert entries
        for path, (key, resolved, roots) in entries.items():
            nonsense = tuple((name, (99,) * len(at), targets) for name, at, targets in resolved)
            entries[path] = (key, nonsense, roots) if "model" in path else "junk"
        cache_module._write_pack(target, entries)
    result = lint_files(["pkg"], cache_dir=folder)
    assert codes(result) == expected and not result.warnings
    assert codes(lint_files(["pkg"], cache_dir=folder)) == expected


def test_an_unwritable_cache_gives_one_warning_and_the_same_findings(project: Path) -> None:
    blocker = project / "not-a-folder"
    blocker.write_text("a file where the cache folder should go")
    expected = codes(lint_files(["pkg"]))
    result = lint_files(["pkg"], cache_dir=blocker / "cache")
    assert codes(result) == expected and not result.problems
    assert len(result.warnings) == 1
    assert "cannot write the cache" in result.warnings[0] and "--no-cache" in result.warnings[0]

    cli = run_cli("check", "pkg", "--cache-dir", str(blocker / "cache"), cwd=project)
    assert cli.returncode == 1  # findings, not an error
    assert cli.stderr.count("syncguard: warning: cannot write the cache") == 1
    assert "Traceback" not in cli.stderr


def test_edits_anywhere_reach_the_findings(project: Path) -> None:
    folder = project / "cache"
    first = codes(lint_files(["pkg"], cache_dir=folder))
    assert ("SG102", 6, "pkg/model.py") in first  # the helper's tolist, reported at the call

    (project / "pkg" / "util.py").write_text("def read(x):\n    return x\n")
    second = codes(lint_files(["pkg"], cache_dir=folder))
    assert second == codes(lint_files(["pkg"])) and ("SG102", 6, "pkg/model.py") not in second

    # The same bytes under another module name are other facts (relative imports differ).
    (project / "pkg" / "util.py").rename(project / "pkg" / "tools.py")
    third = codes(lint_files(["pkg"], cache_dir=folder))
    assert third == codes(lint_files(["pkg"]))


def test_run_settings_are_part_of_the_cached_result(project: Path) -> None:
    folder = project / "cache"
    (project / "pkg" / "cold.py").write_text("def later(x):\n    return x.item()\n")
    for scope in ("hot", "all", "hot"):
        assert codes(lint_files(["pkg"], cache_dir=folder, scope=scope)) == codes(
            lint_files(["pkg"], scope=scope)
        )


def test_packs_of_old_versions_are_cleaned_up(project: Path) -> None:
    folder = project / "cache"
    folder.mkdir()
    old = time.time() - 3600
    for index, stamp in enumerate(("0000000000000001", "0000000000000002", "0000000000000003")):
        for name in (f"facts-{stamp}-00.pack", f"facts-{stamp}-07.pack", f"runs-{stamp}.pack"):
            stale = folder / name
            stale.write_bytes(b"old")
            os.utime(stale, (old + index, old + index))
    lint_files(["pkg"], cache_dir=folder)
    left = sorted(p.name for p in folder.glob("*.pack"))
    assert not any("0000000000000001" in name for name in left)
    assert len({Path(name).stem.split("-")[1] for name in left}) == 3
    assert "facts-0000000000000002-07.pack" in left


def test_cli_cache_folder_options(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.syncguard]\nscope = 'hot'\n")
    (project / "pkg" / "sub").mkdir()
    assert run_cli("check", "..", cwd=project / "pkg" / "sub").returncode == 1
    assert (project / ".syncguard_cache" / "CACHEDIR.TAG").is_file()  # beside the config

    elsewhere = project / "elsewhere"
    assert run_cli("check", "pkg", "--cache-dir", str(elsewhere), cwd=project).returncode == 1
    assert packs(elsewhere)

    (project / "pyproject.toml").unlink()
    clean = project.parent / "clean"
    clean.mkdir()
    (clean / "a.py").write_text(HOT)
    assert run_cli("check", ".", "--no-cache", cwd=clean).returncode == 1
    assert not (clean / ".syncguard_cache").exists()
    assert run_cli("check", ".", cwd=clean).returncode == 1
    assert (clean / ".syncguard_cache").is_dir()  # no config: the current directory


def test_files_whose_stamp_is_unchanged_are_not_read_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their stored content key is trusted; an edited file is read and hashed anew."""
    monkeypatch.setattr(cache_module, "_RACY_NS", 0)  # files written just now are trusted
    folder = project / "cache"
    lint_files(["pkg"], cache_dir=folder)
    hashed: list[str] = []
    original = engine_module.content_key

    def spy(data: bytes, module: str, is_package: bool) -> bytes:
        hashed.append(module)
        return original(data, module, is_package)

    monkeypatch.setattr(engine_module, "content_key", spy)
    assert codes(lint_files(["pkg"], cache_dir=folder)) == codes(lint_files(["pkg"]))
    assert hashed == []
    (project / "pkg" / "util.py").write_text(UTIL.replace("tolist", "item"))
    warm = lint_files(["pkg"], cache_dir=folder)
    assert hashed == ["pkg.util"]
    assert codes(warm) == codes(lint_files(["pkg"])) != []


def test_a_file_rewritten_at_once_with_the_same_size_is_read_again(project: Path) -> None:
    """Size and times may not tell two writes in one clock tick apart: files changed
    just before a run get no stamp, so the next run compares their content."""
    folder = project / "cache"
    target = project / "pkg" / "util.py"
    target.write_text(UTIL.replace("tolist()", "abs()   "))  # no sync
    before = os.stat(target)
    assert lint_files(["pkg"], cache_dir=folder).findings == lint_files(["pkg"]).findings
    target.write_text(UTIL.replace("tolist()", "item()  "))  # a sync, same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    assert os.stat(target).st_size == before.st_size
    warm = lint_files(["pkg"], cache_dir=folder)
    assert codes(warm) == codes(lint_files(["pkg"]))
    assert any(path.endswith("model.py") for _, _, path in codes(warm))


def test_stamps_name_the_module_a_file_was_read_as(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose bytes and times stay the same while its module name changes (a
    package marker removed) is not served the facts of its former name."""
    monkeypatch.setattr(cache_module, "_RACY_NS", 0)
    folder = project / "cache"
    lint_files(["pkg"], cache_dir=folder)
    (project / "pkg" / "__init__.py").unlink()
    warm = lint_files(["pkg"], cache_dir=folder)
    assert codes(warm) == codes(lint_files(["pkg"]))
    assert outcome_modules(folder) >= {"hot", "model", "util"}


def outcome_modules(folder: Path) -> set[str]:
    """The module names of the facts stored in the cache at ``folder``."""
    found = set()
    for pack in packs(folder):
        for entry in cache_module._read_pack(pack).values():
            facts = decode_facts(entry[3])
            if isinstance(facts, FileFacts):
                found.add(facts.module)
    return found


def test_a_run_whose_findings_are_kept_reads_only_the_index(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unchanged files and a kept result: no facts pack is read, same findings."""
    monkeypatch.setattr(cache_module, "_RACY_NS", 0)  # files written just now are trusted
    folder = project / "cache"
    expected = codes(lint_files(["pkg"], cache_dir=folder))
    read: list[str] = []
    original = cache_module._read_pack

    def spy(path: Path) -> dict:
        read.append(path.name.split("-")[0])
        return original(path)

    monkeypatch.setattr(cache_module, "_read_pack", spy)
    assert codes(lint_files(["pkg"], cache_dir=folder)) == expected != []
    assert "facts" not in read and "index" in read
    read.clear()
    lint_files(["pkg"], cache_dir=folder, scope="all")  # another result: facts are read
    assert "facts" in read


@pytest.mark.parametrize("scope", ["hot", "all"])
def test_facts_the_index_names_but_the_packs_lost_are_worked_out_again(
    project: Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    """A run stopped between writing the facts packs and the index (here: the packs
    are gone) changes no finding, kept result or not."""
    monkeypatch.setattr(cache_module, "_RACY_NS", 0)
    folder = project / "cache"
    expected = codes(lint_files(["pkg"], cache_dir=folder, scope=scope))
    for pack in packs(folder):
        pack.unlink()
    (project / "pkg" / "util.py").write_text(UTIL.replace("tolist", "item"))
    edited = codes(lint_files(["pkg"], scope=scope))
    assert codes(lint_files(["pkg"], cache_dir=folder, scope=scope)) == edited != expected
    for pack in packs(folder):
        pack.unlink()
    assert codes(lint_files(["pkg"], cache_dir=folder, scope="all")) == codes(
        lint_files(["pkg"], scope="all")
    )
    assert codes(lint_files(["pkg"], cache_dir=folder, scope=scope)) == edited
