"""The sandboxed kernel's entry point (what `python -m ipykernel_launcher` does, with a lighter start).

ipykernel imports `jupyter_client` for its Session and connection-file helpers, and the package's
`__init__` also imports every client and manager class (asyncio clients, kernel managers, provisioners
and their entry points): about a sixth of a kernel start's CPU, for classes a kernel never uses. Here
`jupyter_client` is registered as a lazy package first: its submodules import as usual, and the names
ipykernel asks of the package itself come from the submodule that defines them; any other name loads
the whole package as before, so learner code sees the same `jupyter_client`.

ipykernel flushes stdout and stderr twice around every execute_request, and each flush from the main
thread is a round trip through its iopub thread (schedule the flush, schedule an event, wait for it),
whether or not anything was written: about 1 ms of a trivial cell's 3 ms of kernel CPU, and a grading
sends a dozen cells. `flush_if_buffered` returns at once when nothing is buffered and does the same
round trip otherwise. Nothing that was written is sent later than before: the stream buffers are the
only place written text waits (fd-level output reaches them through `write` too), they are read under
their own lock, and what the iopub thread has already taken from them goes out before the `idle` status
it sends after it, which is what the engine waits for.

ipykernel names every cell's code after a hash of its source, for its debugger: murmur2 written in pure
Python, about 0.3 us per byte, so the grader's 20 KB seed cell alone cost 4-7 ms and a light grading's
cells about 10 ms of kernel CPU. `crc32_cell_names` swaps in zlib's crc32 (C) for it: the same 32 bits,
the same strict UTF-8 encoding (a cell it refused it still refuses), the same file names shape, so
tracebacks and linecache work as before. Only a debugger client recomputing murmur2 would disagree, and
the sandbox has no debugger (debugpy is hidden from it, bwrap.py).

Stdlib only; bound read-only at /opt/titangrade/kernel_boot.py and run as the sandbox user (see bwrap.py).
"""

import importlib
import importlib.util
import os
import sys
import zlib

LIGHT_NAMES = {"BlockingKernelClient": "jupyter_client.blocking"}  # ConnectionFileMixin's blocking_class default


def lazy_jupyter_client() -> None:
    spec = importlib.util.find_spec("jupyter_client")
    if spec is None or spec.loader is None or "jupyter_client" in sys.modules:
        return
    loader = spec.loader
    package = importlib.util.module_from_spec(spec)
    whole: list[bool] = []

    def __getattr__(name: str):
        if not whole and not (name.startswith("__") and name != "__version__"):
            version = importlib.import_module("jupyter_client._version")
            if hasattr(version, name):
                return getattr(version, name)
            connect = importlib.import_module("jupyter_client.connect")
            if name in connect.__all__:
                return getattr(connect, name)
            if name in LIGHT_NAMES:
                return getattr(importlib.import_module(LIGHT_NAMES[name]), name)
            whole.append(True)
            loader.exec_module(package)  # anything else: the package as `import jupyter_client` makes it
            return getattr(package, name)
        raise AttributeError(f"module 'jupyter_client' has no attribute {name!r}")

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules["jupyter_client"] = package


def quiet_empty_flushes() -> None:
    from ipykernel import iostream

    stream = iostream.OutStream
    plain = stream.flush

    def flush_if_buffered(self) -> None:
        lock, buffers = getattr(self, "_buffer_lock", None), getattr(self, "_buffers", None)
        if lock is not None and isinstance(buffers, dict) and getattr(self, "echo", None) is None:
            with lock:  # buffers unknown to us (another ipykernel): its own flush, as before
                if not any(buffer.tell() for buffer in self._buffers.values()):
                    return
        plain(self)

    stream.flush = flush_if_buffered  # type: ignore[method-assign]


def crc32_cell_names() -> None:
    from ipykernel import compiler

    def crc32_x86(data: str, seed: int) -> int:
        return zlib.crc32(data.encode("utf8"), seed) & 0xFFFFFFFF

    compiler.murmur2_x86 = crc32_x86  # read by compiler.get_file_name at each call


if __name__ == "__main__":
    if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # this file's directory; IPython puts the working directory first (as ipykernel_launcher)
    lazy_jupyter_client()
    quiet_empty_flushes()
    crc32_cell_names()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
