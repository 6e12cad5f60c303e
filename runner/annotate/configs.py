"""Label Studio labeling configs, one per task kind, with the paper's instructions on top.

The control names are the contract with the reader (``runner.human.labelstudio``) and match
the BooookScore authors' own export: pairwise ``detail``, ``structure``, ``logic``,
``preference`` (``Summary 1|Summary 2|Draw``), ``contradiction``, ``omission_summary_1``,
``omission_summary_2`` (``Yes|No``) and ``<name>_comments``; span annotation ``error_type``
(a Labels control over the Text ``summary``) with a per-region TextArea ``questions``;
validation ``agreement`` (Appendix J's verdicts) and ``reasons``; claims ``faithful``
(``Yes|No``: StorySumm's summary question) and, per claim ``i`` (a ``Repeater`` over the
task's claims), ``label_<i>`` (``CLAIM_CHOICES``), ``evidence_<i>`` (a Labels control over the
Text ``source_text``) and ``reason_<i>``. The span task's title,
instructions, labels and their definitions are the owning metric's (``HUMAN``, found by
``runner.human.owner``; BooookScore's quote sec. 3's protocol and the M.4 taxonomy); the
others quote the paper (Table 4's criteria, Appendix J's standards); the full pairwise
questionnaire is not in the paper, so its questions restate Table 4's four criteria and the
two flags of the authors' export.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from runner.human.judgments import SIDE_CHOICES, VERDICTS
from runner.human.ls_controls import CLAIM_CHOICES, FAITHFUL_CONTROL, INDEX_FLAG
from runner.human.owner import owner

KINDS: tuple[str, ...] = ("preference", "coherence", "validation", "claims")
"""Task kinds, as the key's ``kind`` names them."""

PREFERENCE_QUESTIONS: dict[str, str] = {
    "detail": "Level of detail: which summary gives more of the key events, characters, "
    "settings and motivations?",
    "structure": "Structure and pacing: which summary is better organized and paced?",
    "logic": "Logic and understandability: which summary is more logically consistent and "
    "easier to understand?",
    "preference": "Overall: which summary do you prefer?",
}
"""Table 4's four criteria (1) overall preference, (2) level of detail, (3) structure and
pacing, (4) logic and understandability, asked in the authors' export's order."""
PREFERENCE_HELP = (
    "Two summaries of the same book, written by two different systems; their order is "
    "random and their origin hidden. Read both, then answer each question and say why.",
)
VALIDATION_HELP = (
    "Given the summary and one annotation of it (a span, or two related spans, with "
    "questions), say whether you agree with the annotation.",
    "Standards: 1. the span is confusing; 2. the questions are (a) relevant to the span, "
    "(b) not answered anywhere in the summary, explicitly or implicitly, and (c) addressing "
    "issues that, left unresolved, would make the summary incoherent or make it hard for "
    "readers to understand the main storyline.",
    "Agree: both the span and the questions meet the standards. Partially agree: the span is "
    "confusing, but the questions fail one or more standards. Don't agree: the span is not "
    "at all confusing, whatever the questions.",
)
YES_NO = ("Yes", "No")
CLAIMS_HELP = (
    "Read the source, then the summary and its claims (short statements the summary makes).",
    "For each claim: is it supported by the source? Supported: the source says it. Partially "
    "supported: part of it is in the source, part is not or differs. Not supported: the "
    "source says otherwise or says nothing of it. Cannot tell: the claim cannot be checked "
    "against the source (an opinion, or about something the source does not cover).",
    "Mark the evidence in the source with the claim's evidence label (select the passage), "
    "and say why in the claim's reason.",
)
FAITHFUL_QUESTION = "Is all of the information in the summary consistent with the source?"
"""StorySumm's question of a summary (its summary label)."""


def labeling_config(kind: str) -> str:
    """The Label Studio labeling config (XML) for ``kind`` (one of ``KINDS``)."""
    if kind == "preference":
        return _preference()
    if kind == "coherence":
        return _coherence()
    if kind == "validation":
        return _validation()
    if kind == "claims":
        return _claims()
    raise ValueError(f"unknown task kind {kind!r}; expected one of {', '.join(KINDS)}")


def _headers(title: str, lines: tuple[str, ...]) -> list[str]:
    out = [f"  <Header value={quoteattr(title)}/>"]
    out += [f'  <Header size="6" value={quoteattr(line)}/>' for line in lines]
    return out


def _choices(name: str, to: str, values: tuple[str, ...], question: str) -> list[str]:
    out = [f'  <Header size="5" value={quoteattr(question)}/>']
    out.append(f'  <Choices name="{name}" toName="{to}" choice="single" required="true">')
    out += [f"    <Choice value={quoteattr(v)}/>" for v in values]
    out.append("  </Choices>")
    out.append(f'  <TextArea name="{name}_comments" toName="{to}" rows="2" editable="true"/>')
    return out


def _preference() -> str:
    lines = ["<View>", *_headers("Compare two book summaries", PREFERENCE_HELP)]
    lines += ['  <Header value="Summary 1"/>', '  <Text name="summary_1" value="$summary_1"/>']
    lines += ['  <Header value="Summary 2"/>', '  <Text name="summary_2" value="$summary_2"/>']
    for name in ("detail", "structure", "logic"):
        lines += _choices(name, "summary_1", SIDE_CHOICES, PREFERENCE_QUESTIONS[name])
    lines += _choices(
        "contradiction", "summary_1", YES_NO, "Do the two summaries contradict each other?"
    )
    for side in ("1", "2"):
        question = f"Does Summary {side} omit important content that the other one has?"
        lines += _choices(f"omission_summary_{side}", "summary_1", YES_NO, question)
    lines += _choices("preference", "summary_1", SIDE_CHOICES, PREFERENCE_QUESTIONS["preference"])
    return "\n".join([*lines, "</View>", ""])


def _coherence() -> str:
    _, human = owner("")
    lines = ["<View>", *_headers(human.task_title, human.instructions)]
    lines += [
        f'  <Header size="6" value={quoteattr(f"{label.capitalize()}: {text}.")}/>'
        for label, text in human.label_help.items()
    ]
    lines.append('  <Labels name="error_type" toName="summary" choice="multiple">')
    lines += [f"    <Label value={quoteattr(label)}/>" for label in human.labels]
    lines.append("  </Labels>")
    lines.append('  <Text name="summary" value="$summary" granularity="word"/>')
    lines.append('  <Header size="5" value="Questions about the selected span"/>')
    lines.append(
        '  <TextArea name="questions" toName="summary" perRegion="true" editable="true" rows="2"/>'
    )
    return "\n".join([*lines, "</View>", ""])


def _validation() -> str:
    lines = ["<View>", *_headers("Validate an annotation of a book summary", VALIDATION_HELP)]
    lines += ['  <Header value="Summary"/>', '  <Text name="summary" value="$summary"/>']
    lines += [
        '  <Header value="Annotated span"/>',
        '  <Text name="annotation" value="$annotation"/>',
    ]
    lines += [
        '  <Header value="Questions"/>',
        '  <Text name="annotation_questions" value="$annotation_questions"/>',
        '  <Header size="5" value="Do you agree with this annotation?"/>',
        '  <Choices name="agreement" toName="summary" choice="single" required="true">',
    ]
    lines += [f"    <Choice value={quoteattr(v)}/>" for v in VERDICTS]
    lines.append("  </Choices>")
    lines.append('  <TextArea name="reasons" toName="summary" rows="2" editable="true"/>')
    return "\n".join([*lines, "</View>", ""])


def _claims() -> str:
    """Source, summary, the summary-level question, then one block per claim (``Repeater``).

    Label Studio's ``Repeater`` repeats its children once per item of the task's ``claims``
    list, writing the item's index (from 0) where ``{{idx}}`` stands, so each claim has its
    own controls ``label_<i>``, ``evidence_<i>`` (a Labels control over the source) and
    ``reason_<i>``: the names the reader parses (``runner.human.ls_controls``). The source is
    the task's ``source_text``: Label Studio's labeling page resolves ``$source`` to the
    task's own raw JSON, not to a data field of that name.
    """
    i = INDEX_FLAG
    lines = ["<View>", *_headers("Is the summary true to its source?", CLAIMS_HELP)]
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
