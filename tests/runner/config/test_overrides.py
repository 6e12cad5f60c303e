"""Every override kind read once, by Hydra's grammar (``runner.config.overrides``)."""

from __future__ import annotations

import pytest

from runner.config.overrides import choice, is_experiment_override, parse, swept

# text -> (prefix, key, path, package, value, sweep, experiment)
TABLE: list[tuple[str, tuple[str, str, str, str | None, str, bool, bool]]] = [
    ("chunk=1024", ("", "chunk", "chunk", None, "1024", False, True)),
    (
        "model.temperature=0.2",
        ("", "model.temperature", "model.temperature", None, "0.2", False, True),
    ),
    ("+experiment=local_demo", ("+", "experiment", "experiment", None, "local_demo", False, True)),
    ("++metrics.f1.k=3", ("++", "metrics.f1.k", "metrics.f1.k", None, "3", False, True)),
    ("~tracking", ("~", "tracking", "tracking", None, "", False, False)),
    ("~chunk=1024", ("~", "chunk", "chunk", None, "1024", False, True)),
    (
        "strategy=hier,incremental",
        ("", "strategy", "strategy", None, "hier,incremental", True, True),
    ),
    ("seed=range(0,3)", ("", "seed", "seed", None, "range(0,3)", True, True)),
    ("model=choice(claude,gpt)", ("", "model", "model", None, "choice(claude,gpt)", True, True)),
    ("seed=sort(2,1)", ("", "seed", "seed", None, "sort(2,1)", True, True)),
    ("t=interval(0,1)", ("", "t", "t", None, "interval(0,1)", True, True)),
    ("data=glob(*)", ("", "data", "data", None, "glob(*)", True, True)),
    ("ks=[1,2]", ("", "ks", "ks", None, "[1,2]", False, True)),
    ("ks=[1,2],[3]", ("", "ks", "ks", None, "[1,2],[3]", True, True)),
    ("name='x,y'", ("", "name", "name", None, "'x,y'", False, True)),
    ("db@pkg=mysql", ("", "db@pkg", "db", "pkg", "mysql", False, True)),
    ("+db@pkg=x", ("+", "db@pkg", "db", "pkg", "x", False, True)),
    (
        "hydra/launcher=joblib",
        ("", "hydra/launcher", "hydra/launcher", None, "joblib", False, False),
    ),
    (
        "tracking.uri=sqlite:////tmp/m.db",
        ("", "tracking.uri", "tracking.uri", None, "sqlite:////tmp/m.db", False, False),
    ),
    ("progress=off", ("", "progress", "progress", None, "off", False, False)),
    ("data.path=/x/y z.txt", ("", "data.path", "data.path", None, "/x/y z.txt", False, True)),
    ("note=", ("", "note", "note", None, "", False, True)),
]


@pytest.mark.parametrize(("text", "expected"), TABLE, ids=[t for t, _ in TABLE])
def test_every_override_kind_is_read_as_hydra_reads_it(
    text: str, expected: tuple[str, str, str, str | None, str, bool, bool]
) -> None:
    o = parse(text)
    assert (o.prefix, o.key, o.path, o.package, o.value, o.sweep, o.experiment) == expected
    assert is_experiment_override(text) == expected[-1]
    assert o.text == text


def test_typed_values_are_hydras() -> None:
    assert parse("chunk=1024").typed_value == 1024
    assert parse("ks=[1,2]").typed_value == [1, 2]
    assert parse("name='x,y'").typed_value == "x,y"


def test_the_swept_overrides_in_order() -> None:
    texts = ["a=1,2", "b=[1,2]", "c=[1,2],[3]", "d=range(1,3)", "e='x,y'", "f=x", "g=sort(1,2)"]
    assert [o.key for o in swept(texts)] == ["a", "c", "d", "g"]


@pytest.mark.parametrize(
    ("texts", "picked"),
    [
        (["chunk=1", "+experiment=local_demo"], "local_demo"),
        (["++experiment=paper"], "paper"),
        (["experiment=paper"], "paper"),
        (["~experiment"], None),
        (["chunk=1", "experiments=x"], None),
        ([], None),
    ],
)
def test_the_group_a_command_line_picks(texts: list[str], picked: str | None) -> None:
    assert choice(texts, "experiment") == picked


def test_a_malformed_override_is_hydras_error() -> None:
    from hydra.errors import HydraException

    with pytest.raises(HydraException):
        parse("a=(")
