"""Typed, checked, frozen records: the services' K0_* settings and the retriever's JSON parameters.

A record class lists typed fields (`name: type = Field(default, description=…, ge=…)`). Values
are converted to the field's type and checked against its bounds, then `validate()` runs for
rules across fields; a wrong value is a `SettingsError` that names it (`K0_RRF_K='sixty': must
be an integer`). Types: str, int, float, bool, Path, `X | None`, `list[str]` (a JSON list),
`tuple[float, float]`, `tuple[str, ...]`, `Literal[...]` and nested records.

- `K0Settings(**values)`: each field from `values`, else from the environment `K0_<NAME>`, else
  its default. Every service reads its settings once, at start.
- `TypedFields.from_json(mapping)`: each field from the mapping's key (the field's `alias`, or
  its name), else its default; an unknown key is an error (a typo is not a silent default).

This replaces pydantic and pydantic-settings, which cost 17 MB and 0.15–0.2 s of CPU at the
start of every process (five such processes per stack).
"""

from __future__ import annotations

import json
import math
import os
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

from ._auth import is_loopback_address

_REQUIRED: Any = object()
_TRUE = {"1", "true", "yes", "on", "t", "y"}
_FALSE = {"0", "false", "no", "off", "f", "n"}


class SettingsError(ValueError):
    """A setting or parameter is missing, malformed or out of bounds (the message names it)."""


@dataclass(frozen=True)
class SettingField:
    name: str
    kind: Any
    default: Any = _REQUIRED
    default_factory: Callable[[], Any] | None = None
    description: str = ""
    alias: str = ""
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    @property
    def env(self) -> str:
        return f"K0_{self.name.upper()}"

    @property
    def key(self) -> str:
        return self.alias or self.name

    def initial(self, label: str) -> Any:
        if self.default_factory is not None:
            return self.default_factory()
        if self.default is _REQUIRED:
            raise SettingsError(f"{label} is required: {self.description}")
        return self.default

    def convert(self, value: Any, label: str, from_text: bool = False) -> Any:
        """`value` as this field's type, checked; `from_text`: an environment string ("" = None)."""
        try:
            converted = _as_type(self.kind, value, from_text)
        except (TypeError, ValueError) as exc:
            raise SettingsError(f"{label}={value!r}: {exc}") from None
        self._check_bounds(converted, label)
        return converted

    def _check_bounds(self, value: Any, label: str) -> None:
        if value is None:
            return
        failed = (
            (self.ge is not None and not value >= self.ge and f">= {self.ge}")
            or (self.gt is not None and not value > self.gt and f"> {self.gt}")
            or (self.le is not None and not value <= self.le and f"<= {self.le}")
            or (self.lt is not None and not value < self.lt and f"< {self.lt}")
            or (self.min_length is not None and len(value) < self.min_length and f"at least {self.min_length} long")
            or (self.max_length is not None and len(value) > self.max_length and f"at most {self.max_length} long")
        )
        if failed:
            raise SettingsError(f"{label}={value!r}: must be {failed}")
        if self.pattern is not None and not re.search(self.pattern, value):
            raise SettingsError(f"{label}={value!r}: must match {self.pattern}")


def Field(
    default: Any = _REQUIRED,
    *,
    default_factory: Callable[[], Any] | None = None,
    description: str = "",
    alias: str = "",
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
) -> Any:
    """Declare a field (its name and type come from the class annotation)."""
    return SettingField(
        "", None, default, default_factory, description, alias, ge, gt, le, lt, min_length, max_length, pattern
    )


def _as_type(kind: Any, value: Any, from_text: bool) -> Any:
    origin, args = get_origin(kind), get_args(kind)
    if isinstance(kind, type) and issubclass(kind, TypedFields):
        if not isinstance(value, Mapping):
            raise ValueError("must be an object")
        return kind.from_json(value)
    if origin in (Union, types.UnionType):  # `X | None`
        if value is None or (from_text and value == ""):
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _as_type(inner, value, from_text)
    if origin is Literal:
        if value not in args:
            raise ValueError(f"must be one of {', '.join(map(str, args))}")
        return value
    if origin in (list, tuple):
        items = json.loads(value) if from_text and isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ValueError("must be a list")
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            return origin(_as_type(args[0], item, False) for item in items)
        if len(items) != len(args):
            raise ValueError(f"must be a list of {len(args)}")
        return tuple(_as_type(a, item, False) for a, item in zip(args, items, strict=True))
    if kind is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower() if from_text else ""
        if word not in _TRUE | _FALSE:
            raise ValueError("must be true or false")
        return word in _TRUE
    if kind is int:
        if from_text and isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ValueError("must be an integer")
    if kind is float:
        if (from_text and isinstance(value, str)) or (isinstance(value, int | float) and not isinstance(value, bool)):
            number = float(value)
        else:
            raise ValueError("must be a number")
        if not math.isfinite(number):  # `Infinity`, `1e400` and `nan` parse; every use of them broke
            raise ValueError("must be a finite number")
        return number
    if kind is Path:
        if not isinstance(value, str | Path):
            raise ValueError("must be a path")
        return Path(value)
    if kind is str:
        if not isinstance(value, str):
            raise ValueError("must be a string")
        return value
    raise TypeError(f"unsupported field type {kind!r}")


class TypedFields:
    """Frozen records of typed fields; subclasses declare them (see the module's docstring)."""

    FIELDS: ClassVar[dict[str, SettingField]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        hints = get_type_hints(cls)
        found: dict[str, SettingField] = {}
        for klass in reversed(cls.__mro__):
            for name, declared in vars(klass).items():
                if isinstance(declared, SettingField):
                    found[name] = replace(declared, name=name, kind=hints[name])
        cls.FIELDS = found

    def __init__(self, **values: Any) -> None:
        """Each field from `values` (by name) or its default."""
        self._fill(values, lambda spec: ("", False, False))

    def _fill(self, values: Mapping[str, Any], fallback: Callable[[SettingField], tuple[Any, bool, bool]]) -> None:
        """`fallback(field)` → (value, found, from_text) for a field not in `values`."""
        unknown = set(values) - set(self.FIELDS)
        if unknown:
            raise SettingsError(f"{type(self).__name__} has no setting {', '.join(sorted(unknown))}")
        for name, spec in self.FIELDS.items():
            label = self._label(spec)
            if name in values:
                value = spec.convert(values[name], label)
            else:
                raw, found, from_text = fallback(spec)
                value = spec.convert(raw, label, from_text) if found else spec.initial(label)
            object.__setattr__(self, name, value)
        self.validate()

    def _label(self, spec: SettingField) -> str:
        return spec.key

    @classmethod
    def from_json(cls, mapping: Mapping[str, Any]) -> TypedFields:
        """A record from a JSON object: keys are the fields' aliases (or names)."""
        by_key = {spec.key: name for name, spec in cls.FIELDS.items()} | {name: name for name in cls.FIELDS}
        unknown = sorted(k for k in mapping if k not in by_key)
        if unknown:
            raise SettingsError(f"unknown key {', '.join(map(repr, unknown))} (known: {', '.join(sorted(by_key))})")
        return cls(**{by_key[k]: v for k, v in mapping.items()})

    def validate(self) -> None:
        """Checks across fields (subclasses extend it and call this one)."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    def __hash__(self) -> int:
        return hash(tuple(repr(getattr(self, n)) for n in self.FIELDS))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={'***' if n.endswith(('token', 'key')) else getattr(self, n)!r}" for n in self.FIELDS)
        return f"{type(self).__name__}({shown})"


class K0Settings(TypedFields):
    """Fields every service shares. Subclasses add their own; unknown K0_ names are ignored
    so that one environment can configure the whole stack."""

    log_level: str = Field("INFO", description="Python logging level for this service")
    grpc_addr: str = Field("127.0.0.1:0", description="host:port this service's gRPC server binds")
    grpc_token: str = Field(
        "",
        description="shared secret every gRPC call carries (metadata authorization: Bearer …); "
        "servers require it when set, clients attach it; mandatory when grpc_addr is not loopback",
    )

    def __init__(self, **values: Any) -> None:
        """Each field from `values`, else the environment's `K0_<NAME>`, else its default."""
        self._fill(values, lambda spec: (os.environ.get(spec.env), spec.env in os.environ, True))

    def _label(self, spec: SettingField) -> str:
        return spec.env

    def validate(self) -> None:
        object.__setattr__(self, "grpc_token", self.grpc_token.strip())  # a secret file's newline (`env_token`)
        if not self.grpc_token and not is_loopback_address(self.grpc_addr):
            raise SettingsError(f"K0_GRPC_ADDR={self.grpc_addr} is not loopback: set K0_GRPC_TOKEN")
        redis_url = getattr(self, "redis_url", None)  # the services that keep jobs or a ledger in Valkey
        if isinstance(redis_url, str) and not redis_url.startswith(("redis://", "rediss://", "unix://")):
            # redis-py's own error was a traceback naming no variable (`host:6379` without a scheme)
            raise SettingsError("K0_REDIS_URL must start with redis://, rediss:// or unix:// (redis://host:6379/0)")
