"""Tensor Comprehensions' Python API on polyc: ``polyc.tc.define(lang, name=...)``.

As TC's own ``tc.define`` did, it returns a callable on PyTorch tensors (numpy arrays work
too) that compiles the named ``def`` for the sizes of the tensors it is given, once per set
of sizes (the kernels land in polyc's compile cache), and returns the outputs.
"""


class TcFunction:
    """The callable ``define`` returns."""

    def __init__(self, lang, name, **options):
        self.lang = lang
        self.name = name
        self._options = options
        self._generic = None
        self._kernels = {}

    def _signature(self):
        from . import compile

        if self._generic is None:
            self._generic = compile(self.lang, entry=self.name, lang="tc", **self._options)
        return self._generic

    def kernel(self, *args, **kwargs):
        """The :class:`polyc.Kernel` that a call with these arguments runs, compiled for
        their sizes if it is not yet."""
        generic = self._signature()
        values, named = generic._assign(args, kwargs)
        checked = [
            (spec, generic._check_tensor(spec, v)[1])
            for spec, v in zip(generic._inputs, values)
            if spec["kind"] == "tensor"
        ]
        sizes = tuple(generic._bind_sizes(checked, named))
        kernel = self._kernels.get(sizes)
        if kernel is None:
            from . import compile

            params = dict(zip(generic._param_names, sizes))
            kernel = compile(self.lang, entry=self.name, lang="tc", params=params, **self._options)
            self._kernels[sizes] = kernel
        return kernel

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)(*args, **kwargs)


def define(lang, name, **options):
    """TC's ``tc.define``: the ``def`` called ``name`` in the TC source ``lang``, as a
    callable on tensors whose sizes are taken from its arguments. ``options`` are
    :func:`polyc.compile`'s (``target``, ``tile_spec``, ...)."""
    if not isinstance(name, str) or not name:
        raise TypeError("polyc.tc.define needs the def's name, e.g. name=\"matmul\"")
    return TcFunction(lang, name, **options)
