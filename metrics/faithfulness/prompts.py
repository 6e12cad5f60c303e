"""The raters' prompts, read once per job from a folder (the package's own by default).

Each method's files, copied verbatim from the releases (``prompts/faithfulness/SOURCE.md``
says where from and under which licence):

- ``system.txt``: StorySumm's system prompt, sent as the system message of ``binary`` and
  ``cot`` (as the release's Claude branch sends it);
- ``binary.txt``: ``Story:``/``Summary:`` then the question and the answer-tags line, one
  user message (slots ``{story}``, ``{summary}``);
- ``cot.txt``: the same start, then the request for reasoning; ``cot_followup.txt``: the
  follow-up question with the answer-tags line, sent after the judge's reasoning in the
  same conversation;
- ``claims_instruction.txt``: FABLES' instruction (the release's ``firstpart``), the first
  user message; ``claims.txt``: ``Context:``/``Statement:``/``Question:`` with slots
  ``{story}`` then ``{claim}``.

``metrics.faithfulness.prompt_dir`` swaps the folder: a researcher's folder with the same
file names and slots. The claims message is cut after ``{story}`` into a cached prefix (the
instruction and the source, identical for every claim of a summary) and the claim's part:
the one departure from the release's two messages, made so a provider's prompt cache and
the embedded model's KV cache reuse the source across claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.api import Message
from runner.api.slots import SlotTemplate, load_slots

FOLDER = Path(__file__).parent / "prompts" / "faithfulness"
KEY = "metrics.faithfulness.prompt_dir"
FILES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "binary": (("system.txt", ()), ("binary.txt", ("story", "summary"))),
    "cot": (("system.txt", ()), ("cot.txt", ("story", "summary")), ("cot_followup.txt", ())),
    "claims": (("claims_instruction.txt", ()), ("claims.txt", ("story", "claim"))),
}
"""Each method's files and the slots each must have."""


@dataclass(frozen=True)
class Prompts:
    """One method's templates, checked."""

    templates: dict[str, SlotTemplate]

    def text(self, name: str) -> str:
        """A file without slots, as sent."""
        return self.templates[name].fill({})

    def binary(self, story: str, summary: str) -> list[Message]:
        """The just-question rater's request."""
        question = self.templates["binary.txt"].fill({"story": story, "summary": summary})
        return [Message("system", self.text("system.txt")), Message("user", question)]

    def cot_reasoning(self, story: str, summary: str) -> list[Message]:
        """The CoT rater's first request: reasoning about the summary."""
        ask = self.templates["cot.txt"].fill({"story": story, "summary": summary})
        return [Message("system", self.text("system.txt")), Message("user", ask, cache=True)]

    def cot_answer(self, first: list[Message], reasoning: str) -> list[Message]:
        """The second request: the same conversation, the judge's reasoning, the question."""
        follow = Message("user", self.text("cot_followup.txt"))
        return [*first, Message("assistant", reasoning), follow]

    def claim(self, story: str, claim: str) -> list[Message]:
        """One claim's request: instruction and source first (cached), the claim last."""
        instruction = Message("user", self.text("claims_instruction.txt"))
        parts = self.templates["claims.txt"].messages({"story": story, "claim": claim}, ("story",))
        return [instruction, *parts]

    def fixed_text(self) -> str:
        """Every file with its slots empty: the prompt's own length."""
        return "\n".join(t.fill(dict.fromkeys(t.slots, "")) for t in self.templates.values())


def load(method: str, folder: str | None) -> Prompts:
    """The method's files from ``folder`` (None: the package's), each checked once."""
    root = Path(folder).expanduser() if folder else FOLDER
    templates = {}
    for name, slots in FILES[method]:
        default = FOLDER / name
        path = str(root / name) if folder else None
        templates[name] = load_slots(path, default, f"{KEY} file {name}", required=slots)
    return Prompts(templates)
