"""User-defined metrics: one contract (:class:`~pipeline.metrics.spec.MetricSpec`), three ways
in (docs/custom-metrics.md).

* **SQL in the config**: a ``[metrics.NAME]`` table whose ``sql`` is an expression over the
  record's columns and other metrics, compiled by polars (``pl.sql_expr``), so every engine runs
  it unchanged;
* **Python**: a function decorated with :func:`metric`, that returns a ``pl.Expr`` of the
  columns it ``needs`` (or, with ``batch=True``, maps their Series to a Series), loaded from a
  plug-in module (``--plugin``, ``[plugins] modules``) or an installed package's entry point of
  the group :data:`ENTRY_POINT_GROUP`;
* **the API**: ``pipeline.score(df, metrics=["answer_f1", has_url])``.

Every way ends in a :class:`~pipeline.config.UserMetricDef` in the run's config: its identity
(the SQL text, or the module, function and a hash of its source, or a declared version) enters
the signature, and workers rebuild the spec from it (a Python metric by importing its module).
A user metric is then a metric like the built-in ones: a column of ``scores.parquet`` of the
family ``user``, in the views by its kind, the intervals, the report, ``export`` and ``compare``.

Every definition is checked before any row is scored (:func:`user_specs`): its name, the
columns and metrics it reads, that it compiles, and what it returns on a two-row sample batch
(one value per row, of a dtype its kind allows). A failure is a :class:`UserMetricError`, one
line naming the metric.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.config import Config, ConfigError, UserMetricDef, did_you_mean
from pipeline.metrics import registry
from pipeline.metrics.retrieval import retrieval_specs
from pipeline.metrics.spec import Inputs, Kind, MetricSpec
from pipeline.schema import KEY_COLUMNS, RECORD_SCHEMA

log = logging.getLogger(__name__)

#: The family of every user-defined metric (``--metrics user`` selects them all).
USER_FAMILY = "user"
#: Entry point group of installed plug-in packages (``[project.entry-points."rag_eval.metrics"]``).
ENTRY_POINT_GROUP = "rag_eval.metrics"
#: The dtype of each kind's column in ``scores.parquet``: a flag is an Int8 0/1, a score a
#: Float64, a count an Int64, a label a String and a list a list of Strings.
KIND_DTYPES: Mapping[str, pl.DataType] = {
    "score": pl.Float64(), "flag": pl.Int8(), "count": pl.Int64(), "label": pl.String(),
    "list": pl.List(pl.String()),
}
#: Columns of ``scores.parquet`` that are no metric.
NON_METRIC_COLUMNS: frozenset[str] = frozenset({*KEY_COLUMNS, "row_hash", "signature"})
#: Rows of the sample batch a definition is tried on before a run.
_SAMPLE_ROWS = 2


class UserMetricError(ConfigError):
    """A user-defined metric cannot run: one line naming it (exit 2)."""


@dataclass(frozen=True)
class UserMetric:
    """A Python metric made by :func:`metric`: call it as the function it decorates."""

    definition: UserMetricDef
    function: Callable[..., Any]

    @property
    def name(self) -> str:
        return self.definition.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


#: Every :func:`metric` of this process by (module, qualified name): how a worker finds one.
_DECORATED: dict[tuple[str, str], UserMetric] = {}


def source_hash(function: Callable[..., Any]) -> str:
    """``src-<8 hex>``: sha256 of the function's source (of its bytecode and constants when the
    source cannot be read, as in an interactive session)."""
    try:
        text = inspect.getsource(function).encode()
    except (OSError, TypeError):
        code = function.__code__
        text = code.co_code + repr(code.co_consts).encode()
    return "src-" + hashlib.sha256(text).hexdigest()[:8]


def metric(
    name: str | None = None,
    *,
    kind: str = "score",
    description: str = "",
    needs: Sequence[str] | None = None,
    batch: bool = False,
    higher_is_better: bool | None = None,
    lower: float | None = None,
    upper: float | None = None,
    version: str | None = None,
) -> Callable[[Callable[..., Any]], UserMetric]:
    """Declare a Python metric: the decorated function receives one argument per ``needs``
    entry (a record column or another metric; default ``("response",)``) and returns the
    metric's values.

    By default it receives ``pl.col(need)`` for each and returns a ``pl.Expr``; a function
    without parameters is called without arguments and returns an expression over ``pl.col``
    (what it reads is found in the expression; ``needs`` defaults to none). With
    ``batch=True`` it receives each column's ``pl.Series`` of one batch and returns a Series of
    the same length (for checks that call a model or a parser). ``kind`` is ``score``,
    ``flag``, ``count``, ``label`` or ``list``; ``version`` (default: a hash of the function's
    source) enters the signature with the definition.

    >>> @metric(name="words", kind="count", description="Words in the response.")
    ... def words(response: pl.Expr) -> pl.Expr:
    ...     return response.str.split(" ").list.len()
    >>> words.definition.kind, words.definition.needs
    ('count', ('response',))
    >>> @metric(kind="flag")
    ... def short() -> pl.Expr:
    ...     return pl.col("response").str.len_chars() < 40
    >>> short.definition.needs
    ()
    """
    def decorate(function: Callable[..., Any]) -> UserMetric:
        bare = not _takes_arguments(function)
        if bare and batch:
            raise UserMetricError(
                f"metric {name or function.__name__!r}: batch=True passes one Series per needs "
                "entry; the function takes no parameter"
            )
        if needs is None:
            declared: tuple[str, ...] = () if bare else ("response",)
        else:
            declared = tuple(needs)
        definition = UserMetricDef(
            name=name or function.__name__, kind=kind,
            description=description or (inspect.getdoc(function) or "").split("\n")[0],
            module=function.__module__, function=function.__qualname__,
            version=version or source_hash(function), higher_is_better=higher_is_better,
            lower=lower, upper=upper, needs=declared, batch=batch,
        )
        user_metric = UserMetric(definition, function)
        _DECORATED[(function.__module__, function.__qualname__)] = user_metric
        return user_metric

    return decorate


def _takes_arguments(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes a positional argument (a parameter or ``*args``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: called as declared
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                  inspect.Parameter.VAR_POSITIONAL)
    return any(p.kind in positional for p in parameters)


def sql_metric(
    name: str, sql: str, *, kind: str = "score", description: str = "",
    higher_is_better: bool | None = None, lower: float | None = None,
    upper: float | None = None,
) -> UserMetricDef:
    """A SQL metric, as a ``[metrics.NAME]`` table of the config defines it.

    >>> sql_metric("has_url", "regexp_like(response, 'https?://')", kind="flag").identity
    'sql-...'
    """
    return UserMetricDef(name=name, kind=kind, description=description, sql=sql,
                         higher_is_better=higher_is_better, lower=lower, upper=upper)


def _import(module: str, why: str) -> str:
    """Import ``module`` (a dotted name, found in the current directory or the installed
    packages, or the path of a ``.py`` file); return its module name."""
    try:
        if module.endswith(".py"):
            return _import_file(Path(module))
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())  # as `python -m` does, for `rag-eval --plugin NAME`
        importlib.import_module(module)
        return module
    except ModuleNotFoundError as exc:
        raise UserMetricError(f"{why} {module!r} cannot be imported: {exc}") from None
    except Exception as exc:  # the plug-in's own code raised while importing
        raise UserMetricError(
            f"{why} {module!r} raised while importing: {type(exc).__name__}: {exc}"
        ) from None


def _import_file(path: Path) -> str:
    name = path.stem
    if not path.is_file():
        raise ModuleNotFoundError(f"no file {path}")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"{path} is no Python module")
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return name
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return name


def _decorated_in(module: str) -> list[UserMetricDef]:
    return [m.definition for (owner, _), m in _DECORATED.items()
            if owner == module or owner.startswith(module + ".")]


def installed_metrics() -> tuple[UserMetricDef, ...]:
    """The metrics of every installed entry point of :data:`ENTRY_POINT_GROUP` (imported)."""
    defs: list[UserMetricDef] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        _import(point.module, f"plug-in {point.name!r} (entry point {point.value!r}): module")
        defs += _decorated_in(point.module)
    return tuple(defs)


def load_plugins(config: Config) -> Config:
    """``config`` with the metrics of its plug-in modules (``plugins``) added to its
    user-defined metrics, and those of installed packages (:func:`installed_metrics`) that its
    selection names: installing a package makes its metrics available, never changes a run
    that does not ask for them. Idempotent."""
    defs: list[UserMetricDef] = []
    for module in config.plugins:
        found = _decorated_in(_import(module, "plug-in"))
        if not found:
            raise UserMetricError(f"plug-in {module!r} defines no @pipeline.metric function")
        defs += found
    names = {d.name for d in config.user_metrics}
    wanted = {name.strip() for name in config.metrics or ()}
    unknown = wanted - set(registry.REGISTRY) - set(registry.FAMILIES) - {USER_FAMILY}
    if USER_FAMILY in wanted:  # the family: every user metric, installed ones included
        defs += installed_metrics()
    elif unknown - names - {d.name for d in defs}:  # entry points are read only when needed
        defs += [d for d in installed_metrics() if d.name in wanted]
    added = tuple(dict.fromkeys(d for d in defs if d.name not in names))
    return replace(config, user_metrics=(*config.user_metrics, *added)) if added else config


def with_user_metrics(
    config: Config, metrics: Iterable[str | UserMetric | UserMetricDef]
) -> Config:
    """``config`` restricted to ``metrics`` (names, families, :func:`metric` functions or
    :func:`sql_metric` definitions), with the definitions among them added."""
    names: list[str] = []
    defs = list(config.user_metrics)
    for item in metrics:
        if isinstance(item, str):
            names.append(item)
            continue
        if isinstance(item, UserMetric):
            item = item.definition
        if not isinstance(item, UserMetricDef):
            raise TypeError(
                f"metrics entries are names, @pipeline.metric functions or sql_metric(...) "
                f"definitions, not {type(item).__name__}"
            )
        defs = [d for d in defs if d.name != item.name] + [item]
        names.append(item.name)
    return replace(config, metrics=tuple(names), user_metrics=tuple(defs))


def _function(definition: UserMetricDef) -> UserMetric:
    key = (str(definition.module), str(definition.function))
    if key not in _DECORATED:
        _import(key[0], f"metric {definition.name!r}: module")
    if key not in _DECORATED:
        raise UserMetricError(
            f"metric {definition.name!r}: {key[0]}.{key[1]} is no @pipeline.metric function"
        )
    return _DECORATED[key]


def _fits(kind: str, dtype: pl.DataType) -> bool:
    """Whether a metric of ``kind`` may return ``dtype`` (it is then cast to
    :data:`KIND_DTYPES`): a flag a Boolean or an integer, a score any number or a Boolean, a
    count an integer, a label a String, a list a list; an all-null result (``Null``) fits all."""
    if dtype == pl.Null:
        return True
    if kind == "flag":
        return dtype == pl.Boolean or dtype.is_integer()
    if kind == "score":
        return dtype == pl.Boolean or dtype.is_numeric()
    if kind == "count":
        return dtype.is_integer()
    if kind == "label":
        return dtype == pl.String
    return isinstance(dtype, pl.List)


def _batch(definition: UserMetricDef, function: Callable[..., Any]) -> Callable[..., pl.Series]:
    dtype = KIND_DTYPES[definition.kind]

    def run(columns: list[pl.Series]) -> pl.Series:
        result = function(*columns)
        height = len(columns[0]) if columns else 0
        if not isinstance(result, pl.Series):
            raise UserMetricError(
                f"metric {definition.name!r} returned {type(result).__name__}, not a polars "
                "Series (batch=True)"
            )
        if len(result) != height:
            raise UserMetricError(
                f"metric {definition.name!r} returned {len(result)} values for a batch of "
                f"{height} rows"
            )
        if not _fits(definition.kind, result.dtype):
            raise UserMetricError(
                f"metric {definition.name!r} returned {result.dtype}, which a "
                f"{definition.kind} cannot be"
            )
        return result.cast(dtype)

    return run


def _builder(definition: UserMetricDef) -> Callable[[Inputs], pl.Expr]:
    """The spec's ``build``: the compiled SQL, or the function's expression or batch call."""
    if definition.sql is not None:
        sql = definition.sql
        return lambda _inputs: pl.sql_expr(sql)
    user_metric = _function(definition)
    columns = [pl.col(need) for need in definition.needs]
    if definition.batch:
        run = _batch(definition, user_metric.function)
        dtype = KIND_DTYPES[definition.kind]
        return lambda _inputs: pl.map_batches(columns, run, return_dtype=dtype)
    if not _takes_arguments(user_metric.function):  # an expression over pl.col itself
        return lambda _inputs: user_metric.function()
    return lambda _inputs: user_metric.function(*columns)


def _expression(definition: UserMetricDef, build: Callable[[Inputs], pl.Expr],
                config: Config) -> pl.Expr:
    where = f"metric {definition.name!r}"
    try:
        expr = build(Inputs(config=config))
    except UserMetricError:
        raise
    except Exception as exc:
        what = "its SQL does not compile" if definition.sql is not None else "its function raised"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserMetricError(f"{where}: {what}: {detail}") from None
    if not isinstance(expr, pl.Expr):
        raise UserMetricError(
            f"{where}: its function returned {type(expr).__name__}, not a polars expression "
            "(pass batch=True for a function of Series)"
        )
    return expr


def _read_names(
    definition: UserMetricDef, expr: pl.Expr, metrics: Iterable[str]
) -> tuple[str, ...]:
    """The metrics ``expr`` reads, after checking it reads only record columns and metrics."""
    metrics = set(metrics)
    read = [*definition.needs, *expr.meta.root_names()]
    known = set(RECORD_SCHEMA) | metrics
    for name in read:
        if name not in known:
            raise UserMetricError(
                f"metric {definition.name!r} reads {name!r}, which is no record column or "
                f"metric{did_you_mean(name, known)}"
            )
    return tuple(dict.fromkeys(name for name in read if name in metrics))


def _sample(specs: Iterable[MetricSpec]) -> pl.DataFrame:
    """Two rows of plain values in every record column and metric column."""
    def value(dtype: pl.DataType) -> Any:
        if isinstance(dtype, pl.List):
            inner = dtype.inner
            return [value(inner() if isinstance(inner, type) else inner)]
        if dtype == pl.String:
            return "Paris is the capital of France [1]."
        if dtype.is_integer():
            return 1
        if dtype.is_numeric():
            return 0.5
        return None

    schema = {**RECORD_SCHEMA, **{spec.name: spec.dtype for spec in specs}}
    return pl.DataFrame(
        {name: [value(dtype)] * _SAMPLE_ROWS for name, dtype in schema.items()}, schema=schema
    )


def _check_sample(definition: UserMetricDef, expr: pl.Expr, sample: pl.DataFrame) -> None:
    where = f"metric {definition.name!r}"
    try:
        result = sample.select(expr)
    except UserMetricError as exc:  # polars appends the expression's text: keep one line
        raise UserMetricError(str(exc).strip().splitlines()[0]) from None
    except Exception as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserMetricError(f"{where} fails on a sample batch: {detail}") from None
    if result.height != sample.height:
        raise UserMetricError(
            f"{where} returns {result.height} value(s) for {sample.height} rows: a metric is one "
            "value per row (an aggregate such as sum() or count(*) is no metric)"
        )
    dtype = result.to_series().dtype
    if not _fits(definition.kind, dtype):
        raise UserMetricError(
            f"{where} returns {dtype}, which a {definition.kind} cannot be (declare another kind)"
        )


@functools.lru_cache(maxsize=64)
def _checked_specs(definitions: tuple[UserMetricDef, ...]) -> tuple[MetricSpec, ...]:
    specs: list[MetricSpec] = []
    builtin = registry.REGISTRY
    config = Config()  # what a builder may read; user metrics read none of it
    for definition in definitions:
        if definition.name in builtin or definition.name in RECORD_SCHEMA or (
            definition.name in NON_METRIC_COLUMNS or definition.name in registry.FAMILIES
            or definition.name == USER_FAMILY
        ):
            raise UserMetricError(
                f"metric {definition.name!r}: the name of a built-in metric, family or column; "
                "choose another"
            )
    for definition in definitions:
        build = _builder(definition)
        expr = _expression(definition, build, config)
        earlier = [*builtin, *(spec.name for spec in specs)]
        later = {d.name for d in definitions} - set(earlier) - {definition.name}
        needs = _read_names(definition, expr, [*earlier, *later])
        if set(needs) & later or definition.name in needs:
            raise UserMetricError(
                f"metric {definition.name!r} reads a user metric defined after it, or itself: "
                "define the metrics it reads first"
            )
        kind: Kind = definition.kind  # type: ignore[assignment]
        lower, upper = (0.0, 1.0) if kind == "flag" else (definition.lower, definition.upper)
        spec = MetricSpec(
            definition.name, USER_FAMILY, build, KIND_DTYPES[kind],
            definition.description or f"User-defined ({definition.identity}).",
            needs=needs, lower=lower, upper=upper,
            higher_is_better=definition.higher_is_better, nullable=True,
            version=definition.identity, kind=kind,
        )
        needed = [*(builtin[n] for n in needs if n in builtin),
                  *(s for s in specs if s.name in needs)]
        _check_sample(definition, expr, _sample(needed))
        specs.append(spec)
    return tuple(specs)


def user_specs(config: Config) -> tuple[MetricSpec, ...]:
    """The specs of ``config``'s user-defined metrics, each checked before any row is scored
    (name, what it reads, that it compiles, its result on a sample batch; cached per config).
    """
    if not config.user_metrics:
        return ()
    return _checked_specs(tuple(config.user_metrics))


def resolve(config: Config, selection: Iterable[str] | None = None,
            *, selected: bool = True) -> tuple[MetricSpec, ...]:
    """Specs of ``config``'s selection (or ``selection``, when given), built-in metrics first,
    then the user-defined ones, with the metrics they need.

    >>> [s.name for s in resolve(Config(metrics=("answer_em", "has_url"),
    ...     user_metrics=(sql_metric("has_url", "response like '%http%'", kind="flag"),)))]
    ['answer_em', 'has_url']
    """
    chosen = selection if selection is not None else (config.metrics if selected else None)
    extra = user_specs(config)
    if chosen is not None and not extra and USER_FAMILY in {n.strip() for n in chosen}:
        chosen = [name for name in chosen if name.strip() != USER_FAMILY]
        if not chosen:
            raise registry.UnknownMetricError(
                "the family 'user' selects no metric: no user-defined metric is defined "
                "([metrics.NAME] in the config, --plugin, or an installed package)"
            )
    return registry.resolve(chosen, extra=extra, ks=config.retrieval_k)


def is_user_metric(spec: MetricSpec) -> bool:
    return spec.family == USER_FAMILY


def scores_catalog(
    schema: Mapping[str, pl.DataType], signatures: Iterable[str] = ()
) -> dict[str, MetricSpec]:
    """The metrics of a scores table with ``schema``: the registered ones it has, in registry
    order, then each other column (not a key column, ``row_hash`` or ``signature``) as a
    user-defined metric. Its kind and better direction come from the ``signatures`` of its
    rows (``metric.NAME:KIND.DIRECTION.IDENTITY``), else its kind from its dtype
    (:data:`KIND_DTYPES`) with no better direction.

    >>> cat = scores_catalog({"id": pl.String(), "answer_em": pl.Int8(), "has_url": pl.Int8()},
    ...                      ["rag-eval|metric.has_url:flag.up.sql-1a2b3c4d"])
    >>> [(s.name, s.family, s.kind, s.higher_is_better) for s in cat.values()]
    [('answer_em', 'answer', 'flag', True), ('has_url', 'user', 'flag', True)]
    """
    declared: dict[str, tuple[str, bool | None, str]] = {}
    for signature in signatures:
        for part in signature.split("|"):
            key, _, value = part.partition(":")
            if key.startswith("metric.") and value.count(".") >= 2:
                kind, arrow, identity = value.split(".", 2)
                declared[key[len("metric."):]] = (
                    kind, {"up": True, "down": False}.get(arrow), identity
                )
    catalog = {name: spec for name, spec in registry.REGISTRY.items() if name in schema}
    for name in schema:  # retrieval measures at cut-offs a config chose ([retrieval] k)
        spec = None if name in catalog else retrieval_specs.at_k_spec(name)
        if spec is not None:
            catalog[name] = spec
    by_dtype = {str(dtype): kind for kind, dtype in KIND_DTYPES.items()}
    for name, dtype in schema.items():
        if name in catalog or name in NON_METRIC_COLUMNS or name.startswith("_"):
            continue
        kind, direction, identity = declared.get(name, (by_dtype.get(str(dtype), ""), None, ""))
        if kind in KIND_DTYPES and KIND_DTYPES[kind] == dtype:
            catalog[name] = declared_spec(name, kind, direction, identity=identity)
    return catalog


def declared_spec(name: str, kind: str, higher_is_better: bool | None, description: str = "",
                  *, identity: str = "") -> MetricSpec:
    """A user-defined metric known by what it declares (from a scores table or a manifest), not
    by its definition: enough to aggregate, compare and show it, not to score it."""
    def build(_: Inputs) -> pl.Expr:
        raise UserMetricError(f"metric {name!r} is known from a run only: load its definition "
                              "(config or plug-in) to score it")

    return MetricSpec(
        name, USER_FAMILY, build, KIND_DTYPES[kind],
        description or f"User-defined{f' ({identity})' if identity else ''}.",
        lower=0.0 if kind in ("flag", "count") else None, upper=1.0 if kind == "flag" else None,
        higher_is_better=higher_is_better, nullable=True, version=identity or "unknown",
        kind=kind,  # type: ignore[arg-type]
    )
