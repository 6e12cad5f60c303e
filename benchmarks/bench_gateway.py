"""Gateway overhead and embedded-model throughput, measured in one run.

1. Overhead per call against a zero-latency loopback OpenAI-compatible server:
   median wall time of ``Gateway.complete`` (cache off, distinct prompts) minus the
   median raw HTTP round trip (httpx POST of the same JSON on a kept-alive connection).
   Also shown: plain ``litellm.completion`` minus raw, to separate litellm's share from
   the gateway's own (cache key, limiter, accounting, calls.jsonl). Target: <= 2 ms.
2. Embedded model: prompt and generation tokens/s through the gateway next to
   llama-cpp-python called directly on the same GGUF with the same settings.
   Target: ratio >= 0.9.

Usage: python benchmarks/bench_gateway.py [--calls 200] [--skip-local] [--quick]

``--quick``: 20 calls; part 2's set-up is checked without running the model (a short call
on a small CPU takes many seconds, part 2 runs eight): the gateway for the
embedded model, the weights, llama_cpp's ``Llama``; seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# After the environment and sys.path settings above: litellm reads
# LITELLM_LOCAL_MODEL_COST_MAP at import, and runner/tests import from this checkout.
import httpx  # noqa: E402
import litellm  # noqa: E402

from runner.llm.call_log import CallLog  # noqa: E402
from runner.llm.gateway import Gateway, ModelSpec  # noqa: E402
from runner.llm.local import model as local_model  # noqa: E402
from runner.llm.retry import RetryPolicy  # noqa: E402
from tests.helpers.fake_server import FakeOpenAIServer  # noqa: E402


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def body(i: int) -> dict[str, Any]:
    """The i-th request, distinct so that nothing along the way can reuse an answer."""
    return {
        "model": "fake",
        "messages": [{"role": "user", "content": f"prompt number {i}"}],
        "temperature": 0.5,
        "max_tokens": 16,
    }


def bench_overhead(calls: int) -> None:
    with FakeOpenAIServer(lambda r: "A short answer.") as server:
        raw: list[float] = []
        with httpx.Client() as client:
            for i in range(calls):
                start = time.perf_counter()
                client.post(f"{server.url}/chat/completions", json=body(i)).raise_for_status()
                raw.append(time.perf_counter() - start)
        plain: list[float] = []
        for i in range(calls):
            start = time.perf_counter()
            litellm.completion(
                model="openai/fake",
                api_base=server.url,
                api_key="x",
                messages=body(i)["messages"],
                temperature=0.5,
                max_tokens=16,
            )
            plain.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as tmp:
            spec = ModelSpec(
                name="fake",
                model="openai/fake",
                api_base=server.url,
                context_window=8192,
                temperature=0.5,
                retry=RetryPolicy(max_attempts=1),
            )
            gateway = Gateway(spec, CallLog(Path(tmp) / "calls.jsonl"), cache=None)
            via: list[float] = []
            for i in range(calls):
                start = time.perf_counter()
                gateway.complete(f"gateway prompt number {i}", max_tokens=16)
                via.append(time.perf_counter() - start)
    r, p, g = _median_ms(raw), _median_ms(plain), _median_ms(via)
    print(f"overhead per call, median of {calls} calls to a zero-latency loopback server")
    print(f"  raw HTTP round trip (httpx, keep-alive)   {r:8.2f} ms")
    print(f"  litellm.completion                         {p:8.2f} ms   (+{p - r:.2f} ms over raw)")
    print(f"  Gateway.complete                           {g:8.2f} ms   (+{g - r:.2f} ms over raw)")
    print(f"  gateway's own share (gateway - litellm)    {g - p:8.2f} ms")
    print(f"  target: gateway - raw <= 2 ms -> {'met' if g - r <= 2 else 'NOT met'}")


LONG_PROMPT = " ".join(
    f"Line {i}: the keeper climbed the stairs, trimmed the wick and wrote the weather in the "
    "ledger."
    for i in range(60)
)
GEN_PROMPT = "Count from 1 to 400, separated by commas, with no other text."


def _direct_timings(llama: object, prompt: str, max_tokens: int) -> tuple[float, float, int, int]:
    """(prompt seconds, generation seconds, prompt tokens, generated tokens) from llama.cpp."""
    import llama_cpp

    llama.reset()  # type: ignore[attr-defined]
    llama_cpp.llama_perf_context_reset(llama.ctx)  # type: ignore[attr-defined]
    out = llama.create_chat_completion(  # type: ignore[attr-defined]
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0.0,
        seed=0,
    )
    perf = llama_cpp.llama_perf_context(llama.ctx)  # type: ignore[attr-defined]
    return (
        perf.t_p_eval_ms / 1000,
        perf.t_eval_ms / 1000,
        perf.n_p_eval,
        out["usage"]["completion_tokens"],
    )


LOCAL = ModelSpec(
    name="local", model="local/qwen2.5-coder-0.5b-instruct", n_ctx=4096, temperature=0.0
)
"""The embedded model, as part 2 calls it through the gateway."""


def check_local_setup() -> None:
    """Quick mode's part 2: what it needs, without running the model."""
    from llama_cpp import Llama, __version__

    gateway = Gateway(LOCAL, CallLog(None), cache=None, seed=0)
    path = local_model.default_gguf_path()
    print(
        f"\nembedded model (quick): set-up checked, model not run: gateway for "
        f"{gateway.spec.model}; weights {path.name}; llama_cpp {__version__} ({Llama.__name__})"
    )


def bench_local(repeats: int) -> None:
    from llama_cpp import Llama

    path = local_model.default_gguf_path()
    threads = os.cpu_count() or 1
    gateway = Gateway(LOCAL, CallLog(None), cache=None, seed=0)
    gw_prompt, gw_gen, raw_prompt, raw_gen = [], [], [], []
    for i in range(repeats):
        # Distinct first words defeat KV-prefix reuse, so each prompt is evaluated in full.
        start = time.perf_counter()
        out = gateway.complete(f"Run {i}. {LONG_PROMPT}\nSay OK.", max_tokens=1)
        gw_prompt.append(out.prompt_tokens / (time.perf_counter() - start))
        start = time.perf_counter()
        out = gateway.complete(f"Run {i}. {GEN_PROMPT}", max_tokens=256)
        gw_gen.append(out.completion_tokens / (time.perf_counter() - start))
    local_model.PROVIDER.close()
    llama = Llama(
        model_path=str(path),
        n_ctx=4096,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
        seed=0,
    )
    for i in range(repeats):
        t_p, _, n_p, _ = _direct_timings(llama, f"Run {i}. {LONG_PROMPT}\nSay OK.", 1)
        raw_prompt.append(n_p / t_p)
        t_p, t_g, _, n_g = _direct_timings(llama, f"Run {i}. {GEN_PROMPT}", 256)
        raw_gen.append(n_g / (t_p + t_g))
    llama.close()
    gp, gg = statistics.median(gw_prompt), statistics.median(gw_gen)
    rp, rg = statistics.median(raw_prompt), statistics.median(raw_gen)
    print(f"\nembedded model ({path.name}, {threads} threads), median of {repeats} runs")
    print(
        "  gateway numbers are end-to-end wall time; llama-cpp-python's are its own perf counters"
    )
    print(
        f"  prompt tokens/s      gateway {gp:8.1f}   llama-cpp-python {rp:8.1f}   "
        f"ratio {gp / rp:.2f}"
    )
    print(
        f"  generation tokens/s  gateway {gg:8.1f}   llama-cpp-python {rg:8.1f}   "
        f"ratio {gg / rg:.2f}"
    )
    print(f"  target: ratio >= 0.9 -> {'met' if min(gp / rp, gg / rg) >= 0.9 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--quick", action="store_true", help="20 calls; part 2 not run")
    args = parser.parse_args()
    if args.quick:
        bench_overhead(20)
        if not args.skip_local:
            check_local_setup()
        return
    bench_overhead(args.calls)
    if not args.skip_local:
        bench_local(args.repeats)


if __name__ == "__main__":
    main()
