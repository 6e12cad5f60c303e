"""The sweep key (tag ``runner.sweep_key``) hashes the built-in prompts, importing no plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_the_bundled_prompt_folders_are_those_of_the_built_in_packages() -> None:
    from runner.sweep.callback import bundled_prompt_roots

    assert sorted(bundled_prompt_roots()) == [
        REPO / "metrics" / "prompts",
        REPO / "strategies" / "prompts",
    ]


PROBE = """
import json, sys
from pathlib import Path
from hydra import compose, initialize_config_dir
from omegaconf import open_dict
from runner.sweep.callback import parent_of, sweep_key

with initialize_config_dir(config_dir=str(Path('conf').resolve()), version_base="1.3"):
    config = compose("config", ["chunk=512"], return_hydra_config=True)
with open_dict(config):
    config.hydra.sweep.dir = "multirun/probe"
    config.tracking.uri = "sqlite:///probe.db"
parent = parent_of(config)
imported = sorted({m.split('.')[0] for m in sys.modules} & {"strategies", "metrics"})
before = sweep_key(config, ["chunk=512"], [Path("strategies/prompts"), Path("metrics/prompts")])
print(json.dumps({"imported": imported, "key": parent.key, "before": before}))
"""


def test_a_sweeps_parent_imports_no_plugin_and_keeps_its_key() -> None:
    """The key is what it was with the two prompt folders named: a rerun finds its parent."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["imported"] == []
    assert seen["key"] == seen["before"]
