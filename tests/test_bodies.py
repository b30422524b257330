"""What a body shows at a glance (syncguard.bodies), each from one walk of it."""

from __future__ import annotations

import ast
import textwrap

from syncguard.bodies import breadth_first, class_body, used_as_tensors, walk
from syncguard.values import HOST, PYSEQ, param

ENGINE = textwrap.dedent(
    """
    class Runner:
        def __init__(self, config, sampler, block_size, device):
            self.config = config
            self.sampler = sampler
            self.sampler_again = sampler
            self.norms = {}
            self.cache = []
            self.block_size = block_size
            block_size = block_size * 2
            self.device = device
            self.pending = []

        def step(self, batch):
            self.norms[batch.id] = batch.norm
            self.cache.append(batch.tokens)
            seen = {}
            seen[batch.id] = True

            def later():
                self.pending.extend(batch.extra)

            return later

        def reset(self, device):
            self.device = device
            self.local = {}
            self.local["x"] = 1
    """
)


def _class(source: str) -> ast.ClassDef:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    return node


def test_a_class_body_gives_filled_attributes_and_constructor_parameters() -> None:
    shown = class_body(_class(ENGINE))
    # Filled outside __init__, a closure in a method included; a store into a local is not.
    assert shown.filled == {"norms", "cache", "pending", "local"}
    # Reassigned parameters (block_size) and attributes assigned again elsewhere (device)
    # are not what the constructor is given.
    assert shown.init_parameters == {
        "config": "config",
        "sampler": "sampler",
        "sampler_again": "sampler",
    }


def test_a_class_without_methods_shows_nothing() -> None:
    shown = class_body(_class("class Config:\n    size: int = 3\n    def helper(): pass\n"))
    assert shown.filled == set()
    assert shown.init_parameters == {}


def test_walk_reaches_every_node_ast_walk_does_but_contexts_and_operators() -> None:
    tree = ast.parse(ENGINE + "\nx = [a + b for a, b in pairs if not a < b]\n")
    leaves = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    expected = [id(node) for node in ast.walk(tree) if not isinstance(node, leaves)]
    assert sorted(id(node) for node in walk(tree)) == sorted(expected)


def test_tensor_uses_are_read_in_the_function_itself_and_not_in_nested_scopes() -> None:
    function = ast.parse(
        textwrap.dedent(
            """
            def forward(self, x, lens, ids, mask):
                total = x.sum()
                def inner(mask):
                    return mask.cpu()
                fn = lambda ids: ids.numel()
                return lens.cumsum(0)
            """
        )
    ).body[0]
    assert isinstance(function, ast.FunctionDef)
    env = {"self": HOST, "x": param("x"), "ids": param("ids"), "mask": param("mask")}
    env["lens"] = param("lens").with_tags(PYSEQ)  # a list: cumsum is not a tensor use
    assert used_as_tensors(function, env) == {"x"}
    assert used_as_tensors(function, {"self": HOST}) == set()


def test_a_class_body_gives_each_method_the_tensor_uses_its_own_walk_finds() -> None:
    node = _class(
        textwrap.dedent(
            """
            class Runner:
                @staticmethod
                def pad(x, n):
                    return x.new_zeros(n)

                def forward(self, x, lens, mask):
                    total = x.sum() + lens.cumsum(0)
                    def inner(mask):
                        return mask.cpu()
                    return (lambda ids: ids.numel())(total)
            """
        )
    )
    shown = class_body(node)
    methods = [m for m in node.body if isinstance(m, ast.FunctionDef)]
    assert [sorted(shown.receivers[m]) for m in methods] == [["x"], ["lens", "x"]]
    for method in methods:
        env = {a.arg: param(a.arg) for a in method.args.args}
        assert used_as_tensors(method, env, shown.receivers[method]) == used_as_tensors(method, env)


def test_breadth_first_keeps_the_order_of_ast_walk() -> None:
    tree = ast.parse(ENGINE)
    leaves = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    expected = [id(node) for node in ast.walk(tree) if not isinstance(node, leaves)]
    assert [id(node) for node in breadth_first(tree)] == expected
