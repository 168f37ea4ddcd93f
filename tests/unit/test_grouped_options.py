"""The grouped options of the entry points: a Recipe (what an epoch trains on), a Tuning (how evaluate runs) and
Validation.patience check themselves when built, with typed errors; fit and train_epoch fit on a screen."""

import dataclasses
import inspect

import pytest
import torch

from tgeval import LeakageError, ProtocolError, Recipe, Tuning, Validation, evaluate, fit, train_epoch
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.models.heuristics import EdgeBank
from tgeval.eval.protocol import Protocol
from tgeval.samplers import InductiveSampler, UniformSampler
from tgeval.training.losses import bpr_loss

NUM_NODES = 20
DATA = generate_events(300, NUM_NODES, seed=4)
SPLIT = chronological_split(DATA)
CATALOG = build_catalog(DATA, "train", train_end=SPLIT.train.end, num_nodes=NUM_NODES)
SAMPLER = UniformSampler(CATALOG)


def test_entry_points_take_at_most_twelve_parameters():
    for function in (fit, train_epoch):
        assert len(inspect.signature(function).parameters) <= 12, function.__name__


def test_a_recipe_holds_the_documented_defaults_and_is_frozen():
    recipe = Recipe(SAMPLER, "bce")
    assert (recipe.num_negatives, recipe.batch_size, recipe.seed, recipe.history, recipe.allow_whole_stream) == \
        (1, 200, 0, "batch", False)
    assert Recipe(SAMPLER, bpr_loss).loss is bpr_loss  # a callable loss is kept as given
    with pytest.raises(dataclasses.FrozenInstanceError):
        recipe.seed = 1


@pytest.mark.parametrize("field, value, message", [
    ("loss", "hinge", "unknown loss 'hinge'"),
    ("loss", 3, "Recipe.loss must be a loss name or a callable"),
    ("num_negatives", 0, "Recipe.num_negatives must be an integer >= 1"),
    ("num_negatives", 1.5, "Recipe.num_negatives must be an integer >= 1"),
    ("num_negatives", True, "Recipe.num_negatives must be an integer >= 1"),
    ("batch_size", 0, "Recipe.batch_size must be an integer >= 1"),
    ("batch_size", -3, "Recipe.batch_size must be an integer >= 1"),
    ("seed", "0", "Recipe.seed must be an integer"),
    ("seed", 1.0, "Recipe.seed must be an integer"),
    ("history", "later", "Recipe.history must be one of"),
])
def test_a_recipe_refuses_bad_values_when_built(field, value, message):
    with pytest.raises(ProtocolError, match=message):
        Recipe(**{"sampler": SAMPLER, "loss": "bce", field: value})


def test_a_recipe_refuses_a_whole_stream_sampler_unless_on_purpose():
    inductive = InductiveSampler(DATA, train_end=SPLIT.train.end, num_nodes=NUM_NODES, catalog=CATALOG)
    with pytest.raises(LeakageError, match="allow_whole_stream=True"):
        Recipe(inductive, "bce")
    assert Recipe(inductive, "bce", allow_whole_stream=True).allow_whole_stream


@pytest.mark.parametrize("patience", [0, -1, 1.5, True, "2"])
def test_validation_refuses_a_patience_that_is_not_a_positive_integer(patience):
    with pytest.raises(ProtocolError, match="Validation.patience must be None"):
        Validation(patience=patience)


def test_validation_takes_no_patience_or_a_positive_one():
    assert Validation().patience is None and Validation(patience=1).patience == 1


@pytest.mark.parametrize("budget", [-5, 0, 1.5, True])
def test_tuning_refuses_a_candidate_budget_below_one(budget):
    # a negative budget counted no candidate (every rank 1, MRR 1.0), zero divided by zero
    with pytest.raises(ProtocolError, match=r"candidate_budget .* must be an integer >= 1"):
        Tuning(candidate_budget=budget)


@pytest.mark.parametrize("field, value, message", [
    ("records", "some", "Tuning.records must be one of"),
    ("use_shortcut", "yes", "Tuning.use_shortcut must be True or False"),
    ("check_state", "shallow", "Tuning.check_state must be True, False or 'deep'"),
    ("check_state", 1, "Tuning.check_state must be True, False or 'deep'"),
])
def test_tuning_refuses_bad_values_when_built(field, value, message):
    with pytest.raises(ProtocolError, match=message):
        Tuning(**{field: value})


def test_tuning_is_recorded_and_changes_no_number():
    """The manifest records the budget and the guard as before; a small budget and no shortcut (chunked scoring of
    every item) give the same metrics as the defaults."""
    catalog = Catalog("custom", torch.arange(NUM_NODES), None, NUM_NODES)
    protocol = Protocol(num_negatives=3, batch_size=20)
    default = evaluate(EdgeBank(NUM_NODES), DATA, SPLIT.test, protocol, sampler=SAMPLER, catalog=catalog)
    tuned = evaluate(EdgeBank(NUM_NODES), DATA, SPLIT.test, protocol, sampler=SAMPLER, catalog=catalog,
                     tuning=Tuning(candidate_budget=7, use_shortcut=False, records="none", check_state="deep"))
    assert (default.manifest["candidate_budget"], default.manifest["state_guard"]) == (2**22, True)
    assert (tuned.manifest["candidate_budget"], tuned.manifest["state_guard"]) == (7, "deep")
    assert tuned.metrics == default.metrics
    assert tuned.records is None and default.records is not None
