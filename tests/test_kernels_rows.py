"""The compiled ``row_hash``: the same hashes as ``polars_hash``, which defines them.

``row_hash`` is XXH3-128 of ``polars_hash.hash_rows`` (encoding version 1). The kernels of
:mod:`pipeline.text.kernels.rows` and :mod:`pipeline.text.kernels.xxh3` write and hash that
encoding from the Arrow buffers; here they are compared with ``polars_hash`` (its encoding
hashed by its XXH3-128) on every length class of XXH3, every type of the record schema, nulls at
every level, sliced and chunked columns, and random records (hypothesis). A byte written wrong
anywhere changes the hash.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import polars as pl
import polars_hash
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.schema import RECORD_SCHEMA
from pipeline.scoring import LATE_COLUMNS, ROW_ENCODING, row_hashes
from pipeline.text.kernels.rows import hash_rows
from pipeline.text.kernels.xxh3 import hash_spans

TWO_64 = 2**64


def reference_xxh3(values: list[bytes]) -> list[int]:
    frame = pl.DataFrame({"b": pl.Series(values, dtype=pl.Binary)})
    hashed = frame.select(cast(polars_hash.HExpr, pl.col("b")).nchash.xxh3_128().alias("h"))
    return hashed["h"].to_list()


def kernel_xxh3(values: list[bytes]) -> list[int]:
    """XXH3-128 of each of ``values`` by the kernel, as 128-bit integers."""
    data = np.frombuffer(b"".join(values), dtype=np.uint8)
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(v) for v in values])
    low = np.empty(len(values), dtype=np.uint64)
    high = np.empty(len(values), dtype=np.uint64)
    hash_spans(data, offsets, low, high)
    return [int(h) * TWO_64 + int(lo) for lo, h in zip(low, high, strict=True)]


def test_xxh3_equals_polars_hash_on_every_length_class():
    rng = np.random.default_rng(7)
    lengths = [*range(0, 300), 511, 512, 1023, 1024, 1025, 2047, 4096, 65_537]
    values = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]
    assert kernel_xxh3(values) == reference_xxh3(values)


def test_xxh3_of_known_inputs():
    """Golden values of XXH3-128 (seed 0): the empty input and b"abc"."""
    values = [b"", b"abc"]
    ours = kernel_xxh3(values)
    assert [f"{h:032x}" for h in ours] == [
        "99aa06d3014798d86001c324468d497f", "06b05ab6733a618578af5f94892f3950",
    ]
    assert reference_xxh3(values) == ours


#: Every type of the record schema, with the values the encoding treats apart: nulls at each
#: level, empty strings and lists, strings of 12 bytes (kept inside an Arrow view) and 13 (in a
#: data buffer), non-ASCII text, integer extremes, -0.0, NaN and infinities.
EDGE = pl.DataFrame(
    {
        "text": ["", "x" * 12, "y" * 13, None, "Zürich — 東京 🙂" * 20, "a"],
        "texts": [[], None, ["", None, "p" * 40], ["é"], [None], ["q"] * 300],
        "ints": [[0, -1, 1], [2**63 - 1, -(2**63)], None, [], [None, 127, 128, -128], [16384]],
        "number": [0.0, -0.0, float("nan"), None, float("inf"), -1.5e300],
        "count": [0, -1, 2**63 - 1, -(2**63), None, 300],
        "groups": [[["a", None], []], None, [None], [], [["b" * 20]], [[None]]],
    },
    schema={"text": pl.String, "texts": pl.List(pl.String), "ints": pl.List(pl.Int64),
            "number": pl.Float64, "count": pl.Int64, "groups": pl.List(pl.List(pl.String))},
)


def arrow_columns(frame: pl.DataFrame) -> list[pa.Array]:
    table = frame.to_arrow(compat_level=pl.CompatLevel.newest()).combine_chunks()
    return [column.chunks[0] for column in table.columns]


def reference_encoding(frame: pl.DataFrame) -> list[bytes]:
    return frame.select(
        polars_hash.hash_rows(pl.all(), version=ROW_ENCODING).alias("e")
    )["e"].to_list()


def hashes(columns: list[pa.Array], levels: list[int], row_levels: np.ndarray) -> list[int]:
    low, high = hash_rows(columns, levels, row_levels)
    return [int(h) * TWO_64 + int(lo) for lo, h in zip(low, high, strict=True)]


@pytest.mark.parametrize("rows", [slice(0, 6), slice(1, 4), slice(5, 6)])
def test_every_type_hashes_as_polars_hash_encodes_it(rows):
    frame = EDGE[rows]
    columns = [column.slice(rows.start, rows.stop - rows.start)
               for column in arrow_columns(EDGE)]  # sliced Arrow arrays: offsets honoured
    levels = np.zeros(frame.height, dtype=np.int64)
    assert hashes(columns, [0] * len(columns), levels) == reference_xxh3(
        reference_encoding(frame))
    for name in EDGE.columns:  # each type alone, so a wrong one is named
        alone = [arrow_columns(EDGE.select(name))[0].slice(rows.start, rows.stop - rows.start)]
        assert hashes(alone, [0], levels) == reference_xxh3(
            reference_encoding(frame.select(name))), name


def test_a_row_holds_only_the_columns_of_its_level():
    frame = EDGE.select("text", "count")
    levels = np.array([0, 1, 0, 1, 1, 0], dtype=np.int64)
    both = reference_xxh3(reference_encoding(frame))
    alone = reference_xxh3(reference_encoding(frame.select("text")))
    assert hashes(arrow_columns(frame), [0, 1], levels) == [
        both[i] if level else alone[i] for i, level in enumerate(levels)]


def test_lists_nested_more_than_twice_are_refused():
    """The kernel reads two levels of lists (the record schema's deepest); a third would be
    encoded wrong, so it is an error, not a hash."""
    deep = pa.array([[[["a"]]]], pa.large_list(pa.large_list(pa.large_list(pa.string_view()))))
    with pytest.raises(TypeError, match="nested more than twice"):
        hash_rows([deep], [0], np.zeros(1, dtype=np.int64))
    two = pa.array([[["a"]]], pa.large_list(pa.large_list(pa.string_view())))
    assert len(hash_rows([two], [0], np.zeros(1, dtype=np.int64))[0]) == 1


def test_columns_must_match_the_row_levels():
    with pytest.raises(ValueError, match="rows for 2 row levels"):
        hash_rows(arrow_columns(EDGE), [0] * EDGE.width, np.zeros(2, dtype=np.int64))


def reference_row_hashes(records: pl.DataFrame) -> pl.Series:
    """``row_hash`` as polars_hash computes it, the definition the kernel reproduces."""
    content = records.select(
        pl.col(name).cast(dtype) if name in records.columns else pl.lit(None, dtype).alias(name)
        for name, dtype in RECORD_SCHEMA.items()
    )
    late = list(LATE_COLUMNS)
    base = polars_hash.hash_rows(pl.exclude("lang", *late), version=ROW_ENCODING)
    with_lang = polars_hash.hash_rows(pl.exclude(*late), version=ROW_ENCODING)
    every = polars_hash.hash_rows(pl.all(), version=ROW_ENCODING)
    encoded = (
        pl.when(pl.any_horizontal(pl.col(late).is_not_null())).then(every)
        .when(pl.col("lang").is_not_null()).then(with_lang)
        .otherwise(base)
    )
    hashes = content.select(cast(polars_hash.HExpr, encoded).nchash.xxh3_128().alias("h"))["h"]
    return pl.Series("row_hash", [(h // TWO_64).to_bytes(8, "big") + (h % TWO_64).to_bytes(8, "big")
                                  for h in hashes.to_list()], dtype=pl.Binary)


def records(n: int) -> pl.DataFrame:
    return pl.DataFrame({
        "id": [f"q{i}" for i in range(n)],
        "question": ["What is the capital of France?" * (i % 3) for i in range(n)],
        "reference": ["Paris" if i % 4 else None for i in range(n)],
        "response": ["It is Paris, the capital — Zürich? no." * (i % 5) for i in range(n)],
        "contexts": [[f"passage {i} " * (i % 7), ""] if i % 6 else None for i in range(n)],
        "citations": [[1, i] if i % 2 else [] for i in range(n)],
        "model": ["m1", "m2"] * (n // 2) + ["m1"] * (n % 2),
        "noise_level": [i / 10 if i % 3 else None for i in range(n)],
        "latency_ms": [float(i) * 1.5 for i in range(n)],
        "lang": [None if i % 4 else "de" for i in range(n)],
        "relevant_ids": [["d1"] if i % 5 == 0 else None for i in range(n)],
    })


def test_row_hashes_equal_polars_hash_on_every_level_and_chunking():
    frame = records(40)
    assert row_hashes(frame).equals(reference_row_hashes(frame))
    chunked = pl.concat([frame[:13], frame[13:31], frame[31:]], rechunk=False)
    assert chunked.n_chunks() == 3
    assert row_hashes(chunked).equals(reference_row_hashes(frame))
    assert row_hashes(frame[7:19]).equals(reference_row_hashes(frame[7:19]))
    assert row_hashes(frame[:0]).len() == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(
    st.tuples(
        st.one_of(st.none(), st.text(max_size=30)),
        st.one_of(st.none(), st.lists(st.one_of(st.none(), st.text(max_size=20)), max_size=4)),
        st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
                                      max_size=4)),
        st.one_of(st.none(), st.floats(allow_nan=True)),
        st.one_of(st.none(), st.sampled_from(["en", "de"])),
    ),
    min_size=1, max_size=12,
))
def test_row_hashes_equal_polars_hash_on_random_records(rows):
    frame = pl.DataFrame(
        {
            "response": [r[0] for r in rows],
            "contexts": [r[1] for r in rows],
            "citations": [r[2] for r in rows],
            "latency_ms": [r[3] for r in rows],
            "lang": [r[4] for r in rows],
        },
        schema={"response": pl.String, "contexts": pl.List(pl.String),
                "citations": pl.List(pl.Int64), "latency_ms": pl.Float64, "lang": pl.String},
    )
    assert row_hashes(frame).equals(reference_row_hashes(frame))


def test_xxh3_equals_the_xxhash_package():
    """A second reference: the xxhash package's binding of the C library."""
    xxhash = pytest.importorskip("xxhash")
    rng = np.random.default_rng(11)
    values = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (0, 3, 16, 17, 128,
                                                                          129, 240, 241, 1500)]
    assert kernel_xxh3(values) == [xxhash.xxh3_128_intdigest(v) for v in values]
