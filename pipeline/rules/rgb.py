"""Default phrase lists of the lenient RGB checks
(:mod:`pipeline.metrics.robustness.rgb_detect`), which ``[rgb]`` in the config can replace."""

from __future__ import annotations

#: Rejection phrases RGB instructs models to use, and their common shortenings.
DEFAULT_PRIMARY_REJECTIONS: tuple[str, ...] = (
    "I can not answer the question because of the insufficient information in documents",
    "insufficient information in documents",
    "can not answer",
    "cannot answer",
)
#: Other wordings of "the documents do not say".
DEFAULT_SECONDARY_REJECTIONS: tuple[str, ...] = (
    "i don't know",
    "unable to",
    "not enough information",
    "cannot determine",
    "no relevant",
    "not mentioned",
    "not provided",
    "i'm not sure",
    "cannot be determined",
    "information is not available",
    "does not provide",
    "do not provide",
    "does not mention",
    "do not mention",
    "no information",
    "没有提到",
    "无法回答",
)
#: Words that signal the response flags a factual error (matched as whole words).
DEFAULT_ERROR_KEYWORDS: tuple[str, ...] = (
    "incorrect",
    "wrong",
    "false",
    "error",
    "mistake",
    "inaccurate",
    "not true",
    "not correct",
    "factually incorrect",
    "contradicts",
    "actually",
    "in fact",
    "however",
    "the correct answer",
    "should be",
)
