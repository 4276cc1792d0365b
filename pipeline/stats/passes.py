"""Reading the scores for the statistics: only the key and metric columns, coded
(:mod:`pipeline.stats.coding`), the rows of a few models at a time, read once and kept up to
:data:`~pipeline.stats.budgets.PASS_ROWS` rows, else in passes over disjoint sets of clusters
(``cluster % passes``). Rows keep their order, so the sums are added in row order."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import polars as pl

from pipeline.stats import budgets
from pipeline.stats.coding import _Layout, stable_order

#: The coded rows of one pass: integer codes of the key columns, ``idx`` and ``cluster``; and
#: one float array per metric (NaN for null or NaN).
_Batch = tuple[dict[str, np.ndarray], list[np.ndarray]]


def _passes(
    lf: pl.LazyFrame, layout: _Layout, models: np.ndarray | None = None, passes: int = 1
) -> Iterator[_Batch]:
    """The rows of ``models`` (codes; None: all) in ``passes`` passes over disjoint sets of
    clusters (``cluster % passes``). Only the key and metric columns are read; rows keep their
    order."""
    codes = []
    for column, values in layout.values.items():
        if not values:
            continue
        codes.append(
            pl.col(column).cast(layout.dtypes[column])
            .replace_strict(values, list(range(len(values))), default=len(values),
                            return_dtype=pl.Int64)
            .fill_null(len(values)).alias(column)
        )
    columns: list[pl.Expr] = [
        pl.col("id"), *codes,
        *(pl.col(m).cast(pl.Float64).fill_null(float("nan")).alias(f"_m{j}")
          for j, m in enumerate(layout.metrics)),
    ]
    names = [f"_m{j}" for j in range(len(layout.metrics))]
    source = lf
    if models is not None and models.size < layout.size("model"):
        known = layout.values["model"]
        named = [known[i] for i in models.tolist() if i < len(known)]
        wanted = pl.col("model").cast(layout.dtypes["model"]).is_in(
            pl.Series(named, dtype=pl.String()).implode()
        )
        if len(named) < models.size:  # the null model
            wanted = wanted | pl.col("model").is_null()
        source = lf.filter(wanted)
    for part in range(passes):
        mapping, rows = layout.mapping, source
        if passes > 1:
            mapping = mapping.filter(pl.col("cluster") % passes == part)
            rows = rows.filter(pl.col("id").is_in(mapping["id"].implode(), nulls_equal=True))
        batch = rows.select(*columns).collect(engine="streaming").join(
            mapping, on="id", how="left", nulls_equal=True, maintain_order="left"
        )
        arrays = {
            c: batch[c].to_numpy() if c in batch.columns else np.full(batch.height, 0, np.int64)
            for c in layout.values
        }
        arrays["idx"] = batch["idx"].to_numpy().astype(np.int64)
        arrays["cluster"] = batch["cluster"].to_numpy().astype(np.int64)
        columns_of_metrics = [batch[c].to_numpy() for c in names]  # no copies
        del batch
        yield arrays, columns_of_metrics
        del arrays, columns_of_metrics  # before the next pass is read


class _Rows:
    """The coded rows of the scores, the rows of a few models at a time.

    Up to :data:`budgets.PASS_ROWS` rows in all, they are read once and kept (a block's rows
    are taken from them in row order); beyond, each block reads the rows of its models in
    passes of about :data:`budgets.PASS_ROWS` rows over disjoint sets of clusters
    (:func:`_passes`).
    """

    def __init__(self, lf: pl.LazyFrame, layout: _Layout) -> None:
        self.lf, self.layout = lf, layout
        self._rows: _Batch | None = None
        self._order = np.empty(0, dtype=np.int64)
        self._starts = np.empty(0, dtype=np.int64)

    def batches(self, models: np.ndarray) -> Iterator[_Batch]:
        layout = self.layout
        if layout.rows > budgets.PASS_ROWS:
            rows = int(layout.model_rows[models].sum())
            yield from _passes(self.lf, layout, models, max(1, math.ceil(rows / budgets.PASS_ROWS)))
            return
        if self._rows is None:
            self._rows = next(_passes(self.lf, layout))
            model = self._rows[0]["model"]
            self._order = stable_order(model, layout.size("model"))
            self._starts = np.searchsorted(model[self._order], np.arange(layout.size("model") + 1))
        if int(layout.model_rows[models].sum()) == layout.rows:  # no other model has rows
            yield self._rows
            return
        chosen = np.sort(np.concatenate(
            [self._order[self._starts[i] : self._starts[i + 1]] for i in models.tolist()]
        ))
        codes, values = self._rows
        yield {c: a[chosen] for c, a in codes.items()}, [v[chosen] for v in values]
