"""DuckDB views over an output directory, built from the SQL files in ``queries/``.

``DIR/eval.duckdb`` holds no data: one view per ``queries/NAME.sql`` (named ``NAME``), the
file's grain as the view's comment, and a macro ``eval_data_dir()`` that returns the absolute
path of ``DIR``. The staging views ``scores`` and ``rejected`` read
``eval_data_dir() || '/scores.parquet'`` and ``'/rejected.parquet'``; every other view selects
from views. DuckDB resolves a relative file path in a view against the working directory of
whoever queries it, not against the database file (checked on DuckDB 2.0), so the path is
absolute and the database works from any directory and any client. :func:`connect` rebuilds a
database whose directory was moved or copied, so it never reads another directory's Parquet.

A view file holds exactly one ``select`` statement and starts with a grain comment,
``-- grain: one row per model`` or ``-- grain: one row per (model, noise_level)``; the builder
checks that the grain columns exist. Views are created in dependency order: a file depends on
every other view whose name it mentions outside comments, string literals, output aliases
(``as name``) and qualified column names (``t.name``); ties are broken by name, so the order is
deterministic.

The metric columns are not listed by hand: a line ``-- registry: BLOCK`` or
``-- registry: BLOCK(alias)`` is followed, when the file is loaded, by lines generated from the
metric registry (:func:`expand_registry_blocks`): ``contract`` (one typed null per registered
metric, the ``scores`` contract), ``slice_aggregates(alias)`` and ``slice_columns(alias)`` (the
aggregate of every registered metric the file does not read by hand, as its kind says, and the
column that selects it). A new metric thus reaches ``scores`` and the slice views with no SQL
edited.

The database is written atomically (into a temporary sibling, then renamed) with DuckDB's
storage compatibility set to :data:`STORAGE_COMPATIBILITY`, so older clients such as the 1.x
``duckdb`` CLI can open it as well.

:func:`run_query` runs one statement on a connection that opens the database read-only, reads
only the files under the directory and cannot change that (:func:`connect_restricted`);
``docs/query-security.md`` states what it can read and why it cannot write. :func:`connect` is
the unrestricted read-only connection for trusted code. Their read path (the runs of a store,
the database's freshness check, the restricted connection) is :mod:`pipeline.query`, which
``rag-eval query`` calls directly and which asks this module for a build (:data:`BUILDER`)
only when the database is missing or stale; its names are re-exported here.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipeline.config import view_templates_dir
from pipeline.io.atomic import atomic_path
from pipeline.io.layout import (
    MANIFEST_FILE,
    MODEL_PARTITION,
    REJECTED_DIR,
    REJECTED_FILE,
    RUN_PARTITION,
    SCORES_DIR,
    SCORES_FILE,
    TEXTS_DIR,
    TEXTS_FILE,
)
from pipeline.io.partitioned import partitions_sql
from pipeline.io.sql import sql_identifier, sql_literal
from pipeline.metrics import registry
from pipeline.metrics.retrieval import retrieval_specs
from pipeline.metrics.spec import MetricSpec
from pipeline.metrics.user import KIND_DTYPES, USER_FAMILY, declared_spec, scores_catalog
from pipeline.query import (  # noqa: F401 - the read path's names, re-exported from here
    ALL_RUNS,
    DAMAGED_MACRO,
    DATA_DIR_MACRO,
    DB_FILE,
    MANIFEST_FIELDS,
    QUERY_SETTINGS,
    QUERY_STATEMENTS,
    SCORES_COLUMNS_MACRO,
    STATE_MACRO,
    Builder,
    QueryRefused,
    StoreRuns,
    check_run,
    is_store,
    open_views,
    parquet_intact,
    read_manifest,
    require_outputs,
    restricted,
    run_damage,
    scores_columns,
    store_runs,
    store_state,
)
from pipeline.query import run_query as _run_query
from pipeline.schema import InputError
from pipeline.stats import check_stats_pair
from pipeline.view_templates import NO_LATE, TemplateShelf, late_key, macro_parts, template_key

log = logging.getLogger(__name__)

#: Files ``rag-eval stats`` writes, read through table macros (macro name -> file name). While a
#: file is absent its macro returns no rows and a single ``metric`` column, so the staging view
#: (which unions it by name with its typed contract) builds and is empty.
OPTIONAL_FILES: dict[str, str] = {
    "intervals_file": "intervals.parquet",
    "comparisons_file": "comparisons.parquet",
}
#: Table macros the staging views read (defined by :func:`_source_macros`).
SOURCE_MACROS: tuple[str, ...] = (
    "scores_file", "rejected_file", "texts_file", *OPTIONAL_FILES, "manifests_file",
)
#: Columns of the manifests the ``runs`` view lists (JSON type names of DuckDB's read_json).
_MANIFEST_COLUMNS = (
    "{run_id: 'varchar', status: 'varchar', engine: 'varchar', started_at: 'varchar', "
    "finished_at: 'varchar', signature: 'varchar', reused_from: 'varchar', "
    "counts: 'struct(read bigint, scored bigint, reused bigint, rejected bigint)'}"
)
#: Hive partition of a store's runs and the manifest file of each (see :mod:`pipeline.store`).
_RUN = RUN_PARTITION
_MANIFEST = MANIFEST_FILE
#: Oldest DuckDB release whose storage format the database is written in (``duckdb>=1.1``).
STORAGE_COMPATIBILITY = "v1.1.0"

_VIEW_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_GRAIN = re.compile(
    r"--\s*grain:\s*(?P<grain>one row per\s+"
    r"(?:\((?P<columns>[a-z0-9_,\s]+)\)|(?P<column>[a-z_][a-z0-9_]*))(?:\W.*)?)$"
)
# Comments and string literals, which may mention view names without referencing them.
_SQL_NOISE = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'", re.DOTALL)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Column names that cannot reference a view: output aliases (``as rejected``) and qualified
# columns (``sr.rejected``), so a column may share its name with a view.
_COLUMN_NAMES = re.compile(
    r"\bas\s+[A-Za-z_][A-Za-z0-9_]*|\.\s*[A-Za-z_][A-Za-z0-9_]*", re.IGNORECASE
)


#: A line after which :func:`expand_registry_blocks` writes lines generated from the registry.
_REGISTRY_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)--[ \t]*registry:[ \t]*(?P<block>[a-z_]+)"
    r"(?:\((?P<alias>[a-z_]+)\))?(?:[ \t].*)?$",
    re.MULTILINE,
)
_ALIASES = re.compile(r"\bas\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_QUALIFIED = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)")
#: DuckDB types of the polars dtypes metrics have (a list is its element type with ``[]``).
_DUCKDB_TYPES: dict[type[pl.DataType], str] = {
    pl.Boolean: "boolean", pl.Int8: "tinyint", pl.Int16: "smallint", pl.Int32: "integer",
    pl.Int64: "bigint", pl.UInt8: "utinyint", pl.UInt16: "usmallint", pl.UInt32: "uinteger",
    pl.UInt64: "ubigint", pl.Float32: "float", pl.Float64: "double", pl.String: "varchar",
}


class ViewBuildError(InputError):
    """A view file is malformed or its view fails to build; the message names the file.

    An :class:`~pipeline.schema.InputError`, so the CLI reports it as a bad input (exit 2).
    """

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class ViewDef:
    """One ``queries/NAME.sql`` file: the view it defines and what that view reads."""

    name: str
    path: Path
    sql: str
    #: The grain comment without ``-- grain:``, e.g. ``one row per (model, noise_level)``.
    grain: str
    #: The columns that identify a row, e.g. ``("model", "noise_level")``.
    grain_columns: tuple[str, ...]
    #: Other views this one selects from.
    depends_on: tuple[str, ...]


def default_queries_dir() -> Path:
    """The repository's ``queries/`` folder, beside the ``pipeline`` package.

    An installation without it (a wheel, which ships only the package) must pass
    ``queries_dir`` explicitly.
    """
    candidate = Path(__file__).resolve().parent.parent / "queries"
    if not candidate.is_dir():
        raise ViewBuildError(
            candidate,
            "the SQL view folder is missing (it ships with the source tree, not with the "
            "package); pass queries_dir= pointing at a copy of the repository's queries/",
        )
    return candidate


def parse_grain(path: Path, sql: str) -> tuple[str, tuple[str, ...]]:
    """The grain text and grain columns stated by the first line of a view file.

    >>> parse_grain(Path("x.sql"), "-- grain: one row per (model, category)\\nselect 1")
    ('one row per (model, category)', ('model', 'category'))
    """
    first_line = sql.split("\n", 1)[0].strip()
    match = _GRAIN.fullmatch(first_line)
    if match is None:
        raise ViewBuildError(
            path,
            "the first line must state the grain: '-- grain: one row per COLUMN' or "
            "'-- grain: one row per (COLUMN, COLUMN, ...)'",
        )
    if match["column"] is not None:
        columns: tuple[str, ...] = (match["column"],)
    else:
        columns = tuple(c.strip() for c in match["columns"].split(","))
        if not all(_VIEW_NAME.fullmatch(c) for c in columns):
            raise ViewBuildError(path, f"malformed grain column list: {match['columns']!r}")
    return match["grain"], columns


def load_views(queries_dir: Path, extra: Sequence[MetricSpec] = ()) -> tuple[ViewDef, ...]:
    """Every ``*.sql`` file of ``queries_dir`` as a :class:`ViewDef`, in build order; the
    ``-- registry:`` blocks list the registered metrics, then ``extra`` (user-defined ones)."""
    paths = sorted(Path(queries_dir).glob("*.sql"))
    if not paths:
        raise ViewBuildError(Path(queries_dir), "no .sql view files found")
    for path in paths:
        if not _VIEW_NAME.fullmatch(path.stem):
            raise ViewBuildError(
                path, "a view file name must be lowercase letters, digits and '_'"
            )
    names = {path.stem for path in paths}
    views = []
    for path in paths:
        sql = path.read_text(encoding="utf-8")
        grain, grain_columns = parse_grain(path, sql)
        code = _COLUMN_NAMES.sub(" ", _SQL_NOISE.sub(" ", sql))
        mentioned = {word.lower() for word in _IDENTIFIER.findall(code)}
        depends_on = tuple(sorted((mentioned & names) - {path.stem}))
        sql = expand_registry_blocks(path, sql, extra)
        views.append(ViewDef(path.stem, path, sql, grain, grain_columns, depends_on))
    return _dependency_order(views)


def duckdb_type(dtype: pl.DataType) -> str:
    """The DuckDB type of a metric's polars dtype.

    >>> duckdb_type(pl.Int8()), duckdb_type(pl.List(pl.String()))
    ('tinyint', 'varchar[]')
    """
    if isinstance(dtype, pl.List):
        inner = dtype.inner
        return duckdb_type(inner() if isinstance(inner, type) else inner) + "[]"
    try:
        return _DUCKDB_TYPES[dtype.base_type()]
    except KeyError:
        raise ValueError(f"no DuckDB type for the metric dtype {dtype}") from None


def contract_metrics(extra: Sequence[MetricSpec] = ()) -> tuple[MetricSpec, ...]:
    """Every registered metric, in registry order, then ``extra`` (the user-defined metrics of
    the directory): the metric columns of ``scores``."""
    return (*registry.REGISTRY.values(), *extra)


def slice_metrics(sql: str, extra: Sequence[MetricSpec] = ()) -> tuple[MetricSpec, ...]:
    """Metrics the slice view ``sql`` aggregates from the registry, in registry order, then
    ``extra``.

    Those whose kind aggregates (a score or flag by its mean, a count by its sum) and that the
    file does not read by hand, as a qualified column (``sr.answer_em``).
    """
    by_hand = set(_QUALIFIED.findall(_SQL_NOISE.sub(" ", sql)))
    return tuple(
        spec for spec in contract_metrics(extra)
        if spec.aggregate is not None and spec.name not in by_hand
    )


#: Headline columns that only count rows or flag a problem: explained under the table.
HEADLINE_NOTES: dict[str, str] = {
    "n_unanswerable": "n_unanswerable: questions whose reference is an abstention or that have "
                      "no gold answer; abstention_accuracy is the share of them the model declined",
    "empty_response_rate": "empty_response_rate: share of empty responses (faithfulness 0.0 on "
                           "answerable questions)",
    "n_grounding": "n_grounding: rows with passages, which faithfulness and overlap average over "
                   "(shown when some rows have none)",
    "n_no_passages": "n_no_passages: rows without any passage: grounding does not apply to them "
                     "(null, not 0)",
    "n_idk_with_citation": "n_idk_with_citation, idk_check: answers that say they do not know yet "
                           "cite a passage [n], a contradiction: it should be 0",
}


def headline_columns(headline: pl.DataFrame) -> list[str]:
    """The columns of the ``headline`` view worth showing, in its order (most important first):
    those that hold a value, without ``signature``; ``n_grounding`` only where it differs from
    ``n`` (some rows have no passages), ``n_no_passages`` only when not 0. The terminal and the
    report show these (the terminal as many as its width holds).

    >>> headline_columns(pl.DataFrame({"model": ["a"], "n": [3], "answer_f1": [0.5],
    ...     "overlap": [None], "n_grounding": [3], "n_no_passages": [0], "signature": ["s"]}))
    ['model', 'n', 'answer_f1']
    """
    if headline.height == 0:
        return [c for c in headline.columns if c != "signature"]
    shown = []
    for column in headline.columns:
        values = headline[column]
        if column == "signature" or (column != "model" and values.null_count() == len(values)):
            continue
        if column == "n_grounding" and "n" in headline.columns and (
            (values == headline["n"]).all() or ("overlap" in headline.columns
            and headline["overlap"].null_count() == headline.height)
        ):
            continue
        if column == "n_no_passages" and (values.fill_null(0) == 0).all():
            continue
        shown.append(column)
    return shown


def user_metrics_of(out_dir: Path) -> tuple[MetricSpec, ...]:
    """The metrics of an output directory beyond the registry: user-defined ones (the columns
    of its scores that no registered metric has) and retrieval measures at the cut-offs its
    config chose (``[retrieval] k``); of a results store, those its runs' manifests define."""
    if not is_store(out_dir):
        scores = out_dir / SCORES_FILE
        if not scores.is_file():
            return ()
        schema = pl.read_parquet_schema(scores)
        signatures: list[str] = []
        if "signature" in schema:  # one row's signature: the kinds and directions it declares
            first = pl.scan_parquet(scores).select("signature").head(1).collect()
            signatures = [s for s in first["signature"].to_list() if s]
        catalog = scores_catalog(schema, signatures)
        return tuple(spec for spec in catalog.values()
                     if spec.family == USER_FAMILY or spec.name not in registry.REGISTRY)
    specs: dict[str, MetricSpec] = {}
    for manifest in store_runs(out_dir).committed:  # damaged runs are left out (and warned)
        config = manifest.get("config")
        if not isinstance(config, dict):
            continue
        for k in config.get("retrieval_k") or ():
            for spec in retrieval_specs.at_k_specs([k]) if isinstance(k, int) else ():
                if spec.name not in registry.REGISTRY:
                    specs[spec.name] = spec
        for entry in config.get("user_metrics") or ():
            if isinstance(entry, dict) and entry.get("kind") in KIND_DTYPES:
                specs[entry["name"]] = declared_spec(
                    entry["name"], entry["kind"], entry.get("higher_is_better"),
                    entry.get("description") or "",
                )
    return tuple(specs.values())


def _registry_lines(path: Path, sql: str, block: str, alias: str | None,
                    extra: Sequence[MetricSpec]) -> list[str]:
    """The lines of one ``-- registry:`` block (each ends with a comma)."""
    if block == "contract":
        specs = contract_metrics(extra)
    elif block in ("slice_aggregates", "slice_columns"):
        specs = slice_metrics(sql, extra)
        if alias is None:
            raise ViewBuildError(path, f"'-- registry: {block}(ALIAS)' needs the table alias")
    else:
        raise ViewBuildError(
            path, f"unknown registry block {block!r} (contract, slice_aggregates, slice_columns)"
        )
    written = {name.lower() for name in _ALIASES.findall(_SQL_NOISE.sub(" ", sql))}
    for spec in specs:
        if not _VIEW_NAME.fullmatch(spec.name):
            raise ViewBuildError(path, f"metric {spec.name!r} is not a plain SQL column name")
        if spec.name in written:
            raise ViewBuildError(
                path, f"metric {spec.name!r} clashes with a column the file writes by hand"
            )
    if block == "contract":
        try:
            return [f"cast(null as {duckdb_type(s.dtype)}) as {s.name}," for s in specs]
        except ValueError as exc:
            raise ViewBuildError(path, str(exc)) from exc
    if block == "slice_columns":
        return [f"{alias}.{s.name}," for s in specs]
    return [
        f"avg({alias}.{s.name}) as {s.name}," if s.aggregate == "mean"
        else f"cast(sum({alias}.{s.name}) as bigint) as {s.name},"
        for s in specs
    ]


def expand_registry_blocks(path: Path, sql: str, extra: Sequence[MetricSpec] = ()) -> str:
    """``sql`` with the lines generated from the registry after each ``-- registry:`` line.

    Generated lines take the marker's indentation and end with a comma, so the marker stands
    before a column written by hand. A file without markers is returned unchanged.

    >>> sql = "select\\n    -- registry: slice_columns(t)\\n    t.signature\\nfrom t"
    >>> print(expand_registry_blocks(Path("v.sql"), sql).splitlines()[2])
        t.answer_em,
    """
    def expand(match: re.Match[str]) -> str:
        lines = _registry_lines(path, sql, match["block"], match["alias"], extra)
        return "\n".join([match[0], *(match["indent"] + line for line in lines)])

    return _REGISTRY_BLOCK.sub(expand, sql)


def _dependency_order(views: Sequence[ViewDef]) -> tuple[ViewDef, ...]:
    """Views sorted so each comes after those it depends on (ties by name)."""
    pending = {view.name: view for view in views}
    built: set[str] = set()
    ordered: list[ViewDef] = []
    while pending:
        ready = sorted(name for name, v in pending.items() if built.issuperset(v.depends_on))
        if not ready:
            stuck = sorted(pending)
            raise ViewBuildError(
                pending[stuck[0]].path,
                "circular references among views: " + ", ".join(f"{n}.sql" for n in stuck),
            )
        for name in ready:
            ordered.append(pending.pop(name))
            built.add(name)
    return tuple(ordered)


def build_views(
    out_dir: str | Path, queries_dir: str | Path | None = None, *,
    statistics: Callable[[], object] | None = None,
) -> Path:
    """Create ``out_dir/eval.duckdb`` with one view per SQL file; return its path.

    ``statistics``, when given, writes the statistics files (:data:`OPTIONAL_FILES`) while the
    views that do not read them are created (a run overlaps the two, each on its own core);
    the views that read them, directly or through another view, are created once it returns.

    ``queries_dir`` defaults to :func:`default_queries_dir`. The database is built in a
    temporary file and renamed over the old one only when every view has built, so a failure
    leaves the previous database untouched.
    """
    return build_and_answer(out_dir, {}, queries_dir, statistics=statistics)[0]


def build_and_answer(
    out_dir: str | Path, queries: Mapping[str, str], queries_dir: str | Path | None = None, *,
    statistics: Callable[[], object] | None = None,
) -> tuple[Path, dict[str, pl.DataFrame]]:
    """:func:`build_views`, and the results of trusted ``queries`` (name -> SQL) over the new
    views, keyed like ``queries``: a query that reads no statistics runs while ``statistics``
    are written, on the connection that builds the views (the same views, the same results as
    :func:`query_views` afterwards). A query that fails raises an
    :class:`~pipeline.schema.InputError` naming it once the database is in place.

    The database of an output directory is copied from a template when an earlier build bound
    the same views over files of the same schemas (:mod:`pipeline.view_templates`)."""
    out_dir = Path(out_dir).resolve()
    require_outputs(out_dir)
    views = load_views(Path(queries_dir) if queries_dir is not None else default_queries_dir(),
                       user_metrics_of(out_dir))
    target = out_dir / DB_FILE
    root = None if is_store(out_dir) else view_templates_dir()
    with atomic_path(target) as tmp:
        try:
            answers, failed = _build(tmp, out_dir, views, _once(statistics), queries,
                                     None if root is None else TemplateShelf(root))
        finally:
            Path(f"{tmp}.wal").unlink(missing_ok=True)
    log.info("built %d views in %s", len(views), target)
    if failed:  # the database is in place; the query is the caller's
        name, error = next(iter(failed.items()))
        raise InputError(f"query {name!r} over the views of {out_dir} failed: {error}")
    return target, answers


_Answers = tuple[dict[str, pl.DataFrame], dict[str, duckdb.Error]]


def _once(statistics: Callable[[], object] | None) -> Callable[[], object] | None:
    """``statistics`` run at most once: a build that falls back to binding after a template
    has already written them does not write them again."""
    if statistics is None:
        return None
    done: list[object] = []

    def run() -> object:
        if not done:
            done.append(statistics())
        return done[0]

    return run


def _new_database(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_COMPATIBILITY})
    # Each view's binding reads the footers of the same files: read once.
    con.execute("set parquet_metadata_cache = true")
    return con


def _build(tmp: Path, out_dir: Path, views: Sequence[ViewDef],
           statistics: Callable[[], object] | None, queries: Mapping[str, str],
           shelf: TemplateShelf | None) -> _Answers:
    """The database at ``tmp``, and the answers to ``queries``: from a template of ``shelf``
    whose key is this build's, else by binding every view (then kept on ``shelf``)."""
    if shelf is None:
        return _bind(tmp, out_dir, views, statistics, queries)
    macros = {DATA_DIR_MACRO: _literal(out_dir.as_posix()), **_source_macros(out_dir)}
    early = {name: body for name, body in macros.items()
             if statistics is None or name not in OPTIONAL_FILES}
    key = template_key(((view.name, view.sql, view.grain) for view in views),
                       _key_parts(out_dir, early), STORAGE_COMPATIBILITY)
    template = shelf.find(key)
    if template is not None and shelf.take(template, tmp):
        con = _open_template(tmp, early)
        if con is None:
            log.warning("view template %s failed to open; binding the views", template.path)
            shelf.discard(template)
        else:
            built = _from_template(con, out_dir, views, statistics, queries, template.late)
            if built is not None:
                log.debug("views copied from the template %s", template.path)
                return built
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    built = _bind(tmp, out_dir, views, statistics, queries)
    late = NO_LATE if statistics is None else _late(out_dir, _statistics_macros(out_dir))
    shelf.keep(key, late, tmp)
    return built


def _key_parts(out_dir: Path, macros: Mapping[str, str]) -> list[str]:
    """:func:`~pipeline.view_templates.macro_parts` of ``macros`` over ``out_dir``."""
    files = {"scores_file": out_dir / SCORES_FILE, "rejected_file": out_dir / REJECTED_FILE,
             "texts_file": out_dir / TEXTS_FILE,
             **{macro: out_dir / name for macro, name in OPTIONAL_FILES.items()}}
    return macro_parts(macros, files, out_dir, _sql_text(out_dir.as_posix()))


def _statistics_macros(out_dir: Path) -> dict[str, str]:
    """The macros of the statistics files as they are now (written)."""
    return {name: body for name, body in _source_macros(out_dir).items()
            if name in OPTIONAL_FILES}


def _late(out_dir: Path, macros: Mapping[str, str]) -> str:
    """The late part of the key: the statistics ``macros`` over ``out_dir`` and their files."""
    return late_key(_key_parts(out_dir, macros))


def _bind(tmp: Path, out_dir: Path, views: Sequence[ViewDef],
          statistics: Callable[[], object] | None, queries: Mapping[str, str]) -> _Answers:
    con = _new_database(tmp)
    try:
        return _create_views(con, out_dir, views, statistics, queries)
    finally:
        con.close()


def _open_template(tmp: Path, early: Mapping[str, str]) -> duckdb.DuckDBPyConnection | None:
    """The template copied to ``tmp``, its ``early`` macros replaced by this directory's; None
    when it is not a database this DuckDB reads."""
    try:
        con = _new_database(tmp)
    except duckdb.Error:
        return None
    try:
        _replace_macros(con, early)
    except duckdb.Error:
        con.close()
        return None
    return con


def _from_template(con: duckdb.DuckDBPyConnection, out_dir: Path, views: Sequence[ViewDef],
                   statistics: Callable[[], object] | None, queries: Mapping[str, str],
                   late: str) -> _Answers | None:
    """Answer ``queries`` on ``con`` (:func:`_open_template`) as :func:`_create_views` does,
    the statistics macros pointed at ``out_dir`` once ``statistics`` are written; closes
    ``con``. None when the statistics files do not have the schemas of the template's
    (``late``)."""
    answers: dict[str, pl.DataFrame] = {}
    failed: dict[str, duckdb.Error] = {}
    try:
        if statistics is not None:
            with ThreadPoolExecutor(1, thread_name_prefix="rag-eval-statistics") as pool:
                written = pool.submit(statistics)
                _answer(con, queries, _not_reading(queries, _reading_statistics(views)),
                        answers, failed)
                written.result()
            written_macros = _statistics_macros(out_dir)
            if _late(out_dir, written_macros) != late:
                log.debug("statistics files unlike the template's; binding the views")
                return None
            _replace_macros(con, written_macros)
        _answer(con, queries, [name for name in queries if name not in answers], answers, failed)
    finally:
        con.close()
    return {name: answers[name] for name in queries if name in answers}, failed


def _replace_macros(con: duckdb.DuckDBPyConnection, macros: Mapping[str, str]) -> None:
    con.execute("begin transaction")
    for name, body in macros.items():
        con.execute(_macro_statement(name, body, replace=True))
    con.execute("commit")


def _macro_statement(name: str, body: str, *, replace: bool = False) -> str:
    """``create macro`` of a scalar (:data:`DATA_DIR_MACRO`) or table macro."""
    verb = "create or replace macro" if replace else "create macro"
    kind = "" if name == DATA_DIR_MACRO else "table "
    return f"{verb} {name}() as {kind}{body}"


def _not_reading(queries: Mapping[str, str], late: set[str]) -> list[str]:
    """Names of the ``queries`` that read none of the views ``late``."""
    return [name for name, sql in queries.items()
            if not late.intersection(_IDENTIFIER.findall(_SQL_NOISE.sub(" ", sql).lower()))]


def _answer(con: duckdb.DuckDBPyConnection, queries: Mapping[str, str], names: Iterable[str],
            answers: dict[str, pl.DataFrame], failed: dict[str, duckdb.Error]) -> None:
    """Run ``queries`` ``names`` on a cursor of ``con`` (a transaction of its own): each
    result into ``answers``, each error into ``failed``."""
    cursor = con.cursor()
    try:
        for name in names:
            try:
                answers[name] = cursor.sql(queries[name]).pl()
                failed.pop(name, None)
            except duckdb.Error as exc:
                failed[name] = exc
    finally:
        cursor.close()


def _create_views(
    con: duckdb.DuckDBPyConnection, out_dir: Path, views: Sequence[ViewDef],
    statistics: Callable[[], object] | None = None, queries: Mapping[str, str] | None = None,
) -> _Answers:
    """Create the macros and ``views`` on ``con`` and commit them; the results of ``queries``
    and the errors of those that failed.

    One transaction, not one commit per statement (0.1 s of 0.45 s); two with ``statistics``:
    the views that do not read them are committed first, so ``queries`` that read none of the
    others run on a cursor (a transaction of its own, which sees them) while the statistics
    are written."""
    queries = queries or {}
    answers: dict[str, pl.DataFrame] = {}
    failed: dict[str, duckdb.Error] = {}
    con.execute("begin transaction")
    con.execute(_macro_statement(DATA_DIR_MACRO, _literal(out_dir.as_posix())))
    runs = None
    if is_store(out_dir):
        state = store_state(out_dir)  # before the runs are read: a change meanwhile shows later
        runs = _readable_runs(out_dir)
        con.execute(f"create macro {STATE_MACRO}() as {_literal(state)}")
        con.execute(f"create macro {DAMAGED_MACRO}() as {_literal(json.dumps(runs.damaged))}")
    late = _reading_statistics(views) if statistics is not None else set()
    with ThreadPoolExecutor(1, thread_name_prefix="rag-eval-statistics") as pool:
        written = pool.submit(statistics) if statistics is not None else None
        for macro, body in _source_macros(out_dir, runs).items():
            if written is None or macro not in OPTIONAL_FILES:
                con.execute(_macro_statement(macro, body))
        for view in views:
            if view.name not in late:
                _create_view(con, view)
                if view.name == SCORES_VIEW and runs is None:
                    _as_projection(con, view)
        if written is not None:  # leaving the block waits for the statistics
            con.execute("commit")
            _answer(con, queries, _not_reading(queries, late), answers, failed)
            written.result()
            con.execute("begin transaction")
    if written is not None:
        for macro, body in _source_macros(out_dir, runs).items():  # the files exist now
            if macro in OPTIONAL_FILES:
                con.execute(_macro_statement(macro, body))
        for view in views:
            if view.name in late:
                _create_view(con, view)
    _check_grains(con, views)
    con.execute("commit")
    _answer(con, queries, [name for name in queries if name not in answers], answers, failed)
    return {name: answers[name] for name in queries if name in answers}, failed


def _check_grains(con: duckdb.DuckDBPyConnection, views: Sequence[ViewDef]) -> None:
    """Each view's grain columns are columns of it (a :class:`ViewBuildError` names the file)."""
    # The columns DuckDB recorded when it bound each view: one catalog query, not a second
    # binding per view.
    columns: dict[str, set[str]] = {}
    for table, column in con.execute(
        "select table_name, column_name from information_schema.columns"
    ).fetchall():
        columns.setdefault(table, set()).add(column)
    for view in views:
        missing = [c for c in view.grain_columns if c not in columns.get(view.name, set())]
        if missing:
            raise ViewBuildError(
                view.path, f"grain column(s) {', '.join(missing)} are not columns of the view"
            )


def _create_view(con: duckdb.DuckDBPyConnection, view: ViewDef) -> None:
    """``create view`` of one file, with its grain as the view's comment."""
    try:
        statements = con.extract_statements(view.sql)
    except duckdb.Error as exc:
        raise ViewBuildError(view.path, f"SQL does not parse: {exc}") from exc
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise ViewBuildError(view.path, "a view file must hold exactly one select statement")
    try:
        con.execute(f'create view "{view.name}" as\n{statements[0].query}\n')
    except duckdb.Error as exc:
        raise ViewBuildError(view.path, f"view {view.name!r} failed to build: {exc}") from exc
    _comment(con, view)
    log.debug("created view %s (%s)", view.name, view.grain)


def _comment(con: duckdb.DuckDBPyConnection, view: ViewDef) -> None:
    con.execute(f'comment on view "{view.name}" is {_literal("grain: " + view.grain)}')


#: The staging view over the scores (``queries/scores.sql``), which the slice views read.
SCORES_VIEW = "scores"


def _as_projection(con: duckdb.DuckDBPyConnection, view: ViewDef) -> None:
    """Create the staging view ``scores`` of an output directory again (just created from
    its file, before any view that reads it) as the projection of ``scores_file()`` it equals
    there: its columns, in its order and types, a typed null for each column of the contract
    that the file lacks.

    The view's file unions the scores by name with a typed contract of every metric, for a
    store, whose runs differ and whose run a query chooses when it runs. An output directory
    has one file, fixed until its views are built again, so the union is bound once, here, not
    again in every view and query that reads the scores: binding the 27 views of the sample
    took 0.58-0.61 CPU-s, 0.35-0.44 s this way (docs/benchmarks.md). The columns bound to are
    kept in the macro :data:`SCORES_COLUMNS_MACRO`: a file with other columns makes the
    database stale (:func:`pipeline.query.open_views` builds it again). Where the file's columns
    are not unique names, the view stays as its file wrote it.
    """
    columns = con.execute(f"describe {sql_identifier(view.name)}").fetchall()
    bound = scores_columns(con)
    read = json.loads(bound)
    source = {name: kind for name, kind in read}
    if len(source) != len(read):
        return

    def item(name: str, kind: str) -> str:
        column = sql_identifier(name)
        if name not in source:
            return f"cast(null as {kind}) as {column}"
        return column if source[name] == kind else f"cast({column} as {kind}) as {column}"

    items = ",\n    ".join(item(name, kind) for name, kind, *_ in columns)
    con.execute(f"create or replace view {sql_identifier(view.name)} as\n"
                f"select\n    {items}\nfrom scores_file()\n")
    _comment(con, view)
    con.execute(f"create macro {SCORES_COLUMNS_MACRO}() as {_literal(bound)}")


#: A call of a statistics file's macro in a view's SQL.
_STATISTICS_MACRO = re.compile(r"\b(?:" + "|".join(OPTIONAL_FILES) + r")\s*\(")


def _reading_statistics(views: Sequence[ViewDef]) -> set[str]:
    """Names of the views that read a statistics file, directly or through other views
    (``views`` in dependency order)."""
    late: set[str] = set()
    for view in views:
        if _STATISTICS_MACRO.search(view.sql) or late.intersection(view.depends_on):
            late.add(view.name)
    return late


def _source_macros(out_dir: Path, runs: StoreRuns | None = None) -> dict[str, str]:
    """Table macros the staging views read: files of one output directory or of a store.

    Every macro adds ``eval_run`` (null for a plain output directory). In a store the macros
    read the run chosen by the session variable ``eval_run`` (``SET VARIABLE eval_run =
    'RUN'``), every committed run when it is ``'all'``, and the latest committed run when it is
    unset. The runs are those :func:`store_runs` finds readable when the views are built, named
    one by one: a query opens the files of the runs it selects and no others, so a damaged run
    never stops a query of another; a damaged run is left out (with a warning naming it), and
    choosing it, or a run id the store does not have, fails with a message that says so.
    """
    empty = "select cast(null as varchar) as metric, cast(null as varchar) as eval_run where false"
    if not is_store(out_dir):
        macros = {
            "manifests_file": "select * from (select cast(null as varchar) as run_id) where false",
            "scores_file": _flat(out_dir / SCORES_FILE),
            "rejected_file": _flat(out_dir / REJECTED_FILE),
            "texts_file": _flat(out_dir / TEXTS_FILE) if (out_dir / TEXTS_FILE).is_file()
            else empty,
        }
        mixed = check_stats_pair(out_dir)  # halves of two statistics runs: read neither
        if mixed:
            log.warning("%s: statistics left out of the views: %s", out_dir, mixed)
        for macro, name in OPTIONAL_FILES.items():
            path = out_dir / name
            macros[macro] = _flat(path) if path.is_file() and not mixed else empty
        return macros
    runs = runs or _readable_runs(out_dir)
    latest = runs.latest()
    assert latest is not None  # _readable_runs raises without one
    ids = runs.ids
    root = out_dir.as_posix()
    chosen = f"coalesce(getvariable('{_RUN}'), {_literal(latest['run_id'])})"
    known = _literal(f"; runs: {', '.join(ids)}, or 'all'")
    unknown = (
        f"error('run ' || {chosen} || ' is not a committed run of {_sql_text(root)}' || {known})"
    )

    def files(run_ids: Sequence[str], pattern: str) -> str:
        return "[" + ", ".join(_literal(f"{root}/{_RUN}={r}/{pattern}") for r in run_ids) + "]"

    def hive(run_ids: Sequence[str], pattern: str) -> str:
        return (
            f"select * from read_parquet({files(run_ids, pattern)}, hive_partitioning = true, "
            f"union_by_name = true, hive_types = {{'{_RUN}': varchar}})"
        )

    def pick(sql_of: Any) -> str:
        """``query()`` of the SQL for the chosen runs (one constant, folded when bound)."""
        whens = [f"when 'all' then {_literal(sql_of(ids))}"]
        whens += [f"when {_literal(r)} then {_literal(sql_of((r,)))}" for r in ids]
        whens += [
            f"when {_literal(r)} then error({_literal(f'run {r} of {root} is damaged: {why}')})"
            for r, why in runs.damaged.items()
        ]
        return f"select * from query(case {chosen} {' '.join(whens)} else {unknown} end)"

    def optional(name: str) -> Any:
        def sql_of(run_ids: Sequence[str]) -> str:
            having = [r for r in run_ids if (out_dir / f"{_RUN}={r}" / name).is_file()]
            return hive(having, name) if having else empty
        return sql_of

    def texts(run_ids: Sequence[str]) -> str:
        having = [r for r in run_ids
                  if any((out_dir / f"{_RUN}={r}" / TEXTS_DIR).glob("*.parquet"))]
        return hive(having, f"{TEXTS_DIR}/*.parquet") if having else empty

    manifests = "[" + ", ".join(
        _literal(f"{root}/{_RUN}={r}/{_MANIFEST}") for r in ids
    ) + "]"
    macros = {
        "manifests_file": (
            "select * exclude (counts), counts.read as n_read, counts.scored as n_scored, "
            "counts.reused as n_reused, counts.rejected as n_rejected "
            f"from read_json({manifests}, columns = {_MANIFEST_COLUMNS})"
        ),
        "scores_file": pick(
            lambda run_ids: partitions_sql(files(run_ids, f"{SCORES_DIR}/{MODEL_PARTITION}=*/"
                                                          "*.parquet"))
        ),
        "rejected_file": pick(lambda run_ids: hive(run_ids, f"{REJECTED_DIR}/*.parquet")),
        "texts_file": pick(texts),
    }
    for macro, name in OPTIONAL_FILES.items():
        macros[macro] = pick(optional(name))
    return macros


def _readable_runs(root: Path) -> StoreRuns:
    """:func:`store_runs` with every file checked; a warning names each damaged run, and a
    store with no readable run is an :class:`~pipeline.schema.InputError`."""
    runs = store_runs(root, check_files=True)
    for run, why in runs.damaged.items():
        log.warning("run %s of %s is damaged and left out of the views: %s", run, root, why)
    if not runs.committed:
        raise InputError(f"{root}: no committed run can be read (damaged: "
                         + "; ".join(f"{r}: {why}" for r, why in runs.damaged.items()) + ")")
    return runs


def _sql_text(text: str) -> str:
    """``text`` for the inside of a SQL string literal."""
    return text.replace("'", "''")


def _flat(path: Path) -> str:
    source = _literal(path.as_posix())
    return f"select *, cast(null as varchar) as eval_run from read_parquet({source})"


def _literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return sql_literal(text)




def _create_all(con: duckdb.DuckDBPyConnection, out_dir: Path) -> None:
    """Every view of :func:`default_queries_dir` on ``con``, over ``out_dir`` (resolved)."""
    _create_views(con, out_dir, load_views(default_queries_dir(), user_metrics_of(out_dir)))


#: The views of :func:`default_queries_dir`, as :mod:`pipeline.query` builds them on demand.
BUILDER = Builder(build=build_views, create=_create_all)


def builder() -> Builder:
    """:data:`BUILDER` (the :data:`~pipeline.query.BuilderSource` of this module)."""
    return BUILDER


def connect(out_dir: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to ``out_dir/eval.duckdb``, for trusted code; close it when done.

    Builds the database first when it is missing or was built for another directory (the
    output directory was moved or copied) or, in a store, for other runs, so its views always
    read ``out_dir``'s files; when the file cannot be written, the views are built in memory.
    The connection can still read and write files anywhere (``COPY``, ``ATTACH`` another run):
    SQL that a person types goes through :func:`run_query`, which uses
    :func:`connect_restricted`.
    """
    out_dir = Path(out_dir).resolve()
    return open_views(out_dir, builder,
                      damaged=check_run(out_dir, None) if is_store(out_dir) else None)


#: Queries :func:`query_views` runs at once (each binds and plans on one core; DuckDB releases
#: the GIL while it works).
QUERY_THREADS = 2


def query_views(out_dir: str | Path, queries: Mapping[str, str]) -> dict[str, pl.DataFrame]:
    """The results of trusted ``queries`` (name -> SQL) over the views of ``out_dir``, keyed
    like ``queries``: one read-only connection whose cursors run :data:`QUERY_THREADS` queries
    at a time (a view over many columns takes tens of milliseconds to bind and plan, however
    few its rows). Not for SQL a person typed (see :func:`run_query`)."""
    sqls = list(queries.values())
    n = max(1, min(QUERY_THREADS, len(sqls)))
    con = connect(out_dir)
    try:
        cursors = [con.cursor() for _ in range(n)]

        def share(k: int) -> list[pl.DataFrame]:  # queries k, k + n, ... on cursor k
            return [cursors[k].sql(sql).pl() for sql in sqls[k::n]]

        with ThreadPoolExecutor(n, thread_name_prefix="rag-eval-query") as pool:
            parts = list(pool.map(share, range(n)))
        frames: list[pl.DataFrame] = [pl.DataFrame()] * len(sqls)
        for k, part in enumerate(parts):
            frames[k::n] = part
        for cursor in cursors:
            cursor.close()
    finally:
        con.close()
    return dict(zip(queries, frames, strict=True))


def connect_restricted(out_dir: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to ``out_dir/eval.duckdb`` that reads only the files of ``out_dir``
    (:func:`pipeline.query.restricted` states DuckDB's settings that make it so)."""
    out_dir = Path(out_dir).resolve()
    return restricted(out_dir, builder, check_run(out_dir, None) if is_store(out_dir) else None)


def run_query(out_dir: str | Path, sql: str, run: str | None = None) -> pl.DataFrame:
    """:func:`pipeline.query.run_query` with this module's views: the result of one statement
    ``sql`` against the views of ``out_dir``, read-only and restricted to the files of
    ``out_dir`` (``run``: the store run the views read; ``docs/query-security.md``)."""
    return _run_query(out_dir, sql, run, builder=builder)
