"""The sweep key (tag ``runner.sweep_key``) hashes the built-in prompts, importing no plugin."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.fresh import run_fresh

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
    stdout = run_fresh(PROBE)
    seen = json.loads(stdout.strip().splitlines()[-1])
    assert seen["imported"] == []
    assert seen["key"] == seen["before"]
