"""What the config reference is read from: YAML comments, attribute docstrings, type hints.

Pure reading, no knowledge of groups: ``tables.py`` knows which source describes which key.
"""

from __future__ import annotations

import ast
import importlib.resources
import inspect
import re
import textwrap
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

SKIPPED = ("defaults", "hydra", "_self_")
"""YAML keys that are Hydra's own, not the runner's."""


def conf_dir() -> Path:
    """The config tree: the package ``runner.conf`` (``conf/`` of a clone, installed or not)."""
    return Path(str(importlib.resources.files("runner.conf")))


def one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed to single spaces."""
    return " ".join(text.split())


def attribute_docs(cls: type) -> dict[str, str]:
    """Field -> the docstring written below it in ``cls``'s source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = typing.cast(ast.ClassDef, tree.body[0]).body
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = one_line(after.value.value)
    return docs


_KEY_LINE = re.compile(r"^(\s*)([A-Za-z_][\w.-]*)\s*:(.*)$")


def yaml_comments(text: str) -> tuple[str, dict[str, str]]:
    """The file's opening comment, and dotted key -> the comment lines directly above it.

    A blank line ends a comment block; ``# @package`` lines and block scalars (``|``, ``>``)
    are skipped. Keys inside a flow mapping (``retry: {...}``) are not seen here.
    """
    intro: list[str] = []
    comments: list[str] = []
    found: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    block_indent: int | None = None
    seen_key = False
    for line in text.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if not stripped or indent > block_indent:
                continue
            block_indent = None
        if stripped.startswith("# @package"):
            continue
        if stripped.startswith("#"):
            comments.append(stripped[1:].removeprefix(" ").rstrip())
            continue
        if not seen_key and comments and not intro:
            intro = comments
        if not stripped:
            comments = []
            continue
        match = _KEY_LINE.match(line)
        if match and not stripped.startswith("-"):
            seen_key = True
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = ".".join([k for _, k in stack] + [match.group(2)])
            found[path] = one_line(" ".join(comments))
            stack.append((indent, match.group(2)))
            if match.group(3).strip() in ("|", "|-", ">", ">-"):
                block_indent = indent
        comments = []
    return "\n".join(intro), found


def flat_keys(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf of a YAML mapping; Hydra's own keys left out."""
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        if key in SKIPPED:
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from flat_keys(value, f"{path}.")
        else:
            yield path, value


def type_name(hint: Any) -> str:
    """A type hint in words: ``int``, ``str or null``, ``list[str]``, ``one of ...``."""
    if isinstance(hint, str):
        return hint.replace(" | None", " or null").replace("None | ", "null or ")
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return "str"
    if args and (origin is typing.Union or type(hint).__name__ == "UnionType"):
        names = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    if origin in (list, tuple) or hint in (list, tuple):
        inner = [type_name(a) for a in args if a is not Ellipsis]
        return f"list[{inner[0]}]" if inner else "list"
    if origin is dict or hint is dict:
        return "mapping"
    if hint is inspect.Parameter.empty or hint is Any:
        return "any"
    return getattr(hint, "__name__", str(hint))


def allowed_values(hint: Any) -> str:
    """The values a ``Literal`` annotation allows ('' for any other hint)."""
    for option in (hint, *typing.get_args(hint)):
        if typing.get_origin(option) is typing.Literal:
            return ", ".join(str(v) for v in typing.get_args(option))
    return ""


def type_hints(target: Callable[..., Any] | type) -> dict[str, Any]:
    """Resolved annotations; a plugin's hint that cannot be resolved is shown as written."""
    try:
        return typing.get_type_hints(target)
    except Exception:  # noqa: BLE001 - a plugin's hint we cannot resolve: shown as written
        return dict(getattr(target, "__annotations__", {}))


def read_conf(path: Path) -> tuple[Any, str, dict[str, str]]:
    """(the file's data, its opening comment, dotted key -> the comment above it)."""
    text = path.read_text(encoding="utf-8")
    intro, comments = yaml_comments(text)
    return yaml.safe_load(text) or {}, intro, comments


def yaml_text(value: Any) -> str:
    """A value as it would be typed in YAML (``null``, ``true``, ``[a, b]``)."""
    text = str(yaml.safe_dump(value, default_flow_style=True, width=10_000)).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()
