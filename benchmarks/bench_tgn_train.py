"""Training throughput of tgeval's TGN wrapper vs. a plain loop that follows PyG's TGN recipe.

Both train one epoch on the same events (Wikipedia's training segment, 70/15/15 split, a
message of one zero column) with the same hyper-parameters: memory, time and embedding
width 100, the 10 most recent neighbours, batches of 200 events, one negative destination
per positive drawn uniformly over the training segment's destination range, Adam with
learning rate 1e-4, binary cross-entropy.

* **tgeval**: ``tgeval.training.train.train_epoch`` with ``tgeval.models.tgn.TGN`` and a
  ``UniformSampler`` over the destination range (batches of whole timestamp groups of at
  most 200 events, negatives keyed by event position, update after the optimizer step).
* **PyG recipe** (:class:`PygRecipeTGN`, written here after the recipe of PyG's
  ``examples/tgn.py``): ``TGNMemory`` with ``IdentityMessage`` and ``LastAggregator``,
  ``LastNeighborLoader(size=10)``, a two-head ``TransformerConv`` embedding whose edge
  features are the encoded time since the neighbour's last update and the message, an MLP
  link predictor, ``TemporalDataLoader(batch_size=200, neg_sampling_ratio=1.0)`` (one
  uniform destination in ``[min dst, max dst]`` per positive), Adam 1e-4, BCE with logits.

Runs are interleaved (recipe, tgeval, recipe, tgeval, ...) in one process after one short
untimed warm-up run of each; each timed run builds fresh models (untimed) and trains one
epoch. Timed: the whole epoch call (state reset, loader, every batch: sampling, forward,
loss, backward, step, state update). ``--num-events N`` trains on the first N events of the
segment only (rounded up to a whole timestamp group).

Run: python benchmarks/bench_tgn_train.py [--num-events N] [--data-dir DIR] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import numpy as np
import torch
from _common import add_common_args, best, group_end, load_wikipedia, median, print_header, print_table, save_results
from torch import Tensor, nn
from torch_geometric.data import TemporalData
from torch_geometric.loader import TemporalDataLoader
from torch_geometric.nn import TransformerConv
from torch_geometric.nn.models.tgn import (
    IdentityMessage,
    LastAggregator,
    LastNeighborLoader,
    TGNMemory,
)

from tgeval import chronological_split
from tgeval.data.split import Split
from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import build_exclusions
from tgeval.models.tgn import TGN
from tgeval.models.config import TGNConfig
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch

BATCH_SIZE = 200
WIDTH = 100  # memory, time encoding and embedding width
NUM_NEIGHBORS = 10
LR = 1e-4


# ---------------------------------------------------------------------------------------------
# The PyG recipe (examples/tgn.py), written as a small self-contained class.
# ---------------------------------------------------------------------------------------------
class RecipeAttention(nn.Module):
    """Graph attention over the last neighbours: TransformerConv, 2 heads, dropout 0.1,
    edge features [time_enc(last_update[neighbour] - t_event) | msg]."""

    def __init__(self, in_dim: int, out_dim: int, msg_dim: int, time_enc: nn.Module) -> None:
        super().__init__()
        self.time_enc = time_enc
        self.conv = TransformerConv(in_dim, out_dim // 2, heads=2, dropout=0.1,
                                    edge_dim=msg_dim + time_enc.out_channels)

    def forward(self, x: Tensor, last_update: Tensor, edge_index: Tensor, t: Tensor, msg: Tensor) -> Tensor:
        encoded = self.time_enc((last_update[edge_index[0]] - t).to(x.dtype))
        return self.conv(x, edge_index, torch.cat([encoded, msg], dim=-1))


class RecipePredictor(nn.Module):
    """MLP link predictor: lin_final(relu(lin_src(z_src) + lin_dst(z_dst)))."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.lin_src = nn.Linear(dim, dim)
        self.lin_dst = nn.Linear(dim, dim)
        self.lin_final = nn.Linear(dim, 1)

    def forward(self, z_src: Tensor, z_dst: Tensor) -> Tensor:
        return self.lin_final((self.lin_src(z_src) + self.lin_dst(z_dst)).relu())


class PygRecipeTGN:
    """TGN trained and evaluated the way PyG's ``examples/tgn.py`` does it.

    ``data`` (the whole stream, with ``msg``) is given to every call: the recipe reads the
    neighbours' event times and messages as ``data.t[e_id]`` / ``data.msg[e_id]`` (event ids
    count insertions, which start at event 0 and follow the stream's order).
    """

    #: observe each batch (memory and neighbour update) after the optimizer step instead of before
    #: the backward pass (the recipe's order); an ablation switch of ``benchmarks/ablate_tgn_protocol.py``
    update_after_step = False

    def __init__(self, num_nodes: int, msg_dim: int = 1, memory_dim: int = WIDTH, time_dim: int = WIDTH,
                 embedding_dim: int = WIDTH, num_neighbors: int = NUM_NEIGHBORS, lr: float = LR,
                 device: str = "cpu", aggregator: nn.Module | None = None,
                 memory_cls: type[TGNMemory] = TGNMemory) -> None:
        self.memory = memory_cls(num_nodes, msg_dim, memory_dim, time_dim,
                                 message_module=IdentityMessage(msg_dim, memory_dim, time_dim),
                                 aggregator_module=LastAggregator() if aggregator is None else aggregator).to(device)
        self.gnn = RecipeAttention(memory_dim, embedding_dim, msg_dim, self.memory.time_enc).to(device)
        self.link_pred = RecipePredictor(embedding_dim).to(device)
        self.neighbor_loader = LastNeighborLoader(num_nodes, size=num_neighbors, device=torch.device(device))
        params = {id(p): p for m in (self.memory, self.gnn, self.link_pred) for p in m.parameters()}
        self.optimizer = torch.optim.Adam(list(params.values()), lr=lr)
        self.criterion = nn.BCEWithLogitsLoss()
        self.assoc = torch.empty(num_nodes, dtype=torch.long, device=device)

    def _modes(self, training: bool) -> None:
        for module in (self.memory, self.gnn, self.link_pred):
            module.train(training)

    def _embed(self, batch: TemporalData, data: TemporalData) -> Tensor:
        """Embeddings of ``batch.n_id`` (and their neighbours); ``self.assoc`` maps ids to rows."""
        n_id, edge_index, e_id = self.neighbor_loader(batch.n_id)
        self.assoc[n_id] = torch.arange(n_id.size(0), device=n_id.device)
        z, last_update = self.memory(n_id)
        return self.gnn(z, last_update, edge_index, data.t[e_id], data.msg[e_id])

    def _observe(self, batch: TemporalData) -> None:
        self.memory.update_state(batch.src, batch.dst, batch.t, batch.msg)
        self.neighbor_loader.insert(batch.src, batch.dst)

    def train_epoch(self, data: TemporalData, train_data: TemporalData, batch_size: int = BATCH_SIZE) -> dict:
        """One epoch over ``train_data`` (a prefix of ``data``); state reset first."""
        began = time.perf_counter()
        self._modes(True)
        self.memory.reset_state()
        self.neighbor_loader.reset_state()
        loader = TemporalDataLoader(train_data, batch_size=batch_size, neg_sampling_ratio=1.0)
        total, batches = 0.0, 0
        for batch in loader:
            self.optimizer.zero_grad()
            z = self._embed(batch, data)
            src = self.assoc[batch.src]
            pos_out = self.link_pred(z[src], z[self.assoc[batch.dst]])
            neg_out = self.link_pred(z[src], z[self.assoc[batch.neg_dst]])
            loss = self.criterion(pos_out, torch.ones_like(pos_out))
            loss = loss + self.criterion(neg_out, torch.zeros_like(neg_out))
            if not self.update_after_step:
                self._observe(batch)
            loss.backward()
            self.optimizer.step()
            if self.update_after_step:
                self._observe(batch)
            self.memory.detach()
            total += float(loss.detach()) * batch.num_events
            batches += 1
        seconds = time.perf_counter() - began
        return {"loss": total / train_data.num_events, "num_batches": batches, "seconds": seconds,
                "events_per_second": train_data.num_events / seconds}

    @torch.no_grad()
    def replay(self, segment_data: TemporalData, batch_size: int = BATCH_SIZE) -> None:
        """Reset the state and feed ``segment_data`` through it in eval mode (no scoring): the
        state rebuilt from history with the current weights, as ``tgeval.evaluate`` (``Protocol(warm=True)``)
        does (not part of the recipe, which carries the state over from training)."""
        self._modes(False)
        self.memory.reset_state()
        self.neighbor_loader.reset_state()
        for batch in TemporalDataLoader(segment_data, batch_size=batch_size):
            self._observe(batch)

    @torch.no_grad()
    def evaluate(self, data: TemporalData, segment_data: TemporalData, batch_size: int = BATCH_SIZE,
                 catalog: Catalog | None = None) -> dict:
        """Replay ``segment_data`` (continuing the current state), one uniform negative in the
        segment's ``[min dst, max dst]`` per positive, drawn after ``torch.manual_seed(12345)``
        as the recipe does. Returns AP / AUC as the recipe reports them (mean over batches)
        and over all pairs of the segment.

        With ``catalog`` (not part of the recipe): also the all-entity MRR of each positive
        against the catalog's items, scored from the same embeddings, without the source and
        the destinations of the same source at the same time in the batch
        (``tgeval.data.exclusions``), ties counted half (average rank).
        """
        from sklearn.metrics import average_precision_score, roc_auc_score

        self._modes(False)
        torch.manual_seed(12345)
        loader = TemporalDataLoader(segment_data, batch_size=batch_size, neg_sampling_ratio=1.0)
        aps, aucs, scores, labels, reciprocal = [], [], [], [], []
        began = time.perf_counter()
        for batch in loader:
            if catalog is not None:  # embed the items in the same call (embeddings do not depend on the set)
                batch.n_id = torch.cat([batch.n_id, catalog.items]).unique()
            z = self._embed(batch, data)
            src = self.assoc[batch.src]
            pos_out = self.link_pred(z[src], z[self.assoc[batch.dst]])
            neg_out = self.link_pred(z[src], z[self.assoc[batch.neg_dst]])
            y_pred = torch.cat([pos_out, neg_out]).sigmoid().view(-1)
            y_true = torch.cat([torch.ones(pos_out.size(0)), torch.zeros(neg_out.size(0))])
            aps.append(average_precision_score(y_true.numpy(), y_pred.numpy()))
            aucs.append(roc_auc_score(y_true.numpy(), y_pred.numpy()))
            scores.append(y_pred)
            labels.append(y_true)
            if catalog is not None:
                reciprocal.append(self._reciprocal_ranks(z, batch, catalog))
            self._observe(batch)
        seconds = time.perf_counter() - began
        y_pred, y_true = torch.cat(scores).numpy(), torch.cat(labels).numpy()
        out = {"ap": {"per_batch_mean": float(np.mean(aps)), "global": float(average_precision_score(y_true, y_pred))},
               "auroc": {"per_batch_mean": float(np.mean(aucs)), "global": float(roc_auc_score(y_true, y_pred))},
               "num_batches": len(aps), "seconds": seconds}
        if catalog is not None:
            out["all_entity_mrr"] = float(torch.cat(reciprocal).mean())
        return out

    def _reciprocal_ranks(self, z: Tensor, batch: TemporalData, catalog: Catalog) -> Tensor:
        """1 / rank of each positive among the catalog items (float64 ``[B]``)."""
        lp = self.link_pred
        h_src = lp.lin_src(z[self.assoc[batch.src]])
        h_item = lp.lin_dst(z[self.assoc[catalog.items]])
        all_scores = lp.lin_final((h_src[:, None, :] + h_item[None, :, :]).relu()).squeeze(-1)  # [B, C]
        # The positive's score from the same factorised terms (same summation as the items').
        pos = lp.lin_final((h_src + lp.lin_dst(z[self.assoc[batch.dst]])).relu()).view(-1)
        excl = build_exclusions(batch.src, batch.dst, batch.t, catalog)
        rows = torch.arange(batch.src.numel())
        out = excl.contains(rows, catalog.items[None, :].expand(rows.numel(), -1))
        above = ((all_scores > pos[:, None]) & ~out).sum(1)
        equal = ((all_scores == pos[:, None]) & ~out).sum(1)
        return 1.0 / (1.0 + above.double() + equal.double() / 2)


# ---------------------------------------------------------------------------------------------
# Shared setup
# ---------------------------------------------------------------------------------------------
def with_zero_message(data: TemporalData) -> TemporalData:
    """Shallow copy of ``data`` with ``msg``: one zero column (float32 ``[E, 1]``), as the recipe uses."""
    out = data[:]
    out.msg = torch.zeros(data.num_events, 1)
    return out


def range_catalog(dst: Tensor, num_nodes: int) -> Catalog:
    """Every id in ``[min dst, max dst]``, always available: the recipe's negative range as a catalog."""
    lo, hi = int(dst.min()), int(dst.max())
    return Catalog("custom", torch.arange(lo, hi + 1), None, num_nodes,
                   {"rule": f"destination id range [{lo}, {hi}] (PyG TemporalDataLoader negatives)"})


def num_nodes_of(data: TemporalData) -> int:
    return int(max(int(data.src.max()), int(data.dst.max())) + 1)


def training_args(description: str, num_events: int) -> argparse.Namespace:
    """The common options, ``--num-events`` (default ``num_events``; 0: the whole training
    segment) and ``--seed``, parsed; torch threads set."""
    parser = argparse.ArgumentParser(description=description)
    add_common_args(parser)
    parser.add_argument("--num-events", type=int, default=num_events,
                        help=f"train on the first N events of the training segment, rounded up to a whole "
                             f"timestamp group (default {num_events}; 0: the whole segment, one full epoch)")
    parser.add_argument("--seed", type=int, default=0, help="torch seed of the models' initialisation")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    return args


def training_head(args: argparse.Namespace) -> tuple[TemporalData, str, Split, int]:
    """Wikipedia with a message of one zero column, its 70/15/15 split, and the end of the
    training events ``--num-events`` asks for: ``(data, how it was read, split, end)``."""
    raw, how = load_wikipedia(args.data_dir)
    data = with_zero_message(raw)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    return data, how, split, group_end(data.t, 0, args.num_events, split.train.end)


def main() -> None:
    args = training_args(__doc__.split("\n\n")[0], 0)
    print_header("TGN training throughput: tgeval wrapper (train_epoch) vs. PyG recipe loop, Wikipedia, 1 epoch")
    data, how, split, end = training_head(args)
    train_data = data[:end]
    num_nodes = num_nodes_of(data)
    catalog = range_catalog(train_data.dst, num_nodes)
    print(f"data    : {how}; msg = one zero column; training on events [0, {end}) "
          f"({'the whole training segment' if end == split.train.end else 'the head of the training segment'}"
          f" of {split.train.num_events}); negatives uniform over ids [{int(catalog.items[0])}, "
          f"{int(catalog.items[-1])}] ({catalog.size} ids)")
    print(f"setup   : widths {WIDTH}, {NUM_NEIGHBORS} neighbours, batch {BATCH_SIZE}, 1 negative per positive, "
          f"Adam lr {LR}, BCE; num_nodes {num_nodes}")

    def run_recipe(events: TemporalData) -> dict:
        torch.manual_seed(args.seed)
        model = PygRecipeTGN(num_nodes)
        return model.train_epoch(data, events)

    def run_tgeval(stop: int) -> dict:
        torch.manual_seed(args.seed)
        model = TGN(TGNConfig(num_nodes, msg_dim=1, memory_dim=WIDTH, time_dim=WIDTH, embedding_dim=WIDTH,
                              num_neighbors=NUM_NEIGHBORS))
        optimizer = torch.optim.Adam(model.parameters(), lr=LR)
        sampler = UniformSampler(catalog)
        began = time.perf_counter()
        out = train_epoch(model, data, (0, stop), recipe=Recipe(sampler, "bce", num_negatives=1, batch_size=BATCH_SIZE),
                          optimizer=optimizer, epoch=0)
        seconds = time.perf_counter() - began
        return {**out, "loop_events_per_second": out["events_per_second"], "seconds": seconds,
                "events_per_second": out["num_events"] / seconds}

    # Untimed warm-up of both (first-call costs: allocator, lazy imports, kernel selection).
    warm_end = group_end(data.t, 0, 2_000, end)
    run_recipe(data[:warm_end])
    run_tgeval(warm_end)

    names = ("PyG recipe loop", "tgeval TGN, train_epoch")
    rows: dict[str, list[dict]] = {n: [] for n in names}
    for _ in range(args.repeat):  # interleaved: a change of machine load affects both alike
        rows[names[0]].append(run_recipe(train_data))
        rows[names[1]].append(run_tgeval(end))

    recipe_eps = best([r["events_per_second"] for r in rows[names[0]]])
    table = []
    for n in names:
        eps = [r["events_per_second"] for r in rows[n]]
        table.append([n, f"{best(eps):,.0f}", f"{median(eps):,.0f}", f"{best(eps) / recipe_eps:.2f}",
                      rows[n][0]["num_batches"], f"{median([r['loss'] for r in rows[n]]):.4f}"])
    print(f"timing  : events/s over {end} events, best and median of {args.repeat} interleaved runs "
          f"(whole epoch call timed); ratios use the best")
    print_table(["method", "events/s (best)", "events/s (median)", "vs recipe", "batches", "mean loss"], table)
    loop = best([r["loop_events_per_second"] for r in rows[names[1]]])
    print(f"note    : train_epoch's own events_per_second (batch loop only): {loop:,.0f} (best). Losses differ by "
          f"definition: the recipe adds the positive and the negative means (2x tgeval's 'bce' for K = 1).")
    ratio = best([r["events_per_second"] for r in rows[names[1]]]) / recipe_eps
    print(f"target  : tgeval / recipe >= 0.9: {ratio:.2f} -> {'PASS' if ratio >= 0.9 else 'FAIL'}")
    save_results(args)


if __name__ == "__main__":
    main()
