"""What a sentence asserts, read as people write it: units of the evidence rule (version 2).

The default grounding rule (:mod:`pipeline.metrics.embedding.grounding`, docs/grounding.md)
compares the units of a claim with those of the passages. This module reads them from text as
written, as polars expressions (no per-row Python):

* **frames** (:data:`FRAMES`): discourse frames that assert nothing about the world
  (``according to the passage``, ``based on the provided context``, ``根据文档``, ``答案是``,
  ``laut dem Text``, ``d'après le document``, ``según el texto``) are removed first;
* **words**: lowercased runs of letters, marks and digits; ``%`` reads as ``percent``, a
  camelCase key of a record as its words (``OutdoorSeating`` -> ``outdoor seating``); number
  words (``five``, ``fünf``, ``cinq``, ``cinco``) read as their digits and unit words as one
  name (``metres``, ``Metern``, ``m`` -> ``m``) by :data:`WORD_FORMS`;
* **stems**: a content word (not a stopword of :func:`stopwords`, not all digits) cut to its
  first :data:`STEM_LENGTH` characters, so inflections meet (``Metern``/``Meter``,
  ``acquired``/``acquires``, ``reservations``/``reservation``): a truncation stemmer, the same
  for every Latin-script language;
* **numbers**: digit runs with inner separators; a ``,`` or ``.`` followed by exactly three
  digits is a thousands separator, any other is a decimal point (``1,642`` = ``1.642`` =
  ``1642``, ``3,5`` = ``3.5``), and number words count as numbers;
* **names**: capitalized words that are not the first word of their sentence (a sentence-
  initial capital is grammar), not stopwords, in a run (``Simona Halep``); German capitalizes
  every noun, so rows of language ``de`` have only names of two words or more; an all-capitals
  abbreviation (``WHO``) and the initials of a capitalized run (``World Health Organization``)
  name the same thing.
"""

from __future__ import annotations

import unicodedata
from functools import cache

import polars as pl

from pipeline.rules.files import STOPWORDS_FILE, read_text
from pipeline.text.evidence import CHARACTER_SCRIPTS as _CHARACTER_SCRIPTS
from pipeline.text.numbers import HAN_NUMERAL as HAN_NUMERAL
from pipeline.text.numbers import WORD_FORMS as WORD_FORMS
from pipeline.text.numbers import han_numbers as han_numbers
from pipeline.text.numbers import numbers as numbers

#: Characters kept of a content word (truncation stemming).
STEM_LENGTH = 5

#: A word: a run of letters, marks and digits outside :data:`_CHARACTER_SCRIPTS`.
WORD = rf"[^\W_{_CHARACTER_SCRIPTS}]+"
_WORD = WORD

#: Discourse frames: they say where a statement comes from or that an answer follows, and
#: assert nothing; removed before the units are read (case-insensitive).
FRAMES: tuple[str, ...] = (
    r"\b(?:according to|based on|as (?:stated|mentioned|described|noted|shown) in|as per|"
    r"from|in)\s+(?:the\s+)?(?:provided\s+|given\s+|available\s+|retrieved\s+|above\s+|"
    r"structured\s+|information\s+in\s+the\s+)?(?:passages?|documents?|context|contexts|texts?|"
    r"articles?|sources?|data|information|records?|excerpts?|snippets?|search results?|"
    r"json(?: data| object)?|reviews?)\b(?:\s+(?:provided|given|above))?",
    r"\b(?:the\s+)?(?:passages?|documents?|context|texts?|articles?|sources?|data|"
    r"information|records?)\s+(?:provided\s+|given\s+)?(?:states?|says?|mentions?|notes?|"
    r"indicates?|suggests?|explains?|describes?|shows?|reports?)(?:\s+that)?\b",
    r"\(?\b(?:passages?|documents?|docs?|sources?|contexts?|excerpts?|articles?|reviews?)\s*"
    r"\[?\d+\]?(?:\s*(?:,|&|and|or)\s*\[?\d+\]?)*\)?",
    r"\bhere(?:'s| is| are)\s+(?:a|an|the|my)?\s*(?:brief\s+|short\s+|concise\s+|objective\s+)?"
    r"(?:summary|overview|answer|description)\b",
    r"根据(?:所)?(?:提供的|所给的|给出的|上述|以上)?(?:文档|文章|材料|资料|信息|上下文|内容|段落|"
    r"文本|报道|产品说明|说明|介绍|数据|记录)(?:中|内容|显示)?",
    r"(?:文档|文章|材料|资料)(?:中)?(?:提到|指出|显示|表明|说明)",
    r"(?:这个)?(?:问题的?)?的?答案(?:是|为)",
    r"\b(?:laut|gemäß|nach)\s+(?:dem|der|den)?\s*(?:Text|Dokument|Artikel|Passage|Quelle|"
    r"Abschnitt|Kontext|Dokumentation|Datenblatt|Produktbeschreibung|Beschreibung|"
    r"Bericht|Handbuch|Anleitung)(?:en|s)?\b",
    r"\b(?:dem|der|den)\s+(?:Text|Dokument|Artikel|Quelle|Dokumentation|Datenblatt|"
    r"Bericht|Handbuch)(?:en|s)?\s+zufolge\b",
    r"\b(?:d'après|d’après|selon)\s+(?:le|la|les|l'|l’)\s*(?:document|texte|passage|article|"
    r"source|contexte|documentation|notice|manuel|rapport|fiche)s?\b",
    r"\b(?:según|de acuerdo con)\s+(?:el|la|los|las)\s+(?:texto|documento|pasaje|artículo|"
    r"fuente|contexto|manual|documentación|informe|ficha)s?\b",
)


def _word_list(text: str) -> tuple[str, ...]:
    """The whitespace-separated words of ``text`` (long word lists read as text)."""
    return tuple(text.split())


#: Words of Latin-script languages other than English that assert nothing by themselves
#: (articles, pronouns, prepositions, auxiliaries): added to the English stopword list.
_OTHER_STOPWORDS = _word_list(
    "der die das den dem des ein eine einer eines einem einen und oder aber ist sind war waren "
    "wird werden wurde wurden hat haben hatte im in am an auf aus bei mit nach von vor zu zum "
    "zur für über unter als wie auch nicht es sie er wir ihr sich dass daß so noch nur sehr "
    "le la les l un une des du de d et ou mais est sont était étaient a ont avait au aux dans "
    "sur pour par avec sans en ce cette ces il elle ils elles on nous vous qui que qu ne pas "
    "plus se sa son ses leur leurs été être "
    "el los las lo unos unas del al y o pero es son era eran fue fueron ha han había en con "
    "por para sin sobre su sus se que muy más también como este esta estos estas ese esa "
    "bis ab um seit seine seinen seiner ihre ihren ihrem man kann können muss müssen soll "
    "sollen wurde worden sein hatte hätte gibt lag liegt betrug beträgt etwa rund ca mehr "
    "weniger alle allen aller jeder jede jedes dieser diese dieses diesem einen einem "
    "ses cette cet celui ceux celle dont où peut peuvent doit fait faire avoir sont environ "
    "plus moins tous toutes tout chaque aussi très leur "
    "puede pueden debe hace hacer tiene tienen unos unas cada todo todos toda todas aunque "
    "donde cuando cual cuyo cuya desde hasta entre tras según unos aproximadamente "
    # German, French, Spanish: more function words, "according to", and light verbs of
    # amount and possession (measures, counts, reaches, has).
    "laut zufolge gemäß nach etwa ungefähr knapp über unter insgesamt jeweils dabei damit "
    "dass wenn weil sowie sowohl auch noch schon nur bereits kommt kam kommen beträgt "
    "misst umfasst zählt erreicht liegt lag hat haben dort hier heute jahr jahre jahren "
    "à c s qu l d n j y après d'après selon environ près presque quelque quelques "
    "mesure mesurent compte comptent possède possèdent atteint atteignent dispose "
    "comprend comprennent est-à-dire dire voici voilà ainsi alors donc "
    "según acuerdo mide miden cuenta cuentan posee poseen alcanza alcanzan llega llegan "
    "dispone incluye incluyen unos cerca casi alrededor año años una uno ninguna ninguno "
    "otra otro otras otros"
)

#: Words that frame, report or qualify rather than assert (what a summary or description adds
#: around the facts of its source): not content units.
FRAME_WORDS = _word_list(
    "according based provided provide provides providing given mention mentions mentioned "
    "mentioning state states stated note notes noted noting indicate indicates indicated "
    "suggest suggests suggested describe describes described description report reports "
    "reported reporting say says said explain explains explained information info detail "
    "details passage passages document documents context text article source sources data "
    "overall summary overview also however although though additionally furthermore moreover "
    "therefore thus finally well including include includes included various several many "
    "some other others certain specific particular available known regarding respectively "
    "answer question specifically generally typically usually often like such way ways "
    "thing things aspect aspects fact ask asks asked asking yes despite whereas while "
    "roughly approximately about around nearly almost some worth"
)




@cache
def stopwords() -> frozenset[str]:
    """The bundled English stopword list, the stopwords of German, French and Spanish of
    :data:`_OTHER_STOPWORDS` and :data:`FRAME_WORDS`: words that are not content units.

    >>> {"the", "der", "according", "mentioned"} <= stopwords(), "florida" in stopwords()
    (True, False)
    """
    text, _ = read_text(None, STOPWORDS_FILE)
    words = (line.split("#", 1)[0].strip().lower() for line in text.splitlines())
    listed = frozenset(w for w in words if w) | frozenset(_OTHER_STOPWORDS) | frozenset(
        FRAME_WORDS)
    return listed | frozenset(_fold(w) for w in listed)  # words are read accents folded


_FRAME = "(?i)(?:" + "|".join(f"(?:{frame})" for frame in FRAMES) + ")"


def without_frames(text: pl.Expr) -> pl.Expr:
    """``text`` with its discourse frames (:data:`FRAMES`) removed.

    >>> pl.select(without_frames(pl.lit("According to the passage, Paris is big (Passage 2)."))
    ...           ).item()
    ', Paris is big .'
    >>> pl.select(without_frames(pl.lit("根据文档，答案是北京。"))).item()
    '，北京。'
    """
    return text.str.replace_all(_FRAME, "")


#: Symbols and unit characters read as words (one pass, longest first).
_SYMBOLS = {"百分之": " percent ", "千克": " kg ", "公斤": " kg ", "千米": " km ", "公里": " km ",
            "千瓦": " kw ", "%": " percent ", "$": " dollar ", "€": " euro "}
#: Marks an afternoon hour (private use); the marked hours and their 24-hour forms.
_PM = "\U000f0a03"
_AFTERNOON = {f"{_PM}{hour}": str(hour + 12 if hour < 12 else 12)
              for hour in sorted(range(1, 13), key=lambda h: -len(str(h)))}


def readable(text: pl.Expr) -> pl.Expr:
    """``text`` with ``%`` as `` percent ``, camelCase keys as words (``OutdoorSeating`` ->
    ``Outdoor Seating``, ``WiFi`` -> ``Wi Fi``) and times of day on 24 hours without zero
    minutes (``5:00 PM`` -> ``17``, ``17:0`` -> ``17``, ``7:30 a.m.`` -> ``7:30``, noon ``12``).

    >>> pl.select(readable(pl.lit("Open 11 AM to 5:00 p.m., 'Monday': '11:0-17:0'"))).item()
    "Open 11 to 17, 'Monday': '11-17'"

    >>> pl.select(readable(pl.lit("3.5% 'OutdoorSeating': True, Wi-Fi"))).item()
    "3.5 percent  'Outdoor Seating': True, Wi-Fi"
    """
    text = (
        text.str.replace_many(_SYMBOLS, leftmost=True)
        .str.replace_all(r"(\p{Ll})(\p{Lu}\p{Ll})", "$1 $2")
        .str.replace_all(r"(?i)\bnoon\b", "12").str.replace_all(r"(?i)\bmidnight\b", "0")
        .str.replace_all(r"\b(\d{1,2}):00?\b", "$1")
        .str.replace_all(r"(?i)\b12(:\d\d)?\s*a\.?\s?m\b\.?", "0$1")
        .str.replace_all(r"(?i)\b(\d{1,2})(:\d\d)?\s*a\.?\s?m\b\.?", "$1$2")
    )
    # 5 pm -> 17: the hour is marked, then the marked hours are replaced in one pass.
    marked = text.str.replace_all(r"(?i)\b(\d{1,2})(:\d\d)?\s*p\.?\s?m\b\.?", f"{_PM}$1$2")
    return marked.str.replace_many(_AFTERNOON, leftmost=True)


def words(text: pl.Expr) -> pl.Expr:
    """The lowercased words of ``text`` with number and unit words read by
    :data:`WORD_FORMS` (``List[String]``, in order).

    >>> pl.select(words(pl.lit("Five metres, 3.5 percent"))).item().to_list()
    ['5', 'm', '3', '5', 'percent']
    """
    return text.str.to_lowercase().str.extract_all(_WORD).list.eval(
        pl.element().replace(WORD_FORMS).str.normalize("NFD").str.replace_all(r"\p{Mn}", ""))


def stems(text: pl.Expr) -> pl.Expr:
    """The distinct content stems of ``text``: words that are not stopwords nor all digits,
    cut to :data:`STEM_LENGTH` characters.

    >>> pl.select(stems(pl.lit("Die Zugspitze ist 2962 Meter hoch; sie wurde erstiegen"))
    ...           ).item().to_list()
    ['zugsp', 'm', 'hoch', 'ersti']
    """
    stop = sorted(stopwords())
    content = pl.element().filter(
        ~pl.element().is_in(stop) & ~pl.element().str.contains(r"^\p{Nd}+(?:st|nd|rd)?$")
    ).str.slice(0, STEM_LENGTH)
    return words(text).list.eval(content).list.unique(maintain_order=True)


#: A capitalized word as written (``Halep``, ``O'Malley``, ``U.S``, ``WHO``).
_NAME_WORD = rf"\p{{Lu}}(?:[^\W_{_CHARACTER_SCRIPTS}]|['’\-]|\.\p{{Lu}})*"
#: Marks the name run that opens a text (:func:`names`).
OPENER = "^"
#: Languages that capitalize every noun: capitals there name nothing by themselves.
NOUN_CAPITALIZING = ("de",)


def names(text: pl.Expr, lang: pl.Expr | None = None) -> pl.Expr:
    """The names of ``text`` as written: runs of capitalized words (joined by a space); the
    run that opens the text starts with :data:`OPENER` (a sentence-initial capital is grammar
    as often as a name: the caller decides). Words of :func:`stopwords` are not names. For
    ``lang`` in :data:`NOUN_CAPITALIZING` only runs of two words or more (``Reinhold
    Messner``): a single capitalized word there is a noun.

    >>> pl.select(names(pl.lit("Staff say the WHO met Simona Halep in Tampa, Florida."))
    ...           ).item().to_list()
    ['^Staff', 'WHO', 'Simona Halep', 'Tampa', 'Florida']
    """
    # The run that opens the text is kept with a leading OPENER mark: the caller tells a name
    # ("Norway set ...") from a capitalized common word ("Staff say ...").
    body = text.str.strip_chars_start(" \t\n\"'“‘(*-•").str.replace(r"^", OPENER,
                                                                      literal=False)
    stop = sorted(stopwords())
    name_word = ~pl.element().str.strip_chars_start(OPENER).str.to_lowercase().str.replace(
        r"['’]s$", "").is_in(stop) | pl.element().str.contains(
        r"^\p{Lu}{2,}$"
    )
    runs = body.str.extract_all(rf"\{OPENER}?{_NAME_WORD}(?: {_NAME_WORD})*").list.eval(
        pl.element().str.split(" ").list.eval(pl.element().filter(name_word)).list.join(" ")
    ).list.eval(
        pl.element().str.replace(r"^(\^?)(?:[LlDd]|Qu)['’]", "$1")
        .filter(pl.element().str.strip_chars(OPENER) != "")
    ).list.unique(maintain_order=True)
    if lang is None:
        return runs
    several = runs.list.eval(pl.element().filter(pl.element().str.contains(" ")))
    return pl.when(lang.is_in(NOUN_CAPITALIZING).fill_null(False)).then(several).otherwise(runs)


def initials(text: pl.Expr) -> pl.Expr:
    """The initials of the capitalized runs of ``text`` of two words or more, lowercased
    (``World Health Organization`` -> ``who``; small words inside a run are skipped):
    an abbreviation found there names the same thing.

    >>> pl.select(initials(pl.lit("the World Health Organization and the Bank of England"))
    ...           ).item().to_list()
    ['who', 'be']
    """
    run = rf"{_NAME_WORD}(?:\s+(?:of|and|for|the|de|du|des|der|für|del|y)?\s*{_NAME_WORD})+"
    return text.str.extract_all(run).list.eval(
        pl.element().str.extract_all(r"\b\p{Lu}").list.join("").str.to_lowercase()
    )


#: Sentences that say what the sources do not say, or introduce what follows: they assert
#: nothing about the world and are not claims (case-insensitive).
NOT_CLAIMS: tuple[str, ...] = (
    r":\s*$",  # a header: "The benefits include:"
    r"^\W*(?:\d{1,2}|[a-z])[.)]?\W*$",  # a list item's number: "1."
    r"^\W*(?:sure|certainly|of course|hello|hi|thanks?(?: you)?|great question|yes|no|"
    r"ja|nein|oui|non|sí|是的|不是)\W*$",
    r"\b(?:passages?|documents?|context|contexts|texts?|articles?|sources?|data|information|"
    r"records?|reviews?)\s+(?:provided\s+|given\s+)?(?:do|does|did)\s*(?:not|n't)\b",
    r"\b(?:not|n't)\s+(?:\w+\s+){0,2}(?:mentioned|specified|stated|given|listed|included|"
    r"provided|available|indicated|clear)\s+(?:in|by|from)\s+(?:the\s+)?(?:provided\s+|given\s+|"
    r"structured\s+)?(?:passages?|documents?|context|texts?|articles?|sources?|data|"
    r"information|records?)",
    r"\b(?:no|not enough|insufficient)\s+(?:specific\s+|further\s+|additional\s+)?"
    r"information\s+(?:about|on|regarding|is|was|in)\b",
    r"\b(?:do|does|did)\s*(?:not|n't)\s+(?:specify|mention|say|state|indicate|clarify)\b",
    r"\bunable to (?:determine|answer|find)\b|\bcannot be determined\b",
    r"(?:未|没有)(?:提及|提到|说明)|无法(?:回答|确定)|我不知道|信息不足",
    r"\b(?:nicht|keine)\s+(?:\w+\s+){0,2}(?:erwähnt|angegeben|genannt)\b|weiß es nicht",
    r"\bne\s+(?:\w+\s+){0,2}(?:mentionne|précise|indique)\s+pas\b|\bje ne sais pas\b",
    r"\bno\s+(?:\w+\s+){0,2}(?:menciona|especifica|indica)\b|\bno lo sé\b",
)


_NOT_CLAIM = "(?i)(?:" + "|".join(f"(?:{p})" for p in NOT_CLAIMS) + ")"


def is_claim(sentence: pl.Expr, question: pl.Expr, abstention: list[str]) -> pl.Expr:
    """Whether ``sentence`` asserts something about the world: not a header, a greeting, a
    statement of what the sources do not say (:data:`NOT_CLAIMS`), an abstention (its folded
    text holds one of the folded ``abstention`` phrases), nor a restatement of the question
    (no content stem, number or name outside the question).

    >>> frame = pl.DataFrame({"s": ["Here is a summary:", "The passages do not mention it.",
    ...                             "What is a water pik?", "A water pik cleans teeth."]})
    >>> frame.select(is_claim(pl.col("s"), pl.lit("What is a water pik?"), [])
    ...              ).to_series().to_list()
    [False, False, False, True]
    """
    given = readable(question.fill_null(""))
    return claim_given(sentence, stems(given), numbers(given), abstention)


def claim_given(sentence: pl.Expr, question_stems: pl.Expr, question_numbers: pl.Expr,
                abstention: list[str], units: tuple[pl.Expr, pl.Expr] | None = None
                ) -> pl.Expr:
    """:func:`is_claim` with the question read beforehand: its :func:`stems` and
    :func:`numbers` (a question is read once for all the sentences of its answer); ``units``,
    when given, are the sentence's stems and numbers (frames removed, :func:`readable`)."""
    text = sentence.str.strip_chars()
    says_nothing = text.str.contains(_NOT_CLAIM)
    folded = text.str.to_lowercase().str.replace_all("’", "'")
    abstains = folded.str.contains_any(abstention) if abstention else pl.lit(False)
    if units is None:
        claim = readable(without_frames(text))
        units = (stems(claim), numbers(claim))
    new = (
        units[0].list.set_difference(question_stems).list.len()
        + units[1].list.set_difference(question_numbers).list.len()
        + text.str.count_matches(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}]")
    )
    return ~says_nothing & ~abstains & (new > 0)


#: Openers of a sentence that sums up what the answer said before (``Overall, ...``,
#: ``In summary, ...``): such a sentence is held to its anchors only, not to its wording.
SUMMING_UP = (
    r"(?i)^\W*(?:overall|in summary|in conclusion|to summarize|to sum up|in short|therefore|"
    r"thus|hence|so|ultimately|in general|all in all|insgesamt|zusammenfassend|en résumé|"
    r"en conclusion|en resumen|en conclusión|总之|总的来说|综上所述)\b"
)


def sums_up(sentence: pl.Expr) -> pl.Expr:
    """Whether ``sentence`` opens as a conclusion of the answer (:data:`SUMMING_UP`).

    >>> pl.select(sums_up(pl.lit("Overall, the tool is useful."))).item()
    True
    """
    return sentence.str.contains(SUMMING_UP)


#: Words and their opposites (English, German, French, Spanish): a claim that says one where
#: the passages say the other contradicts them. Symmetric; read as stems.
OPPOSITES: tuple[tuple[str, str], ...] = (
    ("links", "rechts"), ("gauche", "droite"), ("izquierda", "derecha"),
    ("izquierdo", "derecho"), ("increase", "decrease"), ("increased", "decreased"),
    ("rose", "fell"), ("gained", "lost"), ("won", "lost"), ("wins", "loses"),
    ("more", "less"), ("higher", "lower"), ("before", "after"), ("north", "south"),
    ("east", "west"), ("dies", "survives"), ("died", "survived"), ("alive", "dead"),
    ("stieg", "sank"), ("gewann", "verlor"), ("vor", "nach"),
    ("mehr", "weniger"), ("starb", "überlebte"), ("augmenté", "diminué"), ("plus", "moins"),
    ("meurt", "survit"), ("mort", "survécu"), ("avant", "après"), ("gagné", "perdu"),
    ("aumentó", "disminuyó"), ("más", "menos"), ("murió", "sobrevivió"), ("muere", "sobrevive"),
    ("antes", "después"), ("ganó", "perdió"), ("norte", "sur"), ("este", "oeste"),
)


def opposite_stems() -> pl.DataFrame:
    """:data:`OPPOSITES` both ways as stems: columns ``stem`` and ``opposite``.

    >>> sorted(opposite_stems().filter(pl.col("stem") == "derec")["opposite"])
    ['izqui']
    """
    pairs = [(a, b) for a, b in OPPOSITES] + [(b, a) for a, b in OPPOSITES]
    frame = pl.DataFrame(pairs, schema=["stem", "opposite"], orient="row")
    return frame.select(pl.all().str.slice(0, STEM_LENGTH)).unique()


#: Nationality and city adjectives that German, French and Spanish write in lower case (English
#: capitalizes them, so they are names there already): a claim's nationality is an anchor.
DEMONYMS: tuple[str, ...] = _word_list("""
español española francés francesa alemán alemana italiano italiana inglés inglesa británico
británica estadounidense mexicano mexicana argentino argentina chileno chilena colombiano
colombiana peruano peruana brasileño brasileña portugués portuguesa suizo suiza austriaco
austriaca austríaco belga holandés holandesa neerlandés sueco sueca noruego noruega danés
danesa ruso rusa chino china japonés japonesa coreano coreana canadiense polaco polaca
griego griega turco turca catalán catalana
espagnol espagnole français française allemand allemande italien italienne anglais
anglaise britannique américain américaine mexicain mexicaine argentin argentine brésilien
brésilienne portugais portugaise suisse autrichien autrichienne belge néerlandais suédois
suédoise norvégien norvégienne danois danoise russe chinois chinoise japonais japonaise
coréen coréenne canadien canadienne polonais polonaise grec grecque turc turque lyonnais
lyonnaise toulousain toulousaine parisien parisienne marseillais marseillaise
deutsch deutsche deutschen französisch französische spanisch spanische italienisch
italienische englisch englische britisch britische amerikanisch amerikanische schweizer
schweizerische österreichisch österreichische niederländisch niederländische schwedisch
russisch russische chinesisch chinesische japanisch japanische polnisch polnische
""")


def demonym_stems() -> list[str]:
    """The stems of :data:`DEMONYMS`, accents folded as :func:`words` folds them (``austr``
    for ``austriaco``, ``osterr`` for ``österreichisch``).

    >>> "austr" in demonym_stems(), "suizo"[:STEM_LENGTH] in demonym_stems()
    (True, True)
    """
    return sorted({_fold(word)[:STEM_LENGTH] for word in DEMONYMS})


def _fold(word: str) -> str:
    """``word`` without combining marks (NFD), as :func:`words` reads it."""
    return "".join(c for c in unicodedata.normalize("NFD", word)
                   if unicodedata.category(c) != "Mn")
