"""The public surface of `synix` as text, one line per name and member: what
tests/python_api/test_public_surface.py compares with its reviewed snapshot.

Lists `synix.__all__`, each function's signature, and for each class its bases, `__init__` and
every public method, classmethod, property and class attribute that Synix itself defines
(a subclass of `list` or `Exception` does not repeat what Python gives it), with overloads."""
from __future__ import annotations

import inspect
import typing
from typing import Any

OWN = ("synix", "synix_assets", "synix_resources")
# Dunders that are part of what a user calls (comparison, attribute figures); __repr__/__str__
# and what dataclasses generate are not signatures anyone codes against.
PROTOCOL = ("__init__", "__call__", "__getattr__", "__gt__", "__lt__", "__iter__", "__len__",
            "__getitem__", "__enter__", "__exit__")


def _annotation(a: Any) -> str:
    return a if isinstance(a, str) else inspect.formatannotation(a)


def signature(fn: Any) -> str:
    """`(a: int, /, *, b: str = 'x') -> bool`, annotations as written in the source."""
    sig = inspect.signature(fn)
    parts: list[str] = []
    previous = None
    for p in sig.parameters.values():
        if previous is p.POSITIONAL_ONLY and p.kind is not p.POSITIONAL_ONLY:
            parts.append("/")
        if p.kind is p.KEYWORD_ONLY and previous not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            parts.append("*")
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += (" = " if p.annotation is not p.empty else "=") + repr(p.default)
        parts.append(text)
        previous = p.kind
    if previous is inspect.Parameter.POSITIONAL_ONLY:
        parts.append("/")
    out = f"({', '.join(parts)})"
    if sig.return_annotation is not sig.empty:
        out += f" -> {_annotation(sig.return_annotation)}"
    return out


def _overloads(fn: Any) -> list[str]:
    return [f"@overload {signature(getattr(o, '__func__', o))}" for o in typing.get_overloads(fn)]


def _base(base: Any) -> str:
    args = typing.get_args(base)
    origin = typing.get_origin(base) or base
    return origin.__qualname__ + (f"[{', '.join(a.__qualname__ for a in args)}]" if args else "")


def _own(cls: type) -> bool:
    return cls.__module__.split(".")[0] in OWN


def _class_lines(name: str, cls: type) -> list[str]:
    bases = ", ".join(_base(b) for b in getattr(cls, "__orig_bases__", cls.__bases__))
    lines = [f"class {name}({bases})"]
    for attr in sorted(inspect.classify_class_attrs(cls), key=lambda a: (a.name != "__init__", a.name)):
        if not _own(attr.defining_class) or attr.defining_class is object:
            continue
        if attr.name.startswith("_") and attr.name not in PROTOCOL:
            continue
        where = f"{name}.{attr.name}"
        if attr.kind == "property":
            fget = attr.object.fget
            ret = inspect.signature(fget).return_annotation
            lines.append(f"  {where}: property -> {_annotation(ret) if ret is not inspect.Signature.empty else '?'}")
        elif attr.kind in ("method", "class method", "static method"):
            fn = getattr(cls, attr.name)
            kind = {"class method": "classmethod ", "static method": "staticmethod "}.get(attr.kind, "")
            lines.append(f"  {kind}{where}{signature(fn if attr.kind != 'method' else attr.object)}")
            lines.extend(f"    {o}" for o in _overloads(attr.object))
        else:
            lines.append(f"  {where} = {attr.object!r}")
    return lines


def surface() -> str:
    """The text of the snapshot: deterministic, independent of the folder and the process."""
    import synix

    lines = ["synix.__all__ = [" + ", ".join(sorted(synix.__all__)) + "]", ""]
    for name in sorted(synix.__all__):
        obj = getattr(synix, name)
        if inspect.isclass(obj):
            lines += _class_lines(name, obj)
        else:
            lines.append(f"def {name}{signature(obj)}")
            lines.extend(f"  {o}" for o in _overloads(obj))
        lines.append("")
    return "\n".join(lines)
