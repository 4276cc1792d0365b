"""Small pure-Python oracles written from the metric definitions, one row at a time.

The SQuAD functions follow the official SQuAD v2 evaluation script (evaluate-v2.0.py) line for
line; the citation oracle follows the convention documented in ``pipeline.metrics.qa.citation``.
They are deliberately slow and obvious: tests compare the vectorized expressions with them.
"""

from __future__ import annotations

import collections
import re
import string


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (official script)."""

    def remove_articles(text: str) -> str:
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def get_tokens(s: str) -> list[str]:
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold: str, a_pred: str) -> int:
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def squad_scores(golds: list[str], pred: str) -> tuple[int, float]:
    """(EM, F1) of one prediction against several gold answers, as ``get_raw_scores`` does."""
    gold_answers = [a for a in golds if normalize_answer(a)]
    if not gold_answers:
        gold_answers = [""]
    exact = max(compute_exact(a, pred) for a in gold_answers)
    f1 = max(compute_f1(a, pred) for a in gold_answers)
    return exact, f1


def strict_exact(golds: list[str], pred: str) -> int:
    """1 when equal after lowercasing and collapsing whitespace only."""
    norm = lambda s: " ".join(s.lower().split())  # noqa: E731
    return int(any(norm(g) == norm(pred) for g in golds))


def citation_prf(pred: list[int], gold: list[int]) -> tuple[float, float, float]:
    """Citation precision, recall, F1 over sets; both empty: 1.0; one side empty: 0.0."""
    p, g = set(pred), set(gold)
    if not p and not g:
        return 1.0, 1.0, 1.0
    if not p or not g:
        return 0.0, 0.0, 0.0
    tp = len(p & g)
    precision = tp / len(p)
    recall = tp / len(g)
    f1 = 0.0 if tp == 0 else (2 * precision * recall) / (precision + recall)
    return precision, recall, f1


CITATION_MARKER = r"\[\s*\d{1,9}(?:\s*[,;]\s*\d{1,9})*\s*\]"


def strip_markers(text: str) -> str:
    """The response without its ``[n]`` citation markers (what answer metrics score)."""
    return re.sub(CITATION_MARKER, "", text)


def parse_markers(text: str) -> list[int]:
    """Distinct numbers in ``[n]`` / ``[n, m]`` markers, in order of first appearance."""
    seen: list[int] = []
    for group in re.findall(CITATION_MARKER, text):
        for number in re.findall(r"\d+", group):
            if int(number) not in seen:
                seen.append(int(number))
    return seen
