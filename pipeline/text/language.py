"""The language of a row: given in the ``lang`` column, or detected from its text.

Metrics that tokenize by language (answer EM/F1 by MLQA's rules, sacreBLEU's tokenizers, ROUGE
on every script) read one ``lang`` per row, an ISO 639-1 code:

1. the record's ``lang`` column, lowercased and stripped, when it is set (``zh``, ``ja``,
   ``ru`` ...; a region or script suffix is dropped: ``zh-Hans`` -> ``zh``);
2. else the RGB ``language`` column (the data set's language, ``en`` or ``zh``), the same way;
3. else **detected** from ``reference`` and ``response`` together (:func:`detect_language`):

   * by **script**: the script with most letters names the language — Han ``zh`` (``ja``
     when the text also holds kana), kana ``ja``, Hangul ``ko``, Thai ``th``, Cyrillic
     ``ru``, Arabic ``ar``, Devanagari ``hi``, Greek ``el``, Hebrew ``he``, Latin ``en``; a
     text without letters is ``und`` (undetermined). Han also wins where Latin letters are
     more: one Han character makes a Chinese answer that quotes English names ``zh`` (``ja``
     with kana, ``ko`` with Hangul);
   * a Latin-script row is then read by its **function words** (:data:`STOPWORDS`, about 60
     frequent words a language): German ``de``, French ``fr``, Spanish ``es``, Italian
     ``it``, Portuguese ``pt`` or Dutch ``nl`` where that language scores at least
     :data:`MIN_SCORE` points and more than English, else ``en``. A word of one list scores 2
     points, a word of several lists (``de``, ``la``, ``que``, ``in``) 1 for each of them.
     Words count only written in lower case, so names (``Los Angeles``, ``Die Hard``, ``De
     Niro``) do not; English words count capitalized too (``The``, ``It``), and ``van``,
     ``per``, ``come``, ``et`` ... are in the English list as well.
     Between languages with the same points, more of a language's :data:`LETTERS` (``ñ``,
     ``ã``, ``ä`` ...) decides, then the order of :data:`STOPWORDS`.

Limits: it takes about two function words of one language (``Der Turm ist nicht alt``); a short
answer (``Berlin``, ``1889``, ``Los Angeles``), a telegraphic one (``Goethe starb 1832 in
Weimar``) or one in capitals is ``en``. Other Latin-script languages (Vietnamese, Polish,
Turkish ...) are ``en`` or, where they share words, one of the six; Ukrainian is ``ru``,
Cantonese ``zh``. Set ``lang`` where that matters (MLQA removes different articles per
language).

Cost: one compiled pass over each row without a code (:mod:`pipeline.text.kernels.language`)
reads its scripts, words and letters at once; :func:`reference_language_stages` is the same
definition in polars expressions, kept as the kernel's reference (the tests compare them).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import polars as pl

from pipeline.text.kernels import language as kernels
from pipeline.text.kernels.buffers import string_buffers, strings_from_buffers, with_nulls

#: Scripts counted by :func:`detect_language`, in the order ties are broken, with the language
#: each stands for.
SCRIPT_LANGUAGES: tuple[tuple[str, str], ...] = (
    ("Han", "zh"),
    ("Hiragana|Katakana", "ja"),
    ("Hangul", "ko"),
    ("Thai", "th"),
    ("Cyrillic", "ru"),
    ("Arabic", "ar"),
    ("Devanagari", "hi"),
    ("Greek", "el"),
    ("Hebrew", "he"),
    ("Latin", "en"),
)
#: Frequent function words of each Latin-script language told apart, English first (the
#: language every other must outscore), the others in the order ties are broken. Words of
#: English are in another list only where they are a frequent word there too (``in``, ``is``,
#: ``a``); a word shared by several lists scores 1 for each.
STOPWORDS: dict[str, tuple[str, ...]] = {
    "en": ("the", "and", "of", "to", "that", "this", "these", "those", "with", "for", "from",
           "by", "on", "at", "or", "but", "not", "are", "were", "be", "been", "has", "have",
           "had", "it", "its", "which", "who", "what", "when", "where", "how", "there", "their",
           "they", "he", "she", "his", "her", "him", "would", "could", "will", "can", "into",
           "than", "about", "after", "because", "also", "is", "was", "in", "a", "an", "as",
           "do", "no", "e", "y", "et", "per", "come", "non", "van", "son", "war", "am"),
    "de": ("der", "die", "das", "und", "ist", "nicht", "ein", "eine", "einen", "einem",
           "einer", "eines", "dem", "den", "des", "mit", "sich", "auf", "für", "zu", "zum",
           "zur", "im", "vom", "auch", "sind", "wird", "wurde", "wurden", "werden", "nach",
           "bei", "aus", "noch", "nur", "oder", "aber", "wie", "sie", "ich", "wir", "ihre",
           "sein", "seine", "dass", "diese", "dieser", "über", "durch", "gegen", "zwischen",
           "sehr", "wenn", "kann", "gibt", "haben", "hat", "hatte", "waren", "wer", "wo", "vor",
           "er", "um", "war", "am", "in", "an"),
    "fr": ("le", "la", "les", "des", "du", "un", "une", "et", "est", "sont", "dans", "pas",
           "qui", "que", "qu", "pour", "sur", "au", "aux", "avec", "ce", "cette", "ces", "il",
           "ils", "elle", "ont", "été", "était", "mais", "où", "ou", "par", "nous", "vous", "leur",
           "ses", "sa", "ne", "à", "comme", "tout", "tous", "aussi", "peut", "lui", "même",
           "très", "sans", "quand", "son", "en", "de", "se", "si", "non", "a"),
    "es": ("el", "los", "las", "la", "del", "al", "lo", "un", "una", "uno", "unos", "unas",
           "es", "fue", "fueron", "está", "están", "estaba", "ser", "que", "por", "para",
           "con", "como", "más", "pero", "su", "sus", "muy", "también", "cuando", "donde",
           "hasta", "desde", "entre", "sobre", "ya", "había", "tiene", "tienen", "ella",
           "ellos", "él", "este", "esta", "eso", "esto", "otro", "otros", "mismo", "cual",
           "quien", "qué", "según", "porque", "durante", "dos", "nos", "ha", "son", "si", "se",
           "le", "de", "en", "no", "y", "a"),
    "it": ("il", "lo", "la", "gli", "le", "un", "una", "uno", "di", "del", "della", "dei",
           "degli", "delle", "nel", "nella", "nei", "al", "alla", "dal", "dalla", "sul",
           "sulla", "dell", "nell", "che", "è", "sono", "erano", "stato", "stata", "essere",
           "ha", "hanno", "anche", "più", "ma", "con", "su", "come", "per", "non", "si", "ne",
           "qui", "lui", "quando", "perché", "cui", "quale", "ancora", "tra", "già", "poi",
           "dopo", "tutto", "tutti", "ogni", "senza", "molto", "suo", "sua", "loro", "questo",
           "questa", "quella", "durante", "da", "in", "e", "a"),
    "pt": ("não", "é", "são", "um", "uma", "do", "da", "dos", "das", "os", "as", "no", "na",
           "nos", "nas", "ao", "aos", "pelo", "pela", "em", "que", "para", "por", "mais",
           "mas", "foi", "foram", "ser", "tem", "têm", "seu", "sua", "seus", "suas", "ele",
           "ela", "eles", "elas", "isso", "isto", "muito", "também", "quando", "onde", "já",
           "ainda", "depois", "até", "ou", "sem", "nem", "qual", "pode", "entre", "sobre",
           "desde", "durante", "este", "esta", "está", "porque", "como", "se", "de", "e", "a",
           "à"),
    "nl": ("de", "het", "een", "van", "en", "is", "in", "dat", "die", "niet", "zijn", "ook",
           "maar", "wordt", "werd", "worden", "naar", "bij", "voor", "uit", "deze", "dit",
           "wat", "hij", "zij", "ze", "nog", "om", "tot", "kan", "heeft", "hebben", "was",
           "waren", "hun", "haar", "geen", "meer", "veel", "omdat", "wel", "nu", "zo", "toen",
           "onder", "tussen", "tegen", "zonder", "hoe", "waar", "er", "wie", "op"),
}
#: Letters of each language other than English; where two languages score the same, the one
#: with more of its letters in the text wins. They never add up to a point (names such as
#: ``Müller`` or ``Peña`` are common in English text).
LETTERS: dict[str, str] = {"de": "äöüß", "fr": "àâçèêëîïôùûœ", "es": "áíñóú", "it": "àèìòù",
                           "pt": "àáâãçêíóõú"}
#: The least score (two words of one list only) that reads a row as other than English.
MIN_SCORE = 4
#: Helper column of :func:`language_stages`: whether the row's language is read with the
#: English tokenizers under ``auto`` (:func:`is_latin`), computed once per row.
LATIN = "_lang_latin"
#: The code of a row without letters.
UNDETERMINED = "und"

# A language's word points and letters are read from private-use marks (never in a text once
# non-letters are spaces): word marks from _WORD_MARK on, letter marks from _LETTER_MARK on, in
# the order of STOPWORDS. A score is the points times _POINT plus the letters (at most
# _POINT - 1), so that letters only break ties.
_WORD_MARK = 0xE000
_LETTER_MARK = 0xE100
_POINT = 1 << 20


# A character of a script detection counts other than Latin, or of one it does not know.
_OTHER_SCRIPT = r"[^\p{Latin}\p{Common}\p{Inherited}]"


def _class(scripts: str) -> str:
    return "[" + "".join(f"\\p{{{s}}}" for s in scripts.split("|")) + "]"


@cache
def _marks() -> dict[str, str]:
    """What :func:`mark_function_words` writes for each word (spaces around) and letter: a
    word's points as marks of its languages (2 in one list only, 1 in several; an English
    word capitalized, English's points only), a letter one mark of each language it belongs
    to."""
    lists = {code: frozenset(words) for code, words in STOPWORDS.items()}
    marks = {}
    for word in sorted(frozenset().union(*lists.values())):
        codes = [k for k, code in enumerate(lists) if word in lists[code]]
        points = 2 if len(codes) == 1 else 1
        marks[f" {word} "] = " " + "".join(chr(_WORD_MARK + k) * points for k in codes) + " "
        if word in lists["en"]:  # English words count capitalized too, for English only
            marks[f" {word.capitalize()} "] = " " + chr(_WORD_MARK) * points + " "
    for letter in sorted(frozenset("".join(LETTERS.values()))):
        codes = [k for k, code in enumerate(lists) if letter in LETTERS.get(code, "")]
        for form in {letter, letter.upper()} - {"SS"}:  # "ß".upper() is "SS"
            marks[form] = "".join(chr(_LETTER_MARK + k) for k in codes)
    return marks


def _foreign_words() -> list[str]:
    """The words of :data:`STOPWORDS` in no English entry, longest first."""
    others = frozenset().union(*(w for c, w in STOPWORDS.items() if c != "en"))
    return sorted(others - frozenset(STOPWORDS["en"]), key=lambda w: (-len(w), w))


def foreign_words_pattern() -> str:
    """A regex of the words that can make a text score above English (:data:`STOPWORDS` of no
    English entry), in lower case between non-letters: a text without one is English.

    >>> texts = pl.Series(["The tower is in Paris", "Er ist 1889 gebaut", "Die Hard"])
    >>> pl.select(pl.lit(texts).str.contains(foreign_words_pattern())).to_series().to_list()
    [False, True, False]
    """
    words = _foreign_words()
    # Letters on both sides, not \b: the same words mark_function_words sees, and the regex
    # runs on the DFA even over non-ASCII text.
    return f"(?:^|\\P{{L}})(?:{'|'.join(words)})(?:\\P{{L}}|$)"


def mark_function_words(text: pl.Expr) -> pl.Expr:
    """``text`` with non-letters as spaces, each word of :data:`STOPWORDS` (in lower case)
    replaced by its points as marks of its languages and each of :data:`LETTERS` by a mark:
    one Aho-Corasick pass; :func:`function_word_scores` counts the marks.

    >>> pl.select(mark_function_words(pl.lit("Die Brücke ist nicht alt."))).item().split()
    ['Die', 'Br\\ue101cke', '\\ue001\\ue001', '\\ue001\\ue001', 'alt']
    """
    spaced = pl.concat_str([pl.lit(" "), text.str.replace_all(r"\P{L}+", "  "), pl.lit(" ")])
    marks = _marks()
    return spaced.str.replace_many(marks, leftmost=True)


def function_word_scores(marked: pl.Expr) -> pl.Expr:
    """The score of each language of :data:`STOPWORDS` in a text through
    :func:`mark_function_words`: its points times ``_POINT`` plus its letters (a struct of
    Int64 fields named by the codes).

    >>> marked = mark_function_words(pl.lit("Die Brücke ist nicht alt."))
    >>> scores = pl.select(function_word_scores(marked)).item()
    >>> {code: divmod(score, _POINT) for code, score in scores.items() if score}
    {'de': (4, 1)}
    """
    def count(mark: int) -> pl.Expr:
        return marked.str.count_matches(chr(mark), literal=True).cast(pl.Int64)

    return pl.struct([
        (count(_WORD_MARK + k) * _POINT
         + (count(_LETTER_MARK + k).clip(upper_bound=_POINT - 1) if code in LETTERS else 0))
        .alias(code)
        for k, code in enumerate(STOPWORDS)
    ])


def function_word_language(scores: pl.Expr) -> pl.Expr:
    """The language :func:`function_word_scores` name (module docstring): the first language
    other than English with the highest score, where that is at least :data:`MIN_SCORE` points
    and more than English's; null elsewhere (English, or too little text to tell). Each score
    is read several times: pass a column, as :func:`language_stages` does.

    >>> frame = pl.DataFrame({"t": ["Der Turm wurde 1889 für die Weltausstellung gebaut.",
    ...                             "La tour a été construite pour l'Exposition universelle.",
    ...                             "The tower was built for the 1889 World's Fair.",
    ...                             "Los Angeles"]})
    >>> frame = frame.with_columns(s=function_word_scores(mark_function_words(pl.col("t"))))
    >>> frame.select(function_word_language(pl.col("s"))).to_series().to_list()
    ['de', 'fr', None, None]
    """
    field = {code: scores.struct.field(code) for code in STOPWORDS}
    foreign = [code for code in STOPWORDS if code != "en"]
    top = pl.max_horizontal(field[code] for code in foreign)
    points = top // _POINT
    return pl.when((points >= MIN_SCORE) & (points > field["en"] // _POINT)).then(
        _first_max(field, foreign, top)
    )


def _first_max(field: dict[str, pl.Expr], codes: list[str], top: pl.Expr) -> pl.Expr:
    """The first of ``codes`` whose ``field`` equals ``top``."""
    first = pl.lit(None, pl.String)
    for code in reversed(codes):
        first = pl.when(field[code] == top).then(pl.lit(code)).otherwise(first)
    return first


def given_language(code: pl.Expr) -> pl.Expr:
    """A given code, lowercased, without region or script suffix; null when empty.

    >>> pl.select(given_language(pl.lit(" zh-Hans "))).item(), pl.select(
    ...     given_language(pl.lit(""))).item()
    ('zh', None)
    """
    base = code.str.strip_chars().str.to_lowercase().str.replace(r"[-_].*$", "")
    return pl.when(base != "").then(base)


def reference_language_stages(lang: str, language: str, reference: str, response: str
                              ) -> list[dict[str, pl.Expr]]:
    """The definition :func:`language_stages` computes in one compiled pass, in polars
    expressions: the reference of :mod:`pipeline.text.kernels.language` and its tests, the
    same ``lang`` and :data:`LATIN` for every row (``_lang_wide`` holds the text read for its
    scripts here).

    Stages, so that each count is computed once per row and only on the rows that need it:
    script counts where no code is given and some text is not ASCII, function-word scores
    where no code is given and some text holds a word of another language than English. The
    ``_lang_*`` helper columns are left for the caller to drop, :data:`LATIN` among them for
    the metrics that choose a tokenizer by it.

    >>> frame = pl.DataFrame({
    ...     "lang": ["ZH", None, None, None, None, None, None, None, None],
    ...     "language": [None, "zh-CN", None, None, None, None, None, None, None],
    ...     "ref": ["x", "x", "Москва", "東京はどこ", "서울", "12 !", "Ça va", "Die Stadt",
    ...             "OpenAI 的 ChatGPT model"],
    ...     "resp": ["x", "x", "x", "x", "x", "", "señor", "Sie ist nicht groß und alt", ""]
    ... }).lazy()
    >>> for stage in reference_language_stages("lang", "language", "ref", "resp"):
    ...     frame = frame.with_columns(**stage)
    >>> frame.collect()["lang"].to_list()
    ['zh', 'zh', 'ru', 'ja', 'ko', 'und', 'en', 'de', 'zh']
    """
    given = pl.coalesce(given_language(pl.col(lang)), given_language(pl.col(language)))
    unset = pl.col("_lang_given").is_null()
    texts = [pl.col(c) for c in (reference, response)]
    # Non-ASCII rows (more bytes than characters: far cheaper than a regex) are read for their
    # scripts, and only those with a character of a script other than Latin are counted.
    wide_rows = unset & pl.any_horizontal(
        (t.str.len_bytes() != t.str.len_chars()).fill_null(False) for t in texts
    )
    to_detect = pl.concat_str([pl.when(wide_rows).then(t.fill_null("")) for t in texts],
                              separator=" ")
    latin_letter = pl.any_horizontal(t.str.contains(r"\p{Latin}").fill_null(False) for t in texts)
    # Function words only for rows that hold a word English does not outweigh: one regex
    # pass per text on the others.
    foreign = foreign_words_pattern()
    word_rows = unset & pl.any_horizontal(t.str.contains(foreign).fill_null(False) for t in texts)
    to_mark = pl.concat_str([pl.when(word_rows).then(t.fill_null("")) for t in texts],
                            separator=" ")
    wide = pl.col("_lang_wide")
    scripts = pl.col("_lang_scripts")
    count = {code: scripts.struct.field(code) for _, code in SCRIPT_LANGUAGES}
    codes = [code for _, code in SCRIPT_LANGUAGES]
    most = pl.max_horizontal(count.values())
    by_script = (
        pl.when(scripts.is_null()).then(
            pl.when(pl.col("_lang_letter")).then(pl.lit("en")).otherwise(pl.lit(UNDETERMINED))
        )
        .when(most == 0).then(pl.lit(UNDETERMINED))
        # One Han character outweighs any number of Latin letters: Chinese, or Japanese with
        # kana, Korean with Hangul.
        .when((count["zh"] > 0) & (count["en"] == most)).then(
            pl.when(count["ja"] > 0).then(pl.lit("ja"))
            .when(count["ko"] > 0).then(pl.lit("ko"))
            .otherwise(pl.lit("zh"))
        )
        .when((count["zh"] == most) & (count["ja"] > 0)).then(pl.lit("ja"))
        .otherwise(_first_max(count, codes, most))
    )
    script = pl.col("_lang_script")
    latin = pl.coalesce(function_word_language(pl.col("_lang_scores")), pl.lit("en"))
    # One column per stage where a later stage reads it: polars shares no subexpression
    # between columns.
    return [
        {"_lang_given": given},
        {"_lang_wide": to_detect, "_lang_marked": mark_function_words(to_mark),
         "_lang_letter": pl.when(unset).then(latin_letter)},
        {"_lang_scripts": pl.when(wide.str.contains(_OTHER_SCRIPT)).then(pl.struct([
            wide.str.count_matches(_class(scripts)).alias(code)
            for scripts, code in SCRIPT_LANGUAGES
        ])),
         "_lang_scores": function_word_scores(pl.col("_lang_marked"))},
        {"_lang_script": pl.when(unset).then(by_script)},
        {lang: pl.coalesce(pl.col("_lang_given"),
                           pl.when(script == "en").then(latin).otherwise(script))},
        {LATIN: is_latin(pl.col(lang))},
    ]


#: The codes :func:`language_stages` detects, in the kernel's order: the languages of
#: :data:`STOPWORDS` (English first), those of the other scripts, undetermined.
CODES: tuple[str, ...] = (
    *STOPWORDS,
    *(code for _, code in SCRIPT_LANGUAGES if code not in STOPWORDS),
    UNDETERMINED,
)


def _kernel_words() -> kernels.WordTable:
    """The words :func:`mark_function_words` marks, with the points of each language its marks
    give them, and whether English does not outweigh them."""
    words = [key.strip() for key in _marks() if key.startswith(" ")]
    points = np.array([[_marks()[f" {word} "].count(chr(_WORD_MARK + k))
                        for k in range(len(STOPWORDS))] for word in words])
    foreign = frozenset(_foreign_words())
    return kernels.word_table(words, points, np.array([word in foreign for word in words]))


def _kernel_letters() -> np.ndarray:
    """The letter marks of :func:`mark_function_words`: a bit per language of each letter."""
    letters = {key: value for key, value in _marks().items() if len(key) == 1}
    marks = np.zeros(max(map(ord, letters)) + 1, dtype=np.uint8)
    for letter, value in letters.items():
        for mark in value:
            marks[ord(letter)] |= 1 << (ord(mark) - _LETTER_MARK)
    return marks


_WORDS = _kernel_words()
_LETTERS = _kernel_letters()
_SCRIPT_CODES = np.array([CODES.index(code) for _, code in SCRIPT_LANGUAGES], dtype=np.int8)
_SCRIPT_INDEX = {code: k for k, (_, code) in enumerate(SCRIPT_LANGUAGES)}
_NAMES = np.frombuffer("".join(CODES).encode(), dtype=np.uint8)
_NAME_OFFSETS = np.cumsum([0, *map(len, CODES)], dtype=np.int64)
# The classes of each code point (the kernel module's bits), filled from the regexes of the
# reference as code points are first seen.
_CLASSES = np.zeros(kernels.CODE_POINTS, dtype=np.uint16)


def _classify(code_points: np.ndarray) -> None:
    """Set the classes of ``code_points`` in ``_CLASSES``: the script class of
    :data:`SCRIPT_LANGUAGES` each belongs to, other script, letter; as the regexes of
    :func:`reference_language_stages` read them."""
    chars = pl.Series([chr(c) for c in code_points], dtype=pl.String)
    classes = np.zeros(len(code_points), dtype=np.uint16)
    for k, (scripts, _) in enumerate(SCRIPT_LANGUAGES):
        found = chars.str.contains(_class(scripts)).to_numpy()
        if (classes[found] != 0).any():
            raise ValueError(f"script classes overlap at {scripts}")
        classes[found] = k + 1
    classes[chars.str.contains(_OTHER_SCRIPT).to_numpy()] |= kernels.OTHER_SCRIPT
    classes[chars.str.contains(r"\p{L}").to_numpy()] |= kernels.LETTER
    _CLASSES[code_points] = classes | kernels.KNOWN


def _detect(reference: pl.Series, response: pl.Series, rows: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return kernels.detect(
        *string_buffers(reference), *string_buffers(response), rows, _CLASSES, _LETTERS,
        _WORDS.keys, _WORDS.slot_words, _WORDS.points, _WORDS.foreign, _WORDS.foreign_filter,
        _SCRIPT_CODES, _SCRIPT_INDEX["zh"], _SCRIPT_INDEX["ja"],
        _SCRIPT_INDEX["ko"], _SCRIPT_INDEX["en"], CODES.index(UNDETERMINED), MIN_SCORE, _POINT,
    )


def _detect_batch(columns: Sequence[pl.Series]) -> pl.Series:
    """``{lang, wide}`` of each row where the first column is True (:func:`language_stages`):
    the detected code, and True where some text is not ASCII; null elsewhere."""
    unset, reference, response = columns
    rows = unset.fill_null(False).to_numpy()
    if not _CLASSES[0] & kernels.KNOWN:  # ASCII at once: most rows hold nothing else
        _classify(np.arange(128))
    codes, wide, pending, unknown = _detect(reference, response, rows)
    if pending.any():  # code points seen for the first time: classified, their rows read again
        _classify(np.flatnonzero(unknown))
        again, _, still, _ = _detect(reference, response, pending)
        if still.any():
            raise RuntimeError("language detection left code points unclassified")
        codes = np.where(pending, again, codes)
    offsets, data = kernels.code_strings(codes, _NAME_OFFSETS, _NAMES)
    return pl.struct(
        strings_from_buffers("lang", offsets, data, codes != kernels.NOT_READ),
        with_nulls("wide", wide, wide), eager=True,
    )


def language_stages(lang: str, language: str, reference: str, response: str
                    ) -> list[dict[str, pl.Expr]]:
    """Column stages that set ``lang`` of each row (the module docstring): ``lang`` if given,
    else the RGB ``language``, else detected from ``reference`` and ``response``.

    Detection is one compiled pass over the rows without a code
    (:mod:`pipeline.text.kernels.language`), the definition of
    :func:`reference_language_stages`. The ``_lang_*`` helper columns are left for the caller
    to drop, :data:`LATIN` among them for the metrics that choose a tokenizer by it;
    ``_lang_wide`` is True where a row without a code holds a text that is not ASCII (the rows
    read for their scripts), null elsewhere.

    >>> frame = pl.DataFrame({
    ...     "lang": ["ZH", None, None, None, None, None, None, None, None],
    ...     "language": [None, "zh-CN", None, None, None, None, None, None, None],
    ...     "ref": ["x", "x", "Москва", "東京はどこ", "서울", "12 !", "Ça va", "Die Stadt",
    ...             "OpenAI 的 ChatGPT model"],
    ...     "resp": ["x", "x", "x", "x", "x", "", "señor", "Sie ist nicht groß und alt", ""]
    ... }).lazy()
    >>> for stage in language_stages("lang", "language", "ref", "resp"):
    ...     frame = frame.with_columns(**stage)
    >>> frame.collect()["lang"].to_list()
    ['zh', 'zh', 'ru', 'ja', 'ko', 'und', 'en', 'de', 'zh']
    """
    given = pl.coalesce(given_language(pl.col(lang)), given_language(pl.col(language)))
    detected = pl.col("_lang_detected")
    return [
        {"_lang_given": given},
        {"_lang_detected": pl.map_batches(
            [pl.col("_lang_given").is_null(), pl.col(reference), pl.col(response)],
            _detect_batch, return_dtype=pl.Struct({"lang": pl.String, "wide": pl.Boolean}),
            is_elementwise=True,
        )},
        {lang: pl.coalesce(pl.col("_lang_given"), detected.struct.field("lang")),
         "_lang_wide": detected.struct.field("wide")},
        {LATIN: is_latin(pl.col(lang))},
    ]


def detect_language(frame: pl.DataFrame, reference: str, response: str) -> pl.Series:
    """The detected language of each row of ``frame`` (no code given): a convenience over
    :func:`language_stages`.

    >>> frame = pl.DataFrame({"r": ["Paris", "北京是首都", "東京はどこ", "Ça va, señor?",
    ...                             "El museo está en la ciudad y es muy grande."]})
    >>> detect_language(frame, "r", "r").to_list()
    ['en', 'zh', 'ja', 'en', 'es']
    """
    lazy = frame.lazy().with_columns(
        _lang_in=pl.lit(None, pl.String), _language_in=pl.lit(None, pl.String)
    )
    for stage in language_stages("_lang_in", "_language_in", reference, response):
        lazy = lazy.with_columns(**stage)
    return lazy.collect()["_lang_in"].alias("lang")


def is_latin(lang: pl.Expr) -> pl.Expr:
    """Whether a row's language is written in Latin script as far as the metrics know: ``en``,
    the undetermined ``und``, or a code of no script this module detects (``es``, ``de``,
    ``vi``, ``fr`` ...): the rows that keep the English tokenizers under ``auto``.

    >>> codes = pl.Series(["de", "zh", None], dtype=pl.String)
    >>> pl.select(is_latin(pl.lit(codes))).to_series().to_list()
    [True, False, True]
    """
    non_latin = [code for _, code in SCRIPT_LANGUAGES if code != "en"]
    return ~lang.is_in(non_latin).fill_null(False)
