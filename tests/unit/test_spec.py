"""Sweep files: valid ones load; every bad one fails with the file, the field and the value."""

from __future__ import annotations

import pytest

from rmtsweep.errors import SweepDefinitionError
from rmtsweep.spec import load_sweep, parse_sweep


def test_demo_sweep_loads():
    sf = load_sweep("sweeps/demo.yaml")
    s = sf.sweep
    assert s.grid.snr == pytest.approx([0.5 * i for i in range(13)])
    assert [w.label for w in s.grid.weights] == ["mean", "optimal", "harmonic"]
    assert s.sizes(0.5, 0.25) == (600, 1200)
    assert len(s.digest()) == 64


def test_digest_ignores_formatting(sweep_data):
    a = parse_sweep(sweep_data)
    sweep_data["grid"]["snr"] = {"start": 0.0, "stop": 4.0, "num": 2}
    assert parse_sweep(sweep_data).digest() == a.digest()
    sweep_data["seed"] = 8
    assert parse_sweep(sweep_data).digest() != a.digest()


def test_parameterised_weights(sweep_data):
    sweep_data["grid"]["weights"] = ["harmonic_paper", {"scheme": "causal", "tau": 1.5},
                                     {"scheme": "custom", "values": [1, 0, 0, 0], "name": "first"}]
    labels = [w.label for w in parse_sweep(sweep_data).grid.weights]
    assert labels == ["harmonic_paper", "causal(tau=1.5)", "first"]


def _set(path: str, value):
    def mutate(data):
        *parents, last = path.split(".")
        node = data
        for p in parents:
            node = node[p]
        node[last] = value
    return mutate


BAD = [
    ("unknown key", _set("colour", "red"), r"colour: unknown key"),
    ("no weights", _set("grid.weights", []), r"grid\.weights: needs at least one weights scheme"),
    ("weights null", _set("grid.weights", None), r"grid\.weights: Input should be a valid tuple \(got None\)"),
    ("a colon without its space", _set("correlation", {"model:markov": None}),
     r"correlation: `model:markov` reads as a key with no value; YAML needs a space after the colon: "
     r"`\{model: markov\}`"),
    ("colons without spaces in a range", _set("grid.snr", {"start:0": None, "stop:-1": None, "num:5": None}),
     r"grid\.snr: (`\w+:-?\d`, ){2}`\w+:-?\d` read as keys with no value; .*`\{\w+: -?\d, \w+: -?\d, \w+: -?\d\}`"),
    ("unknown grid key", _set("grid.eta", [1]), r"grid\.eta: unknown key"),
    ("delta <= 0", _set("grid.delta", [0.5, -1.0]), r"grid\.delta\[1\]: .*greater than 0 \(got -1\.0\)"),
    ("gamma <= 0", _set("grid.gamma", 0), r"grid\.gamma\[0\]: .*greater than 0 \(got 0\)"),
    ("d < 2", _set("d", 1), r"d: .*greater than or equal to 2 \(got 1\)"),
    ("T < 1", _set("grid.T", [0]), r"grid\.T\[0\]: .*greater than or equal to 1 \(got 0\)"),
    ("replicates < 1", _set("replicates", 0), r"replicates: .*greater than or equal to 1 \(got 0\)"),
    ("negative snr", _set("grid.snr", [1.0, -2.0]), r"grid\.snr\[1\]: .*greater than or equal to 0 \(got -2\.0\)"),
    ("unknown weights", _set("grid.weights", ["mean", "softmax"]), r"grid\.weights\[1\]: .*'softmax'.*'harmonic'"),
    ("misspelt weights", _set("grid.weights", ["mean", "harmonc"]),
     r"grid\.weights\[1\]: unknown scheme 'harmonc' \(did you mean `harmonic`\?\); the schemes are 'mean', "),
    ("misspelt correlation", _set("correlation", {"model": "markv", "r": 0.5}),
     r"correlation: unknown model 'markv' \(did you mean `markov`\?\); the models are 'prefix', "),
    ("negative range end", _set("grid.snr", {"start": 0.0, "stop": -1.0, "num": 20}),
     r"grid\.snr\.stop: Input should be greater than or equal to 0 \(got -1\.0\)$"),
    ("both range ends", _set("grid.delta", {"start": -1, "stop": 0, "num": 5}),
     r"grid\.delta\.start: .*greater than 0 \(got -1\); grid\.delta\.stop: .*greater than 0 \(got 0\)$"),
    ("custom wrong length", _set("grid.weights", [{"scheme": "custom", "values": [1, 2]}]),
     r"grid\.weights\[0\]\.values: 2 values but grid\.T has \[4\]"),
    ("custom all zero", _set("grid.weights", [{"scheme": "custom", "values": [0, 0, 0, 0]}]),
     r"grid\.weights\[0\]\.values: custom weights are all zero"),
    ("causal tau not finite", _set("grid.weights", [{"scheme": "causal", "tau": float("nan")}]),
     r"grid\.weights\[0\]\.tau: tau must be finite"),
    ("prefix L > T", _set("correlation", {"model": "prefix", "L": 5}), r"correlation\.L: prefix length 5 exceeds T = 4"),
    ("prefix L < 1", _set("correlation", {"model": "prefix", "L": 0}), r"correlation\.L: .*greater than or equal to 1"),
    ("markov r > 1", _set("correlation", {"model": "markov", "r": 1.5}), r"correlation\.r: .*less than or equal to 1 \(got 1\.5\)"),
    ("markov r < -1", _set("correlation", {"model": "markov", "r": -2}), r"correlation\.r: .*greater than or equal to -1"),
    ("label q > 1", _set("correlation", {"model": "label", "q": 1.5}), r"correlation\.q\[0\]: .*less than or equal to 1"),
    ("label q < 0", _set("correlation", {"model": "label", "q": [0.5, -0.1, 0, 0]}), r"correlation\.q\[1\]: .*greater than or equal to 0"),
    ("label q length", _set("correlation", {"model": "label", "q": [0.5, 0.5]}), r"correlation\.q: 2 values but grid\.T has \[4\]"),
    ("unknown correlation", _set("correlation", {"model": "banana"}), r"correlation: unknown model 'banana'; .*'markov'"),
    ("V rounds below 2", _set("grid.delta", [30.0]), r"grid\.delta\[0\]: d/delta = 24/30 rounds to V = 1"),
    ("N rounds below 2", _set("grid.gamma", [50.0]), r"grid\.gamma\[0\]: d/gamma = 24/50 rounds to N = 0"),
    ("V below 2 on a range", _set("grid.delta", {"start": 1.0, "stop": 40.0, "num": 40}),
     r"grid\.delta: d/delta rounds to V < 2 for 24 of its values \(17, 18, .*, 40\); need at least 2; top_k"),
    ("duplicate axis values", _set("grid.T", [4, 4]), r"grid\.T: .*distinct"),
    ("bad range", _set("grid.snr", {"start": 0, "stop": 1}), r"grid\.snr: a range needs exactly the keys"),
    ("top_k too large", _set("top_k", 100), r"top_k: 100 exceeds the rank bound"),
    ("bad centering", _set("table_centering", "row"), r"table_centering: Input should be 'class' or 'none' \(got 'row'\)"),
    ("harmonic_paper at T=1", lambda d: (_set("grid.T", [1])(d), _set("correlation", {"model": "iid"})(d),
                                         _set("grid.weights", ["harmonic_paper"])(d)),
     r"grid\.weights\[0\]: harmonic_paper needs T >= 2"),
    ("attention tau < 0", _set("grid.weights", [{"scheme": "attention", "tau": -1.0}]),
     r"grid\.weights\[0\]\.tau: Input should be greater than or equal to 0 \(got -1\.0\)"),
    ("attention unknown scale", _set("grid.weights", [{"scheme": "attention", "tau": 1.0, "scale": "d2"}]),
     r"grid\.weights\[0\]\.scale: Input should be 'd' or 'sqrt_d' \(got 'd2'\)"),
    ("attention with observables", lambda d: (_set("grid.weights", [{"scheme": "attention", "tau": 1.0}])(d),
                                              _set("observables", {"spectrum": {"bins": 10}})(d)),
     r"grid\.weights\[0\]: attention\(tau=1\) computes its weights per sequence; the spectrum and ridge"),
]


@pytest.mark.parametrize("case, mutate, message", BAD, ids=[b[0] for b in BAD])
def test_bad_field_is_named(case, mutate, message, sweep_data, write_sweep):
    mutate(sweep_data)
    path = write_sweep(sweep_data)
    with pytest.raises(SweepDefinitionError, match=rf"^{path}: {message}"):
        load_sweep(path)


def test_yaml_syntax_error_names_line(write_sweep):
    path = write_sweep("name: x\ngrid: [1, 2\n")
    with pytest.raises(SweepDefinitionError, match=rf"^{path}: YAML syntax error at line \d+"):
        load_sweep(path)


def test_missing_file(tmp_path):
    with pytest.raises(SweepDefinitionError, match=r"nope\.yaml: no such sweep file, and not a shipped sweep "
                                                   r"\(shipped: .*demo"):
        load_sweep(tmp_path / "nope.yaml")
    assert load_sweep("demo").sweep == load_sweep("sweeps/demo.yaml").sweep           # a shipped sweep by name


def test_not_a_mapping(write_sweep):
    with pytest.raises(SweepDefinitionError, match=r"expected a mapping of sweep fields, got list"):
        load_sweep(write_sweep("- 1\n- 2\n"))


def _rename(path: str, new: str):
    def mutate(data):
        *parents, last = path.split(".")
        node = data
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[new] = node.pop(last)
    return mutate


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_rename("replicates", "replicate"),
         r": replicate: unknown key \(did you mean `replicates`\?\); replicates: Field required$"),
        (_rename("grid.delta", "detla"), r": grid\.detla: unknown key \(did you mean `delta`\?\); grid\.delta: "),
        (_rename("top_k", "topk"), r": topk: unknown key \(did you mean `top_k`\?\)"),
        (_set("colour", "red"), r": colour: unknown key$"),                  # nothing close: no guess
    ],
)
def test_a_typo_is_named_with_a_suggestion_and_every_problem_listed(mutate, message, sweep_data):
    mutate(sweep_data)
    with pytest.raises(SweepDefinitionError, match=message):
        parse_sweep(sweep_data, "s.yaml")


def test_a_typo_inside_a_weights_scheme_is_named(sweep_data):
    sweep_data["grid"]["weights"] = ["mean", {"scheme": "causal", "tua": 1.0}]
    with pytest.raises(SweepDefinitionError, match=r"grid\.weights\[1\]\.tua: unknown key \(did you mean `tau`\?\)"):
        parse_sweep(sweep_data, "s.yaml")


def test_every_consistency_problem_is_listed(sweep_data):
    sweep_data["top_k"] = 10 ** 6
    sweep_data["replicates_per_task"] = sweep_data["replicates"] + 1
    with pytest.raises(SweepDefinitionError, match=r"top_k: .* exceeds the rank bound .*; replicates_per_task: "):
        parse_sweep(sweep_data, "s.yaml")


def test_points_per_task_keeps_its_old_name_and_the_hash(sweep_data):
    """``cells_per_task`` (the old name) reads as ``points_per_task``; the hash is the one it always had."""
    old = parse_sweep({**sweep_data, "cells_per_task": 2})
    new = parse_sweep({**sweep_data, "points_per_task": 2})
    assert old == new and old.points_per_task == 2 and old.cells_per_task == 2
    assert new.canonical()["cells_per_task"] == 2 and "points_per_task" not in new.canonical()
    assert new.digest() == "4b052f067a9b79f3347ae1fa7646e6347b25461bd1358935db0732c0f9f8d460"     # as before the rename
    assert parse_sweep(new.canonical()) == new                       # a store's canonical sweep reads back
    assert "cells_per_task" not in parse_sweep(sweep_data).canonical()
    with pytest.raises(SweepDefinitionError, match=r"give points_per_task, or cells_per_task \(its old name\)"):
        parse_sweep({**sweep_data, "cells_per_task": 2, "points_per_task": 2})


@pytest.mark.parametrize("name", sorted(__import__("rmtsweep.shipped", fromlist=["sweeps"]).sweeps()))
def test_every_shipped_sweep_as_yaml_reads_back_to_itself(name):
    """Sweep.to_yaml (`rmtsweep show`) of every shipped sweep: the same sweep and hash, defaults filled in."""
    import yaml
    sweep = load_sweep(name).sweep
    again = parse_sweep(yaml.safe_load(sweep.to_yaml()), name)
    assert again == sweep and again.digest() == sweep.digest()
    assert "points_per_task:" in sweep.to_yaml() and "top_k:" in sweep.to_yaml()


def test_each_registry_is_the_union_a_sweep_file_validates_against():
    """Every class of SCHEMES / CORRELATIONS, and no other, is what its tag in a sweep file names."""
    import typing

    from pydantic import TypeAdapter

    from rmtsweep.model import CORRELATIONS, SCHEMES, CorrelationSpec, WeightsSpec

    for registry, spec, tag in [(SCHEMES, WeightsSpec, "scheme"), (CORRELATIONS, CorrelationSpec, "model")]:
        assert typing.get_args(typing.get_args(spec)[0]) == registry
        tags = [cls.model_fields[tag].default for cls in registry]
        assert len(set(tags)) == len(tags), tags
        schema = TypeAdapter(spec).json_schema()
        assert sorted(schema["discriminator"]["mapping"]) == sorted(tags)
