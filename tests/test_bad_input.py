"""Bad input, as a new user makes it: one clear line naming the problem and the fix, a
non-zero exit, no traceback (unless ``verbose=true``), and nothing a report would count.

Each case runs the command of ``python -m runner`` in a fresh folder and expects exit status
2, exactly one line on stderr starting with ``error:`` and containing the words that name the
problem and the fix, and no ``mlruns/`` folder afterwards: the problem was caught before
the MLflow run (or even the store) existed. The table's cases call the command in this
process (``tests/helpers/in_process.py``); the last tests run it as a child process, so the
exit status and the one line are also what a shell sees. ``benchmarks/bench_bad_input.py``
times them.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.fake_server import FakeOpenAIServer
from tests.helpers.in_process import run_in_process

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    """One bad input: the overrides (``{d}`` = the case's data folder) and the words expected."""

    name: str
    args: str
    expect: tuple[str, ...]


CASES = [
    Case("empty file", "data=dir data.path={d}/empty", ("a.txt", "is empty", "give it text")),
    Case("whitespace-only file", "data=dir data.path={d}/blank", ("is empty", "give it text")),
    Case("binary file", "data=dir data.path={d}/binary", ("not UTF-8", "iconv")),
    Case(
        "Latin-1 file", "data=dir data.path={d}/latin1", ("not UTF-8", "byte 3", "iconv -t UTF-8")
    ),
    Case("50 MB file", "data=dir data.path={d}/huge", ("MB", "over the 32 MB limit", "split it")),
    Case(
        "folder without .txt", "data=dir data.path={d}/no_txt", ("no .txt files", "fix data.path")
    ),
    Case("missing folder", "data=dir data.path={d}/nowhere", ("does not exist", "data.path")),
    Case("link out of the folder", "data=dir data.path={d}/linked", ("outside", "copy the file")),
    Case("chunk=0", "chunk=0", ("chunk=0", "positive whole number", "chunk=2048")),
    Case("negative chunk", "chunk=-5", ("chunk=-5", "positive whole number")),
    Case("non-integer chunk", "chunk=abc", ("chunk=abc", "positive whole number")),
    Case("fractional chunk", "chunk=1.5", ("chunk=1.5", "whole number")),
    Case(
        "chunk over the context", "chunk=999999", ("exceeds the 8192-token context", "lower chunk")
    ),
    Case("unknown strategy", "strategy=nope", ("strategy=nope is unknown", "hier")),
    Case("unknown model", "model=nope", ("model=nope is unknown", "claude")),
    Case("unknown metric group", "metrics=nope", ("metrics=nope is unknown", "paper")),
    Case("unknown data option", "data=nope", ("data=nope is unknown", "sample")),
    Case("typo in a key", "chnk=512", ("chnk is not a config key", "spelling")),
    Case("typo in a nested key", "model.temprature=0.2", ("temprature", "spelling")),
    Case("missing API key", "model=gpt4", ("OPENAI_API_KEY", "export it")),
    Case("key in config", "+model.api_key=sk-abc", ("never taken from config", "api_key_env")),
    Case(
        "wrong api_base",
        "model=openai_compatible model.api_base=http://127.0.0.1:9/v1",
        ("cannot reach http://127.0.0.1:9/v1", "fix model.api_base"),
    ),
    Case(  # the judge shares the model's server: the line names the key the user set
        "wrong api_base, judge=same",
        "model=openai_compatible model.api_base=http://127.0.0.1:9/v1 judge=same metrics=paper",
        ("model=openai_compatible: cannot reach http://127.0.0.1:9/v1", "fix model.api_base"),
    ),
    Case(
        "model the server does not serve",
        "model=openai_compatible model.api_base={server} model.model=openai/gpt-nope",
        ("does not serve 'gpt-nope'", "fake-model", "fix model.model"),
    ),
    Case(
        "summaries of the wrong shape",
        "strategy=none data=summaries data.path={d}/list.json",
        ("must map document ids to summary strings",),
    ),
    Case(
        "summaries with unknown ids",
        "strategy=none data=summaries data.path={d}/orphan.json data.sources={d}/story",
        ("have no source", "zzz", "fix their ids"),
    ),
    Case(
        "empty summary",
        "strategy=none data=summaries data.path={d}/empty_summary.json",
        ("the summary of 'a' is empty",),
    ),
    Case(
        "prompt without its slots",
        "metrics=paper metrics.booookscore.prompt_path={d}/no_slots.txt",
        ("no_slots.txt", "two positional slots"),
    ),
    Case(
        "pickle holding a class",
        "data=booookscore_pickle data.path={d}/class.pkl",
        ("not a safe", "collections.OrderedDict", "convert it"),
    ),
    Case(
        "unwritable tracking location",
        "tracking.uri=sqlite:////proc/nope/mlflow.db",
        ("cannot use /proc/nope/mlflow.db", "writable folder"),
    ),
    Case(
        "tracking.uri without a scheme",
        "tracking.uri=myruns",
        ("tracking.uri=myruns has no scheme", "sqlite:///myruns/mlflow.db", "http://"),
    ),
    Case(
        "a database as tracking.uri",
        "tracking.uri=postgresql+psycopg2://ann:s3cret@127.0.0.1:9/runs",
        ("is a database, not a tracking server", "mlflow server", "127.0.0.1:9/runs"),
    ),
    Case(
        "a judge alias of one's own without its defaults",
        "--config-dir {d}/my_conf judge=bare metrics=booookscore",
        ("judge.name is missing", "defaults: [/model/<a model alias>@_here_, _self_]"),
    ),
    Case(
        "a setting out of range for the model nothing uses",
        "strategy=none data=summaries data.path={d}/one.json model.max_tokens=0 judge=local",
        ("model.max_tokens=0 is out of range", "at least 1"),
    ),
    Case(
        "a setting of the model nothing uses",
        "strategy=none data=summaries data.path={d}/one.json model.max_tokens=100 judge=gpt4 "
        "metrics=booookscore",
        ("model.max_tokens=100 has no effect", "strategy=none summarizes nothing", "drop it"),
    ),
    Case(
        "a panel written with a space",
        "judges=[gpt4, claude]",
        ("the shell cut the list at its space", "judges=[gpt4,claude]", "'judges=[gpt4, claude]'"),
    ),
    Case("budget of 0", "budget.usd=0", ("budget.usd=0", "> 0", "null means no limit")),
    Case(
        "temperature=abc",
        "temperature=abc",
        ("temperature=abc must be a number", "temperature=0.5"),
    ),
    Case("unknown data key", "+data.foo=1", ("data.foo is not a data setting",)),
    Case(
        "non-numeric concurrency",
        "model.concurrency=abc",
        ("model.concurrency=abc must be a whole number",),
    ),
    Case(
        "non-numeric retry",
        "model.retry.max_attempts=many",
        ("model.retry.max_attempts=many", "whole number"),
    ),
    Case("on_error misspelt", "on_error=ignore", ("on_error=ignore", "fail", "continue")),
    Case(
        "a setting of a metric not chosen",
        "metrics=paper metrics.faithfulness.method=cot",
        (
            "the metric 'faithfulness' is not among the chosen metrics (metrics=paper)",
            "add it with 'metrics=[paper,faithfulness]'",
        ),
    ),
    Case(
        "a metric no group holds",
        "metrics.faithfulnes.method=cot",
        ("no metric group holds a metric 'faithfulnes'", "did you mean faithfulness?"),
    ),
    Case(
        "temperature out of range",
        "model=openai_compatible model.api_base={server} model.temperature=5",
        ("model.temperature=5 is out of range: from 0 to 2", "e.g. model.temperature=0.5"),
    ),
    Case(
        "Anthropic's temperature",
        "model=openai_compatible model.api_base={server} model.model=anthropic/claude-x "
        "model.temperature=1.5",
        ("model.temperature=1.5", "from 0 to 1 for Anthropic's models (anthropic/claude-x)"),
    ),
    Case(
        "StorySumm without its file",
        "strategy=none data=storysumm metrics=stats",
        (
            "data=storysumm needs data.path=",
            "download it from https://github.com/melaniesubbiah/storysumm",
        ),
    ),
    Case(
        "no attempt at all",
        "model=openai_compatible model.api_base={server} model.retry.max_attempts=0",
        ("model.retry.max_attempts=0 is out of range: at least 1",),
    ),
    Case(
        "samples of a judge nothing asks",
        "judge.samples=3 metrics=stats",
        (
            "judge.samples=3 has no effect: neither strategy=baseline nor the metrics (stats) "
            "ask the judge; drop it, or add what asks it (metrics=alignment, metrics=booookscore",
        ),
    ),
    Case(
        "an evaluator without SummIt",
        "evaluator=gpt4",
        ("evaluator=gpt4 has no effect", "ask the evaluator", "(strategy=summit)"),
    ),
    Case(
        "an embedder without a metric that embeds",
        "embedder=openai_small metrics=stats",
        ("embedder=openai_small has no effect", "(metrics=coherence)"),
    ),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bad file of the table, made once."""
    return make_bad_files(tmp_path_factory.mktemp("bad"))


def make_bad_files(root: Path) -> Path:
    """Write the table's bad files under ``root`` (also used by benchmarks/bench_bad_input.py)."""
    files = {
        "empty/a.txt": b"",
        "blank/a.txt": b"  \n\t\n",
        "binary/a.txt": bytes(range(256)) * 8,
        "latin1/a.txt": "Café crème.\n".encode("latin-1"),
        "no_txt/a.md": b"# not a text file\n",
        "story/a.txt": b"A short story. It ends.\n",
        "list.json": b'["a", "b"]',
        "orphan.json": b'{"zzz": "A summary."}',
        "empty_summary.json": b'{"a": ""}',
        "no_slots.txt": b"Judge this summary.\n",
        "my_conf/judge/bare.yaml": b"model: openai/gpt-4o\ntemperature: 0.0\n",
        "one.json": b'{"a": "A fox ran."}',
    }
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    (root / "huge").mkdir()
    with open(root / "huge" / "a.txt", "wb") as handle:  # 50 MB, written in pieces
        handle.writelines(b"word " * 200_000 for _ in range(50))
    (root / "linked").mkdir()
    secret = root / "outside.txt"
    secret.write_text("Text that lives outside the data folder.\n", encoding="utf-8")
    (root / "linked" / "a.txt").symlink_to(secret)
    with open(root / "class.pkl", "wb") as handle:
        pickle.dump({"a": OrderedDict()}, handle)
    return root


def run_cli(
    args: list[str], cwd: Path, *extra_env: tuple[str, str]
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(dict(extra_env))
    return subprocess.run(
        [sys.executable, "-m", "runner", "metrics=stats", "data.limit=1", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_one_clear_line_and_leaves_nothing(
    case: Case, data: Path, tmp_path: Path
) -> None:
    with FakeOpenAIServer() as server:
        server.served_models = ["fake-model"]
        args = [a.format(d=data, server=server.url) for a in case.args.split()]
        done = run_in_process("metrics=stats", "data.limit=1", *args, cwd=tmp_path)
    assert server.requests == [], "a refused run called the model"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-1500:]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-1500:]
    assert "Traceback" not in done.stderr
    for words in case.expect:
        assert words in lines[0], (words, lines[0])
    assert "s3cret" not in done.stdout + done.stderr  # a URI's password is never shown
    assert not (tmp_path / "mlruns").exists(), "an MLflow store was created for a refused run"


def test_a_document_shorter_than_one_chunk_is_valid(data: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        done = run_in_process(
            "metrics=stats",
            "data.limit=1",
            "data=dir",
            f"data.path={data / 'story'}",
            "model=openai_compatible",
            f"model.api_base={server.url}",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr[-1500:]
    assert len(server.requests) == 1  # one chunk, one call


def test_verbose_shows_the_traceback_behind_the_line(tmp_path: Path) -> None:
    done = run_cli(["temperature=abc", "verbose=true"], tmp_path)
    assert done.returncode == 2
    assert "Traceback" in done.stderr and done.stderr.strip().splitlines()[-1].startswith(
        "error: temperature=abc"
    )


def test_the_key_given_in_config_is_not_echoed(tmp_path: Path) -> None:
    done = run_cli(["+model.api_key=sk-FAKE-not-a-real-key"], tmp_path)
    assert done.returncode == 2 and "0123456789" not in done.stderr + done.stdout
