"""Weights of your own: custom vectors per T, and `scheme: python` functions by module path."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.errors import SweepDefinitionError
from rmtsweep.model import make_scheme
from rmtsweep.model.plugins import load_function
from rmtsweep.spec import parse_sweep


def test_custom_weights_per_T(sweep_data):
    sweep_data["grid"]["T"] = [2, 3]
    sweep_data["grid"]["weights"] = [{"scheme": "custom", "values": {2: [1, 3], 3: [0, 0, 2]}, "name": "mine"}]
    (scheme,) = parse_sweep(sweep_data).grid.weights
    assert scheme.weights(np.eye(2)).tolist() == [1.0, 3.0] and scheme.weights(np.eye(3)).tolist() == [0.0, 0.0, 2.0]
    sweep_data["grid"]["weights"] = [{"scheme": "custom", "values": {2: [1, 3], 3: [1, 2]}}]
    with pytest.raises(SweepDefinitionError, match=r"grid\.weights\[0\]\.values\[3\]: 2 values for T = 3"):
        parse_sweep(sweep_data, "s.yaml")
    sweep_data["grid"]["weights"] = [{"scheme": "custom", "values": [1, 2]}]
    with pytest.raises(SweepDefinitionError, match=r"2 values but grid\.T has \[2, 3\] \(for several T give a mapping"):
        parse_sweep(sweep_data, "s.yaml")


def test_a_python_scheme_by_module_path():
    scheme = make_scheme("python", function="numpy:full", params={"fill_value": 0.25})
    assert scheme.label == "full(fill_value=0.25)"
    with pytest.raises(TypeError):                  # numpy.full(R, fill_value) uses R as the shape: not T weights
        scheme.weights(np.eye(3))
    flat = make_scheme("python", function="numpy:ravel", name="flat")
    with pytest.raises(ValueError, match=r"numpy:ravel returned 16 values for T = 4; it must return 4 finite"):
        flat.weights(np.eye(4))
    diag = make_scheme("python", function="numpy:diag")                   # diag(R): T ones, a valid vector
    assert diag.weights(np.eye(4)).tolist() == [1.0] * 4 and diag.label == "diag"


@pytest.mark.parametrize(("function", "message"), [
    ("no_such_module_x:f", r"cannot import 'no_such_module_x'"),
    ("numpy:no_such_name", r"module 'numpy' has no 'no_such_name'"),
    ("numpy:pi", r"'numpy:pi' is not a function"),
    ("nothing-registered", r"no weights function 'nothing-registered'.*entry point in 'rmtsweep\.weights'"),
])
def test_a_function_that_cannot_be_found_is_named(function, message):
    with pytest.raises(ValueError, match=message):
        load_function(function)
