"""The faithfulness metric's ``estimate`` hook: the judge's calls to rate one summary.

``binary`` makes one call, ``cot`` two (reasoning, then the answer), ``claims`` one per
claim: exactly ``len(extras["claims"])`` when the data gives the claims, else one
extraction call and a guessed number of claims (the summary's tokens over a guessed claim
length, the ``Guide`` gives its bounds). Claims run ``judge.concurrency`` at a time, so
their rounds are ``ceil(claims / concurrency)``.

Every call carries the source: its tokens are counted from the document the hook is given
(the data's story or book); only when the data gives no source is its length a named guess
(a StorySumm story, ~640 words). A source longer than the judge's window is counted whole
for each claim, an upper bound: the metric sends each claim only the passages retrieved
for it, up to the window.
"""

from __future__ import annotations

import math
from typing import Any

from metrics import CLAIMS_PROMPT
from metrics.faithfulness.claims import CLAIM_PURPOSE, EXTRACT_PURPOSE, EXTRACT_TOKENS
from metrics.faithfulness.label import ANSWER_PURPOSE, BINARY_PURPOSE, REASON_PURPOSE
from metrics.faithfulness.prompts import load
from runner.api import Guide, MetricEstimateInput, Phase, count_tokens

SOURCE_TOKENS = (850.0, 400.0, 2000.0)
"""Guess (point, cheap, dear): a StorySumm story is ~640 words, ~850 tokens (its stories run
from about half to twice that). A book's claims each carry up to the judge's window."""
CLAIM_TOKENS = (15.0, 30.0, 8.0)
"""Guess (point, cheap, dear): an atomic claim is ~15 tokens (fewer tokens, more claims)."""
ANSWER_TOKENS = 5.0
"""Guess: 'Yes', 'True' or '<answer>No</answer>' is a few tokens."""
REASONING_TOKENS = 80.0
"""Guess: 'a couple sentences of reasoning'."""


def estimate(inputs: MetricEstimateInput) -> list[Phase]:
    """The judge's calls for one summary (given, or of ``expected`` tokens)."""
    params, summary, judge = inputs.params, inputs.summary, inputs.roles["judge"]
    method, max_tokens = params["method"], params["max_tokens"]
    document, expected = inputs.document, inputs.expected
    if document is not None:
        source = float(count_tokens(document.text))
    else:
        source = judge.pick("source tokens", *SOURCE_TOKENS, "guess: a ~640-word story")
    said = count_tokens(summary) if summary is not None else expected
    fixed = float(count_tokens(load(method, params["prompt_dir"]).fixed_text()))
    answer = judge.completion(
        CLAIM_PURPOSE if method == "claims" else BINARY_PURPOSE,
        ANSWER_TOKENS,
        f"an answer is ~{ANSWER_TOKENS:.0f} tokens",
        cap=max_tokens,
    )
    if method == "binary":
        return [_phase(judge, BINARY_PURPOSE, 1, fixed + source + said, answer, 1)]
    if method == "cot":
        reasoning = judge.completion(
            REASON_PURPOSE,
            REASONING_TOKENS,
            "a couple of sentences",
            cap=params["reasoning_tokens"],
        )
        first = fixed + source + said
        return [
            _phase(judge, REASON_PURPOSE, 1, first, reasoning, 1),
            _phase(judge, ANSWER_PURPOSE, 1, first + reasoning, answer, 1),
        ]
    return _claims(summary, said, judge, fixed + source, answer, dict(inputs.extras))


def _claims(
    summary: str | None,
    said: float,
    judge: Guide,
    shared: float,
    answer: float,
    extras: dict[str, Any],
) -> list[Phase]:
    """One call per claim (the data's, or the extraction call and a guessed count)."""
    phases = []
    if "claims" in extras:
        claims = [str(c) for c in extras["claims"]]
        count, words = float(len(claims)), float(sum(count_tokens(c) for c in claims))
    else:
        size = judge.pick("tokens per claim", *CLAIM_TOKENS, "guess: an atomic claim ~15 tokens")
        count = max(1.0, round(said / size))
        words = said
        listed = judge.completion(EXTRACT_PURPOSE, said * 1.2, "", cap=EXTRACT_TOKENS)
        asked = count_tokens(CLAIMS_PROMPT.read_text(encoding="utf-8")) + said
        phases.append(_phase(judge, EXTRACT_PURPOSE, 1, asked, listed, 1))
    if count:
        rounds = math.ceil(count / max(1, judge.concurrency))
        prompts = count * shared + words
        phases.append(_phase(judge, CLAIM_PURPOSE, count, prompts, answer * count, rounds))
    return phases


def _phase(
    judge: Guide, purpose: str, calls: float, prompts: float, answers: float, rounds: float
) -> Phase:
    """``calls`` alike calls with their re-sent share (``judge.retries``)."""
    retry = 1 + judge.retries(purpose)
    return Phase("judge", purpose, calls * retry, prompts * retry, answers * retry, rounds * retry)
