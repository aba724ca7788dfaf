"""Command-line overrides of a sweep file: KEY=VALUE (dotted paths, YAML values) and ~KEY, validated like the file."""

from __future__ import annotations

import copy

import pytest
import yaml

from rmtsweep.errors import SweepDefinitionError
from rmtsweep.spec import apply_overrides, load_sweep, parse_sweep


def test_values_are_yaml_and_paths_are_dotted(sweep_data):
    original = copy.deepcopy(sweep_data)
    out = apply_overrides(sweep_data, ["d=48", "grid.T=[4, 16]", "grid.weights=[mean]", "seed=11", "name=x-y",
                                       "observables.spectrum.bins=20"])
    assert out["d"] == 48 and out["grid"]["T"] == [4, 16] and out["grid"]["weights"] == ["mean"]
    assert out["seed"] == 11 and out["name"] == "x-y" and out["observables"] == {"spectrum": {"bins": 20}}
    assert sweep_data == original                                               # the input is not changed
    sweep = parse_sweep(out)
    assert sweep.d == 48 and list(sweep.grid.T) == [4, 16] and sweep.seed == 11


@pytest.mark.parametrize(
    ("override", "value"),
    [
        ("grid.T=4,16", [4, 16]),
        ("grid.weights=mean,harmonic", ["mean", "harmonic"]),
        ("grid.snr=0, 1.5,3", [0, 1.5, 3]),
        ("grid.T=[4,16]", [4, 16]),                              # brackets: read as written
        ("description='a, b'", "a, b"),                          # quoted: one string with its comma
        ('description="a, b"', "a, b"),
        ('grid.weights="mean", harmonic', ["mean", "harmonic"]),
        ("grid.snr={start: 0, stop: 2, num: 3}", {"start": 0, "stop": 2, "num": 3}),
        ("name=one", "one"),
    ],
)
def test_a_comma_list_is_a_list_and_quotes_keep_a_comma(override, value, sweep_data):
    key = override.partition("=")[0].split(".")
    out = apply_overrides(sweep_data, [override])
    assert (out[key[0]] if len(key) == 1 else out[key[0]][key[1]]) == value


def test_comma_lists_give_the_sweep_of_the_bracketed_lists(sweep_data):
    plain = parse_sweep(apply_overrides(sweep_data, ["grid.T=4,16", "grid.weights=mean,harmonic"]))
    bracketed = parse_sweep(apply_overrides(sweep_data, ["grid.T=[4, 16]", "grid.weights=[mean, harmonic]"]))
    assert plain == bracketed and list(plain.grid.T) == [4, 16] and plain.weight_labels() == ["mean", "harmonic"]


def test_a_top_level_d_becomes_an_axis(sweep_data):
    sweep = parse_sweep(apply_overrides(sweep_data, ["~d", "grid.d=[20, 40]"]))
    assert sweep.d_axis and list(sweep.d_values) == [20, 40]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("d", r"override 'd': expected KEY=VALUE"),
        ("=3", r"override '=3': expected KEY=VALUE"),
        ("grid..T=[4]", r"override 'grid\.\.T=\[4\]': expected KEY=VALUE"),
        ("~d=3", r"override '~d=3': expected KEY=VALUE .* or ~KEY"),
        ("~nothing", r"override '~nothing': there is no nothing to remove"),
        ("grid.T=[4", r"override 'grid\.T=\[4': the value is not YAML"),
        ("seed.x=1", r"override 'seed\.x=1': seed is not a mapping"),
    ],
)
def test_a_bad_override_is_one_line_naming_it(override, message, sweep_data):
    with pytest.raises(SweepDefinitionError, match=r"^s\.yaml: " + message):
        apply_overrides(sweep_data, [override], "s.yaml")


def test_an_override_is_validated_like_the_file_and_kept_for_provenance(sweep_data, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep_data))
    with pytest.raises(SweepDefinitionError, match=r"s\.yaml with replicate=3: replicate: unknown key \(did you mean "
                                                   r"`replicates`\?\)"):
        load_sweep(path, ["replicate=3"])
    sf = load_sweep(path, ["replicates=6"])
    assert sf.sweep.replicates == 6 and sf.overrides == ("replicates=6",) and sf.text == path.read_text()
    assert load_sweep(path).sweep.digest() != sf.sweep.digest()
    assert load_sweep(path, ["replicates=6"]).sweep.digest() == sf.sweep.digest()
