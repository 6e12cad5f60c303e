"""G-Eval's dimensions, prompt files and evaluation steps (auto-CoT), fixed once per job.

G-Eval (Liu et al. 2023) prompts the judge with a task introduction, the evaluation
criteria of one dimension, evaluation *steps* and a form to fill ("Evaluation Form (scores
ONLY): - Coherence:"). The steps are the paper's auto chain-of-thought: the judge writes
them itself from the criteria, once per criterion (the prompt ends with "Evaluation
Steps:"), and the same steps are then used for every summary. We generate them in the
metric's setup, at temperature 0 and through the gateway, so its response cache keeps
them fixed across a sweep and a rerun; ``steps=official`` or a YAML/JSON file gives fixed
steps instead (a dimension the file does not list is still generated).

Files in ``metrics/prompts/geval/``: one criteria file per dimension (the official
SummEval text), ``steps.txt`` (auto-CoT), ``form.txt`` (source first, so the judge calls
about one document share a cacheable prefix; the official prompts put it after the
steps) and ``form_summary_only.txt`` (the official fluency layout, no source).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.api import LLM, ConfigError, Message, MetricError
from runner.api.judging import run_units
from runner.api.slots import SlotTemplate, load_slots

PROMPT_DIR = Path(__file__).parent.parent / "prompts" / "geval"
OFFICIAL_STEPS = PROMPT_DIR / "official_steps.txt"
STEPS_ATTEMPTS = 3
"""Asks for a dimension's steps before setup gives up (an empty answer is re-asked)."""


@dataclass(frozen=True)
class Dimension:
    """One G-Eval dimension and its score scale."""

    name: str
    """Config and value name: 'coherence'."""
    label: str
    """What the form asks for, as the official prompt writes it: 'Coherence', 'Fluency (1-3)'."""
    low: int
    """Lowest score."""
    high: int
    """Highest score."""
    needs_source: bool
    """True when the official prompt shows the source document."""

    def norm(self, score: float) -> float:
        """The score on 0..1: (s - low) / (high - low)."""
        return (score - self.low) / (self.high - self.low)


DIMENSIONS = {
    "coherence": Dimension("coherence", "Coherence", 1, 5, True),
    "consistency": Dimension("consistency", "Consistency", 1, 5, True),
    "relevance": Dimension("relevance", "Relevance", 1, 5, True),
    "fluency": Dimension("fluency", "Fluency (1-3)", 1, 3, False),
}


@dataclass(frozen=True)
class Prompts:
    """Everything G-Eval sends, read once per job."""

    criteria: dict[str, str]
    """Dimension name -> its evaluation criteria."""
    steps: SlotTemplate
    """The auto-CoT prompt: {criteria}, optionally {dimension}."""
    form: SlotTemplate
    """The scoring prompt with the source: {document} {summary} {criteria} {steps} {dimension}."""
    form_summary_only: SlotTemplate
    """The scoring prompt without the source (fluency, or any dimension without one)."""


def pick_dimensions(value: Any) -> list[Dimension]:
    """The dimensions asked for: None = all four; a name or a list of names."""
    names = list(DIMENSIONS) if value is None else [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not names:
        raise ConfigError(f"metrics.geval.dimensions={value} must be a list of {list(DIMENSIONS)}")
    unknown = [n for n in names if n not in DIMENSIONS]
    if unknown:
        raise ConfigError(
            f"metrics.geval.dimensions: unknown {unknown}; choose from {list(DIMENSIONS)}"
        )
    return [DIMENSIONS[n] for n in dict.fromkeys(names)]


def load_prompts(
    dims: list[Dimension],
    form_prompt_path: str | None,
    form_summary_only_prompt_path: str | None,
    steps_prompt_path: str | None,
) -> Prompts:
    """Criteria files and the three templates, each checked for its slots."""
    key = "metrics.geval."
    return Prompts(
        criteria={
            d.name: (PROMPT_DIR / f"{d.name}.txt").read_text(encoding="utf-8").strip() for d in dims
        },
        steps=load_slots(
            steps_prompt_path,
            PROMPT_DIR / "steps.txt",
            key + "steps_prompt_path",
            ["criteria"],
            ["dimension"],
        ),
        form=load_slots(
            form_prompt_path,
            PROMPT_DIR / "form.txt",
            key + "form_prompt_path",
            ["document", "summary", "criteria", "steps", "dimension"],
        ),
        form_summary_only=load_slots(
            form_summary_only_prompt_path,
            PROMPT_DIR / "form_summary_only.txt",
            key + "form_summary_only_prompt_path",
            ["summary", "criteria", "steps", "dimension"],
        ),
    )


def fixed_steps(value: str | None, dims: list[Dimension]) -> dict[str, str]:
    """Steps from a YAML/JSON file (``official`` = the official prompts'); {} when None."""
    if value is None:
        return {}
    path = OFFICIAL_STEPS if value == "official" else Path(str(value)).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"metrics.geval.steps={value} does not exist; give null (generate), official, or a "
            "YAML/JSON file mapping dimension -> steps"
        )
    data = _read_mapping(path, value)
    out = {}
    for name, steps in data.items():
        if name not in DIMENSIONS:
            raise ConfigError(
                f"metrics.geval.steps={value}: unknown dimension {name!r}; use {list(DIMENSIONS)}"
            )
        if isinstance(steps, list) and all(isinstance(s, str) for s in steps):
            steps = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
        if not isinstance(steps, str) or not steps.strip():
            raise ConfigError(f"metrics.geval.steps={value}: {name}: give a text or a list")
        out[name] = steps.strip()
    return {d.name: out[d.name] for d in dims if d.name in out}


def _read_mapping(path: Path, value: str) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else _yaml(text)
    except ValueError as err:
        raise ConfigError(f"metrics.geval.steps={value} cannot be read: {err}") from err
    if not isinstance(data, dict):
        raise ConfigError(f"metrics.geval.steps={value} must map dimension names to steps")
    return data


def _yaml(text: str) -> Any:
    import yaml  # only when a steps file is given

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(str(err).replace("\n", " ")) from err


def generate_steps(
    judge: LLM, prompts: Prompts, dims: list[Dimension], max_tokens: int
) -> dict[str, dict[str, str]]:
    """One judge call per dimension (temperature 0): dimension -> {steps, call_id}."""
    units = [functools.partial(_generate, judge, prompts, d, max_tokens) for d in dims]
    return dict(zip([d.name for d in dims], run_units(units, judge), strict=True))


def _generate(judge: LLM, prompts: Prompts, dim: Dimension, max_tokens: int) -> dict[str, str]:
    text = prompts.steps.fill({"criteria": prompts.criteria[dim.name], "dimension": dim.label})
    for attempt in range(STEPS_ATTEMPTS):
        completion = judge.complete(  # a failed call fails setup: no steps, no metric
            [Message("user", text)],
            max_tokens=max_tokens,
            temperature=0.0,
            sample=attempt,
            purpose=f"geval/steps/{dim.name}",
        )
        steps = clean_steps(completion.text)
        if steps:
            return {"steps": steps, "call_id": completion.call_id}
    raise MetricError(
        f"metrics.geval: judge={judge.name} wrote no evaluation steps for {dim.name} in "
        f"{STEPS_ATTEMPTS} asks; give fixed ones with metrics.geval.steps=official or a file"
    )


def clean_steps(text: str) -> str:
    """The generated steps without an echoed 'Evaluation Steps:' heading."""
    text = (text or "").strip()
    if text.lower().startswith("evaluation steps:"):
        text = text[len("evaluation steps:") :].strip()
    return text


def form_messages(
    prompts: Prompts, dim: Dimension, steps: str, summary: str, document: str | None
) -> list[Message]:
    """The scoring request; with a source, the part up to the summary is the shared prefix."""
    values = {
        "criteria": prompts.criteria[dim.name],
        "steps": steps,
        "dimension": dim.label,
        "summary": summary,
    }
    if dim.needs_source and document is not None:
        filled = {**values, "document": document}
        return prompts.form.messages(filled, shared=("document", "summary"))
    return prompts.form_summary_only.messages(values, shared=("summary",))
