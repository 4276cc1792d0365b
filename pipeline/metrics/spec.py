"""What a registered metric is: :class:`MetricSpec`, and what its builder receives: :class:`Inputs`.

A spec's ``build`` receives :class:`Inputs` and returns an unaliased ``pl.Expr`` over input
columns, intermediate columns (names starting with ``_``) and other metrics it ``needs``. The
registry applies ``.alias(name)`` in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from pipeline import __version__
from pipeline.config import Config

if TYPE_CHECKING:
    from pipeline.embed.cache import CachedEmbedder
    from pipeline.metrics.tfidf import IdfTable

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


@dataclass(frozen=True)
class MetricSpec:
    """A named metric: how to build it and what its values mean."""

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


def candidate(k: int) -> pl.Expr:
    """Answer candidate ``k``: 0 is ``reference``, ``k >= 1`` is ``references[k - 1]`` (or null)."""
    if k == 0:
        return pl.col("reference")
    return pl.col("references").list.get(k - 1, null_on_oob=True)


def count(name: str, family: str, build: Callable[[Inputs], pl.Expr], description: str,
          needs: tuple[str, ...]) -> MetricSpec:
    """A sufficient statistic: a non-negative Int64 count with no better direction."""
    return MetricSpec(name, family, build, pl.Int64(), description, needs=needs, upper=None,
                      higher_is_better=None)
