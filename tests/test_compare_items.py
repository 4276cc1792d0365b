"""``compare`` lists each regressed item with its texts, per metric, at a threshold the user sets
(issue 34): the five deliberate regressions of a newcomer, small number changes included."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import EXIT_GATE, EXIT_OK, main
from pipeline.compare import DEFAULT_ITEM_DROP, REGRESSED_FILE
from pipeline.report import write_report

#: (id, question, reference, baseline response, regressed response).
ITEMS = [
    ("eiffel", "When was the Eiffel Tower completed?", "1889",
     "The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1899."),
    ("ferry", "How long is the ferry crossing?", "45 minutes",
     "The crossing takes about 45 minutes.", "The crossing takes about 12 minutes."),
    ("baikal", "How deep is Lake Baikal?", "1,642 m",
     "Lake Baikal is 1,642 m deep.", "Lake Baikal is 1,000 m deep."),
    ("capital", "What is the capital of Australia?", "Canberra",
     "Canberra", "Sydney"),
    ("author", "Who wrote Dune?", "Frank Herbert", "Frank Herbert", "Isaac Asimov"),
    ("same", "What colour is the sky?", "blue", "The sky is blue.", "The sky is blue."),
]


def _records(path: Path, regressed: bool) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for item, question, reference, before, after in ITEMS:
            handle.write(json.dumps({"id": item, "question": question, "reference": reference,
                                     "response": after if regressed else before,
                                     "model": "bot"}) + "\n")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("compare-items")
    outs = []
    for name, regressed in (("a", False), ("b", True)):
        out = tmp / name
        code = main(["evaluate", "--input", str(_records(tmp / f"{name}.jsonl", regressed)),
                     "--out", str(out), "--metrics", "answer,lexical", "--no-progress",
                     "--resamples", "50"])
        assert code == EXIT_OK
        outs.append(out)
    return outs[0], outs[1]


def test_every_deliberate_regression_is_listed_with_its_texts(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--resamples", "50"]) in (EXIT_OK, EXIT_GATE)
    out = capsys.readouterr().out
    assert f"5 items regressed (a metric fell by more than {DEFAULT_ITEM_DROP:g})" in out
    for item, question, reference, before, after in ITEMS[:5]:
        assert f"\n{item}  model bot\n" in out
        assert f"  question:   {question}\n" in out
        assert f"  reference:  {reference}\n" in out
        assert f"  response A: {before}\n" in out
        assert f"  response B: {after}\n" in out
    assert "same  model bot" not in out
    # per metric: the year's F1 fell from 2/7 words to 0, numeric accuracy from 1 to 0
    assert "  answer_f1 0.286 -> 0.000\n" in out
    assert "  numeric_accuracy 1.000 -> 0.000\n" in out
    regressed = pl.read_parquet(b / "compare" / REGRESSED_FILE)
    assert sorted(regressed["id"].unique().to_list()) == sorted(i[0] for i in ITEMS[:5])
    eiffel = regressed.filter(pl.col("id") == "eiffel", pl.col("metric") == "answer_f1")
    assert eiffel.select("before", "after", "response_a", "response_b").row(0) == pytest.approx(
        (2 / 7, 0.0, ITEMS[0][3], ITEMS[0][4])
    )


def test_the_threshold_is_an_option(runs: tuple[Path, Path],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    capsys.readouterr()
    # above every F1 drop of the number answers: only the items whose flags flipped stay
    main(["compare", str(a), str(b), "--resamples", "0", "--item-drop", "0.99"])
    out = capsys.readouterr().out
    regressed = pl.read_parquet(b / "compare" / REGRESSED_FILE)
    assert regressed["drop"].min() > 0.99
    assert set(regressed["metric"].to_list()) >= {"answer_em", "numeric_accuracy"}
    n_items = regressed.select("id").unique().height
    assert f"{n_items} items regressed (a metric fell by more than 0.99)" in out
    with pytest.raises(SystemExit) as refused:
        main(["compare", str(a), str(b), "--item-drop", "-1"])
    assert refused.value.code == 2


def test_the_gated_metric_is_in_the_table(runs: tuple[Path, Path],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    capsys.readouterr()
    main(["compare", str(a), str(b), "--resamples", "50", "--max-drop", "rouge_l=0.01"])
    table = capsys.readouterr().out.split("items regressed")[0]
    assert "┆ rouge_l " in table
    assert "┆ answer_f1 " in table


def test_the_report_counts_agree(runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = runs
    main(["compare", str(a), str(b), "--resamples", "0"])
    regressed = pl.read_parquet(b / "compare" / REGRESSED_FILE)
    deltas = pl.read_parquet(b / "compare" / "deltas.parquet")
    page = write_report(b, tmp_path / "r.html", diff=deltas, regressed=regressed).read_text()
    rows = regressed.height
    assert f"Regressed items: 5 items, {rows} rows (one per item and metric)" in page
    section = page[page.index('id="regressed-table"'):]
    section = section[:section.index("</table>")]
    assert section.count('<tr class="sig worse">') == rows
    assert "The Eiffel Tower was completed in 1899." in section
