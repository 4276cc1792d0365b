"""Builds the WordNet tables that :mod:`pipeline.text.wordnet` reads, from WordNet's dict files.

``python -m pipeline.text.wordnet_table DICT_DIR OUT_DIR`` reads the ``index.{noun,verb,adj,adv}``
and ``{noun,verb,adj,adv}.exc`` files of a WordNet dict directory (the WordNet 3.0 release
format, as nltk's ``WordNetCorpusReader`` reads it) and writes:

* ``wordnet-3.0-senses.parquet``, one row per (part of speech, lemma, synset): ``pos`` (``n``,
  ``v``, ``a``, ``r``), ``lemma`` (lowercase, ``_`` between words) and ``synset`` (the synset's
  byte offset in ``data.<pos>``, which names it within its part of speech). These are the index
  files' lemma -> synsets lists, which nltk's ``_morphy`` checks forms against and
  ``synsets()`` follows; they also give every synset's members, since the index lists each
  member of each synset (in WordNet 3.0 the 206,941 index pairs are exactly the data files'
  lemma names, lowercased and without adjective markers).
* ``wordnet-3.0-exceptions.parquet``, one row per (part of speech, inflected form, base form):
  ``pos``, ``form``, ``base`` and ``rank`` (the base's place on its line, from 0). A form listed
  twice keeps its last line, as nltk's dict does.

and copies ``LICENSE`` to ``LICENSE-wordnet-3.0.txt`` (with ``\\n`` line ends). Nothing else of
WordNet (glosses, relations, sense counts) is kept. Lines starting with a space (the licence
header) are skipped; ``\\r\\n`` line ends are read like ``\\n``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pipeline.rules.files import WORDNET_EXCEPTIONS_FILE, WORDNET_SENSES_FILE

#: WordNet's parts of speech, in nltk's order, and the file suffix of each.
POS_FILES: dict[str, str] = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
POS = pl.Enum(list(POS_FILES))

LICENSE_FILE = "LICENSE-wordnet-3.0.txt"

SENSES_SCHEMA = {"pos": POS, "lemma": pl.String(), "synset": pl.UInt32()}
EXCEPTIONS_SCHEMA = {"pos": POS, "form": pl.String(), "base": pl.String(), "rank": pl.UInt8()}


def _lines(path: Path) -> pl.Series:
    """The whitespace-split lines of a dict file, without the licence header lines."""
    lines = [line for line in path.read_text("utf-8").splitlines() if line.strip()]
    return pl.Series("tokens", [line.split() for line in lines if not line.startswith(" ")],
                     dtype=pl.List(pl.String))


def read_index(dict_dir: Path, pos: str) -> pl.DataFrame:
    """(pos, lemma, synset) of ``index.<pos>``: ``lemma pos synset_cnt p_cnt [ptr_symbol...]
    sense_cnt tagsense_cnt synset_offset...`` (``synset_cnt`` offsets after the ``p_cnt``
    pointer symbols and the two counts)."""
    tokens = pl.col("tokens")
    pointers = tokens.list.get(3).cast(pl.Int64)
    frame = pl.DataFrame(_lines(dict_dir / f"index.{POS_FILES[pos]}")).select(
        lemma=tokens.list.get(0),
        file_pos=tokens.list.get(1),
        synset=tokens.list.slice(6 + pointers),
        count=tokens.list.get(2).cast(pl.Int64),
    )
    wrong = frame.filter(
        (pl.col("file_pos") != pos) | (pl.col("synset").list.len() != pl.col("count"))
    )
    if wrong.height:
        raise ValueError(f"index.{POS_FILES[pos]}: malformed line for {wrong['lemma'][0]!r}")
    return frame.explode("synset").select(
        pos=pl.lit(pos, dtype=POS), lemma="lemma", synset=pl.col("synset").cast(pl.UInt32)
    )


def read_exceptions(dict_dir: Path, pos: str) -> pl.DataFrame:
    """(pos, form, base, rank) of ``<pos>.exc``: ``form base...`` per line; a form on several
    lines keeps the last."""
    frame = pl.DataFrame(_lines(dict_dir / f"{POS_FILES[pos]}.exc")).select(
        form=pl.col("tokens").list.get(0), base=pl.col("tokens").list.slice(1)
    )
    if frame.filter(pl.col("base").list.len() == 0).height:
        raise ValueError(f"{POS_FILES[pos]}.exc: a line without a base form")
    return (
        frame.unique("form", keep="last", maintain_order=True)
        .with_columns(rank=pl.int_ranges(pl.col("base").list.len(), dtype=pl.UInt8))
        .explode("base", "rank")
        .select(pos=pl.lit(pos, dtype=POS), form="form", base="base", rank="rank")
    )


def build(dict_dir: Path, out_dir: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read ``dict_dir`` and write the two tables and the licence into ``out_dir``."""
    senses = pl.concat([read_index(dict_dir, pos) for pos in POS_FILES]).sort(
        "pos", "lemma", "synset"
    )
    exceptions = pl.concat([read_exceptions(dict_dir, pos) for pos in POS_FILES]).sort(
        "pos", "form", "rank"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    for frame, name in ((senses, WORDNET_SENSES_FILE), (exceptions, WORDNET_EXCEPTIONS_FILE)):
        frame.write_parquet(out_dir / name, compression="zstd", compression_level=22,
                            statistics=False)
    licence = (dict_dir / "LICENSE").read_text("utf-8").splitlines()
    (out_dir / LICENSE_FILE).write_text("\n".join(licence) + "\n", "utf-8")
    return senses, exceptions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.text.wordnet_table",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("dict_dir", type=Path, help="WordNet dict directory (index.noun, ...)")
    parser.add_argument("out_dir", type=Path, help="where to write the tables (pipeline/data)")
    args = parser.parse_args(argv)
    senses, exceptions = build(args.dict_dir, args.out_dir)
    print(f"wrote {senses.height} senses and {exceptions.height} exception forms "
          f"to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
