"""Shared test set-up: no test writes to the user's cache, and none may reach the network."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from localeval import offline

# The test process runs localeval's command line in-process: the same defaults as its own process.
offline.defaults_for_the_command_line()

# A suite started in the background by a shell without job control (`cmd &` in a script) inherits SIGINT
# ignored, and so would the processes the interrupt tests start: their Ctrl-C would never come. As a
# terminal's foreground job has it: Python's handler here, the default in each child.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items):
    """`@pytest.mark.nulls_expected`: a test whose metric rightly scores nothing, where the note saying so is not
    what it tests, ignores that note by name, so that a stray one elsewhere still shows in the summary."""
    for item in items:
        if item.get_closest_marker("nulls_expected"):
            item.add_marker(pytest.mark.filterwarnings("ignore::localeval.NothingScoredWarning"))


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory):
    """One answer cache for the whole session, away from the user's (~/.cache/localeval)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("answer-cache")))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def registry_as_built():
    """A test registers metrics of its own (register_metric, --metrics-from); none outlives it, or "all" would
    name it in the next; nor do the folders --metrics-from adds to sys.path, and the modules it ran."""
    path = list(sys.path)
    yield
    sys.path[:] = path
    sources = sys.modules.get("localeval.metrics.sources")  # and the modules those files ran
    for name in [*getattr(sources, "_own_modules", ()), *(n for n in sys.modules if n.startswith("localeval_metrics_from_"))]:
        sys.modules.pop(name, None)
    if sources is not None:
        sources._own_modules.clear()
        sources._folders.clear()
    metrics = sys.modules.get("localeval.metrics")  # not imported here: a test of what an import brings
    for name in set(getattr(metrics, "METRICS", ())) - getattr(metrics, "BUILT_IN", set()):
        del metrics.METRICS[name]


@pytest.fixture(scope="session")
def tiny_judge(tmp_path_factory):
    """A judge directory any test can run through the CLI in milliseconds: SmolLM2's architecture
    and tokenizer with a handful of random weights. Its verdicts mean nothing; the grammar still
    makes every answer valid JSON, so it exercises the real path (model, decoder, grammar, files)."""
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from localeval import models

    source = models.resolve("smollm2-135m-instruct", "judge", log=lambda _: None).path
    target = tmp_path_factory.mktemp("tiny-judge")
    config = AutoConfig.from_pretrained(source)
    config.update({"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                   "num_key_value_heads": 1, "head_dim": 8})
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(target)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(source / name, target / name)
    return target


@pytest.fixture(scope="session")
def output_doc_keys() -> set[str]:
    """The keys docs/output.md documents: each named in the first cell of a table row (a word anywhere in the page
    documented nothing), for the tests that a run's and compare's files write no other."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "output.md").read_text(encoding="utf-8")
    first_cells = re.findall(r"^\| ([^|]+) \|", page, flags=re.MULTILINE)
    return {key for cell in first_cells for key in re.findall(r"`([a-z_0-9]+)`", cell)}


@pytest.fixture(scope="session")
def json_keys():
    """keys(value, named_maps): every key of a JSON value, leaving out the keys of the maps named, whose keys are
    data (metric names, languages, null reasons), not fixed keys; their values' keys are still taken."""
    def keys(value, named_maps: frozenset[str], inside_named_map: bool = False) -> set[str]:
        if isinstance(value, list):
            return set().union(*(keys(item, named_maps) for item in value))
        if not isinstance(value, dict):
            return set()
        return {key for key in value if not inside_named_map} | set().union(*(
            keys(sub, named_maps, key in named_maps) for key, sub in value.items()))
    return keys
