"""polyc from Python: compile a tensor program, call it on numpy arrays or PyTorch tensors.

>>> import numpy as np, polyc
>>> mm = polyc.compile('''
... def matmul(f32(M, K) A, f32(K, N) B) -> (f32(M, N) C) {
...   C(i, j) +=! A(i, k) * B(k, j)
... }''')
>>> C = mm(np.ones((3, 4), np.float32), np.ones((4, 5), np.float32))
>>> float(C[0, 0])
4.0

``polyc.compile`` takes the ``polyc`` command's options as keywords and checks them the
same way; kernels are cached on disk (``POLYC_CACHE_DIR``). ``polyc.tc.define`` is Tensor
Comprehensions' API. See the README's "Python package" section.
"""

import json
import os
import time

from . import _cache, _native
from ._errors import CompileError, KernelError, from_native
from ._kernel import Kernel
from . import tc  # noqa: E402  (needs compile, imported lazily inside)

__version__ = _native.version()

_GPU_TARGETS = {"gpu", "a100", "h100"}
# GPU kernels are built in this process (OpenCL programs, CUDA modules): kept per key.
_GPU_KERNELS = {}


def _program(source_or_path):
    """(path, text, rename): a program given as a path, or as source text (written under
    the cache and reported as ``<string>``)."""
    if isinstance(source_or_path, os.PathLike) or (
        isinstance(source_or_path, str) and "\n" not in source_or_path and "{" not in source_or_path
    ):
        path = os.fspath(source_or_path)
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                return path, f.read(), None
        except OSError as e:
            raise CompileError("%s: cannot read the program: %s" % (path, e.strerror), path) from None
    if not isinstance(source_or_path, str):
        raise TypeError("polyc.compile takes a program's text or its path, not %s" % type(source_or_path).__name__)
    path = _cache.source_file(source_or_path, ".tc")
    return path, source_or_path, {path: "<string>"}


def _tile_spec(spec):
    """(path, text) of a tile spec given as a path or as the spec itself."""
    if spec is None:
        return None, None
    spec = os.fspath(spec)
    if os.path.exists(spec):
        with open(spec, encoding="utf-8", errors="surrogateescape") as f:
            return spec, f.read()
    if ":" in spec:
        return _cache.source_file(spec, ".spec"), spec  # reported as <tile_spec>
    raise CompileError("tile_spec: no file `%s`, and it is not a tile spec (no `STATEMENT:` entry)" % spec)


def _sizes(value, what):
    """``{"N": 64}``, ``"N=64,M=3"`` or ``["N=64"]`` as the CLI's ``NAME=VALUE`` flags."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if what == "dynamic" and isinstance(v, tuple) and len(v) == 2:
                out.append("%s=%d..%d" % (k, v[0], v[1]))
            elif what == "dynamic" and isinstance(v, (list, set, frozenset)):
                out.append("%s={%s}" % (k, ",".join(str(x) for x in sorted(v))))
            else:
                out.append("%s=%s" % (k, v))
        return out
    return [str(v) for v in value]


def compile(source_or_path, *, entry=None, params=None, target="cpu", tile_spec=None, lang="auto", dynamic=None, scheduler=None, policy=None, isl_options=None, device=None):
    """Compiles a program and returns a :class:`Kernel`.

    The keywords mean what the ``polyc`` command's flags of the same names mean
    (``--entry``, ``--param``, ``--target``, ``--tile-spec``, ``--lang``, ``--dynamic``,
    ``--scheduler``, ``--policy``, ``--isl-option``, ``--device``) and are checked by the
    same code. ``params`` binds sizes (``{"N": 64}``); sizes left out stay symbolic and are
    bound from the tensors at each call. A program may be given as its text or its path;
    a tile spec as a path or as the spec's text. Errors raise :class:`CompileError`.
    """
    start = time.perf_counter()
    path, text, rename = _program(source_or_path)
    spec_path, spec_text = _tile_spec(tile_spec)
    options = {
        "program": path,
        "entry": entry,
        "lang": lang,
        "params": _sizes(params, "params"),
        "target": target,
        "tile_spec": spec_path,
        "dynamic": _sizes(dynamic, "dynamic"),
        "scheduler": scheduler,
        "policy": policy,
        "isl_options": _sizes(isl_options, "isl_options"),
        "device": device,
    }
    key = _cache.key(text, options, spec_text)
    gpu = str(target) in _GPU_TARGETS or str(target).endswith((".yaml", ".yml"))
    if gpu and key in _GPU_KERNELS:
        meta, native = _GPU_KERNELS[key]
        return Kernel(meta, options, gpu=native, cache_hit=True, compile_ms=(time.perf_counter() - start) * 1e3)
    meta = None if gpu else _cache.lookup(key)
    if meta is not None:
        return Kernel(meta, options, entry_dir=_cache.entry_dir(key), cache_hit=True, compile_ms=(time.perf_counter() - start) * 1e3)
    tmp = None if gpu else _cache.new_entry()
    try:
        library = None if tmp is None else os.path.join(tmp, "kernel.so")
        meta_json, native = _native.compile_kernel(json.dumps(options), library)
    except _native.CompileError as e:
        if tmp is not None:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        names = dict(rename or {})
        if spec_path is not None and spec_text is not None and spec_path.startswith(_cache.cache_dir()):
            names[spec_path] = "<tile_spec>"
        raise from_native(e, names) from None
    meta = json.loads(meta_json)
    if rename:
        meta["stmts"] = [s.replace(path, "<string>") for s in meta["stmts"]]
    ms = (time.perf_counter() - start) * 1e3
    if native is not None:
        _GPU_KERNELS[key] = (meta, native)
        return Kernel(meta, options, gpu=native, compile_ms=ms)
    d = _cache.publish(tmp, key, meta)
    return Kernel(meta, options, entry_dir=d, compile_ms=ms)


__all__ = ["compile", "Kernel", "CompileError", "KernelError", "tc", "__version__"]
