"""Key phrases of chat text without a model: the words that carry a topic, and the runs of them.

A candidate phrase is 1-3 consecutive content words, never crossing punctuation or a stop word
(the RAKE idea): "training for the marathon" yields "training" and "marathon", never
"training marathon". The stop list holds English function words, contractions and the filler of
chat ("sure", "here's", "let me", "keep", "start"), plus the commonest function words of the
other languages exports are written in, so that neither "i'll around" nor "zijn voor" can name
a topic.
"""
from __future__ import annotations

import re
from collections import Counter

# Words and numbers; an apostrophe inside a word keeps a contraction whole ("i'll", "here's").
_TOKEN = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)
_BREAK = re.compile(r"[.!?;:,()\[\]{}\"“”<>|/\\\n]+")

STOP_WORDS = frozenset("""
a about above across actually after again against ago ahead all almost along already also
although always am among an and another any anyone anything anyway anywhere are around as ask
asked asking at away back based be became because become been before being below best better
between both but by came can cannot could did do does doing done down during each either else
enough etc even ever every everything exactly example few fine first for from further get gets
getting give given go goes going gone good got great had has have having he her here hers him his
how however i if in include including instead into is it its itself just keep keeps kind know last
least less let lets like likely little look lot lots made main make makes making many may maybe me
might more most much must my need needs never new next nice no none nor not nothing now of off
often ok okay on once one only onto or other others otherwise our ours out over own part per
perhaps please point possible pretty probably put quite rather really right said same say says
see seem seems set several shall she should show since so some something sometimes soon start
started still such sure take takes tell than thank thanks that the their theirs them themselves
then there therefore these they thing things think this those though through thus to today
together too took toward try trying two under until up upon us use used useful uses using usually
various very via want wanted wants was way ways we well went were what whatever when where whether
which while who whole whom whose why will with within without work works would yeah yes yet you
your yours yourself
i'd i'll i'm i've you'd you'll you're you've he's she's it's it'll we'd we'll we're we've they'd
they'll they're they've that's there's here's what's let's who's isn't aren't wasn't weren't don't
doesn't didn't can't couldn't won't wouldn't shouldn't haven't hasn't hadn't
user assistant conversation conversations discussed discuss summary episode episodes mentioned
talked wanted decided help helps helped specific specifically necessary provide provides provided
create created creating find found following follow various different certain overall able
consider considering ensure important approach step steps option options question questions answer
time times minute minutes hour hours day days week weeks month months year years morning
evening tonight tomorrow yesterday dollar dollars euro euros percent january february march
april june july august september october november december monday tuesday wednesday thursday
friday saturday sunday three four five six seven eight nine ten hundred thousand add adds
added change changes changed
de het een en van ik je dat die niet zijn voor met op te aan er maar om ook als dan bij nog naar
uit wat kan wel zo hoe mijn wordt worden deze door heb hebben heeft meer geen moet onze jouw
dit hier wij jij hun zich waren kunnen zal zou omdat alleen tot over onder veel goed nu jullie
ons hem haar wie waar wanneer welke elk iets niets alles andere zoals dus toch mee zelf
gaat gaan helpen tijd doen maken hebt bent kunt wil willen
der die das und ist nicht ein eine ich du mit auf für sie es zu den dem im sich auch wie wir
le la les un une des du et est pas que qui pour dans sur avec ce il elle je nous vous au
el los las una por con para como pero del lo se su al
""".split())

_MIN_CHARS = 3


def _content(token: str) -> bool:
    token = token.replace("’", "'")
    return (len(token) >= _MIN_CHARS and token not in STOP_WORDS and not token[0].isdigit()
            and "'" not in token.strip("'"))  # any contraction left is filler


def runs(text: str) -> list[list[str]]:
    """Maximal runs of consecutive content words (lower-cased) between stop words and punctuation."""
    out: list[list[str]] = []
    for chunk in _BREAK.split(text.lower()):
        run: list[str] = []
        for token in _TOKEN.findall(chunk):
            token = token.strip("'’-")
            if token and _content(token):
                run.append(token)
            elif run:
                out.append(run)
                run = []
        if run:
            out.append(run)
    return out


def phrases(text: str, longest: int = 3) -> Counter:
    """Every candidate phrase of `text` (1..longest content words in a row) with its count."""
    found: Counter = Counter()
    for run in runs(text):
        for n in range(1, longest + 1):
            for i in range(len(run) - n + 1):
                found[" ".join(run[i:i + n])] += 1
    return found


def content_words(text: str) -> set[str]:
    return {w for run in runs(text) for w in run}
