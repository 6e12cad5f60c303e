"""``python -m runner.batches``: the provider batches in flight for a response cache; cancel them.

A job with ``<role>.batch=true`` writes every batch it submits to the ledger beside its
response cache (``runner/llm/batch/ledger.py``) before it waits, so what is in flight, and
what it costs to stop, is readable from the ledger alone, without MLflow or a running job:

    python -m runner.batches                      # live batches of ./.cache/llm
    python -m runner.batches --all                # collected ones too
    python -m runner.batches --refresh            # ask each provider for its batches' state now
    python -m runner.batches cache.dir=/shared/llm-cache      # or --cache-dir /shared/...
    python -m runner.batches cancel msgbatch_01...            # stop one at its provider
    python -m runner.batches cancel --all                     # stop every live one

A cancelled batch stays in the ledger (status ``cancelling``) until a rerun of its job collects
what it answered before the cancel; that rerun sends the requests it did not answer again.
Exit status 0, or 1 after an error line (on stderr, one line each); an API key is read from
the variable the entry names and never printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from runner.api.errors import RunnerError
from runner.config.folders import SpellingError, store_given
from runner.llm.batch import BatchEntry, BatchProvider, Ledger, provider_for
from runner.llm.spec import ModelSpec

DESCRIPTION = "Provider batches in flight (the ledger beside the response cache); cancel them."
CACHE_KEY = "cache.dir="
"""The job's own override naming the cache, accepted here as it is typed for the job."""
COLUMNS = (
    ("provider", 9),
    ("batch id", 34),
    ("model (role)", 22),
    ("age", 7),
    ("requests", 8),
    ("done", 6),
    ("failed", 6),
    ("seen", 11),
)
"""Each listed column and its width; the status follows, as long as it is."""


class CommandError(RunnerError):
    """What this command cannot do, as the one line it prints."""


def parser() -> argparse.ArgumentParser:
    """The listing's options and the ``cancel`` subcommand."""
    top = argparse.ArgumentParser(prog="python -m runner.batches", description=DESCRIPTION)
    _cache_option(top, None)
    top.add_argument("--all", action="store_true", help="list collected batches too")
    top.add_argument(
        "--refresh",
        action="store_true",
        help="ask each live batch's provider for its state now and record it in the ledger",
    )
    sub = top.add_subparsers(dest="command")
    stop = sub.add_parser("cancel", help="cancel a live batch at its provider (or --all)")
    _cache_option(stop, argparse.SUPPRESS)  # listed in cancel's --help too
    stop.add_argument("batch_id", nargs="?", help="the provider's batch id, as listed")
    stop.add_argument("--all", action="store_true", dest="every", help="cancel every live batch")
    return top


def _cache_option(command: argparse.ArgumentParser, default: str | None) -> None:
    """``--cache-dir`` in the help; ``main`` takes it (and ``cache.dir=``) out before parsing."""
    command.add_argument(
        "--cache-dir",
        default=default,
        metavar="DIR",
        help="the response cache whose ledger to read, also written cache.dir=DIR as for the "
        "job (default: ./.cache/llm, the job's default)",
    )


def split_cache(argv: list[str]) -> tuple[list[str], str | None]:
    """``argv`` without ``cache.dir=DIR`` and ``--cache-dir DIR``, and the folder they name.

    The two spellings mean the same; given with different folders they are a
    ``SpellingError`` naming both (which one won was not said).
    """
    return store_given(argv, key=CACHE_KEY.rstrip("="), flag="--cache-dir", metavar="DIR")


def cache_folder(given: str | None) -> str:
    """The cache to read: the one given, else the job's default (``./.cache/llm``)."""
    if given:
        return given
    from runner.config.run_config import default_cache_dir

    return default_cache_dir()


def duration(seconds: float) -> str:
    """'42 s', '12 min', '3.4 h', '2.1 d'."""
    if seconds < 90:
        return f"{max(0.0, seconds):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def status_of(entry: BatchEntry) -> str:
    """The provider's last word, and what it means for the runner."""
    if entry.collected:
        return f"{entry.status}, collected"
    if entry.ended:
        return f"{entry.status}: no more answers will come; a rerun of its job collects them"
    return entry.status


def row(entry: BatchEntry, now: float) -> str:
    """One batch as a line of the listing."""
    seen = duration(now - entry.updated_at) + " ago" if entry.updated_at else "never"
    values = (
        entry.provider,
        entry.batch_id,
        f"{entry.alias} ({entry.role})",
        duration(entry.age_s(now)),
        str(len(entry.requests)),
        str(entry.done),
        str(entry.failed),
        seen,
    )
    cells = [f"{v:<{w}}" for v, (_, w) in zip(values, COLUMNS, strict=True)]
    return " ".join([*cells, status_of(entry)])


def listing(ledger: Ledger, everything: bool, now: float | None = None) -> str:
    """The batches in flight (``everything``: every one on record), one line each."""
    now = time.time() if now is None else now
    shown = ledger.entries() if everything else ledger.live()
    if not shown:
        what = "no batches on record" if everything else "no batches in flight"
        return f"{what} in {ledger.folder}"
    live = sum(e.live for e in shown)
    head = f"{len(shown)} batch{'es' * (len(shown) != 1)} in {ledger.folder} ({live} in flight)"
    header = " ".join([*(f"{name:<{w}}" for name, w in COLUMNS), "status"])
    return "\n".join([head, header, *(row(e, now) for e in shown)])


def spec_of(entry: BatchEntry) -> ModelSpec:
    """The model of ``entry`` as far as its provider's batch API needs it."""
    return ModelSpec(
        name=entry.alias, model=entry.model, api_base=entry.api_base, api_key_env=entry.api_key_env
    )


def provider(entry: BatchEntry) -> BatchProvider:
    """The batch API of ``entry``, with the key from the variable the entry names."""
    key = None
    if entry.api_key_env:
        key = os.environ.get(entry.api_key_env)
        if not key:
            raise CommandError(
                f"batch {entry.batch_id}: ${entry.api_key_env} is not set; export the "
                f"{entry.provider} key in it (as for the job) and run this again"
            )
    return provider_for(spec_of(entry), entry.role, key)


def updated(ledger: Ledger, batch_id: str, **fields: object) -> BatchEntry:
    """``batch_id``'s entry as the ledger holds it now, with ``fields`` set, written back.

    Read again under the ledger's lock, so a job marking it collected meanwhile is not undone.
    """
    with ledger.locked():
        entry = ledger.find(batch_id)
        if entry is None:
            raise CommandError(f"batch {batch_id}: its ledger file in {ledger.folder} is gone")
        for name, value in fields.items():
            setattr(entry, name, value)
        entry.updated_at = time.time()
        ledger.write(entry)
    return entry


def refresh(ledger: Ledger) -> list[str]:
    """Ask the provider of each live batch for its state; record it. The error lines."""
    errors = []
    for entry in ledger.live():
        try:
            state = provider(entry).state(entry.batch_id)
        except RunnerError as err:
            errors.append(str(err) if isinstance(err, CommandError) else _about(entry, err))
            continue
        updated(
            ledger,
            entry.batch_id,
            status=state.status,
            done=state.done,
            failed=state.failed,
            ended=state.ended or entry.ended,
        )
    return errors


def _about(entry: BatchEntry, err: Exception) -> str:
    """A provider's error about ``entry``'s batch, as one line."""
    first = str(err).splitlines()[0] if str(err) else type(err).__name__
    return f"batch {entry.batch_id} ({entry.provider}): {first}"


CANCELLED = (
    "cancelled at {provider}: {batch_id} ({alias}, {role}; {requests} requests, {done} answered "
    "when last seen). It stays listed until a rerun of its job collects what it answered; that "
    "rerun submits the cancelled requests again (drop {role}.batch=true to send them online)"
)


def cancel_one(ledger: Ledger, entry: BatchEntry) -> str:
    """Cancel ``entry``'s batch at its provider and mark it 'cancelling'; what was done."""
    if not entry.live:
        return f"batch {entry.batch_id} is collected already: nothing to cancel"
    if entry.ended:
        return (
            f"batch {entry.batch_id} has ended ({entry.status}): nothing to cancel; a rerun "
            f"of its job collects its answers"
        )
    try:
        provider(entry).cancel(entry.batch_id)
    except CommandError:
        raise
    except RunnerError as err:
        raise CommandError(_about(entry, err)) from err
    marked = updated(ledger, entry.batch_id, status="cancelling")
    return CANCELLED.format(
        provider=marked.provider,
        batch_id=marked.batch_id,
        alias=marked.alias,
        role=marked.role,
        requests=len(marked.requests),
        done=marked.done,
    )


def cancel(ledger: Ledger, batch_id: str | None, every: bool) -> tuple[list[str], list[str]]:
    """Cancel one batch, or every live one; (lines done, error lines)."""
    if every == (batch_id is not None):
        raise CommandError(
            "cancel takes one batch id or --all: python -m runner.batches cancel <batch_id>"
        )
    if batch_id is not None:
        entry = ledger.find(batch_id)
        if entry is None:
            raise CommandError(unknown(ledger, batch_id))
        return [cancel_one(ledger, entry)], []
    done, errors = [], []
    live = [e for e in ledger.live() if not e.ended and e.status != "cancelling"]
    if not live:
        return [f"no batches to cancel in {ledger.folder}"], []
    for entry in live:
        try:
            done.append(cancel_one(ledger, entry))
        except CommandError as err:
            errors.append(str(err))
    return done, errors


def unknown(ledger: Ledger, batch_id: str) -> str:
    """The line for a batch id the ledger does not hold: the ones it does."""
    known = [e.batch_id for e in ledger.entries()]
    if not known:
        return f"no batch {batch_id} in {ledger.folder}: the ledger is empty"
    live = {e.batch_id for e in ledger.live()}
    listed = ", ".join(f"{k}{'' if k in live else ' (collected)'}" for k in known)
    return f"no batch {batch_id} in {ledger.folder}; known: {listed}"


def main(argv: list[str] | None = None) -> int:
    """List, refresh or cancel; 1 after any error line."""
    try:
        words, cache = split_cache(list(sys.argv[1:] if argv is None else argv))
    except SpellingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args = parser().parse_args(words)
    ledger = Ledger(Path(cache_folder(cache)).expanduser().resolve())
    errors: list[str] = []
    try:
        if args.command == "cancel":
            done, errors = cancel(ledger, args.batch_id, args.every)
            print("\n".join(done))
        else:
            if args.refresh:
                errors = refresh(ledger)
            print(listing(ledger, args.all))
    except RunnerError as err:
        errors.append(str(err))
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
