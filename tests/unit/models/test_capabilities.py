"""A model's capabilities: validated on construction, declared once, and the old per-flag attributes folded in."""

import math

import pytest
import torch
from torch_geometric.data import TemporalData

import tgeval
from tgeval.data.sorted_keys import Occurrences
from tgeval.data.synthetic import generate_events
from tgeval.errors import ModelCapabilityError, ModelConfigError
from tgeval.models import Capabilities, EdgeBank, Popularity, TemporalLinkModel
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.helpers import small_neural_model


def test_defaults_fit_any_model():
    assert Capabilities() == Capabilities(exact_history=False, batch_neighbors=False, ranks_all_entities=True,
                                          tie_tolerance=0.0, state_in_registered_tensors=False)
    assert TemporalLinkModel.capabilities == Capabilities()


@pytest.mark.parametrize("changes, message", [
    (dict(tie_tolerance=-1e-5), "finite number >= 0"),
    (dict(tie_tolerance=math.inf), "finite number >= 0"),
    (dict(tie_tolerance=math.nan), "finite number >= 0"),
    (dict(tie_tolerance="1e-5"), "finite number >= 0"),
    (dict(tie_tolerance=True), "finite number >= 0"),
    (dict(exact_history=1), "exact_history must be True or False"),
    (dict(ranks_all_entities=None), "ranks_all_entities must be True or False"),
    (dict(exact_history=True, batch_neighbors=True), "exclude each other"),
])
def test_invalid_capabilities_are_refused(changes, message):
    with pytest.raises(ModelConfigError, match=message):
        Capabilities(**changes)
    with pytest.raises(ModelConfigError, match=message):  # replace validates again
        Capabilities().replace(**changes)


def test_tie_tolerance_is_stored_as_float_and_capabilities_are_frozen():
    capabilities = Capabilities(tie_tolerance=0)
    assert type(capabilities.tie_tolerance) is float
    with pytest.raises(AttributeError):
        capabilities.exact_history = True  # type: ignore[misc]


def test_configuration_dependent_capabilities():
    assert Popularity(5).capabilities.exact_history and not Popularity(5, half_life=2.0).capabilities.exact_history
    query = small_neural_model("tgn", 5, time_gap="query").capabilities
    assert query == Capabilities(batch_neighbors=True, ranks_all_entities=False, tie_tolerance=1e-5,
                                 state_in_registered_tensors=True)
    assert small_neural_model("tgn", 5).capabilities.ranks_all_entities


def test_old_class_attribute_is_folded_with_a_warning_naming_the_change():
    with pytest.warns(DeprecationWarning, match=r"`capabilities = Capabilities\(ranks_all_entities=False, "
                                                r"tie_tolerance=0.001, state_in_registered_tensors=True\)`"):
        class OldStyle(EdgeBank):
            exact_history = False
            ranks_all_entities = False
            tie_tolerance = 1e-3
    assert OldStyle.capabilities == Capabilities(ranks_all_entities=False, tie_tolerance=1e-3,
                                                 state_in_registered_tensors=True)
    assert EdgeBank.capabilities.exact_history  # the parent keeps its own
    assert "exact_history" not in OldStyle.__dict__
    # the folded declaration is the one the engine uses: a catalog is refused before any work
    data = generate_events(300, 20, seed=0)
    split = tgeval.chronological_split(data, (0.6, 0.2, 0.2))
    catalog = tgeval.build_catalog(data, "train", train_end=split.train.end, num_nodes=20)
    with pytest.raises(ModelCapabilityError, match="cannot rank a whole catalog"):
        tgeval.evaluate(OldStyle(20), data, split.test, sampler=UniformSampler(catalog), catalog=catalog)
    result = tgeval.evaluate(OldStyle(20), data, split.test, sampler=UniformSampler(catalog),
                             protocol=Protocol(num_negatives=3))
    assert result.manifest["tie_tolerance"] == 1e-3


def test_old_class_attribute_that_is_invalid_or_computed_is_refused():
    with pytest.raises(ModelConfigError, match="finite number"):
        class Negative(EdgeBank):
            tie_tolerance = -1.0
    with pytest.raises(ModelConfigError, match=r"self.capabilities = self.capabilities.replace\(ranks_all_entities"):
        class Computed(EdgeBank):
            @property
            def ranks_all_entities(self):
                return False


def test_old_instance_attribute_is_folded_and_old_read_still_answers():
    class Configured(EdgeBank):
        def __init__(self, num_nodes, tolerance):
            super().__init__(num_nodes)
            self.tie_tolerance = tolerance

    with pytest.warns(DeprecationWarning, match=r"self.capabilities = self.capabilities.replace\(tie_tolerance"):
        model = Configured(4, 1e-4)
    assert model.capabilities == Capabilities(exact_history=True, tie_tolerance=1e-4, state_in_registered_tensors=True)
    assert Configured.capabilities == EdgeBank.capabilities  # the class's declaration is untouched
    with pytest.warns(DeprecationWarning, match=r"read `model.capabilities.exact_history`"):
        assert model.exact_history is True


def test_old_exact_history_hook_name_still_serves_within_batch():
    with pytest.warns(DeprecationWarning) as caught:
        class OldHook(EdgeBank):
            exact_history = True

            def _index_earlier(self, batch):  # every event one time unit early: EdgeBank's own hook differs
                return Occurrences(self._key(batch.src, batch.dst), batch.t - 1, times_sorted=True)
    assert any("rename it `index_earlier`" in str(w.message) for w in caught)
    batch = TemporalData(src=torch.tensor([0, 1]), dst=torch.tensor([1, 2]), t=torch.tensor([1, 2]))
    model = OldHook(4)
    with model.within_batch(batch):
        assert model.earlier is not None
        with pytest.warns(DeprecationWarning, match="read `self.earlier`"):
            assert model._earlier is model.earlier
        # the old hook serves: pair (1, 2) of t=2 counts as of t=1, before the scored time 2
        assert model.score(torch.tensor([0, 1]), torch.tensor([1, 2]), torch.tensor([2, 2])).tolist() == [1.0, 1.0]
    assert model.earlier is None
