"""The package's layout: no import circles between its modules."""

from __future__ import annotations

import ast

from conftest import REPO

FOLDERS = {"syncguard": REPO / "syncguard", "syncguard.rules": REPO / "rules"}


def module_imports() -> dict[str, set[str]]:
    """Module -> the package modules it imports at module level (``TYPE_CHECKING``
    blocks included; imports inside functions, which load lazily, left out)."""
    modules = {
        f"{package}.{path.stem}" if path.stem != "__init__" else package: path
        for package, folder in FOLDERS.items()
        for path in sorted(folder.glob("*.py"))
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        statements = list(tree.body)
        while statements:
            statement = statements.pop()
            if isinstance(statement, ast.If):  # if TYPE_CHECKING: ...
                statements.extend(statement.body)
            elif isinstance(statement, ast.ImportFrom) and statement.module:
                targets = [statement.module] + [
                    f"{statement.module}.{alias.name}" for alias in statement.names
                ]
                found.update(target for target in targets if target in modules)
            elif isinstance(statement, ast.Import):
                found.update(alias.name for alias in statement.names if alias.name in modules)
        found.discard(name)
        graph[name] = found
    return graph


def test_no_module_imports_itself_through_others() -> None:
    graph = module_imports()
    assert "syncguard.analysis" in graph and "syncguard.project" in graph
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                cycles.append([*path[path.index(imported) :], imported])
            elif imported not in state:
                visit(imported, [*path, imported])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []
