"""How fast bad input is answered: wall time of ``python -m runner`` for every case of
tests/test_bad_input.py (one clear line, exit 2), median of 3 runs each.

The issue's target is about 1 s; Hydra's own start-up and config composition are the floor
(``--help`` is printed as a reference). Printed: per case the median, then the median and
the maximum over cases.

    python benchmarks/bench_bad_input.py [--runs 3] [--quick]

``--quick``: one run each of ``--help`` and the first three cases; seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# After the sys.path insert above, so that ``tests`` imports from this checkout.
from tests.helpers.fake_server import FakeOpenAIServer  # noqa: E402
from tests.test_bad_input import CASES, make_bad_files  # noqa: E402

QUICK_CASES = 3


def timed(args: list[str], cwd: Path) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "runner", *args], cwd=cwd, env=env, capture_output=True, timeout=300
    )
    return time.perf_counter() - start, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one run of the first three cases")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    cases = CASES[:QUICK_CASES] if args.quick else CASES
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        server.served_models = ["fake-model"]
        data = make_bad_files(Path(tmp) / "bad")
        work = Path(tmp) / "work"
        work.mkdir()
        helps = [timed(["--help"], work)[0] for _ in range(runs)]
        print(f"{'--help (reference)':<36}{statistics.median(helps):>7.2f} s")
        medians = []
        for case in cases:
            args = [
                "metrics=stats",
                "data.limit=1",
                *[a.format(d=data, server=server.url) for a in case.args.split()],
            ]
            results = [timed(args, work) for _ in range(runs)]
            median = statistics.median(t for t, _ in results)
            medians.append(median)
            codes = sorted({code for _, code in results})
            print(f"{case.name:<36}{median:>7.2f} s  exit {codes}")
        print(
            f"\n{len(cases)} cases: median {statistics.median(medians):.2f} s, "
            f"max {max(medians):.2f} s (--help {statistics.median(helps):.2f} s)"
        )


if __name__ == "__main__":
    main()
