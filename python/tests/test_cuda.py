"""PyTorch CUDA tensors on GPU targets: polyc's CUDA built with nvcc and launched on the
tensors in place, on their stream (polyc._cuda).

Without nvcc the build tests fail (scripts/install-deps installs it). The launch tests
need a CUDA device and PyTorch with CUDA; where there is none they are skipped, and the
README ("Python package", "On a GPU") says where and how they last ran.
"""

import ctypes
import os

import numpy as np
import pytest

import polyc
from polyc import _cuda, _native
from conftest import smoke_cases, assert_close, copies, example, random_inputs

CASES = smoke_cases()


def _cuda_source(program, sizes, target="h100"):
    import json

    opts = {
        "program": program,
        "params": ["%s=%d" % kv for kv in sizes.items()],
        "target": target,
    }
    return _native.cuda_source(json.dumps(opts))


@pytest.mark.parametrize("program,sizes", CASES, ids=[os.path.basename(p) for p, _ in CASES])
def test_every_launcher_parameter_has_a_role(program, sizes):
    """The launcher of every smoke-suite program parses: each tensor by its name, the
    stream last."""
    kernel = polyc.compile(program, params=sizes)
    name, params = _cuda.launcher_params(_cuda_source(program, sizes))
    assert name == kernel.name
    assert params[-1][0] == "stream"
    tensors = [p[1] for p in params if p[0] == "tensor"]
    want = [a["name"] for a in kernel._inputs if a["kind"] == "tensor"] + [o["name"] for o in kernel._outputs]
    assert tensors == want
    scalars = [p[1] for p in params if p[0] == "scalar"]
    assert scalars == [a["name"] for a in kernel._inputs if a["kind"] == "scalar"]


def test_a_launcher_builds_with_nvcc_and_loads(tmp_path):
    """nvcc builds the library polyc launches, and ctypes finds the launcher in it (no GPU
    needed to load it: the CUDA runtime is linked in and reaches the driver only when
    called)."""
    src = _cuda_source(example("matmul.tc"), {"M": 67, "N": 45, "K": 53})
    lib = _cuda._build(src, "sm_90", str(tmp_path / "k"))
    built = _cuda._Library(lib, src)
    assert [p[0] for p in built.params] == ["tensor", "tensor", "tensor", "stream"]
    assert built.fn.argtypes == [ctypes.c_void_p] * 4
    # A second build of the same directory reuses the library.
    assert _cuda._build(src, "sm_90", str(tmp_path / "k")) == lib


def test_symbolic_sizes_are_launcher_arguments():
    name, params = _cuda.launcher_params(_cuda_source(example("matmul.tc"), {}))
    assert name == "matmul"
    assert [(k, n) for k, n, _ in params] == [
        ("size", "M"), ("size", "K"), ("size", "N"),
        ("tensor", "A"), ("tensor", "B"), ("tensor", "C"), ("stream", "stream"),
    ]


def test_an_i64_scalar_is_passed_as_a_scalar_and_an_f16_scalar_is_refused(tmp_path):
    """The launcher takes scalars by value: an i64 one looks like a size there and is
    passed from the call's scalars; an f16 one (a `_Float16` by value, which ctypes cannot
    pass) is an error that says what to do."""
    prog = tmp_path / "addk.tc"
    prog.write_text("def addk(i64(N) X, i64 k, f32 s) -> (i64(N) Z) {\n  Z(i) = X(i) + k\n}\n")
    name, params = _cuda.launcher_params(_cuda_source(str(prog), {"N": 5}))
    assert [(k, n) for k, n, _ in params] == [
        ("tensor", "X"), ("size", "k"), ("scalar", "s"), ("tensor", "Z"), ("stream", "stream"),
    ]
    half = tmp_path / "haxpy.tc"
    half.write_text("def haxpy(f16(N) X, f16 a) -> (f16(N) Z) {\n  Z(i) = a * X(i)\n}\n")
    with pytest.raises(polyc.KernelError, match="scalar input `a` is f16, which polyc's CUDA launcher takes by value"):
        _cuda.launcher_params(_cuda_source(str(half), {"N": 5}))


try:
    import torch
except ImportError:
    torch = None


def _cuda_ready():
    return torch is not None and torch.cuda.is_available()


needs_cuda = pytest.mark.skipif(not _cuda_ready(), reason="no CUDA device here (PyTorch with CUDA and a GPU are needed)")


def _to_cuda(args):
    return [torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in args]


@needs_cuda
@pytest.mark.parametrize("program,sizes", CASES, ids=[os.path.basename(p) for p, _ in CASES])
def test_example_on_cuda_tensors(program, sizes):
    """Each smoke-suite program on torch CUDA tensors, against the interpreter on the
    same inputs; outputs come back as CUDA tensors, in-place inputs change in place."""
    kernel = polyc.compile(program, target="h100")  # sizes bound from the tensors
    args = random_inputs(kernel, sizes)
    ref_args = copies(args)
    dev_args = _to_cuda(args)
    got = kernel(*dev_args)
    want = kernel.reference(*ref_args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert kernel.device == torch.cuda.get_device_name(0)
    compared = 0
    for spec, g, w in zip(kernel._outputs, got, want):
        assert isinstance(g, torch.Tensor) and g.device.type == "cuda"
        assert_close(g.cpu().numpy(), w, spec["dtype"], "output %s" % spec["name"])
        compared += w.size
    for spec, a, r in zip(kernel._inputs, dev_args, ref_args):
        if spec["kind"] == "tensor" and spec["inplace"]:
            assert_close(a.cpu().numpy(), r, spec["dtype"], "in-place input %s" % spec["name"])
            compared += r.size
    assert compared > 0


@needs_cuda
def test_cuda_tensors_run_on_the_current_stream_without_copies():
    mm = polyc.compile(example("matmul.tc"), target="gpu")
    a = torch.rand(129, 65, device="cuda")
    b = torch.rand(65, 97, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        c = mm(a, b)
    s.synchronize()
    torch.testing.assert_close(c, a.double().matmul(b.double()).float(), rtol=1e-4, atol=1e-4)
    # A second shape builds a second kernel; the first is reused afterwards.
    c2 = mm(a[:7].contiguous(), b)
    torch.testing.assert_close(c2, c[:7], rtol=1e-5, atol=1e-5)


@needs_cuda
def test_cuda_tensor_errors_name_the_argument():
    mm = polyc.compile(example("matmul.tc"), target="gpu")
    a = torch.rand(8, 4, device="cuda")
    with pytest.raises(TypeError, match="got tensors on cpu and cuda:0; pass them all on one device"):
        mm(a, torch.rand(4, 3))
    cpu = polyc.compile(example("matmul.tc"))
    with pytest.raises(ValueError, match="argument `A` is on cuda:0, but this kernel was compiled for target `cpu`"):
        cpu(a, torch.rand(4, 3, device="cuda"))


@needs_cuda
def test_scalars_on_cuda_tensors(tmp_path):
    prog = tmp_path / "scale.tc"
    prog.write_text("def scale(f32(N) X, i64 k, f32 s) -> (f32(N) Z) {\n  Z(i) = s * X(i) + k\n}\n")
    f = polyc.compile(str(prog), target="gpu")
    x = torch.rand(37, device="cuda")
    torch.testing.assert_close(f(x, 3, 0.5), 0.5 * x + 3)
