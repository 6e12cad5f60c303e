"""User mistakes that gave a traceback or wrong advice (issue 31): one clear line, exit 2.

Each case runs the command as a user would (a subprocess in a fresh folder) and checks the
exit status, that stderr is exactly one ``error:`` line with the advice, and what is on
disk afterwards: nothing created (no ``mlruns/``, no ``outputs/``), so a report has nothing
to count.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from runner.api.errors import ConfigError
from runner.config import folders
from runner.config.run_config import build_run_config
from runner.data.sources import read_items
from runner.run import preflight

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def run(module: str, args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m <module> args`` in ``cwd``, without API keys."""
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    clean.update(env, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a refused command (exit 2, no traceback)."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    return lines[0]


# --- a run or a report from a read-only folder -------------------------------------------


def read_only_command(folder: Path, command: list[str]) -> list[str]:
    """``command`` run inside ``folder`` mounted read-only, so it is refused even to root.

    A private mount namespace (``unshare -m``) when allowed; else as user nobody
    (``setpriv``) on a folder with mode 0555. CI runs as root, which ignores mode bits.
    """
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if shutil.which("unshare") and probe.returncode == 0:
        script = (
            'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && cd "$0" && exec "$@"'
        )
        return ["unshare", "-m", "sh", "-c", script, str(folder), *command]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        folder.chmod(0o555)
        script = 'cd "$0" && exec "$@"'
        setpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        return [*setpriv, "sh", "-c", script, str(folder), *command]
    folder.chmod(0o555)  # not root: the mode bits are enough
    return ["sh", "-c", 'cd "$0" && exec "$@"', str(folder), *command]


@pytest.fixture
def read_only(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An empty folder a command cannot write in (reachable by user nobody too)."""
    base = Path(tmp_path_factory.mktemp("ro"))
    for parent in (base, *base.parents):
        if parent == Path("/tmp") or parent == Path(parent.anchor):
            break
        parent.chmod(parent.stat().st_mode | 0o755)
    folder = base / "shared-results"
    folder.mkdir()
    yield folder
    folder.chmod(0o755)


def in_read_only(folder: Path, module: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(REPO), HOME=str(folder.parent))
    return subprocess.run(
        read_only_command(folder, [sys.executable, "-m", module, *args]),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_run_from_a_read_only_folder_names_the_folder_and_the_keys(read_only: Path) -> None:
    line = one_error_line(in_read_only(read_only, "runner", ["metrics=stats", "data.limit=1"]))
    assert f"cannot write in {read_only} (read-only)" in line
    for key in ("hydra.run.dir=", "tracking.uri=", "cache.dir="):
        assert key in line, line
    store = line.split("tracking.uri=")[1].split()[0]
    assert store.startswith("sqlite:///") and str(read_only) not in store  # somewhere writable
    assert list(read_only.iterdir()) == []


def test_a_sweep_from_a_read_only_folder_names_hydra_sweep_dir(read_only: Path) -> None:
    line = one_error_line(in_read_only(read_only, "runner", ["-m", "chunk=512,1024"]))
    assert "hydra.sweep.dir=" in line and "hydra.run.dir" not in line
    assert list(read_only.iterdir()) == []


def test_a_report_from_a_read_only_folder_names_out(read_only: Path) -> None:
    line = one_error_line(in_read_only(read_only, "runner.report", []))
    assert f"cannot write in {read_only}" in line and "out=" in line, line
    assert list(read_only.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "blocked"),
    [
        ([], ["hydra.run.dir", "tracking.uri", "cache.dir"]),
        (["-m"], ["tracking.uri", "cache.dir", "hydra.sweep.dir"]),
        (["hydra.run.dir=/w/o", "tracking.uri=sqlite:////w/m/db", "cache.dir=/w/c"], []),
        (["tracking.uri=http://127.0.0.1:5000", "++cache.dir=/w/c"], ["hydra.run.dir"]),
        (["hydra.run.dir=out/${now:%H}"], ["hydra.run.dir", "tracking.uri", "cache.dir"]),
        (["--cfg", "job"], []),
        (["tracking.uri=null", "cache.dir=/w/c"], ["hydra.run.dir", "tracking.uri"]),
    ],
)
def test_which_keys_still_point_into_a_read_only_folder(
    argv: list[str], blocked: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Only the cwd is read-only here: keys moved elsewhere are not named."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(folders, "is_writable", lambda f: not f.is_relative_to(tmp_path))
    line = folders.problem(argv, folders.RUN_FOLDERS)
    if not blocked:
        assert line is None
        return
    assert line is not None
    assert line.split("where this command keeps ")[1].split(";")[0] == ", ".join(blocked)


def test_the_store_error_suggests_a_writable_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The unwritable-store line once suggested $PWD/mlruns: the folder that was refused."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(ConfigError) as refused:
        preflight._tracking("sqlite:////proc/nope/mlflow.db")
    message = str(refused.value)
    assert "$PWD" not in message
    assert f"tracking.uri=sqlite:///{tmp_path / 'home' / 'runner-runs'}" in message


# --- ~ in an override ------------------------------------------------------------------


def test_a_tilde_path_says_how_to_write_it(tmp_path: Path) -> None:
    line = one_error_line(run("runner", ["data=dir", "data.path=~/books"], tmp_path))
    assert "LexerNoViableAltException" not in line
    assert "data.path=$HOME/books" in line and """'data.path="~/books"'""" in line, line
    assert list(tmp_path.iterdir()) == []


def test_the_quoted_tilde_path_it_advises_is_read_from_home(tmp_path: Path) -> None:
    """The advice works: Hydra takes the quoted value and the loader expands ~."""
    home = tmp_path / "home"
    (home / "books").mkdir(parents=True)
    (home / "books" / "notes.md").write_text("not a .txt file\n", encoding="utf-8")
    args = ["data=dir", 'data.path="~/books"', "metrics=stats"]
    line = one_error_line(run("runner", args, tmp_path, HOME=str(home)))
    assert "no .txt files" in line, line  # the folder under $HOME was found and read


# --- a chunk that fits the window but not with its prompt ------------------------------


def composed_config(*overrides: str) -> Any:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    return build_run_config({str(k): v for k, v in raw.items()})


def long_text_folder(root: Path, words: int = 30_000) -> Path:
    """A folder holding one document far longer than the local model's 8192-token window."""
    folder = root / "book"
    folder.mkdir()
    sentence = "The river rose in the spring and the town moved its market uphill. "
    (folder / "book.txt").write_text(sentence * (words // 13), encoding="utf-8")
    return folder


def test_a_chunk_without_room_for_its_prompt_is_refused_before_the_run(tmp_path: Path) -> None:
    """chunk=8100 < the 8192-token window, but not with incremental's running summary.

    It once passed the preflight and ended a run FAILED in the store.
    """
    book = long_text_folder(tmp_path)
    args = ["strategy=incremental", "chunk=8100", "data=dir", f"data.path={book}", "metrics=stats"]
    line = one_error_line(run("runner", args, tmp_path))
    assert "chunk 0 (" in line and "window of 'local'" in line, line
    assert "lower chunk (at most" in line, line
    assert not (tmp_path / "mlruns").exists()


@pytest.mark.parametrize("strategy", ["baseline", "hier", "incremental", "summit"])
def test_default_chunks_fit_every_built_in_strategy(
    strategy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check refuses nothing a strategy itself accepts (the local model, chunk=2048).

    And it is a check: each strategy got as far as its first model call on the document.
    """
    book = long_text_folder(tmp_path)
    config = composed_config(f"strategy={strategy}", "data=dir", f"data.path={book}")
    items = read_items(config.data.source, config.data.values(), config.data.limit)
    asked: list[str] = []

    def first_call(self: Any, *args: Any, **kwargs: Any) -> None:
        asked.append(self.name)
        raise preflight._FirstCall

    monkeypatch.setattr(preflight._StandIn, "complete", first_call)
    preflight.prompts_fit(config, items)
    assert len(asked) >= len(items) == 1


# --- read-only commands: a busy port, no store -----------------------------------------


def test_the_ui_on_a_busy_port_exits_with_one_line_and_no_links(tmp_path: Path) -> None:
    store = tmp_path / "mlruns" / "mlflow.db"
    store.parent.mkdir()
    store.touch()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run("runner.ui", ["--port", str(port)], tmp_path)
    line = one_error_line(done)
    assert f"port {port}" in line and "in use" in line and "--port" in line, line
    assert "http://" not in done.stdout + done.stderr


def test_the_ui_in_a_folder_without_a_store_creates_none(tmp_path: Path) -> None:
    line = one_error_line(run("runner.ui", ["--port", "1"], tmp_path))
    assert f"no store at {tmp_path / 'mlruns' / 'mlflow.db'}" in line, line
    assert list(tmp_path.iterdir()) == []


def test_the_viewer_in_a_folder_without_a_store_creates_none(tmp_path: Path) -> None:
    line = one_error_line(run("runner.view", ["latest"], tmp_path))
    assert f"no store at {tmp_path / 'mlruns' / 'mlflow.db'}" in line, line
    assert "tracking.uri=" in line
    assert list(tmp_path.iterdir()) == []


def test_the_report_in_a_folder_without_a_store_creates_none(tmp_path: Path) -> None:
    line = one_error_line(run("runner.report", [], tmp_path))
    assert "no store at" in line, line
    assert list(tmp_path.iterdir()) == []


# --- an unknown name -------------------------------------------------------------------


def test_an_unknown_strategy_suggests_the_nearest_and_no_retired_one(tmp_path: Path) -> None:
    line = one_error_line(run("runner", ["strategy=heir"], tmp_path))
    assert "strategy=heir is unknown; did you mean hier?" in line, line
    assert "precomputed" not in line
    for option in ("baseline", "incremental", "none", "summit"):
        assert option in line
    assert list(tmp_path.iterdir()) == []
