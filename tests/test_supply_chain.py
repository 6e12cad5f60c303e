"""Supply chain: exact pins, no compromised litellm, no unexpected ``.pth`` start-up hooks.

A ``.pth`` file in site-packages runs code at every interpreter start; the compromised
litellm 1.82.8 shipped one (``litellm_init.pth``). CI runs this file, so a dependency that
brings such a hook fails the build until it is reviewed and added below.
"""

from __future__ import annotations

import re
import site
from importlib import metadata
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]

ALLOWED_PTH = (
    re.compile(r"distutils-precedence\.pth"),  # setuptools
    re.compile(
        r"__editable__\.summarization_runner-[\w.]+\.pth"
    ),  # pip install -e . of this project
    re.compile(r"__editable___summarization_runner_[\w.]+_finder\.pth"),
    re.compile(r"_sandboxing_egress_ca\.pth"),  # this workplace's sandbox, installed by no package
    # coverage (the test extra): starts coverage in a new interpreter only when
    # COVERAGE_PROCESS_START or COVERAGE_PROCESS_CONFIG is set (measuring subprocesses)
    re.compile(r"a1_coverage\.pth"),
)
COMPROMISED_LITELLM = ("1.82.7", "1.82.8")


def _allowed(name: str) -> bool:
    return any(p.fullmatch(name) for p in ALLOWED_PTH)


def test_no_unexpected_pth_file_in_site_packages() -> None:
    folders = [
        Path(p) for p in [*site.getsitepackages(), site.getusersitepackages()] if Path(p).is_dir()
    ]
    found = sorted(p.name for folder in folders for p in folder.glob("*.pth"))
    assert [name for name in found if not _allowed(name)] == []


def test_no_installed_distribution_ships_an_unreviewed_pth_file() -> None:
    shipped = sorted(
        f"{dist.metadata['Name']}: {file}"
        for dist in metadata.distributions()
        for file in (dist.files or ())
        if str(file).endswith(".pth")
        and "/" not in str(file)
        and not _allowed(Path(str(file)).name)
    )
    assert shipped == []


def test_the_allow_list_rejects_the_litellm_attack_file() -> None:
    assert not _allowed("litellm_init.pth")


def test_litellm_is_pinned_to_a_reviewed_release() -> None:
    assert metadata.version("litellm") not in COMPROMISED_LITELLM
    pins = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [
        *pins["dependencies"],
        *[r for extra in pins["optional-dependencies"].values() for r in extra],
    ]
    assert all("==" in r for r in requirements), [r for r in requirements if "==" not in r]
    litellm = next(r for r in requirements if r.startswith("litellm=="))
    assert litellm.split("==")[1] not in COMPROMISED_LITELLM
    assert metadata.version("litellm") == litellm.split("==")[1]


def test_the_lock_file_pins_every_direct_dependency_at_its_pyproject_version_with_hashes() -> None:
    lock = (REPO / "requirements.lock").read_text(encoding="utf-8")
    locked = dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", lock, flags=re.MULTILINE))
    normalized = {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in locked.items()}
    pins = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [
        *pins["dependencies"],
        *[r for extra in pins["optional-dependencies"].values() for r in extra],
    ]
    for requirement in requirements:
        # "mkdocstrings[python]==1.0.8": the lock names the package, not its extras.
        parsed = re.fullmatch(r"([A-Za-z0-9_.\-]+)(?:\[[A-Za-z0-9_,.\- ]+\])?==(\S+)", requirement)
        assert parsed, requirement
        name, version = parsed.groups()
        assert normalized.get(re.sub(r"[-_.]+", "-", name).lower()) == version, requirement
    blocks = re.split(r"\n(?=[A-Za-z0-9_.\-]+==)", lock.split("\n", 3)[-1])
    assert all("--hash=sha256:" in block for block in blocks if "==" in block)
