"""The summary viewer on the paper's released 98-book sets: what the page weighs, what it
costs a run, and how long a browser takes to open it.

For each released configuration in ../shared/data/booookscore (claude-88000-hier, -inc):
runs ``strategy=none data=summaries data.path=<file> metrics=paper`` against a loopback
judge that replays the released GPT-4 annotations (as tests/metrics/test_booookscore_released.py
does), then prints

- ``log_viewer``'s cost on the finished run (median of 5), split into reading the
  artifacts, building the page's values and rendering;
- the page's weight, raw and gzip-compressed;
- the time headless Chromium takes to open it (median of 5): from navigation start to the
  end of the page's own script with the layout done (the page's timing, read by a probe
  appended after the page's script), also with the page's scripts removed (a reader with
  scripts off: every document laid out at once), and the wall time of a browser process
  that opens it and paints a 1280x900 screenshot, against a blank page.

    python benchmarks/bench_viewer.py [--keep DIR] [--screenshot docs/viewer.png]

``--screenshot`` also writes the README's picture: the hier set's page in a 1280x1400
window with one book selected, as a PNG of 256 colours (the eight type colours kept exact).

Skips cleanly (exit 0) when ../shared/data is absent; the browser part is skipped when
Chromium is not installed. Takes about two minutes on 2 cores (most of it the judge replay).

``--quick``: the hier set's first three books, one repeat of each timing, no screenshot;
seconds, to check that the benchmark still runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

RELEASED = REPO.parent / "shared" / "data" / "booookscore"
NAMES = ("claude-88000-hier", "claude-88000-inc")
REPEATS = 5
QUICK_BOOKS = 3
_SENTENCE = re.compile(r"\[Your sentence\]\n(.*?)\n\[Your response\]", re.DOTALL)
PROBE = """<script>(function () {
  document.body.offsetHeight;  /* force style and layout of what the page shows */
  var p = document.createElement("pre");
  p.id = "probe";
  p.textContent = JSON.stringify({ready: performance.now()});
  document.body.appendChild(p);
})();</script>"""


def replay_judge(summaries: dict[str, str], annotations: dict[str, Any]) -> Any:
    """Answers each sentence with its released annotation; unlisted ones had no confusion."""
    by_summary = {text: annotations.get(book) or {} for book, text in summaries.items()}

    def respond(request: dict[str, Any]) -> str:
        summary = str(request["messages"][0]["content"]).rsplit("[Your summary]\n", 1)[1]
        sentence = _SENTENCE.search(str(request["messages"][-1]["content"]))
        found = by_summary[summary].get(sentence.group(1) if sentence else "")
        if not found:
            return "Questions: no confusion\nTypes: no confusion"
        return f"Questions: {found['questions']}\nTypes: {', '.join(found['types'])}"

    return respond


def make_run(name: str, folder: Path, books: int | None = None) -> tuple[str, str]:
    """The released set through the app; returns (tracking uri, run id).

    With ``books``, only the set's first ``books`` summaries (written to ``folder``).
    """
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from runner.config.run_config import build_run_config
    from runner.run.lifecycle import run_experiment
    from tests.helpers.fake_server import FakeOpenAIServer

    file = RELEASED / f"{name}.summaries.json"
    summaries = json.loads(file.read_text(encoding="utf-8"))
    if books is not None:
        summaries = dict(list(summaries.items())[:books])
        file = folder / f"{name}.first{books}.summaries.json"
        file.write_text(json.dumps(summaries), encoding="utf-8")
    annotations = json.loads((RELEASED / f"{name}.annotations.json").read_text(encoding="utf-8"))
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    with FakeOpenAIServer(replay_judge(summaries, annotations)) as server:
        items = [
            "strategy=none",
            "data=summaries",
            f"data.path={file}",
            "metrics=paper",
            "judge=openai_compatible",
            f"judge.api_base={server.url}",
            "judge.model=openai/fake",
            "judge.concurrency=16",
            f"tracking.uri={uri}",
            f"cache.dir={folder / 'cache'}",
            "progress=false",
        ]
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            raw = OmegaConf.to_container(compose("config", overrides=items), resolve=True)
        assert isinstance(raw, dict)
        return uri, run_experiment(build_run_config(raw, tuple(items))).run_id


def page_cost(uri: str, run_id: str, repeats: int) -> tuple[dict[str, float], str]:
    """Median ms of log_viewer and of its phases; the page as logged."""
    from mlflow.tracking import MlflowClient

    from runner.tracking.reader import RunRecord
    from runner.view import page as view

    client = MlflowClient(tracking_uri=uri)
    times: dict[str, list[float]] = {"read": [], "build": [], "render": [], "log_viewer": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        stored = client.get_run(run_id)
        run = RunRecord.from_run(stored)
        files = view.read_files(client, run_id, stored.info.artifact_uri)
        t1 = time.perf_counter()
        page = view.build_page(run, files)
        t2 = time.perf_counter()
        view.render(page)
        t3 = time.perf_counter()
        view.log_viewer(client, run_id)
        t4 = time.perf_counter()
        for key, value in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            times[key].append(1000 * value)
    with view._quiet_downloads(), tempfile.TemporaryDirectory(prefix="viewer-") as tmp:
        html = Path(client.download_artifacts(run_id, view.ARTIFACT, tmp)).read_text("utf-8")
    return {k: statistics.median(v) for k, v in times.items()}, html


def chromium(binary: str, url: str, *flags: str) -> tuple[float, str]:
    """(wall ms, stdout) of one headless Chromium process on ``url``."""
    start = time.perf_counter()
    done = subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", *flags, url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return 1000 * (time.perf_counter() - start), done.stdout


def open_times(binary: str, html: str, folder: Path, repeats: int) -> dict[str, float]:
    """Median ms of opening the page in headless Chromium, four ways.

    The page's own timing (``--dump-dom`` with the probe), as is and with its scripts
    removed (what a reader with scripts off gets: every document laid out), and the wall
    time of a browser that opens the page and paints a 1280x900 screenshot, against a blank
    page. (Chromium's --screenshot needs scripts on, hence the probe.)
    """
    bare = re.sub(r"<script>.*?</script>", "", html, flags=re.DOTALL)
    pages = {"ready": html, "ready_no_scripts": bare}
    for name, text in pages.items():
        (folder / f"{name}.html").write_text(text.replace("</body>", PROBE + "</body>"), "utf-8")
    page, blank = folder / "page.html", folder / "blank.html"
    page.write_text(html, encoding="utf-8")
    blank.write_text("<!doctype html><title>blank</title><p>x</p>", encoding="utf-8")
    shot = ("--window-size=1280,900", f"--screenshot={folder / 'shot.png'}")
    runs: dict[str, list[float]] = {k: [] for k in (*pages, "shown", "blank")}
    for _ in range(repeats):
        for name in pages:
            dom = chromium(binary, (folder / f"{name}.html").as_uri(), "--dump-dom")[1]
            found = re.search(r'<pre id="probe">(.*?)</pre>', dom)
            if not found:
                raise RuntimeError("the probe did not run: " + dom[-500:])
            runs[name].append(json.loads(found.group(1).replace("&quot;", '"'))["ready"])
        runs["blank"].append(chromium(binary, blank.as_uri(), *shot)[0])
        runs["shown"].append(chromium(binary, page.as_uri(), *shot)[0])
    return {k: statistics.median(v) for k, v in runs.items()}


def screenshot(binary: str, html: str, out: Path, book: str = "age-of-vice.epub") -> None:
    """The page with ``book`` selected and its second note highlighted, as a small PNG."""
    from PIL import Image

    from runner.view.data import PALETTE

    pick = (
        f"<script>document.querySelector('tr td[data-v=\"{book}\"]').parentNode.click();"
        "document.querySelectorAll('article.doc.on li.note')[1].classList.add('hl');</script>"
    )
    with tempfile.TemporaryDirectory(prefix="bench-viewer-shot-") as tmp:
        page, raw = Path(tmp) / "page.html", Path(tmp) / "raw.png"
        page.write_text(html.replace("</body>", pick + "</body>"), encoding="utf-8")
        chromium(
            binary,
            page.as_uri(),
            "--hide-scrollbars",
            "--window-size=1280,1400",
            "--virtual-time-budget=3000",
            f"--screenshot={raw}",
        )
        image = Image.open(raw).convert("RGB")
    exact = [tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in PALETTE]
    common = [c for _, c in sorted(image.getcolors(1 << 24) or [], reverse=True) if c not in exact]
    palette = Image.new("P", (1, 1))
    palette.putpalette([v for c in (exact + common)[:256] for v in c])
    image.quantize(palette=palette, dither=Image.Dither.NONE).save(out, optimize=True)
    print(f"  screenshot {out} ({out.stat().st_size / 1024:.0f} KB)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="write each set's viewer.html into this folder")
    parser.add_argument("--screenshot", type=Path, help="write the hier page's picture here")
    parser.add_argument("--quick", action="store_true", help="three books of one set, once")
    args = parser.parse_args()
    names, books, repeats = (NAMES[:1], QUICK_BOOKS, 1) if args.quick else (NAMES, None, REPEATS)
    if args.quick:
        args.screenshot = None
    if not RELEASED.exists():
        print(f"skipped: {RELEASED.resolve()} is absent (fresh clone without ../shared/data)")
        return 0
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as tmp:
        for name in names:
            folder = Path(tmp) / name
            folder.mkdir()
            started = time.perf_counter()
            uri, run_id = make_run(name, folder, books)
            took = time.perf_counter() - started
            size = f"{books}-book" if books else "98-book"
            print(f"{name}: the {size} run with the replayed judge took {took:.0f} s")
            cost, html = page_cost(uri, run_id, repeats)
            raw = len(html.encode("utf-8"))
            print(
                f"  log_viewer {cost['log_viewer']:.0f} ms (read {cost['read']:.0f}, build "
                f"{cost['build']:.0f}, render {cost['render']:.0f}; medians of {repeats})"
            )
            packed = len(gzip.compress(html.encode("utf-8")))
            print(f"  page weight {raw / 1024:.0f} KB ({packed / 1024:.0f} KB gzip)")
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"{name}.viewer.html").write_text(html, encoding="utf-8")
            if binary is None:
                print("  open time: skipped (no chromium; apt-get install -y chromium)")
                continue
            if args.screenshot and name == NAMES[0]:
                screenshot(binary, html, args.screenshot)
            t = open_times(binary, html, folder, repeats)
            print(
                f"  open in headless Chromium (medians of {repeats}): parsed, scripted and laid "
                f"out {t['ready']:.0f} ms after navigation start ({t['ready_no_scripts']:.0f} ms "
                f"with scripts off, every document laid out); a browser process that opens it "
                f"and paints a screenshot takes {t['shown']:.0f} ms vs {t['blank']:.0f} ms for a "
                f"blank page (+{t['shown'] - t['blank']:.0f} ms)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
