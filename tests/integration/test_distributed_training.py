"""Data-parallel training on 2 and 3 gloo processes equals one process (issue 18, part 2).

Every rank trains one epoch of ``train_epoch(distributed=True)``: the same batches and
negatives, its share of each batch's terms, one gradient ``all_reduce`` per batch. Without
dropout (masks are drawn per rank) the parameters after an SGD epoch agree with one process's
to 1e-5 and are bit-identical across the ranks, for TGN, DyRep and GraphMixer, under BCE and
BPR. ``fit``'s validation is identical on every rank, and the checkpoints that rank 0 alone
writes hold one process's parameters to 1e-5. (SGD, because the check is of the summed
gradient: Adam divides each step by the root of its running squared gradient, so a parameter
whose true gradient is 0 up to rounding, such as an attention key bias under softmax's shift
invariance, takes steps of the learning rate's size in the direction of that rounding, in one
process as in several.)
"""

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.core.distributed import sum_gradients
from tgeval.errors import DistributedError
from tgeval.samplers import UniformSampler
from tgeval.data.catalog import build_catalog
from tgeval.training.checkpoint import load_checkpoint
from tgeval.training.fitting import Checkpointing, Validation, fit
from tgeval.training.train import Recipe, train_epoch
from tests.helpers import free_port, small_neural_model

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="this PyTorch build has no torch.distributed gloo backend")

NUM_NODES = 24
CASES = [("tgn", "bce"), ("dyrep", "bce"), ("graphmixer", "bce"), ("tgn", "bpr")]


def _train(name, loss, distributed=False):
    """One epoch from seed 0: ``(parameters after it, its loss, parameters before it)``."""
    torch.manual_seed(0)
    data = generate_events(400, NUM_NODES, seed=5)
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=NUM_NODES)
    model = small_neural_model(name, NUM_NODES, dropout=0.0)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    out = train_epoch(model, data, split.train,
                      recipe=Recipe(UniformSampler(catalog), loss, num_negatives=3, batch_size=20), optimizer=optimizer,
                      distributed=distributed)
    return {k: v.detach().clone() for k, v in model.named_parameters()}, out["loss"], before


def _fit(folder, distributed=False):
    """Two epochs of ``fit`` (SGD, validation AP and all-entity MRR) with checkpoints in ``folder``."""
    torch.manual_seed(0)
    data = generate_events(400, NUM_NODES, seed=5)
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=NUM_NODES)
    model = small_neural_model("tgn", NUM_NODES, dropout=0.0)
    return fit(model, data, split, recipe=Recipe(UniformSampler(catalog), "bce", num_negatives=3, batch_size=20),
               epochs=2, optimizer=torch.optim.SGD(model.parameters(), lr=0.02),
               validation=Validation("all_entity_mrr", catalog=catalog), checkpoints=Checkpointing(folder),
               distributed=distributed)


def _worker(rank, world, port, folder):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        # sum_gradients: a gradient only rank 0 has is summed onto every rank; one nobody has stays None
        used_here, used_nowhere = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))
        used_here.grad = torch.full((3,), 2.0) if rank == 0 else None
        loss = sum_gradients([used_here, used_nowhere], torch.tensor(float(rank + 1)))
        assert torch.equal(used_here.grad, torch.full((3,), 2.0)) and used_nowhere.grad is None
        assert float(loss) == world * (world + 1) / 2
        out = {case: _train(*case, distributed=True)[:2] for case in CASES}
        fitted = _fit(f"{folder}/run", distributed=True)
        out["fit"] = ([record["val"] for record in fitted["history"]], sorted(fitted["checkpoints"] or {}))
        with pytest.raises(ValueError, match="needs one of the built-in losses"):
            _train("tgn", lambda pos, neg: (neg - pos[:, None]).mean(), distributed=True)
        torch.manual_seed(rank)  # ranks that would train different models are refused, on every rank
        model = small_neural_model("tgn", NUM_NODES)
        data = generate_events(400, NUM_NODES, seed=5)
        with pytest.raises(DistributedError, match="ranks disagree on the training"):
            train_epoch(model, data, None,
                        recipe=Recipe(UniformSampler(build_catalog(data, "all", num_nodes=NUM_NODES)), "bce"),
                        optimizer=torch.optim.SGD(model.parameters(), lr=0.1), distributed=True)
        torch.save(out, f"{folder}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 3])
def test_data_parallel_epoch_equals_one_process(world, tmp_path, one_thread):
    mp.start_processes(_worker, args=(world, free_port(), str(tmp_path)), nprocs=world, join=True,
                       start_method="spawn")
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(world)]
    for case in CASES:
        expected, expected_loss, before = _train(*case)
        params, loss = ranks[0][case]
        assert max(float((expected[k] - before[k]).abs().max()) for k in before) > 1e-3, case  # it learned
        for k, value in expected.items():
            torch.testing.assert_close(params[k], value, rtol=0, atol=1e-5, msg=lambda m: f"{case} {k}: {m}")
        assert loss == pytest.approx(expected_loss, rel=1e-5), case
        for other in ranks[1:]:  # the ranks stay identical: one summed gradient, one step
            assert all(torch.equal(other[case][0][k], params[k]) for k in params), case
    # fit: rank 0 alone wrote the checkpoints, which hold one process's parameters to 1e-5
    single = _fit(tmp_path / "single")
    assert ranks[0]["fit"][1] == ["best", "last"] and all(r["fit"][1] == [] for r in ranks[1:])
    assert all(r["fit"][0] == ranks[0]["fit"][0] for r in ranks[1:])  # the same validation, every rank
    for got, want in zip(ranks[0]["fit"][0], [record["val"] for record in single["history"]]):
        assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], abs=1e-4) for k in want)
    for kind in ("best", "last"):
        ours = load_checkpoint(tmp_path / "run" / f"{kind}.pt").model.state_dict()
        theirs = load_checkpoint(tmp_path / "single" / f"{kind}.pt").model.state_dict()
        for k, value in theirs.items():
            torch.testing.assert_close(ours[k], value, rtol=0, atol=1e-5, msg=lambda m: f"{kind} {k}: {m}")


def test_distributed_training_without_a_process_group_names_the_fix():
    with pytest.raises(DistributedError, match="launch with torchrun"):
        _train("tgn", "bce", distributed=True)
