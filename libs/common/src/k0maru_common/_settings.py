"""Settings base: every service reads `K0_*` environment variables once, at start.

A settings class lists typed fields (`name: type = Field(default, description=…, ge=…)`);
`Settings(**values)` takes each field from `values`, else from `K0_<NAME>`, else its default,
converts it to the field's type, checks its bounds, then runs `validate()`. A wrong value is a
`SettingsError` naming the variable. Types: str, int, float, bool, Path, `Path | None`,
`list[str]` (a JSON list) and `Literal[...]`. Instances are frozen.

This replaces pydantic-settings: importing pydantic and pydantic-settings and building a model
cost 17 MB per process (five such processes per stack) and a tenth of a second at start.
"""

from __future__ import annotations

import json
import os
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

from ._auth import is_loopback_address

_REQUIRED: Any = object()
_TRUE = {"1", "true", "yes", "on", "t", "y"}
_FALSE = {"0", "false", "no", "off", "f", "n"}


class SettingsError(ValueError):
    """A setting is missing, malformed or out of bounds (the message names K0_<NAME>)."""


@dataclass(frozen=True)
class SettingField:
    name: str
    kind: Any
    default: Any = _REQUIRED
    default_factory: Callable[[], Any] | None = None
    description: str = ""
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

    def initial(self) -> Any:
        if self.default_factory is not None:
            return self.default_factory()
        if self.default is _REQUIRED:
            raise SettingsError(f"{self.env} is required: {self.description}")
        return self.default

    def convert(self, value: Any) -> Any:
        """`value` (a string from the environment, or a Python value) as this field's type, checked."""
        try:
            value = _as_type(self.kind, value)
        except (TypeError, ValueError) as exc:
            raise SettingsError(f"{self.env}={value!r}: {exc}") from None
        self._check_bounds(value)
        return value

    def _check_bounds(self, value: Any) -> None:
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
            raise SettingsError(f"{self.env}={value!r}: must be {failed}")
        if self.pattern is not None and not re.search(self.pattern, value):
            raise SettingsError(f"{self.env}={value!r}: must match {self.pattern}")


def Field(
    default: Any = _REQUIRED,
    *,
    default_factory: Callable[[], Any] | None = None,
    description: str = "",
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
) -> Any:
    """Declare a setting (its name and type come from the class annotation)."""
    return SettingField(
        "", None, default, default_factory, description, ge, gt, le, lt, min_length, max_length, pattern
    )


def _as_type(kind: Any, value: Any) -> Any:
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):  # `X | None`: an empty string means None
        if value is None or value == "":
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _as_type(inner, value)
    if origin is Literal:
        if value not in args:
            raise ValueError(f"must be one of {', '.join(map(str, args))}")
        return value
    if origin is list:
        items = json.loads(value) if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ValueError("must be a JSON list of strings")
        return list(items)
    if kind is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word not in _TRUE | _FALSE:
            raise ValueError("must be true or false")
        return word in _TRUE
    if kind is int:
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ValueError("must be an integer")
    if kind is float:
        if isinstance(value, bool):
            raise ValueError("must be a number")
        return float(value)
    if kind is Path:
        return Path(value)
    if kind is str:
        if not isinstance(value, str):
            raise ValueError("must be a string")
        return value
    raise TypeError(f"unsupported setting type {kind!r}")


class K0Settings:
    """Fields every service shares. Subclasses add their own; unknown K0_ names are ignored
    so that one environment can configure the whole stack."""

    FIELDS: ClassVar[dict[str, SettingField]] = {}

    log_level: str = Field("INFO", description="Python logging level for this service")
    grpc_addr: str = Field("127.0.0.1:0", description="host:port this service's gRPC server binds")
    grpc_token: str = Field(
        "",
        description="shared secret every gRPC call carries (metadata authorization: Bearer …); "
        "servers require it when set, clients attach it; mandatory when grpc_addr is not loopback",
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._collect_fields()

    @classmethod
    def _collect_fields(cls) -> None:
        hints = get_type_hints(cls)
        found: dict[str, SettingField] = {}
        for klass in reversed(cls.__mro__):
            for name, declared in vars(klass).items():
                if isinstance(declared, SettingField):
                    found[name] = replace(declared, name=name, kind=hints[name])
        cls.FIELDS = found

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(self.FIELDS)
        if unknown:
            raise SettingsError(f"{type(self).__name__} has no setting {', '.join(sorted(unknown))}")
        for name, spec in self.FIELDS.items():
            if name in values:
                value = spec.convert(values[name])
            elif spec.env in os.environ:
                value = spec.convert(os.environ[spec.env])
            else:
                value = spec.initial()
            object.__setattr__(self, name, value)
        self.validate()

    def validate(self) -> None:
        """Checks across fields (subclasses extend it and call this one)."""
        if not self.grpc_token and not is_loopback_address(self.grpc_addr):
            raise SettingsError(f"K0_GRPC_ADDR={self.grpc_addr} is not loopback: set K0_GRPC_TOKEN")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"settings are frozen: cannot set {name}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={'***' if n.endswith(('token', 'key')) else getattr(self, n)!r}" for n in self.FIELDS)
        return f"{type(self).__name__}({shown})"


K0Settings._collect_fields()
