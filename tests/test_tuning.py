"""Per-judge settings: the registry's measured reasons choice, and the user's override."""

from __future__ import annotations

import json

import pytest

from localeval import models
from localeval.engine.scripted import ScriptedJudge
from localeval.errors import UserError
from localeval.metrics import DEFAULT_METRICS, METRICS, resolve_metrics
from localeval.tuning import UNMEASURED, measured_reasons, metric_settings, reasons_used


def registered_judges() -> dict[str, models.ModelSpec]:
    return {name: spec for name, spec in models.registry().items() if spec.kind == "judge"}


def reasons_of(settings) -> dict[str, bool]:
    return {name: s.reasons for name, s in settings.items()}


@pytest.mark.parametrize("judge", sorted(registered_judges()))
def test_auto_follows_the_registry_and_on_off_override_it(judge):
    registered = (registered_judges()[judge].settings or {}).get("reasons", {})
    auto = reasons_of(metric_settings(judge, "auto"))
    assert auto == {name: registered.get(name, True) for name in DEFAULT_METRICS}
    assert reasons_of(metric_settings(judge, "on")) == dict.fromkeys(DEFAULT_METRICS, True)
    assert reasons_of(metric_settings(judge, "off")) == dict.fromkeys(DEFAULT_METRICS, False)


REASONED = [name for name, metric in METRICS.items() if metric.asks_reasons]


def test_every_registered_judge_has_a_measured_choice_for_every_metric_that_asks_reasons():
    # docs/judges.md measures each of them; a judge registered without a measurement gets none
    for name, spec in registered_judges().items():
        assert sorted(spec.settings["reasons"]) == sorted(REASONED), name


def test_unmeasured_judges_get_the_best_judges_choice(tmp_path):
    best = reasons_of(metric_settings("qwen2.5-coder-1.5b-instruct"))
    for judge in (str(tmp_path), ScriptedJudge(lambda request: {})):
        chosen = reasons_of(metric_settings(judge))
        assert {name: chosen[name] for name in UNMEASURED} == UNMEASURED
        assert chosen == best


def test_reasons_used_names_only_metrics_that_ask_for_reasons():
    metrics = resolve_metrics(None, metric_settings(None, "off"))
    assert reasons_used(metrics) == dict.fromkeys(REASONED, False)
    assert "response_relevancy" not in reasons_used(metrics)


def test_no_judge_means_the_default_judge():
    assert metric_settings(None) == metric_settings(models.default_model("judge"))


def test_common_settings_apply_to_every_metric():
    settings = metric_settings("qwen2.5-coder-1.5b-instruct", "auto", questions=5)
    assert {s.questions for s in settings.values()} == {5}


def test_unknown_reasons_choice_is_a_user_error():
    with pytest.raises(UserError, match="--reasons sometimes: choose from auto, on, off"):
        metric_settings(None, "sometimes")


def test_a_registry_typo_is_caught(tmp_path, monkeypatch):
    entries = json.loads(models.REGISTRY_PATH.read_text(encoding="utf-8"))
    judge = models.default_model("judge")
    entries[judge]["settings"] = {"reasons": {"context_recal": False}}
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps(entries), encoding="utf-8")
    monkeypatch.setattr(models, "REGISTRY_PATH", registry)
    with pytest.raises(ValueError, match="unknown metrics \\['context_recal'\\]"):
        measured_reasons(judge)


def test_each_metric_gets_its_own_settings():
    settings = metric_settings(None, "on")
    settings["context_recall"] = metric_settings(None, "off")["context_recall"]
    metrics = {m.name: m for m in resolve_metrics(None, settings)}
    assert metrics["context_recall"].settings.reasons is False
    assert metrics["answer_supported_precision"].settings.reasons is True


@pytest.mark.parametrize("command", ["run", "bench"])
def test_reasons_options_on_the_command_line(command):
    from localeval.cli import build_parser

    required = ["data.jsonl"] if command == "run" else ["--data", "data.jsonl"]
    parse = lambda *extra: build_parser().parse_args([command, *required, *extra])  # noqa: E731
    assert parse().reasons == "auto"
    assert parse("--reasons", "on").reasons == "on"
    assert parse("--no-reasons").reasons == "off"
    with pytest.raises(SystemExit):
        parse("--reasons", "sometimes")
