"""Where data lives, expression by expression: the placement and tags of a value (see
:mod:`syncguard.values`) from the names, calls and operators that compute it, and how
assignments bind them to names in the function being walked."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from syncguard.conditions import (
    dotted_name,
)
from syncguard.devices import DevicePlacement
from syncguard.facts import (
    MODULE_SCOPE,
)
from syncguard.iteration import loop_parts
from syncguard.naming import (
    as_named,
    is_host_name,
    named_tags,
    names_config,
)
from syncguard.torch_api import (
    BOOL_METHODS,
    BUILTIN_NAMES,
    EXTERNAL_ROOTS,
    HOST_ATTRIBUTES,
    HOST_BUILTINS,
    HOST_METHODS,
    HOST_MODULES,
    INDEX_METHODS,
    NUMBER_BUILTINS,
    PASSTHROUGH_BUILTINS,
    PINNING_HELPER,
    SEQUENCE_OPS,
    TENSOR_METHODS,
    VIEW_METHODS,
    is_tensor,
    tensor_result,
)
from syncguard.values import (
    BOOL,
    DEVICE,
    EVENT,
    FIELD_PREFIX,
    HOST,
    INDEX,
    KEY_PREFIX,
    NDARRAY,
    OPAQUE,
    PAGEABLE,
    PINNED,
    PYSEQ,
    RESULT_PREFIX,
    SCALAR,
    STREAM,
    TENSOR,
    UNKNOWN,
    Place,
    Value,
    join,
    tuple_part,
)

_CONTAINER_TYPES = {"collections.defaultdict", "collections.OrderedDict", "collections.deque"}
# numpy functions that make an array (not a scalar): host data that a comparison or an
# operator with an unplaced operand keeps on the host.
_NUMPY_ARRAYS = frozenset(
    {"array", "asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
     "empty_like", "full_like", "arange", "concatenate", "stack", "where", "cumsum", "diff",
     "clip", "minimum", "maximum", "repeat", "tile", "flatnonzero", "argsort", "sort"}
)  # fmt: skip
_CASTS = frozenset({"typing.cast", "typing_extensions.cast"})
_NEVER_NONE_EXPRESSIONS = (
    ast.BinOp, ast.Subscript, ast.Compare, ast.List, ast.Tuple, ast.Dict, ast.Set,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.JoinedStr, ast.Lambda,
)  # fmt: skip


def _merge(a: Value, b: Value) -> Value:
    if a == b:
        return a
    merged = join(a, b)
    # A bare host value on one side is typically ``None`` (``self.stage = None``, then
    # ``self.stage = torch.empty(..., pin_memory=True)`` on a branch): where the data is
    # used, it is the other side's kind.
    tags = a.tags | b.tags if HOST in (a, b) else a.tags & b.tags | (a.tags | b.tags) & {OPAQUE}
    if a.on_host != b.on_host:
        # A host fallback (``if sizes is None: sizes = torch.as_tensor(...)``) keeps where
        # the other side was read from: host data when that item, field or result is.
        tags |= (b if a.on_host else a).provenance
    return merged.with_tags(*tags) if tags else merged


def _joined(left: Value, right: Value) -> Value:
    """``left`` and ``right`` combined by an operator: where the one that is not a host
    value was read from is kept (``grid.prod(-1) // merge_size`` of a host item and a
    host number is where that item lives)."""
    result = join(left, right)
    for one, other in ((left, right), (right, left)):
        if other.on_host and one.provenance and not one.on_host:
            return Value(result.place, result.params, one.provenance)
    return result


def _read_by_key(node: ast.Call, result: Value) -> Value:
    """``result`` of a call that reads an item by its name (``data.get("grid_thw")``,
    ``feature_tensor(item, "grid_thw")``: one string argument that is a name), tagged
    with that name (see :data:`KEY_PREFIX`) where it may be device data."""
    if result.on_host:
        return result
    keys = [
        argument.value
        for argument in node.args
        if isinstance(argument, ast.Constant)
        and isinstance(argument.value, str)
        and argument.value.isidentifier()
    ]
    return result.with_tags(f"{KEY_PREFIX}{keys[0]}") if len(keys) == 1 else result


class Placement(DevicePlacement):
    """Evaluates expressions to :class:`Value` in the current scope, and binds them."""

    method_names: set[str]  # names of the methods the file's classes define

    def value(self, node: ast.expr) -> Value:
        memo = self.scope.memo
        key = id(node)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._evaluate(node)
        return found

    def _evaluate(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Name):
            return self._name_value(node.id)
        if isinstance(node, ast.Constant):
            return HOST.with_tags(SCALAR) if isinstance(node.value, (int, float)) else HOST
        if isinstance(node, ast.Attribute):
            return self._attribute_value(node)
        if isinstance(node, ast.Call):
            return self._call_value(node)
        if isinstance(node, ast.Subscript):
            key = node.slice
            if (
                isinstance(node.value, ast.Name)
                and node.value.id in self.scope.item_owners
                and isinstance(key, ast.Constant)
                and isinstance(key.value, str)
            ):
                stored = self.scope.env.get(f"{node.value.id}[{key.value!r}]")
                if stored is not None:
                    return stored
            base = self.value(node.value)
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and not base.on_host:
                # inputs["image_grid_thw"]: the item's name may say it is host data.
                return Value(base.place, base.params, frozenset((f"{KEY_PREFIX}{key.value}",)))
            if PYSEQ in base.tags:
                return Value(base.place, base.params)
            if BOOL in base.tags:
                return Value(base.place, base.params, base.tags & {TENSOR})
            return base
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            result = self._with_host_data((node.left, node.right), _joined(left, right))
            if tensor_result(result, (left, right)):
                result = result.with_tags(TENSOR)
            if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and (
                BOOL in left.tags or BOOL in right.tags
            ):
                return result.with_tags(BOOL)
            if result.on_host and SCALAR in left.tags and SCALAR in right.tags:
                return result.with_tags(SCALAR)
            return result
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if isinstance(node.op, ast.Not):
                return HOST.with_tags(BOOL)
            return operand
        if isinstance(node, ast.Compare):
            return self._compare_value(node)
        if isinstance(node, ast.BoolOp):
            return join(*map(self.value, node.values))
        if isinstance(node, ast.IfExp):
            return _merge(self.value(node.body), self.value(node.orelse))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return join(*map(self.value, node.elts)).with_tags(PYSEQ)
        if isinstance(node, ast.Dict):
            return join(*(self.value(v) for v in node.values)).with_tags(PYSEQ)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self._comprehension_value(node, node.elt).with_tags(PYSEQ)
        if isinstance(node, ast.DictComp):
            return self._comprehension_value(node, node.value).with_tags(PYSEQ)
        if isinstance(node, ast.NamedExpr):
            return self.value(node.value)
        if isinstance(node, (ast.Starred, ast.Await)):
            return self.value(node.value)
        if isinstance(node, (ast.JoinedStr, ast.Lambda, ast.FormattedValue)):
            return HOST
        return UNKNOWN

    def _compare_value(self, node: ast.Compare) -> Value:
        """Identity and membership tests give a host bool; tensor comparisons a tensor."""
        operands = [self.value(node.left), *map(self.value, node.comparators)]
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return HOST.with_tags(BOOL)
        if all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and not any(
            is_tensor(value) for value in operands[1:]
        ):
            return HOST.with_tags(BOOL)  # `key in dict`, `x in (a, b)`
        joined = operands[0]
        for operand in operands[1:]:  # `lens <= 0` is where the item `lens` was read from
            joined = _joined(joined, operand)
        result = joined.with_tags(BOOL)
        result = self._with_host_data([node.left, *node.comparators], result)
        return result.with_tags(TENSOR) if tensor_result(result, operands) else result

    def _with_host_data(self, operands: Sequence[ast.expr], result: Value) -> Value:
        """An operator on host data (a ``*_cpu`` array, a host tensor or mask) whose other
        operands are not known device tensors computes on the host: mixing host data with
        a device tensor is an error (0-d host tensors aside), so those operands are
        Python numbers or host data too (``lens_cpu + self.block_size``)."""
        if result.on_host or not any(self._is_host_data(operand) for operand in operands):
            return result
        for operand in operands:
            value = self.value(operand)
            if value.place is Place.DEVICE or (is_tensor(value) and value.may_be_device):
                return result
        return HOST.with_tags(*(result.tags | {TENSOR}))

    def _is_host_data(self, node: ast.expr) -> bool:
        value = self.value(node)
        if not value.on_host or value.tags & {PYSEQ, SCALAR}:
            return False
        if value.tags & {TENSOR, BOOL, INDEX, PINNED, PAGEABLE, NDARRAY}:
            return True
        while isinstance(node, ast.Subscript):
            node = node.value
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
        return is_host_name(name)

    def _comprehension_value(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, elt: ast.expr
    ) -> Value:
        with self._comprehension_scope(node.generators):
            return self.value(elt)

    def _name_value(self, name: str) -> Value:
        if self.scope.narrowed and name in self.scope.narrowed:
            return self.scope.narrowed[name]
        found = self.scope.env.get(name)
        if found is not None:
            return found
        if is_host_name(name):
            return as_named(name, HOST)
        if name in self.imports or name in self.scope.imports or name in self.module_defs:
            return HOST  # a module, class or function object, not a tensor
        module_value = self.module_scope.env.get(name)
        if module_value is not None:
            return module_value
        if name in BUILTIN_NAMES:
            return HOST
        return UNKNOWN

    def _attribute_value(self, node: ast.Attribute) -> Value:
        attr = node.attr
        if attr in HOST_ATTRIBUTES:
            return HOST
        if self.scope.narrowed:
            narrowed = self.scope.narrowed.get(dotted_name(node) or "")
            if narrowed is not None:
                return narrowed
        base = node.value
        if isinstance(base, ast.Name) and base.id == self.scope.self_name:
            key = f"{base.id}.{attr}"
            if key in self.scope.env:
                return self.scope.env[key]
            known = self.scope.attribute_values.get(attr)
            if known is not None:
                return known
        if is_host_name(attr):
            return as_named(attr, HOST)
        held = self._submodule_attribute(base, attr)
        if held is not None:
            return held
        if self.qualified_name(node) is not None:
            return HOST  # torch.float32, np.pi, module.CONSTANT
        if isinstance(base, ast.Name):
            if base.id == self.scope.self_name:
                return as_named(attr, UNKNOWN)
            class_name = self.scope.typed_params.get(base.id)
            if class_name is not None and base.id not in self.scope.rebound:
                if attr in self.host_fields.get(class_name, ()):
                    return as_named(attr, HOST)
                imported = self.imports.get(class_name)
                if imported is not None:  # the project phase knows that class's fields
                    value = self.value(base)
                    field_tag = f"{FIELD_PREFIX}{imported}.{attr}"
                    return Value(value.place, value.params, named_tags(attr) | {field_tag})
        base_value = self.value(base)
        if attr in ("T", "mT", "H", "data", "real", "imag"):
            return base_value
        if base_value.place is Place.PARAM and isinstance(base, ast.Name):
            # batch.image_grid_thw of a parameter: the field's name may say it is host data.
            keyed = Value(base_value.place, base_value.params, frozenset((f"{KEY_PREFIX}{attr}",)))
            return as_named(attr, keyed)
        return as_named(attr, Value(base_value.place, base_value.params))

    def _submodule_attribute(self, base: ast.expr, attr: str) -> Value | None:
        """``self.visual.merge_size``, ``self.visual`` built in ``__init__`` from a class of
        this module whose ``__init__`` gives ``merge_size`` a host value (a number, a
        setting): that host value; None when the attribute may be anything."""
        if not (
            isinstance(base, ast.Attribute)
            and isinstance(base.value, ast.Name)
            and base.value.id == self.scope.self_name
        ):
            return None
        owner = self.scope.facts.class_name
        facts = self.classes.get(owner) if owner is not None else None
        held = facts.attribute_types.get(base.attr) if facts is not None else None
        if held is None or f"{self.scope.self_name}.{base.attr}" in self.scope.env:
            return None  # unknown, or rebound in this function
        held_facts = self.classes.get(held)
        if held_facts is None or attr in held_facts.attribute_types:
            return None  # not of this module, or an object (a submodule) of its own
        found = self.class_attributes.get(held, {}).get(attr)
        if found is None or not found.on_host or found.tags & {TENSOR, PINNED, PAGEABLE}:
            return None
        return found

    def _call_value(self, node: ast.Call) -> Value:
        func = node.func
        helper = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if PINNING_HELPER.search(helper) or self._asks_pinned(node):
            return HOST.with_tags(PINNED, TENSOR)
        qualified = self.qualified_name(func)
        if qualified is not None:
            root, _, rest = qualified.partition(".")
            if qualified in _CONTAINER_TYPES:
                return HOST.with_tags(PYSEQ)  # an empty container, filled later
            if root in HOST_MODULES:
                return (
                    HOST.with_tags(NDARRAY) if root == "numpy" and rest in _NUMPY_ARRAYS else HOST
                )
            if root == "torch":
                return self._constructed(node, rest, self._torch_call_value(node, rest))
            return self._returned(qualified, _read_by_key(node, self._derived_value(node)))
        if isinstance(func, ast.Name):
            name = func.id
            result = self._device_result(name)
            if result is not None and name not in self.scope.env:
                return self._returned(f"{self.module}.{name}", result)
            if name in self.module_defs and name not in self.scope.env:
                found = _read_by_key(node, self._derived_value(node))
                found = self._returned(f"{self.module}.{name}", found)
                kinds = self.result_kinds.get(name)
                return found.with_tags(*kinds) if kinds else found
            if name in self.scope.env:
                return self._derived_value(node)
            if name in HOST_BUILTINS:
                if name in NUMBER_BUILTINS:
                    return HOST.with_tags(SCALAR)  # int(t), len(xs): a Python number
                return HOST.with_tags(BOOL) if name == "bool" else HOST
            if name in ("dict", "list") and not node.args and not node.keywords:
                return HOST.with_tags(PYSEQ)
            if name in PASSTHROUGH_BUILTINS:
                values = [self.value(arg) for arg in node.args]
                return join(*values) if values else HOST
            return self._derived_value(node)
        if isinstance(func, ast.Attribute):
            return self._method_result_kind(func, self._method_value(node, func))
        return UNKNOWN

    def host_parts(self, node: ast.expr) -> frozenset[str] | None:
        """None when ``node`` may hold device data; else the functions of other modules
        whose results it holds (``return lens_cpu, helper(x)``: host if ``helper``'s is)."""
        if isinstance(node, (ast.Tuple, ast.List)):
            parts = [self.host_parts(element) for element in node.elts]
            if any(part is None for part in parts):
                return None
            return frozenset().union(*(part for part in parts if part is not None))
        value = self.value(node)
        if value.on_host:
            return frozenset()
        sources = frozenset(
            t[len(RESULT_PREFIX) :] for t in value.tags if t.startswith(RESULT_PREFIX)
        )
        return sources or None

    def _returned(self, function: str, result: Value) -> Value:
        """The result of calling ``function`` of another module, that the project phase may
        place: where nothing here says it is on the host, it names the function."""
        if result.on_host or function.partition(".")[0] in EXTERNAL_ROOTS:
            return result
        return result.with_tags(f"{RESULT_PREFIX}{function}")

    def _method_result_kind(self, func: ast.Attribute, result: Value) -> Value:
        """Tag what a method returns: a tensor (a tensor's method, or one only tensors
        have), a tuple of tensors, or the event a stream records."""
        method = func.attr
        if method in HOST_METHODS or result.tags & {PYSEQ, STREAM, EVENT}:
            return result
        receiver = self.value(func.value)
        if STREAM in receiver.tags and method == "record_event":
            return HOST.with_tags(EVENT)
        if not (is_tensor(receiver) or method in TENSOR_METHODS):
            return result
        if method in SEQUENCE_OPS:
            return Value(result.place, result.params, frozenset((PYSEQ,)))
        return result.with_tags(TENSOR)

    def _derived_value(self, node: ast.Call) -> Value:
        """A call to a function we cannot see into: its result lives where its data does.

        Data means arguments that are not plain Python numbers or settings objects
        (``config``); with none (a factory-like call such as ``make_buffer(n)`` or
        ``Block(config)``) the placement is unknown. A function's ``device=`` argument
        says where its result is made (``async_h2d(values, device=x.device)``); an object
        built with one (``State(n, device=d)``) may hold host data as well.
        """
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.host_records:
            return HOST  # a record of host values (sizes, flags, a dtype) built here
        device = self._keyword(node, "device")
        if device is not None:
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name[:1].isupper():
                return UNKNOWN
            # Where, not what: the result may be a tensor or a Python value (can_use(device=d)).
            return self._device_value(device).without_tags()
        data = [
            self.value(argument)
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]
            if not isinstance(argument, ast.Constant) and not names_config(argument)
        ]
        data = [value for value in data if SCALAR not in value.tags]
        if not data:
            return UNKNOWN
        result = join(*data)
        placed = [value for value in data if not value.on_host]
        if len(placed) == 1:  # made from one value and host data: read where it was
            keys = [tag for tag in placed[0].tags if tag.startswith(KEY_PREFIX)]
            return result.with_tags(*keys) if keys else result
        return result

    def _method_value(self, node: ast.Call, func: ast.Attribute) -> Value:
        method = func.attr
        receiver = self.value(func.value)
        if method in HOST_METHODS:
            return HOST
        if method == "pin_memory":
            return HOST.with_tags(PINNED, TENSOR)
        if method == "cuda":
            return DEVICE.with_tags(TENSOR)
        if method == "to":
            return self._to_value(node, receiver)
        if method in BOOL_METHODS or method in ("any", "all"):
            return Value(receiver.place, receiver.params, frozenset((BOOL,)))
        if method in VIEW_METHODS:
            return Value(receiver.place, receiver.params, receiver.tags - {PYSEQ})
        if method in INDEX_METHODS:
            return Value(receiver.place, receiver.params, frozenset((INDEX,)))
        if method in ("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"):
            device = self._keyword(node, "device")
            return self._device_value(device) if device is not None else receiver.without_tags()
        if (
            receiver.on_host
            and not receiver.tags
            and method not in TENSOR_METHODS
            and (self._self_rooted(func.value) or names_config(func.value))
        ):
            # self.mlp(x), self.proj.forward(x), pipeline_config.embeds(batch): an object's
            # method (not a host tensor's) returns data where its arguments live.
            return self._own_method_result(node, func, self._derived_value(node))
        if method not in TENSOR_METHODS and self._module_receiver(func.value):
            # model.get_positions(token_ids, features) on a parameter that is a module
            # (``model: nn.Module``): a module's method returns data where its arguments
            # live, not where its weights do.
            derived = self._derived_value(node)
            if derived.place in (Place.HOST, Place.PARAM):
                return derived
        # A tensor's method computes where the tensor lives: ``grid.prod(-1)`` of an item
        # read as ``inputs["grid_thw"]`` is host data when that item is.
        result = Value(receiver.place, receiver.params, receiver.provenance)
        return _read_by_key(node, result) if method in ("get", "pop") else result

    def _own_method_result(self, node: ast.Call, func: ast.Attribute, result: Value) -> Value:
        """What ``self.helper(...)`` returns, for a method of the class being defined: named
        for the project phase, which knows whether that method returns host data (a
        ``_agree`` that all-reduces a CPU tensor and returns a row of it)."""
        owner = self.scope.facts.class_name
        if (
            owner is None
            or result.place is not Place.PARAM  # what no argument decides stays as it was
            or func.attr not in self.method_names
            or not isinstance(func.value, ast.Name)
            or func.value.id != self.scope.self_name
        ):
            return result
        return self._returned(f"{self.module}.{owner}.{func.attr}", result)

    def _module_receiver(self, node: ast.expr) -> bool:
        """True for a parameter that is a module, or a local bound to one (``m = model``,
        ``m = cast(SupportsRoPE, model)``)."""
        if not isinstance(node, ast.Name):
            return False
        source = self.scope.assigned.get(node.id)
        if isinstance(source, ast.Call) and self.qualified_name(source.func) in _CASTS:
            source = source.args[-1] if source.args else None
        if isinstance(source, ast.Name):
            node = source
        return node.id in self.scope.module_params and node.id not in self.scope.rebound

    def _self_rooted(self, node: ast.expr) -> bool:
        """True for ``self`` and ``self.a.b[...]``: attributes of the object being defined."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id == self.scope.self_name

    def _merge_env(self, other: dict[str, Value]) -> None:
        env = self.scope.env
        for name, value in other.items():
            current = env.get(name)
            env[name] = value if current is None else _merge(current, value)

    def _element_value(self, iterable: ast.expr) -> Value:
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "range"
        ):
            return HOST.with_tags(SCALAR)
        value = self.value(iterable)
        # An element lives where its container does: one of a host item is host data.
        keys = frozenset(tag for tag in value.tags if tag.startswith(KEY_PREFIX))
        return Value(value.place, value.params, value.tags & {TENSOR} | keys)

    def bind_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        for part, source in loop_parts(target, iterable):
            value = HOST.with_tags(SCALAR) if source is None else self._element_value(source)
            self._bind(part, value, None)

    def _bind(self, target: ast.expr, value: Value, source: ast.expr | None) -> None:
        env = self.scope.env
        if self.scope.narrowed:
            key = dotted_name(target)
            if key in self.scope.narrowed:  # reassigned: the guard no longer applies
                self.scope.narrowed = {k: v for k, v in self.scope.narrowed.items() if k != key}
        if isinstance(target, ast.Name):
            env[target.id] = as_named(target.id, value)
            self._note_items(target.id, source)
            if target.id in self.scope.item_owners:  # a new container: forget the old items
                self.scope.item_owners.discard(target.id)
                for key in [k for k in env if k.startswith(f"{target.id}[")]:
                    del env[key]
            if source is None or not self._never_none(source):
                self.scope.maybe_none.add(target.id)
                self.scope.rebound_maybe_none.add(target.id)
            else:
                self.scope.maybe_none.discard(target.id)
            self.scope.rebound.add(target.id)
            if source is None:
                self.scope.assigned.pop(target.id, None)
            else:
                self.scope.assigned[target.id] = source
        elif isinstance(target, (ast.Tuple, ast.List)):
            sources = source.elts if isinstance(source, (ast.Tuple, ast.List)) else None
            for index, element in enumerate(target.elts):
                if sources is not None and len(sources) == len(target.elts):
                    self._bind(element, self.value(sources[index]), sources[index])
                else:
                    self._bind(element, tuple_part(value, index), None)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, value, None)
        elif isinstance(target, ast.Subscript):
            # batch[k] = gathered, parts[rank][k] = gathered: the container holds it now.
            outer = target.value
            while isinstance(outer, ast.Subscript):
                outer = outer.value
            name = outer.id if isinstance(outer, ast.Name) else ""
            item = target.slice if outer is target.value else None
            keyed = isinstance(item, ast.Constant) and isinstance(item.value, str)
            items = self.scope.dict_items.get(name) if item is not None else None
            if items is not None and keyed:
                items[item.value] = value  # type: ignore[union-attr]  # inputs["grid"] = grid.cpu()
            elif items is not None:
                del self.scope.dict_items[name]  # an item of unknown name
            current = env.get(name)
            if value.place is Place.DEVICE or TENSOR in value.tags:
                if keyed:
                    env[f"{name}[{item.value!r}]"] = value  # type: ignore[union-attr]
                    self.scope.item_owners.add(name)  # read back as such above
                if current is not None and PYSEQ in current.tags:
                    env[name] = join(current, value).with_tags(PYSEQ)
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == self.scope.self_name
        ):
            key = f"{target.value.id}.{target.attr}"
            if key in self.scope.buffers:  # assigning a tensor to a buffer keeps it a buffer
                value = UNKNOWN.with_tags(TENSOR)
            env[key] = as_named(target.attr, value)

    def _note_items(self, name: str, source: ast.expr | None) -> None:
        """Remember where the items of a dict literal with string keys bound to ``name``
        live (forget them when ``name`` is bound to anything else)."""
        items = self.scope.dict_items
        if isinstance(source, ast.Dict) and all(
            isinstance(key, ast.Constant) and isinstance(key.value, str) for key in source.keys
        ):
            items[name] = {
                key.value: self.value(value)  # type: ignore[union-attr]
                for key, value in zip(source.keys, source.values, strict=True)
            }
        elif name in items:
            del items[name]

    @contextmanager
    def _comprehension_scope(self, generators: list[ast.comprehension]) -> Iterator[None]:
        scope = self.scope
        saved_env, saved_memo = scope.env, scope.memo
        scope.env = dict(saved_env)
        scope.memo = dict(saved_memo)
        for generator in generators:
            self.bind_loop(generator.target, generator.iter)
        try:
            yield
        finally:
            scope.env, scope.memo = saved_env, saved_memo

    def _never_none(self, node: ast.expr) -> bool:
        """True for a value that cannot be None: a constant other than None, a local
        only ever set to such values, a computed value (``f(x)``, ``x[i]``, ``a + b``);
        not a parameter, an attribute (``self.cache`` may be None until filled),
        ``d.get(k)`` or ``x if c else None``."""
        if isinstance(node, ast.Name):
            scope = self.scope
            known = node.id in scope.rebound or node.id in scope.facts.params
            return known and node.id not in scope.maybe_none
        if isinstance(node, ast.Constant):
            return node.value is not None
        if isinstance(node, ast.IfExp):
            return self._never_none(node.body) and self._never_none(node.orelse)
        if isinstance(node, ast.Call):
            func = node.func
            return not (isinstance(func, ast.Attribute) and func.attr in ("get", "pop"))
        return isinstance(node, _NEVER_NONE_EXPRESSIONS)

    def _device_result(self, name: str) -> Value | None:
        """What a call of the function ``name`` returns, when :meth:`_remember_result` knows
        it: a function nested in this one (or in an enclosing one), else a module one."""
        prefix = self.scope.facts.qualname
        while prefix and prefix != MODULE_SCOPE:
            found = self.device_results.get(f"{prefix}.{name}")
            if found is not None:
                return found
            prefix = prefix.rpartition(".")[0]
        return self.device_results.get(name)
