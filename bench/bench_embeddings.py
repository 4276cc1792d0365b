"""Embedding throughput (unique texts/s) and the effect of the on-disk cache on a second run.

Generates ``--texts`` distinct short sentences (each repeated ``--repeat`` times, as a
reference is repeated across models and noise levels), embeds them with a cold cache, then again
with a new embedder on the same cache directory, as a second ``evaluate`` run would.

    python bench/bench_embeddings.py [--texts 2000] [--repeat 5] [--backend minilm]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from common import random_texts

SUBJECTS = np.array(["The river", "A small town", "The museum", "Our bridge", "The old mill",
                     "This compound", "The festival", "A local doctor", "The harbour"])
WORDS = np.array(["opened", "in", "1889", "near", "the", "hills", "north", "of", "Veloria",
                  "and", "draws", "visitors", "every", "spring", "because", "its", "water",
                  "stays", "cold", "salt", "blue", "tower", "was", "rebuilt", "after", "fire"])


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    heads = SUBJECTS[rng.integers(0, len(SUBJECTS), size=n)].tolist()
    tails = random_texts(rng, WORDS, n, 4, 14)
    unique = dict.fromkeys(f"{h} {t} #{i}." for i, (h, t) in enumerate(zip(heads, tails,
                                                                           strict=True)))
    return list(unique)


def main() -> None:
    from pipeline.embed import CachedEmbedder, EmbeddingCache, backend_from_spec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", default="minilm")
    args = parser.parse_args()
    texts = pl.Series(sentences(args.texts) * args.repeat)
    t0 = time.perf_counter()
    backend = backend_from_spec(args.backend)
    print(f"backend {backend.name} ({backend.model_id}) loaded in {time.perf_counter() - t0:.2f}s")
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'run':<22}{'texts':>8}{'unique':>8}{'hits':>8}{'encoded':>9}{'seconds':>9}"
              f"{'unique texts/s':>16}")
        for run in ("cold cache", "second run (warm)"):
            embedder = CachedEmbedder(backend, EmbeddingCache(Path(tmp)))
            start = time.perf_counter()
            embedder.embed(texts)
            seconds = time.perf_counter() - start
            s = embedder.last
            print(f"{run:<22}{s.texts:>8,}{s.unique:>8,}{s.hits:>8,}{s.encoded:>9,}"
                  f"{seconds:>9.2f}{s.unique / seconds:>16,.0f}")


if __name__ == "__main__":
    main()
