"""Every use of a private name of PyG or torch, behind public names (docs/guide/pyg-models.md,
"PyG and torch internals").

tgeval needs a few things that PyG and torch do not offer publicly: PyG's ``TGNMemory`` keeps its
pending messages in plain dicts and builds them in private methods, both PyG classes write a
private scratch vector ``_assoc``, and the state guard reads torch's per-module tables and
version counters. Each such use is here, and only here; ``tests/unit/test_compat.py`` checks
every assumption made about them against the installed PyG and torch, one test per assumption.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional

from torch import Tensor, nn
from torch.nn.modules.batchnorm import _NormBase
from torch.nn.utils.parametrizations import _SpectralNorm
from torch_geometric.nn.models.tgn import LastNeighborLoader, TGNMemory

__all__ = ["TGN_MEMORY_SCRATCH", "HookedTGNMemory", "message_stores", "set_message_stores", "move_loader_scratch",
           "ApplyHookModule", "trains_own_buffers", "forward_pre_hooks", "own_buffers", "own_parameters",
           "own_children",
           "tensor_version", "is_view", "view_base"]

#: ``TGNMemory``'s registered buffers that are scratch, not state: its node-to-row map
TGN_MEMORY_SCRATCH = ("_assoc",)

MessageStore = dict[int, tuple[Tensor, Tensor, Tensor, Tensor]]


# -- PyG ----------------------------------------------------------------------------------------
class HookedTGNMemory(TGNMemory):
    """PyG's ``TGNMemory`` whose private hooks call public methods a subclass overrides:
    :meth:`reset_message_store` (PyG's ``_reset_message_store``, run by ``__init__`` and
    ``reset_state``) and :meth:`updated_memory` (PyG's ``_get_updated_memory``). Its scratch
    buffer ``_assoc`` (saved in ``state_dict``) starts zeroed, so a checkpoint holds no
    uninitialised bytes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._assoc.zero_()

    def reset_message_store(self) -> None:
        """Empty the pending messages (PyG's dicts of empty tensors per node)."""
        super()._reset_message_store()

    def updated_memory(self, n_id: Tensor, sizes: Optional[list[int]] = None) -> tuple[Tensor, Tensor]:
        """Memory ``[n, D]`` and last-update times ``[n]`` of ``n_id`` with their pending messages
        applied, storing nothing (PyG's version; ``sizes`` is for subclasses)."""
        return super()._get_updated_memory(n_id)

    def _reset_message_store(self) -> None:
        self.reset_message_store()

    def _get_updated_memory(self, n_id: Tensor, sizes: Optional[list[int]] = None) -> tuple[Tensor, Tensor]:
        return self.updated_memory(n_id, sizes)


def message_stores(memory: TGNMemory) -> tuple[MessageStore, MessageStore]:
    """PyG ``TGNMemory``'s pending messages ``(msg_s_store, msg_d_store)``: dicts from node id to
    ``(src [m], dst [m], t [m], raw_msg [m, R])``, kept outside ``state_dict`` (the live dicts)."""
    return memory.msg_s_store, memory.msg_d_store


def set_message_stores(memory: TGNMemory, source: MessageStore, destination: MessageStore) -> None:
    """Replace PyG ``TGNMemory``'s pending messages (:func:`message_stores`) by these dicts."""
    memory.msg_s_store, memory.msg_d_store = source, destination


def move_loader_scratch(loader: LastNeighborLoader, fn: Callable[[Tensor], Tensor]) -> None:
    """Apply ``fn`` (a module's ``.to()``, ``.cuda()``, ...) to ``LastNeighborLoader``'s scratch
    map ``_assoc [num_nodes]``, which is not state (written before every read)."""
    loader._assoc = fn(loader._assoc)


# -- torch --------------------------------------------------------------------------------------
class ApplyHookModule(nn.Module):
    """An ``nn.Module`` told, by :meth:`tensors_applied`, after ``.to()``, ``.cuda()``, ``.double()``
    and the like have replaced its tensors (torch runs them all through ``Module._apply``)."""

    def tensors_applied(self, fn: Callable[[Tensor], Tensor]) -> None:
        """Called after ``fn`` was applied to the module's parameters and buffers."""

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any) -> "ApplyHookModule":
        super()._apply(fn, *args, **kwargs)
        self.tensors_applied(fn)
        return self


def trains_own_buffers(module: nn.Module) -> bool:
    """Whether training moves every buffer of ``module`` like a parameter: a normalisation layer
    with running statistics (torch's ``_NormBase``: ``BatchNorm``, ``InstanceNorm``, ...) or the
    parametrization of ``torch.nn.utils.parametrizations.spectral_norm`` (``_u``, ``_v``)."""
    return isinstance(module, (_NormBase, _SpectralNorm))


def forward_pre_hooks(module: nn.Module) -> Iterable[Any]:
    """The hooks run before ``module``'s ``forward`` (torch's older ``spectral_norm`` and
    ``weight_norm`` are such hook objects)."""
    return module._forward_pre_hooks.values()


def own_buffers(module: nn.Module) -> Mapping[str, Optional[Tensor]]:
    """The live table of ``module``'s own registered buffers, by name, in registration order (a
    name registered with ``None`` included); read without building the generator of
    ``named_buffers(recurse=False)``, which the guard would pay per module per check."""
    return module._buffers


def own_parameters(module: nn.Module) -> Mapping[str, Optional[Tensor]]:
    """The live table of ``module``'s own parameters, as :func:`own_buffers`."""
    return module._parameters


def own_children(module: nn.Module) -> Mapping[str, Optional[nn.Module]]:
    """The live table of ``module``'s direct submodules, as :func:`own_buffers` (``named_children()``
    builds a generator and a set of the modules seen)."""
    return module._modules


def tensor_version(tensor: Tensor) -> int:
    """The tensor's in-place version counter: changed by every in-place write through autograd's
    view of it (not by writes through ``tensor.data`` or a numpy view), shared with its views."""
    return tensor._version


def view_base(tensor: Tensor) -> Optional[Tensor]:
    """The tensor whose storage ``tensor`` is a view of (the first one: a view of a view has the
    original as its base), or ``None`` for a tensor that is no view."""
    return tensor._base


def is_view(tensor: Tensor) -> bool:
    """Whether ``tensor`` is a view of another tensor's storage (``detach_()`` is refused on some views)."""
    return tensor._is_view()
