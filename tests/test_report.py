"""`pipeline.report`: the self-contained HTML report of a run (no browser; see test_report_browser).

The run is built once per session by the real pipeline on a few dozen sample rows, plus rows whose
model name and responses try to inject markup.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from matplotlib.figure import Figure
from test_report_charts import layout_problems

from pipeline.cli import main
from pipeline.ingest_rgb import ingest_rgb
from pipeline.report import SECTION_IDS, charts, hotpot_charts, write_report
from pipeline.report.data import WORST_N, RunData, load_run
from pipeline.report.hotpot_charts import worst_examples
from pipeline.report.page import (
    SCRIPT,
    grounding_thresholds,
    rgb_noise_with_ci,
    unsupported_sentences,
)
from pipeline.stats import wilson_interval
from pipeline.views import headline_columns, run_query

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample" / "records.parquet"
RGB_SOURCES = REPO / "data" / "sample" / "rgb"  # ingested into every test run
EVIL_MODEL = "<script>alert(1)</script>"
EVIL_RESPONSES = (
    '"><img src=x onerror=alert(1)>',
    "<script>window.__pwned = 1</script>",
    '"><img src=x onerror="window.__pwned2=1">',
    "see https://example.com/x and <a href='http://evil.test/'>here</a>",
)


def build_run(root: Path) -> Path:
    """Evaluate a small slice of the sample data (and injected rows) into ``root/run``."""
    sample = pl.read_parquet(SAMPLE)
    picked = sample.filter(pl.int_range(pl.len()).over("model", "category") < 3)
    evil = sample.head(len(EVIL_RESPONSES)).with_columns(
        pl.lit(EVIL_MODEL).alias("model"),
        pl.Series("response", EVIL_RESPONSES),
        (pl.lit("evil-") + pl.col("id")).alias("id"),
    )
    inputs = [root / "sample.parquet"]
    pl.concat([picked, evil]).write_parquet(inputs[0])
    ingest_rgb(RGB_SOURCES / "rgb_data.json", RGB_SOURCES / "rgb_outputs.jsonl",
               root / "rgb-all.parquet")
    rgb = pl.read_parquet(root / "rgb-all.parquet")
    inputs.append(root / "rgb.parquet")
    rgb.filter(pl.int_range(pl.len()).over("model", "task", "noise_level") < 2).write_parquet(
        inputs[1]
    )
    out = root / "run"
    argv = ["evaluate", "--out", str(out), "--embedding-backend", "hashed", "--no-progress",
            "--resamples", "50"]
    for path in inputs:
        argv += ["--input", str(path)]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run(tmp_path_factory.mktemp("report-run"))


@pytest.fixture(scope="session")
def run_data(run_dir: Path) -> RunData:
    """``load_run(run_dir)``, loaded once for the tests that only read it."""
    return load_run(run_dir)


@pytest.fixture(scope="session")
def written(
    run_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, list[tuple[str, Figure]]]:
    """The report of ``run_dir`` and the figures its charts saved (through the real
    :func:`~pipeline.report.charts.to_svg`): one report drawn for the page's checks and the
    layout check alike."""
    target = tmp_path_factory.mktemp("report") / "report.html"
    figures: list[tuple[str, Figure]] = []
    real = charts.to_svg

    def capture(fig: Figure, chart_id: str) -> str:
        figures.append((chart_id, fig))
        return real(fig, chart_id)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(charts, "to_svg", capture)
        patch.setattr(hotpot_charts, "to_svg", capture)
        doc = write_report(run_dir, target).read_text(encoding="utf-8")
    return doc, figures


@pytest.fixture(scope="session")
def report(written: tuple[str, list[tuple[str, Figure]]]) -> str:
    return written[0]


def section(doc: str, section_id: str) -> str:
    match = re.search(rf'<(section|header) id="{section_id}">(.*?)</\1>', doc, re.DOTALL)
    assert match is not None, f"no section {section_id}"
    return match.group(2)


def body_rows(fragment: str) -> list[list[str]]:
    """The text of each cell of each body row of the tables in ``fragment``."""
    rows = []
    for tbody in re.findall(r"<tbody>(.*?)</tbody>", fragment, re.DOTALL):
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", tbody, re.DOTALL):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
            rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells])
    return rows


def header_titles(fragment: str, table_id: str) -> list[str]:
    """The header texts of the table ``table_id`` in ``fragment`` (soft hyphens removed)."""
    match = re.search(rf'<table id="{table_id}"><thead><tr>(.*?)</tr></thead>', fragment,
                      re.DOTALL)
    assert match is not None, f"no table {table_id}"
    cells = re.findall(r"<th[^>]*>(.*?)</th>", match.group(1), re.DOTALL)
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).replace("\xad", "") for c in cells]


def table_rows(fragment: str, table_id: str) -> list[dict[str, str]]:
    """The body rows of the table ``table_id`` as {header: cell text}."""
    match = re.search(rf'<table id="{table_id}">.*?</table>', fragment, re.DOTALL)
    assert match is not None, f"no table {table_id}"
    titles = header_titles(fragment, table_id)
    return [dict(zip(titles, row, strict=True)) for row in body_rows(match.group(0))]


def copy_run(run_dir: Path, target: Path, drop: tuple[str, ...] = ()) -> Path:
    shutil.copytree(run_dir, target)
    for name in drop:
        (target / name).unlink()
    return target


def test_every_section_is_there_and_in_the_nav(report: str) -> None:
    for section_id in SECTION_IDS:
        if section_id == "run-comparison":
            assert 'id="run-comparison"' not in report  # only with a diff
            continue
        assert f'id="{section_id}"' in report
        assert f'href="#{section_id}"' in report


def _ci(value: float, low: float, high: float, decimals: int = 2) -> str:
    return f"{value:,.{decimals}f} [{low:,.{decimals}f}, {high:,.{decimals}f}]"


def test_headline_numbers_are_the_view_values_with_their_intervals(
    run_dir: Path, report: str
) -> None:
    headline = run_query(run_dir, "select * from headline order by model nulls last")
    intervals = pl.read_parquet(run_dir / "intervals.parquet").filter(pl.col("slice") == "all")

    def bounds(model: str, metric: str, wilson: bool = False) -> tuple[float, float]:
        row = intervals.filter((pl.col("model") == model) & (pl.col("metric") == metric))
        low, high = ("wilson_low", "wilson_high") if wilson else ("ci_low", "ci_high")
        return row[low].item(), row[high].item()

    rows = table_rows(section(report, "headline"), "headline-table")
    assert [r["Model"] for r in rows] == headline["model"].to_list()
    for cells, view in zip(rows, headline.to_dicts(), strict=True):
        model = view["model"]
        assert cells["N"] == str(view["n"])
        assert cells["Faithfulness"] == _ci(view["faithfulness"], *bounds(model, "faithfulness"))
        assert cells["Overlap"] == _ci(view["overlap"], *bounds(model, "overlap"))
        assert cells["Answer F1"] == _ci(view["answer_f1"], *bounds(model, "answer_f1"))
        if view["citation_f1_macro"] is not None:
            assert cells["Citation F1"] == _ci(view["citation_f1_macro"],
                                               *bounds(model, "citation_f1_macro"))
        assert cells["Tokens"] == _ci(view["mean_total_tokens"],
                                      *bounds(model, "mean_total_tokens"), 0)
        # a median: no bootstrap of it
        assert cells["Latency p50 (ms)"] == f"{view['p50_latency_ms']:,.0f}"
        assert cells["Abstain rate"] == _ci(view["abstain_rate"],
                                            *bounds(model, "abstain_rate", wilson=True))
        assert cells["Overall score"] == _ci(view["overall_score"],
                                             *bounds(model, "overall_score"))
        # n_grounding equals n on every row here (every row has passages): not repeated
        assert view["n_grounding"] == view["n"] and "Grounding N" not in cells
        assert cells["IDK + citation"] == f"{view['n_idk_with_citation']:,}"
        assert cells["IDK check"] == view["idk_check"]


def test_headline_has_the_view_columns_that_hold_a_value_in_its_order(
    run_dir: Path, report: str
) -> None:
    """The terminal headline's columns (pipeline.views.headline_columns), without the key."""
    headline = run_query(run_dir, "select * from headline order by model nulls last")
    shown = [c for c in headline.columns if c not in ("model", "signature")
             and headline[c].drop_nulls().len() > 0
             and c not in ("n_grounding", "n_no_passages")]  # n_grounding == n; no row lacks
    assert shown == [c for c in headline_columns(headline) if c != "model"]
    assert "overall_score" in shown and "idk_check" in shown
    part = section(report, "headline")
    names = re.findall(r'<th scope="col"[^>]*title="([^"]+)"', part)
    assert names == shown
    assert header_titles(part, "headline-table")[0] == "Model"
    assert len(header_titles(part, "headline-table")) == len(shown) + 1
    # the warning column and the counts are explained under the table
    legend = html.unescape(re.sub(r"<[^>]+>", "", part))
    assert "IDK check: ok when IDK + citation is 0, else a warning" in legend
    # each cell carries its title for the stacked layout of narrow windows
    assert 'data-label="Overall score"' in part and 'data-label="Faithfulness"' in part


def test_header_states_rows_signature_and_resampling(run_dir: Path, report: str) -> None:
    header = html.unescape(section(report, "summary"))
    n_rows = run_query(run_dir, "select count(*) as n from scores")["n"].item()
    assert f"{n_rows:,} scored" in header
    signature = run_query(run_dir, "select signature from headline")["signature"][0]
    assert signature.split("; ")[0] in header
    assert "50 resamples, seed 0" in header


def test_the_signature_is_folded_behind_one_short_line(run_dir: Path, report: str) -> None:
    signature = run_query(run_dir, "select signature from headline")["signature"][0]
    part = section(report, "summary")
    folded = re.search(r'<details class="sig"><summary>(.*?)</summary>(.*?)</details>', part,
                       re.DOTALL)
    assert folded is not None, "the signature is not in a details element"
    assert "<details class=\"sig\" open" not in part
    summary = html.unescape(re.sub(r"<[^>]+>", "", folded.group(1)))
    assert signature not in summary and len(summary) < 80
    assert summary.startswith("|".join(signature.split("|")[:2]))
    assert "the same for every model" in summary
    assert html.escape(signature.split("; ")[0], quote=True) in folded.group(2)


def test_no_network_references(report: str) -> None:
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:)?//""", report, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", report, re.I)
    assert "@import" not in report
    # the injected link only appears as escaped text
    assert "&lt;a href=&#x27;http://evil.test/&#x27;&gt;" in report


def test_the_only_script_is_ours_and_injected_markup_is_text(report: str) -> None:
    assert report.count("<script") == 1
    assert f"<script>{SCRIPT}</script>" in report
    assert "<img" not in report  # the injected tags exist only in escaped form
    assert html.escape(EVIL_MODEL, quote=True) in section(report, "headline")
    for response in EVIL_RESPONSES:
        assert html.escape(response, quote=True) in section(report, "worst")


def test_chart_labels_are_escaped_by_matplotlib(report: str) -> None:
    answers = re.search(r'<figure class="chart" id="chart-answers">(.*?)</figure>', report,
                        re.DOTALL)
    assert answers is not None
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in answers.group(1)


def test_charts_are_inline_svg_without_metadata(report: str) -> None:
    figures = re.findall(r'<figure class="chart" id="(chart-[a-z]+)">(.*?)</figure>', report,
                         re.DOTALL)
    ids = {f[0] for f in figures}
    assert {"chart-answers", "chart-citations", "chart-distributions", "chart-categories",
            "chart-noise", "chart-grounding", "chart-cost", "chart-profile",
            "chart-failures"} <= ids
    for chart_id, body in figures:
        assert body.lstrip().startswith(f'<svg id="{chart_id}-svg"'), chart_id
        assert "<text" in body or "<g" in body
    assert "<?xml" not in report and "<metadata" not in report and "<!DOCTYPE svg" not in report
    assert 'font-family' in report  # svg.fonttype none: text stays text


def test_every_chart_fits_its_figure(written: tuple[str, list[tuple[str, Figure]]]) -> None:
    doc, drawn = written
    assert len(drawn) == 16
    assert [chart_id for chart_id, _ in drawn] == re.findall(r'<svg id="(chart-[a-z-]+)-svg"',
                                                             doc)
    assert [p for chart_id, fig in drawn for p in layout_problems(chart_id, fig)] == []


def test_worst_items_are_the_lowest_f1_rows_per_model(run_dir: Path, report: str) -> None:
    rows = table_rows(section(report, "worst"), "worst-table")
    scores = pl.read_parquet(run_dir / "scores.parquet")
    for model in scores["model"].unique().to_list():
        shown = [r for r in rows if r["Model"] == model]
        expected = min(WORST_N, scores.filter(pl.col("model") == model).height)
        assert len(shown) == expected
        f1 = [float(r["F1"]) for r in shown if r["F1"] != "—"]
        assert f1 == sorted(f1)
        lowest = scores.filter(pl.col("model") == model)["answer_f1"].min()
        assert f1[0] == pytest.approx(lowest, abs=0.005)
    assert 'data-filter="worst-table"' in report


def test_worst_items_show_noise_level_and_category(run_dir: Path, report: str) -> None:
    rows = table_rows(section(report, "worst"), "worst-table")
    scores = pl.read_parquet(run_dir / "scores.parquet")
    known = {
        (r["model"], r["id"], "—" if r["noise_level"] is None else f"{r['noise_level']:g}",
         r["category"] or "(none)")
        for r in scores.iter_rows(named=True)
    }
    for row in rows:
        category = row["Category"]
        task = next((t for t in scores["task"].drop_nulls().unique() if category.endswith(t)),
                    None)
        if task is not None:  # RGB rows show their task beneath the category
            category = category[: -len(task)]
        assert (row["Model"], row["ID"], row["Noise"], category) in known
    # the same question at several noise levels is told apart
    noise_levels = {row["Noise"] for row in rows}
    assert len(noise_levels) > 1


def test_worst_items_name_the_unsupported_sentence(report: str) -> None:
    worst = section(report, "worst")
    # the injected responses cite nothing: each is one unsupported sentence, shown escaped
    for response in EVIL_RESPONSES:
        sentence = html.escape(response, quote=True)
        assert f"<q>{sentence}</q>" in worst
    assert "(no citation)" in worst
    rows = table_rows(worst, "worst-table")
    assert any("Unsupported" in r["Question · reference · response · unsupported sentence"]
               for r in rows)


def test_unsupported_sentences_as_far_as_the_counts_tell() -> None:
    frame = pl.DataFrame({
        "response": [
            "Paris is in France [1]. It is big. I don't know [1].",  # named exactly
            "Paris is in France [1]. Rome is in Italy [2].",  # nothing supported
            "Paris is in France [1]. It is big. Rome is in Italy [2].",  # partly named
            "Paris is in France [1]. Rome is in Italy [2].",  # cited ones only: count
            "Paris is in France [1].",  # all supported
            "One sentence [1].",  # the stored count disagrees with the split
            None,
        ],
        "n_sentences": [3, 2, 3, 2, 1, 2, None],
        "n_supported": [1, 0, 0, 1, 1, 0, None],
    })
    out = unsupported_sentences(frame).to_dicts()
    assert [r["n_unsupported"] for r in out] == [2, 2, 3, 1, 0, 2, None]
    assert out[0]["unsupported_sentence"] == "It is big."
    assert (out[0]["unsupported_reason"], out[0]["unsupported_more"],
            out[0]["unsupported_unnamed"]) == ("no citation", 1, 0)
    assert out[1]["unsupported_sentence"] == "Paris is in France [1]."
    assert out[1]["unsupported_reason"] == "not supported by the passage it cites"
    assert (out[1]["unsupported_more"], out[1]["unsupported_unnamed"]) == (1, 0)
    assert out[2]["unsupported_sentence"] == "Paris is in France [1]."  # n_supported == 0
    assert out[3]["unsupported_sentence"] is None
    assert (out[3]["unsupported_unnamed"], out[3]["unsupported_unnamed_cited"]) == (1, True)
    assert out[4]["unsupported_sentence"] is None and out[4]["unsupported_unnamed"] == 0
    assert out[5]["unsupported_sentence"] is None
    assert (out[5]["unsupported_unnamed"], out[5]["unsupported_unnamed_cited"]) == (2, False)
    assert out[6]["unsupported_sentence"] is None


def test_unsupported_sentences_with_the_number_of_passages() -> None:
    frame = pl.DataFrame({"response": ["Rome is old [1]. Oslo is cold [3]. Lima is far [2]."],
                          "n_sentences": [3], "n_supported": [1], "n_contexts": [2]})
    row = unsupported_sentences(frame).row(0, named=True)
    assert (row["unsupported_sentence"], row["unsupported_reason"]) == (
        "Oslo is cold [3].", "cites a passage that was not retrieved")
    assert (row["unsupported_more"], row["unsupported_unnamed"]) == (0, 1)


def test_partly_named_unsupported_sentences() -> None:
    frame = pl.DataFrame({"response": ["Rome is old [1]. Oslo is cold. Lima is far [1]. "
                                       "Kyiv is big [2]."],
                          "n_sentences": [4], "n_supported": [1]})
    row = unsupported_sentences(frame).row(0, named=True)
    assert (row["unsupported_sentence"], row["unsupported_reason"]) == ("Oslo is cold.",
                                                                        "no citation")
    assert (row["unsupported_more"], row["unsupported_unnamed"]) == (0, 2)
    assert row["unsupported_unnamed_cited"] is True


def test_stored_first_unsupported_names_a_cited_sentence_exactly() -> None:
    # Every sentence cites one passage, so no rule can tell which failed; grounding stored it.
    frame = pl.DataFrame({"response": ["Rome is old [1]. Oslo is cold [1]. Lima is far [2]."],
                          "n_sentences": [3], "n_supported": [2], "n_contexts": [2],
                          "first_unsupported": ["Oslo is cold [1]."]})
    row = unsupported_sentences(frame).row(0, named=True)
    assert (row["unsupported_sentence"], row["unsupported_reason"]) == (
        "Oslo is cold [1].", "not supported by the passage it cites")
    assert (row["unsupported_more"], row["unsupported_unnamed"]) == (0, 0)
    # without the stored sentence the same row can only be counted
    row = unsupported_sentences(frame.drop("first_unsupported")).row(0, named=True)
    assert (row["unsupported_sentence"], row["unsupported_unnamed"]) == (None, 1)


def test_grounding_chart_thresholds_are_those_of_the_view(run_dir: Path, report: str) -> None:
    view = run_query(run_dir, "select grounded_min_overlap, correct_min_answer_f1 "
                              "from paired_analysis")
    overlap, answer_f1 = view.row(0)
    assert view.n_unique() == 1  # one threshold pair, repeated per model
    lines = grounding_thresholds(view)
    assert lines == {"overlap": overlap, "faithfulness": pytest.approx(0.6 + 0.4 * overlap),
                     "answer_f1": answer_f1}
    caption = html.unescape(re.sub(r"<[^>]+>", "", section(report, "grounding")))
    assert (f"grounded at overlap ≥ {overlap:g} (faithfulness ≥ {lines['faithfulness']:g}), "
            f"correct at answer F1 ≥ {answer_f1:g}") in caption
    # the view counts with the same thresholds
    scores = pl.read_parquet(run_dir / "scores.parquet")
    grounded = scores.filter((pl.col("overlap") >= overlap) & (pl.col("answer_f1") >= answer_f1))
    total = run_query(run_dir, "select sum(n_grounded_correct) as n from paired_analysis")
    assert total["n"].item() == grounded.height


def test_rgb_noise_bands_at_every_level(run_data: RunData) -> None:
    frame = rgb_noise_with_ci(run_data)
    assert frame.height > 0  # build_run ingests the RGB sample
    with_rows = frame.filter(pl.col("n") > 0)
    assert with_rows["accuracy_lo"].null_count() == 0
    assert with_rows["accuracy_hi"].null_count() == 0
    assert (with_rows["accuracy_lo"] <= with_rows["accuracy"] + 1e-9).all()
    assert (with_rows["accuracy"] <= with_rows["accuracy_hi"] + 1e-9).all()
    n = with_rows["n"].to_numpy()
    low, high = wilson_interval(with_rows["accuracy"].to_numpy() / 100 * n, n)
    assert with_rows["accuracy_lo"].to_numpy() == pytest.approx(100 * low)
    assert with_rows["accuracy_hi"].to_numpy() == pytest.approx(100 * high)


def test_output_is_deterministic_and_atomic(run_dir: Path, report: str, tmp_path: Path) -> None:
    again = write_report(run_dir, tmp_path / "new" / "r.html")
    assert again.read_bytes() == report.encode("utf-8")
    assert sorted(p.name for p in again.parent.iterdir()) == ["r.html"]  # no temporary left


def test_renders_without_statistics_files_and_texts(run_dir: Path, tmp_path: Path) -> None:
    bare = copy_run(run_dir, tmp_path / "bare",
                    ("intervals.parquet", "comparisons.parquet", "texts.parquet"))
    frame = rgb_noise_with_ci(load_run(bare))
    assert frame["accuracy_lo"].null_count() == frame.height  # no bands without statistics
    doc = write_report(bare, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "without confidence intervals" in doc
    headline = body_rows(section(doc, "headline"))
    assert headline and all("[" not in cell for row in headline for cell in row)
    assert "No comparisons.parquet" in section(doc, "comparisons")
    assert "texts.parquet is missing" in section(doc, "worst")
    for section_id in SECTION_IDS:
        assert section_id == "run-comparison" or f'id="{section_id}"' in doc


def test_fixture_statistics_files_are_shown(run_dir: Path, tmp_path: Path) -> None:
    run = copy_run(run_dir, tmp_path / "fixture")
    models = sorted(pl.read_parquet(run / "scores.parquet")["model"].unique().to_list())
    base = {"slice": "all", "noise_level": None, "category": None, "n": 10,
            "wilson_low": None, "wilson_high": None, "resamples": 777, "seed": 42,
            "method": "fixture bootstrap"}
    pl.DataFrame(
        [{**base, "model": models[0], "metric": "answer_f1", "mean": 0.5, "ci_low": 0.111,
          "ci_high": 0.999},
         {**base, "model": models[0], "metric": "abstain_rate", "mean": 0.5, "ci_low": 0.2,
          "ci_high": 0.3, "wilson_low": 0.014, "wilson_high": 0.456}],
        schema_overrides={"noise_level": pl.Float64, "category": pl.String,
                          "wilson_low": pl.Float64, "wilson_high": pl.Float64},
    ).write_parquet(run / "intervals.parquet")
    pl.DataFrame([
        {"model_a": models[0], "model_b": models[1], "slice": "all", "category": None,
         "metric": "answer_f1", "n_pairs": 12, "mean_a": 0.2, "mean_b": 0.5, "diff": -0.3,
         "ci_low": -0.4, "ci_high": -0.2, "test": "paired permutation", "p_value": 0.001,
         "p_adjusted": 0.002, "correction": "holm", "significant": True},
        {"model_a": models[0], "model_b": models[1], "slice": "category",
         "category": "<i>Factual</i>", "metric": "answer_f1", "n_pairs": 4, "mean_a": 0.2,
         "mean_b": 0.25, "diff": -0.05, "ci_low": -0.4, "ci_high": 0.3,
         "test": "paired permutation", "p_value": 0.5, "p_adjusted": 0.9, "correction": "holm",
         "significant": False},
    ]).write_parquet(run / "comparisons.parquet")
    doc = write_report(run, tmp_path / "r.html").read_text(encoding="utf-8")
    first = next(r for r in table_rows(section(doc, "headline"), "headline-table")
                 if r["Model"] == models[0])
    assert first["Answer F1"].endswith("[0.11, 1.00]")
    assert first["Abstain rate"].endswith("[0.01, 0.46]")  # Wilson bounds for the abstain rate
    assert "777 resamples, seed 42" in html.unescape(section(doc, "summary"))
    comparisons = section(doc, "comparisons")
    assert '<tr class="sig">' in comparisons
    assert "-0.300 [-0.400, -0.200]" in comparisons
    assert "&lt;i&gt;Factual" not in comparisons  # non-significant slice rows are left out
    assert "Shown: 1 of the 2 rows" in comparisons


def test_run_comparison_section_comes_first_and_limits_apply(
    run_dir: Path, run_data: RunData, tmp_path: Path
) -> None:
    """One report with every option of ``write_report``: a run diff, a title and limits."""
    from pipeline.report import Limits

    diff = pl.DataFrame({
        "model": ["m<1>", "m2", "m2", "m3"], "metric": ["answer_f1", "answer_em", "overlap",
                                                       "answer_f1"],
        "slice": ["all", "all", "all", "category"],
        "slice_value": ["all", "all", "all", "<b>x</b>"], "mean_a": [0.4, 0.3, 0.5, 0.6],
        "mean_b": [0.5, 0.3, 0.5, 0.4], "delta": [0.1, 0.0, 0.0, -0.2],
        "ci_low": [0.05, -0.1, -0.0, -0.3], "ci_high": [0.15, 0.1, 0.0, -0.1],
    })
    doc = write_report(run_dir, tmp_path / "r.html", diff=diff, title="Before & after",
                       limits=Limits(examples=3))
    text = doc.read_text(encoding="utf-8")
    part = section(text, "run-comparison")
    assert "m&lt;1&gt;" in part and '<tr class="sig">' in part
    assert "0.100 [0.050, 0.150]" in part
    assert "<title>Before &amp; after</title>" in text
    assert 'href="#run-comparison"' in text
    rows = table_rows(part, "run-comparison-table")
    # the all-zero row of m2 is left out, the regression comes first, then the improvement
    assert [(r["Model"], r["Metric"], r["Change"]) for r in rows] == [
        ("m3", "answer_f1", "worse"), ("m<1>", "answer_f1", "better"), ("m2", "answer_em", "—"),
    ]
    assert rows[0]["Slice"] == "category = <b>x</b>" and "&lt;b&gt;x&lt;/b&gt;" in part
    assert "1 worse" in part and "1 rows where both runs agree" in part
    assert "-0.000" not in part
    # the run comparison comes first, right under the summary, in the page and in the nav
    first = re.search(r'<main>\s*<section id="([a-z-]+)">', text)
    assert first is not None and first.group(1) == "run-comparison"
    assert text.index('</header>') < text.index('id="run-comparison"') < text.index(
        'id="headline"')
    links = re.findall(r'<li><a href="#([a-z-]+)">', text)
    assert links[:3] == ["summary", "run-comparison", "headline"]
    # the per-example charts follow the limit
    generation = section(text, "generation")
    svg = re.search(r'id="chart-exampleanswers">(.*?)</figure>', generation, re.DOTALL)
    assert svg is not None
    examples = run_data.rows
    worst = {m: worst_examples(examples, m, limit=3)["label"].to_list()
             for m in examples["model"].unique().to_list()}
    assert all(len(labels) == 3 for labels in worst.values())
    for labels in worst.values():
        for label in labels:
            assert f">{html.escape(label, quote=True)}<" in svg.group(1)
    assert "the worst 3 of each model" in generation
    with pytest.raises(ValueError, match="report limit examples"):
        Limits(examples=0)


def test_run_comparison_of_two_runs(run_dir: Path, tmp_path: Path) -> None:
    from pipeline.compare import compare

    after = copy_run(run_dir, tmp_path / "after")
    scores = pl.read_parquet(after / "scores.parquet")
    model = sorted(scores["model"].drop_nulls().unique().to_list())[-1]
    worse = pl.col("model") == model
    scores.with_columns(
        pl.when(worse).then(pl.col("answer_f1") * 0.1).otherwise(pl.col("answer_f1"))
        .alias("answer_f1")
    ).write_parquet(after / "scores.parquet")
    comparison = compare(run_dir, after, resamples=50)
    assert comparison.regressed.height > 0
    doc = write_report(after, tmp_path / "r.html", diff=comparison.deltas,
                       regressed=comparison.regressed).read_text(encoding="utf-8")
    part = section(doc, "run-comparison")
    assert re.search(r'<figure class="chart" id="chart-run-comparison"><svg id="chart-run-'
                     r'comparison-svg"', part)
    assert "answer_f1" in re.search(r"<svg.*?</svg>", part, re.DOTALL).group(0)  # type: ignore[union-attr]
    regressed = table_rows(part, "regressed-table")
    assert len(regressed) == comparison.regressed.height
    assert {r["Model"] for r in regressed} == {html.unescape(model)}
    drops = [float(r["Change"]) for r in regressed]
    assert drops == sorted(drops)  # largest drops first
    # the regressed items come before the slice table; regressions head that table
    assert part.index('id="regressed-table"') < part.index('id="run-comparison-table"')
    rows = table_rows(part, "run-comparison-table")
    changes = [r["Change"] for r in rows]
    assert changes[0] == "worse"
    assert changes == sorted(changes, key=lambda c: {"worse": 0, "better": 1}.get(c, 2))
    unchanged = comparison.deltas.filter(
        (pl.col("delta").abs() <= 1e-12) & (pl.col("ci_low").abs() <= 1e-12)
        & (pl.col("ci_high").abs() <= 1e-12)
    )
    assert unchanged.height > 0
    assert len(rows) == comparison.deltas.height - unchanged.height - comparison.deltas.filter(
        pl.col("delta").is_null() & pl.col("ci_low").is_null() & pl.col("ci_high").is_null()
    ).height
    assert "0.000 [0.000, 0.000]" not in part and "-0.000" not in part


def test_per_example_charts_draw_the_worst_rows_folded(run_dir: Path, report: str) -> None:
    part = section(report, "generation")
    folded = re.findall(r'<details class="fold"><summary>(.*?)</summary>\s*<figure class="chart" '
                        r'id="(chart-[a-z]+)">(.*?)</figure></details>', part, re.DOTALL)
    assert [chart_id for _, chart_id, _ in folded] == [
        "chart-exampleanswers", "chart-examplecitations", "chart-exampleheatmap"]
    assert "<details open" not in report and "open>" not in part
    scores = pl.read_parquet(run_dir / "scores.parquet")
    models = scores["model"].n_unique()
    total = scores.filter(pl.col("answer_f1").is_not_null()).height
    per_model = scores.group_by("model").len()["len"].clip(upper_bound=20).sum()
    summary = html.unescape(re.sub(r"<[^>]+>", "", folded[0][0]))
    assert f"({per_model:,} of {total:,} rows: the worst 20 of each model)" in summary
    assert per_model < total and models > 1
    note = html.unescape(re.sub(r"<[^>]+>", "", part))
    assert f"plot 1: {per_model:,} of the {total:,} rows with answer F1 scores" in note
    # the other plots are not folded
    unfolded = re.sub(r"<details.*?</details>", "", part, flags=re.DOTALL)
    for chart_id in ("chart-answerdistribution", "chart-citationdistribution", "chart-radar"):
        assert f'<figure class="chart" id="{chart_id}">' in unfolded, chart_id


def test_worst_examples_are_lowest_first_and_told_apart() -> None:
    rows = pl.DataFrame({
        "model": ["m"] * 5 + ["n"],
        "id": ["q1", "q1", "q1", "q2", None, "q1"],
        "noise_level": [0.2, 0.4, 0.4, None, None, 0.0],
        "answer_f1": [0.5, 0.1, 0.1, 0.3, 0.0, 0.0],
        "overall_score": [0.5, 0.4, 0.2, 0.1, None, 0.0],
    })
    worst = worst_examples(rows, "m", limit=4)
    # lowest F1 first, ties by overall score, then input order; ids repeated at one noise
    # level are told apart by their place among the model's rows
    assert worst["label"].to_list() == ["#5", "q1 @0.4 #3", "q1 @0.4 #2", "q2"]
    assert worst_examples(rows, "n")["label"].to_list() == ["q1"]
    assert worst_examples(rows.head(0), "m").height == 0


def test_regressed_items_need_a_diff(run_dir: Path, tmp_path: Path) -> None:
    regressed = pl.DataFrame({"id": ["q"], "model": ["m"], "noise_level": [None],
                              "task": [None], "metric": ["answer_f1"], "before": [1.0],
                              "after": [0.0]})
    with pytest.raises(ValueError, match="diff"):
        write_report(run_dir, tmp_path / "r.html", regressed=regressed)


def test_a_malformed_diff_is_an_input_error(run_dir: Path, tmp_path: Path) -> None:
    from pipeline.schema import InputError

    with pytest.raises(InputError, match="delta"):
        write_report(run_dir, tmp_path / "r.html", diff=pl.DataFrame({"model": ["a"]}))
    assert not (tmp_path / "r.html").exists()


def test_a_20_mb_response_is_cut_in_a_small_report(
    run_dir: Path, run_data: RunData, tmp_path: Path
) -> None:
    """Issue 29: every text a cell shows is cut after ``Limits.text_chars`` characters, with
    a marker that counts the rest; texts.parquet keeps the whole text."""
    from pipeline.report.limits import MAX_TEXT_CHARS

    run = copy_run(run_dir, tmp_path / "long")
    worst = run_data.worst.row(0, named=True)
    texts = pl.read_parquet(run / "texts.parquet")
    long = ("A sentence of the long answer [1]. " * 600_000)[:20_000_000]
    chosen = (pl.col("source") == worst["source"]) & (pl.col("row_number") == worst["row_number"])
    texts.with_columns(
        pl.when(chosen).then(pl.lit(long)).otherwise(pl.col("response")).alias("response"),
        pl.when(chosen).then(pl.lit("Why? " * 1_000)).otherwise(pl.col("question"))
        .alias("question"),
    ).write_parquet(run / "texts.parquet")
    target = write_report(run, tmp_path / "r.html")
    assert target.stat().st_size < 1_000_000
    doc = target.read_text(encoding="utf-8")
    worst_section = section(doc, "worst")
    assert "… [cut: 19,998,000 more characters]" in worst_section
    assert f"… [cut: {5_000 - MAX_TEXT_CHARS:,} more characters]" in worst_section
    assert "Limits.text_chars" in worst_section
    assert pl.read_parquet(run / "texts.parquet")["response"].str.len_chars().max() == 20_000_000
    # texts within the limit are shown whole, without a marker
    assert worst_section.count("[cut: ") == 2
    from pipeline.report import Limits

    with pytest.raises(ValueError, match="text_chars"):
        Limits(text_chars=0)


def test_a_mixed_statistics_pair_is_ignored_with_a_warning(
    run_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 29: intervals and comparisons from two different ``stats`` runs (a run killed
    between its two renames) are not shown as valid: the report warns and shows neither."""
    from pipeline.stats import write_stats

    run = copy_run(run_dir, tmp_path / "mixed")
    write_stats(run, resamples=20, seed=5)
    shutil.copy(run_dir / "intervals.parquet", run / "intervals.parquet")  # the first run's
    with caplog.at_level("WARNING", logger="pipeline.report.data"):
        data = load_run(run)
    assert data.intervals is None and data.comparisons is None
    assert "were not written together" in caplog.text
    assert "seed 5, 20 resamples" in caplog.text
    doc = write_report(run, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "statistics ignored" in section(doc, "summary")
    assert "statistics files are ignored" in section(doc, "comparisons")
    headline = body_rows(section(doc, "headline"))
    assert headline and all("[" not in cell for row in headline for cell in row)
    # SQL neither: the views leave both out (rebuilt for the directory, as rag-eval query does)
    from pipeline.views import build_views, run_query

    build_views(run)
    assert run_query(run, "select count(*) from intervals").item() == 0
    assert run_query(run, "select count(*) from model_comparison").item() == 0
    # the pair written again is shown again
    write_stats(run, resamples=20, seed=5)
    assert load_run(run).intervals is not None
