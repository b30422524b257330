"""The rule catalog: one module per rule, discovered at run time.

Adding a rule is adding a module here (plus fixtures): a :class:`syncguard.rule.Rule`
subclass with a unique ``SG###`` code.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from syncguard.rule import Rule


@cache
def all_rules() -> dict[str, type[Rule]]:
    """Every rule class, by code, in code order."""
    found: dict[str, type[Rule]] = {}
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue  # helpers shared by rules (_ops, _suppression), not rules
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Rule)
                and value is not Rule
                and value.__module__ == module.__name__
            ):
                if value.code in found:
                    raise RuntimeError(f"duplicate rule code {value.code} in {module.__name__}")
                found[value.code] = value
    return dict(sorted(found.items()))
