r"""Layers shared by the neural reference models (docs/protocol.md §8).

* :class:`GraphAttentionEmbedding` — TGN's temporal graph attention: PyG's
  ``TransformerConv`` over each node's recent neighbours, edge features
  :math:`[\phi(\Delta t) \,\|\, x_e]` (PyG's recipe: the neighbour's last update minus the
  event time; DyGLib's: the query time minus the event time).
* :class:`LinkDecoder` — :math:`s(u, v) = w^\top \mathrm{relu}(W_s z_u + W_d z_v + b) + c`,
  factorised: :meth:`~LinkDecoder.source_terms` and :meth:`~LinkDecoder.target_terms`
  are computed once per node, :meth:`~LinkDecoder.combine` only adds, rectifies and
  projects each pair.
* :class:`FixedTimeEncoder` — GraphMixer's non-trained :math:`\cos(\omega \Delta t)` with
  :math:`\omega_i = \alpha^{-i/\beta}`, :math:`\alpha = \beta = \sqrt{d}`.
* :class:`MixerBlock` — one MLP-Mixer layer (token mixing, then channel mixing).
* :class:`BitDropout` — dropout with the same distribution as ``nn.Dropout`` whose mask costs
  a quarter of ``bernoulli_`` on a CPU (32 random bits per element, drawn 64 at a time).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.nn import TransformerConv
from torch_geometric.nn.models.tgn import TimeEncoder

from tgeval.errors import ModelConfigError

__all__ = ["GraphAttentionEmbedding", "LinkDecoder", "FixedTimeEncoder", "MixerBlock", "BitDropout"]


class GraphAttentionEmbedding(nn.Module):
    r"""Two-head ``TransformerConv`` over each centre's neighbour slots; ``out_dim`` must be even.

    ``forward(x [m, in_dim], centre [n], neighbor [n, K], dt [n, K], msg [n, K, R], valid [n, K])
    -> [n, out_dim]``: ``centre`` and ``neighbor`` are distinct rows of ``x`` (a node embedded at
    several query times has a row of ``x`` per time); the graph has an edge neighbour -> centre
    for every valid slot, with edge features :math:`[\phi(\Delta t) \| x_e]` (the caller's
    time gaps ``dt``). Invalid slots feed a padding node whose output is dropped, so every shape
    is fixed (no host synchronisation) and the graph is the star subgraph PyG's
    ``LastNeighborLoader`` builds.
    """

    #: drop the padding edges of empty slots before the attention: ``None`` (the default) drops
    #: them on a CPU, where their number is known without waiting for a device and the saved
    #: work matters, and keeps fixed shapes on a GPU; ``True`` / ``False`` force either (the same
    #: embeddings up to float rounding)
    compact: Optional[bool] = None

    def __init__(self, in_dim: int, out_dim: int, msg_dim: int, time_enc: TimeEncoder, dropout: float = 0.1) -> None:
        super().__init__()
        if out_dim % 2:
            raise ModelConfigError(f"the embedding dimension must be even (two attention heads), got {out_dim}.")
        self.time_enc = time_enc
        self.conv = TransformerConv(in_dim, out_dim // 2, heads=2, dropout=dropout,
                                    edge_dim=msg_dim + time_enc.out_channels)

    def forward(self, x: Tensor, centre: Tensor, neighbor: Tensor, dt: Tensor, msg: Tensor, valid: Tensor) -> Tensor:
        n, k = valid.shape
        m = x.size(0)
        padded = torch.cat([x, x.new_zeros(1, x.size(1))])
        source = neighbor.reshape(n * k)
        target = torch.where(valid.reshape(n * k), centre.repeat_interleave(k), m)  # invalid slots -> padding
        dt_flat, msg_flat = dt.reshape(n * k), msg.reshape(n * k, msg.size(-1))
        if self.compact or (self.compact is None and x.device.type == "cpu"):
            keep = valid.reshape(n * k).nonzero().view(-1)
            source, target, dt_flat, msg_flat = source[keep], target[keep], dt_flat[keep], msg_flat[keep]
        edge_attr = torch.cat([self.time_enc(dt_flat.to(x.dtype)), msg_flat], dim=-1)
        return self.conv(padded, torch.stack([source, target]), edge_attr)[centre]


class LinkDecoder(nn.Module):
    """Factorised MLP link decoder; ``forward(z_src [B, D], z_dst [B, D]) -> [B]``.

    Args:
        dim: embedding width ``D`` (also the hidden width).
    """

    #: most ``rows x candidates x hidden`` floats one :meth:`combine` step holds on a CPU (4 MiB
    #: of float32: cache-sized blocks are fastest) and on a GPU (256 MiB: fewer, larger kernels)
    max_elements = 2**20
    max_elements_gpu = 2**26

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.lin_src = nn.Linear(dim, dim)
        self.lin_dst = nn.Linear(dim, dim)
        self.lin_out = nn.Linear(dim, 1)

    def forward(self, z_src: Tensor, z_dst: Tensor) -> Tensor:
        return self.lin_out(self.hidden(z_src, z_dst)).squeeze(-1)

    def hidden(self, z_src: Tensor, z_dst: Tensor) -> Tensor:
        """The pair representation entering the last layer, ``relu(W_s z_u + W_d z_v + b)``: ``[B, H]``."""
        return (self.lin_src(z_src) + self.lin_dst(z_dst)).relu()

    def source_terms(self, z: Tensor) -> Tensor:
        """``W_s z + b_s``: ``[B, D] -> [B, H]``."""
        return self.lin_src(z)

    def target_terms(self, z: Tensor) -> Tensor:
        """``W_d z + b_d``: ``[C, D] -> [C, H]``."""
        return self.lin_dst(z)

    def combine(self, source: Tensor, target: Tensor) -> Tensor:
        """Scores ``[b, c]`` of every (source row, target row) pair from their terms.

        Works in row blocks of at most :attr:`max_elements` hidden activations, so memory
        stays bounded whatever ``b x c``; each block is one add, an in-place ReLU and a
        matrix-vector product with the output weights (the bias is added once at the end).
        """
        limit = self.max_elements if source.device.type == "cpu" else self.max_elements_gpu
        rows = max(1, limit // max(1, target.size(0) * target.size(1)))
        weight = self.lin_out.weight.view(-1)
        blocks = [torch.matmul((source[r:r + rows, None, :] + target).relu_(), weight)
                  for r in range(0, source.size(0), rows)]
        return (torch.cat(blocks) if blocks else source.new_zeros((0, target.size(0)))) + self.lin_out.bias


class FixedTimeEncoder(nn.Module):
    r"""``[...] -> [..., d]``: :math:`\cos(\Delta t\, \omega)`, :math:`\omega_i = \alpha^{-i/\beta}`,
    ``i = 0..d-1``, :math:`\alpha = \beta = \sqrt d` (GraphMixer); not trained."""

    omega: Tensor

    def __init__(self, dim: int) -> None:
        super().__init__()
        root = math.sqrt(dim)
        omega = root ** (-torch.arange(dim, dtype=torch.float64) / root)
        self.register_buffer("omega", omega.float(), persistent=False)
        self.out_channels = dim

    def forward(self, dt: Tensor) -> Tensor:
        return torch.cos(dt[..., None] * self.omega)


class BitDropout(nn.Module):
    r"""``[...] -> [...]``: in training, :math:`x \cdot m / (1 - p)` with an independent keep
    mask :math:`m_i = [b_i \ge \theta]`, :math:`b_i` uniform 32-bit integers and
    :math:`\theta = -2^{31} + \mathrm{round}(p\, 2^{32})`, so
    :math:`P(m_i = 0) = \mathrm{round}(p\, 2^{32}) / 2^{32}` (``p`` to within :math:`2^{-33}`);
    the identity in evaluation.

    The bits are one ``random_`` over int64 (two elements per draw, from the default generator:
    ``torch.manual_seed`` makes it reproducible), viewed as int32. On a CPU the mask then costs
    about a quarter of ``nn.Dropout``'s ``bernoulli_`` (which draws each element separately)
    and the whole layer with its backward about half; in GraphMixer's training the masks of
    ``nn.Dropout`` were a quarter of the time (``benchmarks/bench_model_train.py``). On other
    devices it is ``nn.functional.dropout`` (one fused kernel there).
    """

    def __init__(self, p: float = 0.1) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ModelConfigError(f"dropout probability must be in [0, 1), got {p}.")
        self.p = float(p)
        self.threshold = -2**31 + round(self.p * 2**32)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu":
            return nn.functional.dropout(x, self.p, training=True)
        size = x.numel()
        bits = torch.empty((size + 1) // 2, dtype=torch.long, device=x.device).random_(-2**63, 2**63 - 1)
        keep = bits.view(torch.int32)[:size].view(x.shape) >= self.threshold
        return x * keep.to(x.dtype).mul_(1.0 / (1.0 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}"


class MixerBlock(nn.Module):
    r"""One MLP-Mixer layer over token sets held token-major, ``[K, n, H] -> [K, n, H]``
    (token expansion 0.5, channel expansion 4):

    .. math::
        x \leftarrow x + W_2\, \mathrm{drop}(\mathrm{gelu}(W_1 \mathrm{LN}(x) + b_1)) + b_2
        \quad\text{(over the token axis)}, \qquad
        x \leftarrow x + \mathrm{MLP}(\mathrm{LN}(x)) \quad\text{(over the channel axis)}.

    Token-major storage makes both mixings one matrix product each without a transpose: the
    token mixing multiplies ``[K', K]`` by the ``[K, n H]`` view, the channel mixing the
    ``[K n, H]`` view by ``[H, 4H]``. (The same layer on node-major ``[n, K, H]`` sets would copy
    two transposes per block.)
    """

    def __init__(self, num_tokens: int, dim: int, dropout: float = 0.1) -> None:
        super().__init__()
        hidden_tokens = max(1, num_tokens // 2)
        self.token_norm = nn.LayerNorm(dim)
        # applied by forward on the token-major layout (a Sequential for its parameter names, which checkpoints keep)
        self.token_mlp = nn.Sequential(nn.Linear(num_tokens, hidden_tokens), nn.GELU(), BitDropout(dropout),
                                       nn.Linear(hidden_tokens, num_tokens), BitDropout(dropout))
        self.channel_norm = nn.LayerNorm(dim)
        self.channel_mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), BitDropout(dropout),
                                         nn.Linear(4 * dim, dim), BitDropout(dropout))

    def forward(self, x: Tensor) -> Tensor:
        k, n, h = x.shape
        first, gelu, drop, second, drop_out = self.token_mlp
        assert isinstance(first, nn.Linear) and isinstance(second, nn.Linear)
        mixed = torch.addmm(first.bias[:, None], first.weight, self.token_norm(x).view(k, n * h))
        mixed = torch.addmm(second.bias[:, None], second.weight, drop(gelu(mixed)))
        x = x + drop_out(mixed).view(k, n, h)
        return x + self.channel_mlp(self.channel_norm(x))
