"""The real embedded judge (Qwen2.5-Coder-0.5B on CPU) on a three-sentence summary.

The tiny model may judge badly; this checks the pipeline: every sentence annotated or
counted as unparsed, accounting recorded, llama.cpp's prefix reuse visible, no crash.
"""

from __future__ import annotations

import math

import pytest

from metrics.booookscore import score

SUMMARY = (
    "Mara, a mapmaker, is hired to chart the flooded lowlands. "
    "She discovers that the old maps were falsified to hide a drowned village. "
    "She escapes the city and publishes the true map."
)


@pytest.mark.local_model
def test_local_judge_pipeline() -> None:
    from runner.llm.call_log import CallLog
    from runner.llm.gateway import Gateway, ModelSpec

    spec = ModelSpec(
        name="local", model="local/qwen2.5-coder-0.5b-instruct", n_ctx=8192, temperature=0.0
    )
    judge = Gateway(spec, CallLog(None), cache=None, seed=0, role="judge")
    assert judge.concurrency == 1
    result = score(None, SUMMARY, judge, max_attempts=2, max_tokens=64)
    v = result.values
    annotations = result.artifacts["annotations.json"]
    assert len(annotations) == 3 == v["sentences"]
    assert v["judged_sentences"] + v["unparsed_sentences"] == 3
    assert 3 <= v["judge_calls"] <= 6
    assert (v["unparsed_sentences"] > 0) == bool(result.notes)
    if v["judged_sentences"]:
        assert 0.0 <= v["score"] <= 100.0
    else:
        assert math.isnan(v["score"])
    # sentences after the first reuse the instructions+summary prefix from the KV cache
    assert v["judge_cached_prompt_tokens"] >= 1000 * (v["judge_calls"] - 1)
