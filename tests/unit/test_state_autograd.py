"""No state that tgeval resets, restores or switches modes on keeps an autograd graph
(:func:`tgeval.stream.state.detach_history`): PyG's ``TGNMemory`` applies its pending messages with autograd when it
enters eval mode and zeroes its memory in place on reset, both of which used to keep the graph, so the next
epoch's ``backward`` ran through a freed one."""

import pytest
import torch
from torch import nn

from tgeval.errors import ModelCapabilityError
from tgeval.stream.state import checked_reset, detach_history, restore_detached
from tests.helpers import readme_pyg_tgn, registered_adapter

PygTGN, PygTGNConfig = readme_pyg_tgn()


def graph_carrying_model():
    """A PyG-built TGN in training mode whose memory was written with autograd (as PyG's training step does)."""
    torch.manual_seed(0)
    model = PygTGN(PygTGNConfig(10, msg_dim=1, dim=4, num_neighbors=2)).train()
    src, dst, t = torch.tensor([0, 1, 2]), torch.tensor([3, 4, 5]), torch.tensor([1, 1, 2])
    model.memory.update_state(src, dst, t, torch.zeros(3, 1))  # pending messages
    model.memory.update_state(src, dst, t + 5, torch.zeros(3, 1))  # applied with autograd: memory has a grad_fn
    assert model.memory.memory.grad_fn is not None
    return model


def test_switching_to_eval_mode_leaves_no_graph_and_keeps_values():
    model = graph_carrying_model()
    reference = graph_carrying_model()
    with torch.no_grad():
        nn.Module.train(reference, False)  # PyG's own switch, without gradients: the values to expect
    model.eval()
    assert model.memory.memory.grad_fn is None and not model.memory.memory.requires_grad
    assert torch.equal(model.memory.memory, reference.memory.memory)


@pytest.mark.parametrize("how", ["reset", "restore", "detach"])
def test_reset_restore_and_detach_cut_the_graph_in_place(how):
    model = graph_carrying_model()
    memory = model.memory.memory
    values = memory.detach().clone()
    if how == "reset":
        checked_reset(model)
        values = torch.zeros_like(values)
    elif how == "restore":
        restore_detached(model, model.snapshot())
    else:
        detach_history(model)
    assert model.memory.memory.grad_fn is None and torch.equal(model.memory.memory, values)
    assert model.memory.memory is memory  # detached in place: identity kept (the guards key on it)


def test_graph_in_a_message_store_entry_is_detached():
    model = graph_carrying_model()
    weight = torch.ones(1, requires_grad=True)
    model.memory.update_state(torch.tensor([7]), torch.tensor([8]), torch.tensor([9]), torch.ones(1, 1) * weight)
    assert model.memory.msg_s_store[7][3].grad_fn is not None
    detach_history(model)
    assert all(x.grad_fn is None for store in (model.memory.msg_s_store, model.memory.msg_d_store)
               for entry in store.values() for x in entry)


class Holder:
    def __init__(self):
        self.base = torch.ones(4, requires_grad=True) * 2
        self.view = self.base[:2]


class HolderModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.holder = Holder()


def test_a_graph_tgeval_cannot_cut_is_refused_with_the_fix():
    with registered_adapter(Holder, view=lambda h: {"view": h.view}, load=lambda h, s: None, reset=lambda h: None):
        with pytest.raises(ModelCapabilityError, match=r"holder\.view.*detach_state"):
            detach_history(HolderModel())
