"""The end-of-run summary prints small values with their significant digits (0.0183, not 0.02)."""

from __future__ import annotations

from runner.llm.call_log import CallTotals
from runner.run.console import format_summary
from runner.run.lifecycle import RunResult

VALUES = {"m/ratio": 0.0183, "m/half": 0.5, "m/score": 73.8273, "m/tokens": 1234.5, "m/zero": 0.0}
EXPECTED = {
    "m/ratio": "0.0183",
    "m/half": "0.500",
    "m/score": "73.83",
    "m/tokens": "1234.50",
    "m/zero": "0",
}


def _result() -> RunResult:
    return RunResult(
        run_id="0" * 32,
        run_name="strategy=hier",
        summaries={"doc-a": "A summary.", "doc-b": "Another."},
        system_metrics=dict(VALUES),
        totals=CallTotals(),
        tracking_uri="sqlite:///nowhere/mlflow.db",
        headline=tuple(VALUES),
        per_document={"doc-a": dict(VALUES), "doc-b": {"m/ratio": 0.25}},
    )


def test_headline_values_keep_their_significant_digits() -> None:
    lines = format_summary(_result()).splitlines()
    for key, text in EXPECTED.items():
        (line,) = [x for x in lines if x.strip().startswith(key)]
        assert line.split()[1] == text, line
    assert "0.02 " not in "\n".join(lines)


def test_the_document_table_uses_the_same_rule() -> None:
    lines = format_summary(_result()).splitlines()
    (row,) = [x for x in lines if x.strip().startswith("doc-a")]
    assert row.split()[1:] == list(EXPECTED.values())
    (other,) = [x for x in lines if x.strip().startswith("doc-b")]
    assert other.split()[1:] == ["0.250", "-", "-", "-", "-"]


def test_the_ui_line_names_the_store_as_every_command_does_and_serves_it() -> None:
    """``tracking.uri=`` (the one spelling), and the pasted command serves the run's store."""
    import dataclasses
    import shlex

    from runner.ui import command

    store = "sqlite:////data/my study/mlflow.db"
    result = dataclasses.replace(_result(), tracking_uri=store, experiment_id="3")
    lines = format_summary(result).splitlines()
    (ui,) = [x for x in lines if x.strip().startswith("MLflow UI:")]
    pasted = shlex.split(ui.split("MLflow UI:", 1)[1])
    assert pasted[:3] == ["python", "-m", "runner.ui"] and pasted[3] == f"tracking.uri={store}"
    assert command(pasted[3:])[-2:] == ["--backend-store-uri", store]
    (link,) = [x for x in lines if "then open" in x]
    assert "/#/experiments/3/runs?" in link and f"viewStateShareKey=run-{'0' * 32}" in link
