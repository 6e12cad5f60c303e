"""The embedded model as a demo: wall time of each strategy on the sample, where the time
goes, and whether the summaries are summaries.

Runs, as a new user would (cold: a fresh response cache and MLflow store each), on this
machine with the weights already assembled and nothing else running:

    python -m runner                       target <= 120 s (baseline, metrics=paper)
    python -m runner strategy=hier         target <= 300 s
    python -m runner strategy=incremental  target <= 300 s
    python -m runner strategy=summit       target <= 300 s

For each run it prints the wall time and its shares: llama.cpp's prompt evaluation,
its generation (both from llama.cpp's own clocks, logged as ``time/local_*`` in usage.json), and
everything else (start-up, imports, loading the weights, chunking, logging). Then, per
document: summary length as a share of the source (target <= 25%), % repeated trigrams
(< 10) and % novel trigrams (>= 15: not an opening copied), each computed here from the
summary and the source text, not read from the run's own statistics.

    python benchmarks/bench_local_demo.py [--only baseline,hier] [--extra key=value ...]

``--quick`` checks the set-up without running the model: even the cheapest configuration
(baseline on one sample story, ``metrics=stats``) takes minutes on a small CPU, too
long for a check. It composes and validates that run's config as the runner
would (preflight included: the documents are read), finds the weights, imports llama_cpp,
and computes the trigram figures on the story; seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SAMPLES = REPO / "runner" / "sample_data"
RUNS = {
    "baseline": ([], 120.0),
    "hier": (["strategy=hier"], 300.0),
    "incremental": (["strategy=incremental"], 300.0),
    "summit": (["strategy=summit"], 300.0),
}
QUICK_EXTRA = ("data.limit=1", "metrics=stats")
MAX_RATIO, MAX_REPEATED, MIN_NOVEL = 25.0, 10.0, 15.0


def trigram_figures(source: str, summary: str) -> tuple[float, float]:
    """% repeated and % novel trigrams of lower-cased word trigrams.

    An independent count: plain regex words, not the runner's tokenizer.
    """
    import re

    def grams(text: str) -> list[tuple[str, ...]]:
        w = re.findall(r"\w+", text.lower())
        return [tuple(w[i : i + 3]) for i in range(len(w) - 2)]

    mine, theirs = grams(summary), set(grams(source))
    if not mine:
        return float("nan"), float("nan")
    counts = Counter(mine)
    repeated = 100 * sum(n for n in counts.values() if n > 1) / len(mine)
    novel = 100 * sum(1 for g in mine if g not in theirs) / len(mine)
    return repeated, novel


def run(name: str, args: list[str], folder: Path) -> tuple[float, dict[str, float], dict[str, str]]:
    """Wall seconds, the run's MLflow metrics and its summaries."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    command = [
        sys.executable,
        "-m",
        "runner",
        *args,
        "progress=false",
        f"tracking.uri={uri}",
        f"cache.dir={folder / 'cache'}",
        "tracking.experiment=bench_local_demo",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    print(done.stdout.rstrip())
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("bench_local_demo")
    (found,) = client.search_runs([exp.experiment_id])
    local = Path(client.download_artifacts(found.info.run_id, "summaries.json", str(folder)))
    from runner.tracking.usage import read_usage

    values = {
        **read_usage(client, found.info.run_id),
        **found.data.metrics,
    }  # time/local_* are usage
    return wall, values, json.loads(local.read_text(encoding="utf-8"))


def check_setup(overrides: list[str]) -> int:
    """Quick mode: everything the cheapest run needs, short of running the model."""
    import llama_cpp

    from runner.config.run_config import build_run_config
    from runner.llm.local.weights import default_gguf_path
    from runner.run import preflight
    from tests.runner.config.test_config import composed

    config = build_run_config(composed(*overrides), tuple(overrides))
    items = preflight.check(config).items
    weights = default_gguf_path()  # assembled and verified on first use
    spec, source = config.roles["model"], items[0].source
    assert source is not None, "data=sample has sources"
    repeated, novel = trigram_figures(source.text, source.text[:400])
    print(
        f"quick: set-up checked, model not run: {' '.join(overrides)} composes and passes "
        f"preflight ({spec.model}, {len(items)} document); weights {weights.name}; "
        f"llama_cpp {llama_cpp.__version__}; "
        f"trigram figures on the story's opening: repeated {repeated:.1f}%, novel {novel:.1f}%"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(RUNS), help="comma-separated: " + ",".join(RUNS))
    parser.add_argument("--extra", nargs="*", default=[], help="overrides added to every run")
    parser.add_argument("--keep", type=Path, help="keep each run's store and cache in KEEP/<name>")
    parser.add_argument("--quick", action="store_true", help="baseline on one story, no judge")
    options = parser.parse_args()
    if options.quick:
        return check_setup([*RUNS["baseline"][0], *QUICK_EXTRA, *options.extra])
    from runner.api.text import count_tokens

    sources = {p.stem: p.read_text(encoding="utf-8") for p in sorted(SAMPLES.glob("*.txt"))}
    missed: list[str] = []
    rows = []
    for name in options.only.split(","):
        args, target = RUNS[name]
        with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
            folder = Path(tmp) if options.keep is None else options.keep / name
            folder.mkdir(parents=True, exist_ok=True)
            wall, metrics, summaries = run(name, args + options.extra, folder)
        prompt = metrics.get("time/local_prompt_eval_s", 0.0)
        gen = metrics.get("time/local_generation_s", 0.0)
        other = wall - prompt - gen
        rows.append(
            f"{name:<12} {wall:7.1f} s (target {target:.0f})  "
            f"prompt eval {100 * prompt / wall:4.1f}%  "
            f"generation {100 * gen / wall:4.1f}%  other {100 * other / wall:4.1f}%  "
            f"calls {metrics.get('calls', 0):.0f}  tokens {metrics.get('prompt_tokens', 0):.0f}+"
            f"{metrics.get('completion_tokens', 0):.0f}"
        )
        if wall > target:
            missed.append(f"{name}: {wall:.0f} s > {target:.0f} s")
        for doc_id, summary in summaries.items():
            ratio = 100 * count_tokens(summary) / count_tokens(sources[doc_id])
            repeated, novel = trigram_figures(sources[doc_id], summary)
            rows.append(
                f"    {doc_id:<32} length {ratio:5.1f}% of source  repeated {repeated:5.1f}%  "
                f"novel {novel:5.1f}%"
            )
            if not (ratio <= MAX_RATIO and repeated < MAX_REPEATED and novel >= MIN_NOVEL):
                missed.append(
                    f"{name}/{doc_id}: length {ratio:.1f}%, repeated {repeated:.1f}%, "
                    f"novel {novel:.1f}%"
                )
    print("\n".join(rows))
    print("all targets met" if not missed else "missed:\n  " + "\n  ".join(missed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
