"""The one registry mechanism (tgeval.core.registry) behind models, samplers and formats: options read from
signatures (from source for lazy targets, the same as inspecting them), typed errors listing the valid
options, and the listing the docs render."""

import subprocess
import sys
from pathlib import Path

import pytest

from tgeval.data import formats
from tgeval.errors import SamplerError
from tgeval.models import registry as models
from tgeval.core.registry import Entry, Option, Registry, load, signature_options
from tgeval.samplers import UniformSampler
from tgeval.samplers import registry as samplers
from tests.helpers import fake_distribution

REPO = Path(__file__).resolve().parents[2]


def reader(path, *, sheet: str = "a", rows: int = 3, remap=None, bipartite=False, sort=False, directed=True):
    return path


def test_options_come_from_the_signature_less_what_the_registry_fills():
    entry = Entry("mine", reader, "a reader", skip=formats.SHARED_KEYWORDS)
    assert entry.options == ("sheet", "rows") and not entry.open
    assert entry.parameters == (Option("sheet", "str", "a"), Option("rows", "int", 3))
    assert str(entry.parameters[0]) == "sheet: str = 'a'"
    assert signature_options(lambda **anything: None) == ((), True)


@pytest.mark.parametrize("name", formats.names())
def test_a_lazy_readers_options_read_from_source_equal_the_imported_signature(name):
    target = formats.entry(name).target
    assert isinstance(target, str)
    from_source = signature_options(target, formats.SHARED_KEYWORDS)
    imported = signature_options(load(target), formats.SHARED_KEYWORDS)
    assert from_source == imported


def test_listing_the_formats_and_their_options_imports_no_torch():
    probe = ("import sys\nfrom tgeval.data import formats\n"
             "rows = formats.describe()\n"
             "print('torch' in sys.modules, [r.name for r in rows if 'time_format' in r.options])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.stdout.split("\n")[0] == "False ['csv', 'tgb']", done.stderr


def test_every_entry_of_every_registry_is_listed_with_its_help():
    for describe, names in ((models.describe, models.names), (samplers.describe, samplers.names),
                            (formats.describe, formats.names)):
        rows = describe()
        assert [row.name for row in rows] == list(names())
        assert all(row.help for row in rows if row.name != "toy")  # tests/toy_model.py registers toy bare
    assert [row.name for row in models.describe("neural")] == list(models.names("neural"))
    historical = next(row for row in samplers.describe() if row.name == "historical")
    assert "fallback: str = 'uniform'" in historical.options and "catalog" not in historical.options


def test_an_unknown_option_is_a_typed_error_listing_the_valid_ones():
    with pytest.raises(SamplerError, match=r"sampler 'degree' takes no option \['graf'\] in 'degree:graf=1'; "
                                           r"options: count, directed, fallback, replace, short\."):
        samplers._REGISTRY.check_options("degree", {"graf": 1}, where="in 'degree:graf=1'")
    with pytest.raises(SamplerError, match="unknown sampler 'nope'; registered: .*uniform"):
        samplers.get("nope")
    with pytest.raises(ValueError, match=r"`format` must be one of \['csv', .*\], got 'xls'\."):
        formats.entry("xls")


def test_a_registry_copy_takes_registrations_without_touching_the_original(monkeypatch):
    monkeypatch.setattr(formats, "_REGISTRY", formats._REGISTRY.copy())
    formats.register("mine", reader, help="a reader")
    assert formats.entry("mine").options == ("sheet", "rows")
    with pytest.raises(ValueError, match="a format named 'mine' is already registered; pass overwrite=True"):
        formats.register("mine", reader)
    formats.register("mine", reader, help="again", overwrite=True)
    assert formats.entry("mine").help == "again"
    monkeypatch.undo()
    assert "mine" not in formats.names()


def test_a_sampler_context_names_attributes_of_the_context():
    with pytest.raises(ValueError, match="names 'stream', not an attribute of Context"):
        samplers.register("bad", UniformSampler, context={"catalog": "stream"})
    assert "bad" not in samplers.names()


def test_every_mapping_method_sees_the_entries_of_the_entry_point_group(tmp_path, monkeypatch):
    """``in``, ``len``, iteration and ``[name]`` import the group's modules first, as ``entry`` does."""
    (tmp_path / "greetings_host.py").write_text("from tgeval.core.registry import Registry\nGREETINGS = None\n")
    fake_distribution(tmp_path, "plugin_greetings", "from greetings_host import GREETINGS\n"
                      "from tgeval.core.registry import Entry\n"
                      "GREETINGS.add(Entry('plugin-hello', 'builtins:print', 'from another package'))\n",
                      "tgeval.test_greetings", "plugin-hello")
    monkeypatch.syspath_prepend(str(tmp_path))
    import greetings_host

    for read in (lambda r: "plugin-hello" in r, lambda r: len(r) == 1, lambda r: list(r) == ["plugin-hello"],
                 lambda r: r["plugin-hello"].help == "from another package"):
        greetings_host.GREETINGS = Registry("greeting", ValueError, entry_points="tgeval.test_greetings")
        monkeypatch.delitem(sys.modules, "plugin_greetings", raising=False)
        assert read(greetings_host.GREETINGS)
