"""SummIt's prompts (Appendix B, Tables 8 and 9) as chat messages.

The paper gives a system prompt per role (Table 8) and user prompts per setting (Table 9:
quality, control = ``topic``, faithfulness = ``knowledge``) with bracketed placeholders;
the files in ``strategies/prompts/summit/`` keep its words verbatim and turn each
placeholder into a named slot. What the paper leaves open is ours, in files too:

- ``[Format Instructions]`` (``summarizer_format.txt``, ``evaluator_format.txt``): a word
  limit for the summary; for the evaluator, the distribution, justification and
  one-suggestion-per-line form that ``summit_feedback`` parses.
- The evaluator's system prompt lists only the operations the run allows
  (``operations.txt``, the paper's five lines), so an ablation (Table 6) removes an
  operation from what the evaluator is told, not just from what is parsed.
- Document and summary slots are labelled ("Document:", "Summary:").
- The Refine turn continues the summarizer's conversation: system prompt, the Summarize
  turn with the document, the previous summary as the assistant's answer, then Refine with
  the suggestions. That is how the paper's system/user prompt pairs read as an OpenAI chat;
  only the latest summary is kept, so the conversation does not grow with iterations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from runner.api import ConfigError, Message
from strategies.prompting import load_prompt
from strategies.summit.feedback import OPERATIONS, Operation

FOLDER = "summit"
SETTINGS = ("quality", "topic", "knowledge")
_SUFFIX = {"quality": "", "topic": "_topic", "knowledge": "_knowledge"}


@dataclass(frozen=True)
class Prompts:
    """The filled-in pieces shared by every call about one document."""

    setting: str
    """'quality', 'topic' or 'knowledge' (Table 9's three settings)."""
    operations: tuple[str, ...]
    """The operations the evaluator may suggest."""
    words: int
    """Word limit written into the summarizer's format instructions."""
    summarizer_examples: str = ""
    """In-context document-summary pairs, rendered."""
    evaluator_examples: str = ""
    """In-context document-summary-explanation triplets, rendered."""

    def _file(self, name: str) -> str:
        return load_prompt(FOLDER, name)

    def summarizer_system(self) -> Message:
        """Table 8, the summarizer."""
        return Message("system", self._file("summarizer_system"))

    def evaluator_system(self) -> Message:
        """Table 8, the evaluator, listing only the allowed operations."""
        lines = [
            line.split("\t", 1) for line in self._file("operations").splitlines() if line.strip()
        ]
        listed = "\n".join(f"\t{text}" for kind, text in lines if kind in self.operations)
        return Message("system", self._file("evaluator_system").format(operations=listed))

    def summarize_turn(self, source: str, extra: str) -> Message:
        """Table 9 'Summarize:' for this setting."""
        template = self._file("summarize" + _SUFFIX[self.setting])
        return Message(
            "user",
            template.format(
                examples=self.summarizer_examples,
                document=f"Document:\n{source}",
                extra=extra,
                format=self._file("summarizer_format").format(words=self.words),
            ),
        )

    def summarizer_messages(self, source: str, extra: str) -> list[Message]:
        """The draft request: system prompt and the Summarize turn."""
        return [self.summarizer_system(), self.summarize_turn(source, extra)]

    def refine_messages(
        self,
        source: str,
        extra: str,
        previous: str,
        operations: tuple[Operation, ...],
        justification: str,
    ) -> list[Message]:
        """The summarizer's conversation continued with the evaluator's suggestions."""
        suggestions = "\n".join(op.render() for op in operations) or justification
        refine = self._file("refine").format(
            suggestions=suggestions, format=self._file("summarizer_format").format(words=self.words)
        )
        return [
            *self.summarizer_messages(source, extra),
            Message("assistant", previous),
            Message("user", refine),
        ]

    def evaluator_messages(self, source: str, summary: str, extra: str) -> list[Message]:
        """Table 9 'Evaluate:' for this setting, after the evaluator's system prompt."""
        template = self._file("evaluate" + _SUFFIX[self.setting])
        turn = template.format(
            examples=self.evaluator_examples,
            document=f"Document:\n{source}",
            summary=f"Summary:\n{summary}",
            extra=extra,
            format=self._file("evaluator_format"),
        )
        return [self.evaluator_system(), Message("user", turn)]

    def extraction(self, kind: str, source: str, topic: str, count: int) -> str:
        """The knowledge (triples) or topic (snippets) extraction prompt (ours)."""
        return self._file(f"extract_{kind}").format(document=source, topic=topic, count=count)


def check_operations(operations: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The allowed operations, validated (at least one; only the paper's five)."""
    chosen = tuple(str(o).lower() for o in operations)
    unknown = [o for o in chosen if o not in OPERATIONS]
    if unknown or not chosen:
        raise ConfigError(
            f"strategy.operations={list(operations)} must be a non-empty list drawn from "
            f"{list(OPERATIONS)}; e.g. strategy.operations=[remove,rephrase,simplify,keep]"
        )
    return chosen


def load_examples(in_context: str | None) -> tuple[str, str]:
    """(summarizer pairs, evaluator triplets) from the in-context examples' JSON file.

    The file is a list of ``{"document", "summary", "explanation"}`` objects; ('', '') when
    none is given.
    """
    if not in_context:
        return "", ""
    path = Path(in_context).expanduser()
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"strategy.in_context={in_context} is not a readable JSON file ({err}); fix the path"
        ) from err
    if not isinstance(items, list) or not all(
        isinstance(i, dict)
        and isinstance(i.get("document"), str)
        and isinstance(i.get("summary"), str)
        for i in items
    ):
        raise ConfigError(
            f"strategy.in_context={in_context} must be a JSON list of "
            '{"document": ..., "summary": ..., "explanation": ...} objects'
        )
    pairs = "".join(
        f"Example document:\n{i['document']}\nExample summary:\n{i['summary']}\n\n" for i in items
    )
    triplets = "".join(
        f"Example document:\n{i['document']}\nExample summary:\n{i['summary']}\n"
        f"Example evaluation:\n{i.get('explanation', '')}\n\n"
        for i in items
    )
    return pairs, triplets
