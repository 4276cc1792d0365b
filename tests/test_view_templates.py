"""View templates (pipeline/view_templates.py): a database copied from a template is the one
binding every view would have built, and every way a template can be wrong ends in a bound
build, never in wrong views."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.api import evaluate
from pipeline.config import VIEW_TEMPLATES_ENV
from pipeline.io.atomic import TMP_PREFIX
from pipeline.view_templates import MAX_TEMPLATES, NO_LATE, TemplateShelf
from pipeline.views import DB_FILE, ViewBuildError, build_views, default_queries_dir

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "records.parquet"
FAST = {"metrics": ["answer_em", "answer_f1"], "resamples": 20}
COPIED = "views copied from the template"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 rows of the sample, as a file: every run reads the same ``source``."""
    path = tmp_path_factory.mktemp("records") / "records.parquet"
    pl.read_parquet(SAMPLE).head(40).write_parquet(path)
    return path


@pytest.fixture
def shelf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own; the templates' folder inside it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(VIEW_TEMPLATES_ENV, raising=False)
    return tmp_path / "cache" / "rag-eval" / "views"


def templates(root: Path) -> list[Path]:
    return sorted(root.glob("*.duckdb")) if root.is_dir() else []


#: Views that read the files, and two that read the statistics through them.
READERS = ("scores", "rejected", "stored_texts", "texts", "intervals", "model_comparison",
           "headline_ci")


def catalog(out: Path, names: tuple[str, ...] | None = None) -> dict[str, object]:
    """Every view's comment, column names and types, and rows (sorted), and the directory the
    database reads (the views ``names``, or all). Not the SQL DuckDB writes back: it lists
    ``exclude`` columns in no fixed order, bound or copied."""
    con = duckdb.connect(str(out / DB_FILE), read_only=True)
    try:
        views = con.sql("select view_name, comment from duckdb_views() where not internal "
                        "order by view_name").fetchall()
        found: dict[str, object] = {"views": views}
        for name, _ in views:
            if names is not None and name not in names:
                continue
            found[f"{name} columns"] = con.sql(f'describe "{name}"').fetchall()
            found[f"{name} rows"] = sorted(map(repr, con.sql(f'select * from "{name}"').fetchall()))
        found["data dir"] = con.sql("select eval_data_dir()").fetchall()[0]
    finally:
        con.close()
    return found


def run(out: Path, caplog: pytest.LogCaptureFixture, records: Path, **options: object) -> bool:
    """Evaluate ``records`` into ``out``; whether the views came from a template."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="pipeline.views"):
        evaluate(records, out, **{**FAST, **options})
    return any(COPIED in message for message in caplog.messages)


def test_a_copied_template_is_the_database_binding_builds(
    tmp_path: Path, shelf: Path, caplog: pytest.LogCaptureFixture, records: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VIEW_TEMPLATES_ENV, "0")
    assert not run(tmp_path / "bound", caplog, records)
    assert templates(shelf) == []  # turned off: none read, none kept
    monkeypatch.delenv(VIEW_TEMPLATES_ENV)

    assert not run(tmp_path / "first", caplog, records)  # none yet: bound, then kept
    [kept] = templates(shelf)
    assert run(tmp_path / "second", caplog, records)  # another directory, the same key
    assert templates(shelf) == [kept]

    bound, copied = catalog(tmp_path / "bound"), catalog(tmp_path / "second")
    assert copied["data dir"] == (str((tmp_path / "second").resolve()),)
    assert bound.pop("data dir") != copied.pop("data dir")
    assert copied == bound
    # Every view reads this directory's files, not the template's: removing the first run's
    # files changes nothing.
    for path in (tmp_path / "first").iterdir():
        path.unlink()
    assert catalog(tmp_path / "second", READERS) == catalog(tmp_path / "bound", READERS) | {
        "data dir": (str(tmp_path / "second"),)}


def test_other_files_or_metrics_are_another_template(
    tmp_path: Path, shelf: Path, caplog: pytest.LogCaptureFixture, records: Path,
) -> None:
    assert not run(tmp_path / "a", caplog, records)
    assert not run(tmp_path / "b", caplog, records, metrics=["answer_em"])
    assert not run(tmp_path / "c", caplog, records, stats=False)
    assert len(templates(shelf)) == 3
    assert run(tmp_path / "d", caplog, records, stats=False)
    assert catalog(tmp_path / "d", READERS) == {**catalog(tmp_path / "c", READERS),
                                       "data dir": (str(tmp_path / "d"),)}


def test_statistics_unlike_the_templates_bind_the_views(
    tmp_path: Path, shelf: Path, caplog: pytest.LogCaptureFixture, records: Path,
) -> None:
    run(tmp_path / "first", caplog, records)
    [kept] = templates(shelf)
    key, late = kept.stem.split("-")
    kept.rename(kept.with_name(f"{key}-{'0' * len(late)}.duckdb"))  # as if other statistics

    assert not run(tmp_path / "second", caplog, records)
    assert [path.name for path in templates(shelf)] == sorted([f"{key}-{'0' * len(late)}.duckdb",
                                                               kept.name])
    assert catalog(tmp_path / "second", READERS) == {**catalog(tmp_path / "first", READERS),
                                            "data dir": (str(tmp_path / "second"),)}


def test_an_unreadable_template_is_removed_and_the_views_bound(
    tmp_path: Path, shelf: Path, caplog: pytest.LogCaptureFixture, records: Path,
) -> None:
    run(tmp_path / "first", caplog, records)
    [kept] = templates(shelf)
    kept.write_bytes(b"not a database" * 100)

    assert not run(tmp_path / "second", caplog, records)
    assert any("failed" in message and str(kept) in message for message in caplog.messages)
    assert templates(shelf) == [kept]  # bound and kept again, whole
    duckdb.connect(str(kept), read_only=True).close()
    assert catalog(tmp_path / "second", READERS) == {**catalog(tmp_path / "first", READERS),
                                            "data dir": (str(tmp_path / "second"),)}
    assert run(tmp_path / "third", caplog, records)


def test_a_view_that_fails_to_bind_fails_every_time_and_is_never_kept(
    tmp_path: Path, shelf: Path, caplog: pytest.LogCaptureFixture, records: Path,
) -> None:
    run(tmp_path / "out", caplog, records)
    queries = tmp_path / "queries"
    queries.mkdir()
    for path in default_queries_dir().glob("*.sql"):
        (queries / path.name).write_text(path.read_text())
    (queries / "broken.sql").write_text(
        "-- grain: one row per model\nselect model, no_such_column from scores\n")
    before = templates(shelf)
    for _ in range(2):
        with pytest.raises(ViewBuildError, match=r"broken\.sql.*no_such_column"):
            build_views(tmp_path / "out", queries)
    assert templates(shelf) == before


def test_the_shelf_keeps_the_most_recently_used_and_drops_dead_copies(tmp_path: Path) -> None:
    root = tmp_path / "views"
    shelf = TemplateShelf(root)
    database = tmp_path / "built.duckdb"
    duckdb.connect(str(database)).close()
    for k in range(MAX_TEMPLATES):
        shelf.keep(f"{k:032x}", NO_LATE, database)
        os.utime(root / f"{k:032x}-{NO_LATE}.duckdb", (1000 + k, 1000 + k))
    dead, fresh = root / f"{TMP_PREFIX}dead", root / f"{TMP_PREFIX}fresh"
    dead.write_bytes(b"half a copy")
    fresh.write_bytes(b"a copy being written")
    os.utime(dead, (1, 1))
    used = shelf.find(f"{0:032x}")  # the oldest, taken: now the most recently used
    assert used is not None and used.late == NO_LATE
    assert shelf.take(used, tmp_path / "copy.duckdb")
    shelf.keep("e" * 32, NO_LATE, database)
    shelf.keep("f" * 32, NO_LATE, database)
    names = {path.name for path in root.iterdir()}
    assert len([n for n in names if n.endswith(".duckdb")]) == MAX_TEMPLATES
    assert f"{0:032x}-{NO_LATE}.duckdb" in names  # used last: kept
    assert f"{1:032x}-{NO_LATE}.duckdb" not in names and f"{2:032x}-{NO_LATE}.duckdb" not in names
    assert fresh.name in names and dead.name not in names
    assert shelf.find(f"{1:032x}") is None
