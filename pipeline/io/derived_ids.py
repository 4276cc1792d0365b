"""Record ids for input files without an ``id`` column, derived from each row's content.

The rule (``docs/input-formats.md#derived-ids``), chosen so that every run over the same file
gives every row the same id, and the same question gets the same id in the files of different
models, so that ``compare`` and the paired model comparisons match rows:

* ``id = "q" + the first 16 hex digits of SHA-256(<question byte length> ":" <question>
  <reference>)``, over UTF-8 bytes (the length prefix keeps ``("ab", "c")`` and ``("a", "bc")``
  apart). The model is not part of it: the same question answered by two models is one item.
* A row that repeats the question and reference of an earlier row of the file with the same
  ``model``, ``run``, ``noise_level`` and ``task`` (a collision: the key would repeat) gets its
  occurrence appended: ``#2``, ``#3``, ... in file order. The reader reports how many.
* A row whose question or reference is not text (null, a number) has nothing to hash; its id
  falls back to its row number, ``row-<row_number>`` (validation rejects such a row anyway).

SHA-256 comes from ``polars_hash`` (vectorized, the same digest in every version, unlike
polars' own ``hash``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import polars as pl
import polars_hash  # registers the ``chash`` namespace on every expression

#: The key columns besides ``id`` (:data:`pipeline.validate.KEY`): a repeat within them is a
#: collision that the occurrence number resolves.
ID_KEYS: tuple[str, ...] = ("model", "run", "noise_level", "task")
ID_PREFIX = "q"
#: Hex digits of the digest kept: 64 bits, so that two different questions of a file share an
#: id with odds below 1 in 10^7 up to 10^6 distinct questions.
DIGEST_HEX = 16
#: Column of the occurrence number while ids are built.
_OCCURRENCE = "__occurrence"


def content_id(question: pl.Expr, reference: pl.Expr) -> pl.Expr:
    """``q`` and 16 hex digits of SHA-256 over ``len(question):question reference`` (null when
    either is null).

    >>> pl.select(content_id(pl.lit("Who wrote Dune?"), pl.lit("Frank Herbert"))).item()
    'q0794da03418ec961'
    """
    payload = pl.concat_str(question.str.len_bytes().cast(pl.String), pl.lit(":"), question,
                            reference)
    digest = cast(polars_hash.HExpr, payload).chash.sha2_256()
    return pl.lit(ID_PREFIX) + digest.str.slice(0, DIGEST_HEX)


def derived_ids(
    frame: pl.LazyFrame, question: pl.Expr, reference: pl.Expr, keys: Sequence[pl.Expr],
    row: pl.Expr,
) -> tuple[pl.Series, int]:
    """The derived ``id`` of every row of ``frame`` (a whole file, in file order) and the number
    of rows that got an occurrence number.

    ``question`` and ``reference`` are the texts (null where not text), ``keys`` the file's
    values of :data:`ID_KEYS` as read, ``row`` the row number. The digests are computed as the
    file streams by; only they and the keys are held for the occurrence numbers.
    """
    content = content_id(question, reference).alias("__content")
    parts = frame.select(
        content, row.alias("__row"), *(key.alias(f"__key{i}") for i, key in enumerate(keys))
    ).collect(engine="streaming")
    group = ["__content", *(f"__key{i}" for i in range(len(keys)))]
    numbered = parts.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(group).alias(_OCCURRENCE),
        pl.col("__content"),
        pl.col("__row"),
    )
    ids = numbered.select(
        pl.when(pl.col("__content").is_null())
        .then(pl.format("row-{}", pl.col("__row")))
        .when(pl.col(_OCCURRENCE) == 1)
        .then(pl.col("__content"))
        .otherwise(pl.format("{}#{}", pl.col("__content"), pl.col(_OCCURRENCE)))
        .alias("id")
    )["id"]
    repeats = numbered.filter(pl.col("__content").is_not_null() & (pl.col(_OCCURRENCE) > 1))
    return ids, repeats.height
