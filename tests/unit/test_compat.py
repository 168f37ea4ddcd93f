"""The assumptions :mod:`tgeval.core.compat` makes about PyG's and torch's private names, one test each,
checked on real objects of the installed versions: a release that breaks one fails the test that
states it."""

import warnings

import pytest
import torch
from torch import nn
from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator, LastNeighborLoader, TGNMemory

from tgeval.core.compat import (TGN_MEMORY_SCRATCH, ApplyHookModule, HookedTGNMemory, forward_pre_hooks, is_view,
                           message_stores, move_loader_scratch, own_buffers, own_children, own_parameters, set_message_stores,
                           tensor_version, trains_own_buffers, view_base)
from tgeval.stream.state import first_difference

N, R, D = 6, 3, 4


def memory_with_messages(cls=TGNMemory):
    """A memory in training mode holding pending messages of nodes 0, 1, 2 (two batches: the second
    applies the first's messages of node 1)."""
    torch.manual_seed(0)
    memory = cls(N, R, D, D, IdentityMessage(R, D, D), LastAggregator())
    memory.update_state(torch.tensor([0, 1]), torch.tensor([1, 2]), torch.tensor([1, 2]), torch.randn(2, R))
    memory.update_state(torch.tensor([1]), torch.tensor([2]), torch.tensor([5]), torch.randn(1, R))
    return memory


def live_state(memory):
    return {"memory": memory.memory.clone(), "last_update": memory.last_update.clone(),
            "stores": [{node: tuple(x.clone() for x in entry) for node, entry in store.items()}
                       for store in message_stores(memory)]}


def test_tgn_memory_keeps_pending_messages_in_dicts_by_node_outside_state_dict():
    """Assumption: ``TGNMemory.msg_s_store`` / ``msg_d_store`` are dicts from every node id to
    ``(src, dst, t, raw_msg)`` tensors of its pending messages (as source / as destination), kept
    outside ``state_dict``; replacing the dicts replaces the pending messages."""
    memory = memory_with_messages()
    source, destination = message_stores(memory)
    assert type(source) is dict and type(destination) is dict
    assert set(source) == set(destination) == set(range(N))
    src, dst, t, raw = source[1]  # node 1 was the source of the second batch's event
    assert src.tolist() == [1] and dst.tolist() == [2] and t.tolist() == [5] and raw.shape == (1, R)
    assert destination[2][2].tolist() == [5] and source[5][0].numel() == 0
    assert not any("store" in key for key in memory.state_dict())
    expected = memory(torch.arange(N))[0]  # training mode: the pending messages applied
    empty = {node: source[5] for node in range(N)}
    set_message_stores(memory, source, empty)
    assert message_stores(memory) == (source, empty)
    assert not torch.equal(memory(torch.arange(N))[0], expected)  # the destinations' messages are gone


def test_get_updated_memory_returns_memory_and_last_update_of_n_id_without_changing_state():
    """Assumption: PyG's ``TGNMemory._get_updated_memory(n_id)`` returns ``(memory [n, D],
    last_update [n])`` of ``n_id`` with their pending messages applied, changes no state, and is
    what ``forward`` returns in training mode (so a subclass overriding it changes ``forward``)."""
    memory = memory_with_messages()
    before = live_state(memory)
    n_id = torch.tensor([1, 2, 4])
    got, last_update = memory._get_updated_memory(n_id)
    assert got.shape == (3, D) and last_update.tolist() == [5, 5, 0]
    assert first_difference(live_state(memory), before) is None
    forward = memory(n_id)
    assert torch.equal(forward[0], got) and torch.equal(forward[1], last_update)


def test_tgn_memory_builds_its_stores_in_reset_message_store_at_init_and_reset():
    """Assumption: ``TGNMemory.__init__`` and ``reset_state`` build empty message stores by calling
    ``_reset_message_store`` (which :class:`HookedTGNMemory` routes to ``reset_message_store``), and
    ``forward`` reads ``_get_updated_memory`` (routed to ``updated_memory``)."""
    calls = []

    class Recording(HookedTGNMemory):
        def reset_message_store(self):
            calls.append("reset")
            super().reset_message_store()

        def updated_memory(self, n_id, sizes=None):
            calls.append("updated")
            return super().updated_memory(n_id, sizes)

    memory = memory_with_messages(Recording)
    assert calls[0] == "reset" and "updated" in calls  # update_state applies pending messages through it
    calls.clear()
    memory(torch.tensor([1]))
    assert calls == ["updated"]
    memory.reset_state()
    assert calls[-1] == "reset"
    assert all(entry[0].numel() == 0 for store in message_stores(memory) for entry in store.values())


def test_tgn_memory_assoc_is_a_saved_scratch_buffer_of_size_num_nodes():
    """Assumption: ``TGNMemory._assoc`` (:data:`TGN_MEMORY_SCRATCH`) is a registered buffer ``[num_nodes]``,
    saved in ``state_dict``, written before every read: its content never changes a result.
    :class:`HookedTGNMemory` starts it zeroed."""
    assert TGN_MEMORY_SCRATCH == ("_assoc",)
    memory = memory_with_messages()
    assert memory._assoc.shape == (N,) and "_assoc" in memory.state_dict() and "_assoc" in dict(memory.named_buffers())
    n_id = torch.tensor([0, 2, 3])
    expected = memory(n_id)
    memory._assoc.fill_(-7)
    got = memory(n_id)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    fresh = HookedTGNMemory(N, R, D, D, IdentityMessage(R, D, D), LastAggregator())
    assert torch.equal(fresh._assoc, torch.zeros(N, dtype=torch.long))


def test_last_neighbor_loader_assoc_is_a_plain_scratch_tensor_of_size_num_nodes():
    """Assumption: ``LastNeighborLoader._assoc`` is a plain tensor attribute ``[num_nodes]`` (the loader is
    no module), written before every read: its content never changes what the loader returns, and
    :func:`move_loader_scratch` replaces it."""
    loader = LastNeighborLoader(N, size=2)
    assert not isinstance(loader, nn.Module)
    assert isinstance(loader._assoc, torch.Tensor) and loader._assoc.shape == (N,)
    loader.insert(torch.tensor([0, 1, 3]), torch.tensor([1, 2, 0]))
    expected = loader(torch.tensor([0, 2]))
    loader._assoc.fill_(5)
    got = loader(torch.tensor([0, 2]))
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    move_loader_scratch(loader, lambda t: t.to(torch.int32))
    assert loader._assoc.dtype == torch.int32


def test_module_apply_is_what_to_and_double_run_with_a_function_of_one_tensor():
    """Assumption: ``.to()``, ``.double()`` (and ``.cuda()``, ``.half()``) replace a module's tensors
    through ``Module._apply(fn)``, ``fn`` taking and returning one tensor; :class:`ApplyHookModule`
    is told after it, with the same function."""
    seen = []

    class Told(ApplyHookModule):
        def __init__(self):
            super().__init__()
            self.register_buffer("x", torch.zeros(2))
            self.lin = nn.Linear(1, 1)

        def tensors_applied(self, fn):
            seen.append((fn(torch.ones(1)).dtype, self.x.dtype))

    module = Told()
    assert module.double() is module and module.to(torch.float16) is module
    assert seen == [(torch.float64, torch.float64), (torch.float16, torch.float16)]


def test_norm_layers_and_spectral_norm_parametrizations_keep_trained_buffers():
    """Assumption: torch's normalisation layers with running statistics derive from ``_NormBase``,
    and ``parametrizations.spectral_norm`` keeps its power-iteration vectors as the buffers of a
    ``_SpectralNorm`` module; both move with training. Other layers are not such modules."""
    for norm in (nn.BatchNorm1d(3), nn.InstanceNorm1d(3, track_running_stats=True), nn.SyncBatchNorm(3)):
        assert trains_own_buffers(norm)
        before = norm.running_mean.clone()
        norm.train()(torch.randn(4, 3, 2) if isinstance(norm, nn.InstanceNorm1d) else torch.randn(4, 3))
        assert not torch.equal(norm.running_mean, before), type(norm).__name__
    linear = nn.utils.parametrizations.spectral_norm(nn.Linear(3, 3))
    inner = linear.parametrizations.weight[0]
    assert trains_own_buffers(inner) and {name for name, _ in inner.named_buffers()} == {"_u", "_v"}
    before = inner._u.clone()
    with torch.no_grad():
        linear.parametrizations.weight.original.normal_()
    linear.train().weight  # noqa: B018 - reading the weight runs a power iteration in training mode
    assert not torch.equal(inner._u, before)
    assert not trains_own_buffers(nn.Linear(2, 2)) and not trains_own_buffers(nn.LayerNorm(3))


def test_old_spectral_and_weight_norm_are_forward_pre_hooks_naming_their_attribute():
    """Assumption: torch's older ``torch.nn.utils.spectral_norm`` / ``weight_norm`` are forward
    pre-hooks (``SpectralNorm`` / ``WeightNorm`` objects) whose ``name`` is the attribute they
    recompute before every call."""
    from torch.nn.utils.spectral_norm import SpectralNorm
    from torch.nn.utils.weight_norm import WeightNorm

    spectral = nn.utils.spectral_norm(nn.Linear(2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated in favour of the parametrizations
        weighted = nn.utils.weight_norm(nn.Linear(2, 2), name="bias")
    assert [(type(h), h.name) for h in forward_pre_hooks(spectral)] == [(SpectralNorm, "weight")]
    assert [(type(h), h.name) for h in forward_pre_hooks(weighted)] == [(WeightNorm, "bias")]
    assert list(forward_pre_hooks(nn.Linear(2, 2))) == []


def test_own_tables_are_the_modules_own_buffers_parameters_and_children_live_and_in_order():
    """Assumption: ``Module._buffers`` / ``_parameters`` / ``_modules`` are live dicts of the module's
    own entries (no submodule's), in registration order, a ``None`` registration included, agreeing
    with ``named_buffers`` / ``named_parameters(recurse=False)`` / ``named_children``; assigning a
    buffer's name replaces its entry (persistence kept)."""
    module = nn.Linear(2, 2)
    module.register_buffer("b", torch.zeros(1))
    module.register_buffer("gone", None)
    module.register_buffer("a", torch.ones(1), persistent=False)
    module.child = nn.BatchNorm1d(2)
    assert list(own_buffers(module)) == ["b", "gone", "a"] and own_buffers(module)["gone"] is None
    assert [(k, v) for k, v in own_buffers(module).items() if v is not None] == list(
        module.named_buffers(recurse=False))
    assert list(own_parameters(module).items()) == list(module.named_parameters(recurse=False))
    module.register_module("absent", None)
    assert list(own_children(module)) == ["child", "absent"] and own_children(module)["absent"] is None
    assert list(module.named_children()) == [("child", module.child)]
    table, replacement = own_buffers(module), torch.full((3,), 2.0)
    module.a = replacement
    assert own_buffers(module) is table and table["a"] is replacement and "a" not in module.state_dict()


def test_tensor_version_counts_in_place_writes_only():
    """Assumption: ``Tensor._version`` grows with every in-place write (also through a view, which
    shares it), not with reads or out-of-place operations, nor with writes through ``.data``."""
    x = torch.zeros(4)
    start = tensor_version(x)
    _ = x + 1, x.sum(), x[1:].clone()
    assert tensor_version(x) == start
    x.add_(1)
    x[1:].fill_(3)
    assert tensor_version(x) >= start + 2 and tensor_version(x[1:]) == tensor_version(x)
    now = tensor_version(x)
    x.data.fill_(9)
    assert tensor_version(x) == now


def test_is_view_tells_views_from_tensors_owning_their_storage():
    """Assumption: ``Tensor._is_view()`` is true for a view of another tensor (slice, ``view``,
    ``expand``), where in-place ``detach_()`` is refused, and false for a tensor with its own
    storage (a clone, a detached tensor), where ``detach_()`` works."""
    base = torch.zeros(4, requires_grad=True) * 2
    assert not any(is_view(t) for t in (base, base.clone(), base.detach(), torch.zeros(2)))
    assert all(is_view(v) for v in (base[1:], base.view(2, 2), base[:1].expand(3)))
    with pytest.raises(RuntimeError):
        base[1:].detach_()
    assert base.detach_().grad_fn is None


def test_view_base_is_the_tensor_a_view_was_taken_from():
    """Assumption: ``Tensor._base`` is the tensor whose storage a view shares, the original one for a
    view of a view, and ``None`` for a tensor with its own storage."""
    items = torch.arange(10)
    prefix = items[:6]
    assert view_base(prefix) is items and view_base(prefix[:3]) is items
    assert view_base(items) is None and view_base(prefix.clone()) is None
