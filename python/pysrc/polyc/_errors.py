"""polyc's exceptions."""

import re

from . import _native

_LOCATION = re.compile(r"^\s*(?:[×x✗]\s*)?(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): ")


class CompileError(Exception):
    """A program, tile spec or option that polyc cannot compile.

    ``message`` is the text the ``polyc`` command prints (the located message, the
    offending line under a caret, and a remedy). ``file``, ``line`` and ``column`` locate
    it when it has a place in a file (else they are ``None``).
    """

    def __init__(self, message, file=None, line=None, column=None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column


class KernelError(RuntimeError):
    """A kernel that stopped at run time (a size outside those it was compiled for, a
    division by zero, an allocation that failed), with the statement's location where
    there is one."""


def from_native(err, rename=None):
    """A :class:`CompileError` from the native module's, with the location parsed out of
    the first line. ``rename`` maps a cache path back to the name the user knows (for
    programs given as strings: ``<string>``)."""
    text = str(err.args[0]) if err.args else str(err)
    if rename:
        for path, name in rename.items():
            text = text.replace(path, name)
    first = next((l for l in text.splitlines() if l.strip()), "")
    m = _LOCATION.match(first)
    if m:
        return CompileError(text, m.group("file").strip(), int(m.group("line")), int(m.group("col")))
    return CompileError(text)


# The native module raises its own class; polyc's is the one users catch.
_ = _native.CompileError
