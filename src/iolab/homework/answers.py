"""What crosses from a submission's kernel to the checker: the answers, as data, never as objects or code.

A check cell reads a few names (``reader_state``, ``default_ratio``): the answers. The grader asks
the submission's kernel to write those names to a file in this module's JSON form, and the checker,
a separate process that never runs a line of the student's code, reads them back. Only data
survives the trip: ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes``, lists, tuples, sets and
dicts of them, NumPy scalars and arrays (as Python numbers and lists), pandas Series and
DataFrames, classes that the checker can name (``TimeoutError``, ``trio.TooSlowError``), and the
kit's own dataclasses (what ``run_load`` returns), rebuilt field by field without running any
``__init__``. Exact types only: a ``str`` subclass whose ``__eq__`` always says yes, the oldest
trick against ``assert answer == key``, is refused, as is any other object.

Whatever the kernel writes, the checker decodes it with :func:`decode`, which builds nothing but
those values; a kernel that writes something else, or nothing, has handed in no answer. A kernel can
write any text there (it runs the student's code), so :func:`load` and :func:`decode` are total: for
any input they return answers or raise :class:`NotData`, never another error, and what they build
is no bigger than the text (no pandas broadcasting a scalar to a frame of a billion cells).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# A bound on what one submission may hand over: answers are a few numbers and words.
MAX_BYTES = 1_000_000
MAX_DEPTH = 20
MISSING = {"$missing": True}
KIT_PREFIX = "iolab."
# What the grader hands the checker in place of an answers file it would not read (a FIFO, a link).
UNREADABLE = "$unreadable"


class NotData(TypeError):
    """An answer that is not plain data; the message names it in the student's terms."""


class Malformed(NotData):
    """Data that :func:`encode` never writes, whatever the student's values: only a changed kernel writes it."""


def _class_name(cls: type) -> str:
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready data with tags for what JSON lacks; :class:`NotData` for anything else."""
    if depth > MAX_DEPTH:
        raise NotData("nested too deeply")
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if kind is bytes:
        return {"$bytes": value.hex()}
    if kind in (list, tuple, set, frozenset):
        items = [encode(v, depth + 1) for v in value]
        return items if kind is list else {f"${kind.__name__}": items}
    if kind is dict:
        return {"$dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic) and kind.__module__ == "numpy":
        return encode(value.item(), depth + 1)
    if numpy is not None and kind is numpy.ndarray:
        return encode(value.tolist(), depth + 1)
    if isinstance(value, type) and kind is type:
        return {"$class": _class_name(value)}
    pandas = sys.modules.get("pandas")
    if pandas is not None and kind is pandas.Series:
        return {"$series": [encode(value.name, depth + 1), encode(value.index.tolist(), depth + 1),
                            encode(value.tolist(), depth + 1)]}
    if pandas is not None and kind is pandas.DataFrame:
        return {"$frame": [encode(value.columns.tolist(), depth + 1), encode(value.index.tolist(), depth + 1),
                           encode(value.values.tolist(), depth + 1)]}
    if dataclasses.is_dataclass(value) and kind.__module__.startswith(KIT_PREFIX):
        return {"$dataclass": [_class_name(kind), {f.name: encode(getattr(value, f.name), depth + 1)
                                                   for f in dataclasses.fields(value)}]}
    raise NotData(f"a {kind.__module__}.{kind.__qualname__}, not plain data (a number, string, list, dict, class...)")


def _rebuild(name: str, values: dict[str, Any]) -> Any:
    """An instance of the kit's dataclass ``name`` with these field values, made without calling its code."""
    cls = _lookup_class(name)
    if not (dataclasses.is_dataclass(cls) and cls.__module__.startswith(KIT_PREFIX)):
        raise NotData(f"{name[:80]} is not one of the kit's dataclasses")
    if set(values) != {f.name for f in dataclasses.fields(cls)}:
        raise NotData(f"not the fields of {name[:80]}")
    return _made("dataclass", lambda: _filled(object.__new__(cls), values))


def _filled(instance: Any, values: dict[str, Any]) -> Any:
    for key, value in values.items():
        object.__setattr__(instance, key, value)  # frozen dataclasses too
    return instance


def _lookup_class(name: str) -> type:
    """The class called ``name`` among builtins and the modules the checker has imported; never imports.

    It looks in the module's own namespace, not through ``getattr``: a module's ``__getattr__`` (a
    lazy export table) would import.
    """
    module_name, _, attr = name.rpartition(".")
    module = sys.modules.get(module_name or "builtins")
    found = vars(module).get(attr) if isinstance(module, types.ModuleType) else None
    if not isinstance(found, type):
        raise NotData(f"the class {name[:80]} is not one the checker knows")
    return found


def _made(what: str, make: Callable[[], Any]) -> Any:
    """``make()``, or :class:`NotData` naming ``what``: a constructor that refuses the data refuses the answer."""
    try:
        return make()
    except NotData:
        raise
    except Exception as exc:  # pandas alone raises a dozen kinds; any of them means "not a <what>"
        raise NotData(f"not a {what}: {type(exc).__name__}: {str(exc)[:80]}") from None


def _keys(values: Iterable[Any], what: str) -> list[Any]:
    """``values`` as a list, each checked to be hashable, as ``what`` (a dict's key, a set's member) was."""
    checked = list(values)
    for value in checked:
        try:
            hash(value)
        except Exception:  # TypeError, or a kit dataclass's own hash refusing its fields
            raise Malformed(f"a {type(value).__name__} cannot be {what}") from None
    return checked


def _table(tag: str, first: Any, index: Any, values: Any) -> Any:
    """The Series or DataFrame :func:`encode` tagged ``tag``, of exactly the shape its values have.

    A series has a value per index label; a frame a row per index label and a value per column in each
    row. pandas would broadcast anything else to fit the labels: a few kB of labels and one number
    would make a frame of millions of cells.
    """
    import pandas

    if type(index) is not list or type(values) is not list or len(values) != len(index):
        raise Malformed(f"not a {tag[1:]}: its values are not a list as long as its index")
    if tag == "$series":
        return _made("series", lambda: pandas.Series(values, index=index, name=first,
                                                     dtype=None if values else object))
    if type(first) is not list or not all(type(row) is list and len(row) == len(first) for row in values):
        raise Malformed("not a frame: its rows are not lists as long as its columns")
    return _made("frame", lambda: pandas.DataFrame(values, index=index, columns=first))


def _shown(data: Any) -> str:
    """``data`` in a few words for a message, without calling anything of its own."""
    if type(data) is dict:
        return f"a dict with the keys {sorted(k[:20] for k in data if type(k) is str)[:3]}"
    return f"a {type(data).__name__}"


def decode(data: Any, depth: int = 0) -> Any:
    """The value :func:`encode` made ``data`` from; :class:`NotData`, and no other error, for anything else.

    :class:`Malformed` (a :class:`NotData`) for data :func:`encode` never writes; plain :class:`NotData`
    for a value the checker cannot take (a class it has not imported, a frame pandas will not rebuild).
    """
    if depth > MAX_DEPTH:
        raise Malformed("nested too deeply")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(v, depth + 1) for v in data]
    if type(data) is dict and len(data) == 1:
        (tag, inner), = data.items()
        if tag == "$float" and type(inner) is str and inner in ("nan", "inf", "-inf"):
            return float(inner)
        if tag == "$bytes" and type(inner) is str:
            try:
                return bytes.fromhex(inner)
            except ValueError:
                raise Malformed("not bytes: not hexadecimal") from None
        if tag == "$tuple" and type(inner) is list:
            return tuple(decode(v, depth + 1) for v in inner)
        if tag in ("$set", "$frozenset") and type(inner) is list:
            members = _keys((decode(v, depth + 1) for v in inner), f"a {tag[1:]}'s member")
            return set(members) if tag == "$set" else frozenset(members)
        if tag == "$dict" and type(inner) is list and all(type(p) is list and len(p) == 2 for p in inner):
            keys = _keys((decode(k, depth + 1) for k, _ in inner), "a dict's key")
            return dict(zip(keys, (decode(v, depth + 1) for _, v in inner)))
        if tag == "$class" and type(inner) is str:
            return _lookup_class(inner)
        if tag in ("$series", "$frame") and type(inner) is list and len(inner) == 3:
            return _table(tag, *(decode(v, depth + 1) for v in inner))  # name or columns, index, values
        if tag == "$dataclass" and type(inner) is list and len(inner) == 2 and type(inner[0]) is str \
                and type(inner[1]) is dict:
            return _rebuild(inner[0], {k: decode(v, depth + 1) for k, v in inner[1].items()})
    raise Malformed(f"not an answer: {_shown(data)}")


def dump(names: Iterable[str], namespace: Mapping[str, Any], path: str) -> None:
    """Write the answers ``names`` from ``namespace`` to ``path``: each encoded, missing or refused with why."""
    out: dict[str, Any] = {}
    for name in names:
        if name not in namespace:
            out[name] = MISSING
            continue
        try:
            out[name] = {"$value": encode(namespace[name])}
        except NotData as exc:
            out[name] = {"$refused": str(exc)}
        except Exception as exc:  # an answer whose conversion itself raises
            out[name] = {"$refused": f"{type(exc).__name__} while reading it"}
    with open(path, "w") as f:
        json.dump(out, f)


def unreadable(why: str) -> str:
    """What the grader hands the checker for an answers file it would not read (``why``): :func:`load` refuses it."""
    return json.dumps({UNREADABLE: why})


def load(text: str) -> dict[str, dict[str, Any]]:
    """The answers in a file :func:`dump` wrote: name -> ``{"value": v}``, ``{"missing": True}`` or ``{"refused": why}``.

    :class:`NotData` if the file is not such a file at all (too big, not JSON, not of that shape, an
    answer that :func:`encode` never writes: only a changed kernel writes those), and no other error,
    whatever ``text`` is.
    """
    if type(text) is not str:
        raise NotData(f"the answers are not text but a {type(text).__name__}")
    if len(text) > MAX_BYTES:
        raise NotData(f"the answers take over {MAX_BYTES:,} bytes")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        raise NotData("the answers file is not JSON (or is nested too deeply)") from None
    if type(raw) is dict and type(raw.get(UNREADABLE)) is str:
        raise NotData(f"the answers file {raw[UNREADABLE][:200]}")
    if type(raw) is not dict or not all(type(k) is str and type(v) is dict and len(v) == 1 for k, v in raw.items()):
        raise NotData("the answers file has not the grader's shape")
    answers: dict[str, dict[str, Any]] = {}
    for name, entry in raw.items():
        (tag, inner), = entry.items()
        if tag == "$value":
            try:
                answers[name] = {"value": decode(inner)}
            except Malformed as exc:  # not refused: the whole file is not the grader's cell's
                raise NotData(f"`{name[:40]}` is not what the grader's cell writes: {exc}") from None
            except NotData as exc:
                answers[name] = {"refused": str(exc)}
        elif tag == "$missing":
            answers[name] = {"missing": True}
        elif tag == "$refused" and type(inner) is str:
            answers[name] = {"refused": inner[:200]}
        else:
            raise NotData("the answers file has not the grader's shape")
    return answers


def export_cell(names: Iterable[str], path: str) -> str:
    """The code the grader runs in the submission's kernel in place of a check cell: it writes the answers."""
    return (f"import iolab.homework.answers as _iolab_answers\n"
            f"_iolab_answers.dump({sorted(names)!r}, globals(), {path!r})\n"
            f"del _iolab_answers")


# Tags whose contents are measurements or whole results (tables, arrays' numbers, the kit's dataclasses):
# left out of :func:`chosen`, since an honest run measures them anew each time.
_MEASURED_TAGS = ("$frame", "$series", "$dataclass", "$float", "$bytes")


def chosen(texts: Iterable[str | None]) -> str:
    """A digest of the words, truth values and whole numbers in these answers files, tables and kit results
    left out: what a student chose rather than measured, the same in every grading of an honest notebook.

    A rerun counts only where it is the same (``reruns``): a notebook that draws its predictions at
    random must not gain a second draw. Any text is accepted; text that is not JSON is digested whole.
    """
    leaves: list[Any] = []
    for text in texts:
        try:
            stack = [json.loads(text)] if text is not None else []
        except (ValueError, RecursionError):
            leaves.append(text)
            continue
        while stack:  # by hand, not recursively: a forged file can nest a thousand deep
            item = stack.pop()
            if type(item) in (bool, int, str):
                leaves.append(item)
            elif type(item) is list:
                stack.extend(reversed(item))
            elif type(item) is dict:
                stack.extend(v for k, v in reversed(item.items()) if k not in _MEASURED_TAGS)
    return hashlib.sha256(json.dumps(leaves).encode()).hexdigest()[:16]
