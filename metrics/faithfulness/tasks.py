"""The faithfulness metric's Label Studio task kind, ``HUMAN_TASKS``: ``claims``.

People read a summary's source, answer StorySumm's question of the summary ("Is all of the
information in the summary consistent with the source?") and label each of its claims
against the source (supported / partially / not supported / cannot tell), marking the
evidence and saying why. The answers are a ``ClaimsJudgment`` of the plugin API.

The claims come from the judged run's ``claims.json`` artifact (``{doc_id: [{"index",
"claim", ...}]}``, which this metric writes when it judges claims), so people label the very
claims the judge labelled; a run without it falls back on the claims its data gives
(``WorkItem.extras["claims"]``), taken only for a summary the data gives too (the same text),
since a summary the run wrote itself has no given claims. The source is read again from the
run's data (runs log no source text). A source that cannot be read (its file moved, a book
not released) or is longer than ``SOURCE_LIMIT`` characters is shown as a one-line note
instead, and evidence is then quoted in the reason. A run with no claims at all is one line
saying how to get them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import quoteattr

from runner.api import ClaimLabel, ClaimsJudgment, HumanDataError
from runner.api.human_task import (
    CHOICES,
    LABELS,
    PER_ITEM,
    TEXTAREA,
    HumanTask,
    TaskAnswer,
    TaskInput,
    TaskItem,
    TaskSystem,
    area_text,
    headers,
    item_control,
)

CLAIMS_FILE = "claims.json"
"""The judged run's per-claim artifact."""
SOURCE_LIMIT = 100_000
"""Characters of source a task shows whole; a longer one (a book) is a note instead: evidence
spans over a whole book in one Label Studio page are neither readable nor fast."""
YES_NO = ("Yes", "No")
FAITHFUL_CONTROL = "faithful"
"""The summary-level Yes/No: is all of the summary consistent with the source?"""
FAITHFUL_QUESTION = "Is all of the information in the summary consistent with the source?"
"""StorySumm's question of a summary (its summary label)."""
CLAIM_CHOICES: dict[str, str] = {
    "Supported": "supported",
    "Partially supported": "partial",
    "Not supported": "unsupported",
    "Cannot tell": "cannot_tell",
}
"""The choices per claim, as people see them -> ``CLAIM_LABELS``."""
CONTROLS = {
    FAITHFUL_CONTROL: CHOICES,
    f"label_{PER_ITEM}": CHOICES,
    f"evidence_{PER_ITEM}": LABELS,
    f"reason_{PER_ITEM}": TEXTAREA,
}
"""Every control of the config; the per-claim ones are repeated by Label Studio's
``Repeater`` as ``label_0``, ``label_1``..."""
CLAIMS_HELP = (
    "Read the source, then the summary and its claims (short statements the summary makes).",
    "For each claim: is it supported by the source? Supported: the source says it. Partially "
    "supported: part of it is in the source, part is not or differs. Not supported: the "
    "source says otherwise or says nothing of it. Cannot tell: the claim cannot be checked "
    "against the source (an opinion, or about something the source does not cover).",
    "Mark the evidence in the source with the claim's evidence label (select the passage), "
    "and say why in the claim's reason.",
)


def _config() -> str:
    """Source, summary, the summary-level question, then one block per claim (``Repeater``).

    Label Studio's ``Repeater`` repeats its children once per item of the task's ``claims``
    list, writing the item's index (from 0) where ``{{idx}}`` stands, so each claim has its
    own controls ``label_<i>``, ``evidence_<i>`` (a Labels control over the source) and
    ``reason_<i>``. The source is the task's ``source_text``: Label Studio's labeling page
    resolves ``$source`` to the task's own raw JSON, not to a data field of that name.
    """
    i = PER_ITEM
    lines = ["<View>", *headers("Is the summary true to its source?", CLAIMS_HELP)]
    lines += ['  <Header value="Source"/>', '  <Text name="source_text" value="$source_text"/>']
    lines += ['  <Header value="Summary"/>', '  <Text name="summary" value="$summary"/>']
    lines += [
        f'  <Header size="5" value={quoteattr(FAITHFUL_QUESTION)}/>',
        f'  <Choices name="{FAITHFUL_CONTROL}" toName="summary" choice="single" required="true">',
        *[f"    <Choice value={quoteattr(v)}/>" for v in YES_NO],
        "  </Choices>",
        '  <Repeater on="$claims" indexFlag="{{idx}}">',
        '    <Header size="5" value="Claim {{idx}}"/>',
        '    <Text name="claim_{{idx}}" value="$claims[{{idx}}].text"/>',
        '    <Choices name="label_{{idx}}" toName="claim_{{idx}}" choice="single" required="true">',
        *[f"      <Choice value={quoteattr(v)}/>" for v in CLAIM_CHOICES],
        "    </Choices>",
        f'    <Labels name="evidence_{i}" toName="source_text" choice="single">',
        f'      <Label value="evidence for claim {i}"/>',
        "    </Labels>",
        f'    <TextArea name="reason_{i}" toName="claim_{i}" rows="2" editable="true" '
        'placeholder="Why?"/>',
        "  </Repeater>",
    ]
    return "\n".join([*lines, "</View>", ""])


@dataclass(frozen=True)
class Claimed:
    """One summary to label: its claims and its source (or why the source is not shown)."""

    doc_id: str
    summary: str
    claims: tuple[str, ...]
    source: str
    """The source text, or a one-line note saying why it is not shown."""


def _tasks(inputs: TaskInput) -> tuple[list[TaskItem], list[str]]:
    """One task per (run, summary with claims)."""
    runs = [s for s in inputs.systems if s.is_run]
    named = [s.name for s in inputs.systems if not s.is_run]
    if named or not runs:
        raise HumanDataError(
            "claims tasks take runs (their claims.json, or their data's claims), not "
            f"--system files ({', '.join(named) or 'none given'}); give run ids"
        )
    items, notes = [], []
    for system in runs:
        found, gaps = claimed(system)
        notes += gaps
        for c in found:
            claims = [{"text": text} for text in c.claims]
            data = {"source_text": c.source, "summary": c.summary, "claims": claims}
            items.append(TaskItem(c.doc_id, data, {"system": system.name}))
    if not items:
        raise HumanDataError("claims tasks need a run with claims; give one")
    return items, notes


def claimed(system: TaskSystem) -> tuple[list[Claimed], list[str]]:
    """The summaries of ``system`` (a run) with their claims and sources; notes on gaps."""
    run_claims = _run_claims(system.name, system.artifact(CLAIMS_FILE))
    work_items, problem = system.items()
    sources = {i.doc_id: (i.source.text if i.source else None) for i in work_items}
    given = {i.doc_id: (i.summary, tuple(i.extras.get("claims") or ())) for i in work_items}
    notes = [f"run {system.name}: sources not shown ({problem})"] if problem else []
    out = []
    for doc, summary in sorted(system.summaries.items()):
        claims = run_claims.get(doc, ())
        if not claims:
            given_summary, given_claims = given.get(doc, (None, ()))
            same = given_summary is not None and _flat(given_summary) == _flat(summary)
            claims = given_claims if same else ()
        if not claims:
            notes.append(f"left out {doc} of run {system.name}: no claims")
            continue
        out.append(Claimed(doc, summary, claims, _shown(sources.get(doc), problem)))
    if not out:
        raise HumanDataError(
            f"run {system.name} has no claims: no {CLAIMS_FILE} artifact and its data gives "
            "none for its summaries; score it with a metric that judges claims first "
            "(metrics=faithfulness metrics.faithfulness.method=claims)"
        )
    return out, notes


def _flat(text: str) -> str:
    return " ".join(text.split())


def _shown(text: str | None, problem: str) -> str:
    """The source as the task shows it: whole, or a note on why not."""
    if text is None:
        why = problem or "the run's data gives no source for it"
        return f"(The source is not available here: {why}. Quote your evidence in the reason.)"
    if len(text) > SOURCE_LIMIT:
        return (
            f"(The source, {len(text.split())} words, is too long to show here. Read it apart "
            "and quote your evidence in the reason.)"
        )
    return text


def _run_claims(run_id: str, data: Any) -> dict[str, tuple[str, ...]]:
    """``claims.json`` as doc_id -> claim texts in index order; a bad file is one line."""
    if data is None:
        return {}
    try:
        return {
            str(doc): tuple(str(c["claim"]) for c in sorted(entries, key=lambda c: int(c["index"])))
            for doc, entries in data.items()
        }
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise HumanDataError(
            f"run {run_id}'s {CLAIMS_FILE} is not {{doc_id: [{{index, claim, ...}}]}} "
            f"({type(err).__name__}: {err}); check the metric that wrote it"
        ) from None


def _read(answer: TaskAnswer) -> ClaimsJudgment:
    """The summary's Yes/No, and each claim's label, evidence and reason.

    Every claim of the task must be labelled (the config requires it); evidence is the
    regions marked with the claim's ``evidence_<i>`` label, in the source's order, each
    checked to be a stretch of the source; ``faithful`` is None when the question was skipped.
    """
    summary = answer.field("summary")
    source = answer.field("source_text")
    texts = _claim_texts(answer)
    said = answer.choice(FAITHFUL_CONTROL, YES_NO, required=False)
    labels: dict[int, str] = {}
    evidence: dict[int, list[tuple[int, str]]] = {i: [] for i in range(len(texts))}
    reasons: dict[int, str] = {}
    for item in answer.results:
        name = str(item.get("from_name"))
        found = item_control(name, CONTROLS)
        if found is None:
            continue
        control, index = found
        if index >= len(texts):
            problem = f"claim {index} is not one of the task's {len(texts)} claims"
            raise answer.error(name, problem, "export the project again with its own tasks")
        value = item.get("value") or {}
        if control.startswith("label_"):
            chosen = value.get("choices") or []
            if len(chosen) != 1 or chosen[0] not in CLAIM_CHOICES:
                raise answer.error(
                    name, f"unknown choice {chosen!r}", f"pick one of {list(CLAIM_CHOICES)}"
                )
            labels[index] = CLAIM_CHOICES[chosen[0]]
        elif control.startswith("evidence_"):
            evidence[index].append(_quote(answer, name, source, value))
        else:
            reasons[index] = area_text(value)
    missing = [i for i in range(len(texts)) if i not in labels]
    if missing:
        raise answer.error(
            f"label_{missing[0]}", "no choice made", "label every claim in Label Studio"
        )
    claims = tuple(
        ClaimLabel(i, text, labels[i], tuple(q for _, q in sorted(evidence[i])), reasons.get(i, ""))
        for i, text in enumerate(texts)
    )
    faithful = None if said is None else said == "Yes"
    return ClaimsJudgment(
        answer.doc_id, answer.systems[0], answer.annotator, summary, faithful, "", claims,
        "claim", answer.metric,
    )  # fmt: skip


def _claim_texts(answer: TaskAnswer) -> list[str]:
    """The task's claims, ``[{"text": ...}]`` as the export wrote them."""
    raw = answer.data.get("claims")
    if not isinstance(raw, list) or not raw:
        raise answer.error(
            "claims", "is not a list of claims", "import the tasks.json export wrote"
        )
    texts = [c.get("text") if isinstance(c, dict) else None for c in raw]
    if not all(isinstance(t, str) for t in texts):
        raise answer.error("claims.text", "is not a string", "fix the file")
    return [str(t) for t in texts]


def _quote(answer: TaskAnswer, name: str, source: str, value: Mapping[str, Any]) -> tuple[int, str]:
    """(start, text) of one evidence region, its text checked to be a stretch of the source."""
    start = int(value.get("start") or 0)
    text = value.get("text")
    if not isinstance(text, str) and "end" in value:
        text = source[start : int(value["end"])]
    if not text or _flat(str(text)) not in _flat(source):
        problem = f"evidence {str(text)[:60]!r} is not in the source"
        raise answer.error(name, problem, "mark evidence on the task's own source")
    return start, str(text)


CLAIMS_TASK = HumanTask(
    kind="claims",
    help="faithfulness: each claim of a summary labelled against its source",
    config=_config,
    controls=CONTROLS,
    fields=("summary", "claims", "source_text"),
    tasks=_tasks,
    read=_read,
)

HUMAN_TASKS = (CLAIMS_TASK,)
"""The kinds of task people annotate for this metric (``python -m runner.annotate export``)."""
