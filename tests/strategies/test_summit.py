"""SummIt: feedback parsing, every stopping rule, best/last, ablation, long documents, and
the whole app against a loopback server."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from runner.api.text import count_tokens
from runner.api.trace_view import VIEWS_FILE
from runner.api.types import Chunk, Message
from runner.config.run_config import build_run_config
from runner.run.lifecycle import run_experiment
from runner.tracking.usage import read_usage
from strategies import summit
from strategies.summit.feedback import Operation, parse_feedback
from tests.helpers.artifacts import artifact
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.scripted_llm import calls_of, scripted_llm
from tests.runner.config.test_config import composed
from tests.runner.test_app import all_runs
from tests.strategies.conftest import text_of

DOC = "The keeper lit the lamp. A storm came in the night. The ship was saved at dawn.\n\n"


def dist(best: int) -> str:
    """A distribution whose expected value is exactly ``best`` (all mass on it)."""
    return "Scores: " + ", ".join(f"{k}: {1.0 if k == best else 0.0}" for k in range(1, 6))


# --- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("- Add the information of [the storm at night]", Operation("add", "the storm at night")),
        (
            '2. Remove the information of "the cat" from the summary.',
            Operation("remove", "the cat"),
        ),
        (
            "Rephrase the information of the ending in the summary",
            Operation("rephrase", "the ending"),
        ),
        ("4. Shorten the summary.", Operation("simplify", "")),
        ("Simplify the summary", Operation("simplify", "")),
        ("5. Do nothing.", Operation("keep", "")),
        (
            "Consider removing the specific hospitals mentioned.",
            Operation("remove", "the specific hospitals mentioned"),
        ),
        ("* Include the information about the mill", Operation("add", "the mill")),
    ],
)
def test_every_operation_kind_is_parsed(line: str, expected: Operation) -> None:
    assert parse_feedback(f"{dist(3)}\nSuggestions:\n{line}").operations == (expected,)


def test_distribution_gives_the_expected_value() -> None:
    feedback = parse_feedback("Scores: 1: 10%, 2: 10%, 3: 20%, 4: 40%, 5: 20%\nJustification: fine")
    assert feedback.score == pytest.approx(1 * 0.1 + 2 * 0.1 + 3 * 0.2 + 4 * 0.4 + 5 * 0.2)
    assert feedback.distribution == pytest.approx({1: 0.1, 2: 0.1, 3: 0.2, 4: 0.4, 5: 0.2})
    assert feedback.justification == "fine"


@pytest.mark.parametrize(
    ("text", "score"), [("Score: 4", 4.0), ("I rate it 3/5.", 3.0), ("2 out of 5", 2.0)]
)
def test_a_single_stated_score_is_the_fallback(text: str, score: float) -> None:
    feedback = parse_feedback(text)
    assert feedback.score == score and feedback.distribution is None


def test_stop_token_and_disallowed_operations() -> None:
    feedback = parse_feedback(
        f"{dist(5)}\n- Add the information of X\n- Shorten the summary.\n<stop>",
        ("simplify", "keep"),
    )
    assert feedback.stop and feedback.operations == (Operation("simplify", ""),)
    assert feedback.dropped == (Operation("add", "X"),)


def test_an_answer_with_nothing_usable_is_unparsed() -> None:
    assert not parse_feedback("What a lovely story.").parsed


# --- the loop, with a scripted summarizer and evaluator -----------------------------------

Evaluations = Callable[[int, str], str]


def run(
    evaluations: list[str] | Evaluations, revise: Callable[[int], str] | None = None, **params: Any
):  # type: ignore[no-untyped-def]
    """summit on one short document; the evaluator answers ``evaluations`` in turn."""
    asked: list[int] = []

    def evaluate(messages: list[Message], options: dict[str, Any]) -> str:
        asked.append(1)
        if callable(evaluations):
            return evaluations(len(asked), messages[-1].content)
        return evaluations[min(len(asked), len(evaluations)) - 1]

    refined: list[int] = []

    def summarize(messages: list[Message], options: dict[str, Any]) -> str:
        if options["purpose"] == "summit/draft":
            return "Summary one."
        refined.append(1)
        return revise(len(refined)) if revise else f"Summary {len(refined) + 1}."

    model = scripted_llm(summarize, name="summarizer")
    evaluator = scripted_llm(evaluate, name="evaluator")
    result = summit.summarize([Chunk(0, DOC, 20)], model, evaluator, **params)
    return result, model, evaluator


def test_stops_on_the_stop_token() -> None:
    result, model, evaluator = run(
        [f"{dist(3)}\n- Add the information of the storm", f"{dist(5)}\nGreat.\n<STOP>"]
    )
    assert result.summary == "Summary 2."
    assert result.counters["stop/stop_token"] == 1 and result.counters["iterations"] == 2
    assert result.counters["refinements"] == 1 and result.series["score"] == (3.0, 5.0)
    assert len(calls_of(model)) == 2 and len(calls_of(evaluator)) == 2
    assert all(o["temperature"] == 0.0 for _, o in calls_of(model) + calls_of(evaluator))


def test_stops_at_max_iterations() -> None:
    result, model, evaluator = run(
        [f"{dist(2)}\n- Add the information of the storm"], max_iterations=3
    )
    assert result.counters["stop/max_iterations"] == 1 and result.counters["iterations"] == 3
    assert (
        result.summary == "Summary 3."
        and len(calls_of(model)) == 3
        and len(calls_of(evaluator)) == 3
    )
    assert result.counters["ops/add"] == 3


def test_patience_stops_a_loop_that_no_longer_improves() -> None:
    answers = [f"{dist(s)}\n- Rephrase the information of the storm" for s in (3, 4, 2, 4, 5)]
    result, _, _ = run(answers, patience=2)
    # scores 3, 4, 2, 4: rounds 3 and 4 do not beat 4, so it stops after round 4
    assert result.series["score"] == (3.0, 4.0, 2.0, 4.0) and result.counters["stop/patience"] == 1


def test_malformed_feedback_is_asked_again_then_ends_the_loop() -> None:
    result, _, evaluator = run(["Lovely."], max_reasks=2)
    assert result.counters["stop/unparsed"] == 1 and result.counters["reasks"] == 2
    assert [o["sample"] for _, o in calls_of(evaluator)] == [0, 1, 2]
    assert result.summary == "Summary one." and math.isnan(result.series["score"][0])


def test_a_readable_reask_goes_on() -> None:
    result, _, evaluator = run(["Lovely.", f"{dist(4)}\n<STOP>"], max_reasks=2)
    assert result.counters["stop/stop_token"] == 1 and result.counters["reasks"] == 1
    assert [o["sample"] for _, o in calls_of(evaluator)] == [0, 1]


@pytest.mark.parametrize(("final", "summary"), [("best", "Summary one."), ("last", "Summary 3.")])
def test_final_best_or_last(final: str, summary: str) -> None:
    answers = [f"{dist(s)}\n- Remove the information of the cat" for s in (4, 2)] + [
        f"{dist(3)}\n<STOP>"
    ]
    result, _, _ = run(answers, final=final)
    assert result.summary == summary and result.series["score"] == (4.0, 2.0, 3.0)


def test_an_unchanged_revision_stops() -> None:
    result, _, _ = run(
        [f"{dist(3)}\n- Rephrase the information of the lamp"], revise=lambda n: "Summary  one."
    )
    assert result.counters["stop/unchanged"] == 1 and result.counters["iterations"] == 1


def test_keep_only_feedback_stops() -> None:
    result, _, _ = run([f"{dist(4)}\nSuggestions:\n5. Do nothing."])
    assert result.counters["stop/keep"] == 1 and result.summary == "Summary one."


def test_ablation_removes_the_operation_from_the_prompt_and_the_parse() -> None:
    def evaluate(n: int, prompt: str) -> str:
        return f"{dist(3)}\n- Add the information of the storm"

    result, _, evaluator = run(evaluate, operations=["remove", "rephrase", "simplify", "keep"])
    system = calls_of(evaluator)[0][0][0]
    assert system.role == "system" and "Remove the information of []" in system.content
    assert "Add the information" not in system.content
    assert result.counters["ops_dropped"] == 1 and result.counters["stop/no_operations"] == 1


def test_refine_continues_the_summarizers_conversation() -> None:
    _, model, _ = run([f"{dist(3)}\n- Add the information of the storm", f"{dist(5)}\n<STOP>"])
    draft, refine = (m for m, _ in calls_of(model))
    assert [m.role for m in refine] == ["system", "user", "assistant", "user"]
    assert refine[:2] == draft and refine[2].content == "Summary one."
    assert refine[3].content.startswith("Refine: Add the information of the storm")
    assert "Revise the summary. Follow all the suggestions" in refine[3].content


def test_the_trace_records_each_iteration_with_its_diff() -> None:
    result, _, _ = run([f"{dist(3)}\n- Add the information of the storm", f"{dist(5)}\n<STOP>"])
    rounds = [s.detail for s in result.trace if s.kind == "iteration"]
    assert [r["score"] for r in rounds] == [3.0, 5.0]
    assert rounds[0]["operations"] == [{"kind": "add", "target": "the storm"}]
    assert rounds[1]["diff_from_previous"] == [{"op": "replace", "old": "one.", "new": "2."}]
    assert result.trace[-1].detail == {
        "reason": "stop_token",
        "final": "last",
        "chosen_iteration": 2,
    }


def test_bad_settings_are_config_errors() -> None:
    from runner.api.errors import ConfigError

    for params, key in [
        ({"draft": "x"}, "draft"),
        ({"draft_for": "some"}, "draft_for"),
        ({"final": "first"}, "final"),
        ({"operations": ["fly"]}, "operations"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"knowledge": True, "topic": "war"}, "knowledge"),
    ]:
        with pytest.raises(ConfigError, match=f"strategy.{key}"):
            run([f"{dist(3)}\n<STOP>"], **params)


def test_a_long_document_is_drafted_by_hier_and_seen_through_level0_summaries() -> None:
    chunks = [Chunk(i, text_of(700) + f" Marker{i}.\n\n", 705) for i in range(8)]

    def summarize(messages: list[Message], options: dict[str, Any]) -> str:
        prompt = messages[-1].content
        if "Your task is to edit the book summary" in prompt:
            return prompt.split("---\n", 1)[1].rsplit("\n---", 1)[0]
        if "Below is a part of a story" in prompt:
            marker = prompt.split("Marker", 1)[1].split(".", 1)[0]
            return f"Part {marker} tells of the mill."
        return text_of(int(options["max_tokens"] * 0.5))

    model = scripted_llm(summarize, context_window=4096, name="summarizer")
    evaluator = scripted_llm(
        lambda m, o: f"{dist(5)}\n<STOP>", context_window=4096, name="evaluator"
    )
    result = summit.summarize(chunks, model, evaluator, max_summary_len=400)
    assert result.counters["long_document"] == 1 and result.counters["draft_calls"] > 8
    assert any(s.kind == "merge" for s in result.trace), "the draft did not come from hier"
    evaluated = calls_of(evaluator)[0][0][-1].content
    assert "Part 0 tells of the mill." in evaluated and "Part 7 tells of the mill." in evaluated
    assert "Marker3" not in evaluated  # the raw chunks never reach the evaluator


def test_draft_for_all_drafts_a_short_document_with_the_base_strategy_and_keeps_its_text() -> None:
    def summarize(messages: list[Message], options: dict[str, Any]) -> str:
        if options["purpose"] == "summit/draft":
            raise AssertionError("SummIt's own Summarize prompt was used for the draft")
        return "Baseline draft." if options["purpose"] == "baseline" else "Refined."

    model = scripted_llm(summarize, name="summarizer")
    evaluator = scripted_llm(lambda m, o: f"{dist(5)}\n<STOP>", name="evaluator")
    result = summit.summarize(
        [Chunk(0, DOC, 20)], model, evaluator, draft="baseline", draft_for="all"
    )
    ((baseline_call, options),) = calls_of(model)
    assert (
        options["purpose"] == "baseline" and "The keeper lit the lamp." in baseline_call[-1].content
    )
    evaluated = calls_of(evaluator)[0][0][-1].content
    assert "Baseline draft." in evaluated and DOC.strip() in evaluated  # the full story, not a view
    assert result.summary == "Baseline draft." and result.counters["draft_calls"] == 1
    assert result.counters["long_document"] == 0 and result.counters["calls"] == 2
    asked = [m for messages, _ in calls_of(model) + calls_of(evaluator) for m in messages]
    assert result.counters["prompt_tokens"] == sum(
        count_tokens(m.content) for m in asked
    )  # the draft's included


# --- the app ---------------------------------------------------------------------------


def _responder(request: dict[str, Any]) -> str:
    system = str(request["messages"][0]["content"])
    if system.startswith("You are a summary evaluator"):
        summary = str(request["messages"][-1]["content"]).split("Summary:\n", 1)[1]
        return (
            f"{dist(5)}\n<STOP>"
            if "revised" in summary
            else f"{dist(3)}\n- Add the information of the storm"
        )
    if str(request["messages"][-1]["content"]).startswith("Refine:"):
        return "A revised summary about the storm."
    return "A first summary."


def test_the_app_logs_roles_and_the_score_curve(stores: dict[str, str]) -> None:
    with FakeOpenAIServer(_responder) as server:
        items = [
            "strategy=summit",
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "metrics=stats",
            "data.limit=2",
            *[f"{k}={v}" for k, v in stores.items()],
        ]
        result = run_experiment(build_run_config(composed(*items), tuple(items)))
    assert set(result.summaries.values()) == {"A revised summary about the storm."}
    client = MlflowClient(stores["tracking.uri"])
    run_data = client.get_run(result.run_id).data
    assert (
        run_data.params["evaluator"] == "openai_compatible"
        and run_data.params["evaluator.temperature"] == "0.0"
    )
    assert run_data.params["roles"] == "model,evaluator"
    curve = client.get_metric_history(result.run_id, "strategy/score")
    assert [(m.step, m.value) for m in sorted(curve, key=lambda m: m.step)] == [(0, 3.0), (1, 5.0)]
    counters = read_usage(client, result.run_id)  # strategy counters: usage.json, not metrics
    assert counters["strategy/stop/stop_token"] == 1.0 and counters["strategy/ops/add"] == 1.0
    assert "strategy/ops/add" not in run_data.metrics


def test_an_ablation_sweep_from_the_command_line(stores: dict[str, str], tmp_path: Path) -> None:
    from tests.runner.test_app import cli

    with FakeOpenAIServer(_responder) as server:
        done = cli(
            "-m",
            "strategy=summit",
            "strategy.operations=[add,remove,rephrase,simplify,keep],[remove,rephrase,simplify,keep]",
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "metrics=stats",
            "data.limit=1",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            *[f"{k}={v}" for k, v in stores.items()],
        )
    assert done.returncode == 0, done.stderr[-2000:]
    runs = all_runs(stores["tracking.uri"])
    ops = sorted(r.data.params["strategy.operations"] for r in runs)
    assert ops == [
        "['add', 'remove', 'rephrase', 'simplify', 'keep']",
        "['remove', 'rephrase', 'simplify', 'keep']",
    ]
    without_add = next(r for r in runs if "add" not in r.data.params["strategy.operations"])
    counters = read_usage(MlflowClient(stores["tracking.uri"]), without_add.info.run_id)
    assert counters["strategy/stop/no_operations"] == 1.0  # its only suggestion was an Add


# --- the paper's prompts and options ---------------------------------------------------

SEED = Path(__file__).resolve().parents[2].parent / "shared" / "seeds" / "002_04160f7092c98cdf.txt"


def test_prompts_keep_the_papers_words() -> None:
    """Every sentence of Tables 8 and 9 that our files use appears verbatim in the seed."""
    from tests.conftest import missing_shared

    if not SEED.exists():
        missing_shared("SummIt seed verbatim-prompt")
    seed = " ".join(SEED.read_text(encoding="utf-8").split())
    folder = summit.PROMPT_ROOT / "summit"
    verbatim = {
        "summarizer_system.txt": None,
        "evaluator_system.txt": ("{operations}",),
        "summarize.txt": ("{examples}", "{document}", "{format}"),
        "summarize_topic.txt": ("{examples}", "{document}", "{extra}", "{format}"),
        "summarize_knowledge.txt": ("{examples}", "{document}", "{extra}", "{format}"),
        "refine.txt": ("{suggestions}", "{format}"),
        "evaluate.txt": ("{examples}", "{document}", "{summary}", "{format}"),
        "evaluate_topic.txt": ("{examples}", "{document}", "{summary}", "{extra}", "{format}"),
        "evaluate_knowledge.txt": ("{examples}", "{document}", "{summary}", "{extra}", "{format}"),
    }
    for name, slots in verbatim.items():
        text = (folder / name).read_text(encoding="utf-8")
        pieces = [text]
        for slot in slots or ():
            pieces = [p for piece in pieces for p in piece.split(slot)]
        for piece in pieces:
            words = " ".join(piece.split())
            if words:
                assert words in seed, f"{name}: {words!r} is not the paper's text"
    for line in (folder / "operations.txt").read_text(encoding="utf-8").splitlines():
        assert " ".join(line.split("\t", 1)[1].split()) in seed


def test_knowledge_triples_reach_both_roles() -> None:
    def summarize(messages: list[Message], options: dict[str, Any]) -> str:
        if options["purpose"] == "summit/extract_knowledge":
            return "(keeper; lit; lamp)\n(storm; came in; night)"
        return "Summary one."

    model = scripted_llm(summarize)
    evaluator = scripted_llm(lambda m, o: f"{dist(5)}\n<STOP>")
    summit.summarize([Chunk(0, DOC, 20)], model, evaluator, knowledge=True)
    (extract, _), (draft, _) = calls_of(model)
    assert (
        "(subject, relation, object) triples" in extract[-1].content
        and DOC.strip() in extract[-1].content
    )
    assert (
        "based on the given relationships" in draft[-1].content
        and "(keeper; lit; lamp)" in draft[-1].content
    )
    evaluated = calls_of(evaluator)[0][0][-1].content
    assert "follows the given relationships" in evaluated and "(storm; came in; night)" in evaluated


def test_topic_snippets_are_extracted_by_each_role() -> None:
    def answer(prefix: str) -> Callable[[list[Message], dict[str, Any]], str]:
        def script(messages: list[Message], options: dict[str, Any]) -> str:
            if options["purpose"] == "summit/extract_topic":
                return f"{prefix} snippet"
            return f"{dist(5)}\n<STOP>" if prefix == "evaluator" else "Summary one."

        return script

    model, evaluator = scripted_llm(answer("summarizer")), scripted_llm(answer("evaluator"))
    summit.summarize([Chunk(0, DOC, 20)], model, evaluator, topic="the storm")
    (extract, _), (draft, _) = calls_of(model)
    assert "relevant to this topic: the storm" in extract[-1].content
    assert (
        "Topic sentence: the storm" in draft[-1].content
        and "summarizer snippet" in draft[-1].content
    )
    evaluated = [m for m, o in calls_of(evaluator) if o["purpose"] == "summit/evaluate"][0][
        -1
    ].content
    assert "evaluator snippet" in evaluated and "summarizer snippet" not in evaluated


def test_in_context_examples(tmp_path: Path) -> None:
    import json

    path = tmp_path / "examples.json"
    path.write_text(
        json.dumps([{"document": "Doc A.", "summary": "Sum A.", "explanation": "Why A."}])
    )
    model = scripted_llm(lambda m, o: "Summary one.")
    evaluator = scripted_llm(lambda m, o: f"{dist(5)}\n<STOP>")
    summit.summarize([Chunk(0, DOC, 20)], model, evaluator, in_context=str(path))
    draft = calls_of(model)[0][0][-1].content
    evaluated = calls_of(evaluator)[0][0][-1].content
    assert "Example summary:\nSum A." in draft and "Why A." not in draft
    assert "Example evaluation:\nWhy A." in evaluated


LEAD = '''
"""The first WORDS words of the document: a researcher's draft, in the study folder."""
from runner.api import Chunk, LLM, Section, Step, StrategyResult, TraceStep

ROLES = ("model",)
IGNORES = {{}}
PROMPT_DIRS = ()
WORDS = {words}


def summarize(chunks: list[Chunk], model: LLM) -> StrategyResult:
    text = " ".join("".join(c.text for c in chunks).split()[:WORDS])
    return StrategyResult(text, (TraceStep("lead", None, {{"words": WORDS}}),), {{"calls": 0.0}})


def trace_view(steps: list[Step]) -> list[Section]:
    mine = tuple(i for i, s in enumerate(steps) if s.get("kind") == "lead")
    return [Section("lead", f"The first {{WORDS}} words", mine)] if mine else []
'''


def test_a_researchers_loose_strategy_is_summits_draft(
    stores: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``strategy.draft=lead``: found through the registry as the job's own strategy is, its
    draft evaluated and refined, its own ``trace_view`` drawing its steps in SummIt's view; its
    file is part of the fingerprint; a typo is one line before anything runs."""
    import sys

    from runner.api.errors import ConfigError
    from runner.config.fingerprint import fingerprint, prompt_files
    from runner.plugins.registry import load

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "lead.py").write_text(LEAD.format(words=6).lstrip(), encoding="utf-8")
    load.cache_clear()
    monkeypatch.delitem(sys.modules, "lead", raising=False)
    with FakeOpenAIServer(_responder) as server:
        items = [
            "strategy=summit",
            "strategy.draft=lead",
            "strategy.draft_for=all",
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "metrics=none",
            "data.limit=1",
            *[f"{k}={v}" for k, v in stores.items()],
        ]
        config = build_run_config(composed(*items), tuple(items))
        result = run_experiment(config)
        evaluated = [
            str(r["messages"][-1]["content"])
            for r in server.requests
            if str(r["messages"][0]["content"]).startswith("You are a summary evaluator")
        ]
    (doc,) = result.summaries
    first_words = " ".join(_sample_text(doc).split()[:6])
    assert first_words in evaluated[0]  # the evaluator judged lead's draft first
    assert result.summaries[doc] == "A revised summary about the storm."
    tags = MlflowClient(stores["tracking.uri"]).get_run(result.run_id).data.tags
    assert tags["plugin.strategy.draft"].startswith(f"lead (module file {tmp_path / 'lead.py'})")
    client = MlflowClient(stores["tracking.uri"])
    views = json.loads(artifact(client, result.run_id, VIEWS_FILE))
    sections = views[doc]["sections"]
    assert [(x["name"], x["title"]) for x in sections][:2] == [
        ("lead", "The first 6 words"),
        ("summit", "SummIt: evaluate and refine"),
    ]
    assert sections[0]["covers"] == [0]  # lead's step, before the step naming the draft
    before = fingerprint(config, prompt_files(config))
    (tmp_path / "lead.py").write_text(LEAD.format(words=7).lstrip(), encoding="utf-8")
    load.cache_clear()
    monkeypatch.delitem(sys.modules, "lead", raising=False)
    again = build_run_config(composed(*items), tuple(items))
    assert fingerprint(again, prompt_files(again)) != before  # an edited draft: a new experiment
    typo = [*items[:1], "strategy.draft=leed", *items[2:]]
    with pytest.raises(ConfigError) as refused:
        build_run_config(composed(*typo), tuple(typo))
    assert str(refused.value).startswith("strategy.draft=leed: strategy=leed is unknown")
    assert "did you mean lead?" in str(refused.value)
    load.cache_clear()


def _sample_text(doc_id: str) -> str:
    """The bundled sample document ``doc_id``'s text (data=sample)."""
    from runner.data.loaders import load_documents

    (doc,) = [d for d in load_documents("sample") if d.doc_id == doc_id]
    return doc.text
