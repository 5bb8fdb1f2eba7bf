"""``record``: the part of :func:`dataclasses.dataclass` the patch engine's classes use.

``dryboot series apply`` competes with a loop of GNU patch, and importing :mod:`dataclasses`
(which imports :mod:`inspect`, and with it ``ast``, ``dis``, ``tokenize``...) and processing a
score of classes with it cost a tenth of a small stack's whole run. ``record`` gives the same
``__init__`` (fields in annotation order, defaults, ``field(default_factory=...)``), ``__repr__``
and ``__eq__`` (``field(repr=False, compare=False)`` honoured); ``frozen=True`` makes instances
read-only and hashable. Slotted classes declare their ``__slots__`` themselves. No inheritance
between records, no ``dataclasses.fields``/``replace``/``asdict``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (start-up time)
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> object:
        return lambda f: f


_MISSING = object()


class _Field:
    __slots__ = ("compare", "default", "default_factory", "repr")

    def __init__(self, default: object, default_factory: object, repr: bool, compare: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, repr: bool = True, compare: bool = True) -> Any:
    """A field's options, as :func:`dataclasses.field`."""
    return _Field(default, default_factory, repr, compare)


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = False) -> Any:
    """Class decorator: see the module docstring."""

    def wrap(c: type[T]) -> type[T]:
        built: type[T] = _build(c, frozen)
        return built

    return wrap if cls is None else wrap(cls)


def _build(cls: Any, frozen: bool) -> Any:
    names = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063 (inspect is what we avoid)
    defaults: dict[str, tuple[bool, Any]] = {}  # name -> (is a factory, default or factory)
    shown, compared = [], []
    for name in names:
        spec = cls.__dict__.get(name, _MISSING)
        f = spec if isinstance(spec, _Field) else _Field(spec, _MISSING, True, True)
        if f.default_factory is not _MISSING:
            defaults[name] = (True, f.default_factory)
        elif f.default is not _MISSING:
            defaults[name] = (False, f.default)
        if isinstance(spec, _Field):  # as dataclasses: the class keeps a plain default only
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        if f.repr:
            shown.append(name)
        if f.compare:
            compared.append(name)
    n = len(names)
    known = frozenset(names)
    slotted = "__slots__" in cls.__dict__
    put = object.__setattr__
    qualname = cls.__qualname__

    # One generic __init__ (no code generated and compiled per class, as dataclasses does: that
    # compiling was most of these classes' import time): positional and keyword arguments in
    # field order, then the defaults.
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if not kwargs and len(args) == n:  # every field given in order: the common call
            if slotted:
                for k, v in zip(names, args):  # noqa: B905 (len(args) == n, checked above)
                    put(self, k, v)
            else:
                self.__dict__.update(zip(names, args))  # noqa: B905
            return
        if len(args) > n:
            raise TypeError(f"{qualname}() takes {n} positional arguments but {len(args)} were given")
        values = dict(zip(names, args, strict=False))  # len(args) <= n, checked above
        if kwargs:
            for k in kwargs:
                if k not in known or k in values:
                    raise TypeError(f"{qualname}() got an unexpected or repeated argument {k!r}")
            values.update(kwargs)
        if len(values) < n:
            for name in names:
                if name not in values:
                    d = defaults.get(name)
                    if d is None:
                        raise TypeError(f"{qualname}() missing required argument: {name!r}")
                    values[name] = d[1]() if d[0] else d[1]
        if slotted:
            for k, v in values.items():
                put(self, k, v)
        else:
            self.__dict__.update(values)

    __init__.__qualname__ = f"{qualname}.__init__"
    cls.__init__ = __init__

    def __repr__(self: Any) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in shown) + ")"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in compared)

    cls.__repr__ = __repr__
    cls.__eq__ = __eq__
    if frozen:

        def __setattr__(self: Any, name: str, value: object) -> None:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self: Any, name: str) -> None:
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        def __hash__(self: Any) -> int:
            return hash(tuple(getattr(self, n) for n in compared))

        cls.__setattr__ = __setattr__
        cls.__delattr__ = __delattr__
        cls.__hash__ = __hash__
    else:
        cls.__hash__ = None
    return cls
