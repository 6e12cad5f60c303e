"""Loopback models that answer every prompt the docs' commands send, for executed doc blocks.

``tests/docs/test_doc_blocks.py`` runs the docs' marked blocks against these two servers
(``FakeOpenAIServer`` and ``FakeAnthropicServer``), so a block like ``python -m runner
model=claude`` runs its real path (Hydra, litellm, HTTP, MLflow) without the internet. The
answers are plausible enough for every built-in strategy and metric to finish and report a
score: a short summary that names the story's people, BooookScore verdicts (one
sentence per summary flagged, so a score is not always 100), G-Eval digits (with log-probabilities
on the OpenAI server), the article metrics' JSON, SummIt's evaluator form. Each answer is a
function of the request alone, so a retried or cached request gets the same answer.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from runner.api.text import count_tokens
from tests.helpers.anthropic_server import FakeAnthropicServer, text_of
from tests.helpers.fake_server import FakeOpenAIServer, FakeReply

FAKE_OPENAI_KEY = "fake-openai-key-for-doc-tests"
"""Not a secret: the loopback servers accept any key. No provider's key shape (no 'sk-')."""
FAKE_ANTHROPIC_KEY = "fake-anthropic-key-for-doc-tests"
"""Likewise for the Anthropic server."""

ERROR_TYPES = ("entity omission", "event omission", "causal omission", "salience")
"""BooookScore labels the fake judge uses when it flags a sentence."""


def digest(text: str) -> int:
    """A stable number from ``text`` (same request, same answer)."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def names_in(text: str) -> list[str]:
    """Capitalized words of ``text`` that are not sentence openers, most frequent first."""
    counts: dict[str, int] = {}
    for word in re.findall(r"(?<=[a-z,;] )[A-Z][a-z]{2,}", text):
        counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))


VERBS = (
    "keeps watch",
    "writes a letter",
    "crosses the river",
    "finds the ledger",
    "mends the nets",
    "argues with the mayor",
    "leaves for the city",
    "counts the debts",
)
PLACES = (
    "at dawn",
    "before the storm",
    "in the old house",
    "after the long winter",
    "on the night train",
    "by the harbour wall",
    "during the fair",
    "under a grey sky",
)


@functools.lru_cache(maxsize=1024)
def summary_of(text: str, max_tokens: int) -> str:
    """Three to five short sentences about the text's people, within ``max_tokens``; no verb
    or place twice, so a summary repeats few trigrams."""
    names = names_in(text) or ["The narrator"]
    seed = digest(text)
    out: list[str] = []
    for i in range(3 + seed % 3):
        verb, place = VERBS[(seed + 3 * i) % 8], PLACES[(seed // 8 + 5 * i) % 8]
        candidate = f"{names[(seed + i) % len(names)]} {verb} {place}."
        if out and count_tokens(" ".join([*out, candidate])) > max_tokens:
            break
        out.append(candidate)
    return " ".join(out)


def flagged(summary: str, sentence: str) -> bool:
    """Whether the fake judge finds ``sentence`` confusing: the summary's second sentence
    (one per summary of two or more, so a score is neither always 100 nor 'a constant
    answer'); a sentence it cannot place, about one in five."""
    parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+", summary.strip()) if p.strip()]
    if sentence.strip() in parts:
        return len(parts) > 1 and parts.index(sentence.strip()) == 1
    return digest(sentence) % 5 == 0


def verdict(summary: str, sentence: str) -> str:
    """BooookScore's per-sentence answer in the paper's form."""
    if not flagged(summary, sentence):
        return "Questions: no confusion\nTypes: no confusion"
    return f"Questions: Who is meant here?\nTypes: {ERROR_TYPES[digest(sentence) % 4]}"


def numbered(block: str) -> list[tuple[int, str]]:
    """The '1. sentence' lines of a prompt's block."""
    found = re.findall(r"^\s*(\d+)[.)]\s+(.*\S)\s*$", block, flags=re.MULTILINE)
    return [(int(n), s) for n, s in found]


def between(text: str, start: str, end: str) -> str:
    """The text after the last ``start`` and before the next ``end`` (or the end)."""
    tail = text.rsplit(start, 1)[-1]
    return tail.split(end, 1)[0] if end in tail else tail


def sentences_of(text: str) -> list[str]:
    """Sentence-like pieces of ``text`` (for claims)."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if len(s.split()) > 2]


@dataclass(frozen=True)
class Prompt:
    """A request as both servers see it: the system text, every message's text, the last."""

    system: str
    texts: list[str]
    max_tokens: int

    @property
    def last(self) -> str:
        return self.texts[-1] if self.texts else ""

    @property
    def everything(self) -> str:
        return "\n".join([self.system, *self.texts])


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def answer(prompt: Prompt, assistant_turns: list[str]) -> str:
    """The answer to one request, by the kind of prompt it is (a summary otherwise)."""
    last, everything = prompt.last, prompt.everything
    summary = between(everything, "[Your summary]", "[Your sentence").strip()
    if "[Your sentences]" in last:  # BooookScore, batch_size > 1: a JSON list
        listing = between(last, "[Your sentences]", "[Your response]")
        items = []
        for n, sentence in numbered(listing):
            confused = flagged(summary, sentence)
            items.append(
                {
                    "sentence_num": n,
                    "sentence": sentence,
                    "questions": "Who is meant here?" if confused else None,
                    "types": [ERROR_TYPES[digest(sentence) % 4]] if confused else None,
                }
            )
        return _json(items)
    if "[Your sentence]" in last:
        return verdict(summary, between(last, "[Your sentence]", "[Your response]").strip())
    if prompt.system.startswith("You are a summary evaluator") or everything.startswith(
        "You are a summary evaluator"
    ):
        return summit_evaluation(last.rsplit("Summary:\n", 1)[-1])
    if last.startswith("Refine:") and assistant_turns:
        previous = assistant_turns[-1]
        return previous + (" A storm came." if "storm" not in previous else " All ends well.")
    if "Your task is to edit the book summary" in last:  # postprocess: the summary unchanged
        return last.split("---\n", 1)[1].rsplit("\n---", 1)[0] if "---\n" in last else last
    target = re.search(r"condense it to less than (\d+) words", last)
    if target:  # a shorter summary, whole sentences under the word target
        kept: list[str] = []
        for sentence in sentences_of(summary_of(last, 200)):
            if len(" ".join([*kept, sentence]).split()) >= int(target.group(1)):
                break
            kept.append(sentence)
        return " ".join(kept) or "It ends."
    return json_answer(prompt) or geval_answer(prompt) or other_answer(prompt)


def json_answer(prompt: Prompt) -> str | None:
    """The article metrics' and the claim raters' JSON answers, None for other prompts."""
    last = prompt.last
    if "extract a comprehensive list of the factual claims" in prompt.everything:
        text = between(last, "Text:\n", "\nJSON:") if "Text:\n" in last else last
        return _json({"claims": sentences_of(text)[:6] or [text.strip()[:200]]})
    if "'verdict' ('yes', 'no' or 'idk')" in prompt.everything:
        return _json({"verdict": "yes", "reason": "The source says so."})
    if '"score": 1 or 0' in prompt.everything:
        return _json({"reason": "No point is repeated.", "score": 1})
    if '"is_vague": true or false' in prompt.everything:
        listing = numbered(between(last, "INPUT:", "OUTPUT:"))
        rows = [
            {"sentence_id": n, "is_vague": digest(s) % 5 == 0, "reason": "specific"}
            for n, s in listing
        ]
        return _json({"sentences": rows})
    if "'questions', which is a list" in prompt.everything:
        names = names_in(last) or ["the narrator"]
        questions = [
            {
                "question": f"What does {name} do?",
                "answer": f"{name} acts.",
                "importance": 3 + i % 3,
            }
            for i, name in enumerate(names[:4])
        ]
        return _json({"questions": questions})
    if "with the key 'answer'" in prompt.everything:
        return _json({"answer": "idk" if digest(last) % 3 == 0 else "They act."})
    if "'summary_answer'" in prompt.everything:
        return _json({"score": 0 if '"idk"' in last else 4, "reason": "Close to the original."})
    return None


def geval_answer(prompt: Prompt) -> str | None:
    """G-Eval: evaluation steps, or a score digit for a form ending in '- <label>:'."""
    text = prompt.last.rstrip()
    if text.endswith("Evaluation Steps:"):
        return "1. Read the source.\n2. Read the summary.\n3. Rate it on the scale."
    if re.search(r"\n- [^\n]+:$", text):
        best = 3 if "(1-3)" in text.rsplit("\n- ", 1)[1] else 4  # fluency's scale is 1-3
        return str(best - digest(prompt.everything) % 2)
    return None


def other_answer(prompt: Prompt) -> str:
    """The faithfulness raters' words, or a short summary of the prompt."""
    last = prompt.last
    if "<answer></answer>" in last:
        return "<answer>Yes</answer>"
    if "is the above statement True or False?" in last:
        return "True" if digest(last) % 5 else "False"
    if "provide a couple sentences of reasoning" in last:
        return "Every detail of the summary is in the story. It is consistent."
    return summary_of(prompt.everything, max(20, int(prompt.max_tokens * 0.6)))


def summit_evaluation(summary: str) -> str:
    """SummIt's evaluator: two rounds of suggestions, then <STOP>."""

    def scores(best: int) -> str:
        return "Scores: " + ", ".join(f"{k}: {int(k == best)}" for k in range(1, 6))

    if "All ends well" in summary:
        return "Scores: 1: 0, 2: 0, 3: 0, 4: 0.5, 5: 0.5\nJustification: good now.\n<STOP>"
    if "storm" in summary:
        return f"{scores(3)}\nJustification: thin.\nSuggestions:\n- Add the information of the end"
    return f"{scores(2)}\nJustification: vague.\nSuggestions:\n- Add the information of the storm"


def openai_responder(request: dict[str, Any]) -> str | FakeReply:
    """FakeOpenAIServer's responder: the answer, with log-probabilities when asked for."""
    messages = request.get("messages") or []
    texts = [" ".join(text_of(m.get("content"))) for m in messages]
    system = texts[0] if messages and messages[0].get("role") == "system" else ""
    turns = [t for m, t in zip(messages, texts, strict=True) if m.get("role") == "assistant"]
    max_tokens = int(request.get("max_tokens") or request.get("max_completion_tokens") or 512)
    text = answer(Prompt(system, texts, max_tokens), turns)
    if request.get("logprobs") and text.isdigit():
        best = int(text)
        alternatives = {str(best): math.log(0.7), str(max(1, best - 1)): math.log(0.3)}
        return FakeReply(text, top_logprobs=[alternatives])
    return text


def anthropic_responder(params: dict[str, Any]) -> str:
    """FakeAnthropicServer's responder (a top-level ``system``, content blocks)."""
    messages = params.get("messages") or []
    texts = [" ".join(text_of(m.get("content"))) for m in messages]
    system = " ".join(text_of(params.get("system")))
    turns = [t for m, t in zip(messages, texts, strict=True) if m.get("role") == "assistant"]
    return answer(Prompt(system, texts, int(params.get("max_tokens") or 512)), turns)


@dataclass(frozen=True)
class Loopback:
    """The two running servers and the environment that points a command at them."""

    openai: FakeOpenAIServer
    anthropic: FakeAnthropicServer

    def env(self) -> dict[str, str]:
        """Fake keys and both base-URL spellings each client reads (litellm, the SDKs)."""
        return {
            "OPENAI_API_KEY": FAKE_OPENAI_KEY,
            "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY,
            "OPENAI_BASE_URL": self.openai.url,
            "OPENAI_API_BASE": self.openai.url,
            "ANTHROPIC_BASE_URL": self.anthropic.url,
            "ANTHROPIC_API_BASE": self.anthropic.url,
        }


@contextmanager
def loopback_models() -> Iterator[Loopback]:
    """Both servers, running for the ``with`` block."""
    with ExitStack() as stack:
        openai = stack.enter_context(FakeOpenAIServer(openai_responder))
        anthropic = stack.enter_context(FakeAnthropicServer(anthropic_responder))
        yield Loopback(openai, anthropic)
