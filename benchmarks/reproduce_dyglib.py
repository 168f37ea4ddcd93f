"""DyGLib's transductive link prediction on UCI for TGN, DyRep and GraphMixer, beside tgeval's protocol.

DyGLib (Yu et al., NeurIPS 2023; github.com/yule-BUAA/DyGLib) is reproduced with tgeval's
models and loops. Each setting names its source in DyGLib's code:

* data (``utils/DataLoader.py``, ``get_link_prediction_data``): UCI's DGB file ``ml_uci.csv``
  (ids as in the file), node and edge features padded with zeros to 172 dimensions, so the
  message is 172 zero columns; split at the 0.70 and 0.85 quantiles of the event times (here
  ``chronological_split(data, (0.70, 0.15, 0.15))``, which cuts between distinct timestamps);
* evaluation negatives (``utils/utils.py``, ``NegativeEdgeSampler``, random strategy, built in
  ``train_link_prediction.py`` on ``full_data``): one per positive, uniform over every distinct
  destination of the whole dataset; training negatives: uniform over the training segment's
  distinct destinations;
* training (``utils/load_configs.py``, ``get_link_prediction_args``): batch 200, Adam with
  learning rate 1e-4, binary cross-entropy, at most 100 epochs, early stopping with patience 20
  on validation AP (DyGLib requires AP *and* AUROC not to drop; here validation AP alone, the
  global one). DyGLib validates from the state training left, and so does this script
  (``fit(validation=Validation(state="training"))``; ``--val-state rebuilt`` for ``fit``'s default, tgeval's);
* models (``load_link_prediction_best_configs``, UCI entries): TGN 10 neighbours, one attention
  layer, dropout 0.1, memory and embedding width 172 (the node feature width), time encoding
  100; DyRep 10 neighbours, dropout 0.0, memory 172; GraphMixer 20 neighbours, 2 mixer layers,
  dropout 0.4, 172 channels (the edge feature width), time encoding 100;
* metric (``utils/metrics.py``): test AP as the mean of per-batch AP, from the memory left by
  training the best epoch and then replaying validation (``evaluate_model_link_prediction``
  continues the state; tgeval: ``replay`` of the validation segment, then ``evaluate(...,
  Protocol(warm=False))``).

Known differences, kept: timestamp batches of at most 200 (DyGLib: fixed batches of 200); no
removal of the edges of 10% of the test nodes from training (DyGLib removes them for its
inductive setting); negatives that exclude the positive (DyGLib draws without a check); the
published figures use 5 runs.

The second protocol is tgeval's: the state rebuilt from the history with the best epoch's
weights (``evaluate``'s default), the same negatives for AP, and all-entity MRR over the
training catalog (average ties).

Published transductive test AP on UCI (random negatives, mean ± std over 5 runs, as quoted in
TPNet's Table 1 from DyGLib): TGN 92.34 ± 1.04, DyRep 65.14 ± 2.30, GraphMixer 93.25 ± 0.57.

``graphmixer-query`` is GraphMixer with DyGLib's time gaps (``time_gap="query"``: each token
encodes how long before the scored event the neighbour interacted; tgeval's default encodes the
gap to the node's latest interaction, so that all-entity ranking stays exact and cheap), scored
from the state at each batch's start. ``graphmixer-dyglib`` also reads every interaction before
the scored event inside its batch (``history="exact"`` in training and evaluation), as DyGLib's
neighbour sampler does. Neither has all-entity ranking, so their MRR column is empty.

Two more ablations move tgeval's DyRep and TGN toward DyGLib's (``models/MemoryModel.py``,
``models/modules.py``):

* ``dyrep-frozen``: DyRep whose partner attention and time encoding are never trained. DyGLib's
  DyRep computes a message (with the partner's attention embedding and the time features) at
  event time and stores it, and the memory bank is detached after every optimizer step, so the
  loss reaches neither; only the RNN cell and the link predictor learn. tgeval's DyRep applies
  messages inside scoring, so both are trained through the scores.
* ``dyrep-dyglib``: the same, with DyGLib's time encoding, ``cos(w t)`` with fixed frequencies
  ``w = 10 ** -linspace(0, 9, 100)`` and zero phase (``TimeEncoder``) instead of PyG's randomly
  initialised ``Linear(1, 100)``.
* ``dyrep-dyglib-event``: the same, with the partner's attention embedding computed when the
  event is observed and stored with the message (``partner_embedding="event"``), as DyGLib's
  ``compute_new_node_raw_messages`` does, instead of when the message is applied.
* ``tgn-dyglib-time``: TGN with DyGLib's time-encoding initialisation (still trained, as in DyGLib).
* ``tgn-dyglib``: TGN's attention as DyGLib's (``GraphAttentionEmbedding`` in
  ``models/modules.py``, called from ``MemoryModel.compute_node_temporal_embeddings``): each
  neighbour's time feature encodes the *query* time minus the interaction's time
  (``time_gap="query"``; PyG's recipe, tgeval's default, encodes the neighbour's last memory
  update minus it), and the neighbours are every interaction before the query time, the earlier
  events of its own batch included (``NeighborSampler.get_historical_neighbors``), while the
  memory stays as of the batch start (``history="neighbors"``, in training and evaluation). A
  node is embedded per scored pair, so it has no all-entity ranking.

Run: python benchmarks/reproduce_dyglib.py [--models tgn,dyrep,graphmixer,graphmixer-query,graphmixer-dyglib,
     dyrep-frozen,dyrep-dyglib,dyrep-dyglib-event,tgn-dyglib-time,tgn-dyglib]
     [--seeds 0,1,2] [--epochs 100] [--patience 20] [--threads 1] [--val-state training|rebuilt] [--out dyglib.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import print_header, print_table

from tgeval.training.train import Recipe
from tgeval import build_catalog, chronological_split, evaluate, load_checkpoint, replay
from tgeval.core.atomic import write_atomic
from tgeval.core.choices import VAL_STATES
from tgeval.data.catalog import Catalog
from tgeval.data.datasets import load_dataset
from tgeval.models import DyRep, DyRepConfig, GraphMixer, GraphMixerConfig, TGN, TGNConfig
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.training.fitting import Checkpointing, Validation, fit

FEATURE_DIM = 172  # DataLoader.py: NODE_FEAT_DIM = EDGE_FEAT_DIM = 172
PUBLISHED_AP = {"tgn": (0.9234, 0.0104), "dyrep": (0.6514, 0.0230), "graphmixer": (0.9325, 0.0057)}


def dyglib_time_encoding(encoder: torch.nn.Module) -> None:
    """DyGLib's ``TimeEncoder`` initialisation (``models/modules.py``): ``cos(w t + b)`` with
    ``w = 1 / 10 ** linspace(0, 9, dim)`` and ``b = 0``, on PyG's ``TimeEncoder`` (same form)."""
    dim = encoder.lin.out_features
    with torch.no_grad():
        encoder.lin.weight.copy_((1.0 / 10 ** torch.linspace(0, 9, dim, dtype=torch.float64)).float().view(dim, 1))
        encoder.lin.bias.zero_()


def build(name: str, num_nodes: int):
    """The model with DyGLib's UCI settings (``load_link_prediction_best_configs``), and the ablations."""
    if name.startswith("tgn"):
        model = TGN(TGNConfig(num_nodes, msg_dim=FEATURE_DIM, memory_dim=FEATURE_DIM, time_dim=100,
                              embedding_dim=FEATURE_DIM, num_neighbors=10, dropout=0.1,
                              time_gap="query" if name == "tgn-dyglib" else "latest"))
        if name == "tgn-dyglib-time":
            dyglib_time_encoding(model.memory.time_enc)  # shared with the attention's
        return model
    if name.startswith("dyrep"):
        model = DyRep(DyRepConfig(num_nodes, msg_dim=FEATURE_DIM, memory_dim=FEATURE_DIM, time_dim=100,
                                  num_neighbors=10, dropout=0.0,
                                  partner_embedding="event" if name == "dyrep-dyglib-event" else "applied"))
        if name.startswith("dyrep-dyglib"):
            dyglib_time_encoding(model.memory.time_enc)
        if name != "dyrep":  # no gradient reaches them in DyGLib (module docstring)
            model.memory.attention.requires_grad_(False)
            model.memory.time_enc.requires_grad_(False)
        return model
    # graphmixer-query / -dyglib: DyGLib's time gaps (each token's time is its gap to the query time,
    # models/GraphMixer.py)
    return GraphMixer(GraphMixerConfig(num_nodes, msg_dim=FEATURE_DIM, num_neighbors=20, time_dim=100,
                                       hidden_dim=FEATURE_DIM, embedding_dim=FEATURE_DIM, num_layers=2, dropout=0.4,
                                       time_gap="latest" if name == "graphmixer" else "query"))


#: what an event of a batch is scored from, in training and evaluation: the batch-start state,
#: except for graphmixer-dyglib, which reads every interaction before the event's time, inside
#: its batch too, as DyGLib's neighbour sampler (utils/utils.py, NeighborSampler.get_historical_neighbors),
#: and tgn-dyglib, whose neighbours do so while its memory stays as of the batch start
HISTORY = {"graphmixer-dyglib": "exact", "tgn-dyglib": "neighbors"}


def distinct(ids: torch.Tensor, num_nodes: int, rule: str) -> Catalog:
    items = torch.unique(ids)
    return Catalog("custom", items, None, num_nodes, {"rule": rule})


def dyglib_setting():
    """``(data, split, num_nodes, every destination, training destinations)``: UCI as DyGLib loads it
    (zero features of width 172), its 70/15/15 split, and the catalogs of DyGLib's evaluation
    negatives and of the training negatives (module docstring)."""
    data, info = load_dataset("uci")
    data.msg = torch.zeros(data.num_events, FEATURE_DIM)  # zero features, padded to 172
    split = chronological_split(data, (0.70, 0.15, 0.15))
    everything = distinct(data.dst, info.num_nodes, "every distinct destination of the stream (DyGLib's full_data)")
    train_dst = distinct(data.dst[: split.train.end], info.num_nodes, "distinct destinations of the training segment")
    return data, split, info.num_nodes, everything, train_dst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="tgn,dyrep,graphmixer")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--val-state", choices=VAL_STATES, default="training",
                        help="the state early stopping validates from: the state training left, as DyGLib does "
                             "(fit's Validation(state='training'), the default), or tgeval's rebuilt state")
    parser.add_argument("--out", default="dyglib.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_header("DyGLib's transductive protocol on UCI, beside tgeval's")
    data, split, num_nodes, everything, train_dst = dyglib_setting()
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    report: dict = {"command": _common.command_line(), "runs": {}}
    rows = []
    for name in args.models.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            torch.manual_seed(seed)
            model = build(name, num_nodes)
            began = time.perf_counter()
            with tempfile.TemporaryDirectory() as folder:
                run = fit(model, data, split,
                          recipe=Recipe(UniformSampler(train_dst), "bce", num_negatives=1, batch_size=200, seed=seed,
                                        history=HISTORY.get(name, "batch")),
                          optimizer=torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4),
                          epochs=args.epochs,
                          validation=Validation("ap", sampler=UniformSampler(everything), negatives=1,
                                                state=args.val_state, patience=args.patience),
                          checkpoints=Checkpointing(folder),
                          on_epoch=lambda record: print(f"    {name}, seed {seed}, epoch {record['epoch']}: validation "
                                                        f"AP {record['val']['ap']:.4f}", flush=True))
                ckpt = load_checkpoint(Path(folder) / "best.pt", data=data)
            replay(ckpt.model, data, split.val)  # DyGLib: validation continues the training state
            history = HISTORY.get(name, "batch")
            continued = evaluate(ckpt.model, data, split.test,
                                 Protocol(warm=False, num_negatives=1, seed=seed, history=history),
                                 sampler=UniformSampler(everything))
            rebuilt = evaluate(model, data, split.test, Protocol(num_negatives=1, seed=seed, history=history),
                               sampler=UniformSampler(everything),
                               catalog=catalog if model.capabilities.ranks_all_entities else None)
            seconds = time.perf_counter() - began
            curve = [round(record["val"]["ap"], 4) for record in run["history"]]
            entry = {"best_epoch": run["best_epoch"], "epochs_run": run["epochs_run"], "val_ap_curve": curve,
                     "dyglib_protocol_ap": continued.metrics["sampled"]["ap"]["per_batch_mean"],
                     "tgeval_protocol_ap": rebuilt.metrics["sampled"]["ap"]["per_batch_mean"],
                     "tgeval_all_entity_mrr": rebuilt.metrics["all_entity"]["mrr"]["micro"]
                     if "all_entity" in rebuilt.metrics else None, "seconds": seconds}
            report["runs"][f"{name}/seed {seed}"] = entry
            write_atomic(args.out, json.dumps(report, indent=1) + "\n")
            published, spread = PUBLISHED_AP[name.split("-")[0]]
            rows.append([name, seed, entry["epochs_run"], entry["best_epoch"], f"{entry['dyglib_protocol_ap']:.4f}",
                         f"{published:.4f} ± {spread:.4f}", f"{entry['tgeval_protocol_ap']:.4f}",
                         "n/a" if entry["tgeval_all_entity_mrr"] is None else f"{entry['tgeval_all_entity_mrr']:.4f}",
                         f"{seconds:.0f}"])
            print(f"  {name}, seed {seed}: validation AP by epoch {curve}", flush=True)
    print(f"test AP: mean of per-batch AP, 1 negative per positive uniform over every destination (seeded); "
          f"all-entity MRR over the {catalog.size}-item training catalog, micro, average ties; online replay in "
          f"timestamp batches of <= 200; torch threads {torch.get_num_threads()}")
    print_table(["model", "seed", "epochs", "best epoch", "AP, DyGLib's protocol", "published AP", "AP, tgeval's",
                 "all-entity MRR, tgeval's", "seconds"], rows)


if __name__ == "__main__":
    main()
