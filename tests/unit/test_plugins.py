"""Weights of your own: custom vectors per T, and `scheme: python` functions by module path."""

from __future__ import annotations

import re

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


# -- correlation models of your own: {model: python, function: ..., params: ..., sampler: ...} ----------

def blocks(T: int, size: int = 2, rho: float = 0.5) -> np.ndarray:
    """Blocks of ``size`` positions with correlation ``rho`` inside (the example plugin's model)."""
    block = np.arange(T) // size
    R = np.where(block[:, None] == block[None, :], rho, 0.0)
    np.fill_diagonal(R, 1.0)
    return R


def full(T: int) -> np.ndarray:
    return np.ones((T, T))


def copy_label(T: int, N: int, rng: np.random.Generator):
    """Every position copies the label: signs of correlation ``full``."""
    y = rng.choice(np.array([-1, 1], np.int8), size=N)
    return np.repeat(y[:, None], T, axis=1), y


def fair(T: int, N: int, rng: np.random.Generator) -> np.ndarray:
    return rng.choice(np.array([-1, 1]), size=(N, T))


def skewed(T: int) -> np.ndarray:
    R = np.eye(T)
    R[0, 1] = 0.5
    return R


def negative(T: int) -> np.ndarray:
    """Pairwise correlation -1/2: positive semidefinite at T = 3, but no three signs have it."""
    return 1.5 * np.eye(T) - 0.5


def _with_correlation(sweep_data, **correlation):
    sweep_data["correlation"] = {"model": "python", **correlation}
    return sweep_data


def test_a_python_correlation_gives_its_matrix_and_draws_exactly_those_signs(sweep_data):
    sweep = parse_sweep(_with_correlation(sweep_data, function="tests.unit.test_plugins:blocks",
                                          params={"size": 2, "rho": 0.8}))
    corr = sweep.correlation
    assert corr.label() == "blocks(rho=0.8,size=2)" and not corr.label_model
    assert np.array_equal(corr.matrix(4), blocks(4, 2, 0.8))
    n = 200_000
    xi, y = corr.draw(4, n, np.random.default_rng(5))
    assert xi.dtype == np.int8 and xi.shape == (n, 4) and np.array_equal(y, xi[:, 0])
    assert np.abs(xi.T.astype(float) @ xi / n - blocks(4, 2, 0.8)).max() < 5 / np.sqrt(n)      # the arcsine law
    again, _ = corr.draw(4, n, np.random.default_rng(5))
    assert np.array_equal(xi, again)                                                       # seeded


def test_a_sampler_draws_the_signs_and_is_checked_against_the_matrix(sweep_data):
    sweep = parse_sweep(_with_correlation(sweep_data, function="tests.unit.test_plugins:full",
                                          sampler="tests.unit.test_plugins:copy_label"))
    xi, y = sweep.correlation.draw(4, 10, np.random.default_rng(0))
    assert (xi == y[:, None]).all()
    with pytest.raises(SweepDefinitionError, match=r"^s\.yaml: correlation\.sampler: the correlation of 20000 sign "
                                                   r"vectors of tests\.unit\.test_plugins:fair at T = 4 is 1\.0\d* away "
                                                   r"from R \(more than 6 standard errors\)$"):
        parse_sweep(_with_correlation(sweep_data, function="tests.unit.test_plugins:full",
                                      sampler="tests.unit.test_plugins:fair"), "s.yaml")


@pytest.mark.parametrize(("function", "T", "message"), [
    ("skewed", 4, r"correlation\.function: tests\.unit\.test_plugins:skewed at T = 4 is not symmetric"),
    ("numpy:zeros", 4, r"correlation\.function: numpy:zeros returned an array of shape \(4,\) for T = 4; it must "
                       r"return a finite 4 x 4 matrix"),
    ("negative", 4, r"correlation\.function: tests\.unit\.test_plugins:negative at T = 4 is not positive "
                    r"semidefinite \(smallest eigenvalue -0\.5\)"),
    ("negative", 3, r"correlation\.sampler: no Gaussian signs have the R of tests\.unit\.test_plugins:negative at "
                    r"T = 3 \(sin\(pi R / 2\) has the eigenvalue -0\.414\); give a `sampler`"),
    ("no_such_module_x:R", 4, r"correlation\.function: .*cannot import 'no_such_module_x'"),
    ("nothing-registered", 4, r"correlation\.function: .*no correlation function 'nothing-registered'.*entry point "
                              r"in 'rmtsweep\.correlations'"),
])
def test_a_matrix_that_is_no_sign_correlation_is_one_line_naming_the_field(function, T, message, sweep_data):
    sweep_data["grid"]["T"] = [T]
    function = function if ":" in function or "-" in function else f"tests.unit.test_plugins:{function}"
    with pytest.raises(SweepDefinitionError, match=r"^s\.yaml: " + message) as err:
        parse_sweep(_with_correlation(sweep_data, function=function), "s.yaml")
    assert "\n" not in str(err.value)


def twice(T: int) -> np.ndarray:
    return 2.0 * np.eye(T)


def test_a_diagonal_that_is_not_one_is_named(sweep_data):
    with pytest.raises(SweepDefinitionError, match=r"correlation\.function: tests\.unit\.test_plugins:twice at "
                                                   r"T = 4 does not have a unit diagonal \(got \[2\.0, 2\.0, 2\.0, "
                                                   r"2\.0\]\)"):
        parse_sweep(_with_correlation(sweep_data, function="tests.unit.test_plugins:twice"), "s.yaml")


def test_the_schema_describes_the_python_correlation():
    from rmtsweep.spec import Sweep
    schema = str(Sweep.model_json_schema())
    assert "a function f(T, **params) returning the T x T sign correlation R" in schema
    assert "whose signs have correlation R" in schema and "rmtsweep.correlations" in schema


# -- a plugin whose own code fails as it is imported: one line with its file and line -------------------------

BROKEN = {
    "syntax": ("def f(R):\n    return R[0]\n\nx = = 1\n", 4, r"SyntaxError: invalid syntax"),
    "raises": ("import math\n\nLIMIT = 1 / 0\n", 3, r"ZeroDivisionError: division by zero"),
    "dependency": ("\nimport no_such_dependency_x\n", 2,
                   r"ModuleNotFoundError: No module named 'no_such_dependency_x'"),
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_plugin_that_fails_on_import_is_one_line_with_its_file_and_line(kind, tmp_path, monkeypatch):
    source, line, message = BROKEN[kind]
    module = f"broken_plugin_{kind}"
    (tmp_path / f"{module}.py").write_text(source)
    dist = tmp_path / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[rmtsweep.weights]\n{kind}-weights = {module}:f\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    where = re.escape(f"{tmp_path / module}.py, line {line}: ") + message
    with pytest.raises(ValueError, match=rf"^cannot import '{module}' \({where}\)$"):
        load_function(f"{module}:f")
    with pytest.raises(ValueError, match=rf"^entry point '{kind}-weights' \({module}:f\) does not load \({where}\)$"):
        load_function(f"{kind}-weights")
