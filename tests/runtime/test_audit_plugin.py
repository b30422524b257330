"""The pytest plugin, run in inner pytest sessions (on CPU through simulation)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

pytest_plugins = ["pytester"]

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

TESTS = f"""
import pytest
import torch

def sync():
    return torch.ones(3, device="{DEVICE}").sum().item()

@pytest.mark.no_sync
def test_clean():
    torch.ones(3, device="{DEVICE}") * 2

@pytest.mark.no_sync
def test_syncs():
    sync()
    sync()

@pytest.mark.no_sync(allow=["*.sync"])
def test_allowed():
    sync()

@pytest.mark.no_sync
def test_fails_on_its_own():
    assert 1 == 2

def test_fixture(sync_audit):
    sync()
    assert sync_audit.count == 1
    assert sync_audit.events[0].function == "sync"

def test_unmarked():
    sync()
"""


def test_marker_fixture_and_plain_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_syncs*",
            "no_sync test synced:",
            "syncguard sync audit (record): 2 syncs at 1 site, 0 allowed",
            "*count*kind*op*site*function*",
            "*2*scalar-conversion*.item()*test_inner.py:5*sync",
        ]
    )
    result.stdout.fnmatch_lines(["*test_fails_on_its_own*", "*assert 1 == 2*"])
    assert "syncguard audit" not in result.stdout.str()


def test_bad_marker_options_fail_the_test_clearly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.no_sync(mode="raise")
def test_bad():
    pass

@pytest.mark.no_sync(allow=["x.py:abc"])
def test_bad_allow():
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*@pytest.mark.no_sync takes keyword options allow, first_only*; got mode",
            "*@pytest.mark.no_sync: sync_audit(allow=...): 'x.py:abc' has no valid line number*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_audit_option_prints_a_session_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--syncguard-audit")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*syncguard audit*",
            "5 host-device sync(s) in 4 test(s) (record only)",
            "detection: *",
            "*count*kind*op*site*function*",
            "*5*scalar-conversion*.item()*test_inner.py:5*sync",
        ]
    )


def test_the_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.no_sync*"])


def test_importing_the_runtime_and_loading_the_plugin_import_no_heavy_package() -> None:
    code = (
        "import sys\n"
        "heavy = ['torch', 'rich', 'click', 'libcst', 'pygls']\n"
        "import syncguard.runtime, syncguard.runtime.pytest_plugin\n"
        "loaded = [name for name in heavy if name in sys.modules]\n"
        "assert not loaded, loaded\n"
        "import pytest\n"
        "pytest.main(['--co', '-q', '-p', 'no:cacheprovider', '--rootdir', '.', 'no_such_dir'])\n"
        "assert 'syncguard.runtime.pytest_plugin' in sys.modules\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def _summary(output: str) -> list[str]:
    """The session table's lines, from its section header to the end of the table."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "syncguard audit" in line)
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("=") or not line.strip():
            break
        table.append(line)
    return table


def test_the_session_table_is_the_same_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=TESTS)
    alone = pytester.runpytest("-p", "no:cacheprovider", "--syncguard-audit")
    spread = pytester.runpytest("-p", "no:cacheprovider", "--syncguard-audit", "-n", "2")
    spread.assert_outcomes(passed=4, failed=2)
    assert "2 workers [6 items]" in spread.stdout.str()
    table = _summary(alone.stdout.str())
    assert table[0] == "5 host-device sync(s) in 4 test(s) (record only)"
    assert _summary(spread.stdout.str()) == table


def test_the_session_table_is_a_rich_table_on_a_colour_terminal(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_inner=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--syncguard-audit", "--color=yes")
    result.stdout.fnmatch_lines(["*syncguard audit*", "*┃*count*┃*kind*┃*op*┃*site*"])
    result.stdout.fnmatch_lines(["*│*5*│*scalar-conversion*│*.item()*│*test_inner.py:5*"])
