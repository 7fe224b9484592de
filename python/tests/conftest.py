"""Shared set-up: a fresh compile cache per test session, the repository's paths, random
inputs for a kernel's signature, and per-dtype tolerances."""

import os
import tempfile

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")

_CACHE = tempfile.mkdtemp(prefix="polyc-pytest-cache-")
os.environ["POLYC_CACHE_DIR"] = _CACHE

TOLERANCE = {"f16": 2e-2, "f32": 2e-4, "f64": 1e-10, "i8": 0, "i32": 0, "i64": 0}
NUMPY = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i32": np.int32, "i64": np.int64}


def example(*parts):
    return os.path.join(EXAMPLES, *parts)


def random_inputs(kernel, sizes, seed=1):
    """Random arguments for ``kernel``'s inputs at ``sizes`` (a dict of every size)."""
    from polyc._kernel import _eval

    rng = np.random.default_rng(seed)
    values = [sizes[p] for p in kernel._param_names]
    args = []
    for spec in kernel._inputs:
        dtype = spec["dtype"]
        if spec["kind"] == "scalar":
            args.append(0.75 if dtype.startswith("f") else 3)
            continue
        shape = tuple(_eval(e, values) for e in spec["shape"])
        if dtype.startswith("f"):
            a = rng.uniform(-0.25, 1.0, size=shape).astype(NUMPY[dtype])
        else:
            a = rng.integers(1, 5, size=shape).astype(NUMPY[dtype])
        args.append(a)
    return args


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def assert_close(got, want, dtype, what):
    tol = TOLERANCE[dtype]
    assert got.shape == want.shape, what
    if tol == 0:
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        scale = max(1.0, float(np.nanmax(np.abs(want.astype(np.float64)))) if want.size else 1.0)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * scale, equal_nan=True, err_msg=what)


@pytest.fixture
def cache_dir():
    return _CACHE


def smoke_cases():
    """The smoke suite's programs, each with its odd shape (the second, where there is one)."""
    import yaml

    with open(os.path.join(REPO, "specs", "suites", "smoke.yaml"), encoding="utf-8") as f:
        smoke = yaml.safe_load(f)
    return [
        (os.path.normpath(os.path.join(REPO, "specs", "suites", c["program"])), c["shapes"][min(1, len(c["shapes"]) - 1)])
        for c in smoke["cases"]
    ]
