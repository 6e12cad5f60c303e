"""G-Eval (Liu et al. 2023), the LLM-judged 1-5 quality score SummIt reports (Table 2).

Per summary and dimension (coherence, consistency, relevance: 1-5; fluency: 1-3), the
judge fills the official form ("Evaluation Form (scores ONLY): - Coherence:") after the
official criteria and the evaluation steps fixed in setup (``metrics/geval/prompt.py``).
The score is G-Eval's expectation over the score tokens, estimated one of two ways:

- **logprobs** (when ``top_logprobs`` > 0 and the provider returns them): one call at
  temperature 0; at the first generated score token, the probabilities of the valid score
  tokens among its top alternatives ("4" and " 4" count together) are renormalized to sum
  to 1 and the score is sum(s * p(s)). Renormalizing ignores the mass on other tokens
  (logged as ``mass`` in the artifact), as the paper's weighting over the scale does.
- **samples** (no logprobs, e.g. the local llama.cpp model): the mean of ``n_samples``
  answers at ``temperature`` (the paper: n=20, temperature 1, since GPT-4 gave no token
  probabilities), each its own cache slot (``sample=i``). An answer is read tolerantly
  (the first number that is not part of an echoed range like "(1-5)", and must lie on the
  scale); the others are counted as unparsed and left out; all unparsed gives NaN.

Logged values (prefixed ``geval/``): ``<dim>`` (raw), ``<dim>_norm`` = (s - min)/(max - min),
``logprob_scored`` (dimensions scored from logprobs), ``unparsed_samples`` and the judge
accounting. Dimensions that need the source are NaN, with a note, when it is absent.
Artifacts: ``geval.json`` (per dimension: method, distribution or samples) and
``geval_steps.json`` (the steps used, the same for every document).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from metrics import PROMPT_ROOT as PROMPT_ROOT  # prompts/ beside the package
from metrics.geval.prompt import (
    Dimension,
    Prompts,
    fixed_steps,
    form_messages,
    generate_steps,
    load_prompts,
    pick_dimensions,
)
from metrics.geval.score import parse_score, weighted_score
from runner.api import (
    LLM,
    AuthError,
    Completion,
    ConfigError,
    Document,
    LLMError,
    Message,
    Metric,
    MetricResult,
    Value,
)
from runner.api.judging import Usage, run_units

ROLES = ("judge",)
PROMPT_DIRS = ("geval",)
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
FILE_PARAMS = ("steps",)
"""``steps`` may name a YAML/JSON file of evaluation steps: hashed into the fingerprint."""
PURPOSE = "geval"


@dataclass
class DimScore:
    """One dimension's score for one summary, and how it was reached."""

    value: float = math.nan
    method: str = "none"
    detail: dict[str, Any] = field(default_factory=dict)
    unparsed: int = 0


class GEval(Metric):
    """G-Eval with one judge, its dimensions, prompts and steps bound once per job."""

    def __init__(
        self,
        judge: LLM,
        dims: list[Dimension],
        prompts: Prompts,
        steps: dict[str, dict[str, str]],
        options: dict[str, Any],
    ) -> None:
        """Bind the job's judge, dimensions, prompts, steps and sampling options once."""
        self.judge, self.dims, self.prompts, self.steps = judge, dims, prompts, steps
        self.n_samples: int = options["n_samples"]
        self.top_logprobs: int = options["top_logprobs"]
        self.temperature: float | None = options["temperature"]
        self.max_tokens: int = options["max_tokens"]
        self.headline = tuple(d.name for d in dims)
        self.values = {
            key: fact
            for d in dims
            for key, fact in (
                (d.name, Value(f"G-Eval {d.name}", (d.low, d.high), "higher", "ordinal")),
                (f"{d.name}_norm", Value(f"G-Eval {d.name} (0-1)", (0, 1), "higher")),
            )
        }
        self.logprobs_seen: bool | None = None
        """None until a logprob call returns; False once the judge gave none (then skip them)."""

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Every dimension of one summary: logprob-weighted where possible, else sampled."""
        source = document.text if document is not None else None
        usable = [d for d in self.dims if source is not None or not d.needs_source]
        usage = Usage()
        scores = {d.name: DimScore() for d in self.dims}
        requests = {
            d.name: form_messages(self.prompts, d, self.steps[d.name]["steps"], summary, source)
            for d in usable
        }
        if self.top_logprobs and self.logprobs_seen is not False:
            self._by_logprobs(usable, requests, scores, usage)
        unscored = [d for d in usable if scores[d.name].method == "none"]
        self._by_samples(unscored, requests, scores, usage)
        notes = [
            f"geval: {d.name} needs the source document, which this item lacks; NaN"
            for d in self.dims
            if d not in usable
        ]
        notes += [
            f"geval: {d.name}: {scores[d.name].detail['note']}"
            for d in usable
            if "note" in scores[d.name].detail
        ]
        return MetricResult(
            values=self._values(scores, usage),
            artifacts=self._artifacts(scores),
            notes=tuple(notes),
        )

    def warnings(self, per_document: Mapping[str, MetricResult]) -> list[str]:
        """Say when top_logprobs was asked for but every score came from sampling."""
        if (
            self.top_logprobs
            and per_document
            and not any(r.values.get("logprob_scored", 0) for r in per_document.values())
        ):
            return [
                f"geval: judge={self.judge.name} returned no logprobs; every score is the mean of "
                + f"{self.n_samples} samples at temperature {self.temperature}"
            ]
        return []

    def _call(self, messages: list[Message], dim: Dimension, **options: Any) -> Completion | str:
        """One judge call; a failed call (not a rejected key) becomes its error text."""
        try:
            return self.judge.complete(
                messages, max_tokens=self.max_tokens, purpose=f"{PURPOSE}/{dim.name}", **options
            )
        except AuthError:
            raise
        except LLMError as err:
            return f"judge call failed: {err}"

    def _by_logprobs(
        self,
        dims: list[Dimension],
        requests: dict[str, list[Message]],
        scores: dict[str, DimScore],
        usage: Usage,
    ) -> None:
        units = [
            functools.partial(
                self._call, requests[d.name], d, temperature=0.0, top_logprobs=self.top_logprobs
            )
            for d in dims
        ]
        for dim, out in zip(dims, run_units(units, self.judge), strict=True):
            if isinstance(out, str):
                continue  # sampled instead
            usage.add(out, reask=False)
            if not out.top_logprobs:
                self.logprobs_seen = False
                continue
            self.logprobs_seen = True
            found = weighted_score(out, dim.low, dim.high)
            if found is not None:
                detail = {
                    "distribution": {str(k): v for k, v in found["distribution"].items()},
                    "mass": found["mass"],
                    "answer": out.text,
                }
                scores[dim.name] = DimScore(found["score"], "logprobs", detail)

    def _by_samples(
        self,
        dims: list[Dimension],
        requests: dict[str, list[Message]],
        scores: dict[str, DimScore],
        usage: Usage,
    ) -> None:
        pairs = [(d, i) for d in dims for i in range(self.n_samples)]
        units = [
            functools.partial(
                self._call, requests[d.name], d, temperature=self.temperature, sample=i
            )
            for d, i in pairs
        ]
        answers: dict[str, list[dict[str, Any]]] = {d.name: [] for d in dims}
        for (dim, i), out in zip(pairs, run_units(units, self.judge), strict=True):
            if isinstance(out, str):
                answers[dim.name].append({"sample": i, "answer": None, "score": None, "error": out})
                continue
            usage.add(out, reask=False)
            found = parse_score(out.text, dim.low, dim.high)
            answers[dim.name].append(
                {"sample": i, "answer": out.text, "score": None if found is None else found[0]}
            )
        for dim in dims:
            scores[dim.name] = mean_of_samples(dim, answers[dim.name])
            usage.unparsed += scores[dim.name].unparsed

    def _values(self, scores: dict[str, DimScore], usage: Usage) -> dict[str, float]:
        values: dict[str, float] = {}
        for dim in self.dims:
            value = scores[dim.name].value
            values[dim.name] = value
            values[f"{dim.name}_norm"] = dim.norm(value) if not math.isnan(value) else math.nan
        values["logprob_scored"] = float(sum(s.method == "logprobs" for s in scores.values()))
        values["unparsed_samples"] = float(sum(s.unparsed for s in scores.values()))
        values.update(usage.values())
        return values

    def _artifacts(self, scores: dict[str, DimScore]) -> dict[str, Any]:
        per_dim = {
            name: {
                "method": s.method,
                "score": s.value if not math.isnan(s.value) else None,
                **s.detail,
            }
            for name, s in scores.items()
        }
        return {"geval.json": per_dim, "geval_steps.json": self.steps}


def mean_of_samples(dim: Dimension, answers: list[dict[str, Any]]) -> DimScore:
    """The mean of the parsed samples; unparsed ones counted and left out."""
    parsed = [a["score"] for a in answers if a["score"] is not None]
    unparsed = len(answers) - len(parsed)
    detail: dict[str, Any] = {"samples": answers}
    if not parsed:
        detail["note"] = f"all {len(answers)} samples unparsed; NaN (see geval.json)"
        return DimScore(math.nan, "samples", detail, unparsed)
    if unparsed:
        detail["note"] = f"{unparsed} of {len(answers)} samples unparsed, left out of the mean"
    return DimScore(sum(parsed) / len(parsed), "samples", detail, unparsed)


def setup(
    judge: LLM,
    *,
    dimensions: list[str] | None = None,
    n_samples: int = 20,
    top_logprobs: int = 5,
    temperature: float | None = 1.0,
    steps: str | None = None,
    max_tokens: int = 5,
    steps_max_tokens: int = 512,
    form_prompt_path: str | None = None,
    form_summary_only_prompt_path: str | None = None,
    steps_prompt_path: str | None = None,
) -> GEval:
    """The metric for a job: parameters and prompts checked, evaluation steps fixed.

    ``dimensions`` None = all four; ``steps`` None = generated here (one judge call per
    dimension, temperature 0), ``official`` or a YAML/JSON file = fixed; ``temperature``
    None = the judge's own for the samples.
    """
    _check_whole("n_samples", n_samples, 1)
    _check_whole("top_logprobs", top_logprobs, 0)
    _check_whole("max_tokens", max_tokens, 1)
    _check_whole("steps_max_tokens", steps_max_tokens, 1)
    if top_logprobs > 20:
        raise ConfigError(f"metrics.geval.top_logprobs={top_logprobs}: providers allow 0..20")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not 0 <= temperature <= 2
    ):
        raise ConfigError(f"metrics.geval.temperature={temperature} must be null or in 0..2")
    dims = pick_dimensions(dimensions)
    prompts = load_prompts(dims, form_prompt_path, form_summary_only_prompt_path, steps_prompt_path)
    given = fixed_steps(steps, dims)
    chosen = {name: {"steps": text, "source": str(steps)} for name, text in given.items()}
    missing = [d for d in dims if d.name not in given]
    for name, made in generate_steps(judge, prompts, missing, steps_max_tokens).items():
        chosen[name] = {**made, "source": "generated"}
    options = {
        "n_samples": n_samples,
        "top_logprobs": top_logprobs,
        "max_tokens": max_tokens,
        "temperature": None if temperature is None else float(temperature),
    }
    return GEval(judge, dims, prompts, {d.name: chosen[d.name] for d in dims}, options)


def _check_whole(key: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"metrics.geval.{key}={value} must be a whole number >= {least}")
