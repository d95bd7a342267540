"""Per-judge settings: the registry's measured choice per metric, and the user's override."""

from __future__ import annotations

import json

import pytest

from localeval import models
from localeval.engine.judge import TransformersJudge
from localeval.engine.scripted import ScriptedJudge
from localeval.errors import UserError
from localeval.metrics import DEFAULT_METRICS, METRICS, resolve_metrics
from localeval.tuning import (
    APPLIES_TO,
    VALUES,
    measured_settings,
    metric_settings,
    settings_used,
)

OPTIONS = ("reasons", "example", "scoring")


def registered_judges() -> dict[str, models.ModelSpec]:
    return {name: spec for name, spec in models.registry().items() if spec.kind == "judge"}


def chosen(settings, option: str) -> dict[str, bool | str]:
    """{metric: on? (or the scoring's name)} for the metrics the option applies to."""
    value = lambda s: s.scoring.name if option == "scoring" else getattr(s, option)  # noqa: E731
    return {name: value(settings[name]) for name in APPLIES_TO[option]}


def registered(judge: str, option: str) -> dict:
    """The registry's choice, a metric it does not name taking the unset value (scoring: hard)."""
    return {m: registered_judges()[judge].settings.get(option, {}).get(m, "hard" if option == "scoring" else False)
            for m in APPLIES_TO[option]}


def test_the_options_apply_to_the_metrics_whose_prompts_they_change():
    assert APPLIES_TO["reasons"] == [m for m in METRICS if m != "response_relevancy"]
    assert APPLIES_TO["example"] == ["context_relevance", "context_recall", "answer_supported_precision"]
    assert APPLIES_TO["scoring"] == list(METRICS)  # every metric's verdicts carry probabilities
    assert set(DEFAULT_METRICS) < set(METRICS)


@pytest.mark.parametrize("judge", sorted(registered_judges()))
@pytest.mark.parametrize("option", OPTIONS)
def test_auto_follows_the_registry_and_each_value_overrides_it(judge, option):
    assert chosen(metric_settings(judge), option) == registered(judge, option)
    for choice in VALUES[option]:
        forced = metric_settings(judge, **{option: choice})
        value = choice if option == "scoring" else choice == "on"
        assert chosen(forced, option) == dict.fromkeys(APPLIES_TO[option], value)
        for other in OPTIONS:
            if other != option:
                assert chosen(forced, other) == registered(judge, other)  # left alone


def test_every_registered_judge_has_a_measured_choice_for_every_metric_each_option_applies_to():
    # docs/judges.md measures each of them; a judge registered without a measurement gets none
    for name, spec in registered_judges().items():
        for option in OPTIONS:
            assert sorted(spec.settings[option]) == sorted(APPLIES_TO[option]), (name, option)
            if option == "scoring":
                assert set(spec.settings[option].values()) <= set(VALUES["scoring"])


def test_unmeasured_judges_get_the_best_judges_choice(tmp_path):
    assert models.best_judge() == "qwen2.5-coder-1.5b-instruct"  # the highest rho in the registry (docs/judges.md)
    best = metric_settings("qwen2.5-coder-1.5b-instruct")
    for judge in (str(tmp_path), ScriptedJudge(lambda request: {})):
        settings = metric_settings(judge)
        assert settings == best
        assert {option: chosen(settings, option) for option in OPTIONS} == measured_settings("qwen2.5-coder-1.5b-instruct")


@pytest.mark.parametrize("name", sorted(registered_judges()))
def test_a_loaded_judge_gets_the_settings_measured_for_its_name(tmp_path, name):
    # Its identity also names its weights and dtype (the cache's key): the registry knows the name.
    judge = TransformersJudge(str(tmp_path), name, fingerprint="f00d")
    assert measured_settings(judge) == measured_settings(name)
    assert metric_settings(judge) == metric_settings(name)


def test_a_registered_judge_given_by_its_store_folder_is_that_judge(tmp_path, monkeypatch):
    """`--judge ~/.local/share/localeval/models/smollm2-135m-instruct` loads the very weights of the
    default judge: it gets that judge's measured settings and its weak-judge warning, not the
    unmeasured ones."""
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path))
    name = models.default_model("judge")
    folder = tmp_path / name
    folder.mkdir()
    link = tmp_path / "link"
    link.symlink_to(folder)
    for given in (str(folder), f"{folder}/", str(link)):
        assert models.judge_name(given) == name
        assert metric_settings(given) == metric_settings(name)
    elsewhere = tmp_path / "copies" / name  # another folder of the same name is not the store's
    elsewhere.mkdir(parents=True)
    assert models.judge_name(str(elsewhere)) == str(elsewhere)
    embedder = models.default_model("embedder")
    (tmp_path / embedder).mkdir()
    assert models.judge_name(str(tmp_path / embedder)) == str(tmp_path / embedder)  # not a judge: left as given
    monkeypatch.setenv("LOCALEVAL_MODEL_STORE", str(tmp_path / "copies" / name / "config.json" / "x"))
    (elsewhere / "config.json").write_text("{}")
    assert models.judge_name(str(elsewhere)) == str(elsewhere)  # a store set wrongly stops no other folder


def test_no_judge_means_the_default_judge():
    assert metric_settings(None) == metric_settings(models.default_model("judge"))


def test_common_settings_apply_to_every_metric():
    settings = metric_settings("qwen2.5-coder-1.5b-instruct", questions=5)
    assert {s.questions for s in settings.values()} == {5}


@pytest.mark.parametrize("option", OPTIONS)
def test_unknown_choice_is_a_user_error(option):
    with pytest.raises(UserError, match=f"--{option} sometimes: choose from auto, {', '.join(VALUES[option])}"):
        metric_settings(None, **{option: "sometimes"})


def test_calibrated_thresholds_replace_the_scoring_of_their_metrics():
    settings = metric_settings(None, scoring="soft", thresholds={"context_recall": 0.3})
    assert settings["context_recall"].scoring.threshold == 0.3
    assert settings["context_recall"].scoring.name == "calibrated"
    assert settings["answer_supported_precision"].scoring.name == "soft"
    used = settings_used(resolve_metrics(None, settings))
    assert used["scoring"]["context_recall"] == "calibrated" and used["thresholds"] == {"context_recall": 0.3}


@pytest.mark.parametrize(("option", "metric"), [("reasons", "context_recal"), ("example", "response_relevancy")])
def test_a_registry_entry_that_would_do_nothing_is_caught(tmp_path, monkeypatch, option, metric):
    entries = json.loads(models.REGISTRY_PATH.read_text(encoding="utf-8"))
    judge = models.default_model("judge")
    entries[judge]["settings"][option][metric] = True
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps(entries), encoding="utf-8")
    monkeypatch.setattr(models, "REGISTRY_PATH", registry)
    with pytest.raises(ValueError, match=f"sets {option} for \\['{metric}'\\]"):
        measured_settings(judge)


def test_each_metric_gets_its_own_settings():
    settings = metric_settings(None, "on", "on")
    settings["context_recall"] = metric_settings(None, "off", "off")["context_recall"]
    metrics = {m.name: m for m in resolve_metrics(None, settings)}
    assert (metrics["context_recall"].settings.reasons, metrics["context_recall"].settings.example) == (False, False)
    assert metrics["answer_supported_precision"].settings.reasons is True


def test_settings_used_names_only_the_metrics_each_option_changes():
    used = settings_used(resolve_metrics(list(METRICS), metric_settings(None, "off", "on")))
    assert used["reasons"] == dict.fromkeys(APPLIES_TO["reasons"], False)
    assert used["example"] == dict.fromkeys(APPLIES_TO["example"], True)
    assert set(used["scoring"]) == set(APPLIES_TO["scoring"]) and "thresholds" not in used


@pytest.mark.parametrize("command", ["run", "bench"])
def test_the_options_on_the_command_line(command):
    from localeval.cli import build_parser

    required = ["data.jsonl"] if command == "run" else ["--data", "data.jsonl"]
    parse = lambda *extra: build_parser().parse_args([command, *required, *extra])  # noqa: E731
    assert (parse().reasons, parse().example, parse().scoring) == ("auto", "auto", "auto")
    assert parse("--scoring", "soft").scoring == "soft"
    assert parse("--reasons", "on", "--example", "off").reasons == "on"
    assert parse("--reasons", "on", "--example", "off").example == "off"
    assert parse("--no-reasons").reasons == "off"
    with pytest.raises(SystemExit):
        parse("--example", "sometimes")
