"""TF-IDF relevance: cosine similarity of the question's and the response's TF-IDF vectors.

Definitions:

* Tokens: the text lowercased (polars ``str.to_lowercase``), then maximal runs of Unicode
  letters, combining marks and digits (``[\\p{L}\\p{M}\\p{N}]+``): "café" is one word, "don't"
  is "don" and "t", "covid-19" is "covid" and "19". No stopword removal: a word in every
  document gets idf 0 anyway.
* Documents: the *distinct* non-null texts among all questions and responses of the evaluated
  corpus, compared as raw strings. A question repeated across models or runs counts once; an
  empty text is a document (with no words). ``N`` is their number and ``df(w)`` the number of
  them containing word ``w``.
* ``idf(w) = ln(N / df(w))``; a word absent from the table has idf 0 (it carries no weight).
* ``tf(w, t) = count of w in t / number of tokens of t``; weight ``tf * idf``.
* Score: ``dot(q, r) / (|q| |r|)``, clipped to at most 1.0 against rounding; 0.0 when either
  vector is zero (an empty text, or one made only of idf-0 or unknown words); null when either
  text is null.

Worked example: over the corpus {"the cat sits on the mat", "the cat is on the mat", "dogs run
in the park", "birds fly in the sky"} the first two texts score 3/7 (cat, on, mat have idf
ln 2, sits and is ln 4, the 0).

The document frequencies come from a first pass over the corpus (:class:`DocumentFrequencies`,
fed batch by batch, or :meth:`IdfTable.from_texts` for one series). The score is one
``pl.map_batches`` over whole columns: polars tokenizes and maps words to table ids, then numpy
sorts one ``(row, word, side)`` key per token and sums the weights per row with ``bincount``
(no Python loop over rows; rows are independent, so any batching gives the same scores).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.sql import sql_string

WORD_PATTERN = r"[\p{L}\p{M}\p{N}]+"
_TEXT_HASH_SEED = 0x5EED


def tfidf_tokens(text: pl.Expr) -> pl.Expr:
    """Lowercased word tokens (``List[String]``) as the module docstring defines them.

    >>> import polars as pl
    >>> pl.select(tfidf_tokens(pl.lit("Don't panic, Café-42!"))).item().to_list()
    ['don', 't', 'panic', 'café', '42']
    """
    return text.str.to_lowercase().str.extract_all(WORD_PATTERN)


@dataclass(frozen=True, eq=False)
class IdfTable:
    """Inverse document frequencies: ``table`` has one row per word (``word``, ``df``, ``idf``)."""

    table: pl.DataFrame
    n_documents: int

    @classmethod
    def from_frequencies(cls, frequencies: pl.DataFrame, n_documents: int) -> IdfTable:
        """From a frame of ``word`` and ``df`` (documents containing the word) and ``N``."""
        if frequencies.height:
            low, high = frequencies.select(low=pl.col("df").min(), high=pl.col("df").max()).row(0)
            if low < 1 or high > n_documents:
                raise ValueError(f"document frequencies must lie in [1, {n_documents}]")
        table = frequencies.select(
            pl.col("word").cast(pl.String),
            pl.col("df").cast(pl.Int64),
            idf=(pl.lit(float(n_documents)) / pl.col("df").cast(pl.Float64)).log(),
        ).sort("word")
        return cls(table=table, n_documents=n_documents)

    @classmethod
    def from_texts(cls, texts: pl.Series) -> IdfTable:
        """Document frequencies over the distinct non-null ``texts``.

        >>> import polars as pl
        >>> table = IdfTable.from_texts(pl.Series(["a b", "a", "a"]))
        >>> table.n_documents, table.idf_of("b")
        (2, 0.6931471805599453)
        """
        frequencies = DocumentFrequencies()
        frequencies.add(texts)
        return frequencies.idf()

    def idf_of(self, word: str) -> float:
        """The idf of one word (0.0 when absent)."""
        found = self.table.filter(pl.col("word") == word)["idf"]
        return float(found[0]) if len(found) else 0.0

    def to_dict(self) -> dict[str, float]:
        """``word -> idf``."""
        return dict(zip(self.table["word"].to_list(), self.table["idf"].to_list(), strict=True))


class DocumentFrequencies:
    """First-pass accumulator of document frequencies over batches of texts.

    ``add`` each batch of questions and responses; a text already seen (in this or an earlier
    batch) is not counted again. Across batches texts are recognised by a 64-bit polars hash,
    so memory grows with the number of distinct texts times 8 bytes, not with their length (a
    hash collision, probability about ``n**2 / 2**65``, would skip one document).
    """

    def __init__(self) -> None:
        self._seen = pl.Series("hash", [], dtype=pl.UInt64)
        self._counts = pl.DataFrame(schema={"word": pl.String, "df": pl.Int64})

    @property
    def n_documents(self) -> int:
        """Distinct texts counted so far."""
        return len(self._seen)

    def add(self, texts: pl.Series) -> None:
        """Count the distinct, not yet seen, non-null texts of a batch."""
        batch = pl.DataFrame({"text": texts.cast(pl.String)}).drop_nulls()
        batch = batch.with_columns(hash=pl.col("text").hash(seed=_TEXT_HASH_SEED)).unique("hash")
        new = batch.filter(~pl.col("hash").is_in(self._seen.implode()))
        counts = (
            new.select(word=tfidf_tokens(pl.col("text")).list.unique())
            .explode("word")
            .drop_nulls()
            .group_by("word")
            .agg(df=pl.len().cast(pl.Int64))
        )
        self._seen = pl.concat([self._seen, new["hash"]])
        self._counts = pl.concat([self._counts, counts]).group_by("word").agg(pl.col("df").sum())

    def idf(self) -> IdfTable:
        """The :class:`IdfTable` of everything added so far."""
        return IdfTable.from_frequencies(self._counts, self.n_documents)


class SpilledDocumentFrequencies:
    """:class:`DocumentFrequencies` in bounded memory, for runs of any size.

    ``add`` writes each batch's distinct texts to a Parquet work file as (64-bit hash, distinct
    words); :meth:`idf` has DuckDB keep one row per hash and count the words, spilling to
    ``temp_dir`` beyond ``memory_limit``. Same texts, same hash, same words: the same table as
    :class:`DocumentFrequencies`, without holding the hashes of every text seen.
    """

    def __init__(self, path: Path, memory_limit: str = "512MB") -> None:
        self.path = path
        self.memory_limit = memory_limit
        self._writer: pq.ParquetWriter | None = None
        self._schema = pa.schema(
            [("hash", pa.uint64()), ("words", pa.large_list(pa.large_string()))]
        )

    def add(self, texts: pl.Series) -> None:
        """Spill the distinct non-null texts of a batch (hash and distinct words)."""
        batch = pl.DataFrame({"text": texts.cast(pl.String)}).drop_nulls()
        # Deduplicated before tokenizing: a question recurs on the rows of every model and
        # noise level, and only its first occurrence needs its words.
        rows = (
            batch.select(hash=pl.col("text").hash(seed=_TEXT_HASH_SEED), text=pl.col("text"))
            .unique("hash")
            .select("hash", words=tfidf_tokens(pl.col("text")).list.unique())
        )
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self._schema, compression="zstd")
        self._writer.write_table(rows.to_arrow().cast(self._schema))

    def idf(self) -> IdfTable:
        """The :class:`IdfTable` of everything added (closes the work file)."""
        if self._writer is None:
            return IdfTable.from_frequencies(
                pl.DataFrame(schema={"word": pl.String, "df": pl.Int64}), 0
            )
        self._writer.close()
        source = sql_string(str(self.path))
        temp = sql_string(str(self.path.parent / "duckdb.tmp"))
        with duckdb.connect(config={"memory_limit": self.memory_limit, "threads": 2}) as db:
            db.execute(f"set temp_directory = '{temp}'")
            db.execute(
                "create temp table texts as select hash, any_value(words) as words from "
                f"read_parquet('{source}', hive_partitioning = false) group by hash"
            )
            n_documents = int(db.sql("select count(*) from texts").fetchall()[0][0])
            frequencies = db.sql(
                "select word, count(*)::bigint as df from "
                "(select unnest(words) as word from texts) group by word"
            ).pl()
        return IdfTable.from_frequencies(frequencies, n_documents)


def _token_ids(tokens: pl.Series, words: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, word id) of every token whose word is in ``words``, and the token count per row."""
    lengths = tokens.list.len().fill_null(0).to_numpy()
    rows = np.repeat(np.arange(len(tokens), dtype=np.uint64), lengths)
    flat = tokens.explode(empty_as_null=False, keep_nulls=False)
    ids = flat.replace_strict(
        words, pl.int_range(len(words), eager=True, dtype=pl.UInt64), default=None
    )
    known = ids.is_not_null().to_numpy()
    return rows[known], ids.filter(known).to_numpy(), lengths


def _cosine(columns: list[pl.Series], weighted: pl.DataFrame) -> pl.Series:
    """Cosines of a batch; ``weighted`` holds the table's words of non-zero idf.

    One sort of (row, word, side) keys, then run lengths (counts) and bincounts (sums per row).
    """
    n_rows = max(len(column) for column in columns)
    # A literal (length 1) is broadcast against a column.
    question, response = (
        (column.new_from_index(0, n_rows) if len(column) == 1 else column).cast(pl.String)
        for column in columns
    )
    tokens = pl.DataFrame({"q": question, "r": response}).select(
        q=tfidf_tokens(pl.col("q")), r=tfidf_tokens(pl.col("r"))
    )
    idf = weighted["idf"].to_numpy()
    q_rows, q_ids, q_lengths = _token_ids(tokens["q"], weighted["word"])
    r_rows, r_ids, r_lengths = _token_ids(tokens["r"], weighted["word"])
    # key = (row, word id, side); equal keys are equal tokens, sorting puts q before r.
    keys = np.sort(
        np.concatenate([(q_rows << 33) | (q_ids << 1), (r_rows << 33) | (r_ids << 1) | 1])
    )
    starts = np.flatnonzero(np.concatenate([[len(keys) > 0], keys[1:] != keys[:-1]]))
    counts = np.diff(np.append(starts, len(keys))).astype(np.float64)
    unique = keys[starts]
    side, word, row = unique & 1, (unique >> 1) & 0xFFFFFFFF, (unique >> 33).astype(np.intp)
    lengths = np.where(side == 0, q_lengths[row], r_lengths[row])
    weight = counts / lengths * idf[word]  # tf * idf
    is_q = side == 0
    q_norm = np.sqrt(np.bincount(row[is_q], weights=weight[is_q] ** 2, minlength=n_rows))
    r_norm = np.sqrt(np.bincount(row[~is_q], weights=weight[~is_q] ** 2, minlength=n_rows))
    # A word in both texts: its q key is directly followed by its r key.
    both = is_q[:-1] & ((unique[1:] >> 1) == (unique[:-1] >> 1))
    dot = np.bincount(
        row[:-1][both], weights=weight[:-1][both] * weight[1:][both], minlength=n_rows
    )
    norms = q_norm * r_norm
    with np.errstate(divide="ignore", invalid="ignore"):
        cosine = np.where(norms > 0, np.minimum(dot / norms, 1.0), 0.0)
    missing = (tokens["q"].is_null() | tokens["r"].is_null()).to_numpy()
    return pl.Series(cosine, dtype=pl.Float64).scatter(np.flatnonzero(missing), None)


def tfidf_relevance(question: pl.Expr, response: pl.Expr, idf: IdfTable) -> pl.Expr:
    """Cosine of the TF-IDF vectors of question and response texts (Float64 in [0, 1]).

    >>> import polars as pl
    >>> corpus = pl.Series(["the cat sits on the mat", "the cat is on the mat",
    ...                     "dogs run in the park", "birds fly in the sky"])
    >>> table = IdfTable.from_texts(corpus)
    >>> score = tfidf_relevance(pl.lit(corpus[0]), pl.lit(corpus[1]), table)
    >>> round(pl.select(score).item(), 4)
    0.4286
    """
    return pl.map_batches(
        [question, response],
        # idf-0 words add nothing to any vector: only the others are looked up.
        partial(_cosine, weighted=idf.table.filter(pl.col("idf") > 0)),
        return_dtype=pl.Float64,
        is_elementwise=True,
    )
