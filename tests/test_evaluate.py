"""The driver: batches are sized by rows and text bytes, and batching never changes a score."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import records

from pipeline.config import Config
from pipeline.drivers import SCORES_FILE, batch_rows_for, evaluate
from pipeline.metrics.lexical.tfidf import IdfTable
from pipeline.metrics.registry import REGISTRY
from pipeline.scoring import RECORD_BATCH_SCHEMA, BatchScorer, CorpusStats, row_hashes

ROWS = [
    {"id": f"r{i}", "question": f"What is item {i}?", "reference": f"answer {i % 3}",
     "response": f"The answer is {i % 4} [1].", "contexts": [f"Item {i} is {i % 3}."],
     "gold_citations": [1], "model": "m"}
    for i in range(9)
]


def test_batch_rows_shrink_with_long_texts():
    short = records([{"reference": "a b", "response": "a"}] * 10)
    long = records([{"reference": "word " * 2000, "response": "word " * 2000}] * 10)
    assert batch_rows_for(short, batch_rows=100) == 100
    # question "q?" + "a b" + "a": 6 bytes per row
    assert batch_rows_for(short, batch_rows=10**6, batch_bytes=6_000) == 1000
    # "q?" + 2 x 10,000 bytes = 20,002 bytes per row
    assert batch_rows_for(long, batch_rows=100, batch_bytes=100_000) == 4
    assert batch_rows_for(long, batch_rows=100, batch_bytes=10) == 1
    with pytest.raises(ValueError):
        batch_rows_for(short, batch_rows=0)


def test_batches_count_only_the_texts_the_metrics_read(tmp_path: Path):
    """A BLEU run never tokenizes the passages: its batches are sized by the reference and
    the response alone, and one that reads the passages counts them too."""
    bleu = BatchScorer.for_config(Config(metrics=("bleu",)))
    grounding = BatchScorer.for_config(Config(metrics=("faithfulness",),
                                              embedding_backend="hashed"))
    assert bleu.scored_texts == ("reference", "response")
    assert grounding.scored_texts == ("question", "reference", "response", "contexts")
    rows = records([{"reference": "a b", "response": "a", "contexts": ["x" * 94]}] * 10)
    # "a b" + "a": 4 bytes a row read by BLEU; 100 with the question and the passage
    assert batch_rows_for(rows, batch_rows=10**6, batch_bytes=4_000,
                          texts=bleu.scored_texts) == 1000
    assert batch_rows_for(rows, batch_rows=10**6, batch_bytes=4_000,
                          texts=grounding.scored_texts) == 40
    # The engine's batches, seen as the row groups of the scores file (one a batch): 40 rows
    # of a 1.1 MB passage each are 44 MB of text: 30 rows a batch where the passages count.
    source = tmp_path / "in.parquet"
    pl.DataFrame([{**ROWS[i % 9], "id": f"r{i}", "contexts": ["many words " * 100_000]}
                  for i in range(40)]).write_parquet(source)
    groups = {}
    for metrics in (("bleu",), ("answer_in_context",)):
        out = tmp_path / metrics[0]
        evaluate([source], out, Config(metrics=metrics), build_db=False, stats=False)
        meta = pq.ParquetFile(out / SCORES_FILE).metadata
        groups[metrics[0]] = [meta.row_group(k).num_rows for k in range(meta.num_row_groups)]
    assert groups == {"bleu": [40], "answer_in_context": [30, 10]}


def test_batching_does_not_change_scores(tmp_path: Path):
    source = tmp_path / "in.jsonl"
    rows = ROWS[:5]  # a batch of one row each, against one batch of all (every metric)
    pl.DataFrame(rows).write_ndjson(source)
    config = Config(embedding_backend="hashed")
    outputs = []
    for batch_rows in (1, 1000):
        out = tmp_path / f"out{batch_rows}"
        evaluate([source], out, config, batch_rows=batch_rows, build_db=False)
        outputs.append(pl.read_parquet(out / SCORES_FILE))
    assert outputs[0].equals(outputs[1])
    assert outputs[0].height == len(rows)
    assert outputs[0]["tfidf_relevance"].null_count() == 0


def test_declared_output_schema_is_what_scoring_gives():
    """The output schema comes from declared dtypes; scoring must produce exactly it."""
    config = Config(metrics=tuple(REGISTRY), embedding_backend="hashed")
    idf = IdfTable.from_texts(pl.Series(["a b", "b c"]))
    scorer = BatchScorer.for_config(config, CorpusStats(n_candidates=2, idf=idf))
    empty = pl.DataFrame(schema=RECORD_BATCH_SCHEMA)
    scored = scorer.score_frame(empty).to_arrow().schema
    assert scored.names == scorer.output_schema.names
    assert scored.types == scorer.output_schema.types


def test_row_hash_is_pinned_and_content_only():
    """XXH3-128 of the versioned row encoding: a golden value, equal content equal hash."""
    frame = pl.DataFrame(ROWS[:2])
    hashes = row_hashes(frame)
    assert hashes.dtype == pl.Binary and hashes.len() == 2
    assert [h.hex() for h in hashes] == [
        "5d7472b90577cb0e170b3788dac90263", "9f8449b8024d07b6c23ce95c9b509bf5",
    ]
    # Column order, provenance and extra columns do not matter; any value does.
    shuffled = frame.select(reversed(frame.columns)).with_columns(source=pl.lit("elsewhere"))
    assert row_hashes(shuffled).equals(hashes)
    changed = frame.with_columns(pl.col("response").str.replace("The", "the"))
    assert not (row_hashes(changed) == hashes).any()


def test_row_hash_sees_lang_only_where_it_is_set():
    frame = pl.DataFrame(ROWS[:2])
    plain = row_hashes(frame)
    assert row_hashes(frame.with_columns(lang=pl.lit(None, pl.String))).equals(plain)
    tagged = row_hashes(frame.with_columns(lang=pl.lit("de")))
    assert not (tagged == plain).any()
    assert not (row_hashes(frame.with_columns(lang=pl.lit("es"))) == tagged).any()


def test_row_hash_sees_the_retrieval_columns_only_where_they_are_set():
    frame = pl.DataFrame(ROWS[:2])
    plain = row_hashes(frame)
    empty = frame.with_columns(context_ids=pl.lit(None, pl.List(pl.String)),
                               relevance=pl.lit(None, pl.List(pl.Int64)))
    assert row_hashes(empty).equals(plain)
    judged = row_hashes(frame.with_columns(relevant_ids=pl.lit(["d1"])))
    assert not (judged == plain).any()
    graded = row_hashes(frame.with_columns(relevant_ids=pl.lit(["d1"]), relevance=pl.lit([2])))
    assert not (graded == judged).any()
