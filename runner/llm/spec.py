"""A model as configured in ``conf/model/*.yaml``: plain data, importable without litellm.

Kept apart from the gateway so that validating a config (``runner/config/run_config.py``) and
printing ``--help`` never pay litellm's import.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.llm.retry import RetryPolicy
from runner.ranges import Range, valid

LOCAL_PREFIX = "local/"
"""The embedded llama.cpp model (``runner/llm/local/model.py``)."""
SCRIPTED_PREFIX = "scripted/"
"""A scripted in-process model for tests (``runner/llm/scripted.py``)."""
LOCAL_EMBED_PREFIX = "local-embed/"
"""The embedded sentence embedder (``runner/llm/local/embedder.py``), for the ``embedder`` role."""
SCRIPTED_WINDOW = 8192
"""The context window of a scripted model (it has none of its own)."""

NARROWER_RANGES: dict[str, tuple[str, dict[str, Range]]] = {
    "claude": ("Anthropic's models", {"temperature": Range(0, 1, 1)}),
}
"""Ranges a provider narrows, by a word of its model strings (``anthropic/claude-...``,
``bedrock/anthropic.claude-...``): Anthropic's API takes temperature 0..1, OpenAI's 0..2."""


def narrower_ranges(model: str) -> tuple[str, dict[str, Range]]:
    """(whose ranges, {key: range}) that ``model``'s provider narrows; ("", {}) for none."""
    for word, ranges in NARROWER_RANGES.items():
        if word in model.lower():
            return ranges
    return "", {}


LIMIT = valid(Range(1, example=500, null="no limit"))
"""A provider's limit per minute: a positive whole number, or null for none."""
RATE_KEYS = ("rpm", "tpm", "input_tpm", "output_tpm")
"""The provider limits a sweep shares per endpoint: how fast calls are sent, not what they ask."""


@dataclass(frozen=True)
class ModelSpec:
    """A model as configured in ``conf/model/*.yaml``."""

    name: str
    """The config alias ('local', 'claude', ...), used in messages and run names."""
    model: str
    """litellm model string: 'anthropic/...', 'openai/...', or 'local/<name>'."""
    api_base: str | None = None
    """OpenAI-compatible server URL (vLLM, Ollama, llama.cpp server)."""
    api_key_env: str | None = None
    """Environment variable holding the key; the key itself never enters config or logs."""
    temperature: float | None = field(default=None, metadata=valid(Range(0, 2, 0.5)))
    """Default sampling temperature (the paper: 0.5; Claude 1.0)."""
    top_p: float | None = field(default=None, metadata=valid(Range(0, 1, 1.0)))
    """Nucleus sampling; the paper uses p=1."""
    max_tokens: int | None = field(default=None, metadata=valid(Range(1, example=2048)))
    """Default cap on generated tokens when the caller gives none."""
    context_window: int | None = field(default=None, metadata=valid(Range(1, example=8192)))
    """Input window in tokens; null = litellm's model info (or n_ctx for local)."""
    input_cost_per_token: float | None = field(default=None, metadata=valid(Range(0, example=0)))
    """USD price override for models litellm does not map."""
    output_cost_per_token: float | None = field(default=None, metadata=valid(Range(0, example=0)))
    """USD price override for generated tokens."""
    concurrency: int = field(default=8, metadata=valid(Range(1, example=8)))
    """Calls in flight at once to this endpoint (model + api_base) within a job."""
    rpm: int | None = field(default=None, metadata=LIMIT)
    """Requests per minute this endpoint allows (the provider's tier limit; null = unlimited),
    shared by every job of a sweep on one machine, and by a Ray sweep's workers
    (``runner/llm/rate.py``)."""
    tpm: int | None = field(default=None, metadata=LIMIT)
    """Tokens per minute, prompt and completion together (OpenAI's TPM; null = unlimited)."""
    input_tpm: int | None = field(default=None, metadata=LIMIT)
    """Prompt tokens per minute, where a provider limits them apart (Anthropic's ITPM)."""
    output_tpm: int | None = field(default=None, metadata=LIMIT)
    """Completion tokens per minute, where a provider limits them apart (Anthropic's OTPM)."""
    timeout_s: float = field(default=600.0, metadata=valid(Range(0, example=600, above=True)))
    """Seconds one attempt may take; a slower attempt fails and is retried (``retry``)."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """Retry policy for transient failures."""
    path: str | None = None
    """Local only: GGUF file (null = the bundled Qwen2.5-Coder-0.5B-Instruct)."""
    n_ctx: int = field(default=8192, metadata=valid(Range(1, example=8192)))
    """Local only: llama.cpp context size."""
    n_threads: int | None = field(default=None, metadata=valid(Range(1, example=2)))
    """Local only: CPU threads (null = the cores this process may run on)."""
    repeat_penalty: float | None = field(
        default=None, metadata=valid(Range(0, example=1.1, above=True))
    )
    """Local only: llama.cpp's penalty on tokens repeated within the last 64 (1.1 is its
    command line's default; null = none). Small models otherwise loop at temperature 0."""
    stop_on_repeated_sentence: bool = False
    """Local only: end an answer at its first sentence that mostly repeats what it already
    said, cut before it (``runner/llm/local/stops.py``); llama.cpp's repeat penalty looks back
    64 tokens only."""
    stop_on_copied_sentence: bool = False
    """Local only: end an answer at its first sentence (after the first) copied from the
    prompt, cut before it. Text this role already answered for the same document (a running
    summary, level-0 summaries, SummIt's summary) is its own, not a copy."""
    system_prompt: str | None = None
    """A system message before every request, or at the head of the request's own (null =
    none, as for every API model: the papers' prompts are sent as they are). The embedded
    0.5B summarizer copies the story's opening without one."""

    samples: int = field(default=1, metadata=valid(Range(1, example=3)))
    """The judge's only: how many times each judged item is asked (``judge.samples=3``), each
    answer in a cache slot and with a seed of its own; the item's value is the samples'
    majority (a label) or mean (a number), and their agreement is recorded
    (``runner/run/samples.py``)."""

    batch: bool = False
    """Send this role's requests as provider batches (Anthropic's Message Batches, OpenAI's
    Batch API): half the price, answers within hours (``runner/llm/batch/``). Requests are
    gathered until ``batch_gather`` seconds pass without a new one, so requests that do not
    wait on each other's answers go out together; the job waits for the answers and goes on
    as if they had come online (same cache keys, scores and fingerprint)."""
    batch_gather: float = field(default=2.0, metadata=valid(Range(0, example=2, above=True)))
    """Seconds without a new request before the gathered ones are submitted as a batch."""
    batch_poll: float = field(default=30.0, metadata=valid(Range(0, example=30, above=True)))
    """Seconds between two looks at a batch in flight."""
    batch_timeout: float = field(
        default=86400.0, metadata=valid(Range(0, example=86400, above=True))
    )
    """Seconds a job waits for its batches (from its first submission) before it ends FAILED;
    the batches stay in flight and a rerun of the same command waits for them again."""

    @property
    def is_local(self) -> bool:
        """True for the in-process llama.cpp model."""
        return self.model.startswith(LOCAL_PREFIX)

    @property
    def in_process(self) -> bool:
        """True for models answered inside this process (no key, no server, no price)."""
        return self.is_local or self.model.startswith((SCRIPTED_PREFIX, LOCAL_EMBED_PREFIX))

    @property
    def is_local_embedder(self) -> bool:
        """True for the in-process sentence embedder."""
        return self.model.startswith(LOCAL_EMBED_PREFIX)

    @property
    def known_window(self) -> int | None:
        """The input window known without litellm: configured, llama.cpp's n_ctx, or scripted.

        None for an API model that sets none: litellm's model map knows it (the gateway asks).
        """
        if self.context_window:
            return int(self.context_window)
        if self.is_local:
            return self.n_ctx
        return SCRIPTED_WINDOW if self.in_process else None

    @property
    def provider(self) -> str:
        """The provider as litellm resolves this model string, read without importing litellm.

        The prefix ('anthropic/claude-...' -> 'anthropic'); a bare Claude name
        ('claude-3-5-haiku-...') is Anthropic's, as litellm resolves it; other bare names ''.
        """
        head, slash, _ = self.model.partition("/")
        if slash:
            return head
        return "anthropic" if self.model.startswith("claude") else ""

    @property
    def is_claude(self) -> bool:
        """An Anthropic model, directly or through another provider that serves Claude.

        Such a model takes Anthropic's ``cache_control`` blocks: 'anthropic/...', a bare
        'claude-...', 'bedrock/[us.]anthropic.claude-...', 'vertex_ai/claude-...',
        'openrouter/anthropic/claude-...', or a Claude behind an OpenAI-compatible proxy.
        """
        name = self.model.rsplit("/", 1)[-1].split("anthropic.", 1)[-1]
        return self.provider == "anthropic" or name.startswith("claude")

    @property
    def endpoint(self) -> tuple[str, str]:
        """What a concurrency limit belongs to: the model string and its server."""
        return (self.model, self.api_base or "")

    @property
    def rate_limited(self) -> bool:
        """True when any provider limit (``RATE_KEYS``) is set for this endpoint."""
        return any(getattr(self, key) is not None for key in RATE_KEYS)


BATCH_KEYS = ("batch", "batch_gather", "batch_poll", "batch_timeout")
"""How a role's requests travel (online or in provider batches), never what they ask."""

NOT_IN_FINGERPRINT = ("concurrency", "timeout_s", "retry", *RATE_KEYS, *BATCH_KEYS)
"""Model keys that change how calls are made, never what they answer."""
