"""Code that runs INSIDE the learner's kernel, shipped as source text in the grader's seed cell.

It must stay self-contained (stdlib only; numpy/torch imported lazily) because the kernel cannot
import `grading`. `install()` seeds the RNGs and returns the extractor closure; the closure captures
the builtins and the display publisher at seed time, before any learner code could replace them.
Nothing here ever sees an expected value: it encodes answers and calls functions on given inputs.
"""

# ruff: noqa
import builtins as _b


def _sendable_errors():
    """A learner exception whose text holds a lone surrogate could not be sent: ipykernel failed to encode
    its error reply and reported that UnicodeEncodeError instead. Each one becomes U+FFFD (in the
    exception's args, so the reply's evalue is the learner's own words) before the traceback is sent."""
    import re

    shell = _b.getattr(_b, "get_ipython", lambda: None)()
    if shell is None or not _b.hasattr(shell, "_showtraceback"):
        return
    shown = shell._showtraceback
    lone = re.compile("[\ud800-\udfff]")

    def fix(text):
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")

    def showtraceback(etype, evalue, stb):
        try:
            if lone.search(_b.str(evalue)):
                evalue.args = _b.tuple(fix(a) if _b.isinstance(a, _b.str) else a for a in evalue.args)
            stb = [fix(line) if lone.search(line) else line for line in stb]
        except Exception:  # an exception whose str() or args misbehave is shown as IPython would
            pass
        return shown(etype, evalue, stb)

    shell._showtraceback = showtraceback


def install(seed, eager_torch, max_bytes=16 * 1024 * 1024):
    """Seed random/numpy/torch and return `extract(nonce, answers, calls)`; run before learner code."""
    import json
    import math
    import os
    import random
    import signal
    import sys
    import time

    from IPython.display import publish_display_data

    _isinstance, _len, _repr, _type, _getattr, _hasattr = (
        _b.isinstance,
        _b.len,
        _b.repr,
        _b.type,
        _b.getattr,
        _b.hasattr,
    )
    _list, _dict, _str, _float, _int, _sorted, _open = _b.list, _b.dict, _b.str, _b.float, _b.int, _b.sorted, _b.open
    _dumps, _loads = json.dumps, json.loads
    _isfinite = math.isfinite
    _signal, _setitimer, _SIGALRM, _ITIMER_REAL = signal.signal, signal.setitimer, signal.SIGALRM, signal.ITIMER_REAL
    _main = sys.modules["__main__"]
    _monotonic = time.monotonic
    mime = "application/vnd.titangrade.answers+json"

    random.seed(seed)

    def _seed_numpy(numpy):
        numpy.random.seed(seed)

    def _seed_torch(torch):
        torch.manual_seed(seed)

    # Each library is seeded before the learner can draw from it: now if already imported (a pre-warmed
    # kernel) or eager (torch families), else the moment it is first imported. Light kernels never pay
    # for an import their notebook does not make (numpy ~0.15 s, torch ~1 s of every grade).
    seeders = {"numpy": _seed_numpy, "torch": _seed_torch}
    for name in list(seeders):
        if name in sys.modules or eager_torch:
            seed_now = seeders.pop(name)
            try:
                seed_now(__import__(name))
            except ImportError:
                pass
    if seeders:
        import importlib.abc
        import importlib.machinery

        class _SeedOnImport(importlib.abc.MetaPathFinder):
            def find_spec(self, fullname, path, target=None):
                if fullname not in seeders:
                    return None
                seed_module = seeders.pop(fullname)
                if not seeders:
                    sys.meta_path.remove(self)
                spec = importlib.machinery.PathFinder.find_spec(fullname, path)
                if spec is None or spec.loader is None:
                    return spec
                loader_exec = spec.loader.exec_module

                def exec_module(module):
                    loader_exec(module)
                    seed_module(module)

                spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # this loader instance only
                return spec

        sys.meta_path.insert(0, _SeedOnImport())

    _sendable_errors()

    budget = [max_bytes]  # the whole run's answers; the grader enforces the same cap on what it decodes

    overflow = [False]

    def too_large(v):
        overflow[0] = True
        return {"__too_large__": {"type": _type(v).__name__}}

    def charge(nbytes):
        if nbytes > budget[0]:
            return False
        budget[0] -= nbytes
        return True

    def whole(thunk):
        """One answer or call result, all or nothing: if any part of it is too large, none of it is kept
        and it costs nothing (the grader decodes it the same way)."""
        before, overflow[0] = budget[0], False
        value = thunk()
        if overflow[0]:
            budget[0] = before
            return {"__too_large__": {"type": "value"}}
        return value

    def encode(v, depth=0, free=False):
        """A codec value; every mapping travels as __dict__ pairs so learner keys never look like markers."""
        if depth > 64:
            return {"__repr__": "<nested too deeply>", "__type__": _type(v).__name__}
        if v is None or _isinstance(v, (_b.bool, _int, _float, _str)):
            if not free and not charge(16 + (_len(v) if _isinstance(v, _str) else 0)):
                return too_large(v)
            if _isinstance(v, _float) and not _isfinite(v):
                return {"__float__": "nan" if v != v else ("inf" if v > 0 else "-inf")}
            return v
        if _isinstance(v, (_list, _b.tuple)):
            if not free and not charge(16 + 8 * _len(v)):
                return too_large(v)
            return [encode(x, depth + 1, free) for x in v]
        if _isinstance(v, _dict):
            if not charge(16 + 16 * _len(v)):
                return too_large(v)
            return {"__dict__": [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in _list(v.items())]}
        if _isinstance(v, (_b.set, _b.frozenset)):
            if not charge(16 + 8 * _len(v)):
                return too_large(v)
            items = [encode(x, depth + 1) for x in v]
            return {"__set__": _sorted(items, key=lambda x: _dumps(x, sort_keys=True))}
        mod = _getattr(_type(v), "__module__", "") or ""
        if mod.startswith("torch") and _hasattr(v, "detach"):
            t = v
            if _hasattr(t, "full_tensor"):  # DTensor: materialize the global value
                t = t.full_tensor()
            t = t.detach().cpu()
            dtype = _str(t.dtype).replace("torch.", "")
            if dtype in ("bfloat16", "float16"):
                t = t.float()
            return _tensor(v, dtype, _list(t.shape), t.numel(), t.tolist, depth)
        if mod.startswith("numpy"):
            if _hasattr(v, "shape") and _hasattr(v, "tolist") and _type(v).__name__ == "ndarray":
                return _tensor(v, _str(v.dtype), _list(v.shape), v.size, v.tolist, depth)
            if _hasattr(v, "item"):
                return encode(v.item(), depth + 1)
        try:
            text = _repr(v)[:2000]
        except Exception:  # not BaseException: the read alarm must still interrupt a looping __repr__
            text = "<repr failed>"
        return {"__repr__": text, "__type__": f"{mod}.{_type(v).__qualname__}"[:200]}

    def _tensor(v, dtype, shape, numel, tolist, depth):
        if not charge(16 + 8 * numel):
            return too_large(v)
        return {"__tensor__": {"dtype": dtype, "shape": shape, "data": encode(tolist(), depth + 1, True)}}

    def decode(v):
        if _isinstance(v, _list):
            return [decode(x) for x in v]
        if not _isinstance(v, _dict):
            return v
        if "__float__" in v:
            return _float(v["__float__"])
        if "__set__" in v:
            return {decode(x) for x in v["__set__"]}
        if "__dict__" in v:
            return {decode(k): decode(x) for k, x in v["__dict__"]}
        if "__tuple__" in v:
            return _b.tuple(decode(x) for x in v["__tuple__"])
        if "__tensor__" in v:
            spec = v["__tensor__"]
            data = decode(spec["data"])
            try:
                import torch

                return torch.tensor(data, dtype=_getattr(torch, spec["dtype"])).reshape(spec["shape"])
            except ImportError:
                import numpy

                return numpy.array(data, dtype=spec["dtype"]).reshape(spec["shape"])
        return {k: decode(x) for k, x in v.items()}

    def raised(exc):
        bases = [c.__name__ for c in _type(exc).__mro__[1:] if c.__name__ not in ("object", "BaseException")]
        return {"__raised__": {"type": _type(exc).__name__, "message": _str(exc)[:500], "bases": bases}}

    class _CallTimeout(BaseException):
        pass

    def _alarm(signum, frame):
        raise _CallTimeout()

    def guarded(thunk, timeout_s):
        """thunk() encoded, with a wall-clock alarm: one slow call or __repr__ costs only itself."""
        old = _signal(_SIGALRM, _alarm)
        _setitimer(_ITIMER_REAL, timeout_s)
        try:
            return thunk()
        except _CallTimeout:
            return {"__raised__": {"type": "__timeout__", "message": f"exceeded {timeout_s} s"}}
        except BaseException as exc:  # learner code may raise anything, SystemExit included
            return raised(exc)
        finally:
            _setitimer(_ITIMER_REAL, 0)
            _signal(_SIGALRM, old)

    def call_guarded(fn, args, kwargs, timeout_s):
        return guarded(lambda: whole(lambda: encode(fn(*decode(args), **decode(kwargs)))), timeout_s)

    def read_run(value):
        """A training_run answer: the run directory (or the dict holding `out_dir`) -> metrics/run/files."""
        if _isinstance(value, _dict):
            value = value.get("out_dir")
        if value is None:
            return {"__missing__": True}
        root = os.fspath(value)
        if not os.path.isdir(root):
            return {"__raised__": {"type": "FileNotFoundError", "message": f"run directory {root} not found"}}
        metrics, run, files = [], {}, []
        path = os.path.join(root, "metrics.jsonl")
        if os.path.exists(path):
            with _open(path, encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if line:
                        try:
                            metrics.append(_loads(line))
                        except ValueError:
                            metrics.append({"__unparsable__": line[:200]})
        path = os.path.join(root, "run.json")
        if os.path.exists(path):
            with _open(path, encoding="utf-8") as fh:
                try:
                    run = _loads(fh.read())
                except ValueError:
                    run = {"__unparsable__": True}
        for dirpath, dirnames, filenames in os.walk(root):
            rel = os.path.relpath(dirpath, root)
            for name in dirnames + filenames:
                files.append(name if rel == "." else os.path.join(rel, name))
            if _len(files) > 2000:
                break
        return encode({"metrics": metrics, "run": run, "files": _sorted(files)[:2000]})

    def publish(payload):
        text = _dumps(payload, allow_nan=False, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # a lone surrogate (in a repr, a message, a key) made ipykernel's send fail, and the grader waited
            # out the call's clock for a result that never came: each one becomes U+FFFD
            text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        publish_display_data({mime: _loads(text)})

    def each_call(nonce, check, fn, specs, timeout_s):
        """One payload per call, published as it ends: the grader's clock restarts for the next call on its
        arrival. A call the grader interrupted (or that outlived its time) ends the cell; the grader
        re-runs the calls after it in a new cell."""
        for c in specs:
            started = _monotonic()
            result = call_guarded(fn, c.get("args", []), c.get("kwargs", {}), timeout_s)
            kind = (result.get("__raised__") or {}).get("type") if _isinstance(result, _dict) else None
            if kind == "KeyboardInterrupt" or _monotonic() - started > timeout_s + 1.0:
                raise KeyboardInterrupt("the grader interrupted this call")
            publish({"nonce": nonce, "answers": {}, "calls": {check: [result]}})

    def extract(nonce, answers, calls, call_timeout_s=10.0, each=False):
        """answers: {name: kind}; calls: {check: {"answer": name, "calls": [{"args", "kwargs"}], "timeout_s"}};
        `each`: only calls, every result published on its own (each_call), in order: for a check whose
        function is missing one marker per call, for a check without calls one empty result, so the
        grader can tell which result belongs to which call by counting."""
        g = _main.__dict__
        out_answers: dict[str, object] = {}  # local annotations are never evaluated in the kernel
        out_calls: dict[str, object] = {}
        for name, kind in answers.items():
            if name not in g:
                out_answers[name] = {"__missing__": True}
                continue
            value = g[name]
            if kind == "training_run":
                out_answers[name] = guarded(lambda: whole(lambda: read_run(value)), call_timeout_s)
            elif kind == "function":
                out_answers[name] = {"__repr__": "<function>", "__type__": _type(value).__name__}
            else:
                out_answers[name] = guarded(lambda: whole(lambda: encode(value)), call_timeout_s)
        if each:
            for check, spec in calls.items():
                fn, specs = g.get(spec["answer"]), spec["calls"]
                if fn is None or not _b.callable(fn):
                    for _ in specs or [None]:
                        publish({"nonce": nonce, "answers": {}, "calls": {check: {"__missing__": True}}})
                elif specs:
                    each_call(nonce, check, fn, specs, spec.get("timeout_s", call_timeout_s))
                else:
                    publish({"nonce": nonce, "answers": {}, "calls": {check: []}})
            return
        for check, spec in calls.items():
            fn = g.get(spec["answer"])
            if fn is None or not _b.callable(fn):
                out_calls[check] = {"__missing__": True}
                continue
            out_calls[check] = [
                call_guarded(fn, c.get("args", []), c.get("kwargs", {}), call_timeout_s) for c in spec["calls"]
            ]
        publish({"nonce": nonce, "answers": out_answers, "calls": out_calls})

    return extract
