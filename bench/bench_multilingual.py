"""Multilingual benchmark of issue 26: what reading every script costs.

    python bench/bench_multilingual.py [--english-rows 1000000] [--chinese-rows 200000]
        [--baseline REV] [--rgb-dir DIR]

* **English-only run**: ``rag-eval evaluate --metrics answer,lexical`` (statistics on) on the
  short English rows of ``bench/bench_whole.py`` with this tree and with a git worktree of
  ``REV`` (the commit before the multilingual work), alternating, best of two each: the
  language detection, the ``auto`` answer scorer and tokenizers must cost English rows little.
* **Chinese EM/F1 in-process**: ``answer_em`` and ``answer_f1`` (``auto``: MLQA's rules with
  ``mixed_segmentation``, language detected per row) through
  :func:`pipeline.scoring.score_frame` on Chinese rows: RGB answers and windows of their
  passages when the RGB data is present, else synthetic Chinese text; best of three.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_whole import SHORT, generate  # noqa: E402
from common import against_baseline, baseline_line  # noqa: E402

from pipeline.config import Config  # noqa: E402
from pipeline.schema import PROVENANCE_SCHEMA, RECORD_SCHEMA  # noqa: E402
from pipeline.scoring import score_frame  # noqa: E402

RGB_DIR = ROOT.parent / "shared" / "data" / "rgb"
#: The last commit before the multilingual work (issue 26).
BASELINE = "7067551"


def chinese_rows(n: int, rgb_dir: Path) -> pl.DataFrame:
    """``n`` Chinese records: answer as reference, a 30-character passage window as response."""
    rng = np.random.default_rng(0)
    pairs: list[tuple[str, str]] = []
    path = rgb_dir / "zh_refine.json"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            answer = item["answer"][0]
            answer = answer[0] if isinstance(answer, list) else answer
            for passage in item["positive"]:
                start = int(rng.integers(0, max(1, len(passage) - 30)))
                pairs.append((str(answer), passage[start:start + 30]))
    else:
        chars = np.array(list("北京是中国的首都上海大城市冬奥会在举行年月日人民政府经济增长"))
        pairs = [("".join(rng.choice(chars, 4)), "".join(rng.choice(chars, 30)))
                 for _ in range(1000)]
    picks = rng.integers(0, len(pairs), size=n)
    refs, resps = zip(*(pairs[i] for i in picks), strict=True)
    frame = pl.DataFrame({"id": [str(i) for i in range(n)], "question": ["问题"] * n,
                          "reference": list(refs), "response": list(resps)})
    schema = {**RECORD_SCHEMA, **PROVENANCE_SCHEMA}
    return frame.with_columns(
        [pl.lit(None, dtype=d).alias(c) for c, d in schema.items() if c not in frame.columns]
    ).with_columns(source=pl.lit("zh"), row_number=pl.int_range(pl.len(), dtype=pl.Int64))


def chinese_rate(n: int, rgb_dir: Path) -> dict[str, float]:
    frame = chinese_rows(n, rgb_dir)
    config = Config(metrics=("answer_em", "answer_f1"))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        scores = score_frame(frame, config).collect()
        best = min(best, time.perf_counter() - start)
    return {"rows": n, "seconds": best, "rows_per_s": n / best,
            "mean_f1": float(scores["answer_f1"].mean() or 0.0),
            "zh_share": float((scores["lang"] == "zh").mean() or 0.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--english-rows", type=int, default=1_000_000)
    parser.add_argument("--chinese-rows", type=int, default=200_000)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--rgb-dir", type=Path, default=RGB_DIR)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    zh = chinese_rate(args.chinese_rows, args.rgb_dir)
    print(f"Chinese answer EM/F1 in-process: {zh['rows']:,} rows in {zh['seconds']:.2f} s "
          f"({zh['rows_per_s']:,.0f} rows/s; target >= 100,000; {zh['zh_share']:.0%} detected "
          f"zh, mean F1 {zh['mean_f1']:.3f})")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = generate(work / "english.parquet", args.english_rows, SHORT)
        english = against_baseline(
            args.baseline,
            ["evaluate", "--input", str(data), "--metrics", "answer,lexical", "--no-progress"],
            work, rounds=2, warm_up=False,
        )
    print(baseline_line(f"English-only run, answer + lexical, {args.english_rows:,} short rows, "
                        "best of 2", english) + " Target: at most +10 %.")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"chinese": zh, "english": english}, indent=2))


if __name__ == "__main__":
    main()
