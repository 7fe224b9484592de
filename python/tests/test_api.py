"""polyc.compile and Kernel against numpy references: sizes bound from shapes, dtypes,
scalars, in-place updates, errors that name the argument, and the compile cache."""

import os

import numpy as np
import pytest

import polyc
from conftest import example

MATMUL = example("matmul.tc")


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed + len(shape)).uniform(-1, 1, size=shape).astype(dtype)


def test_symbolic_sizes_are_bound_from_the_shapes_at_each_call():
    mm = polyc.compile(MATMUL)
    for m, k, n in [(67, 45, 53), (1, 7, 1), (13, 64, 5)]:
        a, b = rand(m, k), rand(k, n, seed=1)
        np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_bound_sizes_are_checked_against_the_shapes():
    mm = polyc.compile(MATMUL, params={"M": 67, "K": 45, "N": 53})
    a, b = rand(67, 45), rand(45, 53, seed=1)
    np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError) as e:
        mm(rand(66, 45), b)
    assert "argument `A` has shape (66, 45), but `A` is (M, K), which is (67, 45) here" in str(e.value)


def test_f64_program_from_a_string_with_a_scalar():
    src = """
def axpby(f64(N, M) X, f64(N, M) Y, f64 alpha) -> (f64(N, M) Z) {
  Z(i, j) = alpha * X(i, j) + Y(i, j)
}
"""
    k = polyc.compile(src)
    x, y = rand(37, 29, dtype=np.float64), rand(37, 29, dtype=np.float64, seed=3)
    np.testing.assert_allclose(k(x, y, 0.5), 0.5 * x + y, rtol=1e-14)
    np.testing.assert_allclose(k(X=x, Y=y, alpha=-2.0), -2.0 * x + y, rtol=1e-14)


def test_softmax_layernorm_attention_against_numpy():
    x = rand(7, 53)
    sm = polyc.compile(example("softmax.tc"))
    e = np.exp(x - x.max(1, keepdims=True))
    out = sm(x)
    out = out[-1] if isinstance(out, tuple) else out
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)
    q, k, v = rand(13, 7), rand(13, 7, seed=1), rand(13, 7, seed=2)
    att = polyc.compile(example("attention.tc"), params={"L": 13, "D": 7})
    s = q @ k.T
    p = np.exp((s - s.max(1, keepdims=True)) / np.sqrt(7))
    np.testing.assert_allclose(att(q, k, v), (p @ v) / p.sum(1, keepdims=True), rtol=1e-4, atol=1e-5)


def test_softmax_with_its_exponential_written_twice_on_both_targets():
    # The exponential is computed once, into a temporary the kernel adds (a shared
    # subexpression); Kernel.reference runs the program as written.
    src = """
def softmax(f64(R, N) X) -> (f64(R, N) Y) {
  mx(r) max=! X(r, j)
  s(r) +=! exp(X(r, j) - mx(r))
  Y(r, j) = exp(X(r, j) - mx(r)) / s(r)
}
"""
    x = rand(11, 37, dtype=np.float64)
    e = np.exp(x - x.max(1, keepdims=True))
    for target in ["cpu", "gpu"]:
        k = polyc.compile(src, target=target)
        assert any("computed once" in n for n in k.notes), k.notes
        np.testing.assert_allclose(k(x), e / e.sum(1, keepdims=True), rtol=1e-12)
        np.testing.assert_allclose(k.reference(x), e / e.sum(1, keepdims=True), rtol=1e-12)


def test_opencl_matches_numpy_at_prime_sizes():
    mm = polyc.compile(MATMUL, params={"M": 31, "K": 17, "N": 23}, target="gpu")
    a, b = rand(31, 17), rand(17, 23, seed=1)
    np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-4, atol=1e-4)
    assert mm.device


def test_inputs_updated_in_place_are_updated_in_place():
    src = """
def scale_rows(f32(N, M) A, f32(N) s) -> (f32(N) total) {
  total(i) +=! A(i, j)
  A(i, j) = A(i, j) * s(i)
}
"""
    k = polyc.compile(src)
    a, s = rand(5, 9), rand(5, seed=4)
    before = a.copy()
    total = k(a, s)
    np.testing.assert_allclose(total, before.sum(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, before * s[:, None], rtol=1e-6)
    ro = before.copy()
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="argument `A` is read-only, but the program updates `A` in place"):
        k(ro, s)


def test_errors_name_the_argument():
    mm = polyc.compile(MATMUL)
    a, b = rand(3, 4), rand(4, 5)
    with pytest.raises(TypeError, match=r"argument `A`: dtype float64, but `A` is f32 in the program"):
        mm(a.astype(np.float64), b)
    with pytest.raises(TypeError, match=r"argument `B` must be a numpy array or a torch tensor, not list"):
        mm(a, b.tolist())
    with pytest.raises(ValueError, match=r"argument `A` is not C-contiguous"):
        mm(np.asfortranarray(a), b)
    with pytest.raises(ValueError, match=r"argument `B` has shape \(5, 5\), but `B` is \(K, N\), which is \(4, 5\) here"):
        mm(a, rand(5, 5))
    with pytest.raises(ValueError, match=r"argument `B` has shape \(4,\), but `B` is \(K, N\)"):
        mm(a, rand(4))
    with pytest.raises(TypeError, match=r"matmul is missing input `B`"):
        mm(a)
    with pytest.raises(TypeError, match=r"matmul has no input or size named `C`"):
        mm(a, b, C=a)
    with pytest.raises(TypeError, match=r"matmul takes 2 inputs \(A, B\) but 3 were given"):
        mm(a, b, b)


def test_compile_errors_are_located():
    with pytest.raises(polyc.CompileError) as e:
        polyc.compile("def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) + C(i)\n}\n")
    err = e.value
    assert (err.file, err.line, err.column) == ("<string>", 2, 17)
    assert "<string>:2:17: undefined tensor `C`" in err.message
    assert "help: declare `C` as an input of the def" in err.message
    with pytest.raises(polyc.CompileError, match=r"--param: the value of `M` is `x`, which is not an integer"):
        polyc.compile(MATMUL, params="M=x")
    with pytest.raises(polyc.CompileError, match=r"unknown language `fortran`"):
        polyc.compile(MATMUL, lang="fortran")
    with pytest.raises(polyc.CompileError) as e:
        polyc.compile(MATMUL, target="tpu")
    assert "tpu" in e.value.message
    with pytest.raises(polyc.CompileError, match=r"cannot read the program"):
        polyc.compile("/no/such/file.tc")


def test_a_bad_tile_spec_is_a_located_error():
    with pytest.raises(polyc.CompileError) as e:
        polyc.compile(MATMUL, tile_spec="S_1: 32, 32, banana\n")
    assert e.value.line == 1 and e.value.column is not None


def test_the_cache_hits_on_the_second_compile_and_misses_on_a_change(cache_dir):
    src = "def twice(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) * 2\n}\n"
    first = polyc.compile(src, params={"N": 11})
    second = polyc.compile(src, params={"N": 11})
    other = polyc.compile(src, params={"N": 12})
    assert (first.timings["cache"], second.timings["cache"], other.timings["cache"]) == ("miss", "hit", "miss")
    assert second.cache_dir == first.cache_dir and second.cache_dir.startswith(cache_dir)
    assert os.path.exists(os.path.join(second.cache_dir, "kernel.so"))
    a = rand(11)
    np.testing.assert_array_equal(second(a), a * 2)
    assert "twice__polyc_entry" in second.source
    # A damaged entry (no meta.json) is compiled again, not trusted.
    os.remove(os.path.join(second.cache_dir, "meta.json"))
    third = polyc.compile(src, params={"N": 11})
    assert third.timings["cache"] == "miss"
    np.testing.assert_array_equal(third(a), a * 2)


def test_explain_tree_and_timings():
    mm = polyc.compile(MATMUL, params={"M": 64, "K": 48, "N": 32})
    assert "S_1" in mm.explain()
    tree = mm.tree("scheduled")
    assert tree.startswith("Domain {")
    assert mm.tree("final", format="dot").startswith("digraph")
    with pytest.raises(polyc.CompileError, match="format `yaml` is not a tree format"):
        mm.tree("final", format="yaml")
    assert "schedule" in mm.timings["steps_ms"] or mm.timings["cache"] == "hit"
    mm(rand(64, 48), rand(48, 32))
    assert mm.timings["last_run_ms"] is not None


def test_division_by_zero_is_reported_with_the_statement():
    src = "def quot(i32(N) A, i32(N) B) -> (i32(N) Q) {\n  Q(i) = A(i) / B(i)\n}\n"
    k = polyc.compile(src)
    a = np.array([4, 5, 6], np.int32)
    np.testing.assert_array_equal(k(a, np.array([2, 5, 3], np.int32)), [2, 1, 2])
    with pytest.raises(polyc.KernelError, match=r"<string>:2:3: integer division by zero in statement S_0"):
        k(a, np.array([2, 0, 3], np.int32))


def test_torch_cpu_tensors_zero_copy_and_in_place():
    torch = pytest.importorskip("torch")
    mm = polyc.compile(MATMUL)
    a, b = torch.rand(9, 5), torch.rand(5, 7)
    c = mm(a, b)
    assert isinstance(c, torch.Tensor) and c.dtype == torch.float32
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match=r"argument `A`: dtype torch.float64, but `A` is f32 in the program"):
        mm(a.double(), b)
    with pytest.raises(ValueError, match=r"argument `A` is not contiguous; pass .contiguous\(\)"):
        mm(a.t(), b[:, :9] if b.shape[1] >= 9 else torch.rand(9, 7))
    with pytest.raises(TypeError, match="got both numpy arrays and torch tensors"):
        mm(a, b.numpy())
    src = "def bump(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) + 1\n  A(i) = A(i) * 3\n}\n"
    k = polyc.compile(src)
    x = torch.arange(6, dtype=torch.float32)
    view = x  # the same storage: updated in place, not copied
    y = k(x)
    torch.testing.assert_close(y, torch.arange(6, dtype=torch.float32) + 1)
    torch.testing.assert_close(view, torch.arange(6, dtype=torch.float32) * 3)
    gpu = polyc.compile(MATMUL, params={"M": 9, "K": 5, "N": 7}, target="gpu")
    torch.testing.assert_close(gpu(a, b), a @ b, rtol=1e-4, atol=1e-5)
