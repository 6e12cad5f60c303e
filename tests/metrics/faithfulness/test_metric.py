"""metrics=faithfulness in a whole job against a loopback judge, and its three raters.

The job scores a three-summary StorySumm-shaped file (written here) with the claims rater:
the loopback judge answers "True" for a claim naming the lantern, "Maybe" for a claim naming
the fox and "False" otherwise, so every expected value is counted here from the claims and
that rule, not from the code under test. The requests are inspected as the server received
them: instruction and story first (the story's message marked with Anthropic's
cache_control, the judge being a Claude behind an OpenAI-compatible endpoint), the claim
last. The binary and cot raters' requests are compared with the release's prompts written
out here (StorySumm, evaluators/llm_evaluators.py, MIT).
"""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

import metrics.faithfulness as faithfulness
from runner.api import ConfigError, DataError, Document, Message, MetricError, ScoreInput
from runner.tracking.assessments import document_traces
from tests.conftest import missing_shared
from tests.helpers.cli import REPO
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.scripted_llm import calls_of, scripted_llm
from tests.runner.test_app import artifact, overrides, run

JUDGE_MODEL = "openai/claude-judge"
"""A Claude behind an OpenAI-compatible endpoint: the gateway sends cache_control to it."""
STORY = "The keeper lit the lantern at dusk. A fox watched from the dunes. The ship came home."
ENTRIES = {
    "s1": ["The keeper lit a lantern.", "The lantern burned all night."],
    "s2": ["The lantern was lit.", "The keeper sailed away.", "The ship sank."],
    "s3": ["The lantern glowed.", "A fox watched."],
}
"""Summary id -> its claims (also its sentences)."""
UPSTREAM = REPO.parent / "shared" / "data" / "faithfulness" / "storysumm" / "evaluators"
SYSTEM = (
    "You are an expert summary evaluator, and you will be asked to evaluate summaries of short "
    "stories. You will first be presented with the story and then the summary. You need to "
    "determine whether all of the information in the summary is consistent with the "
    "information in the story. You can ignore sentences in the summary that are just "
    "commentary or interpretation of the story. The details described in a consistent summary "
    "should not misrepresent details of the story or make things up."
)
QUESTION = (
    "Is all of the information in the summary consistent with the story? Ignore summary "
    "sentences that are just commentary/interpretation. You should answer Yes or No.\n"
)
TAGS = "Place your answer between <answer></answer> tags."


def said(claim: str) -> str:
    """The loopback judge's answer to one claim."""
    if "lantern" in claim:
        return "True"
    return "Maybe" if "fox" in claim else "False"


def responder(request: dict[str, Any]) -> str:
    last = str(_text(request["messages"][-1]["content"]))
    claim = last.split("Statement:\n", 1)[1].split("\n\nQuestion:", 1)[0]
    return said(claim)


def _text(content: Any) -> str:
    """A message's text, plain or as Anthropic content blocks."""
    if isinstance(content, list):
        return "".join(block["text"] for block in content)
    return str(content)


def _release(path: Path) -> None:
    entries = {
        key: {
            "story": STORY,
            "summary": claims,
            "label": 1,
            "difficulty": "",
            "errors": [1] * len(claims),
            "explanations": [],
            "claims": claims,
            "model": "gpt-4",
            "split": "val",
            "story-id": "1",
        }
        for key, claims in ENTRIES.items()
    }
    path.write_text(json.dumps(entries), encoding="utf-8")


def claims_job(url: str, stores: dict[str, str], release: Path) -> list[str]:
    """The overrides of a claims-rater job over ``release`` with the loopback judge at ``url``."""
    common = [i for i in overrides(url, stores) if not i.startswith("metrics=")]
    return [
        *common,
        "strategy=none",
        "data=storysumm",
        f"data.path={release}",
        "metrics=faithfulness",
        "metrics.faithfulness.method=claims",
        "judge=openai_compatible",
        f"judge.api_base={url}",
        f"judge.model={JUDGE_MODEL}",
    ]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("faithfulness")
    release = root / "storysumm.json"
    _release(release)
    stores = {"tracking.uri": f"sqlite:///{root / 'mlflow.db'}", "cache.dir": str(root / "cache")}
    with FakeOpenAIServer(responder) as server:
        result = run(claims_job(server.url, stores, release))
        requests = list(server.requests)
    return {
        "uri": stores["tracking.uri"],
        "run_id": result.run_id,
        "requests": requests,
        "result": result,
    }


def _expected(claims: list[str]) -> tuple[float, float]:
    """(faithful, supported) counted from the loopback rule."""
    answers = [said(c) for c in claims]
    decided = [a for a in answers if a != "Maybe"]
    supported = decided.count("True") / len(decided)
    if "False" in decided:
        return 0.0, supported
    return (1.0 if len(decided) == len(answers) else math.nan), supported


def test_the_job_records_faithful_and_supported_as_the_judge_answered(job: dict[str, Any]) -> None:
    client = MlflowClient(job["uri"])
    assert client.get_run(job["run_id"]).info.status == "FINISHED"
    scores = json.loads(artifact(client, job["run_id"], "scores.json"))
    assert set(scores) == set(ENTRIES)
    for key, claims in ENTRIES.items():
        faithful, supported = _expected(claims)
        got = scores[key]
        assert got["faithfulness/supported"] == pytest.approx(supported), key
        assert got["faithfulness/claims"] == len(claims)
        if math.isnan(faithful):
            assert got["faithfulness/faithful"] is None or math.isnan(got["faithfulness/faithful"])
        else:
            assert got["faithfulness/faithful"] == faithful, key
    metrics = client.get_run(job["run_id"]).data.metrics
    assert metrics["faithfulness/faithful"] == pytest.approx(0.5)  # s1 1, s2 0, s3 undecided


def test_the_screen_counts_the_decided_documents_and_names_the_undecided(
    job: dict[str, Any],
) -> None:
    from runner.run.console import format_summary

    shown = format_summary(job["result"]).splitlines()
    (faithful,) = [x for x in shown if x.startswith("  Faithful (share) (faithfulness/faithful) ")]
    assert faithful.endswith("0.500   (mean of 2 of 3 documents; the others undecided)")
    assert (
        "  warning: faithfulness/faithful: 1 of 3 documents undecided (s3): the mean is over "
        "the other 2; see notes.json"
    ) in shown
    prefix = "  Claims supported (share) (faithfulness/supported) "
    (supported,) = [x for x in shown if x.startswith(prefix)]
    assert supported.endswith("(mean of 3 documents)")  # every summary had a decided claim


def test_a_judge_that_decides_nothing_marks_the_run_and_the_report(tmp_path: Path) -> None:
    from runner.report.config import ReportConfig
    from runner.report.make import make_report

    release = tmp_path / "storysumm.json"
    _release(release)
    stores = {"tracking.uri": f"sqlite:///{tmp_path / 'mlflow.db'}", "cache.dir": str(tmp_path)}
    with FakeOpenAIServer(lambda request: "Maybe") as server:
        result = run(claims_job(server.url, stores, release))
    assert (
        "faithfulness/faithful: undecided for every document (3 of 3: s1, s2, s3): the judge "
        "decided nothing, so the run has no faithfulness/faithful value; see notes.json for "
        "its answers"
    ) in result.warnings
    client = MlflowClient(stores["tracking.uri"])
    tags = client.get_run(result.run_id).data.tags
    assert json.loads(tags["runner.undecided"]) == [
        "faithfulness/faithful",
        "faithfulness/supported",
    ]
    config = ReportConfig(stores["tracking.uri"], "summarization", out=tmp_path, plots=False)
    with pytest.raises(DataError) as err:  # nothing else to show: the refusal says why
        make_report(config)
    assert str(err.value).endswith(
        f"; run {result.run_id[:8]} has them undecided for every document (its judge decided "
        "nothing): faithfulness/faithful, faithfulness/supported"
    )
    config = replace(config, metrics=("faithfulness/faithful", "faithfulness/claims"))
    report = make_report(config)  # another value to show: the empty one is named
    assert (
        f"faithfulness/faithful of run {result.run_name} ({result.run_id[:8]}): undecided for "
        "every document (its judge decided nothing), not averaged; see its notes.json"
    ) in report.notes


def test_claims_json_holds_every_answer_with_the_whole_story_shown(job: dict[str, Any]) -> None:
    client = MlflowClient(job["uri"])
    rows = json.loads(artifact(client, job["run_id"], "claims.json"))
    for key, claims in ENTRIES.items():
        assert [r["claim"] for r in rows[key]] == claims
        assert [r["index"] for r in rows[key]] == list(range(len(claims)))
        expected = [{"True": True, "False": False, "Maybe": None}[said(c)] for c in claims]
        assert [r["supported"] for r in rows[key]] == expected
        assert [r["answer"] for r in rows[key]] == [said(c) for c in claims]
        assert all(r["passages"] == "whole" for r in rows[key])


def test_requests_put_the_cached_story_first_and_the_claim_last(job: dict[str, Any]) -> None:
    asked = [r for r in job["requests"] if "Statement:" in _text(r["messages"][-1]["content"])]
    assert len(asked) == sum(len(c) for c in ENTRIES.values())
    for request in asked:
        messages = request["messages"]
        assert _text(messages[0]["content"]).startswith("You are provided with a context")
        story_at = next(i for i, m in enumerate(messages) if STORY in _text(m["content"]))
        assert story_at < len(messages) - 1  # the claim's message comes after the story's
        marked = messages[story_at]["content"]
        assert isinstance(marked, list) and marked[-1]["cache_control"] == {"type": "ephemeral"}
        assert STORY not in _text(messages[-1]["content"])
        assert _text(messages[-1]["content"]).startswith("Statement:\n")


def test_the_judges_verdicts_are_on_the_traces(job: dict[str, Any]) -> None:
    client = MlflowClient(job["uri"])
    names: list[str] = []
    claims: dict[str, str] = {}
    for trace_id in document_traces(job["uri"], job["run_id"]).values():
        judged = [
            a
            for a in client.get_trace(trace_id).info.assessments
            if a.source.source_type == "LLM_JUDGE"
        ]
        names += [a.name for a in judged]
        claims.update({a.metadata["claim"]: a.value for a in judged if a.name.endswith("claim")})
    decided = sum(1 for c in ENTRIES.values() for claim in c if said(claim) != "Maybe")
    assert names.count("faithfulness/claim") == decided
    # in people's words (CLAIM_LABELS), so the judge's and people's values count side by side
    words = {"True": "supported", "False": "unsupported"}
    expected = {c: words[said(c)] for e in ENTRIES.values() for c in e if said(c) != "Maybe"}
    assert claims == expected
    assert names.count("faithfulness/faithful") == 2  # s3 is undecided: no summary verdict


def test_a_bad_method_is_one_line_listing_the_three(tmp_path: Path) -> None:
    release = tmp_path / "storysumm.json"
    _release(release)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "strategy=none",
            "data=storysumm",
            f"data.path={release}",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            "metrics=faithfulness",
            "metrics.faithfulness.method=votes",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "method=votes" in lines[0]
    assert all(m in lines[0] for m in ("binary", "cot", "claims"))


def _script(answer: str, reasoning: str = "") -> Any:
    def script(messages: list[Message], options: dict[str, Any]) -> str:
        return reasoning if "Consider whether" in messages[-1].content else answer

    return script


def test_binary_sends_the_releases_claude_request_and_reads_the_tag() -> None:
    judge = scripted_llm(_script("I think <answer>No</answer>"), role="judge", temperature=0.0)
    result = faithfulness.setup(judge, method="binary").score(Document("d", STORY), "A summary.")
    assert result.values["faithful"] == 0.0
    ((messages, options),) = calls_of(judge)
    user = f"Story:\n{STORY}\n\nSummary:\nA summary.\n\n{QUESTION}{TAGS}"
    assert [(m.role, m.content) for m in messages] == [("system", SYSTEM), ("user", user)]
    assert options["temperature"] == 0.0  # the release's: every shipped judge alias's


def test_cot_reasons_then_asks_again_in_the_same_conversation() -> None:
    judge = scripted_llm(_script("Yes, it is.", "It matches the story."), role="judge")
    result = faithfulness.setup(judge, method="cot").score(Document("d", STORY), "A summary.")
    assert result.values["faithful"] == 1.0  # no tags: the leading Yes
    (first, _), (second, _) = calls_of(judge)
    cot = (
        "Consider whether there are any details in the summary that are inconsistent with the "
        "story and provide a couple sentences of reasoning for why the summary is or is not "
        "consistent with the story."
    )
    follow = (
        "So overall, are all of the details in the summary consistent with the story? You "
        f"should answer Yes or No. {TAGS}"
    )
    core = f"Story:\n{STORY}\n\nSummary:\nA summary."
    expected = [("system", SYSTEM), ("user", f"{core}\n\n{cot}")]
    assert [(m.role, m.content) for m in first] == expected
    assert [(m.role, m.content) for m in second] == [
        *[(m.role, m.content) for m in first],
        ("assistant", "It matches the story."),
        ("user", follow),
    ]


@pytest.mark.parametrize("answer", ["<answer>Maybe</answer>", "It depends.", ""])
def test_an_answer_that_is_neither_yes_nor_no_is_nan_with_a_note(answer: str) -> None:
    judge = scripted_llm(_script(answer), role="judge")
    result = faithfulness.setup(judge, method="binary").score(Document("d", STORY), "A summary.")
    assert math.isnan(result.values["faithful"])
    assert result.notes and "neither Yes nor No" in result.notes[0]


def test_no_source_is_nan_with_a_note_and_no_call() -> None:
    judge = scripted_llm(_script("True"), role="judge")
    metric = faithfulness.setup(judge, method="claims")
    result = metric.score_input(ScoreInput(None, "A summary.", "a", {"claims": ("A claim.",)}))
    assert math.isnan(result.values["faithful"]) and math.isnan(result.values["supported"])
    assert "no source" in result.notes[0] and calls_of(judge) == []


def test_some_summaries_without_a_source_are_named_and_none_with_one_is_refused() -> None:
    judge = scripted_llm(_script("True"), role="judge")
    metric = faithfulness.setup(judge, method="claims")
    extras = {"claims": ("The keeper lit the lantern.",)}
    judged = metric.score_input(ScoreInput(Document("a", STORY), "A summary.", "a", extras))
    bare = metric.score_input(ScoreInput(None, "A summary.", "a", extras))
    (warning,) = metric.warnings({"a": judged, "b": bare})
    assert "1 of 2 summaries have no source (b)" in warning
    assert metric.reduce({"a": judged, "b": bare})["faithful"] == 1.0
    with pytest.raises(MetricError) as caught:
        metric.reduce({"b": bare, "c": bare})
    message = str(caught.value)
    assert "\n" not in message and "none of the 2 summaries has its source" in message
    assert "data.sources=DIR (the documents as <id>.txt) with data=summaries" in message
    assert "data.books=DIR (the books as <title>.txt) with data=fables" in message


def test_a_job_whose_summaries_all_lack_their_source_fails_in_one_line(tmp_path: Path) -> None:
    """``data=summaries`` without ``data.sources``: every value would be NaN in a FINISHED run."""
    data = tmp_path / "summaries.json"
    data.write_text(json.dumps({"d1": "The keeper lit the lantern."}), encoding="utf-8")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "strategy=none",
            "data=summaries",
            f"data.path={data}",
            "metrics=faithfulness",
            "judge=local",
            f"tracking.uri={uri}",
            f"hydra.run.dir={tmp_path / 'hydra'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "none of the 1 summaries has its source" in errors[0], done.stderr
    (run,) = MlflowClient(uri).search_runs(
        [MlflowClient(uri).get_experiment_by_name("summarization").experiment_id]
    )
    assert run.info.status == "FAILED"


def test_without_given_claims_the_judge_extracts_them() -> None:
    def script(messages: list[Message], options: dict[str, Any]) -> str:
        if "Statement:" in messages[-1].content:
            return "True"
        return json.dumps({"claims": ["The keeper lit a lantern.", "Marie Curie was born."]})

    judge = scripted_llm(script, role="judge")
    result = faithfulness.setup(judge, method="claims").score(
        Document("d", STORY), "The keeper lit a lantern."
    )
    # the invented claim (not in the summary) is left out with a note
    assert result.values["claims"] == 1.0 and result.values["faithful"] == 1.0
    assert any("not in the summary" in n for n in result.notes)


def test_the_prompt_files_are_the_releases_strings() -> None:
    """Every file matches the constants of the release's own code (under ../shared)."""
    if not UPSTREAM.exists():
        missing_shared("StorySumm evaluators")
    consts: dict[str, str] = {}
    for name in ("llm_evaluators.py", "fables.py"):
        for node in ast.walk(ast.parse((UPSTREAM / name).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        consts[target.id] = str(node.value.value)
    folder = Path(faithfulness.PROMPT_ROOT) / "faithfulness"

    def text(name: str) -> str:
        return (folder / name).read_text(encoding="utf-8").rstrip("\n")

    assert text("system.txt") == (UPSTREAM / "systemprompt.txt").read_text().strip()
    core = "Story:\n{story}\n\nSummary:\n{summary}"
    assert text("binary.txt") == f"{core}\n\n{consts['QUESTION']}{consts['answer_tags_prompt']}"
    assert text("cot.txt") == f"{core}\n\n{consts['cot_prompt']}"
    assert text("cot_followup.txt") == f"{consts['followup_q']} {consts['answer_tags_prompt']}"
    assert text("claims_instruction.txt") == consts["firstpart"]
    assert "'Context:\\n{story}\\n\\nStatement:\\n{claim}\\n\\nQuestion: Based on the context" in (
        UPSTREAM / "fables.py"
    ).read_text(encoding="utf-8")
    assert text("claims.txt") == (
        "Context:\n{story}\n\nStatement:\n{claim}\n\nQuestion: Based on the context provided, "
        "is the above statement True or False?\n\nAnswer:"
    )


def test_a_prompt_dir_swaps_the_prompts_and_a_missing_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "system.txt").write_text("Be strict.\n", encoding="utf-8")
    (tmp_path / "binary.txt").write_text("S: {story}\nT: {summary}\nYes or No?\n", encoding="utf-8")
    judge = scripted_llm(_script("Yes"), role="judge")
    metric = faithfulness.setup(judge, method="binary", prompt_dir=str(tmp_path))
    assert metric.score(Document("d", STORY), "A summary.").values["faithful"] == 1.0
    ((messages, _),) = calls_of(judge)
    assert [(m.role, m.content) for m in messages] == [
        ("system", "Be strict."),
        ("user", f"S: {STORY}\nT: A summary.\nYes or No?"),
    ]
    with pytest.raises(ConfigError) as caught:
        faithfulness.setup(judge, method="cot", prompt_dir=str(tmp_path))  # no cot.txt there
    assert "\n" not in str(caught.value) and "cot.txt" in str(caught.value)
