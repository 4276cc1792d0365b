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
     text without letters is ``und`` (undetermined). One Han character outweighs any number
     of Latin letters (a Chinese answer quoting English names is ``zh``), not other scripts;
   * a Latin row is then read by **function words** (:data:`STOPWORDS`): German ``de``,
     French ``fr``, Spanish ``es``, Italian ``it``, Portuguese ``pt`` or Dutch ``nl`` when
     that language scores at least :data:`MIN_SCORE` and more than English, else ``en``. A
     word found in one list only scores 2 for its language, a word of several lists (``de``,
     ``la``, ``que``, ``in``) 1 for each; a word is counted written in lower case, or
     capitalized (1 point) at the start of a text, a line or a sentence, so that names
     (``Los Angeles``, ``Les Misérables``, ``Die Hard``) hardly count. Ties go to the first
     language of :data:`STOPWORDS`.

Limits: detection needs two function words of the language or so; a short answer (``Berlin``,
``1889``, ``Los Angeles``) is ``en``, as is a text written in capitals. Other Latin-script
languages (Vietnamese, Polish, Turkish ...) are ``en`` or, rarely, the closest of the six;
Ukrainian is ``ru``, Cantonese ``zh``. Set ``lang`` where that matters (MLQA removes different
articles per language). An ASCII-only row is read by one regex pass per text unless it holds a
word of another language's list.
"""

from __future__ import annotations

from functools import cache

import polars as pl

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
           "do", "no", "e", "y", "per", "come", "non", "van", "son", "war", "am"),
    "de": ("der", "die", "das", "und", "ist", "nicht", "ein", "eine", "einen", "einem",
           "einer", "eines", "dem", "den", "des", "mit", "sich", "auf", "für", "zu", "zum",
           "zur", "im", "vom", "auch", "sind", "wird", "wurde", "wurden", "werden", "nach",
           "bei", "aus", "noch", "nur", "oder", "aber", "wie", "sie", "ich", "wir", "ihre",
           "sein", "seine", "dass", "diese", "dieser", "über", "durch", "gegen", "zwischen",
           "sehr", "wenn", "kann", "gibt", "haben", "hat", "hatte", "waren", "wer", "wo", "vor",
           "er", "um", "war", "am", "in", "an"),
    "fr": ("le", "la", "les", "des", "du", "un", "une", "et", "est", "sont", "dans", "pas",
           "qui", "que", "qu", "pour", "sur", "au", "aux", "avec", "ce", "cette", "ces", "il", "ils",
           "elle", "ont", "été", "était", "mais", "où", "ou", "par", "nous", "vous", "leur",
           "ses", "sa", "ne", "à", "comme", "tout", "tous", "aussi", "peut", "lui", "même",
           "très", "sans", "quand", "son", "en", "de", "se", "si", "non", "a"),
    "es": ("el", "los", "las", "la", "del", "al", "lo", "un", "una", "uno", "unos", "unas",
           "es", "fue", "fueron", "está", "están", "estaba", "ser", "que", "por", "para",
           "con", "como", "más", "pero", "su", "sus", "muy", "también", "cuando", "donde",
           "hasta", "desde", "entre", "sobre", "ya", "había", "tiene", "tienen", "ella",
           "ellos", "él", "este", "esta", "eso", "esto", "otro", "otros", "mismo", "cual",
           "quien", "qué", "según", "porque", "durante", "dos", "nos", "ha", "son", "si", "se",
           "de", "en", "no", "y", "a"),
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
#: Letters that break a tie of word scores: the language with more of its letters wins. They
#: never count toward :data:`MIN_SCORE` (names such as ``Müller`` or ``Peña`` are common in
#: English text).
LETTERS: dict[str, str] = {"de": "äöüß", "fr": "çèêœ", "es": "ñ¿¡", "it": "èìòù", "pt": "ãõçê",
                           "nl": ""}
#: The least score (two words found in one list only) that reads a row as other than English.
MIN_SCORE = 4
#: Helper column of :func:`language_stages`: whether the row's language is read with the
#: English tokenizers under ``auto`` (:func:`is_latin`), computed once per row.
LATIN = "_lang_latin"
#: The code of a row without letters.
UNDETERMINED = "und"

# Where a capitalized word counts: the start of a text, of a line, or of a sentence (after an
# opening quote or bracket too). ``(?m:^)`` also keeps the regex off the literal prefilter,
# which is slower here than the DFA.
_SENTENCE_START = "(?:(?m:^)|[.!?]\\s+)[¿¡\"'«“„(\\[]*"


def _class(scripts: str) -> str:
    return "[" + "".join(f"\\p{{{s}}}" for s in scripts.split("|")) + "]"


def _words_pattern(words: frozenset[str]) -> str:
    """A regex of ``words`` in lower case, or in any case at a sentence start."""
    alternation = "|".join(sorted(words, key=lambda w: (-len(w), w)))
    return f"{_SENTENCE_START}(?i:{alternation})\\b|\\b(?:{alternation})\\b"


@cache
def _weights() -> dict[str, dict[str, int]]:
    """Per language, the score of each word found: 2 in one list only, 1 in several; the
    capitalized form (keyed ``^word``) 1."""
    lists = {code: frozenset(words) for code, words in STOPWORDS.items()}
    weights = {}
    for code, words in lists.items():
        shared = frozenset().union(*(w for c, w in lists.items() if c != code))
        weights[code] = {w: 1 if w in shared else 2 for w in words} | {f"^{w}": 1 for w in words}
    return weights


def _foreign_words() -> frozenset[str]:
    """The words that can make a row score above English: those of no English list entry."""
    others = frozenset().union(*(w for c, w in STOPWORDS.items() if c != "en"))
    return others - frozenset(STOPWORDS["en"])


def function_word_language(text: pl.Expr) -> pl.Expr:
    """The language of a Latin-script ``text`` by its :data:`STOPWORDS` (module docstring),
    null where it is English or too short to tell.

    The words of every list are extracted once; each language's score is the sum of its
    weights over them.

    >>> texts = pl.Series(["Der Turm wurde 1889 für die Weltausstellung gebaut.",
    ...                    "La tour a été construite pour l'Exposition universelle.",
    ...                    "The tower was built for the 1889 World's Fair.", "Los Angeles"])
    >>> pl.select(function_word_language(pl.lit(texts))).to_series().to_list()
    ['de', 'fr', None, None]
    """
    weights = _weights()
    every = frozenset().union(*map(frozenset, STOPWORDS.values()))
    found = text.str.extract_all(_words_pattern(every))
    word = pl.element().str.replace(r"^[^\p{L}]+", "")
    lower = word.str.to_lowercase()
    keys = found.list.eval(pl.when(word == lower).then(lower).otherwise(pl.lit("^") + lower))
    scores = {
        code: keys.list.eval(
            pl.element().replace_strict(table, default=0, return_dtype=pl.Int32)
        ).list.sum()
        for code, table in weights.items()
    }
    # Each language's score plus a fraction below 1 that grows with its letters: ties of
    # scores go to more letters, and the whole part is the score.
    ranks = {}
    for code, letters in LETTERS.items():
        count = text.str.count_matches(f"(?i)[{letters}]") if letters else pl.lit(0)
        ranks[code] = scores[code] + count / (count + 1)
    top = pl.max_horizontal(ranks.values())
    best = pl.when(pl.lit(False)).then(pl.lit(None, pl.String))
    for code, rank in ranks.items():
        best = best.when(rank == top).then(pl.lit(code))
    score = top.floor()
    return pl.when((score >= MIN_SCORE) & (score > scores["en"])).then(best)


def given_language(code: pl.Expr) -> pl.Expr:
    """A given code, lowercased, without region or script suffix; null when empty.

    >>> pl.select(given_language(pl.lit(" zh-Hans "))).item(), pl.select(
    ...     given_language(pl.lit(""))).item()
    ('zh', None)
    """
    base = code.str.strip_chars().str.to_lowercase().str.replace(r"[-_].*$", "")
    return pl.when(base != "").then(base)


def language_stages(lang: str, language: str, reference: str, response: str
                    ) -> list[dict[str, pl.Expr]]:
    """Column stages that set ``lang`` of each row (the module docstring): ``lang`` if given,
    else the RGB ``language``, else detected from ``reference`` and ``response``.

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
    >>> for stage in language_stages("lang", "language", "ref", "resp"):
    ...     frame = frame.with_columns(**stage)
    >>> frame.collect()["lang"].to_list()
    ['zh', 'zh', 'ru', 'ja', 'ko', 'und', 'en', 'de', 'zh']
    """
    given = pl.coalesce(given_language(pl.col(lang)), given_language(pl.col(language)))
    texts = [pl.col(c) for c in (reference, response)]
    # Script counts only for rows without a code with some non-ASCII text (a byte count above
    # the character count: far cheaper than a regex); the others are "en" or another Latin
    # language when they hold an ASCII letter, else undetermined.
    wide_rows = given.is_null() & pl.any_horizontal(
        (t.str.len_bytes() != t.str.len_chars()).fill_null(False) for t in texts
    )
    to_detect = pl.concat_str([pl.when(wide_rows).then(t.fill_null("")) for t in texts],
                              separator=" ")
    ascii_letter = pl.any_horizontal(t.str.contains(r"[A-Za-z]").fill_null(False) for t in texts)
    # Function words only for rows that hold a word English does not outweigh: one regex
    # pass per text on the others. The texts are joined by a line break (a sentence start).
    foreign = _words_pattern(_foreign_words())
    word_rows = given.is_null() & pl.any_horizontal(
        t.str.contains(foreign).fill_null(False) for t in texts
    )
    to_read = pl.concat_str([pl.when(word_rows).then(t.fill_null("")) for t in texts],
                            separator="\n")
    counts = pl.col("_lang_counts")
    codes = [code for _, code in SCRIPT_LANGUAGES]
    # The first script with most letters (arg_max takes the first maximum).
    best = counts.list.arg_max().replace_strict(dict(enumerate(codes)), return_dtype=pl.String)
    latin = pl.coalesce(pl.col("_lang_words"), pl.lit("en"))
    han, kana = counts.list.get(0), counts.list.get(1)
    detected = (
        pl.when(counts.is_null()).then(
            pl.when(pl.col("_lang_ascii")).then(latin).otherwise(pl.lit(UNDETERMINED))
        )
        .when(counts.list.max() == 0).then(pl.lit(UNDETERMINED))
        # Han outweighs Latin letters; with kana it is Japanese.
        .when((han > 0) & best.is_in(["zh", "en"])).then(
            pl.when(kana > 0).then(pl.lit("ja")).otherwise(pl.lit("zh"))
        )
        .when(best == "en").then(latin)
        .otherwise(best)
    )
    wide, read = pl.col("_lang_wide"), pl.col("_lang_read")
    return [
        {"_lang_given": given, "_lang_wide": to_detect, "_lang_read": to_read,
         "_lang_ascii": pl.when(given.is_null()).then(ascii_letter)},
        {"_lang_counts": pl.when(wide.is_not_null()).then(pl.concat_list(
            [wide.str.count_matches(_class(scripts)).fill_null(0)
             for scripts, _ in SCRIPT_LANGUAGES]
        )),
         "_lang_words": function_word_language(read)},
        {lang: pl.coalesce(pl.col("_lang_given"), detected)},
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
