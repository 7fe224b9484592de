"""A compiled kernel as a Python callable on numpy arrays and PyTorch CPU tensors."""

import ctypes
import time

import numpy as np

from . import _native
from ._errors import CompileError, KernelError, from_native

# polyc's element types and their numpy, ctypes and torch spellings.
_NUMPY = {
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
_CTYPES = {
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "i8": ctypes.c_int8,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "f16": ctypes.c_uint16,
}
_TORCH_NAMES = {
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "i8": "int8",
    "i32": "int32",
    "i64": "int64",
}
_ENTRY_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))


def _eval(e, sizes):
    """Evaluates a shape expression of the signature (see ``python/src/meta.rs``)."""
    if "c" in e:
        return e["c"]
    if "p" in e:
        return sizes[e["p"]]
    if "add" in e:
        return _eval(e["add"][0], sizes) + _eval(e["add"][1], sizes)
    if "sub" in e:
        return _eval(e["sub"][0], sizes) - _eval(e["sub"][1], sizes)
    if "mul" in e:
        return e["mul"][0] * _eval(e["mul"][1], sizes)
    if "neg" in e:
        return -_eval(e["neg"], sizes)
    if "fdiv" in e:
        return _eval(e["fdiv"][0], sizes) // e["fdiv"][1]
    if "mod" in e:
        return _eval(e["mod"][0], sizes) % e["mod"][1]
    raise KernelError("internal error: shape expression %r" % (e,))


def _expr_text(e, names):
    if "c" in e:
        return str(e["c"])
    if "p" in e:
        return names[e["p"]]
    for op, sym in (("add", "+"), ("sub", "-")):
        if op in e:
            return "%s %s %s" % (_expr_text(e[op][0], names), sym, _expr_text(e[op][1], names))
    if "mul" in e:
        return "%d*%s" % (e["mul"][0], _expr_text(e["mul"][1], names))
    if "neg" in e:
        return "-" + _expr_text(e["neg"], names)
    if "fdiv" in e:
        return "floor(%s/%d)" % (_expr_text(e["fdiv"][0], names), e["fdiv"][1])
    return "(%s mod %d)" % (_expr_text(e["mod"][0], names), e["mod"][1])


def _results(outs):
    """No output: None; one: itself; several: a tuple."""
    if len(outs) == 1:
        return outs[0].value
    return tuple(o.value for o in outs) if outs else None


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "data_ptr")


class _Arg:
    """One tensor argument, checked: its address and the kind of array it came from."""

    __slots__ = ("value", "addr", "torch")

    def __init__(self, value, addr, torch):
        self.value = value
        self.addr = addr
        self.torch = torch


class Kernel:
    """A compiled polyc kernel. Call it on numpy arrays or PyTorch CPU tensors, and, on
    GPU targets, on PyTorch CUDA tensors too (polyc's CUDA, built with nvcc, runs on them in
    place, on the current stream, compiled for the call's sizes).

    ``kernel(*inputs, **named)`` takes the ``def``'s inputs in order (tensors and scalars),
    or by name, and sizes that no shape determines by name. It checks each tensor's dtype,
    rank, shape and layout (C-contiguous), binds the symbolic sizes from the shapes,
    allocates the outputs (zeros) and returns them: one output alone, several as a tuple, in
    the inputs' kind (numpy in, numpy out; torch in, torch out). Inputs the program writes
    are updated in place. Tensors are passed to the CPU kernel by address, never copied.
    """

    def __init__(self, meta, options, entry_dir=None, gpu=None, cache_hit=False, compile_ms=0.0):
        self._meta = meta
        self._options = options
        self._gpu = gpu
        self._lib = None
        self._entry = None
        self.name = meta["name"]
        self.target = meta["target"]
        self.cache_dir = entry_dir
        self.notes = list(meta.get("notes", []))
        self.device = "cpu" if gpu is None else None
        self._param_names = [p["name"] for p in meta["params"]]
        self._bound = [p["value"] for p in meta["params"]]
        self._inputs = meta["inputs"]
        self._outputs = meta["outputs"]
        self._by_name = {a["name"]: i for i, a in enumerate(self._inputs)}
        # Per tensor input: its dimensions as (size index, None) or (None, expression).
        self._dims = {
            a["name"]: [(e["p"], None) if "p" in e else (None, e) for e in a["shape"]]
            for a in self._inputs
            if a["kind"] == "tensor"
        }
        self._all_tensors = all(a["kind"] == "tensor" for a in self._inputs)
        self.timings = {
            "compile_ms": compile_ms,
            "cache": "hit" if cache_hit else "miss",
            "steps_ms": {step: ms for step, ms in meta.get("timings", [])},
            "last_run_ms": None,
        }
        if gpu is None and entry_dir is not None:
            import os

            self._lib = ctypes.CDLL(os.path.join(entry_dir, "kernel.so"))
            self._entry = _ENTRY_TYPE((meta["entry"], self._lib))
        self._source = None

    # -- what the compiler produced ------------------------------------------------------

    @property
    def source(self):
        """The emitted source (C for the CPU; CUDA for GPU targets)."""
        if self._source is None:
            if self.cache_dir is not None:
                import os

                with open(os.path.join(self.cache_dir, "kernel.c"), encoding="utf-8") as f:
                    self._source = f.read()
            elif self._gpu is not None:
                import json

                try:
                    self._source = _native.cuda_source(json.dumps(self._options))
                except _native.CompileError as e:
                    raise from_native(e) from None
            else:
                self._source = self._meta.get("source", "")
        return self._source

    @property
    def signature(self):
        """The ``def``'s sizes, inputs and outputs, as polyc resolved them."""
        names = self._param_names

        def shape(t):
            return "(" + ", ".join(_expr_text(e, names) for e in t.get("shape", [])) + ")"

        ins = ["%s%s %s" % (a["dtype"], shape(a) if a["kind"] == "tensor" else "", a["name"]) for a in self._inputs]
        outs = ["%s%s %s" % (o["dtype"], shape(o), o["name"]) for o in self._outputs]
        return "def %s(%s) -> (%s)" % (self.name, ", ".join(ins), ", ".join(outs))

    def explain(self):
        """``polyc explain`` for this kernel: tiles, footprints, capacity, notes."""
        try:
            return _native.explain(self._options_json())
        except _native.CompileError as e:
            raise from_native(e) from None

    def tree(self, stage="final", format="tree"):
        """The schedule tree after ``stage`` (``polyc dump --stage``), as ``tree``, ``dot``
        or ``isl`` text."""
        try:
            return _native.tree(self._options_json(), stage, format)
        except _native.CompileError as e:
            raise from_native(e) from None

    def _options_json(self):
        import json

        return json.dumps(self._options)

    def __repr__(self):
        return "<polyc.Kernel %s on %s>" % (self.signature, self.target)

    # -- calling ---------------------------------------------------------------------------

    def _assign(self, args, kwargs):
        """Each input's value, and the sizes given by name."""
        values = [None] * len(self._inputs)
        if len(args) > len(self._inputs):
            raise TypeError(
                "%s takes %d inputs (%s) but %d were given"
                % (self.name, len(self._inputs), ", ".join(a["name"] for a in self._inputs), len(args))
            )
        for i, v in enumerate(args):
            values[i] = v
        sizes = {}
        for name, v in kwargs.items():
            if name in self._by_name:
                i = self._by_name[name]
                if values[i] is not None:
                    raise TypeError("%s got input `%s` twice (by position and by name)" % (self.name, name))
                values[i] = v
            elif name in self._param_names:
                sizes[name] = v
            else:
                raise TypeError(
                    "%s has no input or size named `%s`; its inputs are %s and its sizes %s"
                    % (
                        self.name,
                        name,
                        ", ".join(a["name"] for a in self._inputs) or "none",
                        ", ".join(self._param_names) or "none",
                    )
                )
        missing = [a["name"] for a, v in zip(self._inputs, values) if v is None]
        if missing:
            raise TypeError("%s is missing input%s %s" % (self.name, "s" if len(missing) > 1 else "", ", ".join("`%s`" % m for m in missing)))
        return values, sizes

    def _check_tensor(self, spec, value):
        """The checked argument for tensor input ``spec``: dtype, layout, writability."""
        if type(value) is np.ndarray and value.dtype == _NUMPY[spec["dtype"]] and value.flags.c_contiguous and (value.flags.writeable or not spec.get("inplace")):
            return _Arg(value, value.__array_interface__["data"][0], False), value.shape
        name = spec["name"]
        if _is_torch(value):
            want = _TORCH_NAMES[spec["dtype"]]
            got = str(value.dtype).replace("torch.", "")
            if got != want:
                raise TypeError("argument `%s`: dtype torch.%s, but `%s` is %s in the program (torch.%s); convert it with .to(torch.%s)" % (name, got, name, spec["dtype"], want, want))
            if value.device.type == "cuda" and self._gpu is None:
                raise ValueError("argument `%s` is on %s, but this kernel was compiled for target `%s`, which takes CPU tensors (pass .cpu(), or compile with target=\"gpu\")" % (name, value.device, self.target))
            if value.device.type not in ("cpu", "cuda"):
                raise ValueError("argument `%s` is on %s; polyc.Kernel takes CPU tensors, and CUDA tensors on GPU targets (pass .cpu())" % (name, value.device))
            if not value.is_contiguous():
                raise ValueError("argument `%s` is not contiguous; pass .contiguous()" % name)
            return _Arg(value, value.data_ptr(), True), tuple(value.shape)
        if not isinstance(value, np.ndarray):
            raise TypeError("argument `%s` must be a numpy array or a torch tensor, not %s" % (name, type(value).__name__))
        want = _NUMPY[spec["dtype"]]
        if value.dtype != want:
            raise TypeError("argument `%s`: dtype %s, but `%s` is %s in the program (numpy %s); convert it with .astype(numpy.%s)" % (name, value.dtype, name, spec["dtype"], want, want))
        if not value.flags.c_contiguous:
            raise ValueError("argument `%s` is not C-contiguous; pass numpy.ascontiguousarray(%s)" % (name, name))
        if spec.get("inplace") and not value.flags.writeable:
            raise ValueError("argument `%s` is read-only, but the program updates `%s` in place" % (name, name))
        return _Arg(value, value.__array_interface__["data"][0], False), value.shape

    def _bind_sizes(self, checked, named):
        """Every size's value: compiled-in, given by name, or read from a shape."""
        sizes = list(self._bound)
        for name, v in named.items():
            p = self._param_names.index(name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError("size `%s` must be an integer, not %r" % (name, v))
            if sizes[p] is not None and sizes[p] != v:
                raise ValueError("size %s = %d, but the kernel was compiled for %s = %d (params=...)" % (name, v, name, sizes[p]))
            sizes[p] = int(v)
        deferred = False
        for spec, shape in checked:
            dims = self._dims[spec["name"]]
            if len(shape) != len(dims):
                raise self._shape_error(spec, shape, named, checked)
            for (p, e), n in zip(dims, shape):
                if p is None:
                    deferred = True
                elif sizes[p] is None:
                    sizes[p] = int(n)
                elif sizes[p] != n:
                    raise self._shape_error(spec, shape, named, checked)
        if None in sizes:
            unbound = [n for n, v in zip(self._param_names, sizes) if v is None]
            raise TypeError("%s: no shape gives size%s %s; pass %s" % (self.name, "s" if len(unbound) > 1 else "", ", ".join(unbound), ", ".join("%s=..." % n for n in unbound)))
        if deferred:
            for spec, shape in checked:
                for (p, e), n in zip(self._dims[spec["name"]], shape):
                    if p is None and _eval(e, sizes) != n:
                        raise self._shape_error(spec, shape, named, checked)
        return sizes

    def _shape_error(self, spec, shape, named, checked):
        """The error for a tensor whose shape disagrees: what each size is and where its
        value came from."""
        sizes = list(self._bound)
        origin = ["compiled in" if v is not None else None for v in sizes]
        for name, v in named.items():
            p = self._param_names.index(name)
            if sizes[p] is None:
                sizes[p], origin[p] = int(v), "given by name"
        for other, oshape in checked:
            for d, e in enumerate(other["shape"]):
                if "p" in e and d < len(oshape) and sizes[e["p"]] is None:
                    sizes[e["p"]], origin[e["p"]] = int(oshape[d]), "dimension %d of `%s`" % (d, other["name"])
        text = "(" + ", ".join(_expr_text(e, self._param_names) for e in spec["shape"]) + ")"
        if None in sizes:
            return ValueError("argument `%s` has shape %s, but `%s` is %s" % (spec["name"], tuple(shape), spec["name"], text))
        want = tuple(_eval(e, sizes) for e in spec["shape"])
        detail = "; ".join("%s = %d (%s)" % (n, v, o) for n, v, o in zip(self._param_names, sizes, origin))
        return ValueError("argument `%s` has shape %s, but `%s` is %s, which is %s here (%s)" % (spec["name"], tuple(shape), spec["name"], text, want, detail))

    def _prepare(self, args, kwargs):
        """Checks the arguments and allocates the outputs: (sizes, tensors, scalars,
        outputs)."""
        values, named = self._assign(args, kwargs)
        checked, tensors, scalars = [], [], []
        for spec, v in zip(self._inputs, values):
            if spec["kind"] == "tensor":
                arg, shape = self._check_tensor(spec, v)
                checked.append((spec, shape))
                tensors.append(arg)
            else:
                scalars.append((spec, v))
        sizes = self._bind_sizes(checked, named)
        kinds = {a.torch for a in tensors}
        if len(kinds) > 1:
            raise TypeError("%s got both numpy arrays and torch tensors; pass one kind" % self.name)
        as_torch = kinds == {True}
        devices = {str(a.value.device) for a in tensors if a.torch}
        if len(devices) > 1:
            raise TypeError("%s got tensors on %s; pass them all on one device" % (self.name, " and ".join(sorted(devices))))
        device = devices.pop() if devices else None
        if device is not None and not device.startswith("cuda"):
            device = None
        outs = [self._allocate(o, sizes, as_torch, device) for o in self._outputs]
        return sizes, tensors, scalars, outs, device

    def __call__(self, *args, **kwargs):
        sizes, tensors, scalars, outs, device = self._prepare(args, kwargs)
        start = time.perf_counter()
        if device is not None:
            import torch

            from . import _cuda

            self.device = _cuda.run(self, torch, torch.device(device), sizes, tensors, scalars, outs)
        elif self._gpu is not None:
            self._run_gpu(sizes, tensors, scalars, outs)
        else:
            self._run_cpu(sizes, tensors, scalars, outs)
        self.timings["last_run_ms"] = (time.perf_counter() - start) * 1e3
        return _results(outs)

    def reference(self, *args, **kwargs):
        """What the kernel computes, by polyc's reference interpreter: the program in the
        order it is written, untransformed (the oracle of ``polyc run --check``). Takes
        and returns what a call does; inputs the program writes are updated in place."""
        sizes, tensors, scalars, outs, device = self._prepare(args, kwargs)
        if device is not None:
            raise ValueError("Kernel.reference runs on the CPU: pass CPU tensors (.cpu())")
        addrs, values = self._addresses(tensors, scalars, outs)
        try:
            _native.reference(self._options_json(), sizes, addrs, values)
        except _native.CompileError as e:
            raise KernelError(from_native(e).message) from None
        return _results(outs)

    def _allocate(self, spec, sizes, as_torch, device=None):
        shape = tuple([sizes[e["p"]] if "p" in e else max(0, _eval(e, sizes)) for e in spec["shape"]])
        if as_torch:
            import torch

            t = torch.zeros(shape, dtype=getattr(torch, _TORCH_NAMES[spec["dtype"]]), device=device or "cpu")
            return _Arg(t, t.data_ptr(), True)
        a = np.zeros(shape, dtype=_NUMPY[spec["dtype"]])
        return _Arg(a, a.ctypes.data, False)

    def _scalar(self, spec, v):
        if spec["dtype"] == "f16":
            return ctypes.c_uint16(int(np.array(v, dtype=np.float16).view(np.uint16)))
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError("argument `%s` must be a number (%s), not %s" % (spec["name"], spec["dtype"], type(v).__name__))
        if spec["dtype"].startswith("i") and float(v) != int(v):
            raise TypeError("argument `%s` is %s in the program, but %r is not an integer" % (spec["name"], spec["dtype"], v))
        return _CTYPES[spec["dtype"]](v)

    def _run_cpu(self, sizes, tensors, scalars, outs):
        n = len(sizes)
        size_arr = (ctypes.c_int64 * max(n, 1))(*sizes)
        base = ctypes.addressof(size_arr)
        ptrs = [base + 8 * i for i in range(n)]
        keep = None
        if self._all_tensors:
            ptrs.extend(t.addr for t in tensors)
        else:
            keep = []
            ti = iter(tensors)
            si = iter(scalars)
            for spec in self._inputs:
                if spec["kind"] == "tensor":
                    ptrs.append(next(ti).addr)
                else:
                    s_spec, v = next(si)
                    c = self._scalar(s_spec, v)
                    keep.append(c)
                    ptrs.append(ctypes.addressof(c))
        ptrs.extend(o.addr for o in outs)
        argv = (ctypes.c_void_p * len(ptrs))(*ptrs)
        status = self._entry(argv)
        del keep
        if status != 0:
            raise self._status_error(status, sizes)

    def _status_error(self, status, sizes):
        names = self._param_names
        if status == -1:
            return KernelError("kernel `%s` could not allocate its temporaries" % self.name)
        if 0 < status <= len(names):
            p = status - 1
            return KernelError("size %s = %d differs from the value the kernel was compiled for" % (names[p], sizes[p]))
        if -2 - len(names) < status <= -2:
            p = -2 - status
            return KernelError("size %s = %d is outside the values the kernel was compiled for (dynamic=...)" % (names[p], sizes[p]))
        k = -1000 - status
        if 0 <= k < len(self._meta["stmts"]):
            return KernelError("%s: integer division by zero in statement S_%d (it computed 0 there)" % (self._meta["stmts"][k], k))
        return KernelError("kernel `%s` returned status %d" % (self.name, status))

    def _addresses(self, tensors, scalars, outs):
        """Each tensor's address by id (0 for temporaries) and each scalar's value."""
        addrs = [0] * self._meta["tensors"]
        ti = iter(tensors)
        for spec in self._inputs:
            if spec["kind"] == "tensor":
                addrs[spec["id"]] = next(ti).addr
        for spec, o in zip(self._outputs, outs):
            addrs[spec["id"]] = o.addr
        values = [0.0] * len(scalars)
        for spec, v in scalars:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError("argument `%s` must be a number (%s), not %s" % (spec["name"], spec["dtype"], type(v).__name__))
            values[spec["id"]] = float(v)
        return addrs, values

    def _run_gpu(self, sizes, tensors, scalars, outs):
        addrs, values = self._addresses(tensors, scalars, outs)
        try:
            ms, device = self._gpu.run(sizes, addrs, values)
        except _native.CompileError as e:
            raise KernelError(from_native(e).message) from None
        self.device = device or self.target
        self.timings["device_ms"] = ms


__all__ = ["Kernel", "CompileError", "KernelError"]
