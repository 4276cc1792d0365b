"""User-defined metrics (pipeline.metrics.user, docs/custom-metrics.md): a SQL flag from the
config, a Python expression score and a batch function from a plug-in module, and an installed
package's entry point, each a first-class metric: scores, slice views, intervals, report,
export, the compare gate and store reuse; and every broken definition refused before any row
is scored, with one line.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.compare import Gate, compare
from pipeline.config import Config, ConfigError, UserMetricDef, load_config
from pipeline.drivers import evaluate, evaluate_to_store
from pipeline.export import export_table
from pipeline.metrics.registry import UnknownMetricError
from pipeline.metrics.user import (
    UserMetricError,
    load_plugins,
    resolve,
    scores_catalog,
    sql_metric,
    with_user_metrics,
)
from pipeline.views import query_views

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "records.parquet"
PLUGINS = ROOT / "tests" / "fixtures" / "plugins"
USER = ("has_url", "answer_length_ok", "mentions_reference")

CONFIG = f"""
[metrics]
select = ["answer", "user"]

[metrics.has_url]
sql = "regexp_like(response, 'https?://')"
kind = "flag"
description = "The response contains a URL."

[plugins]
modules = ["{PLUGINS / 'team_metrics.py'}"]
"""


def _config(tmp: Path, text: str = CONFIG) -> Config:
    path = tmp / "rag-eval.toml"
    path.write_text(text, encoding="utf-8")
    return load_plugins(load_config(path, embedding_cache_dir=None))


def _records(tmp: Path, edit: pl.Expr | None = None) -> Path:
    """The sample's first 300 rows (three models), the responses edited by ``edit``."""
    frame = pl.read_parquet(SAMPLE).head(300)
    if edit is not None:
        frame = frame.with_columns(edit.alias("response"))
    path = tmp / f"records-{'edited' if edit is not None else 'plain'}.parquet"
    frame.write_parquet(path)
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("user-metrics")
    with_urls = pl.when(pl.int_range(pl.len()) % 4 == 0).then(
        pl.col("response") + " See https://example.org."
    ).otherwise(pl.col("response"))
    evaluate([_records(tmp, with_urls)], tmp / "out", _config(tmp), resamples=200)
    return tmp / "out"


def test_each_way_in_is_a_column_with_the_declared_values(run: Path) -> None:
    scores = pl.read_parquet(run / "scores.parquet")
    texts = pl.read_parquet(run / "texts.parquet")
    rows = scores.join(texts, on=["source", "row_number"])
    assert {name: scores.schema[name] for name in USER} == {
        "has_url": pl.Int8(), "answer_length_ok": pl.Float64(), "mentions_reference": pl.Int8(),
    }
    assert rows["has_url"].to_list() == (
        rows["response"].str.contains("https://example.org", literal=True).cast(pl.Int8).to_list()
    )
    assert rows["has_url"].sum() == 75
    words = rows["response"].str.split(" ").list.len().cast(pl.Float64)
    expected = (12.0 / words.clip(lower_bound=12.0)).to_list()
    assert rows["answer_length_ok"].to_list() == pytest.approx(expected)
    row = rows.row(0, named=True)
    assert row["mentions_reference"] == int(row["reference"].lower() in row["response"].lower())
    signature = scores["signature"][0]
    assert "|metric.has_url:flag.none.sql-" in signature
    assert "|metric.answer_length_ok:score.up.py-" in signature


def test_slice_views_aggregate_them_by_kind(run: Path) -> None:
    frames = query_views(run, {
        "model": "select model, has_url, answer_length_ok, mentions_reference from by_model "
                 "order by model",
        "rows": "select model, avg(has_url) as has_url from scores group by model order by model",
    })
    assert frames["model"]["has_url"].to_list() == pytest.approx(
        frames["rows"]["has_url"].to_list()
    )
    assert frames["model"]["answer_length_ok"].null_count() == 0


def test_intervals_and_paired_comparisons_cover_them(run: Path) -> None:
    intervals = pl.read_parquet(run / "intervals.parquet")
    comparisons = pl.read_parquet(run / "comparisons.parquet")
    for name in USER:
        assert intervals.filter(pl.col("metric") == name).height > 0, name
        assert comparisons.filter(pl.col("metric") == name).height > 0, name
    flag = intervals.filter((pl.col("metric") == "has_url") & (pl.col("slice") == "all"))
    assert flag["wilson_low"].null_count() == 0  # a flag gets the Wilson interval too


def test_export_and_report_show_them(run: Path, tmp_path: Path) -> None:
    table = export_table(run)
    assert set(USER) <= set(table.columns)
    from pipeline.report import write_report

    html = write_report(run, tmp_path / "report.html").read_text(encoding="utf-8")
    start = html.index('<section id="user-metrics">')
    section = html[start:html.index("</section>", start)]
    for name in USER:
        assert f"<code>{name}</code>" in section, name
    assert "(flag, mean over rows, no better direction)" in section  # has_url, from the signature
    assert "(score, mean over rows, higher is better)" in section  # answer_length_ok
    assert section.count("<tr>") >= 4  # a header and one row per model


def test_the_compare_gate_applies_to_a_user_metric(run: Path, tmp_path: Path) -> None:
    # Run B: the same rows without URLs, so has_url falls from 0.25 to 0 for every model.
    evaluate([_records(tmp_path)], tmp_path / "b", _config(tmp_path), resamples=200)
    result = compare(run, tmp_path / "b", gate=Gate(max_drop={"has_url": 0.05}))
    assert result.failures and all("has_url fell by" in f for f in result.failures)
    assert len(result.failures) == 3
    passed = compare(run, tmp_path / "b", gate=Gate(max_drop={"answer_length_ok": 0.5}))
    assert passed.failures == ()


def test_store_reuses_rows_of_an_unchanged_definition_only(tmp_path: Path) -> None:
    records = _records(tmp_path)
    store = tmp_path / "store"
    first = evaluate_to_store([records], store, _config(tmp_path), stats=False)
    again = evaluate_to_store([records], store, _config(tmp_path), stats=False)
    assert (first.n_scored, again.n_reused, again.n_scored) == (300, 300, 0)
    changed = CONFIG.replace("https?://", "https://")
    third = evaluate_to_store([records], store, _config(tmp_path, changed), stats=False)
    assert (third.n_reused, third.n_scored) == (0, 300)
    views = query_views(store, {"m": "select has_url from by_model"})
    assert views["m"].height == 3


def test_compare_warns_when_a_user_metric_was_defined_differently(
    run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    changed = CONFIG.replace("https?://", "https://")
    evaluate([_records(tmp_path)], tmp_path / "c", _config(tmp_path, changed), resamples=200)
    result = compare(run, tmp_path / "c")
    assert result.version_note is not None
    assert "defined differently in the two runs: has_url (flag.none.sql-" in result.version_note
    assert "defined differently" in caplog.text


def test_an_installed_entry_point_is_available_and_scored_when_selected() -> None:
    config = load_plugins(Config(metrics=("answer_em", "response_words", "digit_share")))
    assert [s.name for s in resolve(config)] == ["answer_em", "response_words", "digit_share"]
    frame = pl.DataFrame({"response": ["a b c", "year 1999"]})
    specs = {s.name: s for s in resolve(config)}
    values = frame.select(
        specs["response_words"].build(None).alias("w"),  # type: ignore[arg-type]
        specs["digit_share"].build(None).alias("d"),  # type: ignore[arg-type]
    )
    assert values["w"].to_list() == [3, 2]
    assert values["d"].to_list() == pytest.approx([0.0, 4 / 9])
    # Installed but not selected: a default run does not change.
    assert load_plugins(Config()).user_metrics == ()


def test_with_user_metrics_takes_names_functions_and_definitions() -> None:
    flag = sql_metric("has_url", "regexp_like(response, 'https?://')", kind="flag")
    config = with_user_metrics(Config(), ["answer_f1", flag])
    assert config.metrics == ("answer_f1", "has_url")
    assert [s.name for s in resolve(config)] == ["answer_f1", "has_url"]
    with pytest.raises(TypeError, match="not int"):
        with_user_metrics(Config(), [3])  # type: ignore[list-item]


def test_scores_catalog_reads_kind_and_direction_from_the_signature() -> None:
    catalog = scores_catalog(
        {"answer_em": pl.Int8(), "cost": pl.Float64(), "id": pl.String()},
        ["rag-eval|v:0.1.0|metric.cost:score.down.sql-00000000"],
    )
    assert (catalog["cost"].kind, catalog["cost"].higher_is_better) == ("score", False)


def _sql(name: str, sql: str, kind: str = "score") -> UserMetricDef:
    return UserMetricDef(name=name, kind=kind, sql=sql)


@pytest.mark.parametrize(("definition", "message"), [
    (_sql("answer_f1", "1.0 * length(response)"), "'answer_f1': the name of a built-in"),
    (_sql("bad", "length(answer)"), "'bad' reads 'answer', which is no record column"),
    (_sql("bad", "regexp_like(response"), "'bad': its SQL does not compile"),
    (_sql("bad", "sum(answer_f1)"), "returns 1 value(s) for 2 rows"),
    (_sql("bad", "upper(response)", kind="flag"), "returns String, which a flag cannot be"),
])
def test_a_broken_definition_is_refused_before_scoring(
    definition: UserMetricDef, message: str
) -> None:
    with pytest.raises(UserMetricError, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolve(Config(user_metrics=(definition,)))


BROKEN_CONFIGS = {
    "built-in name": ('[metrics.answer_f1]\nsql = "1.0"\n', "name of a built-in metric"),
    "unknown column": ('[metrics.x]\nsql = "length(answer)"\n', "reads 'answer'"),
    "no parse": ('[metrics.x]\nsql = "regexp_like(response"\n', "does not compile"),
    "aggregate": ('[metrics.x]\nsql = "count(*)"\n', "value(s) for 2 rows"),
    "dtype": ('[metrics.x]\nsql = "upper(response)"\nkind = "flag"\n', "a flag cannot be"),
    "unknown kind": ('[metrics.x]\nsql = "1"\nkind = "rate"\n', "kind 'rate' is unknown"),
    "unknown key": ('[metrics.x]\nsql = "1"\nkinds = "flag"\n', "did you mean 'kind'"),
    "select typo": ('[metrics]\nsellect = ["answer"]\n', "did you mean 'select'"),
    "plugin import": ('[plugins]\nmodules = ["no_such_plugin_xyz"]\n', "cannot be imported"),
    "plugin raises": (f'[plugins]\nmodules = ["{PLUGINS / "raising.py"}"]\n',
                      "raised while importing: RuntimeError"),
    "not an expression": (f'[plugins]\nmodules = ["{PLUGINS / "returns_list.py"}"]\n',
                          "returned list, not a polars expression"),
    "batch length": (f'[plugins]\nmodules = ["{PLUGINS / "short_batch.py"}"]\n',
                     "returned 1 values for a batch of 2 rows"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_CONFIGS))
def test_a_broken_config_exits_2_with_one_line_and_no_outputs(case: str, tmp_path: Path) -> None:
    text, message = BROKEN_CONFIGS[case]
    config = tmp_path / "broken.toml"
    config.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "evaluate", "--input", str(SAMPLE), "--out",
         str(tmp_path / "out"), "--config", str(config), "--metrics", "answer_em",
         "--no-progress"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert message in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_definition_named_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"\['x'\] defined twice"):
        Config(user_metrics=(_sql("x", "1.0"), _sql("x", "2.0")))


def _blocks(language: str) -> list[str]:
    text = (ROOT / "docs" / "custom-metrics.md").read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_the_docs_sql_example_runs(tmp_path: Path) -> None:
    example = _blocks("toml")[0]
    config = _config(tmp_path, example)
    evaluate([_records(tmp_path)], tmp_path / "out", config, stats=False)
    scores = pl.read_parquet(tmp_path / "out" / "scores.parquet")
    assert {"has_url", "short_answer", "f1_when_short"} <= set(scores.columns)
    short = scores.filter(pl.col("short_answer") == 1)
    assert short["f1_when_short"].to_list() == short["answer_f1"].to_list()
    assert scores.filter(pl.col("short_answer") == 0)["f1_when_short"].null_count() == (
        scores.filter(pl.col("short_answer") == 0).height
    )


def test_the_docs_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decorators, api = _blocks("python")
    module = tmp_path / "docs_metrics.py"
    module.write_text(decorators, encoding="utf-8")
    config = load_plugins(Config(metrics=("answer_em", "answer_words", "mentions_reference"),
                                 plugins=(str(module),)))
    assert [s.name for s in resolve(config)] == [
        "answer_em", "answer_words", "mentions_reference"
    ]
    monkeypatch.chdir(tmp_path)
    exec(compile(api, "docs/custom-metrics.md", "exec"), {})


# --- the command line: --plugin, compare --max-drop, rag-eval metrics ----------------------------

TEAM = ("answer_length_ok", "mentions_reference")
EXAMPLE_PACKAGE = {"response_words": "count", "digit_share": "score"}


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from pipeline.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("plugin", ["team_metrics.py", "team_metrics"])
def test_evaluate_plugin_takes_a_file_or_a_module_name(
    plugin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    records = _records(tmp_path)
    monkeypatch.chdir(PLUGINS)  # a module name is found in the current directory
    code, _, err = _cli(capsys, "evaluate", "--input", str(records), "--out",
                        str(tmp_path / "out"), "--metrics", "answer_em,user", "--plugin", plugin,
                        "--no-stats", "--no-progress")
    assert code == 0, err
    scores = pl.read_parquet(tmp_path / "out" / "scores.parquet")
    assert set(TEAM) <= set(scores.columns) and "has_url" not in scores.columns
    assert scores["mentions_reference"].dtype == pl.Int8


def test_plugin_flags_come_after_the_config_modules(tmp_path: Path) -> None:
    from pipeline.cli import _parser
    from pipeline.cli.flags import config_from_args

    team = str(PLUGINS / "team_metrics.py")
    path = tmp_path / "rag-eval.toml"
    path.write_text(f'[plugins]\nmodules = ["{team}"]\n', encoding="utf-8")
    module = tmp_path / "flag_metrics.py"
    module.write_text(
        "import polars as pl\n\nimport pipeline\n\n\n"
        "@pipeline.metric(kind='count', needs=('question',))\n"
        "def question_words(question: pl.Expr) -> pl.Expr:\n"
        "    return question.str.split(' ').list.len()\n",
        encoding="utf-8",
    )
    args = _parser().parse_args(["validate", "--input", "x.jsonl", "--config", str(path),
                                 "--plugin", str(module), "--plugin", team])
    config = config_from_args(args)
    assert config.plugins == (team, str(module))  # the file's first, each once
    assert [d.name for d in config.user_metrics] == [*TEAM, "question_words"]


def test_validate_loads_plugins_and_refuses_a_broken_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = str(_records(tmp_path))
    code, out, err = _cli(capsys, "validate", "--input", records,
                          "--plugin", str(PLUGINS / "team_metrics.py"))
    assert code == 0 and "300 valid" in out, err
    code, _, err = _cli(capsys, "validate", "--input", records,
                        "--plugin", str(PLUGINS / "short_batch.py"))
    assert code == 2
    assert "returned 1 values for a batch of 2 rows" in _one_error_line(err)
    code, _, err = _cli(capsys, "validate", "--input", records, "--plugin", "no_such_plugin_xyz")
    assert code == 2
    assert "plug-in 'no_such_plugin_xyz' cannot be imported" in _one_error_line(err)


@pytest.mark.parametrize("command", ["evaluate", "validate", "metrics"])
def test_help_documents_plugin(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--plugin MODULE" in text
    assert "a module name, found in the current directory or the installed packages, or the " \
           "path of a .py file (repeatable; after the config's [plugins] modules" in text


def test_compare_max_drop_takes_a_user_metric_of_both_runs(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Run B: the same rows without URLs, so has_url falls from 0.25 to 0 for every model.
    evaluate([_records(tmp_path)], tmp_path / "b", _config(tmp_path), stats=False)
    code, out, err = _cli(capsys, "compare", str(run), str(tmp_path / "b"), "--resamples", "200",
                          "--max-drop", "has_url=0.05", "--max-drop", "answer_length_ok=0.5")
    assert code == 3, err
    assert "regression gate FAILED" in out and out.count("has_url fell by") == 3
    assert "answer_length_ok fell" not in out

    code, _, err = _cli(capsys, "compare", str(run), str(tmp_path / "b"), "--max-drop",
                        "has_ulr=0.05")
    line = _one_error_line(err)
    assert code == 2
    assert "--max-drop: unknown metric 'has_ulr' (did you mean 'has_url'?)" in line
    known = line.split("metrics of both runs: ")[1].split(", ")
    assert {"answer_em", "answer_f1", *USER} <= set(known) and "row_hash" not in known

    # A user metric that the baseline scored and this run did not: nothing to compare.
    sql_only = CONFIG.replace(f'[plugins]\nmodules = ["{PLUGINS / "team_metrics.py"}"]\n', "")
    evaluate([_records(tmp_path)], tmp_path / "c", _config(tmp_path, sql_only), stats=False)
    code, _, err = _cli(capsys, "compare", str(run), str(tmp_path / "c"), "--max-drop",
                        "answer_length_ok=0.1")
    assert code == 2
    assert "'answer_length_ok' is a column of the baseline only" in _one_error_line(err)
    # Built-in names are checked without reading the runs; syntax errors stay one line.
    code, _, err = _cli(capsys, "compare", str(run), str(tmp_path / "b"), "--max-drop", "x")
    assert code == 2 and "--max-drop expects METRIC=NUMBER" in _one_error_line(err)


def _table_rows(out: str) -> dict[str, list[str]]:
    """``rag-eval metrics`` catalogue: metric -> [metric, family, origin, kind, dtype,
    description] (an entry is ``NAME  (family, kind, dtype, origin)`` and its description,
    indented, on the lines below)."""
    rows: dict[str, list[str]] = {}
    name = ""
    for line in out.splitlines():
        entry = re.fullmatch(r"(\S+)  \((.*)\)", line)
        if entry:
            name = entry.group(1)
            family, kind, dtype, origin = entry.group(2).split(", ", 3)
            rows[name] = [name, family, origin, kind, dtype, ""]
        elif line.startswith("    ") and name:
            rows[name][5] = " ".join([rows[name][5], line.strip()]).strip()
    return rows


def test_metrics_lists_user_metrics_after_the_built_ins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.metrics.registry import REGISTRY

    config = tmp_path / "rag-eval.toml"
    config.write_text(CONFIG.split("[plugins]")[0], encoding="utf-8")  # the SQL metric only
    monkeypatch.chdir(PLUGINS)
    code, out, err = _cli(capsys, "metrics", "--config", str(config),
                          "--plugin", "team_metrics.py")
    assert code == 0, err
    rows = _table_rows(out)
    assert list(rows)[: len(REGISTRY)] == list(REGISTRY)
    assert list(rows)[len(REGISTRY):] == ["has_url", *TEAM, *EXAMPLE_PACKAGE]
    assert all(rows[name][2] == "built-in" for name in REGISTRY)
    assert rows["has_url"][1:5] == ["user", "config", "flag", "Int8"]
    assert rows["has_url"][5] == "The response contains a URL."
    assert rows["answer_length_ok"][1:5] == ["user", "plug-in team_metrics.py", "score",
                                             "Float64"]
    assert rows["mentions_reference"][2:4] == ["plug-in team_metrics.py", "flag"]
    for name, kind in EXAMPLE_PACKAGE.items():
        assert rows[name][1:4] == ["user", "package rag-eval-example-metrics", kind]
    assert rows["digit_share"][5] == "Share of digits in the response."


def test_metrics_without_flags_lists_the_installed_packages(
    capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, "metrics")
    rows = _table_rows(out)
    assert code == 0
    assert [name for name, cells in rows.items() if cells[1] == "user"] == list(EXAMPLE_PACKAGE)
    assert rows["response_words"][3:5] == ["count", "Int64"]


def test_metrics_markdown_adds_a_table_of_user_metrics(
    capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.metrics.registry import markdown_table

    code, out, _ = _cli(capsys, "metrics", "--format", "markdown",
                        "--plugin", str(PLUGINS / "team_metrics.py"))
    assert code == 0
    builtin, _, user = out.partition("\n\nUser-defined metrics:\n\n")
    assert builtin == markdown_table()  # the catalogue of docs/metrics.md, unchanged
    lines = user.strip().splitlines()
    assert lines[0] == ("| metric | family | origin | kind | dtype | range | better | "
                        "description |")
    assert lines[2] == (f"| `answer_length_ok` | user | plug-in {PLUGINS / 'team_metrics.py'} | "
                        "score | Float64 | [0, 1] | higher | 1 up to 12 words, then falling. "
                        "Nullable. |")
    assert [line.split(" | ")[0] for line in lines[2:]] == [
        "| `answer_length_ok`", "| `mentions_reference`", "| `response_words`", "| `digit_share`"
    ]


def test_metrics_refuses_a_broken_definition_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "broken.toml"
    config.write_text('[metrics.x]\nsql = "upper(response)"\nkind = "flag"\n', encoding="utf-8")
    code, out, err = _cli(capsys, "metrics", "--config", str(config))
    assert code == 2 and not out
    assert "a flag cannot be" in _one_error_line(err)


def test_the_family_user_selects_installed_metrics_and_nothing_when_none_exist() -> None:
    config = load_plugins(Config(metrics=("answer_em", "user")))
    names = [s.name for s in resolve(config)]
    assert names[0] == "answer_em" and {"response_words", "digit_share"} <= set(names)
    assert [s.name for s in resolve(Config(metrics=("answer_em", "user")))] == ["answer_em"]
    with pytest.raises(UnknownMetricError, match=r"the family 'user' selects no metric"):
        resolve(Config(metrics=("user",)))
