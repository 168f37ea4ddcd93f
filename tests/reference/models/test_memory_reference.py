"""Building blocks of the neural models against plain-Python references and PyG's own modules.

* :class:`LatestMeanAggregator` vs a loop over nodes (random inputs with timestamp ties);
* :class:`TensorMemory` vs PyG's :class:`TGNMemory` in training mode;
* :class:`NeighborBuffer` vs "the last K interactions of each node, both directions";
* the fixed-shape star attention vs ``TransformerConv`` over PyG's ``LastNeighborLoader`` subgraph;
* :class:`FixedTimeEncoder` vs its formula;
* :class:`BitDropout` vs its formula (the mask from the same bits, its rate, its gradient);
* GraphMixer's token-major mixer vs GraphMixer's formula on node-major token sets.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator, LastNeighborLoader, TGNMemory, TimeEncoder

from tgeval.data.synthetic import generate_events
from tgeval.stream.loader import TimestampBatchLoader
from tgeval.models.graphmixer import GraphMixer
from tgeval.models.config import GraphMixerConfig
from tgeval.models.layers import BitDropout, FixedTimeEncoder, GraphAttentionEmbedding
from tgeval.models.memory import LatestMeanAggregator, TensorMemory
from tgeval.models.neighbors import NeighborBuffer
from tgeval.stream.state import first_difference


# -- LatestMeanAggregator ---------------------------------------------------------------
def _reference_latest_mean(msg, index, t, dim_size):
    """Per node: mean (float64) of the messages carrying its latest timestamp; zeros if none."""
    out = [[0.0] * msg.size(1) for _ in range(dim_size)]
    for node in range(dim_size):
        rows = [i for i in range(index.numel()) if int(index[i]) == node]
        if not rows:
            continue
        latest = max(int(t[i]) for i in rows)
        chosen = [i for i in rows if int(t[i]) == latest]
        out[node] = [sum(float(msg[i, f]) for i in chosen) / len(chosen) for f in range(msg.size(1))]
    return torch.tensor(out, dtype=torch.float64)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), num_msgs=st.integers(0, 30), dim_size=st.integers(1, 8),
       width=st.integers(1, 4), max_t=st.integers(0, 3), negative_times=st.booleans())
def test_latest_mean_matches_reference_and_ignores_order(seed, num_msgs, dim_size, width, max_t, negative_times):
    gen = torch.Generator().manual_seed(seed)
    msg = torch.randn(num_msgs, width, generator=gen)
    index = torch.randint(0, dim_size, (num_msgs,), generator=gen)
    t = torch.randint(0, max_t + 1, (num_msgs,), generator=gen)  # small range: many ties
    if negative_times:
        t = t - 10
    agg = LatestMeanAggregator()
    out = agg(msg, index, t, dim_size)
    assert out.shape == (dim_size, width) and out.dtype == msg.dtype
    torch.testing.assert_close(out.double(), _reference_latest_mean(msg, index, t, dim_size), rtol=1e-6, atol=1e-6)
    # Order invariance: any permutation of the messages gives the same aggregate (up to the float
    # summation order of three or more tied messages; exactly for at most two per node).
    perm = torch.randperm(num_msgs, generator=gen)
    shuffled = agg(msg[perm], index[perm], t[perm], dim_size)
    torch.testing.assert_close(shuffled, out, rtol=1e-6, atol=1e-6)
    latest = torch.zeros(dim_size, dtype=torch.long).scatter_reduce(0, index, t, "amax", include_self=False)
    tied = torch.bincount(index[t == latest[index]], minlength=dim_size)
    small = tied <= 2
    assert torch.equal(shuffled[small], out[small])


def test_latest_mean_hand_example():
    # node 0: t=[1, 3, 3] -> mean of the two t=3 rows; node 1: no message -> 0; node 2: one row
    msg = torch.tensor([[10.0], [2.0], [4.0], [7.0]])
    index = torch.tensor([0, 0, 0, 2])
    t = torch.tensor([1, 3, 3, 5])
    out = LatestMeanAggregator()(msg, index, t, 3)
    assert out.tolist() == [[3.0], [0.0], [7.0]]  # (2 + 4) / 2 = 3


# -- TensorMemory vs PyG's TGNMemory -------------------------------------------------------
def _matched_memories(num_nodes, msg_dim, memory_dim, time_dim, seed):
    torch.manual_seed(seed)
    pyg = TGNMemory(num_nodes, msg_dim, memory_dim, time_dim, IdentityMessage(msg_dim, memory_dim, time_dim),
                    LastAggregator())
    ours = TensorMemory(num_nodes, msg_dim, memory_dim, time_dim, IdentityMessage(msg_dim, memory_dim, time_dim))
    missing, unexpected = ours.load_state_dict(pyg.state_dict(), strict=True)
    assert not missing and not unexpected
    pyg.train()  # PyG's TGNMemory.train returns None
    ours.train()
    return pyg, ours


def _tie_free_stream(num_nodes, num_batches, batch_size, msg_dim, gen):
    """Batches of events with strictly increasing times and no self-loops (no node ever has two
    messages with the same timestamp). The first batch is a matching over all nodes, so every
    later batch only involves nodes that already hold pending messages."""
    perm = torch.randperm(num_nodes, generator=gen)
    batches = [(perm[0::2][: num_nodes // 2], perm[1::2][: num_nodes // 2])]
    for _ in range(num_batches - 1):
        src = torch.randint(0, num_nodes, (batch_size,), generator=gen)
        dst = (src + torch.randint(1, num_nodes, (batch_size,), generator=gen)) % num_nodes
        batches.append((src, dst))
    out, clock = [], 0
    for src, dst in batches:
        steps = torch.randint(1, 50, (src.numel(),), generator=gen)
        t = clock + torch.cumsum(steps, 0)
        clock = int(t[-1])
        out.append((src, dst, t, torch.randn(src.numel(), msg_dim, generator=gen)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tensor_memory_equals_pyg_tgn_memory_in_training_mode(seed):
    num_nodes, msg_dim = 12, 3
    pyg, ours = _matched_memories(num_nodes, msg_dim, memory_dim=8, time_dim=6, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    stream = _tie_free_stream(num_nodes, num_batches=8, batch_size=5, msg_dim=msg_dim, gen=gen)
    with torch.no_grad():
        for b, (src, dst, t, msg) in enumerate(stream):
            pyg.update_state(src, dst, t, msg)
            ours.update_state(src, dst, t, msg)
            if b == 0:
                # PyG runs the cell on an empty message for nodes without pending messages (only
                # ever the case in this first batch); tgeval keeps their memory. Start both from
                # PyG's memory after it.
                ours.memory.copy_(pyg.memory)
                ours.last_update.copy_(pyg.last_update)
                continue
            torch.testing.assert_close(ours.memory, pyg.memory, rtol=1e-5, atol=1e-6)
            assert torch.equal(ours.last_update, pyg.last_update)
            # every node that has pending messages: memory with them applied
            n_id = ours.pending_node.unique()
            assert n_id.numel() > 0
            mem_pyg, last_pyg = pyg(n_id)
            mem_ours, last_ours = ours(n_id)
            torch.testing.assert_close(mem_ours, mem_pyg, rtol=1e-5, atol=1e-6)
            assert torch.equal(last_ours, last_pyg)
            assert not torch.allclose(mem_ours, ours.memory[n_id])  # the pending messages did something


def test_tensor_memory_store_holds_each_nodes_last_batch():
    memory = TensorMemory(5, 1, 4, 4, IdentityMessage(1, 4, 4), time_origin="zero")  # PyG's: never updated = 0
    with torch.no_grad():
        memory.update_state(torch.tensor([0, 1]), torch.tensor([1, 2]), torch.tensor([1, 2]), torch.zeros(2, 1))
        memory.update_state(torch.tensor([1]), torch.tensor([3]), torch.tensor([5]), torch.ones(1, 1))
    # node 1's messages of the first batch were applied and replaced; 0 and 2 keep theirs
    pending = sorted(zip(memory.pending_node.tolist(), memory.pending_partner.tolist(), memory.pending_t.tolist(),
                         memory.pending_from_src.tolist()))
    assert pending == [(0, 1, 1, True), (1, 3, 5, True), (2, 1, 2, False), (3, 1, 5, False)]
    assert memory.last_update.tolist() == [0, 2, 0, 0, 0]  # node 1 applied its batch-1 messages (t = 1, 2)
    assert memory.pending_msg[memory.pending_node == 1].tolist() == [[1.0]]


# -- NeighborBuffer vs "last K interactions" ---------------------------------------------------
class _ReferenceNeighbors:
    """Every node's interactions in insertion order (both directions; a self-loop counts twice)."""

    def __init__(self, num_nodes):
        self.events = [[] for _ in range(num_nodes)]  # per node: (event number, neighbour, t, msg)
        self.count = 0

    def insert(self, src, dst, t, msg):
        for u, v, s, m in zip(src.tolist(), dst.tolist(), t.tolist(), msg.tolist()):
            self.events[u].append((self.count, v, s, m))
            self.events[v].append((self.count, u, s, m))
            self.count += 1

    def last(self, node, k):
        """The ``k`` most recent interactions of ``node``, most recent first."""
        return sorted(self.events[node], key=lambda e: -e[0])[:k]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), num_nodes=st.integers(2, 7), size=st.integers(1, 4),
       batch_sizes=st.lists(st.integers(1, 12), min_size=1, max_size=6), msg_dim=st.integers(1, 2))
def test_neighbor_buffer_matches_last_k_reference(seed, num_nodes, size, batch_sizes, msg_dim):
    gen = torch.Generator().manual_seed(seed)
    buffer, ref = NeighborBuffer(num_nodes, size, msg_dim), _ReferenceNeighbors(num_nodes)
    clock = 0
    for batch_size in batch_sizes:  # few nodes, big batches: nodes often get > size interactions per batch
        src = torch.randint(0, num_nodes, (batch_size,), generator=gen)
        dst = torch.randint(0, num_nodes, (batch_size,), generator=gen)  # self-loops included
        t = clock + torch.randint(0, 2, (batch_size,), generator=gen).cumsum(0)
        clock = int(t[-1]) + 1
        msg = torch.randn(batch_size, msg_dim, generator=gen)
        before = buffer.snapshot()
        buffer.insert(src, dst, t, msg)
        ref.insert(src, dst, t, msg)

        n_id = torch.arange(num_nodes)
        neighbor, times, msgs, valid = buffer.recent(n_id)
        assert neighbor.shape == times.shape == valid.shape == (num_nodes, size)
        assert msgs.shape == (num_nodes, size, msg_dim)
        for node in range(num_nodes):
            expected = ref.last(node, size)
            k = len(expected)
            assert valid[node].tolist() == [True] * k + [False] * (size - k)
            assert neighbor[node, :k].tolist() == [e[1] for e in expected]
            assert times[node, :k].tolist() == [e[2] for e in expected]
            assert torch.equal(msgs[node, :k], torch.tensor([e[3] for e in expected]).view(k, msg_dim))
            assert neighbor[node, k:].eq(0).all() and times[node, k:].eq(0).all() and msgs[node, k:].eq(0).all()

        # reach: every chosen node and its recent neighbours, from a mask or from the ids alike
        chosen = torch.randperm(num_nodes, generator=gen)[: 1 + seed % num_nodes].sort().values
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[chosen] = True
        want = {v for u in chosen.tolist() for v in [u] + [e[1] for e in ref.last(u, size)]}
        assert set(buffer.reach(mask).nonzero().flatten().tolist()) == want
        assert torch.equal(buffer.reach(chosen), buffer.reach(mask))

        # the nodes given to insert() (no host read) or computed by it: the same slots
        other = NeighborBuffer(num_nodes, size, msg_dim)
        other.restore(before)
        other.insert(src, dst, t, msg, nodes=torch.unique(torch.cat([src, dst])))
        assert first_difference(other.snapshot(), buffer.snapshot()) is None


def test_neighbor_buffer_keeps_most_recent_when_a_batch_overflows_a_node():
    # node 0 takes part in 4 interactions of one batch (a self-loop counts twice); K = 3 keeps
    # events 3, 2, 1 (most recent first) and drops the self-loop, event 0.
    buffer = NeighborBuffer(6, 3, 1)
    buffer.insert(torch.tensor([0, 1, 2, 0]), torch.tensor([0, 0, 0, 5]), torch.tensor([1, 2, 3, 4]),
                  torch.tensor([[0.0], [1.0], [2.0], [3.0]]))
    neighbor, t, msg, valid = buffer.recent(torch.tensor([0]))
    assert neighbor.tolist() == [[5, 2, 1]] and t.tolist() == [[4, 3, 2]]
    assert msg.view(-1).tolist() == [3.0, 2.0, 1.0] and valid.all()


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dense_star_attention_equals_attention_over_pygs_subgraph(seed, compact):
    """The fixed-shape attention over neighbour slots (invalid slots feed a dropped padding
    centre; ``compact``: dropped before the attention, the CPU default) equals
    ``TransformerConv`` over the star subgraph of PyG's ``LastNeighborLoader`` (masks and
    ``unique``, the reference), fed the same interactions."""
    num_nodes, size, msg_dim, dim = 10, 3, 2, 6
    gen = torch.Generator().manual_seed(seed)
    buffer, loader = NeighborBuffer(num_nodes, size, msg_dim), LastNeighborLoader(num_nodes, size)
    event_t, event_msg = [], []
    for src, dst, t, msg in _tie_free_stream(num_nodes, num_batches=6, batch_size=4, msg_dim=msg_dim, gen=gen):
        keep = src != dst
        src, dst, t, msg = src[keep], dst[keep], t[keep], msg[keep]
        first = torch.unique(torch.cat([src, dst]), return_counts=True)[1].max() == 1  # at most one entry per node
        if not bool(first):  # PyG's insert is exact only then (see NeighborBuffer._insert_neighbors)
            continue
        buffer.insert(src, dst, t, msg)
        loader.insert(src, dst)
        event_t.append(t)
        event_msg.append(msg)
    event_t, event_msg = torch.cat(event_t), torch.cat(event_msg)
    torch.manual_seed(seed)
    attention = GraphAttentionEmbedding(dim, 4, msg_dim, TimeEncoder(5), dropout=0.0)
    attention.compact = compact
    x = torch.randn(num_nodes, dim, generator=gen)
    last_update = torch.randint(0, 500, (num_nodes,), generator=gen)
    query = torch.tensor([0, 3, 4, 7, 9])
    n_id, edge_index, e_id = loader(query)
    rel_t = attention.time_enc((last_update[n_id[edge_index[0]]] - event_t[e_id]).float())
    with torch.no_grad():
        expected = attention.conv(x[n_id], edge_index, torch.cat([rel_t, event_msg[e_id]], dim=-1))
        expected = expected[torch.searchsorted(n_id, query)]
        neighbor, t, msg, valid = buffer.recent(query)
        got = attention(x, query, neighbor, last_update[neighbor] - t, msg, valid)  # rows of x: the node ids
    assert bool(valid.any()) and not bool(valid.all())  # both full and partly empty slot rows
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


# -- FixedTimeEncoder ----------------------------------------------------------------------
@pytest.mark.parametrize("dim", [1, 4, 9, 100])
def test_fixed_time_encoder_follows_its_formula(dim):
    enc = FixedTimeEncoder(dim)
    root = math.sqrt(dim)
    expected = [root ** (-i / root) for i in range(dim)]  # omega_i = alpha^(-i / beta), alpha = beta = sqrt(d)
    assert enc.omega.tolist() == pytest.approx(expected, rel=1e-6)
    assert enc.omega[0] == 1.0 and not any(p.requires_grad for p in enc.parameters())
    assert not dict(enc.named_parameters())  # fixed: nothing to train
    dt = torch.tensor([[0.0, 1.0], [7.5, 1234.0]])
    out = enc(dt)
    assert out.shape == (2, 2, dim)
    for idx in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        want = [math.cos(float(dt[idx]) * float(w)) for w in enc.omega]
        # the float32 product dt * omega is rounded (relative 2^-24): absolute error ~ dt * 6e-8
        assert out[idx].tolist() == pytest.approx(want, abs=1e-6 + 1.2e-7 * float(dt[idx]))


# -- BitDropout ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (3, 5, 2), (1000, 33)])
def test_bit_dropout_follows_its_formula(shape):
    """The mask is [b >= -2^31 + round(p 2^32)] of the int32 view of one int64 random_ draw."""
    p = 0.3
    layer = BitDropout(p)
    x = torch.randn(shape, requires_grad=True)
    torch.manual_seed(5)
    out = layer(x)
    torch.manual_seed(5)
    size = x.numel()
    bits = torch.empty((size + 1) // 2, dtype=torch.long).random_(-2**63, 2**63 - 1).view(torch.int32)[:size]
    keep = (bits >= -2**31 + round(p * 2**32)).view(shape)
    assert torch.equal(out, torch.where(keep, x * (1 / (1 - p)), torch.zeros(())))
    out.backward(torch.ones(shape))
    assert torch.equal(x.grad, keep.float() * (1 / (1 - p)))
    torch.manual_seed(5)
    assert torch.equal(layer(x), out)  # seeded: reproducible
    assert layer.eval()(x) is x and BitDropout(0.0)(x) is x


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_bit_dropout_drops_independently_at_rate_p(p):
    """Over 10^6 elements the drop rate is p, and the two halves of one 64-bit draw (adjacent
    elements) are dropped together at rate p^2, both within 6 binomial standard deviations."""
    n = 10**6
    torch.manual_seed(0)
    dropped = BitDropout(p)(torch.ones(n)) == 0
    assert abs(dropped.double().mean().item() - p) < 6 * math.sqrt(p * (1 - p) / n)
    pairs = dropped.view(-1, 2)
    both = (pairs[:, 0] & pairs[:, 1]).double().mean().item()
    assert abs(both - p * p) < 6 * math.sqrt(p * p * (1 - p * p) / (n // 2))
    with pytest.raises(ValueError, match="dropout probability"):
        BitDropout(1.0)


# -- GraphMixer's mixer ---------------------------------------------------------------------
def _graphmixer_reference(model, rows):
    """GraphMixer's link and node encoders on node-major token sets ``[n, K, F]`` (Cong et al.):
    tokens, their linear map, per block ``x + (W_2 gelu(W_1 LN(x)^T + b_1) + b_2)^T`` and
    ``x + MLP(LN(x))``, the final layer norm, the mean over tokens and the output map."""
    f = torch.nn.functional
    neighbor, t, msg, valid = model.neighbors.recent(rows)
    latest = torch.where(valid, t, torch.iinfo(torch.long).min).max(dim=1, keepdim=True).values
    dt = torch.where(valid, latest - t, 0).float()
    x = model.token(torch.cat([msg, torch.cos(dt[..., None] * model.time_enc.omega)], -1) * valid[..., None])
    for block in model.mixers:
        first, second = block.token_mlp[0], block.token_mlp[3]
        y = f.layer_norm(x, x.shape[-1:], block.token_norm.weight, block.token_norm.bias).transpose(1, 2)
        x = x + f.linear(f.gelu(f.linear(y, first.weight, first.bias)), second.weight, second.bias).transpose(1, 2)
        up, down = block.channel_mlp[0], block.channel_mlp[3]
        y = f.layer_norm(x, x.shape[-1:], block.channel_norm.weight, block.channel_norm.bias)
        x = x + f.linear(f.gelu(f.linear(y, up.weight, up.bias)), down.weight, down.bias)
    link = model.norm(x).mean(dim=1)
    if model.config.node_dim == 0:
        return model.out(link)
    weight = valid.float()[..., None]
    around = (model.node_features[neighbor] * weight).sum(1) / weight.sum(1).clamp(min=1)
    return model.out(torch.cat([link, model.node_features[rows] + around], -1))


@pytest.mark.parametrize("node_features", [False, True])
def test_graphmixer_embeddings_and_gradients_follow_the_node_major_formula(node_features):
    """Embeddings equal the reference up to float32 rounding, and so do the gradients of every
    parameter (dropout 0: the only randomness is BitDropout's, tested above)."""
    num_nodes = 30
    torch.manual_seed(0)
    x = torch.randn(num_nodes, 3) if node_features else None
    model = GraphMixer(GraphMixerConfig(num_nodes, msg_dim=2, num_neighbors=5, time_dim=6, hidden_dim=8,
                                        embedding_dim=4, num_layers=2, dropout=0.0), node_features=x)
    stream = generate_events(120, num_nodes - 5, seed=1)  # the last 5 nodes have no history
    stream.msg = torch.randn(120, 2)
    with torch.no_grad():
        for batch in TimestampBatchLoader(stream, 20):
            model.update(batch)
    rows = torch.arange(num_nodes)
    _, _, _, valid = model.neighbors.recent(rows)
    assert bool(valid.all(1).any()) and bool((~valid).all(1).any())  # full and empty slot rows
    got = model.embed_rows(rows, [])
    want = _graphmixer_reference(model, rows)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    params = [w for name, w in model.named_parameters() if not name.startswith("decoder.")]
    grads = torch.autograd.grad(got.square().sum(), params)
    wants = torch.autograd.grad(want.square().sum(), params)
    scale = max(float(w.abs().max()) for w in wants)
    for g, w in zip(grads, wants):  # entries that cancel to ~0 keep rounding noise of the largest terms
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-6 * scale)
