"""PyTorch CUDA tensors on polyc's CUDA: the program's CUDA C++ (``polyc compile --emit
cuda``) built with nvcc into a shared library under the compile cache, and its host
launcher called through ``ctypes`` on the tensors' device pointers and the current stream.

Nothing is copied: inputs are read and outputs written where PyTorch keeps them, and the
launch is ordered on ``torch.cuda.current_stream()`` like any PyTorch operation. A kernel is
built for the sizes of the call (symbolic sizes are bound from the shapes first: polyc's
GPU mapping needs them to pick blocks and tiles), so each new shape compiles once.
"""

import ctypes
import json
import os
import re
import subprocess
import threading

from . import _cache, _native
from ._errors import KernelError, from_native

# The launcher polyc emits for a `def`: `extern "C" cudaError_t NAME(PARAMS) {`.
_LAUNCHER = re.compile(r'extern "C" cudaError_t (\w+)\(([^)]*)\)\s*\{')

# Names of the CUDA runtime's errors a launch returns most often.
_CUDA_ERRORS = {
    1: "cudaErrorInvalidValue",
    2: "cudaErrorMemoryAllocation",
    98: "cudaErrorInvalidDeviceFunction",
    209: "cudaErrorNoKernelImageForDevice",
    222: "cudaErrorUnsupportedPtxVersion",
    700: "cudaErrorIllegalAddress",
    701: "cudaErrorLaunchOutOfResources",
}

_LOCK = threading.Lock()
# (cache key, arch) -> _Library, for this process.
_LOADED = {}


def find_nvcc():
    """The nvcc polyc itself uses: ``$POLYC_NVCC``, ``nvcc`` on ``PATH``, or the PyPI wheel
    ``nvidia-cuda-nvcc`` of ``python3``, then ``/usr/local/cuda/bin/nvcc``."""
    found = _native.find_nvcc()
    if found is None and os.path.isfile("/usr/local/cuda/bin/nvcc"):
        found = "/usr/local/cuda/bin/nvcc"
    if found is None:
        raise KernelError(
            "nvcc is not installed, and polyc needs it to build CUDA kernels for PyTorch's "
            "CUDA tensors: install the CUDA toolkit or `python3 -m pip install "
            "nvidia-cuda-nvcc nvidia-cuda-cccl`, or set POLYC_NVCC (or pass CPU tensors or "
            "numpy arrays)"
        )
    return found


def launcher_params(source):
    """The launcher's name and parameters, each ``(kind, name, ctype)`` with kind one of
    ``size``, ``tensor``, ``scalar``, ``fault`` and ``stream``."""
    m = _LAUNCHER.search(source)
    if m is None:
        raise KernelError("internal error: the CUDA source has no host launcher")
    params = []
    for decl in (p.strip() for p in m.group(2).split(",") if p.strip()):
        name = re.findall(r"\w+", decl)[-1]
        if decl.startswith("cudaStream_t"):
            params.append(("stream", name, ctypes.c_void_p))
        elif name == "polyc_fault_status":
            params.append(("fault", name, ctypes.c_void_p))
        elif "*" in decl:
            params.append(("tensor", name, ctypes.c_void_p))
        elif decl.startswith("int64_t"):
            params.append(("size", name, ctypes.c_int64))
        else:
            ctype_name = decl.rsplit(" ", 1)[0].strip()
            if ctype_name == "_Float16":
                # x86-64 passes a _Float16 by value in a vector register; ctypes has no
                # such type, and an integer in its place would be read from the wrong one.
                raise KernelError(
                    "scalar input `%s` is f16, which polyc's CUDA launcher takes by value and "
                    "ctypes cannot pass: on CUDA tensors, make it an f32 scalar or a 1-element "
                    "tensor (numpy arrays and CPU tensors take it as it is)" % name
                )
            ctype = {
                "float": ctypes.c_float,
                "double": ctypes.c_double,
                "int32_t": ctypes.c_int32,
                "int64_t": ctypes.c_int64,
                "int8_t": ctypes.c_int8,
            }.get(ctype_name)
            if ctype is None:
                raise KernelError("internal error: launcher parameter `%s` has no ctypes type" % decl)
            params.append(("scalar", name, ctype))
    return m.group(1), params


class _Library:
    """A built launcher: its ctypes function and parameter plan."""

    def __init__(self, path, source):
        self.lib = ctypes.CDLL(path)
        name, self.params = launcher_params(source)
        self.fn = getattr(self.lib, name)
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [p[2] for p in self.params]


def _build(source, arch, directory):
    """``directory/libkernel.so`` from ``source`` (written beside it), through a
    temporary name and a rename, so that a reader never sees half a library."""
    os.makedirs(directory, exist_ok=True)
    lib = os.path.join(directory, "libkernel.so")
    if os.path.isfile(lib):
        return lib
    cu = os.path.join(directory, "kernel.cu")
    with open(cu, "w", encoding="utf-8") as f:
        f.write(source)
    tmp = "%s.tmp%d" % (lib, os.getpid())
    cmd = [find_nvcc(), "-arch=" + arch, "-O3", "-shared", "-Xcompiler", "-fPIC", "-o", tmp, cu]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise KernelError("nvcc could not build polyc's CUDA (%s):\n%s" % (" ".join(cmd), r.stderr.strip()[-2000:]))
    os.replace(tmp, lib)
    return lib


def library(options, sizes, param_names, arch):
    """The built kernel for ``options`` with every size bound to ``sizes``."""
    opts = dict(options)
    opts["params"] = ["%s=%d" % (n, v) for n, v in zip(param_names, sizes)]
    opts["dynamic"] = []
    text = _program_text(opts["program"])
    spec = _program_text(opts["tile_spec"]) if opts.get("tile_spec") else None
    key = _cache.key(text, dict(opts, cuda_arch=arch), spec)
    with _LOCK:
        hit = _LOADED.get(key)
        if hit is not None:
            return hit
        directory = os.path.join(_cache.cache_dir(), "cuda", key)
        lib = os.path.join(directory, "libkernel.so")
        if os.path.isfile(lib):
            with open(os.path.join(directory, "kernel.cu"), encoding="utf-8") as f:
                source = f.read()
        else:
            try:
                source = _native.cuda_source(json.dumps(opts))
            except _native.CompileError as e:
                raise from_native(e) from None
            lib = _build(source, arch, directory)
        built = _Library(lib, source)
        _LOADED[key] = built
        return built


def _program_text(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def arch_of(torch, device):
    major, minor = torch.cuda.get_device_capability(device)
    return "sm_%d%d" % (major, minor)


def _launch_plan(kernel, torch, device, sizes):
    """The built launcher for these sizes on ``device``, with how to fill each parameter:
    ``(built, device name, steps)``, each step ``(kind, where, ctype)``: a tensor's index
    among the call's tensors (inputs, then outputs), a scalar's index among its scalars, a
    size's value, or the stream and fault slots. Memoised per kernel, sizes and device."""
    if device.index not in (None, 0):
        raise KernelError(
            "polyc launches its CUDA kernels on device 0 (cuda:0), but the tensors are on %s; "
            "move them with .to(\"cuda:0\")" % device
        )
    memo = kernel.__dict__.setdefault("_cuda_plans", {})
    k = (tuple(sizes), device.index)
    plan = memo.get(k)
    if plan is not None:
        return plan
    built = library(kernel._options, sizes, kernel._param_names, arch_of(torch, device))
    tensor_at = {}
    for spec in kernel._inputs:
        if spec["kind"] == "tensor":
            tensor_at[spec["name"]] = len(tensor_at)
    for spec in kernel._outputs:
        tensor_at[spec["name"]] = len(tensor_at)
    scalar_at = {}
    for spec in kernel._inputs:
        if spec["kind"] == "scalar":
            scalar_at[spec["name"]] = (len(scalar_at), spec)
    size_of = dict(zip(kernel._param_names, sizes))
    steps = []
    for kind, name, ctype in built.params:
        if kind == "size" and name not in size_of and name in scalar_at:
            kind = "scalar"  # an i64 scalar input reads like a size in the launcher
        if kind == "tensor":
            steps.append(("tensor", tensor_at[name], ctype))
        elif kind == "scalar":
            steps.append(("scalar", scalar_at[name], ctype))
        elif kind == "size":
            steps.append(("const", ctypes.c_int64(size_of[name]), ctype))
        else:
            steps.append((kind, None, ctype))
    plan = (built, torch.cuda.get_device_name(device), steps)
    memo[k] = plan
    return plan


def run(kernel, torch, device, sizes, tensors, scalars, outs):
    """Launches ``kernel``'s CUDA on PyTorch CUDA tensors; returns the device's name."""
    built, name, steps = _launch_plan(kernel, torch, device, sizes)
    addrs = [t.addr for t in tensors] + [o.addr for o in outs]
    fault = None
    args = []
    for kind, where, _ctype in steps:
        if kind == "tensor":
            args.append(addrs[where])
        elif kind == "const":
            args.append(where)
        elif kind == "stream":
            args.append(torch.cuda.current_stream(device).cuda_stream)
        elif kind == "scalar":
            i, spec = where
            args.append(kernel._scalar(spec, scalars[i][1]))
        else:
            fault = ctypes.c_int(0)
            args.append(ctypes.cast(ctypes.pointer(fault), ctypes.c_void_p))
    rc = built.fn(*args)
    if rc != 0:
        raise KernelError(
            "kernel `%s` failed on %s: CUDA error %d (%s)"
            % (kernel.name, name, rc, _CUDA_ERRORS.get(rc, "see cudaGetErrorString"))
        )
    if fault is not None and fault.value != 0:
        k = fault.value - 1
        raise KernelError("%s: integer division by zero in statement S_%d (it computed 0 there)" % (kernel._meta["stmts"][k], k))
    return name


__all__ = ["run", "launcher_params", "find_nvcc", "library"]
