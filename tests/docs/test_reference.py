"""The generated references (``runner/config/reference/``, ``docs/hooks/reference.py``).

The config tree is walked here on its own (PyYAML over every file), so a key added to a
YAML file without a description, or unknown to the reference, fails; types and defaults are
compared with values read from the files' text, not from the reference's own code.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from runner.config.reference import Reference, ReferenceError, build, markdown, yaml_comments
from runner.report.config import ReportConfig

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
HYDRA_KEYS = {"defaults", "hydra", "_self_"}


def leaves(data: Any, prefix: str = "") -> list[str]:
    """Dotted keys of every leaf of a YAML mapping (an empty mapping has none)."""
    out: list[str] = []
    for key, value in (data or {}).items():
        if key in HYDRA_KEYS:
            continue
        if isinstance(value, dict):
            out += leaves(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}")
    return out


def conf_files(conf: Path) -> list[Path]:
    """Every option file of the runner and the report (Hydra's own ``hydra/`` group apart)."""
    return sorted(p for p in conf.rglob("*.yaml") if p.relative_to(conf).parts[0] != "hydra")


@pytest.fixture(scope="module")
def reference() -> Reference:
    return build(ReportConfig)


def test_every_key_of_every_conf_file_is_described(reference: Reference) -> None:
    missing = []
    files = conf_files(CONF)
    assert len(files) > 60  # the whole tree, not an empty glob
    for path in files:
        file = path.relative_to(CONF).as_posix()
        for key in leaves(yaml.safe_load(path.read_text(encoding="utf-8"))):
            entry = reference.lookup(file, key)
            if entry is None or not entry.description.strip():
                missing.append(f"{file}: {key}")
    assert not missing


def _copy(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    return conf


def test_a_top_level_key_without_its_comment_fails(tmp_path: Path) -> None:
    conf = _copy(tmp_path)
    config = conf / "config.yaml"
    text = config.read_text(encoding="utf-8")
    comment = "# Print the traceback behind an error (errors are one line otherwise).\n"
    assert comment in text
    config.write_text(text.replace(comment, ""), encoding="utf-8")
    with pytest.raises(ReferenceError, match="verbose has no description"):
        build(ReportConfig, conf)


def test_a_metric_parameter_without_its_comment_fails(tmp_path: Path) -> None:
    conf = _copy(tmp_path)
    (conf / "metrics" / "coherence.yaml").write_text("coherence:\n  gap: 3\n", encoding="utf-8")
    with pytest.raises(ReferenceError, match="coherence.gap has no description"):
        build(ReportConfig, conf)


def test_a_new_undeclared_top_level_key_fails(tmp_path: Path) -> None:
    conf = _copy(tmp_path)
    config = conf / "config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + "\n# Described but not typed.\nshiny: 1\n",
        encoding="utf-8",
    )
    with pytest.raises(ReferenceError, match="shiny is not in TOP_LEVEL"):
        build(ReportConfig, conf)


def test_a_preset_setting_an_unknown_key_fails(tmp_path: Path) -> None:
    conf = _copy(tmp_path)
    preset = conf / "experiment" / "local_demo.yaml"
    preset.write_text(
        preset.read_text(encoding="utf-8") + "strategy:\n  no_such_key: 1\n", encoding="utf-8"
    )
    with pytest.raises(ReferenceError, match="strategy.no_such_key is not a documented key"):
        build(ReportConfig, conf)


def _source_default(path: Path, name: str) -> tuple[str, str]:
    """``name: <type> = <default>`` (or ``= field(default=<default>, ...)``) as written in a
    Python file."""
    text = path.read_text(encoding="utf-8")
    found = re.search(
        rf"^\s+{name}: ([\w |]+?) = (?:field\(\s*default=)?([^,\n)]+)", text, re.MULTILINE
    )
    assert found, f"{name} not found in {path}"
    return found.group(1), found.group(2).strip()


def test_types_and_defaults_match_an_independent_read(reference: Reference) -> None:
    top = yaml.safe_load((CONF / "config.yaml").read_text(encoding="utf-8"))
    chunk = reference.lookup("config.yaml", "chunk")
    assert chunk is not None and chunk.default == top["chunk"] == 2048
    assert chunk.type.startswith("int")

    kind, default = _source_default(ROOT / "runner" / "llm" / "spec.py", "batch")
    batch = reference.lookup("model/claude.yaml", "batch")
    assert batch is not None and (kind, default) == ("bool", "False")
    assert batch.type == "bool" and batch.default is False

    kind, default = _source_default(ROOT / "runner" / "llm" / "retry.py", "deadline_s")
    deadline = reference.lookup("model/gpt4.yaml", "retry.deadline_s")
    assert deadline is not None and deadline.default == float(default) == 600.0
    assert deadline.type == "float or null" and kind == "float | None"

    hier = yaml.safe_load((CONF / "strategy" / "hier.yaml").read_text(encoding="utf-8"))
    kind, _ = _source_default(ROOT / "strategies" / "hier" / "__init__.py", "level_ratio")
    ratio = reference.lookup("strategy/hier.yaml", "level_ratio")
    assert ratio is not None and ratio.default == hier["level_ratio"] and ratio.type == kind

    report = yaml.safe_load((CONF / "report.yaml").read_text(encoding="utf-8"))
    resamples = reference.lookup("report.yaml", "resamples")
    assert resamples is not None and resamples.default == report["resamples"] == 1000
    assert resamples.type == "int"

    progress = reference.lookup("config.yaml", "progress")
    assert progress is not None and {"auto", "bar", "lines", "off"} <= set(
        progress.allowed.split(", ")
    )


def test_comments_are_the_lines_directly_above_a_key() -> None:
    text = (
        "# The file.\n\n# Alone above a.\na: 1\n# Cut off by a blank line.\n\nb: 2\n"
        "c:\n  # Nested.\n  d: 3\ne: |\n  f: not a key\n# Above g.\ng: 4\n"
    )
    intro, found = yaml_comments(text)
    assert intro == "The file."
    assert found == {
        "a": "Alone above a.",
        "b": "",
        "c": "",
        "c.d": "Nested.",
        "e": "",
        "g": "Above g.",
    }


def test_the_page_has_a_row_per_key(reference: Reference) -> None:
    page = markdown(reference)
    for path in conf_files(CONF):
        group = path.relative_to(CONF).parts[0]
        if group not in ("strategy", "metrics"):
            continue
        for key in leaves(yaml.safe_load(path.read_text(encoding="utf-8"))):
            assert f"| `{group}.{key}` |" in page
    assert "| `chunk` | int > 0 | `2048` |" in page


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hook", ROOT / "docs/hooks/reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_commands_page_lists_every_option_of_the_parsers() -> None:
    from runner import batches
    from runner.annotate.__main__ import parser

    page = _hook().commands()
    words = set(re.findall(r"--[\w-]+", page))
    for command in ("--cache-dir", "--refresh", "--key", "--out", "--no-record", "--system"):
        assert command in words
    for top in (parser(), batches.parser()):
        for action in top._actions:
            assert all(o in words or not o.startswith("--") for o in action.option_strings)
    for flag in ("--multirun", "--cfg", "--config-dir", "--backend-store-uri", "--port"):
        assert flag in words
    assert "### `python -m runner.annotate export`" in page
    assert "### `python -m runner.batches cancel`" in page
    assert "`tracking.experiment=`" in page
    assert "SUPPRESS" not in page
    for folder in sorted(p for p in CONF.iterdir() if p.is_dir() and p.name != "hydra"):
        retired = {"precomputed"}  # kept for its error message only, as --help leaves it out
        names = [p.stem for p in sorted(folder.glob("*.yaml")) if p.stem not in retired]
        options = ", ".join(f"`{name}`" for name in names)
        assert f"| `{folder.name}` | {options} |" in page
    assert "| `hydra/sweeper` | `basic`, `resuming` |" in page


def test_the_hook_replaces_only_its_markers() -> None:
    hook = _hook()
    assert hook.on_page_markdown("# Plain\n", None, None, None) == "# Plain\n"
    page = hook.on_page_markdown(f"# Keys\n\n{hook.CONFIG_MARKER}\n", None, None, None)
    assert hook.CONFIG_MARKER not in page and "## Top level" in page


def _composed(*overrides: str) -> dict[str, Any]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        config = compose(config_name="config", overrides=list(overrides))
    return typing.cast(dict[str, Any], OmegaConf.to_container(config, resolve=True))


@pytest.mark.parametrize("key", ["on_error", "progress"])
def test_the_allowed_values_listed_are_those_the_runner_accepts(
    reference: Reference, key: str
) -> None:
    from runner.api.errors import ConfigError
    from runner.config.run_config import build_run_config

    entry = reference.lookup("config.yaml", key)
    assert entry is not None and entry.allowed
    for value in entry.allowed.split(", "):
        build_run_config(_composed(f"{key}={value}"))
    with pytest.raises(ConfigError, match=key):
        build_run_config(_composed(f"{key}=sometimes"))
