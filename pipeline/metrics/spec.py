"""What a registered metric is: :class:`MetricSpec`, and what its builder receives: :class:`Inputs`.

A spec's ``build`` receives :class:`Inputs` and returns an unaliased ``pl.Expr`` over input
columns, intermediate columns (names starting with ``_``) and other metrics it ``needs``. The
registry applies ``.alias(name)`` in one place.

A spec's :data:`Kind` says what its values are and so how everything downstream treats it (the
``scores`` contract, the slice views, the intervals): a ``score`` or a 0/1 ``flag`` is averaged
and gets intervals, a ``count`` (a sufficient statistic) is summed, a ``label`` or ``list`` is
carried per row only. Left out, the kind follows from dtype, range and direction
(:func:`derive_kind`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import polars as pl

from pipeline import __version__
from pipeline.config import Config

if TYPE_CHECKING:
    from pipeline.embed.cache import CachedEmbedder
    from pipeline.metrics.lexical.tfidf import IdfTable

#: ``needs`` markers for resources the driver prepares once per run (not columns).
NEEDS_IDF = "_idf"
NEEDS_EMBEDDER = "_embedder"


@dataclass(frozen=True)
class Inputs:
    """What metric builders may depend on besides columns."""

    config: Config
    #: Number of answer candidates: ``reference`` plus the longest ``references`` list.
    n_candidates: int = 1
    #: Document frequencies over the whole evaluated corpus (TF-IDF relevance).
    idf: IdfTable | None = None
    #: The run's embedding model behind its cache (semantic and grounding metrics).
    embedder: CachedEmbedder | None = None

    def require_idf(self) -> IdfTable:
        if self.idf is None:
            raise RuntimeError("tfidf_relevance needs corpus document frequencies (Inputs.idf)")
        return self.idf

    def require_embedder(self) -> CachedEmbedder:
        if self.embedder is None:
            raise RuntimeError("embedding metrics need an embedder (Inputs.embedder)")
        return self.embedder


#: What a metric's values are: ``score`` (a number whose mean over rows is reported), ``flag``
#: (0/1, a rate when averaged), ``count`` (a sufficient statistic, summed, never averaged),
#: ``label`` (text) or ``list`` (a list of texts).
Kind = Literal["score", "flag", "count", "label", "list"]
#: How the slice views (``metrics_by_slice``) aggregate a kind; ``None``: not aggregated.
Aggregate = Literal["mean", "sum"]
AGGREGATES: dict[Kind, Aggregate | None] = {
    "score": "mean", "flag": "mean", "count": "sum", "label": None, "list": None,
}
#: Kinds whose per-row mean is a result: they get confidence intervals and model comparisons.
MEAN_KINDS: frozenset[Kind] = frozenset({"score", "flag"})


def derive_kind(dtype: pl.DataType, lower: float | None, upper: float | None,
                higher_is_better: bool | None) -> Kind:
    """The kind a spec has when it states none.

    A list is a ``list``, a string a ``label``, an integer in [0, 1] a ``flag``, another integer
    with no better direction a ``count``; any other number is a ``score``.

    >>> derive_kind(pl.Int64(), 0.0, None, None), derive_kind(pl.Int64(), 0.0, None, False)
    ('count', 'score')
    >>> derive_kind(pl.Int8(), 0.0, 1.0, None), derive_kind(pl.String(), None, None, None)
    ('flag', 'label')
    """
    if isinstance(dtype, pl.List):
        return "list"
    if dtype == pl.String:
        return "label"
    if dtype.is_integer() and (lower, upper) == (0, 1):
        return "flag"
    if dtype.is_integer() and higher_is_better is None:
        return "count"
    if dtype.is_numeric():
        return "score"
    raise ValueError(f"no metric kind for dtype {dtype}")


def _kind_fits(kind: Kind, dtype: pl.DataType, lower: float | None,
               upper: float | None) -> bool:
    if kind == "list":
        return isinstance(dtype, pl.List)
    if kind == "label":
        return dtype == pl.String
    if kind == "flag":
        return dtype.is_integer() and (lower, upper) == (0, 1)
    if kind == "count":
        return dtype.is_integer()
    return dtype.is_numeric()


@dataclass(frozen=True)
class MetricSpec:
    """A named metric: how to build it and what its values mean.

    ``kind`` defaults to :func:`derive_kind` of dtype, range and direction; a stated kind must
    fit the dtype (a ``flag`` is an integer in [0, 1], a ``count`` an integer, a ``label`` a
    string, a ``list`` a list, a ``score`` a number).
    """

    name: str
    family: str
    build: Callable[[Inputs], pl.Expr]
    dtype: pl.DataType
    description: str
    needs: tuple[str, ...] = ()
    lower: float | None = 0.0
    upper: float | None = 1.0
    higher_is_better: bool | None = True
    nullable: bool = False
    version: str = __version__
    kind: Kind | None = None

    def __post_init__(self) -> None:
        if self.kind is None:
            kind = derive_kind(self.dtype, self.lower, self.upper, self.higher_is_better)
            object.__setattr__(self, "kind", kind)
        elif not _kind_fits(self.kind, self.dtype, self.lower, self.upper):
            raise ValueError(
                f"metric {self.name!r}: kind {self.kind!r} does not fit dtype {self.dtype} "
                f"with range [{self.lower}, {self.upper}]"
            )

    @property
    def aggregate(self) -> Aggregate | None:
        """How the slice views aggregate this metric (:data:`AGGREGATES` of its kind)."""
        return AGGREGATES[self.kind] if self.kind is not None else None


def candidate(k: int) -> pl.Expr:
    """Answer candidate ``k``: 0 is ``reference``, ``k >= 1`` is ``references[k - 1]`` (or null)."""
    if k == 0:
        return pl.col("reference")
    return pl.col("references").list.get(k - 1, null_on_oob=True)


def count(name: str, family: str, build: Callable[[Inputs], pl.Expr], description: str,
          needs: tuple[str, ...]) -> MetricSpec:
    """A sufficient statistic: a non-negative Int64 count with no better direction."""
    return MetricSpec(name, family, build, pl.Int64(), description, needs=needs, upper=None,
                      higher_is_better=None, kind="count")
