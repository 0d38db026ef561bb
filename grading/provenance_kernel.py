"""Code that runs INSIDE the learner's kernel (shipped as source in the seed cell, like kernel_side.py):
where each graded callable's code comes from and which modules it reaches.

`install()` runs before any learner cell and captures what it needs; the returned `report(nonce, names,
timeout_s)` publishes, for each name, {"kind", "module", "file", "refs"}: `refs` are
["module:qualname" or module name, code file] pairs for what the function's code (and, transitively, the learner's own
helpers, closures and default values it holds) references through globals and attribute chains.
The grader (grading/provenance.py) judges it. Learner code shares this process and could tamper with
it; this is the second layer, the sandbox view (grading/sandbox/views.py) is the first.
"""
# ruff: noqa


def install():
    import builtins as _b
    import dis
    import json
    import signal
    import sys
    import types

    from IPython.display import publish_display_data

    _isinstance, _getattr, _type, _len, _str = _b.isinstance, _b.getattr, _b.type, _b.len, _b.str
    _FunctionType, _ModuleType, _CodeType = types.FunctionType, types.ModuleType, types.CodeType
    _get_instructions = dis.get_instructions
    _dumps, _loads = json.dumps, json.loads
    _main = sys.modules["__main__"]
    _main_dict = _main.__dict__
    _signal, _setitimer = signal.signal, signal.setitimer
    mime = "application/vnd.titangrade.answers+json"
    MAX_REFS, MAX_FUNCS = 400, 200

    def describe(v):
        """(module name, qualname) of an object that has code elsewhere, or None."""
        if _isinstance(v, _ModuleType):
            return (_str(_getattr(v, "__name__", "?")), "")
        if _isinstance(v, (_FunctionType, _b.type, types.BuiltinFunctionType, types.MethodType)):
            mod = _getattr(v, "__module__", None)
            return (_str(mod) if mod is not None else "?", _str(_getattr(v, "__qualname__", "?")))
        return None

    def codes(code):
        stack: list[types.CodeType] = [code]  # local annotations are never evaluated in the kernel
        out: list[types.CodeType] = []
        while stack and _len(out) < MAX_FUNCS:
            c = stack.pop()
            out.append(c)
            stack.extend(k for k in c.co_consts if _isinstance(k, _CodeType))
        return out

    def walk(fn, refs, seen, pending):
        for code in codes(fn.__code__):
            chain = None  # (object, dotted) while following LOAD_GLOBAL/LOAD_ATTR on modules
            for ins in _get_instructions(code):
                op = ins.opname
                if op in ("LOAD_GLOBAL", "LOAD_NAME"):
                    name = ins.argval
                    if name in fn.__globals__:
                        obj = fn.__globals__[name]
                    else:
                        obj = _getattr(_b, name, None)
                        if obj is not None:
                            chain = None
                            continue
                    chain = obj
                    note(obj, refs, pending)
                elif op in ("LOAD_ATTR", "LOAD_METHOD") and _isinstance(chain, _ModuleType):
                    obj = chain.__dict__.get(ins.argval)
                    chain = obj
                    if obj is not None:
                        note(obj, refs, pending)
                else:
                    chain = None
        for cell in fn.__closure__ or ():
            try:
                note(cell.cell_contents, refs, pending)
            except ValueError:
                pass
        for v in (fn.__defaults__ or ()) + _b.tuple((fn.__kwdefaults__ or {}).values()):
            note(v, refs, pending)

    def note(obj, refs, pending, depth=0):
        if _len(refs) >= MAX_REFS or depth > 3:
            return
        if _isinstance(obj, _FunctionType) and obj.__globals__ is _main_dict:
            pending.append(obj)  # the learner's own helper: look inside it
            return
        d = describe(obj)
        if d is not None:
            code = _getattr(obj, "__code__", None)
            file = (
                _getattr(code, "co_filename", None) if _isinstance(code, _CodeType) else _getattr(obj, "__file__", None)
            )
            refs.add((d[0] + (":" + d[1] if d[1] else ""), _str(file)[:300] if _isinstance(file, _str) else ""))
        elif _type(obj) in (_b.list, _b.tuple):
            for x in obj[:50]:
                note(x, refs, pending, depth + 1)
        elif _type(obj) is _b.dict:
            for x in _b.list(obj.values())[:50]:
                note(x, refs, pending, depth + 1)
        elif _type(obj).__module__ not in ("builtins", "__main__"):  # a bound method's owner, partials...
            for attr in ("func", "__func__", "__self__"):
                inner = _getattr(obj, attr, None) if _isinstance(obj, (types.MethodType,)) or attr == "func" else None
                if inner is not None and inner is not obj:
                    note(inner, refs, pending, depth + 1)

    def origin(value):
        fn, hops = value, 0
        while not _isinstance(fn, _FunctionType) and hops < 5 and _getattr(fn, "__wrapped__", None) is not None:
            fn, hops = fn.__wrapped__, hops + 1
        if not _isinstance(fn, _FunctionType):
            d = describe(value) or ("?", _type(value).__qualname__)
            return {"kind": "not_function", "module": d[0], "qualname": d[1], "file": "", "refs": []}
        refs: set[tuple[str, str]] = set()
        seen: set[int] = set()
        pending = [fn]
        while pending and _len(seen) < MAX_FUNCS:
            f = pending.pop()
            if _b.id(f) in seen:
                continue
            seen.add(_b.id(f))
            walk(f, refs, seen, pending)
        return {
            "kind": "function",
            "module": _str(_getattr(fn, "__module__", "?")),
            "qualname": _str(fn.__qualname__),
            "file": _str(fn.__code__.co_filename)[:300],
            "in_main": fn.__globals__ is _main_dict,
            "refs": [_b.list(r) for r in _b.sorted(refs)[:MAX_REFS]],
        }

    def report(nonce, names, timeout_s=10.0):
        out = {}
        old = _signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError()))
        _setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            for name in names:
                if name not in _main_dict:
                    out[name] = {"kind": "missing"}
                    continue
                try:
                    out[name] = origin(_main_dict[name])
                except BaseException as exc:  # hostile objects may raise anything while inspected
                    out[name] = {"kind": "uninspectable", "error": _type(exc).__name__}
        finally:
            _setitimer(signal.ITIMER_REAL, 0)
            _signal(signal.SIGALRM, old)
        publish_display_data({mime: _loads(_dumps({"nonce": nonce, "provenance": out}))})

    return report
