"""``python -m runner.view RUN_ID|latest [out=FILE] [tracking.uri=URI] ...``: the command line.

Its options are ``key=value`` words, as the runner's (``OPTIONS``: each with its help line);
the store is ``tracking.uri=URI`` here as in every command (``--tracking-uri URI`` too).

Writes the page of any stored run (``RUN_ID`` may be ``latest``: the newest FINISHED run of the
experiment) to a file, and with ``log=true`` logs it to the run too. The page itself comes
from the renderer it is given (``runner.view.page.render_run``: ``runner.view.page.main``
passes it), so this module does not import the page module, which re-exports ``main``.
MLflow and the config are imported only once the arguments are valid, so a wrong command
answers at once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from runner.config.folders import SpellingError, store_given
from runner.view.artifacts import ARTIFACT, Client

USAGE = (
    "usage: python -m runner.view RUN_ID|latest [out=FILE] [tracking.uri=URI] "
    "[tracking.experiment=NAME] [log=true]"
)
OPTIONS = {
    "out": f"the file the page is written to (default: {ARTIFACT} in the current folder)",
    "tracking.uri": "the MLflow store to read (default: sqlite:///<this folder>/mlruns/mlflow.db; "
    "--tracking-uri URI means the same)",
    "tracking.experiment": "the experiment 'latest' looks in (default: summarization)",
    "log": f"true: also log the page to the run as its {ARTIFACT} artifact (default: false)",
}
"""Each ``key=value`` option -> its one-line help (``--help`` and the commands reference)."""
METAVARS = {"out": "FILE", "tracking.uri": "URI", "tracking.experiment": "NAME", "log": "true"}
"""What each option's value is, as ``USAGE`` writes it."""
HELP_FLAGS = ("-h", "--help")
Render = Callable[[Client, str], str]
"""The page of a stored run as HTML: ``runner.view.page.render_run``."""


def help_text() -> str:
    """What ``--help`` prints: the usage, what the command does and each option."""
    shown = {f"{key}={METAVARS[key]}": text for key, text in OPTIONS.items()}
    width = max(len(k) for k in shown)
    rows = [f"  {key:<{width}}  {text}" for key, text in shown.items()]
    return "\n".join(
        [
            USAGE,
            "",
            "Write the summary viewer page of a stored run (RUN_ID: MLflow's Run ID, or latest: "
            "the newest FINISHED run of the experiment).",
            "",
            "options:",
            *rows,
        ]
    )


def arguments(argv: list[str]) -> tuple[str, dict[str, str]]:
    """The run id and the ``key=value`` options; ``ValueError`` saying what is wrong.

    The store may also be given as ``--tracking-uri URI``, as every command accepts it.
    """
    argv, uri = store_given(argv)
    run_id, options = "", {} if uri is None else {"tracking.uri": uri}
    for item in argv:
        key, eq, value = item.partition("=")
        if item.startswith("-"):
            raise ValueError(f"{key} is not an option; options: {', '.join(OPTIONS)} (key=value)")
        if not eq:
            if run_id:
                raise ValueError(f"two run ids given ({run_id}, {item}); give one")
            run_id = item
        elif key in OPTIONS:
            options[key] = value
        else:
            raise ValueError(f"{key} is not an option; options: {', '.join(OPTIONS)}")
    if not run_id:
        raise ValueError("give the run id (MLflow's Run ID, or 'latest')")
    return run_id, options


def main(render_run: Render, argv: list[str] | None = None) -> int:
    """Write the page of one run to a file (and log it to the run with ``log=true``)."""
    words = sys.argv[1:] if argv is None else argv
    if any(w in HELP_FLAGS for w in words):
        print(help_text())
        return 0
    try:
        run_id, options = arguments(words)
    except SpellingError as err:  # both spellings of the store: the one line says it all
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"error: {err}\n{USAGE}", file=sys.stderr)
        return 2
    from runner.tracking.store import default_tracking_uri, missing_store, unusable_server

    uri = options.get("tracking.uri") or default_tracking_uri()
    missing = missing_store(uri) or unusable_server(uri)
    if missing:  # reading through MLflow would create an empty store here
        print(f"error: {missing}", file=sys.stderr)
        return 2
    from runner.tracking import reader as results

    experiment = options.get("tracking.experiment") or "summarization"
    client = results.client(uri)  # the read side's client: mlflow stays behind its door
    if run_id == "latest":
        runs = results.find_runs(uri, experiment, status="FINISHED")
        if not runs:
            print(
                f"error: no FINISHED run in experiment {experiment!r} of {uri}; "
                "check tracking.uri and tracking.experiment",
                file=sys.stderr,
            )
            return 2
        run_id = runs[0].run_id
    try:
        html = render_run(client, run_id)
    except Exception as err:  # noqa: BLE001 - MLflow's errors, without importing MLflow
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(
            f"error: cannot read run {run_id} from {uri} ({first}); copy the Run ID from the "
            "MLflow UI and check tracking.uri",
            file=sys.stderr,
        )
        return 2
    out = Path(options.get("out") or ARTIFACT)
    out.write_text(html, encoding="utf-8")
    if options.get("log", "false").lower() in ("1", "true", "yes"):
        client.log_text(run_id, html, ARTIFACT)
    print(f"wrote {out} ({len(html.encode()) / 1024:,.0f} KB) for run {run_id}")
    return 0
