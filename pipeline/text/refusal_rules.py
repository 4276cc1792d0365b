r"""The refusal rule's patterns, one table per language (the rule: :mod:`pipeline.text.refusals`).

Each :class:`LanguageRules` holds regular expressions over folded clauses (lowercased, quotes
straightened, whitespace collapsed: :func:`pipeline.text.refusals.fold`) of one language:
``strong`` refusals that decline the question itself, ``weak`` ones that say some information is
missing, the ``prefixes`` a filler clause may open with, and ``filler`` sentences.
:mod:`pipeline.text.refusals` rewrites them for the regex crate's lazy DFA and joins every
language's into one alternation per kind; ``\x1f`` in a pattern is its clause separator.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The end of a clause: trailing spaces and punctuation.
_END = r"[\s\p{P}]*$"


@dataclass(frozen=True)
class LanguageRules:
    """One language's patterns (regex on folded clauses): ``strong`` and ``weak`` refusals,
    ``prefixes`` a filler clause may open with, and ``filler`` sentences."""

    strong: tuple[str, ...]
    weak: tuple[str, ...]
    prefixes: tuple[str, ...]
    filler: tuple[str, ...]


# --- English -----------------------------------------------------------------------------------
_SRC_EN = (r"(?:context|contexts|documents?|docs|passages?|texts?|sources?|articles?|excerpts?|"
           r"snippets?|search results|results|materials?|knowledge base|records|references?|"
           r"files?|manual|report|pages?|paragraphs?|sections?|transcript|data provided|"
           r"(?:provided|given|supplied|available|above|retrieved|attached|shared) \w+|"
           r"information (?:provided|given|available|supplied|i have|at hand))")
_NOT = r"(?:do not|does not|did not|don't|doesn't|didn't|dont|doesnt)"
_CANT = (r"(?:cannot|can ?not|can't|cant|could not|couldn't|am unable to|'m unable to|"
         r"are unable to|'re unable to|was unable to|were unable to|am not able to|"
         r"'m not able to|was not able to|won't be able to|will not be able to)")
_TEXT_VERBS = (r"(?:mentioned|specified|stated|addressed|discussed|documented|disclosed|"
               r"referenced|indicated|spelled out|touched on)")
_OTHER_VERBS = (r"(?:provided|given|included|listed|covered|found|available|present|described|"
                r"detailed|explained|reported|named|identified|defined|contained|shown|"
                r"clarified|noted|outlined|explicitly \w+|specifically \w+|clearly \w+)")
_ENGLISH = LanguageRules(
    strong=(
        rf"\bi (?:really |honestly |simply |just )?(?:do not|don't|dont|did not|didn't) know"
        rf"(?: (?:the answer|that|this|it|for (?:sure|certain)|exactly|offhand|based on .*|"
        rf"from .*))?{_END}",
        r"\b(?:unable|not able|impossible|not possible|unable for me|not in a position) to "
        r"(?:answer|respond to (?:the|this|your) question|say|tell|determine|know|confirm|"
        r"provide (?:an?|the|any) (?:\w+ )?(?:answer|response)|give (?:an?|the|any) "
        r"(?:\w+ )?answer)",
        rf"\b{_CANT} (?:\w+ )?(?:answer|tell|determine|confirm|say{_END}|"
        r"say (?:for sure|for certain|with certainty|exactly|definitively|whether|what|how|"
        r"when|who|which|if|where|why|based|from|much|anything)|"
        r"(?:provide|give|offer) (?:you )?(?:an?|the|any) (?:\w+ )?(?:answer|response|figure|"
        r"number|date|name|estimate))\b",
        r"\bnot something (?:i|we) (?:can|could) (?:answer|help with|say)",
        r"\b(?:question|answer)s? (?:cannot|can't|can not|could not|couldn't) be "
        r"(?:answered|determined|found|given|provided)",
        r"\bunanswerable\b|\bnot answerable\b",
        rf"^(?:there is |there's )?no (?:answer|idea|clue)(?: (?:found|available|given|"
        rf"provided|in the \w+))?{_END}",
        r"\bno answer (?:is|was|can be|could be) (?:found|given|provided|determined)",
        r"\bi have no (?:idea|clue|way of knowing)",
        r"\bthere is no way (?:for me )?to (?:know|tell|determine|answer)",
    ),
    weak=(
        rf"\bi (?:really |honestly )?{_NOT} know\b",
        r"\b(?:i'm|i am|we're|we are) (?:not|un)(?: entirely| completely| 100%)? "
        r"(?:sure|certain)\b",
        rf"\b(?:i|we) (?:{_NOT}|have not|haven't) (?:have |got |find )?(?:any |enough |"
        r"sufficient |the |that |this |specific |relevant |access to |the necessary |"
        r"the relevant |that specific |those )*(?:information|data|details|knowledge|"
        r"context|answer|record|specifics)",
        r"\b(?:i|we) have no (?:\w+ )?(?:information|data|details|knowledge|record)",
        rf"\b(?:i|we)(?: {_CANT}| {_NOT}| have not| haven't| was not able to) "
        r"(?:\w+ )?(?:find|locate|identify|retrieve|spot|see any)\b",
        rf"{_SRC_EN}\b[^.,;\x1f]{{0,50}}? (?:{_NOT}|have not|haven't|has not|hasn't) "
        r"(?:\w+ly )?(?:mention|provide|contain|include|specify|say|state|indicate|discuss|"
        r"cover|address|give|list|reveal|offer|describe|detail|explain|tell|answer|identify|"
        r"name|show|talk about|refer to|touch on|clarify|disclose|note|report|define|have|"
        r"hold|seem to|appear to|make (?:any )?(?:mention|reference))",
        rf"\bnone of the (?:\w+ )?{_SRC_EN}[^.,;\x1f]{{0,30}}? (?:\w+ly )?(?:mention|discuss|say|"
        r"state|address|cover|contain|provide|include|specif|answer|give|talk|refer|deal|"
        r"describe|explain|indicate)",
        rf"\bnothing (?:in|within|from) (?:the |these |this |those |any of the )?(?:\w+ )?"
        rf"{_SRC_EN}",
        rf"\b{_SRC_EN} (?:is|are|remains?|was|were) silent",
        rf"\b{_SRC_EN}[^.,;\x1f]{{0,50}}? (?:says?|mentions?|tells?|states?|contains?|includes?|"
        r"provides?|gives?|offers?) (?:us )?nothing",
        rf"\b{_SRC_EN} (?:has|have|contains?|gives?|holds?|offers?|provides?) no (?:\w+ )?"
        r"(?:record|information|details?|data|mention|answer)",
        rf"\bnot something (?:that )?(?:the |these |this |those |any of the |my )?(?:\w+ )?"
        rf"{_SRC_EN}",
        rf"\b{_SRC_EN} only (?:covers?|discuss(?:es)?|describes?|deals? with|talks? about|"
        r"focus(?:es)? on)",
        r"\b(?:it|they|this|these)(?: also)? (?:do|does|did)(?: not|n't) (?:\w+ly )?"
        r"(?:mention|specify|say|state|address|discuss|explain|talk about|touch on|cover)",
        r"\b(?:it|they|this|these)(?: also)? (?:do|does|did)(?: not|n't) (?:\w+ly )?"
        r"(?:provide|give|offer|include|contain|list) (?:any )?(?:\w+ )?(?:information|"
        r"instructions|details|specifics|guidance|answer|explanation|data)",
        rf"\b(?:is|are|was|were|has been|have been)(?: not|n't) (?:\w+ly )?{_TEXT_VERBS}\b",
        rf"\b(?:isn't|aren't|wasn't|weren't|not) (?:\w+ly )?{_TEXT_VERBS}\b",
        rf"\b(?:is|are|was|were)(?: not|n't) (?:\w+ly )?{_OTHER_VERBS} (?:in|within|by|"
        rf"anywhere in|among|from|on) (?:the |any of the |any |these |those |this |that |your "
        rf"|my )?{_SRC_EN}",
        r"\bno (?:\w+ )?(?:information|mention|details?|data|indication|specifics|answer)\b "
        r"(?:is |was |has been |can be |could be )?(?:about|on|regarding|concerning|of|as to|"
        r"for|given|provided|available|found|in (?:the|any|these|those)|that|to (?:answer|"
        r"determine|indicate|suggest|say))",
        rf"\bno (?:\w+ )?(?:information|mention|details|specifics){_END}",
        r"\bthere (?:is|are|was|were)(?: no|n't any| not any) (?:\w+ ){0,2}?(?:information|"
        r"mention|details?|data|indication|specifics)\b",
        r"\b(?:not enough|insufficient|inadequate|limited|lack of|lacks?|lacking) (?:\w+ )?"
        r"(?:information|context|details|data)\b",
        rf"\b(?:unclear|not clear|uncertain|not certain) (?:\w+ ){{0,4}}?(?:from|based on|in|"
        rf"given|according to) (?:the |these |this |any |those )?(?:\w+ )?{_SRC_EN}",
        r"\b(?:beyond|outside) (?:the scope of|my knowledge|what (?:the|these|this))",
        r"\b(?:the|this|that|such|your) (?:information|answer|detail|figure|number|data) "
        r"(?:is|was|are)(?: not|n't) (?:available|provided|given|included|present|found|"
        r"mentioned|specified)",
        r"\b(?:cannot|can't|can not|could not|couldn't) be (?:determined|found|confirmed|"
        r"inferred|established|ascertained|verified|deduced|derived) (?:from|based on|with)",
        r"\binsufficient context\b|\bnot enough information\b",
    ),
    prefixes=(
        r"(?:i'm |i am |we're |we are )?(?:so |very |really |truly )?sorry",
        r"(?:my )?apologies|i apologi[sz]e|i'm afraid|i am afraid",
        r"unfortunately|regrettably|sadly|however|but|so|therefore|thus|hence|also|"
        r"additionally|in summary|in short|overall|that said|as a result|honestly|well|ok|"
        r"okay|note|answer|response|final answer",
        rf"(?:based on|according to|from|in|after reviewing|upon reviewing|after checking|"
        rf"after searching|after reading|having reviewed|looking at|reviewing) (?:the |this |"
        rf"these |that |my |your |all the |all of the )?(?:\w+ ){{0,2}}?{_SRC_EN}"
        rf"(?: (?:provided|given|you (?:provided|shared|gave)|available|i have))?",
    ),
    filler=(
        r"i apologi[sz]e.*|(?:i'm |i am )?sorry (?:for|about) .*|thank(?:s| you).*",
        r"(?:i )?hope (?:this|that) helps.*|let me know.*|feel free.*|is there anything else.*",
        r"if you (?:have|can|could|provide|share|want|need|would like|are looking).*",
        r"(?:please|kindly) (?:consult|contact|check|refer|reach out|ask|verify|provide|"
        r"rephrase|clarify|see|visit|try|share|let|look|confirm|double-check).*",
        r"(?:you|users?) (?:may|might|could|can|should|will) (?:want to |wish to |need to |"
        r"have to |try to |be able to )?(?:consult|contact|check|refer|reach out|ask|verify|"
        r"visit|look|search|try|consider|provide|find (?:this|that|more|the)).*",
        r"i(?: would|'d)? (?:recommend|suggest|advise|encourage).*",
        r"(?:it (?:is|'s|would be|might be|may be) )?(?:best|advisable|recommended|a good "
        r"idea) to (?:consult|contact|check|refer|ask|verify|look).*",
        r"for (?:more|further|additional|accurate|the most accurate|precise|specific|"
        r"up-to-date|detailed|official) (?:and \w+ )?(?:information|details|guidance|answers?)"
        r".*",
        r"(?:here is|here's|this is) (?:my|the) (?:answer|response).*",
        r"(?:(?:the|this|that|each|one|another) )?(?:(?:first|second|third|fourth|other|"
        r"remaining|last) )?(?:passage|document|source|article|excerpt|snippet|text)s?"
        r"(?: \d+)?(?: only| also)? (?:provides? (?:information|instructions|details|some|an?|"
        r"the)|gives? (?:information|instructions|details|some|an?|the)|discuss(?:es)?|"
        r"describes?|covers?|talks? about|focus(?:es)? on|deals? with|is about|are about|"
        r"lists?|contains? (?:information|instructions|details))[^:\x1f]*",
        r"(?:the )?(?:answer|response)(?: to (?:your|the|this) question)?(?: is)?",
    ),
)

# --- German ------------------------------------------------------------------------------------
_SRC_DE = (r"(?:kontext|dokument|text|quelle|passage|unterlage|artikel|auszug|auszüg|"
           r"ausschnitt|material|abschnitt|suchergebnis|informationen|angaben|daten)\w*")
_GERMAN = LanguageRules(
    strong=(
        rf"\bich wei(?:ß|ss) (?:es |das )?(?:leider |wirklich )?nicht{_END}",
        r"\b(?:kann|können|konnte|könnte) (?:ich |wir )?[^\x1f]{0,40}?(?:nicht|keine antwort) "
        r"(?:beantworten|sagen|bestimmen|feststellen|geben)",
        r"\b(?:lässt|lassen) sich [^\x1f]{0,40}?nicht (?:beantworten|bestimmen|feststellen|"
        r"sagen|ermitteln)",
        r"\bnicht (?:möglich|in der lage)[^\x1f]{0,40}? (?:zu )?(?:beantworten|sagen|bestimmen|"
        r"feststellen)",
        r"\bkeine antwort\b|\bunbeantwortbar|\bnicht beantwortbar|\bnicht beantwortet werden",
    ),
    weak=(
        r"\bich wei(?:ß|ss) (?:es |das )?(?:leider )?nicht\b",
        r"\bich bin (?:mir )?(?:nicht|un)sicher",
        rf"\b{_SRC_DE}[^.,;\x1f]{{0,20}}? (?:erwähn|nenn|enthält|enthalten|liefer|gibt|geben|"
        r"mach|beschreib|spezifizier|führ|sag|bietet|bieten|beinhalt|äußer|behandel)\w*"
        r"[^.,;\x1f]{0,60}? (?:nicht|nichts|keine\w*)\b",
        rf"\b{_SRC_DE}[^.,;\x1f]{{0,40}}? (?:reich|genüg)\w* (?:\w+ )?nicht",
        r"\bnicht (?:explizit |ausdrücklich |genau |näher |konkret )?(?:erwähnt|genannt|"
        r"angegeben|aufgeführt|ersichtlich|beschrieben|spezifiziert|dokumentiert|behandelt|"
        r"thematisiert|zu entnehmen|hervor|festgelegt|beziffert)",
        r"\bkeine (?:genauen |konkreten |näheren |weiteren |spezifischen |relevanten |"
        r"ausreichenden |expliziten |eindeutigen )?(?:informationen|angaben|hinweise|"
        r"erwähnung|details|aussagen?)\b",
        r"\b(?:konnte|kann|habe|können|konnten)\b[^\x1f]{0,60}?\b(?:nicht|keine\w*|nichts)\b"
        r"[^\x1f]{0,30}?\b(?:finden|gefunden|entnehmen|ermitteln|feststellen|herausfinden)",
        r"\b(?:nicht genügend|nicht genug|unzureichende|zu wenige?|keine ausreichenden|nicht "
        r"ausreichend) (?:\w+ )?(?:informationen|angaben|kontext|daten)",
        r"\b(?:unklar|nicht klar|nicht eindeutig)\b",
        r"\bgeht [^\x1f]{0,50}?nicht hervor",
    ),
    prefixes=(
        r"(?:es )?tut mir (?:sehr |wirklich )?leid|entschuldigung|entschuldige|leider|"
        r"bedauerlicherweise|aber|jedoch|allerdings|daher|deshalb|somit|also|antwort",
        rf"(?:basierend auf|auf (?:der )?grundlage|laut|gemäß|anhand|nach durchsicht|in|aus|"
        rf"nach) (?:de[nmrs]|die|das|der) (?:\w+ ){{0,2}}?{_SRC_DE}",
    ),
    filler=(
        r"(?:bitte|wenden sie sich|ich empfehle|ich würde empfehlen|ich rate|am besten|"
        r"für (?:weitere|genauere|nähere|aktuelle|verbindliche) (?:informationen|angaben|"
        r"details|auskünfte)|lassen sie mich wissen|falls sie|wenn sie|sie können|sie könnten|"
        r"sie sollten|ich hoffe|vielen dank|danke).*",
    ),
)

# --- French ------------------------------------------------------------------------------------
_SRC_FR = (r"(?:contexte|document|texte|source|passage|article|extrait|information|élément|"
           r"donnée|fichier|dossier|rapport)s?")
_FRENCH = LanguageRules(
    strong=(
        rf"\bje ne (?:le )?sais (?:pas|vraiment pas|malheureusement pas){_END}",
        r"\b(?:je ne (?:peux|pourrais|saurais)|nous ne pouvons|je ne suis pas en mesure de|"
        r"impossible de|il (?:m'|nous )?est impossible de|(?:il )?n'est pas possible de|"
        r"je suis incapable de) (?:pas )?(?:vous )?(?:\w+ )?(?:répondre|dire|déterminer|"
        r"confirmer|fournir (?:de |une )?(?:\w+ )?réponse|donner (?:de |une )?(?:\w+ )?réponse)",
        r"\bne permet(?:tent)? pas de répondre|\baucune réponse|\bpas de réponse",
    ),
    weak=(
        r"\bje ne (?:le )?sais pas\b",
        r"\bje ne suis pas (?:sûr|certain)e?",
        rf"\b{_SRC_FR}\b[^.,;\x1f]{{0,50}}? (?:ne |n')(?:\w+ ){{0,1}}?(?:mentionn|précis|"
        r"indiqu|fourni|donn|contien|contient|dis|dit|évoqu|parl|abord|spécifi|trait|comport|"
        r"renseign|permet|f[ao]\w* (?:pas|aucune) (?:mention|état)|présent|inclu|cit|détaill|"
        r"explicit|expliqu|répond)\w*",
        r"\b(?:n'est|ne sont|n'a|n'ont|n'était|n'étaient) (?:pas|jamais|nulle part) (?:été )?"
        r"(?:\w+ )?(?:mentionné|précisé|indiqué|spécifié|évoqué|abordé|renseigné|documenté|"
        r"cité|communiqué|fourni)e?s?",
        r"\baucune? (?:\w+ )?(?:information|mention|indication|précision|détail|trace|élément)",
        r"\bpas (?:d'|de )(?:\w+ )?(?:informations?|mention|précisions?|détails|indications?)",
        rf"\baucun(?:e)? des (?:\w+ )?{_SRC_FR}",
        r"\bje (?:ne |n')(?:trouve|dispose|parviens|retrouve|vois|ai (?:pas|rien|aucune?))\b",
        r"\b(?:pas assez|pas suffisamment|insuffisamment) d'(?:informations?|éléments|données|"
        r"contexte)|\binformations? insuffisantes?",
        r"\b(?:n'est pas clair|pas clair|n'est pas précisé|reste (?:flou|incertain|inconnu))",
        r"\bne permet(?:tent)? pas de (?:déterminer|savoir|dire|conclure|préciser|connaître)",
    ),
    prefixes=(
        r"(?:je suis )?(?:vraiment |sincèrement )?désolée?|je m'excuse|malheureusement|hélas|"
        r"cependant|toutefois|mais|donc|par conséquent|réponse",
        rf"(?:d'après|selon|sur la base d[eu]s?|en me basant sur|en (?:me )?fondant sur|dans|"
        rf"à la lecture d[eu]s?|après (?:examen|lecture|vérification) d[eu]s?) (?:les |le |la "
        rf"|l')?(?:\w+ ){{0,2}}?{_SRC_FR}(?: (?:fournis|fournies|disponibles|donnés|données|"
        rf"transmis))?",
    ),
    filler=(
        r"(?:je vous (?:recommande|conseille|invite|suggère)|veuillez|n'hésitez pas|"
        r"pour (?:plus|davantage|obtenir) (?:d'informations|de détails|de précisions)|"
        r"vous (?:pouvez|pourriez|devriez)|il (?:est|serait) (?:préférable|conseillé|"
        r"recommandé)|si vous|j'espère|merci).*",
    ),
)

# --- Spanish -----------------------------------------------------------------------------------
_SRC_ES = (r"(?:contexto|documentos?|textos?|fuentes?|pasajes?|art[íi]culos?|fragmentos?|"
           r"extractos?|materiales?|informaci[óo]n (?:proporcionada|disponible|facilitada|"
           r"aportada|suministrada))")
_SPANISH = LanguageRules(
    strong=(
        rf"\bno (?:lo )?s[ée]{_END}",
        r"\bno (?:puedo|podemos|es posible|se puede|me es posible|estoy en condiciones de|"
        r"soy capaz de) (?:\w+ )?(?:responder|contestar|determinar|decir|saber|confirmar|"
        r"dar(?:te|le|les)? (?:una )?(?:\w+ )?respuesta|ofrecer (?:una )?(?:\w+ )?respuesta|"
        r"proporcionar (?:una )?(?:\w+ )?respuesta)",
        r"\bimposible (?:responder|contestar|determinar|saber|decir)",
        rf"\bno hay respuesta|\bsin respuesta{_END}|\bninguna respuesta",
    ),
    weak=(
        r"\bno (?:lo )?sé\b",
        r"\bno estoy segur[oa]",
        rf"\b{_SRC_ES}\b[^.,;\x1f]{{0,50}}? no (?:\w+ )?(?:mencion|especific|indic|proporcion|"
        r"contien|incluy|dic|dice|aport|detall|habl|ofrec|recog|precis|hace(?:n)? "
        r"(?:menci[óo]n|referencia)|brind|se refiere|refier|abord|trat|permit|explic)\w*",
        r"\bno (?:se )?(?:menciona|especifica|detalla|precisa|aclara|recoge)n?\b",
        r"\bno se (?:indica|dice|proporciona|explica|informa)n?\b",
        r"\bno (?:est[áa]|est[áa]n|aparece|aparecen|figura|figuran|viene|vienen|se encuentra|"
        r"se encuentran) (?:\w+ )?(?:mencionad|especificad|indicad|detallad|recogid|"
        rf"en (?:el|los|la|las|ning[úu]n|ninguno de los) (?:\w+ )?{_SRC_ES})\w*",
        r"\bno hay (?:\w+ ){0,2}?(?:informaci[óo]n|datos|menci[óo]n|detalles|referencias?|"
        r"indicaci[óo]n)",
        r"\bninguna (?:\w+ )?(?:informaci[óo]n|menci[óo]n|referencia|indicaci[óo]n)|"
        r"\bning[úu]n (?:dato|detalle)",
        r"\bno (?:he podido|pude|logr[ée]|puedo|pudimos|hemos podido|consigo|consegu[íi]|fue "
        r"posible) (?:\w+ )?(?:encontrar|hallar|localizar|ubicar)|\bno (?:encontr[ée]|"
        r"(?:he|hemos) encontrado)",
        r"\bno (?:hay|tengo|dispongo de|contamos con|cuento con|existe|se dispone de|"
        r"tenemos) (?:\w+ )?(?:informaci[óo]n|datos|contexto|detalles)",
        r"\binformaci[óo]n insuficiente|\bdatos insuficientes",
        rf"\bningun[oa] de (?:los|las|estos|estas) (?:\w+ )?{_SRC_ES}",
        r"\bno (?:est[áa]|queda|resulta) claro",
    ),
    prefixes=(
        r"lo (?:siento|lamento)(?: mucho)?|disculp[ae]|perd[óo]n|lamentablemente|"
        r"desafortunadamente|por desgracia|sin embargo|pero|por (?:lo )?tanto|as[íi] que|"
        r"respuesta",
        rf"(?:seg[úu]n|de acuerdo con|con base en|en base a|bas[áa]ndome en|a partir de|"
        rf"tras revisar|despu[ée]s de revisar|en) (?:el |los |la |las )?(?:\w+ ){{0,2}}?"
        rf"{_SRC_ES}(?: (?:proporcionad|disponibl|facilitad|aportad|suministrad)\w*)?",
    ),
    filler=(
        r"(?:(?:le |te )?(?:recomiendo|sugiero|aconsejo)|por favor|le ruego|"
        r"(?:puede|puedes|podr[íi]a|podr[íi]as) (?:consultar|contactar|revisar|verificar|"
        r"preguntar|comunicarse|comunicarte)|para (?:m[áa]s|obtener) (?:informaci[óo]n|"
        r"detalles)|si (?:necesita|necesitas|tiene|tienes|puede|puedes)|consulte|contacte|"
        r"espero|gracias).*",
    ),
)

# --- Italian -----------------------------------------------------------------------------------
_SRC_IT = (r"(?:contest[oi]|document[oi]|test[oi]|fonti?|passagg[io]|bran[io]|articol[oi]|"
           r"estratt[oi]|frammenti?|material[ei]|informazioni fornite|dati forniti)")
_ITALIAN = LanguageRules(
    strong=(
        rf"\bnon (?:lo )?so{_END}",
        r"\bnon (?:posso|possiamo|è possibile|si può|sono in grado di|siamo in grado di|"
        r"riesco a) (?:\w+ )?(?:rispondere|dire|determinare|stabilire|sapere|confermare|"
        r"fornir(?:e|ti|le) una (?:\w+ )?risposta|dar(?:e|ti|le) una (?:\w+ )?risposta)",
        r"\bimpossibile (?:rispondere|determinare|stabilire|dire)|\bnessuna risposta",
        r"\bnon permett\w* di rispondere",
    ),
    weak=(
        r"\bnon (?:lo )?so\b",
        r"\bnon (?:ne )?sono (?:del tutto )?sicur[oa]",
        rf"\b{_SRC_IT}\b[^.,;\x1f]{{0,50}}? non (?:\w+ )?(?:menzion|specific|indic|fornisc|"
        r"forni|contien|contengon|riport|dic|parl|includ|precis|cit|tratt|fa(?:nno)? "
        r"(?:menzione|riferimento)|accenn|permett|chiarisc|spieg)\w*",
        r"\bnon (?:è|sono|viene|vengono|risulta|risultano|era|erano) (?:\w+ )?(?:menzionat|"
        r"specificat|indicat|riportat|precisat|citat|documentat)\w*",
        r"\bnon (?:si )?menzion\w*",
        r"\bnessuna (?:\w+ )?(?:informazione|menzione|indicazione)|\bnessun (?:\w+ )?"
        r"(?:riferimento|dato|dettaglio|accenno)",
        r"\bnon (?:ci sono|c'è|vi sono|è presente|sono presenti|sono disponibili|è disponibile|"
        r"ho|abbiamo|dispongo di|dispongo|possiedo) (?:\w+ ){0,2}?(?:informazion[ie]|dati|"
        r"dettagli|menzion[ie]|riferimenti|indicazion[ie]|elementi)",
        r"\binformazioni (?:insufficienti|non sufficienti)",
        rf"\bnessun[oa] (?:dei|degli|delle|di questi|di queste) (?:\w+ )?{_SRC_IT}",
        r"\bnon (?:sono riuscit[oa]|siamo riusciti|riesco|sono stat[oa] in grado|ho potuto) "
        r"(?:a |di )?(?:\w+ )?(?:trovare|individuare|reperire)|\bnon (?:ho trovato|trovo)",
        r"\bnon (?:è|risulta) chiaro",
    ),
    prefixes=(
        r"(?:mi )?dispiace|spiacente|mi scuso|scusa(?:mi|te)?|mi scusi|purtroppo|"
        r"sfortunatamente|tuttavia|però|ma|quindi|pertanto|risposta",
        rf"(?:in base a|sulla base d|secondo|stando a|dall'analisi d|dopo aver (?:esaminato|"
        rf"letto|consultato)|nel|nei|nella|nelle|dal|dai|dalla|dalle)\w*'? ?(?:il |i |la |le "
        rf"|l'|gli )?(?:\w+ ){{0,2}}?{_SRC_IT}(?: (?:fornit|disponibil|indicat|allegat)\w*)?",
    ),
    filler=(
        r"(?:(?:(?:le|ti) )?(?:consiglio|suggerisco|raccomando)|si (?:consiglia|suggerisce|"
        r"raccomanda)|(?:la |ti )?invito|per (?:maggiori|ulteriori|più) (?:informazioni|"
        r"dettagli)|(?:può|puoi|potrebbe|potresti) (?:consultare|contattare|verificare|chiedere|"
        r"rivolgersi|rivolgerti)|se (?:hai|ha|può|puoi|desidera|desideri)|contatt[ai]|"
        r"consult[ai]|rivolg[ai]ti|spero|grazie).*",
    ),
)

# --- Portuguese --------------------------------------------------------------------------------
_SRC_PT = (r"(?:contexto|documentos?|textos?|fontes?|passagens?|trechos?|artigos?|excertos?|"
           r"fragmentos?|materia(?:l|is)|informa[çc][õo]es fornecidas)")
_PORTUGUESE = LanguageRules(
    strong=(
        rf"\bn[ãa]o sei{_END}",
        r"\bn[ãa]o (?:posso|podemos|é possível|e possivel|se pode|consigo|conseguimos|sou "
        r"capaz de|tenho como) (?:\w+ )?(?:responder|dizer|determinar|afirmar|saber|confirmar|"
        r"precisar|(?:te |lhe )?fornecer uma (?:\w+ )?resposta|(?:te |lhe )?dar uma (?:\w+ )?"
        r"resposta)",
        r"\bimposs[íi]vel (?:responder|determinar|dizer|saber)|\b(?:n[ãa]o h[áa]|nenhuma) "
        r"resposta|\bsem resposta",
    ),
    weak=(
        r"\bn[ãa]o sei\b",
        r"\bn[ãa]o tenho (?:certeza|informa)",
        rf"\b{_SRC_PT}\b[^.,;\x1f]{{0,50}}? n[ãa]o (?:\w+ )?(?:mencion|especific|indic|fornec|"
        r"cont[ée]m|trazem|traz|diz|dizem|inclu|inform|apresent|detalh|cit|fala|aborda|"
        r"esclarec|precis|permit|explic|faz(?:em)? (?:men[çc][ãa]o|refer[êe]ncia))\w*",
        r"\bn[ãa]o (?:é|são|foi|foram|está|estão|vem|consta|constam|aparece|aparecem) "
        r"(?:\w+ )?(?:mencionad|especificad|indicad|informad|citad|detalhad|"
        rf"n[oa]s? (?:\w+ )?{_SRC_PT})\w*",
        r"\bn[ãa]o (?:se )?menciona\w*",
        r"\bn[ãa]o h[áa] (?:\w+ ){0,2}?(?:informa[çc](?:ão|ões)|men[çc][ãa]o|dados|detalhes|"
        r"refer[êe]ncias?|indica[çc][ãa]o)",
        r"\bnenhuma (?:\w+ )?(?:informa[çc][ãa]o|men[çc][ãa]o|refer[êe]ncia|indica[çc][ãa]o)|"
        r"\bnenhum (?:dado|detalhe)",
        r"\bn[ãa]o (?:encontrei|consegui (?:\w+ )?encontrar|foi poss[íi]vel (?:\w+ )?encontrar|"
        r"localizei|achei)",
        r"\binforma[çc](?:ão|ões) insuficientes?|\b(?:n[ãa]o (?:tenho|temos|disponho de)|sem) "
        r"(?:\w+ )?informa[çc](?:ão|ões)",
        r"\bn[ãa]o (?:está|fica|é) claro",
        rf"\bnenhum[a]? d(?:os|as|esses|essas) (?:\w+ )?{_SRC_PT}",
    ),
    prefixes=(
        r"desculp[ea](?:-me)?|lamento|sinto muito|infelizmente|(?:no )?entanto|por[ée]m|"
        r"contudo|mas|portanto|resposta",
        rf"(?:com base n|de acordo com|segundo|conforme|ap[óo]s (?:analisar|revisar|ler)|n)"
        rf"[oa]?s? ?(?:os |as |o |a )?(?:\w+ ){{0,2}}?{_SRC_PT}(?: (?:fornecid|"
        rf"disponibilizad|apresentad|dispon[íi]ve)\w*)?",
    ),
    filler=(
        r"(?:recomendo|sugiro|aconselho|por favor|favor|(?:voc[êe] )?(?:pode|poderia) "
        r"(?:consultar|entrar em contato|verificar|contatar|perguntar)|para (?:mais|obter) "
        r"(?:informa[çc](?:ões|ão)|detalhes)|se (?:precisar|voc[êe])|consulte|entre em contato|"
        r"espero|obrigad).*",
    ),
)

# --- Russian -----------------------------------------------------------------------------------
_SRC_RU = (r"(?:контекст|документ|текст|источник|фрагмент|отрыв|материал|предоставленн|"
           r"приведенн|приведённ|представленн|найденн|статья|стать|данных|данные|сведени)\w*")
_RUSSIAN = LanguageRules(
    strong=(
        rf"\b(?:я )?(?:не знаю|не могу знать){_END}",
        r"\b(?:не (?:могу|можем|смогу|сможем|в состоянии)|невозможно|нельзя|не представляется "
        r"возможным|не удаётся|не удается) (?:\w+ )?(?:ответить|сказать|определить|установить|"
        r"дать (?:\w+ )?ответ)",
        r"\bнет ответа|\bответа нет|\bответ отсутствует|\bзатрудняюсь (?:ответить|сказать)",
    ),
    weak=(
        r"\bне знаю\b",
        r"\bне (?:уверен|уверена|уверены)\b",
        rf"\b{_SRC_RU}[^.,;\x1f]{{0,50}}? не (?:упомина|указыва|содерж|привод|сообща|говор|"
        r"описыва|уточня|да[её]т|дают|раскрыва|освеща|называ|позволя|объясня|включа)\w*",
        r"\bне (?:упоминается|упоминаются|указан\w*|указывается|упомянут\w*|сказано|говорится|"
        r"приводится|приводятся|сообщается|уточняется|уточнен\w*|уточнён\w*|раскрывается|"
        r"освещается|описан\w*|приведен\w*|приведён\w*|рассматрива\w+|обсужда\w+|"
        r"затрагива\w+)",
        rf"\bни (?:в )?одн\w* из {_SRC_RU}",
        r"\bнет (?:\w+ )?(?:информации|сведений|данных|упоминани\w*|указани\w*)",
        r"\bотсутству\w* (?:\w+ )?(?:информаци|сведени|данн|упоминани)\w*|\b(?:информаци|"
        r"сведени)\w* [^.,;\x1f]{0,40}?отсутству\w*",
        r"\b(?:недостаточно|мало|не хватает|нехватка) (?:\w+ )?(?:информации|данных|сведений|"
        r"контекста)",
        r"\bне (?:смог|смогла|смогли|удалось|удаётся|удается)\b[^\x1f]{0,20}?найти|"
        r"\bне наш(?:[её]л|ла|ли)\b",
        r"\b(?:не ясно|неясно|непонятно|не понятно|неизвестно)\b",
    ),
    prefixes=(
        r"к (?:сожалению|моему сожалению)|извините|простите|прошу прощения|увы|однако|но|"
        r"поэтому|ответ",
        rf"(?:на основ(?:е|ании)|исходя из|согласно|по|судя по|в|из) (?:\w+ ){{0,2}}?"
        rf"{_SRC_RU}",
    ),
    filler=(
        r"(?:рекомендую|рекомендуем|советую|предлагаю|пожалуйста|обратитесь|уточните|"
        r"проверьте|для получения|надеюсь|спасибо|если (?:вам|вы|у вас)).*",
    ),
)

# --- Chinese -----------------------------------------------------------------------------------
_SRC_ZH = (r"(?:文档|文件|文本|资料|資料|上下文|材料|段落|来源|來源|文章|内容|內容|参考|參考|"
           r"片段|检索结果|檢索結果|文檔|信息|資訊|原文)")
_CHINESE = LanguageRules(
    strong=(
        r"(?:无法|無法|不能|没法|沒法|难以|難以|无从|無從)[^\x1f，,。]{0,15}?(?:回答|作答|答复|"
        r"答覆|给出答案|給出答案|提供(?:答案|准确|確切|确切|具体|具體|明确|明確))",
        rf"(?:我)?不知道(?:答案)?{_END}",
        r"不得而知|无从得知|無從得知|无从知晓|没有答案|沒有答案|无答案|無答案|没有明确答案|"
        r"沒有明確答案|答案未知",
    ),
    weak=(
        r"不知道",
        r"(?:没有|沒有|并没有|並沒有|未|并未|並未|没|不曾)(?:明确|明確|具体|具體|直接|详细|詳細)?"
        r"(?:提到|提及|说明|說明|给出|給出|涉及|记载|記載|指出|写明|寫明|透露|披露|注明|註明)",
        rf"{_SRC_ZH}[^\x1f，,。]{{0,20}}?(?:没有|沒有|并没有|並沒有|未|并未|並未|不)(?:明确|明確|"
        r"具体|具體|直接|详细|詳細)?(?:提供|包含|列出|描述|介绍|介紹|说明|說明|给出|給出|涉及)",
        r"(?:信息|資訊|资料|資料|数据|數據|内容|內容|上下文|依据|依據)(?:不足|不够|不夠|有限|缺失|"
        r"不全|欠缺)",
        r"(?:没有|沒有|缺乏|缺少|无|無)(?:足够|足夠|充分|相关|相關|具体|具體|有关|有關|任何|明确|"
        r"明確|更多)的?(?:信息|資訊|资料|資料|数据|數據|内容|內容|依据|依據|说明|說明|记录|記錄)",
        r"(?:没有|沒有|并没有|並沒有|缺乏|缺少)[^\x1f，,。；]{0,15}?的(?:信息|資訊|资料|資料|数据|"
        r"數據|记载|記載|说明|說明|内容|內容)",
        r"(?:找不到|未能找到|没有找到|沒有找到|未找到|查不到|未查到|没能找到|沒能找到|未能確定|"
        r"未能确定)",
        r"(?:不清楚|不确定(?:[^性]|$)|不確定(?:[^性]|$)|不明确|不明確|尚不清楚|不详|不詳|无法确定|"
        r"無法確定|无法判断|無法判斷|无法得知|無法得知)",
    ),
    prefixes=(
        r"(?:很|非常|十分|真的)?(?:抱歉|對不起|对不起|不好意思|遗憾|遺憾)(?:的是)?|很遗憾|很遺憾|"
        r"但是?|不过|不過|然而|所以|因此|回答|答案|答",
        rf"(?:根据|根據|基于|基於|依据|依據|按照|从|從|在)(?:您|你)?(?:所)?(?:提供|给出|給出|"
        rf"给定|給定|现有|現有)?的?[^\x1f，,]{{0,6}}?{_SRC_ZH}(?:来看|來看|中|里|裡|内|內)?",
    ),
    filler=(
        r"(?:建议|建議|请|請|如需|如果您|如有需要|如果你|希望|谢谢|謝謝|您可以|你可以|可以咨询|"
        r"可以諮詢).*",
    ),
)

# --- Japanese ----------------------------------------------------------------------------------
_JAPANESE = LanguageRules(
    strong=(
        r"(?:回答|お答え|解答|返答|ご回答)(?:すること)?(?:は|が)?(?:でき|出来)(?:ません|ない|"
        r"かねます)|お答えしかねます|回答いたしかねます|回答不可|回答なし",
        r"答え(?:は|が)?(?:ありません|見つかりません|ない|なし)",
    ),
    weak=(
        r"(?:わか|分か|判)(?:りません|らない|りかねます)|存じません",
        r"(?:記載|言及|記述|明記|説明|掲載|記録|言及|触れ)(?:は|が|も)?(?:され|し|られ)?て?"
        r"(?:い|お)?(?:ません|ない|りません)",
        r"(?:記載|言及|記述|明記|情報|データ|説明|詳細|記録|該当する内容|内容)(?:は|が|も)?"
        r"(?:一切|特に|何も)?(?:ありません|ございません|ない|なし|見当たりません|見つかりません|"
        r"見つけられません|含まれていません|載っていません|書かれていません)",
        r"(?:見つかりませんでした|見つけることができませんでした|見つけられませんでした|"
        r"確認できませんでした|確認できません|見当たりませんでした)",
        r"(?:情報|記載|データ|手がかり)(?:が|は)?(?:不足|不十分|足りません)",
        r"(?:情報|データ|知識|資料)(?:は|を|が)?(?:持ち合わせて|持って|有して|保有して)(?:い|お)"
        r"(?:ません|りません)",
        r"(?:判断|特定|断定|確定|判定)(?:すること)?(?:は|が)?(?:でき|出来)(?:ません|ない|かねます)",
        r"不明(?:です|である|だ|な|であり|のため|。|$)|定かではありません|確かではありません|"
        r"明らかではありません|明らかでない|明確ではありません|明示されていません|読み取れません",
    ),
    prefixes=(
        r"(?:大変)?申し訳(?:ありません|ございません|ないです)(?:が)?|すみません(?:が)?|"
        r"恐れ入りますが|残念ながら|あいにく|しかし|ただし|でも|なお|回答|答え",
        r"(?:ご)?(?:提供|共有)(?:された|いただいた|頂いた)?[^\x1f、,]{0,15}?(?:によると|に基づくと|"
        r"に基づいて|では|を確認したところ|を見る限り)",
        r"(?:文書|資料|コンテキスト|文脈|情報|ドキュメント|テキスト)(?:によると|に基づくと|では|"
        r"を確認したところ|を見る限り)",
    ),
    filler=(
        r".*(?:ください|お勧めします|おすすめします|お勧めいたします|をおすすめします|"
        r"幸いです|願います)",
        r"(?:詳細|詳しく|詳しい情報)は.*(?:確認|問い合わせ|参照).*",
    ),
)

# --- Korean ------------------------------------------------------------------------------------
_KOREAN = LanguageRules(
    strong=(
        r"(?:답변|대답|답|응답)(?:을|를|은|는)?\s?(?:드릴|할|하실|해 ?드릴|하기|해 ?드리기|드리기)"
        r"\s?(?:수(?:가)? ?없|어렵|힘듭)",
        r"답변(?:이|은)?\s?불가|답(?:이|은)?\s?없음|답변\s?없음|답변할 수 없",
    ),
    weak=(
        r"모르겠|모릅니다|몰라요|알 수 없|알 수가 없",
        r"(?:언급|명시|기재|기술|설명|소개|제시)(?:되어 ?있지|돼 ?있지|되지|하지|하고 ?있지)\s?않",
        r"(?:나와|적혀|쓰여|실려|담겨)\s?있지\s?않|다루(?:고 ?있)?지\s?않",
        r"(?:정보|내용|자료|데이터)(?:는|은|를|을)?\s?(?:가지고|갖고|보유하고)\s?있지\s?않",
        r"(?:정보|내용|언급|자료|데이터|설명|근거)(?:가|이|는|은|를|을|도)?\s?(?:없|찾을 수 없|"
        r"찾지 못|부족|확인되지 않|확인할 수 없|포함되어 ?있지 ?않)",
        r"찾을 수 없|찾지 못했|찾지 못하|확인할 수 없|확인되지 않",
        r"불분명|명확하지 않|분명하지 않|확실하지 않|판단할 수 없|판단하기 어렵",
    ),
    prefixes=(
        r"(?:정말\s)?죄송(?:하지만|합니다만|합니다|해요)?|유감스럽게도|아쉽게도|안타깝게도|"
        r"하지만|그러나|다만|답변|답",
        r"(?:제공된|주어진|제공해 주신|제공하신)\s?(?:문서|자료|문맥|맥락|정보|내용|컨텍스트|"
        r"텍스트|지문)(?:에 따르면|를 바탕으로|을 바탕으로|에 근거하면|에 근거하여|를 검토한 결과|"
        r"을 검토한 결과|에서는|에는|만으로는)?",
    ),
    filler=(
        r".*(?:바랍니다|권장합니다|권해 드립니다|추천합니다|추천드립니다|주세요|"
        r"주시기 바랍니다|보시기 바랍니다|좋겠습니다|좋을 것 같습니다)",
    ),
)

#: The rule set, by ISO 639-1 code.
RULES: dict[str, LanguageRules] = {
    "en": _ENGLISH, "de": _GERMAN, "fr": _FRENCH, "es": _SPANISH, "it": _ITALIAN,
    "pt": _PORTUGUESE, "ru": _RUSSIAN, "zh": _CHINESE, "ja": _JAPANESE, "ko": _KOREAN,
}
