"""Torch calls real engines make that torch's OpInfo database does not sweep (issue 14).

Walks the Python files of the given trees, resolves ``import torch`` / ``import
torch.nn.functional as F`` / ``from torch import nn`` aliases, counts every call of a
``torch.*`` function (``torch.ops.aten.*`` spellings included), and prints those no OpInfo
entry (``op_db``, the foreach databases) covers by name or alias, most used first, with
the number of trees that use them. Tensor methods are too ambiguous to count by name and
are left out. The sweep's extra cases (``benchmarks/op_sweep.py``) were chosen from this
list. Usage::

    python benchmarks/corpus_torch_calls.py /work/corpus/* [--top 80]
"""

from __future__ import annotations

import argparse
import ast
import collections
import os
import sys

from syncguard.conditions import dotted_name


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the torch module or object it stands for."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" or alias.name.startswith("torch."):
                    local = alias.asname or alias.name.split(".")[0]
                    found[local] = alias.name if alias.asname else local
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and (node.module == "torch" or node.module.startswith("torch."))
        ):
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def torch_calls(path: str) -> collections.Counter[str]:
    """Qualified ``torch.*`` names called in the file at ``path``."""
    counts: collections.Counter[str] = collections.Counter()
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (SyntaxError, ValueError, OSError):
        return counts
    aliases = _aliases(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = dotted_name(node.func)
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        if head in aliases:
            counts[f"{aliases[head]}.{rest}" if rest else aliases[head]] += 1
    return counts


def covered_names() -> set[str]:
    """``torch.*`` spellings of every OpInfo entry and alias."""
    from torch.testing._internal import common_methods_invocations as cmi

    names = set()
    databases = [name for name in dir(cmi) if name.endswith("_op_db") or name == "op_db"]
    for database in databases:
        for op in getattr(cmi, database):
            for name in (op.name, *(alias.name for alias in op.aliases)):
                names.add(f"torch.{name}")
                names.add(f"torch.Tensor.{name}")
            names.add(f"torch.ops.aten.{op.name.split('.')[-1]}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--top", type=int, default=80)
    args = parser.parse_args(argv)
    total: collections.Counter[str] = collections.Counter()
    trees: dict[str, set[str]] = collections.defaultdict(set)
    for tree in args.trees:
        for root, _dirs, files in os.walk(tree):
            for name in files:
                if name.endswith(".py"):
                    for call, count in torch_calls(os.path.join(root, name)).items():
                        total[call] += count
                        trees[call].add(os.path.basename(os.path.normpath(tree)))
    covered = covered_names()
    skipped = ("torch.cuda.", "torch.distributed.", "torch.testing.", "torch.library.",
               "torch.nn.init.", "torch.jit.", "torch.compile", "torch._dynamo.", "torch.fx.",
               "torch.utils.", "torch.backends.", "torch.nn.Module", "torch.no_grad",
               "torch.inference_mode", "torch.manual_seed", "torch.device", "torch.dtype",
               "torch.get_", "torch.set_", "torch.is_", "torch.Size", "torch.finfo",
               "torch.iinfo", "torch.save", "torch.load", "torch.autograd.",
               "torch.profiler.", "torch.Generator", "torch._C.", "torch.export.")  # fmt: skip
    print(f"{'calls':>6} {'trees':>5}  torch call not covered by OpInfo")
    shown = 0
    for call, count in total.most_common():
        if call in covered or call.startswith(skipped) or call.rsplit(".", 1)[-1][:1].isupper():
            continue
        print(f"{count:>6} {len(trees[call]):>5}  {call}")
        shown += 1
        if shown >= args.top:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
