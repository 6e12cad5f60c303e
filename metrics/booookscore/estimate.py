"""BooookScore's ``estimate`` hook: the judge's calls to score one summary.

One call per distinct sentence (``batch_size`` sentences per call when batched; ``judge.py``),
built from the template ``setup`` reads: exact for a summary the data gives (split with the
project's sentence splitter, as the metric does, and each first ask looked up in the
response cache), expected from the summary's estimated length otherwise, at a guessed
sentence length between two bounds.
"""

from __future__ import annotations

import math

from metrics.booookscore.judge import PURPOSE, STOP
from metrics.booookscore.prompt import (
    BATCH_PROMPT,
    SENTENCE_PROMPT,
    Template,
    load_template,
    numbered,
)
from runner.api import Guide, Message, MetricEstimateInput, Phase, count_tokens, split_sentences

KEY = "metrics.booookscore."
"""Where its parameters are set (named in an error about a prompt file)."""
ANSWER_TOKENS = 30.0
"""Guess: a verdict ('Questions: ... Types: ...') is about 30 tokens."""
SENTENCE_TOKENS = 25.0
"""Guess: a summary sentence is about 25 tokens (for summaries not made yet)."""
SENTENCE_BOUNDS = (8.0, 60.0)
"""A summary sentence's plausible lengths (its dear and cheap ends: shorter sentences, more
judge asks): 'The mill burned in the spring.' is 8 tokens; a long compound sentence of a
book summary ~60."""


def estimate(inputs: MetricEstimateInput) -> list[Phase]:
    """The judge's calls for one summary: given (exact count) or of ``expected`` tokens."""
    params, summary, expected = inputs.params, inputs.summary, inputs.expected
    judge = inputs.roles["judge"]
    batch_size, max_attempts = params["batch_size"], params["max_attempts"]
    prompt_path, batch_prompt_path = params["prompt_path"], params["batch_prompt_path"]
    max_tokens = params["max_tokens"]
    batch = max(1, int(batch_size))
    if batch > 1:
        template = load_template(batch_prompt_path, BATCH_PROMPT, KEY + "batch_prompt_path")
    else:
        template = load_template(prompt_path, SENTENCE_PROMPT, KEY + "prompt_path")
    attempts, cap = int(max_attempts), int(max_tokens)
    answer = judge.completion(
        PURPOSE, ANSWER_TOKENS, f"a verdict is ~{ANSWER_TOKENS:.0f} tokens", cap=cap * batch
    )
    if summary is not None:
        sentences = list(dict.fromkeys(split_sentences(summary)))
        groups = [sentences[i : i + batch] for i in range(0, len(sentences), batch)]
        groups = [g for g in groups if not _cached(template, summary, g, batch, cap, judge)]
        shared = count_tokens(f"{template.head}{summary}")
        asks = [count_tokens(_messages(template, summary, g, batch)[1].content) for g in groups]
        units, prompts = float(len(groups)), float(sum(shared + a for a in asks))
        answers = sum(answer * len(group) for group in groups)
    else:
        dear, cheap = SENTENCE_BOUNDS
        text = f"guess ~{SENTENCE_TOKENS:.0f} tokens (bounds: {dear:.0f}-{cheap:.0f}), one ask each"
        sentence = judge.pick("summary sentences", SENTENCE_TOKENS, cheap, dear, text)
        count = max(1.0, round(expected / sentence))
        units = float(math.ceil(count / batch))
        literal = count_tokens(f"{template.middle}{template.tail}")
        per = literal + expected / count * min(batch, count)
        prompts = units * (count_tokens(template.head) + expected + per)
        answers = answer * count
    retry = judge.retries(PURPOSE)
    conc = judge.concurrency
    rounds = units if conc <= 1 else 1 + math.ceil(max(0.0, units - 1) / conc)
    return [
        Phase(
            "judge",
            PURPOSE,
            units * (1 + retry),
            prompts * (1 + retry),
            answers * (1 + retry),
            rounds * (1 + retry),
            f"{units * attempts:.0f} if every answer were re-asked (max_attempts={attempts})",
        )
    ]


def _messages(template: Template, summary: str, group: list[str], batch: int) -> list[Message]:
    """The first ask about ``group``, as the judge sends it."""
    return template.messages(summary, group[0] if batch <= 1 else numbered(group))


def _cached(
    template: Template, summary: str, group: list[str], batch: int, cap: int, judge: Guide
) -> bool:
    """Whether the cache answers the first ask about ``group`` (as the judge sends it)."""
    messages = _messages(template, summary, group, batch)
    if batch <= 1:
        return judge.cached(messages, cap, STOP)
    return judge.cached(messages, cap * len(group))
