"""Every example of the smoke suite, through polyc.compile and a call on numpy arrays,
against polyc's reference interpreter (Kernel.reference), on the CPU and on OpenCL."""

import os

import numpy as np
import pytest

import polyc
from conftest import smoke_cases, assert_close, copies, random_inputs

CASES = smoke_cases()


def _check(kernel, sizes):
    args = random_inputs(kernel, sizes)
    ref_args = copies(args)
    got = kernel(*args)
    want = kernel.reference(*ref_args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(kernel._outputs)
    compared = 0
    for spec, g, w in zip(kernel._outputs, got, want):
        assert_close(g, w, spec["dtype"], "output %s" % spec["name"])
        compared += w.size
    # Inputs the program writes in place must match too.
    for spec, a, r in zip(kernel._inputs, args, ref_args):
        if spec["kind"] == "tensor" and spec["inplace"]:
            assert_close(a, r, spec["dtype"], "in-place input %s" % spec["name"])
            compared += r.size
    # A check that compared nothing is a failure.
    assert compared > 0
    assert any(np.any(w != 0) for w in want) or any(
        np.any(r != a0) for spec, r, a0 in zip(kernel._inputs, ref_args, random_inputs(kernel, sizes)) if spec["kind"] == "tensor" and spec["inplace"]
    ), "the reference computed only zeros: nothing was checked"


@pytest.mark.parametrize("program,sizes", CASES, ids=[os.path.basename(p) for p, _ in CASES])
def test_example_on_cpu(program, sizes):
    kernel = polyc.compile(program, params=sizes)
    _check(kernel, sizes)


@pytest.mark.parametrize("program,sizes", CASES, ids=[os.path.basename(p) for p, _ in CASES])
def test_example_on_opencl(program, sizes):
    kernel = polyc.compile(program, params=sizes, target="gpu")
    _check(kernel, sizes)
    assert kernel.device  # the device that ran it is reported


def test_the_smoke_suite_was_read():
    assert len(CASES) >= 20
