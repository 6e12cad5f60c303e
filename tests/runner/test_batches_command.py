"""``python -m runner.batches``: what the ledger holds, listed; refreshed and cancelled at the
provider (a loopback Anthropic Message Batches server).

Entries are written with ``Ledger.write`` as a job writes them; ages are computed here from
the times written, counts from the entries' own lists, and the provider's side is what the
loopback server says it was asked and holds.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner import batches
from runner.llm.batch.ledger import BatchEntry, Ledger
from tests.helpers.anthropic_server import FakeAnthropicServer, Outcome

REPO = Path(__file__).resolve().parents[2]
CLAUDE = "anthropic/claude-sonnet-4-5-20250929"


def entry(batch_id: str, age_s: float, requests: int, **fields: object) -> BatchEntry:
    """A ledger entry submitted ``age_s`` ago holding ``requests`` distinct cache keys."""
    keys = [f"{batch_id}-{i}".encode().hex()[:64].ljust(64, "0") for i in range(requests)]
    made = BatchEntry(
        provider=str(fields.pop("provider", "anthropic")),
        batch_id=batch_id,
        model=str(fields.pop("model", CLAUDE)),
        api_base=None,
        alias=str(fields.pop("alias", "claude")),
        role=str(fields.pop("role", "judge")),
        requests=keys,
        submitted_at=time.time() - age_s,
        api_key_env="ANTHROPIC_API_KEY",
    )
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``python -m runner.batches argv`` in this process: (exit status, stdout, stderr)."""
    status = batches.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def line_of(text: str, batch_id: str) -> str:
    """The listing's line for ``batch_id``."""
    (found,) = [line for line in text.splitlines() if f" {batch_id} " in line]
    return found


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    """Three batches: two live (one ended, not collected yet), one collected."""
    book = Ledger(tmp_path / "cache")
    book.write(entry("msgbatch_live", 2 * 3600 + 7 * 60, 12, done=5, failed=1))
    book.write(
        entry(
            "batch_ended",
            5 * 60,
            3,
            provider="openai",
            model="openai/gpt-4-0613",
            alias="gpt4",
            role="evaluator",
            status="completed",
            done=3,
            ended=True,
        )
    )
    book.write(entry("msgbatch_old", 3 * 86400, 40, status="ended", done=40, collected=True))
    return book


def test_the_listing_shows_each_live_batch_with_its_age_and_counts(
    ledger: Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "--cache-dir", str(ledger.folder.parent))
    assert status == 0 and err == ""
    assert f"2 batches in {ledger.folder.resolve()} (2 in flight)" in out
    live = line_of(out, "msgbatch_live").split()
    assert live[:3] == ["anthropic", "msgbatch_live", "claude"]
    assert "(judge)" in live
    age = f"{(2 * 3600 + 7 * 60) / 3600:.1f}"  # 2.1 h
    assert live[live.index("(judge)") + 1 : live.index("(judge)") + 6] == [age, "h", "12", "5", "1"]
    ended = line_of(out, "batch_ended")
    assert "gpt4 (evaluator)" in ended and " 5 min " in ended
    assert ended.endswith("completed: no more answers will come; a rerun of its job collects them")
    assert "msgbatch_old" not in out


def test_all_lists_collected_batches_too(
    ledger: Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "--all", "--cache-dir", str(ledger.folder.parent))
    assert status == 0
    old = line_of(out, "msgbatch_old")
    assert " 3.0 d " in old and " 40 " in old and old.endswith("ended, collected")
    assert "3 batches" in out and "(2 in flight)" in out


def test_the_cache_is_named_as_for_the_job_or_defaults_to_its_folder(
    ledger: Ledger, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, _ = run(capsys, f"cache.dir={ledger.folder.parent}")
    assert status == 0 and "msgbatch_live" in out
    monkeypatch.chdir(ledger.folder.parent.parent)  # the job's default: ./.cache/llm
    Ledger(Path(".cache/llm")).write(entry("msgbatch_here", 60, 1))
    status, out, _ = run(capsys)
    assert status == 0 and "msgbatch_here" in out and "msgbatch_live" not in out


def test_an_empty_ledger_is_one_line_saying_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "--cache-dir", str(tmp_path / "nothing"))
    assert status == 0 and err == ""
    assert out.strip() == f"no batches in flight in {(tmp_path / 'nothing' / 'batches').resolve()}"


def test_an_unknown_batch_id_is_one_line_listing_the_known_ones(
    ledger: Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = str(ledger.folder.parent)
    status, out, err = run(capsys, "cancel", "msgbatch_nope", "--cache-dir", folder)
    assert status == 1 and out.strip() == ""
    (line,) = err.splitlines()
    assert line.startswith("error: no batch msgbatch_nope in ")
    assert "known: msgbatch_old (collected), msgbatch_live, batch_ended" in line


def test_refresh_without_the_key_names_its_variable(
    ledger: Ledger, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    status, out, err = run(capsys, "--refresh", "--cache-dir", str(ledger.folder.parent))
    assert status == 1
    lines = err.splitlines()
    assert lines[0] == (
        "error: batch msgbatch_live: $ANTHROPIC_API_KEY is not set; export the anthropic key "
        "in it (as for the job) and run this again"
    )
    assert "msgbatch_live" in out  # still listed, as last seen
    kept = ledger.find("msgbatch_live")
    assert kept is not None and (kept.status, kept.updated_at) == ("submitted", 0.0)


def test_the_module_runs_as_a_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "runner.batches", f"cache.dir={tmp_path}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"no batches in flight in {(tmp_path / 'batches').resolve()}"


# -- at the provider: a loopback Anthropic Message Batches server -----------------------------

KEY_ENV = "RUNNER_TEST_BATCHES_KEY"
KEY = "sk-ant-test-never-printed-0123456789"


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicServer]:
    """The server, which answers only ``KEY``, and the key in the variable entries name."""
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeAnthropicServer(steps=2, api_key=KEY, fail=failing) as server:
        yield server


def failing(custom_id: str, params: dict[str, Any], attempt: int) -> Outcome | None:
    """The second request of every batch errors."""
    return "errored" if custom_id.endswith("1") else None


def submitted(server: FakeAnthropicServer, book: Ledger, requests: int) -> BatchEntry:
    """A batch created at ``server`` through Anthropic's own SDK and written to ``book`` as a
    job writes it."""
    import anthropic as sdk

    client = sdk.Anthropic(api_key=KEY, base_url=server.url, max_retries=0)
    ids = [f"{len(server.batches)}x{i}" for i in range(requests)]
    made = client.messages.batches.create(
        requests=[
            {
                "custom_id": cid,
                "params": {
                    "model": CLAUDE.split("/", 1)[1],
                    "max_tokens": 16,
                    "messages": [{"role": "user", "content": f"request {cid}"}],
                },
            }
            for cid in ids
        ]
    )
    written = BatchEntry(
        provider="anthropic",
        batch_id=made.id,
        model=CLAUDE,
        api_base=server.url,
        alias="claude",
        role="judge",
        requests=ids,
        submitted_at=time.time(),
        api_key_env=KEY_ENV,
    )
    book.write(written)
    return written


def no_key_anywhere(book: Ledger, *texts: str) -> None:
    """The key is in no output and no ledger file."""
    files = [p.read_text(encoding="utf-8") for p in book.folder.glob("*.json")]
    assert all(KEY not in t for t in (*texts, *files))


def test_refresh_records_what_the_provider_says_until_the_batch_ends(
    anthropic: FakeAnthropicServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = Ledger(tmp_path / "cache")
    made = submitted(anthropic, book, 3)
    cache = f"cache.dir={tmp_path / 'cache'}"
    status, out, err = run(capsys, "--refresh", cache)
    assert (status, err) == (0, "")
    seen = book.find(made.batch_id)
    assert seen is not None and (seen.status, seen.ended, seen.done) == ("in_progress", False, 0)
    assert seen.updated_at > 0 and line_of(out, made.batch_id).endswith(" in_progress")
    for _ in range(2):  # the server ends a batch at its third look
        status, out, err = run(capsys, "--refresh", cache)
    assert (status, err) == (0, "")
    ended = book.find(made.batch_id)
    results = [r["result"]["type"] for r in anthropic.batch(made.batch_id).results]
    assert ended is not None and ended.ended and ended.live  # a rerun of the job collects it
    assert (ended.done, ended.failed) == (results.count("succeeded"), results.count("errored"))
    assert (ended.done, ended.failed) == (2, 1)
    assert anthropic.retrieves[made.batch_id] == 3
    assert set(anthropic.api_keys) == {KEY}  # read from the variable the entry names
    no_key_anywhere(book, out, err)


def test_cancel_stops_the_batch_at_the_provider_and_keeps_it_listed(
    anthropic: FakeAnthropicServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = Ledger(tmp_path / "cache")
    made = submitted(anthropic, book, 4)
    cache = f"cache.dir={tmp_path / 'cache'}"
    status, out, err = run(capsys, "cancel", made.batch_id, cache)
    assert (status, err) == (0, "")
    assert anthropic.cancelled == [made.batch_id]
    (said,) = out.splitlines()
    assert said.startswith(f"cancelled at anthropic: {made.batch_id} (claude, judge; 4 requests")
    assert "a rerun of its job collects what it answered" in said
    assert "that rerun submits the cancelled requests again" in said
    marked = book.find(made.batch_id)
    assert marked is not None and marked.status == "cancelling" and marked.live
    status, out, _ = run(capsys, cache)
    assert line_of(out, made.batch_id).endswith(" cancelling")
    status, out, err = run(capsys, "--refresh", cache)  # the provider ends it, none answered
    ended = book.find(made.batch_id)
    assert (status, err) == (0, "")
    assert ended is not None and ended.ended and (ended.done, ended.failed) == (0, 4)
    no_key_anywhere(book, out, err, said)


def test_cancel_all_cancels_every_live_batch_and_only_those(
    anthropic: FakeAnthropicServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = Ledger(tmp_path / "cache")
    first, second = submitted(anthropic, book, 2), submitted(anthropic, book, 2)
    third = submitted(anthropic, book, 1)
    third.collected = True
    book.write(third)
    status, out, err = run(capsys, "cancel", "--all", f"cache.dir={tmp_path / 'cache'}")
    assert (status, err) == (0, "")
    assert sorted(anthropic.cancelled) == sorted([first.batch_id, second.batch_id])
    assert len(out.splitlines()) == 2
    marked = [book.find(b.batch_id) for b in (first, second, third)]
    assert [m.status if m else None for m in marked] == ["cancelling", "cancelling", "submitted"]


def test_a_key_the_provider_refuses_is_one_line_without_the_key(
    anthropic: FakeAnthropicServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    book = Ledger(tmp_path / "cache")
    made = submitted(anthropic, book, 1)
    wrong = "sk-ant-wrong-also-never-printed-987"
    monkeypatch.setenv(KEY_ENV, wrong)
    status, out, err = run(capsys, "cancel", made.batch_id, f"cache.dir={tmp_path / 'cache'}")
    assert status == 1 and out.strip() == ""
    (line,) = err.splitlines()
    assert line.startswith(f"error: batch {made.batch_id} (anthropic): ")
    assert anthropic.cancelled == [] and wrong not in line and KEY not in line
    kept = book.find(made.batch_id)
    assert kept is not None and kept.status == "submitted"  # not marked: nothing was cancelled
