"""``python -m runner --help`` lists the loose-module plugins the runner would find.

A loose module is a ``<name>.py`` in the folder the runner starts in (``registry.find``); the
runner does not look in ``--config-dir`` (checked here with the registry itself), so the
files there are named as not found instead of listed. Listing imports none of them: each
file below writes a marker when imported, and no marker may appear.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runner.plugins.errors import PluginError
from runner.plugins.listing import kinds_of
from runner.plugins.registry import find

REPO = Path(__file__).resolve().parents[3]

STRATEGY = """
from pathlib import Path
Path(__file__).with_suffix(".imported").touch()
ROLES = ()
IGNORES = {}
PROMPT_DIRS = ()


def summarize(chunks, *, n=5):
    return None
"""
METRIC = """
from pathlib import Path
Path(__file__).with_suffix(".imported").touch()
ROLES = ("judge",)
PROMPT_DIRS = ()


def setup(judge):
    return None
"""
LOADER = """
from pathlib import Path
Path(__file__).with_suffix(".imported").touch()
KEYS: tuple[str, ...] = ("path",)


def load(*, path=None):
    return []
"""
HELPER = """
from pathlib import Path
Path(__file__).with_suffix(".imported").touch()


def load(path):
    return path
"""


def write(folder: Path, name: str, source: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")


def plugin_lines(cwd: Path, *args: str) -> tuple[dict[str, str], str]:
    """The kind lines of ``python -m runner --help`` run in ``cwd``, and the listing's text."""
    done = subprocess.run(
        [sys.executable, "-m", "runner", "--help", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    listing = done.stdout.split("== Strategies, metrics and data loaders ==")[1]
    lines = dict(
        line.split(": ", 1)
        for line in listing.splitlines()
        if line.startswith(("strategy: ", "metrics: ", "data: "))
    )
    return lines, listing


@pytest.fixture
def study(tmp_path: Path) -> Path:
    """A study folder with a loose strategy, metric and data loader, a helper and a broken file."""
    write(tmp_path, "first_words", STRATEGY)
    write(tmp_path, "shouts", METRIC)
    write(tmp_path, "my_books", LOADER)
    write(tmp_path, "helpers", HELPER)
    write(tmp_path, "broken", "def summarize(:\n")
    return tmp_path


def test_help_in_a_study_folder_lists_its_loose_modules_by_kind(study: Path) -> None:
    lines, _ = plugin_lines(study)
    here = study.resolve()
    assert lines["strategy"].endswith(
        f"(built-in); first_words (module file {here / 'first_words.py'})"
    )
    assert lines["metrics"].endswith(f"(built-in); shouts (module file {here / 'shouts.py'})")
    assert lines["data"].endswith(f"(built-in); my_books (module file {here / 'my_books.py'})")
    listed = " ".join(lines.values())
    assert "helpers" not in listed and "broken" not in listed
    assert sorted(p.name for p in study.glob("*.imported")) == []


def test_the_listed_loose_modules_are_what_the_registry_finds(
    study: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(study)
    assert find("strategy", "first_words").file == (study / "first_words.py").resolve()
    assert find("metrics", "shouts").file == (study / "shouts.py").resolve()


def test_help_with_config_dir_names_its_plugin_files_as_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "my_conf"
    write(conf, "conf_strategy", STRATEGY)
    write(conf, "conf_metric", METRIC)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lines, listing = plugin_lines(elsewhere, "--config-dir", str(conf))
    assert "conf_strategy" not in lines["strategy"] and "conf_metric" not in lines["metrics"]
    note = [line for line in listing.splitlines() if line.startswith("not found: ")]
    assert len(note) == 1
    assert note[0].startswith(f"not found: conf_metric.py, conf_strategy.py in --config-dir {conf}")
    assert str(elsewhere) in note[0]
    assert sorted(p.name for p in conf.glob("*.imported")) == []
    # what the note says is how the runner finds plugins: not in --config-dir
    monkeypatch.chdir(elsewhere)
    with pytest.raises(PluginError, match="strategy=conf_strategy is unknown"):
        find("strategy", "conf_strategy")


def test_help_with_config_dir_of_this_folder_lists_them_once(study: Path) -> None:
    lines, listing = plugin_lines(study, "--config-dir", ".")
    assert "first_words (module file" in lines["strategy"] and "not found" not in listing


def test_a_loose_module_named_like_a_built_in_is_listed_as_a_clash(tmp_path: Path) -> None:
    write(tmp_path, "hier", STRATEGY)
    lines, listing = plugin_lines(tmp_path)
    assert lines["strategy"] == "baseline, hier, incremental, none, summit (built-in)"
    assert f"  {(tmp_path / 'hier.py').resolve()} clashes with strategy=hier (built-in)" in listing


@pytest.mark.parametrize(
    ("source", "kinds"),
    [
        (STRATEGY, ["strategy"]),
        (METRIC, ["metrics"]),
        (LOADER, ["data"]),
        (HELPER, []),
        ("ROLES = ()\n", []),
        ("def setup(): ...\n", []),
        ("try:\n    from x import summarize\nexcept ImportError:\n    ROLES = ()\n", ["strategy"]),
        ("def f():\n    ROLES = ()\n\n\ndef summarize(c): ...\n", []),
        ("x = (\n", []),
    ],
)
def test_a_modules_kind_is_read_from_what_it_declares(
    tmp_path: Path, source: str, kinds: list[str]
) -> None:
    file = tmp_path / "mod.py"
    file.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    assert kinds_of(file) == kinds
