"""State outside the model instance: a class attribute that ``update`` changes is refused like any hidden
state, and a second thread's pass on a model object that is in a pass is refused; neither carries one run's
events into another's numbers."""

from __future__ import annotations

import threading

import pytest
import torch

from tgeval import HiddenStateError, LeakageError, Protocol, build_catalog, chronological_split, evaluate
from tgeval.data.synthetic import generate_events
from tgeval.models.base import TemporalLinkModel
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import UniformSampler

N = 40
DATA = generate_events(num_events=600, num_nodes=N, seed=0)
SPLIT = chronological_split(DATA)
CATALOG = build_catalog(DATA, "train", train_end=SPLIT.train.end, num_nodes=N)


def run(model, catalog=CATALOG):
    return evaluate(model, DATA, SPLIT.test, Protocol(num_negatives=5), sampler=UniformSampler(CATALOG),
                    catalog=catalog)


class SeenOnTheClass(TemporalLinkModel):
    """History in a class attribute: shared by every instance, untouched by reset_state."""

    seen: set = set()

    def score(self, src, dst, t):
        return torch.tensor([float((s, d) in self.seen) for s, d in zip(src.tolist(), dst.tolist())])

    def update(self, batch):
        self.seen.update(zip(batch.src.tolist(), batch.dst.tolist()))


class Holder:
    """A plain object whose class holds a counter."""

    calls = 0


class CountsOnTheClass(TemporalLinkModel):
    def __init__(self, num_nodes):
        super().__init__(num_nodes)
        self.holder = Holder()

    def score(self, src, dst, t):
        return torch.zeros(src.numel())

    def update(self, batch):
        type(self.holder).calls += 1  # rebinds the class attribute of an object the model holds


def test_history_in_a_class_attribute_is_refused():
    # it gave MRR 0.0920, then 0.1700 from a fresh instance that inherited the first run's events
    SeenOnTheClass.seen = set()  # empty, as a first run finds it: its update must change the class attribute
    with pytest.raises(HiddenStateError, match=r"changed `seen \(class attribute\)`.*shared by every instance of "
                                               r"the class.*Create it per instance \(in __init__\)"):
        run(SeenOnTheClass(N))
    with pytest.raises(HiddenStateError, match=r"`holder.calls \(class attribute\)`.*register_buffer\('calls'"):
        run(CountsOnTheClass(N))


def test_class_constants_are_no_state():
    class Constant(SeenOnTheClass):
        seen = frozenset({(0, 1)})
        label = "constant"

        def update(self, batch):
            pass

    assert run(Constant(N), catalog=None).metrics["sampled"]["num_events"] == SPLIT.test.num_events


class Gate(EdgeBank):
    """EdgeBank whose first update waits until released: a pass that stays open while another thread starts."""

    def __init__(self, num_nodes):
        super().__init__(num_nodes)
        self.entered, self.release = threading.Event(), threading.Event()

    def update(self, batch):
        self.entered.set()
        assert self.release.wait(60)
        super().update(batch)


def test_a_second_threads_pass_on_the_same_model_is_refused():
    # four threads on one shared model returned wrong numbers; the one pass that runs gives the right ones
    expected = run(EdgeBank(N)).metrics
    model, results, errors = Gate(N), [], []

    def evaluate_in_thread():
        try:
            results.append(run(model).metrics)
        except LeakageError as error:
            errors.append(str(error))

    first = threading.Thread(target=evaluate_in_thread)
    first.start()
    assert model.entered.wait(60)
    others = [threading.Thread(target=evaluate_in_thread) for _ in range(3)]
    for thread in others:
        thread.start()
        thread.join()
    model.release.set()
    first.join()
    assert len(errors) == 3 and results == [expected]
    assert "Gate is in a pass of another thread, and evaluate would start one on the same object" in errors[0]
    assert "copy.deepcopy(model)" in errors[0]
    assert run(model).metrics == expected  # released: the model is free again


def test_different_models_run_in_parallel():
    expected = run(EdgeBank(N)).metrics  # one model, alone
    results = []
    threads = [threading.Thread(target=lambda: results.append(run(EdgeBank(N)).metrics)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r == expected for r in results)
