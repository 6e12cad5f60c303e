"""The core's own task kind: ``preference``, two systems' summaries of a document compared.

A generic kind (no metric owns a comparison of two systems), built with the plugin API's
``HumanTask`` as any metric's kind is. Its control names match the BooookScore authors' own
export: ``detail``, ``structure``, ``logic``, ``preference`` (``Summary 1|Summary 2|Draw``),
``contradiction``, ``omission_summary_1``, ``omission_summary_2`` (``Yes|No``) and
``<name>_comments``. The questions restate Table 4's four criteria and the two flags of the
authors' export (the paper does not give its full questionnaire). The sides of each pair are
drawn at random and the systems concealed ("we shuffle the ordering of incremental and
hierarchical summaries for each summary pair, and conceal the summarization method").
"""

from __future__ import annotations

from runner.api.human_format import HumanDataError
from runner.api.human_task import (
    CHOICES,
    TEXTAREA,
    HumanTask,
    TaskAnswer,
    TaskInput,
    TaskItem,
    choices,
    headers,
)
from runner.human.judgments import CRITERIA, DRAW, SIDE_CHOICES, Preference

SIDES = ("summary_1", "summary_2")
YES_NO = ("Yes", "No")
FLAGS = ("contradiction", "omission_summary_1", "omission_summary_2")
"""The pairwise Yes/No controls."""
QUESTIONS: dict[str, str] = {
    "detail": "Level of detail: which summary gives more of the key events, characters, "
    "settings and motivations?",
    "structure": "Structure and pacing: which summary is better organized and paced?",
    "logic": "Logic and understandability: which summary is more logically consistent and "
    "easier to understand?",
    "preference": "Overall: which summary do you prefer?",
}
"""Table 4's four criteria (1) overall preference, (2) level of detail, (3) structure and
pacing, (4) logic and understandability, asked in the authors' export's order."""
HELP = (
    "Two summaries of the same book, written by two different systems; their order is "
    "random and their origin hidden. Read both, then answer each question and say why.",
)


def _config() -> str:
    lines = ["<View>", *headers("Compare two book summaries", HELP)]
    lines += ['  <Header value="Summary 1"/>', '  <Text name="summary_1" value="$summary_1"/>']
    lines += ['  <Header value="Summary 2"/>', '  <Text name="summary_2" value="$summary_2"/>']
    for name in ("detail", "structure", "logic"):
        lines += choices(name, "summary_1", SIDE_CHOICES, QUESTIONS[name])
    lines += choices(
        "contradiction", "summary_1", YES_NO, "Do the two summaries contradict each other?"
    )
    for side in ("1", "2"):
        question = f"Does Summary {side} omit important content that the other one has?"
        lines += choices(f"omission_summary_{side}", "summary_1", YES_NO, question)
    lines += choices("preference", "summary_1", SIDE_CHOICES, QUESTIONS["preference"])
    return "\n".join([*lines, "</View>", ""])


def _tasks(inputs: TaskInput) -> tuple[list[TaskItem], list[str]]:
    """One task per document both systems summarized, its sides drawn at random."""
    systems = inputs.systems
    if len(systems) != 2:
        names = ", ".join(s.name for s in systems) or "none"
        raise HumanDataError(f"pairwise tasks need exactly two systems, got {names}; give two")
    first, second = systems
    shared = sorted(set(first.summaries) & set(second.summaries))
    if not shared:
        raise HumanDataError(
            f"systems {first.name} and {second.name} share no document; pick runs of the same data"
        )
    notes = [
        f"left out {doc}: only {s.name} summarized it"
        for s, other in ((first, second), (second, first))
        for doc in sorted(set(s.summaries) - set(other.summaries))
    ]
    items = []
    for doc in shared:
        pair = [first, second]
        if inputs.rng.random() < 0.5:
            pair.reverse()
        data = {f"summary_{i}": s.summaries[doc] for i, s in enumerate(pair, 1)}
        items.append(TaskItem(doc, data, {"systems": [s.name for s in pair]}))
    return items, notes


def _read(answer: TaskAnswer) -> Preference:
    systems = answer.systems
    side_of = dict(zip(SIDE_CHOICES, (*systems, DRAW), strict=True))
    picked = {c: side_of[str(answer.choice(c, SIDE_CHOICES))] for c in CRITERIA}
    names = {"contradiction": "contradiction"}
    names.update({f"omission_{x}": f"omission:{s}" for x, s in zip(SIDES, systems, strict=True)})
    flags = {}
    for control, flag in names.items():
        said = answer.choice(control, YES_NO, required=False)
        if said is not None:
            flags[flag] = said == "Yes"
    comments = {}
    for control in answer.controls():
        if control.endswith("_comments") and answer.text(control):
            base = control.removesuffix("_comments")
            comments[names.get(base, base)] = answer.text(control)
    return Preference(answer.doc_id, (systems[0], systems[1]), answer.annotator, picked, flags,
                      comments)  # fmt: skip


PREFERENCE = HumanTask(
    kind="preference",
    help="pairwise preference of two systems' summaries (Table 4's criteria)",
    config=_config,
    controls={
        **{name: CHOICES for name in (*CRITERIA, *FLAGS)},
        **{f"{name}_comments": TEXTAREA for name in (*CRITERIA, *FLAGS)},
    },
    fields=SIDES,
    tasks=_tasks,
    read=_read,
    text_fields=SIDES,
)
