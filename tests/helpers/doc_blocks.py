"""The docs' executed blocks: found in a Markdown page, run in order in one folder.

The convention of README.md and docs/: the line ``<!-- doc-test -->`` directly before a
```` ```bash ```` or ```` ```python ```` fence marks the block as one CI runs. All marked
blocks of a page run in order in one fresh empty folder (their cwd), bash blocks with
``bash -euo pipefail -c``, python blocks with ``python -c`` (so the folder is on
``sys.path``, as in a terminal). The first failing block stops the page; its report names
the page, the block's line, the block and the tail of its output.

``tests/docs/test_doc_blocks.py`` runs every page with marks against loopback models
(``tests/helpers/doc_models.py``). A mark that is not directly followed by a bash or python
fence is an error, so a mark never silently runs nothing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MARK = "<!-- doc-test -->"
"""The line that marks the next fenced block as executed."""
LANGUAGES = ("bash", "python")
"""The fences a mark may precede."""
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")


class MarkError(ValueError):
    """A mark that marks no runnable block (a typo'd fence, a console block, no fence)."""


class BlockFailed(AssertionError):
    """A marked block exited non-zero or ran out of time; the message is the report."""


@dataclass(frozen=True)
class Block:
    """One marked block of a page."""

    page: Path
    line: int
    """1-based line of the block's opening fence in the page."""
    language: str
    """'bash' or 'python'."""
    code: str
    """The block's text, its indentation (inside an admonition or a tab) removed."""


@dataclass(frozen=True)
class Outcome:
    """How one block ran."""

    block: Block
    returncode: int | None
    """None when it ran out of time (its process group was killed)."""
    output: str
    """stdout and stderr, interleaved as written."""
    seconds: float


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened with ``fence`` (same character, no shorter)."""
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def find_blocks(page: Path, text: str | None = None) -> list[Block]:
    """The marked blocks of ``page`` in order; MarkError for a mark that marks no block.

    A mark inside a fenced block (a page showing the convention) is text, not a mark.
    """
    lines = (page.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    open_fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        opened = _FENCE.match(line)
        if open_fence is not None:
            if _closes(line, open_fence):
                open_fence = None
        elif line.strip() == MARK:
            blocks.append(_marked_block(page, lines, i))
            i = blocks[-1].line + blocks[-1].code.count("\n") + 1  # after its closing fence
            continue
        elif opened:
            open_fence = opened.group("fence")
        i += 1
    return blocks


def _marked_block(page: Path, lines: list[str], mark: int) -> Block:
    """The block opened on the line after the mark at index ``mark``."""
    where = f"{page}:{mark + 1}"
    following = lines[mark + 1] if mark + 1 < len(lines) else ""
    opened = _FENCE.match(following)
    language = opened.group("info").split()[0] if opened and opened.group("info").split() else ""
    if opened is None or language not in LANGUAGES:
        raise MarkError(
            f"{where}: {MARK} is not directly followed by a ```bash or ```python fence "
            f"(next line: {following.strip()!r}); move the mark onto the line before the fence "
            "or remove it"
        )
    indent, fence = opened.group("indent"), opened.group("fence")
    body: list[str] = []
    for line in lines[mark + 2 :]:
        if _closes(line, fence):
            return Block(page, mark + 2, language, "".join(f"{b}\n" for b in body))
        body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
    raise MarkError(f"{where}: the block after {MARK} is never closed; add its closing {fence}")


def marked_pages(repo: Path) -> list[Path]:
    """README.md and every docs/**/*.md holding a mark outside a fenced block."""
    candidates = [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]
    return [p for p in candidates if p.is_file() and _has_mark(p)]


def _has_mark(page: Path) -> bool:
    """A mark outside fences (a broken mark counts: its page must fail, not vanish)."""
    try:
        return bool(find_blocks(page))
    except MarkError:
        return True


def run_block(
    block: Block,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    replacements: Mapping[str, str] | None = None,
) -> Outcome:
    """Run one block in ``cwd``; on timeout its whole process group is killed."""
    code = block.code
    for literal, value in (replacements or {}).items():
        code = code.replace(literal, value)
    if block.language == "bash":
        argv = ["bash", "-euo", "pipefail", "-c", code]
    else:
        argv = ["python", "-c", code]
    start = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group: a timeout ends the servers it started too
    )
    try:
        output, _ = process.communicate(timeout=timeout_s)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        returncode = None
    return Outcome(block, returncode, output, time.monotonic() - start)


def run_page(
    blocks: list[Block],
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    replacements: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """Run ``blocks`` in order in ``cwd``, stopping after the first that fails."""
    outcomes: list[Outcome] = []
    for block in blocks:
        outcomes.append(run_block(block, cwd, env, timeout_s, replacements))
        if outcomes[-1].returncode != 0:
            break
    return outcomes


def report(outcome: Outcome, root: Path, timeout_s: float, tail_lines: int = 60) -> str:
    """The failure as a reader needs it: where, what ran, how it ended, the output's tail."""
    block = outcome.block
    page = block.page.relative_to(root) if block.page.is_relative_to(root) else block.page
    how = (
        f"ran out of time after {timeout_s:g} s"
        if outcome.returncode is None
        else f"exited with {outcome.returncode} after {outcome.seconds:.1f} s"
    )
    numbered = "\n".join(
        f"{block.line + n:5d}  {text}" for n, text in enumerate(block.code.splitlines(), start=1)
    )
    tail = "\n".join(outcome.output.splitlines()[-tail_lines:]) or "(no output)"
    return (
        f"{page}:{block.line}: the ```{block.language} block {how}\n"
        f"--- the block (page line numbers) ---\n{numbered}\n"
        f"--- its output, last {tail_lines} lines ---\n{tail}"
    )


def check_page(
    page: Path,
    root: Path,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    replacements: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """Run a page's marked blocks; BlockFailed (the report) when one fails."""
    blocks = find_blocks(page)
    if not blocks:
        raise MarkError(f"{page}: no {MARK} block to run")
    outcomes = run_page(blocks, cwd, env, timeout_s, replacements)
    if outcomes[-1].returncode != 0:
        raise BlockFailed(report(outcomes[-1], root, timeout_s))
    return outcomes


def block_env(loopback_env: Mapping[str, str], repo: Path) -> dict[str, str]:
    """The environment of a doc block: this interpreter's ``python`` first on PATH, the
    checkout importable, the loopback models' keys and addresses, and none of the caller's
    own keys, base URLs or tracking store (a real key must never reach a doc block)."""
    dropped = ("_API_KEY", "_API_BASE", "_BASE_URL")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(dropped) and not k.startswith("MLFLOW_")
    }
    python_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([python_dir, env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(loopback_env)
    return env
