"""Grounding benchmark of issue 25: how often each grounding rule is right on labeled claims.

    python bench/bench_grounding.py [--rgb-dir DIR] [--backends minilm,minilm-f32,static]
        [--slice N] [--json OUT.json] [--markdown OUT.md]
        [--speed-baseline REV] [--speed-rows 20000]

Claims come from the real RGB data (:mod:`grounding_claims`): each claim cites one passage that
states it (``stated``), a passage on the same topic that does not (``same_topic``) or the
counterfactual passage with the fake answer (``counterfactual``). A claim is scored as the
response ``"<claim> [1]."`` with ``contexts = [passage]`` and its question, through
:func:`pipeline.metrics.embedding.grounding.grounding_counts` exactly as a run scores it; it
is judged supported when every sentence of it is.

Reported per language, backend and rule (``evidence``, the default, at its default thresholds;
``cosine``, the core RAG tool's, at the backend's ``tau_sim``):

* **accuracy**: share of right decisions on stated vs same-topic claims (half each side);
* **precision / recall** of "supported" on the same claims;
* **counterfactual supported**: share of counterfactual claims judged supported (lower is
  better).

Calibration: for each backend, the cosine rule's accuracy over a sweep of ``tau_sim``, and the
evidence rule's accuracy over a grid of ``tau_lex`` x ``tau_sim``, on the English and Chinese
claims; the tables show the best thresholds beside the defaults.

``--speed-baseline REV`` also times the default metric set of ``rag-eval evaluate`` on the long
RAG rows of the embedding benchmark (``bench/rag_long.py``, ``--speed-rows``) with this tree
and with a git worktree of ``REV``, alternating, best of three each, warm embedding cache; wall
seconds and CPU seconds (user + system of the child, steadier on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import against_baseline, baseline_line  # noqa: E402
from grounding_claims import labeled_claims, slice_claims  # noqa: E402

from pipeline.config import BACKEND_TAU_SIM, DEFAULT_TAU_LEX, DEFAULT_TAU_SIM  # noqa: E402
from pipeline.embed import make_embedder  # noqa: E402
from pipeline.metrics.embedding.grounding import grounding_counts  # noqa: E402
from pipeline.metrics.embedding.support import claim_support  # noqa: E402
from pipeline.text.sentences import split_sentences  # noqa: E402

RGB_DIR = ROOT.parent / "shared" / "data" / "rgb"
BACKENDS = ("minilm", "minilm-f32", "static")
RULES = ("evidence", "cosine")


def as_responses(claims: pl.DataFrame) -> pl.DataFrame:
    """The claims as rows a run scores: each sentence of the claim (the pipeline's splitter)
    ends with `` [1]`` before its final punctuation, citing the claim's one passage."""
    marked = split_sentences(pl.col("claim")).list.eval(
        pl.element().str.replace(r"^(.*?)([.。!?！？]*)$", "${1} [1]${2}")
    ).list.join(" ")
    return claims.select(
        marked.alias("response"), pl.concat_list(pl.col("passage")).alias("contexts"), "question",
    )


def decisions(claims: pl.DataFrame, backend: str, rule: str, **thresholds: float) -> np.ndarray:
    """Whether each claim is judged supported (every sentence of its response)."""
    embedder = make_embedder(backend, cache_dir=None)
    tau = thresholds.get("tau_sim", BACKEND_TAU_SIM.get(backend, DEFAULT_TAU_SIM))
    out = grounding_counts(
        as_responses(claims), embedder, rule=rule, tau_sim=tau,
        tau_lex=thresholds.get("tau_lex", DEFAULT_TAU_LEX),
    )
    return ((out["n_sentences"] > 0) & (out["n_supported"] == out["n_sentences"])).to_numpy()


def scores(claims: pl.DataFrame, supported: np.ndarray) -> dict[str, float]:
    """Accuracy, precision, recall (stated vs same-topic) and the counterfactual rate."""
    condition = claims["condition"].to_numpy()
    pair = condition != "counterfactual"
    truth = condition[pair] == "stated"
    said = supported[pair]
    tp = int((said & truth).sum())
    counter = supported[condition == "counterfactual"]
    return {
        "n": int(pair.sum()),
        "accuracy": float((said == truth).mean()) if pair.any() else float("nan"),
        "precision": tp / int(said.sum()) if said.any() else float("nan"),
        "recall": tp / int(truth.sum()) if truth.any() else float("nan"),
        "n_counterfactual": int(counter.size),
        "counterfactual_supported": float(counter.mean()) if counter.size else float("nan"),
    }


def calibrate(claims: pl.DataFrame, backend: str) -> dict[str, dict[str, object]]:
    """Accuracy (stated vs same topic) over thresholds, per language, from one set of cosines
    and lexical features (the same decisions as the rules, without re-running them)."""
    embedder = make_embedder(backend, cache_dir=None)
    pairs = claims.select(
        pl.col("claim").str.replace(r"[.。!?！？]+$", "").alias("claim"), "passage", "question"
    )
    cosine = embedder.paired_dots(pairs["claim"], pairs["passage"], label="calibration")
    facts = claim_support(
        pairs.rename({"passage": "evidence"}).with_columns(
            claims["lang"], pl.int_range(pl.len(), dtype=pl.Int64).alias("_row")),
        tau_lex=0.0,
    )
    anchored = facts["anchored"].to_numpy()
    coverage = facts["coverage"].to_numpy()
    condition = claims["condition"].to_numpy()
    out: dict[str, dict[str, object]] = {}
    taus = np.round(np.arange(0.20, 0.951, 0.01), 2)
    lexes = np.round(np.arange(0.0, 1.001, 0.05), 2)
    for lang in ("en", "zh"):
        mask = (claims["lang"] == lang).to_numpy() & (condition != "counterfactual")
        counter = (claims["lang"] == lang).to_numpy() & (condition == "counterfactual")
        truth = condition[mask] == "stated"
        cos_acc = [float(((cosine[mask] >= t) == truth).mean()) for t in taus]
        best = int(np.argmax(cos_acc))
        grid = []
        for lex in lexes:
            for t in taus:
                said = anchored & ((coverage >= lex) | (cosine >= t))
                grid.append((float(((said[mask]) == truth).mean()),
                             float(said[counter].mean()) if counter.any() else float("nan"),
                             float(lex), float(t)))
        grid.sort(key=lambda g: (-g[0], g[1]))
        out[lang] = {
            "cosine_best_tau": float(taus[best]), "cosine_best_accuracy": cos_acc[best],
            "cosine_counterfactual_at_best": float((cosine[counter] >= taus[best]).mean())
            if counter.any() else float("nan"),
            "evidence_best": {"accuracy": grid[0][0], "counterfactual_supported": grid[0][1],
                              "tau_lex": grid[0][2], "tau_sim": grid[0][3]},
        }
    return out


def speed(rows: int, baseline: str) -> dict[str, Any]:
    """``rag-eval evaluate`` (default metrics) on long RAG rows: this tree against a worktree of
    ``baseline``; best of three alternating runs each, warm cache (:func:`against_baseline`)."""
    from rag_long import rag_records

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "long.parquet"
        rag_records(rows).write_parquet(data)
        result = against_baseline(
            baseline, ["evaluate", "--input", str(data), "--no-progress"], work
        )
    return {"rows": rows, **result}


def markdown(results: dict[str, object]) -> str:
    lines = ["| language | backend | rule | accuracy | precision | recall | counterfactual "
             "supported | claims |", "|---|---|---|---|---|---|---|---|"]
    for row in results["rules"]:  # type: ignore[union-attr]
        lines.append(
            f"| {row['lang']} | {row['backend']} | {row['rule']} | {row['accuracy']:.3f} | "
            f"{row['precision']:.3f} | {row['recall']:.3f} | "
            f"{row['counterfactual_supported']:.3f} | {row['n']} + {row['n_counterfactual']} |"
        )
    lines += ["", "| backend | language | cosine: best tau_sim (accuracy, counterfactual) | "
              "evidence: best tau_lex / tau_sim (accuracy, counterfactual) |",
              "|---|---|---|---|"]
    for backend, langs in results["calibration"].items():  # type: ignore[union-attr]
        for lang, c in langs.items():
            e = c["evidence_best"]
            lines.append(
                f"| {backend} | {lang} | {c['cosine_best_tau']:.2f} "
                f"({c['cosine_best_accuracy']:.3f}, {c['cosine_counterfactual_at_best']:.3f}) | "
                f"{e['tau_lex']:.2f} / {e['tau_sim']:.2f} ({e['accuracy']:.3f}, "
                f"{e['counterfactual_supported']:.3f}) |"
            )
    if "speed" in results:
        s = results["speed"]
        lines += ["", baseline_line(f"Default metric set, {s['rows']:,} long RAG rows, warm "
                                    "cache, best of 3", s)]
    return "\n".join(lines) + "\n"


def run(claims: pl.DataFrame, backends: list[str]) -> dict[str, object]:
    rows: list[dict[str, object]] = []
    calibration: dict[str, object] = {}
    for backend in backends:
        for rule in RULES:
            supported = decisions(claims, backend, rule)
            for lang in ("en", "zh"):
                mask = (claims["lang"] == lang).to_numpy()
                rows.append({"lang": lang, "backend": backend, "rule": rule,
                             **scores(claims.filter(mask), supported[mask])})
                written = mask & (claims["source"] == "handwritten").to_numpy()
                if written.any():
                    rows.append({"lang": f"{lang} (hand-written only)", "backend": backend,
                                 "rule": rule,
                                 **scores(claims.filter(written), supported[written])})
        calibration[backend] = calibrate(claims, backend)
    return {"rules": rows, "calibration": calibration}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rgb-dir", type=Path, default=RGB_DIR)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--slice", type=int, default=0,
                        help="only the first N claims of each (language, condition)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--speed-baseline", help="git revision to time the default run against")
    parser.add_argument("--speed-rows", type=int, default=20_000)
    parser.add_argument("--speed-only", action="store_true", help="skip the accuracy tables")
    args = parser.parse_args()
    results: dict[str, object] = {"rules": [], "calibration": {}}
    if not args.speed_only:
        claims = labeled_claims(args.rgb_dir)
        if args.slice:
            claims = slice_claims(claims, args.slice)
        results = run(claims, args.backends.split(","))
    if args.speed_baseline:
        results["speed"] = speed(args.speed_rows, args.speed_baseline)
    text = markdown(results)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
