"""Phrase lists of the RGB checks (:mod:`pipeline.metrics.robustness.rgb_detect`): the
defaults, which ``[rgb]`` in the config can replace, and the RGB app's own lists (preset
``rgb-app``, docs/compat.md)."""

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
    # the RGB app's keywords the list above lacked ("unable to determine" is left out: every
    # text containing it contains "unable to", so it could change no flag)
    "i cannot",
    "i can't",
    "not able to",
    "insufficient information",
    "don't have enough",
    "cannot find",
    "not specified",
    "unclear",
    "unknown",
    "i am not sure",
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

#: The RGB app's rejection phrases and error keywords, verbatim and in its order (preset
#: ``rgb-app``, docs/compat.md). It matches them as substrings of ``response.lower()``.
RGB_APP_PRIMARY_REJECTIONS: tuple[str, ...] = (
    "i can not answer the question because of the insufficient information in documents",
    "insufficient information in documents",
    "can not answer",
    "cannot answer",
)
RGB_APP_SECONDARY_REJECTIONS: tuple[str, ...] = (
    "i don't know", "i cannot", "i can't", "unable to", "not able to",
    "insufficient information", "no information", "cannot determine", "cannot answer",
    "not enough information", "don't have enough", "unable to determine", "cannot find",
    "no relevant", "not mentioned", "not provided", "not specified", "unclear", "unknown",
    "i'm not sure", "i am not sure", "cannot be determined", "information is not available",
    "does not provide",
)
RGB_APP_ERROR_KEYWORDS: tuple[str, ...] = (
    "incorrect", "wrong", "false", "error", "mistake", "inaccurate", "not true", "not correct",
    "factually incorrect", "contradicts", "actually", "in fact", "however", "but actually",
    "the correct answer", "should be",
)
