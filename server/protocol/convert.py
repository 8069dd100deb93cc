"""Params from the wire into their classes, results and notifications onto it.

:func:`parse` structures a request's raw params into its class, so a malformed param is
refused in one place, with -32602 naming the field, instead of being checked by hand in
each handler; :func:`to_wire` is the way back (camelCase keys, optional fields at their
default left out).
"""

from __future__ import annotations

from types import UnionType
from typing import Any, TypeVar

import attrs
import cattrs
import cattrs.gen

from . import messages
from .messages import ParamsError, camel

_Params = TypeVar("_Params")


def _strict(kind: type | UnionType, name: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"must be {name}")
        if not isinstance(value, kind):
            raise TypeError(f"must be {name}")
        return value

    return hook


def _token(value: Any, _: Any) -> int | str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError("must be a string or an integer")
    return value


def _wire(name: str) -> str:
    return camel(name.removesuffix("_"))


def _make_converter() -> cattrs.Converter:
    # Our own converter (pygls keeps its own): strict primitives here would change how
    # pygls structures ordinary LSP messages. cattrs would otherwise turn 5 into "5".
    # Field names as lsprotocol's converter gives them (camelCase, a trailing _ dropped),
    # optional fields left out at their default.
    converter = cattrs.Converter()

    def overrides(cls: type) -> dict[str, Any]:
        return {
            a.name: cattrs.gen.override(rename=_wire(a.name), omit_if_default=True)
            for a in attrs.fields(cls)
        }

    converter.register_unstructure_hook_factory(
        attrs.has, lambda cls: cattrs.gen.make_dict_unstructure_fn(cls, converter, **overrides(cls))
    )
    converter.register_structure_hook_factory(
        attrs.has, lambda cls: cattrs.gen.make_dict_structure_fn(cls, converter, **overrides(cls))
    )
    for kind, name in ((str, "a string"), (int, "an integer"), (bool, "true or false")):
        converter.register_structure_hook(kind, _strict(kind, name))
    converter.register_structure_hook(float, _strict(int | float, "a number"))
    converter.register_structure_hook(int | str, _token)
    converter.register_structure_hook(
        int | str | None, lambda value, t: None if value is None else _token(value, t)
    )
    return converter


_converter = _make_converter()


def parse(raw: Any, cls: type[_Params]) -> _Params:
    """``raw`` params structured into ``cls``; :class:`ParamsError` names what is wrong."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParamsError("params", "must be an object")
    try:
        return _converter.structure(raw, cls)
    except ParamsError:
        raise
    except Exception as exc:  # cattrs wraps every failure; find the first leaf
        field, message = _first_problem(exc, [])
        raise ParamsError(field, message) from None


def to_wire(value: Any) -> Any:
    """A result or notification as plain JSON (camelCase keys)."""
    return _converter.unstructure(value)


def _first_problem(exc: BaseException, path: list[str]) -> tuple[str, str]:
    if isinstance(exc, cattrs.ClassValidationError | cattrs.IterableValidationError):
        for sub in exc.exceptions:
            step = path
            for note in getattr(sub, "__notes__", ()):
                if hasattr(note, "name"):  # an attribute of a class
                    step = [*path, camel(str(note.name))]
                    break
                if hasattr(note, "index"):  # an item of a list
                    step = [*path, f"[{note.index}]"]
                    break
            return _first_problem(sub, step)
    if isinstance(exc, ParamsError):  # raised by a validator, which knows its field
        return _join([*path, exc.field]), exc.message
    if isinstance(exc, KeyError):
        return _join(path), "is required"
    message = str(exc) if isinstance(exc, TypeError | ValueError) and str(exc) else "is invalid"
    if message.startswith(("must ", "is ")):
        return _join(path), message
    return _join(path), f"is invalid ({message})"


def _join(path: list[str]) -> str:
    return "".join(p if p.startswith("[") else f".{p}" for p in path).lstrip(".")


def warm() -> None:
    """Generate the (un)structuring code of every class now (cattrs compiles it on first
    use, a few milliseconds each), in the warm-up thread rather than in a first request."""
    for value in list(vars(messages).values()):
        if isinstance(value, type) and attrs.has(value):
            _converter.get_structure_hook(value)
            _converter.get_unstructure_hook(value)
