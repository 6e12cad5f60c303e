"""Progress: a bar naming the current step on a terminal, one line per document in a log,
nothing with progress=off."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runner.llm.call_log import CallTotals
from runner.run.progress import Progress
from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.in_process import run_in_process

SAMPLES = Path(__file__).resolve().parents[3] / "runner" / "sample_data"


def _args(tmp_path: Path, url: str, *extra: str) -> list[str]:
    return [
        "strategy=hier",
        "chunk=1024",
        "metrics=stats",
        "model=openai_compatible",
        f"model.api_base={url}",
        f"tracking.uri=sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
        f"cache.dir={tmp_path / 'cache'}",
        *extra,
    ]


def _run(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m runner`` as a child process: its stderr a pipe, as in a log."""
    return subprocess.run(
        [sys.executable, "-m", "runner", *_args(tmp_path, url, *extra)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _run_here(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """The same command called in this process (``tests/helpers/in_process.py``)."""
    return run_in_process(*_args(tmp_path, url, *extra), cwd=tmp_path)


def test_a_log_gets_one_line_per_document_with_eta_and_the_calls_so_far(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        done = _run(tmp_path, server.url)  # stderr is a pipe: progress=auto means lines
        calls = len(server.requests)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if re.match(r"hier \[\d/3\] ", line)]
    expected = sorted(p.stem for p in SAMPLES.glob("*.txt"))
    assert sorted(line.split()[2] for line in lines) == expected  # every document, once
    assert [line.split()[1] for line in lines] == ["[1/3]", "[2/3]", "[3/3]"]
    assert "ETA" in lines[0] and "ETA" in lines[1] and "ETA" not in lines[2]
    assert f"calls={calls} " in lines[-1]  # the server's own count of the requests it answered
    assert "\r" not in done.stderr  # no bar redraws in a log


def test_progress_off_prints_no_progress(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        done = _run_here(tmp_path, server.url, "progress=off")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not re.search(r"\[\d/3\]", done.stderr)


def test_an_unknown_mode_is_one_clear_error(tmp_path: Path) -> None:
    done = _run_here(tmp_path, "http://127.0.0.1:9", "progress=sometimes")
    assert done.returncode == 2
    assert "progress=sometimes is not a progress mode; use auto, bar, lines or off" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_bar_names_the_document_and_step_of_the_last_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress("bar", "hier")
    progress.set_total(3)
    progress.on_call(
        CallTotals(
            calls=4, cache_hits=1, prompt_tokens=900, completion_tokens=100, cost_usd=0.0125
        ),
        {"document": "salt-and-copper", "purpose": "hier/merge"},
    )
    postfix = progress.bar.postfix
    progress.doc_done("salt-and-copper")
    progress.close()
    assert postfix == "salt-and-copper: hier/merge | calls=4 cached=1 tok=1000 $0.0125"
    assert "1/3" in capsys.readouterr().err  # tqdm's own count, drawn on stderr


def test_calls_outside_a_document_show_their_purpose_alone() -> None:
    progress = Progress("off", "summit")
    progress.on_call(
        CallTotals(calls=1), json.loads('{"document": null, "purpose": "geval/steps/coherence"}')
    )
    assert progress._postfix().startswith("geval/steps/coherence | calls=1 ")


def test_a_sweep_cells_lines_name_the_cell_and_a_single_jobs_do_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cell = Progress("lines", "hier", cell="strategy=hier,chunk=1024")
    cell.set_total(2)
    cell.doc_done("salt-and-copper")
    single = Progress("lines", "hier")
    single.set_total(2)
    single.doc_done("salt-and-copper")
    first, second = capsys.readouterr().err.splitlines()
    assert first.startswith("hier [strategy=hier,chunk=1024] [1/2] salt-and-copper done: ")
    assert second.startswith("hier [1/2] salt-and-copper done: ")


def test_parallel_jobs_of_a_joblib_sweep_each_name_their_cell(tmp_path: Path) -> None:
    """Two jobs write to one stderr at once: every progress line names its cell (its run name)."""
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    with FakeOpenAIServer() as server:
        done = subprocess.run(
            [sys.executable, "-m", "runner", "-m", "hydra/launcher=joblib"]
            + ["hydra.launcher.n_jobs=2", "strategy=hier", "chunk=512,1024", "data.limit=2"]
            + ["metrics=stats", "model=openai_compatible", f"model.api_base={server.url}"]
            + [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"]
            + [f"hydra.sweep.dir={tmp_path / 'sweep'}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if re.search(r"\[\d/2\] \S+ done: ", line)]
    cells = sorted(re.sub(r" \[\d/2\] .*", "", line) for line in lines)
    assert cells == ["hier [chunk=1024]"] * 2 + ["hier [chunk=512]"] * 2, lines
