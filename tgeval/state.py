"""State of temporal models: the ``Stateful`` protocol, snapshots, and the scoring guard (SPEC §2).

A *state* is a nested ``dict`` of tensors (and plain Python values) holding everything a
model has learned from the event history — memory, last-update times, neighbour buffers,
EdgeBank contents — but not its trained parameters.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from tgeval.errors import LeakageError

__all__ = ["State", "Stateful", "clone_state", "first_difference", "no_state_change"]

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


def _tensor_versions(model: Stateful) -> dict[str, tuple[Tensor, int]]:
    """Every registered parameter and buffer with its in-place version counter.

    Holding the tensor itself (not its address) makes a reassigned buffer detectable by
    identity; the version counter catches in-place writes.
    """
    if not isinstance(model, nn.Module):
        return {}
    named = list(model.named_parameters()) + list(model.named_buffers())
    return {name: (tensor, tensor._version) for name, tensor in named}


def _changed_tensor(before: dict[str, tuple[Tensor, int]], model: Stateful) -> Optional[str]:
    after = _tensor_versions(model)
    if set(before) != set(after):
        return f"registered tensors (keys {sorted(set(before) ^ set(after))})"
    for name, (tensor, version) in before.items():
        now, now_version = after[name]
        if now is not tensor or now_version != version:
            return name
    return None


@contextmanager
def no_state_change(model: Stateful, what: str = "scoring", *, deep: Optional[bool] = None) -> Iterator[None]:
    """Fail with :class:`LeakageError` if ``model`` changes its state or parameters inside.

    Two checks: every registered parameter and buffer of an ``nn.Module`` must be the same
    tensor object with the same in-place version counter afterwards (no copy, catches
    in-place writes and reassignment); and ``model.snapshot()`` before and after must be
    equal (one snapshot copy and comparison), skipped for models that declare
    ``state_in_registered_tensors = True`` (their whole state is registered buffers, which
    the first check already covers) unless ``deep=True``.

    Writes that bypass autograd's version counter (through ``tensor.data`` or a numpy view)
    are only caught by the snapshot comparison: use ``deep=True`` to audit such models.

    Example:
        >>> with no_state_change(model):          # doctest: +SKIP
        ...     scores = model.score(src, dst, t)
    """
    tensors = _tensor_versions(model)
    if deep is None:
        deep = not getattr(model, "state_in_registered_tensors", False)
    before = model.snapshot() if deep else None
    yield
    where = _changed_tensor(tensors, model)
    if where is None and deep:
        where = first_difference(before, model.snapshot())
    if where is not None:
        raise LeakageError(
            f"{type(model).__name__} changed `{where}` while {what}. Scoring must be a pure "
            f"function of the state: move state updates into `update()`, which the replay engine "
            f"calls only after a timestamp batch is scored."
        )
