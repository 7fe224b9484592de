"""The compile cache on disk: one folder per kernel, keyed like Triton's.

A key hashes everything that decides what a compile produces: the program's text and
path, the options, the tile spec's text, polyc's version and the build of its native
module, the C compiler and the processor (the C is built with ``-march=native``). An entry
holds ``meta.json`` (the signature) and, for the CPU, ``kernel.so`` and ``kernel.c``.
Entries are written under a temporary name and renamed, so a reader never sees half of one.
"""

import hashlib
import json
import os
import platform
import tempfile

from . import _native

_CPU_MODEL = None


def cache_dir():
    """``$POLYC_CACHE_DIR``, else ``$XDG_CACHE_HOME/polyc``, else ``~/.cache/polyc``."""
    d = os.environ.get("POLYC_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "polyc")
    return d


def _cpu_model():
    global _CPU_MODEL
    if _CPU_MODEL is None:
        model = platform.machine()
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("model name") or line.startswith("flags"):
                        model += "|" + line.split(":", 1)[1].strip()
                        if line.startswith("flags"):
                            break
        except OSError:
            pass
        _CPU_MODEL = model
    return _CPU_MODEL


def _native_build():
    """The native module's version and file identity: a rebuilt polyc misses the cache."""
    path = _native.__file__
    st = os.stat(path)
    return "%s|%s|%d|%d" % (_native.version(), path, st.st_size, st.st_mtime_ns)


def key(source_text, options, spec_text):
    """The cache key (hex) of one compile."""
    parts = {
        "source": source_text,
        "options": options,
        "spec": spec_text,
        "native": _native_build(),
        "cc": os.environ.get("CC", ""),
        "cpu": _cpu_model() if options.get("target", "cpu") not in ("gpu", "a100", "h100") else "",
    }
    blob = json.dumps(parts, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def entry_dir(k):
    """The folder of the entry with key ``k``."""
    return os.path.join(cache_dir(), k[:2], k[2:])


def lookup(k):
    """The signature stored under ``k``, or ``None`` when there is no complete entry."""
    d = entry_dir(k)
    try:
        with open(os.path.join(d, "meta.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def new_entry():
    """A fresh temporary folder beside the entries, to fill and then :func:`publish`."""
    root = cache_dir()
    os.makedirs(root, exist_ok=True)
    return tempfile.mkdtemp(prefix="tmp-", dir=root)


def publish(tmp, k, meta):
    """Writes ``meta.json`` last and moves ``tmp`` to the entry of ``k``."""
    with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f)
    d = entry_dir(k)
    os.makedirs(os.path.dirname(d), exist_ok=True)
    try:
        os.rename(tmp, d)
    except OSError:
        # Another process published the same key first: keep theirs.
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return d


def source_file(text, suffix):
    """A file under the cache holding ``text`` (named by its hash), for programs and tile
    specs given as strings."""
    h = hashlib.sha256(text.encode("utf-8")).hexdigest()
    d = os.path.join(cache_dir(), "sources")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, h[:32] + suffix)
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=d)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return path
