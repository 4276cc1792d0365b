"""A user-defined metric as a run's configuration records it (docs/custom-metrics.md).

Re-exported by :mod:`pipeline.config`; :mod:`pipeline.metrics.user` builds these from
``[metrics.NAME]`` tables and ``@pipeline.metric`` functions.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

from pipeline.config_error import ConfigError

#: Kinds a user-defined metric may declare (:data:`pipeline.metrics.spec.Kind`).
USER_METRIC_KINDS: tuple[str, ...] = ("score", "flag", "count", "label", "list")
#: A metric name: a plain SQL column name of lowercase letters, digits and ``_``.
METRIC_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class UserMetricDef:
    """The definition of a user-defined metric (docs/custom-metrics.md), as a run records it.

    Exactly one of ``sql`` (a SQL expression over the record's columns and other metrics, from
    ``[metrics.NAME]`` of the config) and ``module`` + ``function`` (a function decorated with
    ``@pipeline.metric``, imported by name on every worker) is set. ``version`` is the declared
    version or, left out, a hash of the function's source: with the SQL text it makes
    :attr:`identity`, which enters the signature, so a changed definition never reuses rows.
    """

    name: str
    kind: str
    description: str = ""
    sql: str | None = None
    module: str | None = None
    function: str | None = None
    version: str | None = None
    higher_is_better: bool | None = None
    lower: float | None = None
    upper: float | None = None
    #: ``needs`` of a Python metric: the columns and metrics its function receives.
    needs: tuple[str, ...] = ()
    #: A Python metric whose function maps Series to a Series (``batch=True``).
    batch: bool = False

    def __post_init__(self) -> None:
        where = f"metric {self.name!r}"
        if not METRIC_NAME.fullmatch(self.name):
            raise ConfigError(
                f"{where}: a metric name is lowercase letters, digits and '_', starting with a "
                "letter (it becomes a SQL column)"
            )
        if self.kind not in USER_METRIC_KINDS:
            raise ConfigError(
                f"{where}: kind {self.kind!r} is unknown: use one of {', '.join(USER_METRIC_KINDS)}"
            )
        if (self.sql is None) == (self.module is None or self.function is None):
            raise ConfigError(f"{where}: give either sql or a Python module and function")
        if self.sql is not None and not self.sql.strip():
            raise ConfigError(f"{where}: sql is empty")
        for bound in (self.lower, self.upper):
            if bound is not None and not math.isfinite(bound):
                raise ConfigError(f"{where}: the range bounds must be finite numbers")
        if self.lower is not None and self.upper is not None and self.lower > self.upper:
            raise ConfigError(f"{where}: lower {self.lower:g} is above upper {self.upper:g}")
        if self.kind == "flag" and (self.lower, self.upper) not in ((None, None), (0, 1)):
            raise ConfigError(f"{where}: a flag is 0 or 1; its range cannot be set")

    @property
    def identity(self) -> str:
        """``sql-<8 hex>`` or ``py-<8 hex>``: sha256 of everything that changes the metric's
        values or their reading (text or function and version, kind, direction, range)."""
        direction = {True: "up", False: "down", None: "none"}[self.higher_is_better]
        parts = [self.kind, direction, repr(self.lower), repr(self.upper)]
        if self.sql is not None:
            text = "\0".join(["sql", self.sql.strip(), *parts])
            return "sql-" + hashlib.sha256(text.encode()).hexdigest()[:8]
        text = "\0".join(["py", str(self.module), str(self.function), str(self.version),
                           ",".join(self.needs), str(self.batch), *parts])
        return "py-" + hashlib.sha256(text.encode()).hexdigest()[:8]

    def signature_part(self) -> str:
        """This metric's part of the signature: ``metric.NAME:KIND.DIRECTION.IDENTITY``."""
        direction = {True: "up", False: "down", None: "none"}[self.higher_is_better]
        return f"metric.{self.name}:{self.kind}.{direction}.{self.identity}"
