"""Long-text RAG records for the embedding benchmarks (the shape of issue 14).

One question per ``GROUP`` rows (3 models x 5 noise levels); 2-4 passages of 30-80 words per
question; responses of about 100 words (5-7 sentences of 12-20 words). Words are whole-word
entries of the all-MiniLM-L6-v2 WordPiece vocabulary, so the model sees real English tokens.
A response sentence copies a window of one passage and replaces a share of its words that grows
with the noise level (a stronger model replaces fewer), then cites that passage with ``[n]``;
some sentences are off-topic, cite a wrong passage, or carry no marker, so grounding decisions
and semantic similarities spread over their range. Deterministic for a seed.

    python bench/rag_long.py OUT.parquet [--rows 20000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ("model-alpha", "model-beta", "model-gamma")
NOISE_LEVELS = (0.0, 0.2, 0.4, 0.6, 0.8)
GROUP = len(MODELS) * len(NOISE_LEVELS)
FUNCTION_WORDS = ("the", "the", "of", "and", "in", "a", "to", "was", "is", "for", "by", "with",
                  "on", "that", "it", "as", "from", "at")


def english_words() -> np.ndarray:
    """Whole lowercase words of 4+ letters from the MiniLM vocabulary, in vocabulary order.

    The vocabulary is the one inside the tokenizer file shipped with the package (token -> id;
    the same list as the model's ``vocab.txt``), from id 2000 on.
    """
    from pipeline.embed.backends import _minilm_tokenizer_path

    tokenizer = json.loads(_minilm_tokenizer_path().read_text(encoding="utf-8"))
    vocab: dict[str, int] = tokenizer["model"]["vocab"]
    words = [w for w in sorted(vocab, key=vocab.__getitem__)[2000:]
             if len(w) >= 4 and w.isascii() and w.isalpha() and w.islower()]
    return np.array(words, dtype=object)


def _sentence(rng: np.random.Generator, pool: np.ndarray, n: int) -> list[str]:
    words = pool[rng.integers(0, len(pool), size=n)].tolist()
    function = rng.random(n) < 0.3
    return [FUNCTION_WORDS[rng.integers(len(FUNCTION_WORDS))] if f else w
            for w, f in zip(words, function, strict=True)]


def _text(words: list[str]) -> str:
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def rag_records(n_rows: int, seed: int = 0) -> pl.DataFrame:
    """``n_rows`` records in the canonical schema (see the module docstring)."""
    from pipeline.schema import RECORD_SCHEMA

    rng = np.random.default_rng(seed)
    vocab = english_words()
    rows: list[dict[str, object]] = []
    n_questions = -(-n_rows // GROUP)
    for q in range(n_questions):
        topic = vocab[rng.integers(0, len(vocab), size=30)]
        question = "What is the " + " ".join(topic[:4].tolist()) + "?"
        reference = _text(_sentence(rng, topic, int(rng.integers(10, 18))))
        n_ctx = int(rng.integers(2, 5))
        passages: list[list[str]] = []
        for _ in range(n_ctx):
            words: list[str] = []
            target = int(rng.integers(30, 81))
            while len(words) < target:
                words += _sentence(rng, topic if rng.random() < 0.7 else vocab,
                                   int(rng.integers(8, 16)))
            passages.append(words[:target])
        contexts = [_text(p) for p in passages]
        gold = int(rng.integers(1, n_ctx + 1))
        for r in range(GROUP):
            if len(rows) == n_rows:
                break
            model, noise = r % len(MODELS), NOISE_LEVELS[r // len(MODELS)]
            replace = min(0.9, noise * (0.6 + 0.3 * model) + rng.random() * 0.2)
            sentences = []
            for _ in range(int(rng.integers(5, 8))):
                n = int(rng.integers(12, 21))
                cite = int(rng.integers(1, n_ctx + 1))
                source = passages[cite - 1]
                start = int(rng.integers(0, max(1, len(source) - n)))
                words = list(source[start:start + n])
                swap = rng.random(len(words)) < replace
                other = vocab[rng.integers(0, len(vocab), size=len(words))].tolist()
                words = [o if s else w for w, o, s in zip(words, other, swap, strict=True)]
                roll = rng.random()
                if roll < 0.1:
                    words = _sentence(rng, vocab, n)  # off-topic
                marker = "" if roll > 0.9 else f" [{cite if roll > 0.2 else cite % n_ctx + 1}]"
                sentences.append(_text(words)[:-1] + marker + ".")
            response = " ".join(sentences)
            cited = sorted({int(m) for m in __import__("re").findall(r"\[(\d+)\]", response)})
            rows.append({
                "id": f"q{q:06d}", "question": question, "reference": reference,
                "response": response, "references": None,
                "citations": cited if rng.random() > 0.3 else None, "gold_citations": [gold],
                "contexts": contexts, "category": "long", "model": MODELS[model], "run": "run-1",
                "noise_level": noise, "question_type": "fact", "doc_id": f"doc-{q:06d}",
                "prompt_tokens": 400, "completion_tokens": 140, "total_tokens": 540,
                "latency_ms": 900.0,
            })
    frame = pl.DataFrame(rows, schema={k: v for k, v in RECORD_SCHEMA.items()
                                       if k in rows[0]})
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    frame = rag_records(args.rows, args.seed)
    frame.write_parquet(args.out)
    words = frame.select(pl.col("response").str.count_matches(r"\S+").mean()).item()
    print(f"{frame.height} rows, {frame['id'].n_unique()} questions, "
          f"{words:.0f} words per response -> {args.out}")


if __name__ == "__main__":
    main()
