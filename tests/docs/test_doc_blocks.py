"""The docs that run: every marked block of README.md and docs/ runs against loopback models.

The convention (``tests/helpers/doc_blocks.py``): ``<!-- doc-test -->`` directly before a
```` ```bash ```` or ```` ```python ```` fence. A page's marked blocks run in order in one
fresh empty folder, with this interpreter's ``python`` first on PATH, fake keys, and
``OPENAI_BASE_URL``/``OPENAI_API_BASE`` and ``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_BASE``
pointing at a loopback OpenAI-compatible server and a loopback Anthropic server
(``tests/helpers/doc_models.py``); ``http://127.0.0.1:8000/v1`` in a block becomes the
OpenAI server's address. So ``python -m runner model=claude`` in a page runs its real path,
offline, and a page whose command no longer works fails here with its line and output.

The harness is tested on its own pages first: a failing block fails its page (with the page,
the line, the block and the output), blocks share one folder, a hanging block is killed, and
the runner reaches both servers through the environment alone for the models the docs use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.doc_blocks import (
    MARK,
    Block,
    BlockFailed,
    MarkError,
    block_env,
    check_page,
    find_blocks,
    marked_pages,
    run_block,
)
from tests.helpers.doc_models import (
    FAKE_ANTHROPIC_KEY,
    FAKE_OPENAI_KEY,
    Loopback,
    flagged,
    loopback_models,
)

REPO = Path(__file__).resolve().parents[2]
PLACEHOLDER = "http://127.0.0.1:8000/v1"
"""The OpenAI-compatible server's address as the docs write it (conf/model/openai_compatible)."""
BLOCK_TIMEOUT_S = 150.0
"""One block's limit: a docs command takes well under a minute; CI's 2 cores are shared."""
PAGES = marked_pages(REPO)


WORKERS = max(1, min(4, os.cpu_count() or 1))
"""Pages run this many at a time (a page's blocks stay in order): a block mostly waits on
one core for its imports, so two pages on CI's two cores take about half the time."""
PAGE_TEST = "test_the_marked_blocks_of_a_page_run"


def run_page_at(page: Path, loopback: Loopback, folder: Path, timeout_s: float) -> None:
    """Check ``page`` in a fresh empty folder under ``folder``."""
    cwd = folder / "cwd"
    cwd.mkdir()
    env = block_env(loopback.env(), REPO)
    check_page(page, REPO, cwd, env, timeout_s, {PLACEHOLDER: loopback.openai.url})


@pytest.fixture(scope="module")
def page_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[Path, Future[None]]]:
    """Every selected page started at once on ``WORKERS`` threads, against one pair of
    loopback servers; each page's test waits for its own page."""
    selected = [
        item.callspec.params["page"]
        for item in request.session.items
        if getattr(item, "originalname", "") == PAGE_TEST and hasattr(item, "callspec")
    ]
    longest_first = sorted(selected, key=lambda page: -commands_in(page))
    with loopback_models() as models:
        pool = ThreadPoolExecutor(WORKERS)
        try:
            yield {
                page: pool.submit(
                    run_page_at, page, models, tmp_path_factory.mktemp(page.stem), BLOCK_TIMEOUT_S
                )
                for page in longest_first
            }
        finally:  # after -x or Ctrl-C the pages not started yet are not run
            pool.shutdown(wait=True, cancel_futures=True)


def commands_in(page: Path) -> int:
    """How many commands of the runner a page's blocks hold: its likely share of the time."""
    try:
        return sum(b.code.count("python -m runner") for b in find_blocks(page))
    except MarkError:
        return 0  # it fails at once


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_the_marked_blocks_of_a_page_run(page: Path, page_runs: dict[Path, Future[None]]) -> None:
    page_runs[page].result()  # its BlockFailed or MarkError, raised here


def test_the_readme_getting_started_and_guides_have_marked_blocks() -> None:
    """Removing every mark would make the docs test pass by running nothing: it may not."""
    guides = sorted((REPO / "docs" / "guides").glob("*.md"))
    found = {
        "README.md": find_blocks(REPO / "README.md"),
        "docs/getting-started.md": find_blocks(REPO / "docs" / "getting-started.md"),
        "docs/guides/*.md": [b for g in guides for b in find_blocks(g)],
    }
    empty = [name for name, blocks in found.items() if not blocks]
    assert not empty, f"no {MARK} block in {', '.join(empty)}: mark the commands a newcomer copies"


# ----------------------------------------------------------------------------- the harness


def write_page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    """Servers of the test's own: the pages' runs may be using the module's at the time."""
    with loopback_models() as models:
        yield models


def test_a_failing_block_fails_its_page_naming_the_line_block_and_output(
    loopback: Loopback, tmp_path: Path
) -> None:
    page = write_page(
        tmp_path,
        "# A page\n\n"
        f"{MARK}\n```bash\necho first-block-ran > first.txt\n```\n\n"
        "Then:\n\n"
        f"{MARK}\n```python\nimport pathlib\nprint('read', pathlib.Path('first.txt').read_text())\n"
        "raise SystemExit('the second block broke on purpose')\n```\n\n"
        f"{MARK}\n```bash\ntouch third-ran\n```\n",
    )
    with pytest.raises(BlockFailed) as failed:
        run_page_at(page, loopback, tmp_path, 60)
    message = str(failed.value)
    assert message.splitlines()[0].startswith(f"{page}:11: the ```python block exited with 1")
    assert "   14  raise SystemExit('the second block broke on purpose')" in message
    assert "read first-block-ran" in message  # the output, and the first block's file was there
    assert "the second block broke on purpose" in message.split("--- its output")[1]
    assert not (tmp_path / "cwd" / "third-ran").exists()  # the page stops at its first failure


def test_a_failing_command_inside_a_bash_block_fails_it(loopback: Loopback, tmp_path: Path) -> None:
    """bash -euo pipefail: a failing command in a pipe or mid-block is not hidden."""
    page = write_page(tmp_path, f"{MARK}\n```bash\nfalse | cat\necho after\n```\n")
    with pytest.raises(BlockFailed, match=r"page.md:2: the ```bash block exited with 1"):
        run_page_at(page, loopback, tmp_path, 60)


def test_blocks_share_one_folder_and_reach_the_loopback_models(
    loopback: Loopback, tmp_path: Path
) -> None:
    """python is this interpreter, the keys are fake, the placeholder is the server; a real
    job against ``model.api_base=http://127.0.0.1:8000/v1`` runs and scores."""
    before = len(loopback.openai.requests)
    page = write_page(
        tmp_path,
        f"{MARK}\n```bash\nmkdir notes && echo kept > notes/a.txt\n"
        f'test "$(command -v python)" -ef {sys.executable}\n```\n\n'
        f"{MARK}\n```python\nimport json, os, pathlib, sys, urllib.request\n"
        "assert pathlib.Path('notes/a.txt').read_text() == 'kept\\n'\n"
        f"with urllib.request.urlopen('{PLACEHOLDER}/models') as r:\n"
        "    assert json.load(r)['object'] == 'list'\n"
        "keys = [os.environ[k] for k in ('OPENAI_API_KEY', 'ANTHROPIC_API_KEY')]\n"
        "pathlib.Path('env.json').write_text(json.dumps([sys.executable, keys]))\n```\n\n"
        f"{MARK}\n```bash\npython -m runner model=openai_compatible model.api_base={PLACEHOLDER} "
        "metrics=booookscore data.limit=1 progress=off\n```\n",
    )
    run_page_at(page, loopback, tmp_path, BLOCK_TIMEOUT_S)
    executable, keys = json.loads((tmp_path / "cwd" / "env.json").read_text())
    assert Path(executable).samefile(sys.executable)
    assert keys == [FAKE_OPENAI_KEY, FAKE_ANTHROPIC_KEY]
    asked = [str(r["messages"][-1]["content"]) for r in loopback.openai.requests[before:]]
    assert any("[Your sentence]" in text for text in asked)  # the judge ran on the server
    assert (tmp_path / "cwd" / "mlruns").is_dir()  # the run's store is in the page's folder


def test_a_hanging_block_is_killed_at_its_timeout(tmp_path: Path) -> None:
    block = Block(tmp_path / "page.md", 7, "bash", "echo started\nsleep 60 & wait\n")
    outcome = run_block(block, tmp_path, dict(os.environ), timeout_s=1.0)
    assert outcome.returncode is None and outcome.seconds < 30
    assert outcome.output.strip() == "started"


def test_marks_that_run_nothing_are_errors_and_examples_are_not_marks(tmp_path: Path) -> None:
    shown = f"````markdown\n{MARK}\n```bash\nexit 1\n```\n````\n"
    assert find_blocks(tmp_path / "p.md", shown) == []  # the convention shown, not used
    indented = (
        f'!!! tip\n    {MARK}\n    ~~~python title="x.py"\n    print(1)\n      x = 2\n    ~~~\n'
    )
    (block,) = find_blocks(tmp_path / "p.md", indented)
    assert (block.line, block.language, block.code) == (3, "python", "print(1)\n  x = 2\n")
    for broken in (
        f"{MARK}\n```console\n$ python -m runner\n```\n",
        f"{MARK}\n\n```bash\nls\n```\n",
        f"{MARK}\n```bash\nls\n",
    ):
        with pytest.raises(MarkError, match=r"p.md:1: "):
            find_blocks(tmp_path / "p.md", broken)


def test_the_blocks_get_fake_keys_and_none_of_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOGETHERAI_API_KEY", "a-real-key-of-the-caller")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////somewhere/else.db")
    env = block_env({"OPENAI_API_KEY": FAKE_OPENAI_KEY}, REPO)
    assert "TOGETHERAI_API_KEY" not in env and "MLFLOW_TRACKING_URI" not in env
    assert env["OPENAI_API_KEY"] == FAKE_OPENAI_KEY
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert not any(k.startswith(("sk-", "sk_")) for k in (FAKE_OPENAI_KEY, FAKE_ANTHROPIC_KEY))


# ----------------------------------------------------------------------------- the models


def test_the_runner_reaches_both_servers_through_the_environment_alone(
    loopback: Loopback, tmp_path: Path
) -> None:
    """model=claude and judge=gpt4 name no api_base: litellm must take the base from
    ANTHROPIC_API_BASE and OPENAI_BASE_URL (model=gpt4 and judge=claude go the same way: a
    role's gateway is the same code). The BooookScore the run records equals the share of
    clean verdicts the judge's server gave (computed here from what that server was asked)."""
    summarizer, judge = "claude", "gpt4"
    from mlflow.tracking import MlflowClient

    servers = {"claude": loopback.anthropic.online_requests, "gpt4": loopback.openai.requests}
    seen = {name: len(requests) for name, requests in servers.items()}
    done = subprocess.run(
        [
            "python",
            "-m",
            "runner",
            f"model={summarizer}",
            f"judge={judge}",
            "metrics=booookscore",
            "data.limit=1",
            "progress=off",
        ],
        cwd=tmp_path,
        env=block_env(loopback.env(), REPO),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summarized = [r["model"] for r in servers[summarizer][seen[summarizer] :]]
    judged = [r for r in servers[judge][seen[judge] :] if "[Your sentence]" in str(r["messages"])]
    model = {"claude": "claude-sonnet-4-5-20250929", "gpt4": "gpt-4-0613"}
    assert summarized and set(summarized) == {model[summarizer]}
    assert judged and {r["model"] for r in judged} == {model[judge]}
    asked = {sentence_of(r) for r in judged}
    clean = sum(not flagged(summary, sentence) for summary, sentence in asked)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    experiments = [e.experiment_id for e in client.search_experiments()]
    (run,) = client.search_runs(experiments)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["booookscore/score"] == pytest.approx(100 * clean / len(asked))


def sentence_of(request: dict[str, Any]) -> tuple[str, str]:
    """(summary, sentence) of a BooookScore request (either server's message form)."""
    texts = []
    for message in request["messages"]:
        content = message["content"]
        texts.append(content if isinstance(content, str) else "".join(b["text"] for b in content))
    text = "\n".join(texts)
    summary = text.rsplit("[Your summary]", 1)[1].split("[Your sentence]", 1)[0].strip()
    return summary, text.rsplit("[Your sentence]", 1)[1].split("[Your response]", 1)[0].strip()
