"""Grounding counts, overlap and faithfulness, and the semantic cosine metrics.

Most cases use :class:`Chosen`, a backend whose vectors are set by the text itself, so every
cosine is known: ``"passage X"`` is the unit vector of axis X (A, B, C), and a text containing
``"about X at c"`` has cosine ``c`` with ``"passage X"`` and 0 with the other passages.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.embed import CachedEmbedder, EmbeddingCache, HashedNgramBackend
from pipeline.metrics.embedding.grounding import (
    UNSUPPORTED_DTYPE,
    faithfulness,
    grounding_counts,
    overlap,
)
from pipeline.metrics.embedding.semantic import (
    cosine_similarity,
    semantic_relevance,
    semantic_similarity,
)

_GOLDEN_FILE = Path(__file__).parent / "golden" / "grounding_cases.jsonl"
GOLDEN = [json.loads(line) for line in _GOLDEN_FILE.read_text().splitlines() if line.strip()]
FRAME_SCHEMA: dict[str, pl.DataType] = {"response": pl.String(), "contexts": pl.List(pl.String)}
_AXES = {"A": 0, "B": 1, "C": 2}
_CLAIM = re.compile(r"about ([ABC]) at (-?\d+\.\d+)")


class Chosen:
    """Vectors chosen by the text (see the module docstring); everything else is axis 7."""

    name = "chosen"
    model_id = "test"
    dim = 8

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.encoded.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            claim = _CLAIM.search(text)
            if text.startswith("passage "):
                out[i, _AXES[text[-1]]] = 1.0
            elif claim:
                cos = float(claim.group(2))
                out[i, _AXES[claim.group(1)]] = cos
                out[i, 6] = math.sqrt(1.0 - cos * cos)
            else:
                out[i, 7] = 1.0
        return out


def counts(rows: list[dict], backend=None, **kwargs) -> list[tuple[int, int]]:
    """Counts under the core RAG tool's rule ``cosine`` (the golden cases' cosines are chosen);
    the default rule ``evidence`` is tested in test_grounding_evidence.py."""
    frame = pl.DataFrame(
        [{"response": r["response"], "contexts": r["contexts"]} for r in rows], schema=FRAME_SCHEMA
    )
    embedder = CachedEmbedder(backend or Chosen(), EmbeddingCache(None))
    out = grounding_counts(frame, embedder, **{"rule": "cosine", **kwargs})
    assert out.schema == pl.Schema({"n_sentences": pl.Int64(), "n_supported": pl.Int64(),
                                    "first_unsupported": pl.String(),
                                    "unsupported": UNSUPPORTED_DTYPE,
                                    "n_misattributed": pl.Int64(),
                                    "supported_by": pl.List(pl.Int64())})
    # the cosine rule reads one cited passage per sentence: no misattribution to count
    assert out["n_misattributed"].null_count() == out.height
    assert out.height == frame.height and out.null_count().row(0)[:2] == (0, 0)
    return list(out.select("n_sentences", "n_supported").iter_rows())


@pytest.mark.parametrize("case", GOLDEN, ids=[c["note"] for c in GOLDEN])
def test_golden(case):
    assert counts([case]) == [(case["n_sentences"], case["n_supported"])]


def test_golden_first_unsupported_sentence():
    # The first sentence (as written) that is not supported; null when all are, when there
    # are no sentences, or when the row has no passages (grounding does not apply).
    frame = pl.DataFrame(
        [{"response": c["response"], "contexts": c["contexts"]} for c in GOLDEN],
        schema=FRAME_SCHEMA,
    )
    out = grounding_counts(frame, CachedEmbedder(Chosen(), EmbeddingCache(None)), rule="cosine")
    assert out["first_unsupported"].to_list() == [c["first_unsupported"] for c in GOLDEN]
    mixed = next(c for c in GOLDEN if c["note"] == "mixed sentences")
    assert mixed["first_unsupported"] == "Claim about B at 0.10 [2]."


def test_golden_as_one_frame():
    # Rows stay aligned when many rows, with and without sentences, go through together.
    assert counts(GOLDEN) == [(c["n_sentences"], c["n_supported"]) for c in GOLDEN]


def test_cosine_equal_to_tau_supports():
    row = {"response": "Claim about A at 0.75 [1].", "contexts": ["passage A"]}
    assert counts([row], tau_sim=0.75) == [(1, 1)]
    assert counts([row], tau_sim=0.7500001) == [(1, 0)]


def test_only_eligible_sentences_and_cited_passages_are_embedded():
    backend = Chosen()
    [case] = [c for c in GOLDEN if c["note"] == "mixed sentences"]
    counts([case], backend=backend)
    assert sorted(backend.encoded) == [
        "Claim about A at 0.90 .", "Claim about B at 0.10 .", "passage A", "passage B"
    ]


def test_abstention_phrases_are_configurable():
    row = {"response": "Claim about A at 0.90 [1].", "contexts": ["passage A"]}
    assert counts([row], abstention_phrases=["claim about"]) == [(1, 0)]


def test_hashed_backend_end_to_end():
    rows = [
        {"response": "Paris is the capital of France [1]. Bananas are yellow [1].",
         "contexts": ["Paris is the capital of France."]},
    ]
    assert counts(rows, backend=HashedNgramBackend()) == [(2, 1)]


def test_overlap_and_faithfulness():
    frame = pl.DataFrame(
        {
            "n_supported": [0, 1, 2, 3, 0, 1, None],
            "n_sentences": [0, 4, 2, 4, 3, 2, 2],
            "abstained": [0, 0, 0, 1, 1, None, 0],
            "answerable": [True, True, True, True, False, True, True],
        },
        schema_overrides={"abstained": pl.Int8},
    )
    out = frame.select(
        overlap(pl.col("n_supported"), pl.col("n_sentences")).alias("overlap")
    ).with_columns(
        faithfulness(pl.col("overlap"), frame["abstained"], frame["answerable"])
        .alias("faithfulness")
    )
    assert out["overlap"].to_list() == [0.0, 0.25, 1.0, 0.75, 0.0, 0.5, None]
    # Abstaining on an answerable question scores 0; a null abstention flag does not count as one.
    assert out["faithfulness"].round(12).to_list() == [0.6, 0.7, 1.0, 0.0, 0.6, 0.8, None]


def test_semantic_metrics():
    embedder = CachedEmbedder(Chosen(), EmbeddingCache(None))
    left = pl.Series(["about A at 0.50", "about A at -0.90", None, "passage B", "passage C"])
    right = pl.Series(["passage A", "passage A", "passage A", None, "passage C"])
    assert cosine_similarity(left, right, embedder).to_list() == pytest.approx(
        [0.5, -0.9, None, None, 1.0]
    )
    similarity = semantic_similarity(left, right, embedder)
    relevance = semantic_relevance(left, right, embedder)
    assert similarity.dtype == relevance.dtype == pl.Float64
    assert similarity.to_list() == pytest.approx([0.5, 0.0, None, None, 1.0])
    assert relevance.to_list() == pytest.approx([0.5, -0.9, None, None, 1.0])
    # Identical texts on both sides are embedded once; the last call hit the cache only.
    assert embedder.last.encoded == 0
    with pytest.raises(ValueError, match="differ in length"):
        cosine_similarity(left, right.head(2), embedder)
