"""polyc.tc.define, Tensor Comprehensions' API, on TC programs verbatim."""

import numpy as np
import pytest

import polyc
from conftest import example


def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)


def read(name):
    with open(example("tc", name), encoding="utf-8") as f:
        return f.read()


def test_matmul_tt_sizes_come_from_the_tensors():
    f = polyc.tc.define(read("matmul_tt.tc"), name="matmul_tt")
    for k, m, n in [(3, 65, 97), (5, 7, 2)]:
        a, b = rand(k, m), rand(n, k, seed=1)
        np.testing.assert_allclose(f(a, b, 1.5), 1.5 * (a.T @ b.T), rtol=1e-4, atol=1e-5)
    assert len(f._kernels) == 2  # one kernel per set of sizes, as TC compiled them


def test_batch_matmul_and_mlp():
    bm = polyc.tc.define(read("batch_matmul.tc"), name="batch_matmul")
    x, y, bias = rand(3, 7, 5), rand(3, 5, 4, seed=1), rand(7, 4, seed=2)
    np.testing.assert_allclose(bm(x, y, bias), x @ y + bias, rtol=1e-4, atol=1e-5)
    mlp = polyc.tc.define(read("mlp.tc"), name="mlp")
    i, w1, b1, w2, b2 = rand(6, 9), rand(11, 9, seed=1), rand(11, seed=2), rand(4, 11, seed=3), rand(4, seed=4)
    o1, o2 = mlp(i, w1, b1, w2, b2)
    h = np.maximum(i @ w1.T + b1, 0)
    np.testing.assert_allclose(o1, h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(o2, np.maximum(h @ w2.T + b2, 0), rtol=1e-4, atol=1e-5)


def test_softmax_and_half_precision():
    sm = polyc.tc.define(read("softmax.tc"), name="softmax")
    x = rand(5, 33)
    mx, total, y = sm(x)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)
    ax = polyc.tc.define(read("half_axpy.tc"), name="half_axpy")
    xh, yh = rand(19).astype(np.float16), rand(19, seed=1).astype(np.float16)
    z, dot = ax(xh, yh, 0.5)
    np.testing.assert_allclose(z.astype(np.float32), (np.float16(0.5) * xh + yh).astype(np.float32), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(float(dot), float(np.dot(xh.astype(np.float32), yh.astype(np.float32))), rtol=1e-4)


def test_define_errors():
    with pytest.raises(TypeError, match="needs the def's name"):
        polyc.tc.define(read("softmax.tc"), name="")
    f = polyc.tc.define(read("softmax.tc"), name="nosuch")
    with pytest.raises(polyc.CompileError, match="nosuch"):
        f(rand(2, 3))


def test_torch_tensors_in_torch_tensors_out():
    torch = pytest.importorskip("torch")
    f = polyc.tc.define(read("matmul_tt.tc"), name="matmul_tt")
    a, b = torch.rand(3, 6), torch.rand(5, 3)
    c = f(a, b, 2.0)
    assert isinstance(c, torch.Tensor)
    torch.testing.assert_close(c, 2.0 * (a.T @ b.T), rtol=1e-4, atol=1e-5)
