"""The summary viewer (runner/view/page.py) on real runs against a loopback model and judge.

The judge flags chosen sentences with known types and questions, so what the page must
show is known before the page is made; the HTML is read back with the standard library's
parser, never with the code that wrote it. The browser test opens the page in headless
Chromium (Debian's package) and checks what a person sees.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from metrics.booookscore.parse import LABELS
from runner.api.text import split_sentences
from runner.api.trace_view import draw
from runner.config.run_config import build_run_config
from runner.run.lifecycle import run_experiment
from runner.tracking.reader import RunRecord
from runner.view import page as view
from strategies import hier as hier_strategy
from tests.helpers.artifacts import artifact
from tests.helpers.fake_server import FakeOpenAIServer
from tests.runner.config.test_config import composed
from tests.strategies.conftest import echo_summary, kind_of, text_of, words_of

SCRIPT = "The keeper wrote <script>alert(1)</script> in the log."
FLAGS = {  # a word of the sentence -> the judge's answer (known before any page is made)
    "mill": ("Which mill, and why by the river?", ("entity omission", "causal omission")),
    "steamboat": ("Why does the <b>steamboat</b> & its news matter?", ("salience",)),
    "<script>": ("What is this code doing here?", ("language",)),
}
UNREADABLE = "stoves"  # the judge never answers this one in the paper's form


def judge_answer(sentence: str) -> str:
    if UNREADABLE in sentence:
        return "I would rather not say."
    for word, (questions, types) in FLAGS.items():
        if word in sentence:
            return f"Questions: {questions}\nTypes: {', '.join(types)}"
    return "Questions: no confusion\nTypes: no confusion"


def summarizer_answer(kind: str, prompt: str, request: dict[str, Any]) -> str:
    """Each level-0 summary opens with words of its own chunk and the merges keep the first
    one, so the three documents get different summaries; the night-train story's later
    chunks get summaries that never end (hier regenerates, then its fallback cuts them);
    the lighthouse story's merges end with a sentence holding a script tag;
    incremental's updates run over budget, so each is compressed."""
    if kind == "postprocess":
        return echo_summary(prompt)
    if kind == "compress":
        return words_of(int(re.search(r"less than (\d+) words", prompt).group(1)))  # type: ignore[union-attr]
    budget = int(request["max_tokens"] * 0.5)
    if kind == "level0":
        budget = int(request["max_tokens"] * 0.9)
        chunk = prompt.split("---\n", 1)[1]
        words = re.findall(r"[A-Za-z']+", chunk)[:4]
        if "Ilse" in chunk and not chunk.startswith("The Night Train"):
            return text_of(budget, terminated=False) + " and" * 400  # over budget, unterminated
        return f"It opens with {' '.join(words)}. " + text_of(budget)
    if kind == "merge":
        found = re.search(r"Summary 1:\n\n(.*?[.!?])(?:\s|$)", prompt, re.DOTALL)
        first = found.group(1) if found else ""
        script = " " + SCRIPT if "Lighthouse" in first else ""
        return (first + " " + text_of(budget) + script).strip()
    if kind in ("init", "update"):
        return text_of(int(request["max_tokens"] * (1.3 if kind == "update" else 0.3)))
    return text_of(budget)


def responder(request: dict[str, Any]) -> str:
    last = str(request["messages"][-1]["content"])
    sentence = re.search(r"\[Your sentence\]\n(.*?)\n\[Your response\]", last, re.DOTALL)
    if sentence:
        return judge_answer(sentence.group(1))
    return summarizer_answer(kind_of(last), last, request)


@dataclass
class Made:
    """A finished run whose page the runner logged the way the app will: just before FINISHED."""

    uri: str
    run_id: str
    client: MlflowClient
    status_when_logged: list[str] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def artifact(self, path: str) -> str:
        return artifact(self.client, self.run_id, path)

    def json(self, path: str) -> Any:
        return json.loads(self.artifact(path))


def make_run(root: Path, *extra: str, monkeypatch: pytest.MonkeyPatch) -> Made:
    """One job through ``run_experiment``, which logs the page just before FINISHED; the
    call is watched (the run's status at that moment, its time), not replaced."""
    import runner.run.lifecycle

    uri = f"sqlite:///{root / 'mlflow.db'}"
    made = Made(uri, "", MlflowClient(tracking_uri=uri))

    def watched(client: Any, run_id: str) -> None:
        made.status_when_logged.append(client.get_run(run_id).info.status)
        start = time.perf_counter()
        view.log_viewer(client, run_id)
        made.ms.append(1000 * (time.perf_counter() - start))

    monkeypatch.setattr(runner.run.lifecycle, "log_viewer", watched)
    with FakeOpenAIServer(responder) as server:
        items = [
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "judge=openai_compatible",
            f"judge.api_base={server.url}",
            "model.retry.max_attempts=2",
            "model.retry.base_delay_s=0.01",
            f"tracking.uri={uri}",
            f"cache.dir={root / 'cache'}",
            "progress=false",
            *extra,
        ]
        if "metrics=stats" not in extra:
            items.append("metrics.booookscore.max_attempts=2")  # an unreadable answer: 2 asks
        made.run_id = run_experiment(build_run_config(composed(*items), tuple(items))).run_id
    return made


@pytest.fixture(scope="module")
def hier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    """hier + BooookScore + stats on the three sample stories, a two-level merge tree."""
    with pytest.MonkeyPatch.context() as mp:
        yield make_run(
            tmp_path_factory.mktemp("hier"),
            "strategy=hier",
            "chunk=300",
            "model.context_window=1400",
            "strategy.max_summary_len=400",
            "strategy.max_attempts=2",
            monkeypatch=mp,
        )


# ------------------------------------------------------------------ reading the HTML back


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        out = []
        for child in self.children:
            if (tag is None or child.tag == tag) and (cls is None or cls in child.classes()):
                out.append(child)
            out += child.all(tag, cls)
        return out


class Tree(HTMLParser):
    """The document as nested elements; ``text`` is every text node inside, in order."""

    VOID = {"meta", "br", "img", "input", "link", "hr"}

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.stack = [self.root]
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return
        raise AssertionError(f"</{tag}> closes nothing")

    def handle_data(self, data: str) -> None:
        for element in self.stack:
            element.text += data


def page_of(made: Made) -> tuple[str, Element]:
    html = made.artifact(view.ARTIFACT)
    return html, Tree(html).root


def articles(root: Element) -> dict[str, Element]:
    return {a.attrs["data-doc-id"]: a for a in root.all("article")}


# ------------------------------------------------------------------ the page's content


def test_the_runner_logs_the_page_while_the_run_is_running_and_quickly(hier: Made) -> None:
    assert hier.status_when_logged == ["RUNNING"]
    assert hier.client.get_run(hier.run_id).info.status == "FINISHED"
    assert view.ERROR_TAG not in hier.client.get_run(hier.run_id).data.tags
    warm = []
    for _ in range(3):
        start = time.perf_counter()
        view.log_viewer(hier.client, hier.run_id)
        warm.append(1000 * (time.perf_counter() - start))
    warm.sort()
    print(
        f"log_viewer, 3-document hier run: {hier.ms[0]:.0f} ms in the run (the first page of "
        f"the process compiles the template), then {warm[1]:.0f} ms (median of 3)"
    )
    # Bounds far above what it costs (about 100 ms, then 20 ms, on 2 idle cores) that a
    # shared, busy CI machine still meets; they catch a page that scales badly, not jitter.
    assert hier.ms[0] < 3000 and warm[1] < 500


def test_every_judged_sentence_is_marked_as_annotations_json_says(hier: Made) -> None:
    _, root = page_of(hier)
    annotations = hier.json("annotations.json")
    summaries = hier.json("summaries.json")
    docs = articles(root)
    assert set(docs) == set(summaries) == set(annotations)
    for doc_id, article in docs.items():
        marks = article.all("span", "m")
        sentences = split_sentences(summaries[doc_id])
        assert [m.text for m in marks] == sentences  # every sentence judged, marked in order
        listed = annotations[doc_id]
        for mark in marks:
            entry = listed[mark.text]
            if entry.get("unparsed"):
                assert mark.classes() >= {"m", "unparsed"} and UNREADABLE in mark.text
            elif entry["types"]:
                assert "flagged" in mark.classes()
                assert mark.attrs["data-types"] == ", ".join(entry["types"])
                assert mark.attrs["data-questions"] == entry["questions"]
                assert {f"t-{t.replace(' ', '_')}" for t in entry["types"]} <= mark.classes()
            else:
                assert mark.classes() == {"m", "ok"}
        # the judge's known answers, independent of annotations.json
        for mark in marks:
            for word, (questions, types) in FLAGS.items():
                if word in mark.text:
                    assert mark.attrs["data-types"] == ", ".join(types)
                    assert mark.attrs["data-questions"] == questions
        notes = article.all("li", "note")
        confused = {s for s, e in listed.items() if e.get("types") or e.get("unparsed")}
        assert len(notes) == len(confused)  # one note per distinct marked sentence
        assert {n.all("span", "sentence")[0].text.strip("“”") for n in notes} == confused
    metrics = hier.client.get_run(hier.run_id).data.metrics
    scores = hier.json("scores.json")
    for doc_id, article in docs.items():
        flagged = len(article.all("span", "flagged"))
        assert flagged == scores[doc_id]["booookscore/confused_sentences"]
        assert (
            len(article.all("span", "unparsed")) == scores[doc_id]["booookscore/unparsed_sentences"]
        )
    assert sum(len(a.all("span", "flagged")) for a in docs.values()) > 0
    assert sum(len(a.all("span", "unparsed")) for a in docs.values()) > 0
    legend = {e.attrs["data-type"]: e for e in root.all("span", "item")}
    for label in LABELS:
        key = label.replace(" ", "_")
        assert float(legend[key].attrs["data-rate"]) == pytest.approx(
            metrics[f"booookscore/type/{key}"]
        )
        marked = sum(len(a.all("span", f"t-{key}")) for a in docs.values())
        assert f"({marked})" in legend[key].text


def test_model_text_is_escaped(hier: Made) -> None:
    html, root = page_of(hier)
    scripts = root.all("script")
    assert len(scripts) == 2  # only the page's own: one in <head>, one at the end
    assert not any("alert(1)" in s.text for s in scripts)
    lighthouse = articles(root)["the-lighthouse-keepers-ledger"]
    summary = lighthouse.all("div", "summary")[0]
    assert SCRIPT in summary.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    (mark,) = [m for m in summary.all("span", "m") if "alert(1)" in m.text]
    assert mark.attrs["data-types"] == "language"
    (steam,) = {
        m.attrs["data-questions"] for m in root.all("span", "flagged") if "steamboat" in m.text
    }
    assert steam == FLAGS["steamboat"][0] and "&lt;b&gt;steamboat&lt;/b&gt; &amp; its" in html


def test_the_settings_line_and_the_document_table(hier: Made) -> None:
    _, root = page_of(hier)
    run = hier.client.get_run(hier.run_id).data
    (settings,) = [p for p in root.all("p") if p.attrs.get("id") == "settings"]
    for text in (
        "strategy",
        "hier",
        "model",
        run.params["model.model"],
        "judge",
        "chunk",
        "300",
        "prompts",
        "paper",
        f"T={run.params['judge.temperature']}",
    ):
        assert text in settings.text
    (totals,) = [p for p in root.all("p") if p.attrs.get("id") == "totals"]
    assert f"calls{run.metrics['calls']:,.0f}" in totals.text and "$0.0000" in totals.text
    headers = [th.attrs.get("title") for th in root.all("th")]
    assert headers[1:5] == [  # the metrics' headline values (the flagged count: the legend)
        "booookscore/score",
        "stats/length_tokens",
        "stats/novel_trigrams_pct",
        "stats/repeated_trigrams_pct",
    ]
    scores = hier.json("scores.json")
    for row in root.all("tbody")[0].all("tr"):
        doc_id = row.all("td")[0].attrs["data-v"]
        assert float(row.all("td")[1].attrs["data-v"]) == pytest.approx(
            scores[doc_id]["booookscore/score"]
        )
        assert float(row.all("td")[2].attrs["data-v"]) == scores[doc_id]["stats/length_tokens"]


def test_the_merge_tree_has_every_node_of_the_trace(hier: Made) -> None:
    _, root = page_of(hier)
    for doc_id, article in articles(root).items():
        trace = hier.json(f"traces/{doc_id}.json")
        called = [s for s in trace if s["kind"] in ("summarize", "merge")]
        nodes = article.all("details", "node")
        assert len(nodes) == len(called) and max(s.get("level", 0) for s in called) >= 2
        top = max((s for s in trace if s["kind"] == "merge"), key=lambda s: s["level"])
        assert nodes[0].all("div", "text")[0].text == top["text"]  # the root is the top merge
        assert "open" in nodes[0].attrs and not any("open" in n.attrs for n in nodes[1:])
        leaves = [n for n in nodes if "level-0" in n.classes()]
        assert len(leaves) == sum(s["kind"] == "summarize" for s in trace)
        fallbacks = [s for s in called if s["fallback"]]
        assert len(article.all("span", "fallback")) == len(fallbacks)
        if doc_id == "the-night-train-to-verrin":
            assert fallbacks, "the unterminated chunk summary was cut by the fallback"
        steps = " ".join(s.text for s in article.all("details", "step"))
        assert "postprocess" in steps and "plan" in steps  # the other steps, generically


def test_the_command_draws_a_stored_hier_run_from_its_stored_view(
    hier: Made, tmp_path: Path
) -> None:
    """``python -m runner.view`` imports no strategy: the tree comes from trace_views.json."""
    out = tmp_path / "page.html"
    code = (
        "import sys\n"
        "from runner.view.page import main\n"
        f"code = main([{hier.run_id!r}, {f'out={out}'!r}, {f'tracking.uri={hier.uri}'!r}])\n"
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] == 'strategies'))\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split("\n")[-2] == "0 []", done.stdout + done.stderr
    views = hier.json("trace_views.json")
    for doc_id, article in articles(Tree(out.read_text(encoding="utf-8")).root).items():
        trace = hier.json(f"traces/{doc_id}.json")
        nodes = article.all("details", "node")
        assert len(nodes) == sum(s["kind"] in ("summarize", "merge") for s in trace) > 1
        assert [s["name"] for s in views[doc_id]["sections"]] == ["hier"]
        (section,) = article.all("section", "hier")
        assert "level 0" in section.text and "cut by the fallback" in section.text


def test_a_run_stored_without_views_lists_its_steps_plainly(hier: Made) -> None:
    """Runs recorded before views were: no tree, every step listed as it is, no error."""
    client = hier.client
    files = view.read_files(client, hier.run_id)
    assert files.views, "this run has its views"
    old = view.RunFiles(files.summaries, files.scores, files.annotations, files.notes, files.traces)
    root = Tree(view.render(view.build_page(RunRecord.from_run(client.get_run(hier.run_id)), old)))
    for doc_id, article in articles(root.root).items():
        assert not article.all("details", "node") and "view failed" not in article.text
        kinds = [s.all("b")[0].text for s in article.all("details", "step")]
        assert kinds == [s["kind"] for s in hier.json(f"traces/{doc_id}.json")]


# ------------------------------------------------------------------ other strategies


@pytest.fixture(scope="module")
def incremental(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    with pytest.MonkeyPatch.context() as mp:
        yield make_run(
            tmp_path_factory.mktemp("inc"),
            "strategy=incremental",
            "metrics=stats",
            "chunk=700",
            "data.limit=1",
            "strategy.max_summary_len=300",
            monkeypatch=mp,
        )


def test_incremental_shows_each_update_and_the_length_curve(incremental: Made) -> None:
    _, root = page_of(incremental)
    (article,) = articles(root).values()
    trace = incremental.json(f"traces/{article.attrs['data-doc-id']}.json")
    updates = [s for s in trace if s["kind"] == "update"]
    compressions = {s["index"]: s for s in trace if s["kind"] == "compress"}
    assert len(updates) >= 3 and compressions, "the responder's long updates get compressed"
    kept = [p for p in root.all("polyline") if "s2" in p.attrs["class"]][0].attrs["points"].split()
    assert len(kept) == len(updates)
    heights = [float(p.split(",")[1]) for p in kept]
    words = [compressions.get(u["index"], u).get("after_words", u["words"]) for u in updates]
    # higher in the chart (smaller y) exactly where the kept summary has more words
    assert sorted(range(len(words)), key=lambda i: (words[i], i)) == sorted(
        range(len(words)), key=lambda i: (-heights[i], i)
    )
    kinds = [s.all("b")[0].text for s in article.all("details", "step")]
    assert kinds.count("update") == len(updates) and kinds.count("compress") == len(compressions)
    assert not root.all("span", "m")  # no BooookScore: summaries unmarked
    assert "No BooookScore annotations" in root.text


def scores(best: int) -> str:
    return "Scores: " + ", ".join(f"{k}: {int(k == best)}" for k in range(1, 6))


def summit_responder(request: dict[str, Any]) -> str:
    system = str(request["messages"][0]["content"])
    if system.startswith("You are a summary evaluator"):
        summary = str(request["messages"][-1]["content"]).split("Summary:\n", 1)[1]
        if "finally" in summary:
            return "Scores: 1: 0, 2: 0, 3: 0, 4: 0.5, 5: 0.5\nJustification: good now.\n<STOP>"
        if "storm" in summary:
            return f"{scores(3)}\nJustification: thin.\n- Add the information of the rescue"
        return f"{scores(2)}\nJustification: vague.\n- Add the information of the storm"
    last = str(request["messages"][-1]["content"])
    if last.startswith("Refine:"):
        previous = [m for m in request["messages"] if m["role"] == "assistant"][-1]["content"]
        return previous + (
            " A storm came." if "storm" not in previous else " The crew was finally rescued."
        )
    return "A keeper kept a light."


@pytest.fixture(scope="module")
def summit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    root = tmp_path_factory.mktemp("summit")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    with FakeOpenAIServer(summit_responder) as server:
        items = [
            "strategy=summit",
            "model=openai_compatible",
            f"model.api_base={server.url}",
            "metrics=stats",
            "data.limit=1",
            f"tracking.uri={uri}",
            f"cache.dir={root / 'cache'}",
        ]
        run_id = run_experiment(build_run_config(composed(*items), tuple(items))).run_id
    made = Made(uri, run_id, MlflowClient(tracking_uri=uri))
    view.log_viewer(made.client, run_id)  # on a FINISHED run too
    yield made


def test_summit_shows_feedback_operations_diffs_and_the_score_curve(summit: Made) -> None:
    _, root = page_of(summit)
    rounds = root.all("details", "round")
    assert [r.all("summary")[0].text.split(" · ")[:2] for r in rounds] == [
        ["Iteration 1", "score 2"],
        ["Iteration 2", "score 3"],
        ["Iteration 3", "score 4.50"],
    ]
    assert [op.text for op in rounds[0].all("span", "op")] == ["add"] and "the storm" in rounds[
        0
    ].text
    assert not rounds[0].all("ins")  # the draft has nothing before it
    assert [i.text for i in rounds[1].all("ins")] == ["A storm came."]
    assert [i.text for i in rounds[2].all("ins")] == ["The crew was finally rescued."]
    dots = root.all("circle")
    assert [d.all("title")[0].text for d in dots] == ["score: 2", "score: 3", "score: 4.5"]
    ys = [float(d.attrs["cy"]) for d in dots]
    assert ys[0] > ys[1] > ys[2]  # a rising curve is drawn rising
    assert "stop_token" in root.all("section", "summit")[0].text


# ------------------------------------------------------------------ robustness


def record(**metrics: float) -> RunRecord:
    return RunRecord(
        "0" * 32, "made-up", "1", "FINISHED", 0, 1, {"strategy": "mystery"}, metrics, {}
    )


def test_unknown_steps_and_malformed_traces_render_generically() -> None:
    tree_of = hier_strategy.trace_view
    files = view.RunFiles(
        summaries={"a": "One sentence. Two sentences.", "b": "", "c": "x"},
        scores={"a": {"rouge/score": 0.5, "rouge/f1": 0.4}},
        annotations={
            "a": {
                "One sentence.": {"questions": "q?", "types": ["not a label"]},
                "Elsewhere.": {"questions": "w?", "types": ["salience"]},
            }
        },
        traces={
            "a": [{"kind": "telepathy", "call_id": "", "vibes": 3, "text": "long " * 40}],
            "b": [{"kind": "merge", "level": "x", "children": "oops"}, "not a step"],
            "c": {"not": "a list"},
        },
        views={  # as the job records them: hier's view of b's malformed merge fails
            "a": draw(tree_of, [{"kind": "telepathy", "call_id": "", "vibes": 3}]),
            "b": draw(tree_of, [{"kind": "merge", "level": "x", "children": "oops"}]),
            "c": {"sections": [{"name": "broken", "tree": {"children": "not nodes"}}]},
        },
    )
    page = view.build_page(record(), files)
    html = view.render(page)
    root = Tree(html).root
    docs = articles(root)
    assert (
        "telepathy" in docs["a"].text
        and "vibes" in docs["a"].text
        and "long long" in docs["a"].text
    )
    assert "view failed" in docs["b"].text  # the merge step is shown plainly, with the reason
    assert "ValueError" in docs["b"].text and "merge" in docs["b"].text
    assert "not a sentence of the summary as split" in docs["a"].text
    assert [th.attrs.get("title") for th in root.all("th")][1] == "rouge/score"
    assert "No summary was logged" in docs["b"].text


def test_a_viewer_failure_never_fails_the_run(hier: Made, monkeypatch: pytest.MonkeyPatch) -> None:
    client = hier.client  # a fresh RUNNING run in the same store (a new store costs ~3 s)
    experiment = client.get_run(hier.run_id).info.experiment_id
    run_id = client.create_run(experiment).info.run_id

    def broken(page: view.Page) -> str:
        raise RuntimeError("template exploded")

    monkeypatch.setattr(view, "render", broken)
    view.log_viewer(client, run_id)  # no exception
    run = client.get_run(run_id)
    assert run.data.tags[view.ERROR_TAG] == "RuntimeError: template exploded"
    assert run.info.status == "RUNNING" and not client.list_artifacts(run_id)


def test_the_command_writes_the_page_of_a_stored_run(
    hier: Made, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "page.html"
    assert view.main(["latest", f"out={out}", f"tracking.uri={hier.uri}"]) == 0
    assert hier.run_id in out.read_text() and f"wrote {out}" in capsys.readouterr().out
    assert view.main(["f" * 32, f"tracking.uri={hier.uri}", f"out={out}"]) == 2
    assert "error: cannot read run ffff" in capsys.readouterr().err
    assert view.main(["latest", "colour=blue"]) == 2
    assert "colour is not an option" in capsys.readouterr().err
    experiment = hier.client.get_run(hier.run_id).info.experiment_id
    older = hier.client.create_run(experiment).info.run_id  # a run made before the viewer
    assert view.main([older, f"tracking.uri={hier.uri}", f"out={out}", "log=true"]) == 0
    logged = hier.client.download_artifacts(older, view.ARTIFACT, dst_path=str(tmp_path))
    assert Path(logged).read_text() == out.read_text() and older in out.read_text()


# ------------------------------------------------------------------ in a real browser


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail(
            "Chromium is missing under CI=true (.ci/run installs it: apt-get install chromium)"
        )
    pytest.skip("Chromium is not installed (apt-get install -y chromium)")


PROBE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const all = (sel, from) => Array.from((from || document).querySelectorAll(sel));
  const bg = (e) => getComputedStyle(e).backgroundColor;
  const out = {swatches: {}};
  let doc = document.querySelector("article.doc.on");
  out.selected = doc.dataset.docId;
  out.visibleDocs = all("article.doc").filter((a) => a.checkVisibility()).length;
  out.flagged = all(".m.flagged", doc).map((m) => (
    {text: m.textContent, types: m.dataset.types, bg: bg(m), visible: m.checkVisibility()}));
  out.ok = all(".m.ok", doc).map(bg);
  all("#legend .item[data-type]").forEach((i) => {
    out.swatches[i.dataset.type] = [bg(i.querySelector(".sw")), i.textContent]; });
  const leaf = doc.querySelector("details.node.level-0 > .text");
  out.leafBefore = leaf.checkVisibility();
  all("details", doc).forEach((d) => { d.open = true; });
  out.leafAfter = leaf.checkVisibility();
  out.leafHeight = leaf.getBoundingClientRect().height;
  all("#docs th")[1].click();  /* sort by the first score column */
  out.sorted = all("#docs tbody tr").map((r) => parseFloat(r.cells[1].dataset.v));
  const filter = document.getElementById("filter");
  filter.value = "salience";
  filter.dispatchEvent(new Event("change"));
  out.filtered = all("#docs tbody tr").filter((r) => !r.hidden).map((r) => r.dataset.doc);
  doc = document.querySelector("article.doc.on");
  out.afterFilter = all(".m.flagged", doc).map((m) => [m.dataset.types, bg(m)]);
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 0));
</script>"""


def run_chromium(binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def rgb(color: str) -> str:
    return "rgb({}, {}, {})".format(*(int(color[i : i + 2], 16) for i in (1, 3, 5)))


def test_in_a_browser_marks_are_coloured_the_legend_matches_and_the_tree_opens(
    hier: Made, tmp_path: Path
) -> None:
    binary = chromium()
    html, _ = page_of(hier)
    page = tmp_path / "viewer.html"
    page.write_text(html, encoding="utf-8")
    shot = tmp_path / "viewer.png"
    done = run_chromium(
        binary,
        "--window-size=1280,900",
        "--virtual-time-budget=3000",
        f"--screenshot={shot}",
        page.as_uri(),
    )
    assert shot.exists() and shot.stat().st_size > 10_000, done.stderr[-2000:]
    print(f"screenshot: {shot}")
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    done = run_chromium(binary, "--virtual-time-budget=3000", "--dump-dom", probed.as_uri())
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.DOTALL)
    assert match, done.stderr[-2000:]
    import html as html_module

    seen = json.loads(html_module.unescape(match.group(1)))
    first = next(iter(hier.json("summaries.json")))
    assert seen["selected"] == first and seen["visibleDocs"] == 1  # the script shows one document
    assert seen["flagged"] and all(f["visible"] for f in seen["flagged"])
    for mark in seen["flagged"]:  # highlighted in the colour of its first type
        assert mark["bg"] == rgb(view.colors(LABELS)[mark["types"].split(", ")[0]]), mark
    assert seen["ok"] and all(c == "rgba(0, 0, 0, 0)" for c in seen["ok"])
    metrics = hier.client.get_run(hier.run_id).data.metrics
    for label in LABELS:
        key = label.replace(" ", "_")
        colour, text = seen["swatches"][key]
        assert colour == rgb(view.colors(LABELS)[label])
        assert f"{label} {metrics['booookscore/type/' + key]:.1f}%" in text or (
            metrics["booookscore/type/" + key] == 0 and f"{label} 0%" in text
        )
    assert seen["leafBefore"] is False and seen["leafAfter"] is True and seen["leafHeight"] > 10
    assert seen["sorted"] == sorted(seen["sorted"], reverse=True)  # highest score first
    with_salience = {
        a.attrs["id"] for a in Tree(html).root.all("article") if a.all("span", "t-salience")
    }
    assert set(seen["filtered"]) == with_salience and with_salience
    for types, colour in seen["afterFilter"]:  # only the chosen type stays coloured
        expected = (
            rgb(view.colors(LABELS)["salience"]) if "salience" in types else "rgba(0, 0, 0, 0)"
        )
        assert colour == expected
