"""State of temporal models: the ``Stateful`` protocol, state discovery, snapshots and the guards
(docs/protocol.md §2).

A *state* is a nested ``dict`` of tensors (and plain Python values) holding everything a
model has learned from the event history — memory, last-update times, neighbour buffers,
EdgeBank contents — but not its trained parameters.

**Discovery.** A model need not list its state: :func:`state_parts` walks its submodules
and their plain attributes and finds

* objects with their own ``snapshot`` / ``restore`` / ``reset_state`` (:class:`Stateful`,
  e.g. tgeval's :class:`~tgeval.models.neighbors.NeighborBuffer`);
* objects of a class with a registered :class:`StateAdapter` (PyG's ``TGNMemory``: memory,
  last updates, message stores; ``LastNeighborLoader``: neighbour and event-id tables and the
  event counter); users register adapters for their own classes with
  :func:`register_state_adapter`;
* every other registered buffer (buffers may change size as events arrive), except *scratch*
  (:func:`scratch_names`: a class's ``state_scratch``, an adapter's ``scratch``) and buffers
  that training moves like parameters (:func:`trained_buffers`: ``BatchNorm`` statistics,
  spectral normalisation's vectors).

:func:`snapshot_of`, :func:`restore_into` and :func:`reset_of` apply to all of them; they are
the default ``snapshot`` / ``restore`` / ``reset_state`` of
:class:`~tgeval.models.base.TemporalLinkModel`, so a model built from PyG's modules needs no
state code.

**What discovery cannot see is refused.** State kept in a plain attribute (a ``dict`` of seen
pairs, a list, a numpy array, an unregistered tensor, a number; in the model, a submodule or
a plain object they hold) would be left as it is by the state methods and carried from one
run into the next. The engine feeds events through :func:`checked_update` and resets through
:func:`checked_reset`, which raise :class:`~tgeval.errors.HiddenStateError` naming the
attribute when such a value changes; :func:`no_state_change` (the scoring guard) watches
discovered state and every plain attribute alike.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
import zlib
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import Any, Callable, Iterator, Mapping, Optional, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.utils.spectral_norm import SpectralNorm
from torch.nn.utils.weight_norm import WeightNorm
from torch_geometric.data.data import BaseData
from torch_geometric.nn.models.tgn import LastNeighborLoader, TGNMemory

from tgeval.core.compat import (TGN_MEMORY_SCRATCH, forward_pre_hooks, is_view, message_stores, own_buffers,
                           own_children, own_parameters, set_message_stores, tensor_version, trains_own_buffers)
from tgeval.errors import HiddenStateError, LeakageError, ModelCapabilityError
from tgeval.core.rng import GOLDEN_GAMMA, MIX_MULTIPLIERS

__all__ = ["State", "Stateful", "StateAdapter", "Part", "register_state_adapter", "state_adapter", "state_parts",
           "state_buffer_names", "parameters_of", "load_parameters", "snapshot_of", "restore_into",
           "initial_buffers", "reset_of", "clone_state", "first_difference",
           "checksum", "no_state_change", "scratch_names", "trained_buffers", "checked_update",
           "checked_reset", "detach_history", "restore_detached", "exclusive"]

State = dict[str, Any]


@runtime_checkable
class Stateful(Protocol):
    """Anything whose predictions depend on the history it has seen."""

    def reset_state(self) -> None:
        """Forget all history (the state of an empty stream)."""

    def snapshot(self) -> State:
        """A deep copy of the full state, on the model's device."""

    def restore(self, state: State) -> None:
        """Return to ``state``; later scores equal those right after the snapshot, bit for bit."""


def clone_state(state: Any) -> Any:
    """Deep copy of a nested state: tensors are cloned, containers rebuilt, scalars shared."""
    if isinstance(state, Tensor):
        return state.detach().clone()
    if isinstance(state, Mapping):
        return {key: clone_state(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(clone_state(value) for value in state)
    return state


def first_difference(a: Any, b: Any, path: str = "state") -> Optional[str]:
    """Path of the first entry where two nested states differ, or ``None`` if equal.

    Tensors are equal when dtype, shape and every element agree (NaN equals NaN in the
    same position).
    """
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            return path
        if a.dtype != b.dtype or a.shape != b.shape:
            return path
        same = torch.equal(a, b) or (
            a.is_floating_point() and torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True)
        )
        return None if same else path
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            return f"{path} (keys {sorted(map(str, set(a) ^ set(b)))})"
        for key in a:
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return path
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else path


# -- adapters ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class StateAdapter:
    """How tgeval reads, restores and resets the state of a class it does not own.

    Attributes:
        view: ``view(obj) -> State``, the live state (tensors and Python values, no copies).
        load: ``load(obj, state)``, make the object's state equal to ``state`` (copying it in).
        reset: ``reset(obj)``, forget all history.
        scratch: names of the object's registered buffers that are scratch space rather than
            state (written while scoring, never read across calls); the guard ignores them.
        fingerprint: ``fingerprint(obj)``, a cheap value that changes whenever the state does
            (the guard compares it with ``==`` before and after scoring, so it holds no tensor:
            use ``(id(t), tgeval.core.compat.tensor_version(t))``); default: tensors of the view by identity
            and in-place version, containers element by element, Python values by value.
    """

    view: Callable[[Any], State]
    load: Callable[[Any, State], None]
    reset: Callable[[Any], None]
    scratch: tuple[str, ...] = ()
    fingerprint: Optional[Callable[[Any], Any]] = None


_ADAPTERS: dict[type, StateAdapter] = {}


def register_state_adapter(cls: type, adapter: StateAdapter, *, overwrite: bool = False) -> None:
    """Let tgeval find the state of objects of ``cls`` (and its subclasses) inside models."""
    if not overwrite and cls in _ADAPTERS:
        raise ValueError(f"a state adapter for {cls.__name__} is registered; pass overwrite=True to replace it.")
    _ADAPTERS[cls] = adapter


def state_adapter(obj: Any) -> Optional[StateAdapter]:
    """The adapter registered for ``type(obj)`` or its nearest base class, if any."""
    for cls in type(obj).__mro__:
        if cls in _ADAPTERS:
            return _ADAPTERS[cls]
    return None


def _load_tgn_memory(memory: TGNMemory, state: State) -> None:
    memory.memory.copy_(state["memory"])
    memory.last_update.copy_(state["last_update"])
    device = memory.memory.device
    source, destination = ({node: tuple(x.to(device).clone() for x in entry) for node, entry in state[key].items()}
                           for key in ("msg_s_store", "msg_d_store"))
    set_message_stores(memory, source, destination)


def _tgn_memory_fingerprint(memory: TGNMemory) -> tuple:
    """Memory and last updates by version; the message stores by the identity of their entries
    (PyG replaces an entry's tuple when it stores a message), one per node: a C-speed pass."""
    source, destination = message_stores(memory)
    return ((id(memory.memory), tensor_version(memory.memory)),
            (id(memory.last_update), tensor_version(memory.last_update)),
            tuple(map(id, source.values())), tuple(map(id, destination.values())))


def _view_tgn_memory(memory: TGNMemory) -> State:
    source, destination = message_stores(memory)
    return {"memory": memory.memory, "last_update": memory.last_update, "msg_s_store": source,
            "msg_d_store": destination}


register_state_adapter(TGNMemory, StateAdapter(
    view=_view_tgn_memory,
    load=_load_tgn_memory, reset=lambda m: m.reset_state(), scratch=TGN_MEMORY_SCRATCH,
    fingerprint=_tgn_memory_fingerprint))


def _load_neighbor_loader(loader: LastNeighborLoader, state: State) -> None:
    loader.neighbors.copy_(state["neighbors"])
    loader.e_id.copy_(state["e_id"])
    loader.cur_e_id = int(state["cur_e_id"])


def _reset_neighbor_loader(loader: LastNeighborLoader) -> None:
    loader.reset_state()
    loader.neighbors.zero_()  # PyG leaves the unused slots as they were: a reset state has fixed bytes


register_state_adapter(LastNeighborLoader, StateAdapter(
    view=lambda n: {"neighbors": n.neighbors, "e_id": n.e_id, "cur_e_id": n.cur_e_id},
    load=_load_neighbor_loader, reset=_reset_neighbor_loader))


# -- discovery --------------------------------------------------------------------------------
def _has_state_methods(obj: Any) -> bool:
    return all(callable(getattr(obj, name, None)) for name in ("snapshot", "restore", "reset_state"))


def scratch_names(obj: Any) -> frozenset[str]:
    """Names of ``obj``'s attributes and buffers that are scratch space, not state: written while
    scoring or updating and never read by a later call (PyG's ``assoc`` index vectors). Declared
    by the class attribute ``state_scratch`` (a tuple of names, on any module or object) or by
    the ``scratch`` of its :class:`StateAdapter`. Scratch is not snapshot, restored or reset,
    and the guards ignore it."""
    declared = getattr(obj, "state_scratch", ())
    if isinstance(declared, str):
        raise TypeError(f"{type(obj).__name__}.state_scratch must be a tuple of names, got the string {declared!r}: "
                        f"write state_scratch = ({declared!r},).")
    adapter = state_adapter(obj)
    return frozenset(declared) | frozenset(adapter.scratch if adapter is not None else ())


def trained_buffers(module: nn.Module) -> frozenset[str]:
    """The module's own buffers that training moves, like parameters, and that are not history:
    a normalisation layer's running statistics (``BatchNorm``), spectral normalisation's power
    iteration vectors (``u``, ``v``, in both of torch's forms)."""
    if trains_own_buffers(module):
        return frozenset(own_buffers(module))
    return frozenset(f"{name}_{end}" for name in _reparametrized(module, SpectralNorm) for end in ("u", "v"))


def _reparametrized(module: nn.Module, kinds: Any = (SpectralNorm, WeightNorm)) -> frozenset[str]:
    """Attributes that torch's older ``spectral_norm`` / ``weight_norm`` hooks recompute from the
    parameters before every call (derived, not state)."""
    return frozenset(hook.name for hook in forward_pre_hooks(module) if isinstance(hook, kinds))


def _state_buffers(module: nn.Module) -> tuple[str, ...]:
    """The module's own registered buffers that hold state: neither scratch nor trained buffers."""
    skip = scratch_names(module) | trained_buffers(module)
    return tuple(name for name, buffer in own_buffers(module).items() if buffer is not None and name not in skip)


@dataclass(frozen=True)
class Part:
    """One place that holds state inside a model.

    Attributes:
        path: dotted attribute path from the model (``""``: the model itself).
        obj: the object.
        kind: ``"stateful"`` (its own ``snapshot`` / ``restore`` / ``reset_state``),
            ``"adapter"`` (a registered :class:`StateAdapter`) or ``"buffers"`` (a module's own
            registered buffers, ``names``).
    """

    path: str
    obj: Any
    kind: str
    adapter: Optional[StateAdapter] = None
    names: tuple[str, ...] = ()

    def live(self) -> State:
        """The part's state without copies (a :class:`Stateful` object's snapshot is a copy)."""
        if self.kind == "buffers":
            return {name: own_buffers(self.obj)[name] for name in self.names}
        if self.kind == "adapter":
            return self.adapter.view(self.obj)  # type: ignore[union-attr]
        return self.obj.snapshot()


def state_parts(model: nn.Module) -> list[Part]:
    """Every place inside ``model`` that holds state, depth first in a fixed order (see the
    module docstring): objects with their own state methods, then objects with an adapter, are
    taken whole; other modules contribute their own buffers and are searched further, through
    their submodules and plain attributes."""
    parts: list[Part] = []
    seen: set[int] = set()

    def visit(obj: Any, path: str) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if path and _has_state_methods(obj):
            parts.append(Part(path, obj, "stateful"))
            return
        adapter = state_adapter(obj)
        if adapter is not None:
            parts.append(Part(path, obj, "adapter", adapter))
            return
        if not isinstance(obj, nn.Module):
            return
        names = _state_buffers(obj)
        if names:
            parts.append(Part(path, obj, "buffers", names=names))
        children = [(name, child) for name, child in own_children(obj).items() if child is not None]
        children += [(name, value) for name, value in vars(obj).items()
                     if type(value) not in _PLAIN and not name.startswith("_")
                     and not isinstance(value, (nn.Module, Tensor))
                     and (state_adapter(value) is not None or _has_state_methods(value))]
        for name, child in children:
            visit(child, f"{path}.{name}" if path else name)

    visit(model, "")
    return parts


def state_buffer_names(model: nn.Module) -> set[str]:
    """Qualified names (as in ``state_dict``) of the registered buffers that hold discovered state:
    those of the buffer parts and every buffer inside a module with its own state methods or an
    adapter. Empty for a model with its own state methods (its buffers are its business)."""
    names: set[str] = set()
    if not _discovers(model):
        return names
    for part in state_parts(model):
        prefix = f"{part.path}." if part.path else ""
        if part.kind == "buffers":
            names.update(prefix + name for name in part.names)
        elif isinstance(part.obj, nn.Module):
            names.update(prefix + name for name, _ in part.obj.named_buffers())
    return names


def parameters_of(model: nn.Module) -> dict[str, Tensor]:
    """``model.state_dict()`` without its state (:func:`state_buffer_names`): the trained
    parameters and constant buffers, whose shapes do not change as events arrive."""
    state = state_buffer_names(model)
    return {key: value for key, value in model.state_dict().items() if key not in state}


def load_parameters(model: nn.Module, parameters: Mapping[str, Tensor]) -> None:
    """Load :func:`parameters_of` (state entries of a full ``state_dict`` are ignored: the state is
    restored separately).

    Raises:
        RuntimeError: missing or unexpected keys, or mismatched shapes, as ``load_state_dict``.
    """
    state = state_buffer_names(model)
    result = model.load_state_dict({key: value for key, value in parameters.items() if key not in state},
                                   strict=False)
    missing = sorted(set(result.missing_keys) - state)
    if missing or result.unexpected_keys:
        raise RuntimeError(f"the parameters do not fit {type(model).__name__}: missing {missing}, unexpected "
                           f"{sorted(result.unexpected_keys)}.")


def snapshot_of(model: nn.Module) -> State:
    """A deep copy of every discovered part's state, keyed by its path (``""``: the model's own buffers)."""
    return {part.path: clone_state(part.live()) if part.kind != "stateful" else part.live()
            for part in state_parts(model)}


def restore_into(model: nn.Module, state: State) -> None:
    """Return every discovered part to ``state`` (from :func:`snapshot_of`); buffers are replaced,
    so their size may differ from the current one."""
    parts = state_parts(model)
    mismatch = {part.path for part in parts} ^ set(state)
    if mismatch:
        raise ValueError(f"the state does not fit this model: parts {sorted(mismatch)} are on one side only. "
                         f"Restore snapshots taken from a model of the same kind.")
    for part in parts:
        saved = state[part.path]
        if part.kind == "buffers":
            for name in part.names:
                device = own_buffers(part.obj)[name].device
                setattr(part.obj, name, clone_state(saved[name]).to(device))
        elif part.kind == "adapter":
            part.adapter.load(part.obj, saved)  # type: ignore[union-attr]
        else:
            part.obj.restore(saved)


def detach_history(model: nn.Module) -> None:
    """Cut every link from the model's state to autograd graphs already built; no value changes.

    Every registered buffer of every submodule, and every tensor held by a discovered adapter's live state
    (PyG's ``TGNMemory``: memory, last updates, message stores), that carries a graph (``grad_fn``) is detached:
    in place where it can be (its identity kept), else replaced in its holder (a buffer, a ``dict`` or ``list``
    entry, a tuple rebuilt there). The engine calls it after every reset, restore and mode switch
    (:func:`checked_reset`, :func:`restore_detached`, :meth:`~tgeval.models.base.TemporalLinkModel.train`, which
    also ends every training epoch), so no state that tgeval resets, restores or carries between epochs,
    validation and evaluation ever makes a later ``backward`` run through an old graph (PyG's ``TGNMemory``
    applies its pending messages with autograd when switched to eval mode; ``reset_state`` zeroes its memory in
    place, keeping the graph).

    Raises:
        ModelCapabilityError: a graph-carrying tensor that is a view held directly by an object, which cannot be
            detached in place nor replaced: detach it in the model (``detach_state()``).
    """
    for module in model.modules():
        for name, buffer in list(own_buffers(module).items()):
            if buffer is not None and buffer.grad_fn is not None:
                if is_view(buffer):
                    setattr(module, name, buffer.detach())
                else:
                    buffer.detach_()
    for part in state_parts(model):
        if part.kind == "adapter":
            _detach_nested(part.live())
            left = _graph_in(part.live(), part.path or "model")  # read again: a replaced copy in a fresh view
            if left is not None:
                raise ModelCapabilityError(
                    f"{type(model).__name__}'s state `{left}` holds an autograd graph that tgeval cannot cut (a view "
                    f"held by the object itself): detach it in the model, in a `detach_state()` method or in the "
                    f"adapter's `load` and `reset`.")


def _detach_nested(value: Any) -> Any:
    """``value`` with no tensor carrying a graph: tensors detached in place (a view: a detached copy returned),
    ``dict`` and ``list`` entries replaced, plain tuples rebuilt where an element changed."""
    if isinstance(value, Tensor):
        if value.grad_fn is None:
            return value
        return value.detach() if is_view(value) else value.detach_()
    if isinstance(value, (dict, list)):
        for key, item in list(value.items() if isinstance(value, dict) else enumerate(value)):
            new = _detach_nested(item)
            if new is not item:
                value[key] = new
    elif type(value) is tuple:
        items = tuple(_detach_nested(item) for item in value)
        if any(a is not b for a, b in zip(items, value)):
            return items
    return value


def _graph_in(value: Any, path: str) -> Optional[str]:
    """The path of the first tensor of a nested state that still carries an autograd graph, or ``None``."""
    if isinstance(value, Tensor):
        return path if value.grad_fn is not None else None
    if isinstance(value, Mapping):
        items: Any = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    return next((found for key, item in items if (found := _graph_in(item, f"{path}.{key}")) is not None), None)


def restore_detached(model: Any, state: State) -> None:
    """``model.restore(state)``, then :func:`detach_history`: a restore that copies into tensors carrying a
    graph (``copy_``) leaves none in the state. The engine restores every snapshot through it."""
    model.restore(state)
    if isinstance(model, nn.Module):
        detach_history(model)


def initial_buffers(model: nn.Module) -> State:
    """Copies of the buffers :func:`reset_of` returns to: those outside objects with state
    methods or adapters, as they are now (call it when the model has just been built)."""
    return {part.path: clone_state(part.live()) for part in state_parts(model) if part.kind == "buffers"}


def reset_of(model: nn.Module, initial: State) -> None:
    """Forget all history: reset objects with state methods or adapters, and return the other
    buffers to ``initial`` (:func:`initial_buffers`, taken when the model was built)."""
    for part in state_parts(model):
        if part.kind == "buffers":
            for name, value in initial.get(part.path, {}).items():
                if name in part.names:
                    setattr(part.obj, name, clone_state(value).to(own_buffers(part.obj)[name].device))
        elif part.kind == "adapter":
            part.adapter.reset(part.obj)  # type: ignore[union-attr]
        else:
            part.obj.reset_state()


# -- checksums --------------------------------------------------------------------------------
_GOLDEN, _MUL = GOLDEN_GAMMA, MIX_MULTIPLIERS[0]  # the counter RNG's constants as position weights
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def checksum(tensor: Tensor) -> Tensor:
    """An int64 scalar of the tensor's bits and positions, on its device (no host copy).

    :math:`\\sum_i b_i w_i \\bmod 2^{64}` over the raw bits :math:`b_i` of element ``i`` and odd
    position weights :math:`w_i` (a mixed counter): changing any single element always changes
    it, and no cheap pattern of changes cancels out.
    """
    tensor = tensor.detach()
    if tensor.layout != torch.strided:  # sparse: its indices and values
        tensor = tensor.coalesce() if tensor.is_sparse else tensor.to_sparse_coo().coalesce()
        return checksum(tensor.indices()) * _MUL + checksum(tensor.values())
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    flat = tensor.reshape(-1)
    if flat.dtype == torch.bool:
        bits = flat.to(torch.int64)
    else:
        bits = flat.contiguous().view(_BITS[flat.element_size()]).to(torch.int64)
    position = torch.arange(flat.numel(), dtype=torch.int64, device=flat.device)
    weight = ((position + 1) * _GOLDEN) ^ ((position * _MUL) >> 29)
    return (bits * (weight | 1)).sum()


# -- fingerprints -----------------------------------------------------------------------------
#: values compared by value: immutable Python and numpy scalars
_PLAIN = frozenset({int, float, bool, complex, str, bytes, type(None), np.bool_, np.int8, np.int16, np.int32,
                    np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16, np.float32, np.float64})
#: objects taken by identity, never followed through their attributes
_OPAQUE = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
           functools.partial, torch.device, torch.dtype, torch.Generator, Tensor, np.ndarray, Mapping, list,
           tuple, set, frozenset, deque)
#: deepest container nesting, or chain of plain objects, that is fingerprinted (deeper: by identity)
_MAX_DEPTH = 16
#: attributes every module has (torch's bookkeeping) and the engine's own on TemporalLinkModel
_INTERNAL = frozenset(vars(nn.Module())) | {"_initial_buffers", "_initial_parameters", "earlier", "checkpoint_record"}
#: packages whose objects are taken as they are: the private attributes of their modules are their
#: own bookkeeping (PyG's attention scratch, hooks, inspectors), their other objects are compared by
#: identity; their modules' public attributes are still watched (a user's value set on a bare ``nn.Module``).
#: The standard library's objects (loggers, locks, random generators) too.
_LIBRARIES = frozenset({"torch", "torch_geometric", "numpy"}) | frozenset(sys.stdlib_module_names)


def _library(obj: Any) -> bool:
    return type(obj).__module__.partition(".")[0] in _LIBRARIES and not isinstance(obj, types.SimpleNamespace)


@functools.lru_cache(maxsize=None)
def _layout(cls: type) -> tuple[frozenset[str], tuple[str, ...]]:
    """``(cached, slots)`` of a class: the names of its ``functools.cached_property`` attributes
    and of its ``__slots__`` (computed once per class)."""
    cached = frozenset(name for base in cls.__mro__ for name, attr in vars(base).items()
                       if isinstance(attr, functools.cached_property))
    slots = tuple(name for base in cls.__mro__
                  for name in ((base.__dict__["__slots__"],) if isinstance(base.__dict__.get("__slots__"), str)
                               else base.__dict__.get("__slots__", ()))
                  if name not in ("__dict__", "__weakref__"))
    return cached, slots


#: how a fingerprint names a class attribute (shared by every instance of the class)
CLASS_ATTRIBUTE = " (class attribute)"


@functools.lru_cache(maxsize=None)
def _class_fields(cls: type) -> tuple[str, ...]:
    """The data attributes of ``cls`` and its bases outside the :data:`_LIBRARIES`: values a method can change
    for every instance at once (``seen = set()`` on the class), not methods, properties or other descriptors,
    classes, or dunder names (computed once per class)."""
    names: dict[str, None] = {}
    for base in cls.__mro__:
        if base.__module__.partition(".")[0] in _LIBRARIES:
            continue
        for name, value in vars(base).items():
            if not (name.startswith("__") or callable(value) or hasattr(type(value), "__get__")):
                names.setdefault(name)
    return tuple(names)


def _fields(obj: Any) -> dict[str, Any]:
    """An object's attributes: its ``__dict__`` and its ``__slots__``, without the values of
    ``functools.cached_property`` (derived, filled in on first read)."""
    cached, slots = _layout(type(obj))
    fields = getattr(obj, "__dict__", {})
    if cached or slots:
        fields = {name: value for name, value in fields.items() if name not in cached}
        fields.update((name, getattr(obj, name)) for name in slots if hasattr(obj, name))
    return fields


def _summary(value: Any) -> Optional[tuple]:
    """A content fingerprint of a networkx graph (its numbers of nodes and edges) or a pandas
    object (a CRC-32 of ``pandas.util.hash_pandas_object``), ``None`` for anything else."""
    package = type(value).__module__.partition(".")[0]
    if package == "networkx" and hasattr(value, "number_of_edges"):
        return ("graph", value.number_of_nodes(), value.number_of_edges())
    if package == "pandas" and hasattr(value, "to_numpy"):
        hashed = sys.modules["pandas"].util.hash_pandas_object(value).to_numpy()
        return ("pandas", tuple(value.shape), zlib.crc32(np.ascontiguousarray(hashed)))
    return None


class _Fingerprints:
    """Cheap fingerprints of live values, compared with ``==`` before and after a call.

    Tensors by object and in-place version counter (``deep``: by :func:`checksum`); numpy
    arrays by a CRC-32 of their bytes (``deep``: the bytes; read-only arrays by identity);
    containers whose elements are Python or numpy scalars (or tuples of them) by those
    elements, referenced at C speed and so compared exactly; other containers element by
    element; modules held in a container by their parameters, buffers and attributes; objects
    of a class with a :class:`StateAdapter` by its fingerprint or view; PyG's ``Data`` /
    ``TemporalData`` by their stores; networkx graphs and pandas objects by :func:`_summary`;
    plain objects through their attributes (an object met again: by identity); anything else,
    and objects whose ``id`` is in ``covered`` (state parts watched otherwise), by identity.
    Every object taken by identity is kept referenced while the fingerprints live, so no ``id``
    is reused in between.
    """

    def __init__(self, covered: frozenset[int] = frozenset(), deep: bool = False) -> None:
        self.covered, self.deep, self.keep = covered, deep, []
        self._seen: set[int] = set()

    def attributes(self, root: Any) -> dict[str, Any]:
        """The fingerprint of every plain attribute reachable from ``root`` through its submodules
        and the plain objects it holds, by dotted path; scratch (:func:`scratch_names`),
        torch's module bookkeeping and the covered parts are left out."""
        out: dict[str, Any] = {}
        self._attributes(root, "", out, 0)
        return out

    def _attributes(self, obj: Any, path: str, out: dict[str, Any], depth: int) -> None:
        if id(obj) in self._seen or id(obj) in self.covered:
            return
        self._seen.add(id(obj))
        skip = scratch_names(obj) | (_INTERNAL | _reparametrized(obj) if isinstance(obj, nn.Module) else frozenset())
        library = _library(obj)
        fields = _fields(obj)
        for name, value in fields.items():
            if name not in skip and not (library and name.startswith("_")):
                where = f"{path}.{name}" if path else name
                if isinstance(value, nn.Module) or (depth < _MAX_DEPTH and self._plain_object(value)):
                    self._attributes(value, where, out, depth + 1)
                else:
                    out[where] = self.value(value, depth + 1)
        for name in _class_fields(type(obj)):  # shared by every instance: state outside the instance
            if name not in fields and name not in skip:
                out[(f"{path}.{name}" if path else name) + CLASS_ATTRIBUTE] = self.value(getattr(type(obj), name),
                                                                                        depth + 1)
        if isinstance(obj, nn.Module):
            for name, child in own_children(obj).items():
                if child is not None:
                    self._attributes(child, f"{path}.{name}" if path else name, out, depth)

    @staticmethod
    def _plain_object(value: Any) -> bool:
        """An object followed through its attributes: one with a ``__dict__`` or ``__slots__``,
        of a class of none of the :data:`_LIBRARIES` and without a :class:`StateAdapter`, and no
        container, tensor or callable."""
        return (hasattr(value, "__dict__") or hasattr(type(value), "__slots__")) and not isinstance(value, _OPAQUE) \
            and not _library(value) and state_adapter(value) is None and _summary(value) is None

    def _identity(self, value: Any) -> tuple:
        self.keep.append(value)
        return ("object", id(value))

    def value(self, value: Any, depth: int = 0) -> Any:
        """The fingerprint of one value (a Python scalar is its own)."""
        kind = type(value)
        if kind in _PLAIN:
            return value
        if isinstance(value, Tensor):
            if self.deep:
                return ("tensor", value.dtype, tuple(value.shape), int(checksum(value)))
            self.keep.append(value)
            return ("tensor", id(value), tensor_version(value))
        if depth > _MAX_DEPTH or id(value) in self.covered:
            return self._identity(value)
        if id(value) in self._seen:  # met before in this pass (a cycle, a shared object): by identity
            return ("ref",) + self._identity(value)
        adapter = state_adapter(value)
        if adapter is not None:
            return ("adapted", kind, adapter.fingerprint(value) if adapter.fingerprint is not None
                    else self.value(adapter.view(value), depth + 1))
        if isinstance(value, nn.Module):  # held in a container, outside the module tree
            inner: dict[str, Any] = {}
            self._attributes(value, "", inner, depth)
            return ("module", kind, tuple((name, self.value(t, depth + 1)) for name, t in
                                          chain(value.named_parameters(), value.named_buffers())),
                    tuple(inner.items()))
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                return ("array", value.shape, self._elements(tuple(value.ravel().tolist()), depth))
            if not value.flags.writeable:
                return ("read-only array",) + self._identity(value)
            data = np.ascontiguousarray(value)
            return ("array", data.dtype.str, data.shape, data.tobytes() if self.deep else zlib.crc32(data))
        if isinstance(value, Mapping):
            return ("map", kind, self._elements(tuple(value.keys()), depth),
                    self._elements(tuple(value.values()), depth))
        if isinstance(value, (list, tuple, deque)):
            return ("seq", kind, self._elements(tuple(value), depth))
        if isinstance(value, (set, frozenset)):
            items = tuple(value)
            return ("set", frozenset(items) if set(map(type, items)) <= _PLAIN
                    else frozenset(self.value(item, depth + 1) for item in items))
        if isinstance(value, BaseData):  # PyG's containers of events or graphs: by their stores
            return ("data", kind, self.value(value.to_dict(), depth + 1))
        summary = _summary(value)
        if summary is not None:
            return summary
        if self._plain_object(value):
            self._seen.add(id(value))
            self.keep.append(value)
            fields = _fields(value)
            return ("object", kind, tuple(fields), self._elements(tuple(fields.values()), depth))
        return self._identity(value)

    def _elements(self, items: tuple, depth: int) -> tuple:
        kinds = set(map(type, items))
        if kinds <= _PLAIN or (kinds == {tuple} and set(map(type, chain.from_iterable(items))) <= _PLAIN):
            return items  # compared by value, element by element, at C speed
        return tuple(self.value(item, depth + 1) for item in items)


# -- the guards -------------------------------------------------------------------------------
def _leaves(value: Any, path: str, tensors: dict[str, Tensor], scalars: dict[str, Any]) -> None:
    """Collect the tensors and the Python scalars of a nested state by path, in order."""
    if isinstance(value, Tensor):
        tensors[path] = value
    elif isinstance(value, Mapping):
        scalars[f"{path} (keys)"] = tuple(value.keys())
        for key, v in value.items():
            _leaves(v, f"{path}.{key}" if path else str(key), tensors, scalars)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _leaves(v, f"{path}[{i}]", tensors, scalars)
    else:
        scalars[path] = value


@dataclass(frozen=True)
class _Checksums:
    """The deep view of discovered state: shapes and device-side checksums of every tensor (read
    to the host together), and the Python values, by path."""

    shapes: dict[str, tuple]
    sums: Optional[Tensor]
    values: dict[str, Any]

    @staticmethod
    def of(parts: list[Part]) -> "_Checksums":
        tensors: dict[str, Tensor] = {}
        values: dict[str, Any] = {}
        for part in parts:
            _leaves(part.live(), part.path, tensors, values)
        sums = torch.stack([checksum(t) for t in tensors.values()]).cpu() if tensors else None
        return _Checksums({path: tuple(t.shape) for path, t in tensors.items()}, sums, values)

    def difference(self, other: "_Checksums") -> Optional[str]:
        """Path of the first tensor or value that differs, or ``None``."""
        if self.shapes != other.shapes:
            return next((p for p in self.shapes if other.shapes.get(p) != self.shapes[p]),
                        next(iter(set(other.shapes) - set(self.shapes)), "state"))
        if self.sums is not None and other.sums is not None and not torch.equal(self.sums, other.sums):
            return list(self.shapes)[int(torch.nonzero(self.sums != other.sums)[0, 0])]
        return first_difference(self.values, other.values, "state")


def _discovers(model: Any) -> bool:
    """Whether the model's state is what :func:`state_parts` finds (its class keeps the default state methods)."""
    return bool(getattr(model, "_state_discovery", False))


def _watch(model: Any, deep: bool = False, lazy: tuple[str, ...] = ()) -> tuple[dict, list[Part], _Fingerprints]:
    """``(fingerprints, parts, prints)``: identity and version of every registered parameter and
    buffer (scratch, and :func:`trained_buffers` of a module in training mode left out), the live
    state of every discovered adapter part, and the fingerprint of every plain attribute
    (:class:`_Fingerprints`, ``deep`` for its tensors; ``prints`` keeps its objects); entries
    under the ``lazy`` path prefixes (modules whose first call materialises them) left out."""
    is_module = isinstance(model, nn.Module)
    parts = state_parts(model) if is_module and _discovers(model) else []
    prints = _Fingerprints(frozenset(id(part.obj) for part in parts if part.kind != "buffers"), deep)
    out: dict = {}
    if is_module:
        for path, module in model.named_modules():
            prefix = f"{path}." if path else ""
            ignored = scratch_names(module) | (trained_buffers(module) if module.training else frozenset())
            for name, tensor in chain(own_parameters(module).items(), own_buffers(module).items()):
                if tensor is not None and name not in ignored:
                    out[prefix + name] = (tensor, tensor_version(tensor))
    for part in parts:
        if part.kind == "adapter":
            fingerprint = part.adapter.fingerprint  # type: ignore[union-attr]
            out[f"state of {part.path}"] = fingerprint(part.obj) if fingerprint else prints.value(part.live())
    out.update(prints.attributes(model))
    return {name: value for name, value in out.items() if not name.startswith(lazy)}, parts, prints


def _changed(before: dict, after: dict) -> Optional[str]:
    """The first entry that was added, removed or changed, or ``None``."""
    for name in chain(before, after):
        if name not in before or name not in after:
            return name
    for name, value in before.items():
        now = after[name]
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], Tensor):
            if now[0] is not value[0] or now[1] != value[1]:
                return name
        elif now is not value and now != value:  # a NaN is equal to itself
            return name
    return None


def _deep_view(model: Any, parts: list[Part]) -> Any:
    """What the deep check compares: the snapshot of a model with its own state methods, or, for
    discovered state, device-side checksums of every tensor plus the Python values."""
    return _Checksums.of(parts) if _discovers(model) else model.snapshot()


def _deep_difference(before: Any, after: Any) -> Optional[str]:
    if isinstance(before, _Checksums):
        return before.difference(after)
    return first_difference(before, after)


def _watchable(model: Any, parts: list[Part]) -> bool:
    """Whether identity and version checks cover the whole state."""
    if _in_registered_tensors(model):
        return True
    return _discovers(model) and all(part.kind != "stateful" or _in_registered_tensors(part.obj) for part in parts)


def _in_registered_tensors(obj: Any) -> bool:
    """Whether ``obj`` declares its whole state in registered tensors: a model in its ``capabilities``,
    a stateful part (tgeval's neighbour buffer, memory) as a class attribute ``state_in_registered_tensors``."""
    capabilities = getattr(obj, "capabilities", None)
    return bool(getattr(obj, "state_in_registered_tensors", False) if capabilities is None
                else capabilities.state_in_registered_tensors)


@contextmanager
def no_state_change(model: Stateful, what: str = "scoring", *, deep: Optional[bool] = None) -> Iterator[None]:
    """Fail with :class:`LeakageError` if ``model`` changes its state or parameters inside.

    Two checks. **Identity and version** (no copy, no device work): every registered parameter
    and buffer of an ``nn.Module`` must be the same tensor object with the same in-place
    version counter afterwards; for a model using state discovery (the default state methods
    of :class:`~tgeval.models.base.TemporalLinkModel`) the same holds for the live state of
    every part found through an adapter (e.g. PyG's ``TGNMemory`` message stores: keys and
    entry objects; ``LastNeighborLoader``'s tables and counter); and every plain attribute
    reachable from the model outside those parts (in any submodule or plain object: containers,
    numpy arrays, unregistered tensors, numbers) must keep its fingerprint: tensors by identity
    and version, arrays by a CRC-32 of their bytes, containers of scalars by their elements.
    **Deep**: the full state is compared, ``model.snapshot()`` before and after for a model
    with its own state methods, or device-side :func:`checksum` of every discovered tensor (one
    host read of the result); ``deep=True`` also fingerprints plain tensors by checksum and
    arrays by their bytes.

    The deep check runs by default unless the first one covers the whole state: a model
    declaring ``Capabilities(state_in_registered_tensors=True)``, or a discovering model whose objects with
    their own state methods declare it (tgeval's neighbour buffer and memory do). Writes that
    bypass autograd's version counter (through ``tensor.data`` or a numpy view of a tensor) are
    only caught by the deep check (``deep=True``).

    Scratch (:func:`scratch_names`, e.g. PyG's ``assoc`` vectors) is ignored, and so are
    :func:`trained_buffers` of a module in training mode and a lazy module materialised inside.

    Example:
        >>> with no_state_change(model):          # doctest: +SKIP
        ...     scores = model.score(src, dst, t)
    """
    lazy = tuple(f"{path}." if path else "" for path, module in model.named_modules()
                 if isinstance(module, LazyModuleMixin) and module.has_uninitialized_params()) \
        if isinstance(model, nn.Module) else ()  # their first call materialises them
    checksums = deep is True  # plain tensors by checksum, else by identity and version: the same both times
    before, parts, _kept = _watch(model, checksums, lazy)  # _kept: no id reused before the comparison
    if deep is None:
        deep = not _watchable(model, parts)
    deep_before = _deep_view(model, parts) if deep else None
    yield
    after, _, _ = _watch(model, checksums, lazy)
    where = _changed(before, after)
    if where is None and deep:
        where = _deep_difference(deep_before, _deep_view(model, parts))
    if where is not None:
        raise LeakageError(
            f"{type(model).__name__} changed `{where}` while {what}. Scoring must be a pure "
            f"function of the state: move state updates into `update()`, which the engine calls only "
            f"after a timestamp batch is scored.{_scratch_hint(where)}"
        )


def _attribute(where: str) -> str:
    """The attribute's own name in a fingerprint's path (``memory.seen (class attribute)`` -> ``seen``)."""
    return where.removesuffix(CLASS_ATTRIBUTE).rsplit(".", 1)[-1]


def _scratch_hint(where: str) -> str:
    """The advice for a changed attribute or buffer that may be scratch (not for an adapter's state)."""
    if where.startswith("state of "):
        return ""
    return (f" If `{where}` is scratch space that no later call reads (an index vector such as PyG's `assoc`), "
            f"declare it on the class that owns it: `state_scratch = ({_attribute(where)!r},)`.")


# -- state outside discovery ----------------------------------------------------------------------
def _hidden(model: Any) -> Optional[tuple[dict, _Fingerprints]]:
    """Fingerprints of the plain attributes of a model whose state is discovered, the discovered
    parts left out; ``None`` for a model with its own state methods (its state is its own)."""
    if not (isinstance(model, nn.Module) and _discovers(model)):
        return None
    prints = _Fingerprints(frozenset(id(part.obj) for part in state_parts(model) if part.kind != "buffers"))
    return prints.attributes(model), prints


def _check_hidden(model: Any, before: Optional[tuple[dict, _Fingerprints]], action: str) -> None:
    after = _hidden(model)
    where = None if before is None or after is None else _changed(before[0], after[0])
    if where is None:
        return
    name = type(model).__name__
    fix = ("; and a class attribute is shared by every instance of the class, so it also carries one model's "
           "events into every other. Create it per instance (in __init__), kept" if where.endswith(CLASS_ATTRIBUTE)
           else ". Fix it")
    raise HiddenStateError(
        f"{name}.{action}() changed `{where}`, which is not state tgeval can see: {name}'s snapshot(), "
        f"restore() and reset_state() (state discovery: registered buffers, objects with their own state "
        f"methods, classes with a StateAdapter) leave it as it is, so one run's events would be carried into "
        f"the next{fix} one of three ways: (1) keep it in a registered buffer, "
        f"`self.register_buffer({_attribute(where)!r}, tensor, persistent=False)` (modules in a plain "
        f"dict or list: nn.ModuleDict / nn.ModuleList); (2) keep it in an object of a class of your own and "
        f"register a `tgeval.stream.state.StateAdapter` for that class with "
        f"`tgeval.stream.state.register_state_adapter`; "
        f"(3) override snapshot(), restore() and reset_state() to cover it.{_scratch_hint(where)}")


def checked_update(model: Any, batch: Any) -> None:
    """``model.update(batch)``, then :class:`~tgeval.errors.HiddenStateError` if the call changed a
    plain attribute that state discovery does not cover (anything :func:`no_state_change`
    fingerprints outside the discovered parts; a model with its own ``snapshot`` is trusted).
    Costs one walk over the model's attributes before and after."""
    before = _hidden(model)
    model.update(batch)
    _check_hidden(model, before, "update")


def checked_reset(model: Any) -> None:
    """``model.reset_state()``, checked as :func:`checked_update` (a ``reset_state`` that clears a plain
    attribute shows state that ``snapshot`` and ``restore`` would not carry), then :func:`detach_history`."""
    before = _hidden(model)
    model.reset_state()
    _check_hidden(model, before, "reset_state")
    if isinstance(model, nn.Module):
        detach_history(model)  # a reset in place (PyG's memory zeroed) keeps the graph it had


# -- one pass at a time ---------------------------------------------------------------------------
#: the models in a pass (``id(model)``): the thread that holds each, and how deep (a pass inside a pass)
_IN_USE: dict[int, tuple[int, int]] = {}
_IN_USE_LOCK = threading.Lock()


def exclusive(function: Callable) -> Callable:
    """``function(model, ...)`` (``evaluate``, ``train_epoch``, ...) as a pass that holds ``model`` for this
    thread: a pass of another thread on the same model object meanwhile raises
    :class:`~tgeval.errors.LeakageError`. A model holds one state, which every pass resets and feeds; two at once
    would score each from the other's events. The same thread may nest passes (``fit`` evaluates between its
    epochs). A lock and a dictionary entry per call."""
    @functools.wraps(function)
    def held(model: Any, *args: Any, **kwargs: Any) -> Any:
        key, me = id(model), threading.get_ident()
        with _IN_USE_LOCK:
            owner, depth = _IN_USE.get(key, (me, 0))
            if owner != me:
                raise LeakageError(
                    f"{type(model).__name__} is in a pass of another thread, and {function.__name__} would start "
                    f"one on the same object: a model holds one state, which each pass resets and feeds with its "
                    f"events, so each would score from the other's. Give each thread its own model "
                    f"(copy.deepcopy(model)), or run the passes one after the other.")
            _IN_USE[key] = (me, depth + 1)
        try:
            return function(model, *args, **kwargs)
        finally:
            with _IN_USE_LOCK:
                if depth:
                    _IN_USE[key] = (me, depth)
                else:
                    del _IN_USE[key]
    return held
