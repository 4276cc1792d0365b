"""Typed access to one TOML table, with errors that name the file, the table and the key
(the quality and overall rule files)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

from pipeline.rules.files import RuleFileError

_T = TypeVar("_T")


class Table:
    """One TOML table; :meth:`done` rejects keys no getter asked for."""

    def __init__(self, data: Mapping[str, Any], source: str, name: str) -> None:
        self.data, self.source, self.name = data, source, name
        self.used: set[str] = set()

    def fail(self, key: str, message: str) -> RuleFileError:
        return RuleFileError(f"{self.source}: [{self.name}] {key}: {message}")

    def raw(self, key: str) -> Any:
        if key not in self.data:
            raise self.fail(key, "missing")
        self.used.add(key)
        return self.data[key]

    def typed(self, key: str, kind: type[_T], what: str) -> _T:
        value = self.raw(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.fail(key, f"expected {what}, got {value!r}")
        return value

    def number(self, key: str, *, low: float = -math.inf, high: float = math.inf) -> float:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise self.fail(key, f"expected a number, got {value!r}")
        if not low <= value <= high:
            raise self.fail(key, f"expected a number in [{low}, {high}], got {value!r}")
        return float(value)

    def integer(self, key: str, *, low: int = 0) -> int:
        value = self.typed(key, int, "an integer")
        if value < low:
            raise self.fail(key, f"expected an integer >= {low}, got {value!r}")
        return value

    def strings(self, key: str, value: Any = None) -> tuple[str, ...]:
        value = self.raw(key) if value is None else value
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(key, f"expected a list of non-empty strings, got {value!r}")
        if not value:
            raise self.fail(key, "expected at least one string")
        return tuple(value)

    def table(self, key: str) -> Table:
        return Table(self.typed(key, dict, "a table"), self.source, f"{self.name}.{key}")

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise self.fail(unknown[0], "unknown key")


def bands(table: Table) -> tuple[tuple[float, str], ...]:
    """``bands = [[threshold, text], ...]`` of ``table`` (feedback bands, any order)."""
    raw = table.typed("bands", list, "a list of [threshold, text]")
    found = []
    for band in raw:
        ok = isinstance(band, list) and len(band) == 2 and isinstance(band[1], str)
        if not ok or isinstance(band[0], bool) or not isinstance(band[0], int | float):
            raise table.fail("bands", f"expected [threshold, text], got {band!r}")
        found.append((float(band[0]), band[1]))
    if not found:
        raise table.fail("bands", "needs at least one band")
    return tuple(found)
