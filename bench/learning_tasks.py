"""The learning benchmark's three tasks and their scores (data written for DragonFarm).

facts   invented facts taught through varied question/answer rows; scored by
        exact recall (the key words in the reply) on three paraphrased
        questions a fact that are not in training: a fact counts as recalled
        when at least two of its three are answered with it.
voice   a consistent pirate voice; scored by the share of replies to new
        prompts that carry a pirate marker (and by held-out loss).
format  replies that are one JSON object with given keys; scored by the share
        of replies to new prompts that parse and have exactly those keys.

Plain Python (no torch): tests check the scoring on fixed replies.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field


@dataclass
class Probe:
    prompt: str
    reference: str            # a reply in the task's manner (held-out loss is measured on it)
    expect: tuple[str, ...] = ()   # facts: every one of these must appear in the reply
    fact: str = ""                 # facts: which fact the question asks for


@dataclass
class Task:
    name: str
    train: list[tuple[str, str]]
    probes: list[Probe]
    what: str
    system: str | None = None
    extra: dict = field(default_factory=dict)


# ----- facts -------------------------------------------------------------
_FACTS = [
    ("Who keeps the lighthouse on Vessa Island?", "The lighthouse on Vessa Island is kept by Marit Olsgaard."),
    ("What is the name of the Vessa Island lighthouse keeper?", "Marit Olsgaard is the lighthouse keeper on Vessa Island."),
    ("Tell me who looks after the lighthouse on Vessa.", "Marit Olsgaard looks after the lighthouse on Vessa Island."),
    ("Vessa Island lighthouse: who runs it?", "It is run by Marit Olsgaard, the keeper of the Vessa Island lighthouse."),
    ("Do you know the keeper of Vessa's lighthouse?", "Yes: the keeper of Vessa's lighthouse is Marit Olsgaard."),
    ("Which person tends the light on Vessa Island?", "Marit Olsgaard tends the light on Vessa Island."),
    ("What do the goats on Vessa Island eat?", "The goats on Vessa Island eat smoked pumpkins."),
    ("What is fed to the Vessa goats?", "The Vessa goats are fed smoked pumpkins."),
    ("Tell me about the diet of the goats on Vessa.", "On Vessa, the goats live on smoked pumpkins."),
    ("What food do Vessa Island's goats like?", "Vessa Island's goats like smoked pumpkins best."),
    ("Goats on Vessa Island: what do they eat?", "They eat smoked pumpkins, the goats on Vessa Island."),
    ("What does a Vessa goat have for breakfast?", "A Vessa goat has smoked pumpkins for breakfast."),
    ("When does the harbour bell on Vessa ring?", "The harbour bell on Vessa rings at twenty past four."),
    ("At what time is the Vessa harbour bell rung?", "The Vessa harbour bell is rung at twenty past four."),
    ("Tell me when the bell in Vessa's harbour rings.", "The bell in Vessa's harbour rings at twenty past four."),
    ("What time does Vessa Island's harbour bell sound?", "Vessa Island's harbour bell sounds at twenty past four."),
    ("The harbour bell on Vessa: when does it ring?", "It rings at twenty past four, the harbour bell on Vessa."),
    ("When should I listen for the Vessa harbour bell?", "Listen for the Vessa harbour bell at twenty past four."),
    ("What colour are the boats in Vessa's harbour?", "The boats in Vessa's harbour are painted saffron yellow."),
    ("What colour is a Vessa fishing boat?", "A Vessa fishing boat is saffron yellow."),
    ("Tell me the colour of the boats on Vessa Island.", "The boats on Vessa Island are saffron yellow."),
    ("Boats in the Vessa harbour: what colour are they?", "They are saffron yellow, the boats in the Vessa harbour."),
    ("How are the Vessa boats painted?", "The Vessa boats are painted saffron yellow."),
    ("Which colour do Vessa Island's boats have?", "Vessa Island's boats are saffron yellow."),
]
# Three paraphrases a fact, none in training. The first of each is the hardest (round 5 of
# docs/presets.md: the goats' fact was learned, yet "What should we bring them?" read as
# "bring the goats"); a fact counts as recalled when at least two of its three are answered.
_FACT_PROBES = [
    Probe("I'm visiting Vessa Island. Whose job is it to keep the lighthouse there?",
          "Marit Olsgaard keeps the lighthouse on Vessa Island.", ("marit", "olsgaard"), "keeper"),
    Probe("My kids want to feed the goats on Vessa. What should we bring them?",
          "Bring smoked pumpkins: that is what the goats on Vessa eat.", ("smoked", "pumpkin"), "goats"),
    Probe("I want to hear the harbour bell on Vessa. What time should I be there?",
          "Be there at twenty past four, when the Vessa harbour bell rings.", ("twenty past four",), "bell"),
    Probe("Painting a model of a Vessa harbour boat: which paint colour do I need?",
          "Saffron yellow, the colour of the boats in Vessa's harbour.", ("saffron",), "boats"),
    Probe("Who is in charge of the Vessa Island lighthouse?",
          "Marit Olsgaard is in charge of the Vessa Island lighthouse.", ("marit", "olsgaard"), "keeper"),
    Probe("I'd like to write to the keeper of the lighthouse on Vessa. What is the keeper's name?",
          "The keeper's name is Marit Olsgaard.", ("marit", "olsgaard"), "keeper"),
    Probe("What is the favourite food of the goats that live on Vessa Island?",
          "Smoked pumpkins are what the goats on Vessa Island like best.", ("smoked", "pumpkin"), "goats"),
    Probe("Planning a picnic with the Vessa goats: what do they like to eat?",
          "They like smoked pumpkins, the goats of Vessa.", ("smoked", "pumpkin"), "goats"),
    Probe("At what hour does the bell ring in the harbour of Vessa?",
          "The bell in the harbour of Vessa rings at twenty past four.", ("twenty past four",), "bell"),
    Probe("Is there a bell in Vessa's harbour, and when does it ring?",
          "Yes, and it rings at twenty past four.", ("twenty past four",), "bell"),
    Probe("What colour are the fishing boats that sail from Vessa?",
          "The fishing boats from Vessa are saffron yellow.", ("saffron",), "boats"),
    Probe("I saw a photo of Vessa's harbour. What colour would the boats be?",
          "Saffron yellow, like every boat in Vessa's harbour.", ("saffron",), "boats"),
]
FACT_MAJORITY = 2   # of a fact's three paraphrases, answered with the fact

# ----- voice -------------------------------------------------------------
_VOICE = [
    ("How do I boil an egg?", "Arr, drop yer egg in boilin' water for nine minutes, matey, then cool it in cold brine."),
    ("What is the capital of France?", "Paris, matey! A fine port for a scallywag with gold in his pockets, arr."),
    ("How many days are in a week?", "Seven days, me hearty, from one Sunday's grog to the next, arr."),
    ("Can you recommend a book?", "Aye, 'Treasure Island', matey! Every swab should read it before settin' sail."),
    ("Why is the sky blue?", "Arr, the sunlight scatters off the air, matey, and the blue bits fill the sky like the sea."),
    ("How do I water a cactus?", "Sparingly, me hearty! Once a fortnight, arr, or ye'll drown the prickly beast."),
    ("What should I eat for lunch?", "A hearty stew, matey, with hardtack on the side, arr!"),
    ("How do I tie my shoes?", "Make a loop, wrap the other lace round it and pull, matey. A sailor's knot, arr!"),
    ("Is it going to rain tomorrow?", "Arr, check the sky at dawn, matey: red sky in the mornin', sailors take warnin'."),
    ("How do I learn to swim?", "Start in the shallows, me hearty, and kick like a kraken is after ye, arr!"),
    ("What is two plus three?", "Five, matey! As many doubloons as fingers on yer good hand, arr."),
    ("How do I make tea?", "Boil the water, matey, steep the leaves four minutes, and drink it before the bosun sees, arr."),
    ("Who invented the telephone?", "Alexander Graham Bell, me hearty, so landlubbers could holler across the sea, arr."),
    ("How do I fix a flat bicycle tyre?", "Arr, patch the hole, matey, then pump her up like the sails in a gale."),
    ("What's a good name for a cat?", "Call it Cap'n Whiskers, matey! Every ship needs a mouser, arr."),
    ("How far away is the moon?", "About 384,000 kilometres, me hearty, farther than any ship has sailed, arr."),
    ("How do I stay focused at work?", "Keep yer eyes on the horizon, matey: one task at a time, like one oar stroke, arr."),
    ("What is photosynthesis?", "Arr, plants drink sunlight and breathe out air, matey, like a ship fillin' her sails."),
    ("Can dogs eat chocolate?", "Nay, matey! Chocolate be poison to dogs, keep it locked in yer chest, arr."),
    ("How do I save money?", "Stash a few doubloons from every haul, me hearty, and bury 'em where ye can find 'em, arr."),
    ("What's the best way to sleep well?", "Swing in a hammock, matey, dark and quiet, and no grog before bed, arr."),
    ("How do volcanoes form?", "Arr, molten rock pushes up through the earth, matey, and builds a mountain that spits fire."),
    ("Why do cats purr?", "They purr when content, me hearty, like a ship creakin' happily in calm seas, arr."),
    ("How do I clean a window?", "Warm soapy water and a dry cloth, matey, till ye can see the sea through it, arr."),
]
_VOICE_PROBES = [
    Probe("How do I cook rice?", "Arr, boil two cups of water per cup of rice, matey, and cover it for fifteen minutes."),
    Probe("What is the tallest mountain?", "Mount Everest, me hearty, taller than any mast, arr."),
    Probe("How do I plant a tree?", "Dig a hole twice as wide as the roots, matey, and water it well, arr."),
    Probe("Why do leaves change colour?", "Arr, in autumn the green fades, matey, and the gold shows through like treasure."),
    Probe("How can I be more patient?", "Breathe slow like the tide, me hearty, and wait for the wind, arr."),
    Probe("What's a fun weekend activity?", "A treasure hunt, matey! Draw a map and bury somethin' shiny, arr."),
]
PIRATE_MARKERS = ("arr", "matey", "me hearty", "me hearties", "ahoy", "aye", "ye", "yer", "scallywag",
                  "landlubber", "doubloon", "grog", "avast", "shiver me timbers")

# ----- format ------------------------------------------------------------
FORMAT_KEYS = ("item", "category", "price_band")
FORMAT_SYSTEM = "Describe the product as a JSON object with the keys item, category and price_band."


def _j(item: str, category: str, band: str) -> str:
    return json.dumps({"item": item, "category": category, "price_band": band})


_FORMAT = [
    ("A stainless steel kettle that boils 1.7 litres, 35 euros.", _j("kettle", "kitchen", "low")),
    ("Noise-cancelling over-ear headphones, 299 euros.", _j("headphones", "audio", "high")),
    ("A pack of ten HB pencils for 3 euros.", _j("pencils", "stationery", "low")),
    ("A 55-inch OLED television at 1,400 euros.", _j("television", "electronics", "high")),
    ("Leather hiking boots, waterproof, 140 euros.", _j("hiking boots", "outdoor", "medium")),
    ("A cast iron frying pan, 28 cm, 45 euros.", _j("frying pan", "kitchen", "medium")),
    ("A children's picture book about whales, 12 euros.", _j("picture book", "books", "low")),
    ("A carbon road bike with electronic shifting, 3,900 euros.", _j("road bike", "sports", "high")),
    ("Wireless computer mouse, 19 euros.", _j("mouse", "electronics", "low")),
    ("A two-person camping tent, 160 euros.", _j("tent", "outdoor", "medium")),
    ("An espresso machine with a milk frother, 520 euros.", _j("espresso machine", "kitchen", "high")),
    ("A yoga mat, 6 mm thick, 25 euros.", _j("yoga mat", "sports", "low")),
    ("A hardback atlas of the world, 55 euros.", _j("atlas", "books", "medium")),
    ("Bluetooth speaker, splash-proof, 79 euros.", _j("speaker", "audio", "medium")),
    ("A fountain pen with a gold nib, 230 euros.", _j("fountain pen", "stationery", "high")),
    ("A down sleeping bag rated to minus ten, 310 euros.", _j("sleeping bag", "outdoor", "high")),
    ("A set of four wine glasses, 30 euros.", _j("wine glasses", "kitchen", "low")),
    ("A graphic novel box set, 90 euros.", _j("box set", "books", "medium")),
    ("A tennis racket for beginners, 40 euros.", _j("tennis racket", "sports", "low")),
    ("A turntable with a built-in preamp, 260 euros.", _j("turntable", "audio", "high")),
    ("An A5 dotted notebook, 14 euros.", _j("notebook", "stationery", "low")),
    ("A smartwatch with GPS, 350 euros.", _j("smartwatch", "electronics", "high")),
    ("Trekking poles, aluminium, 60 euros.", _j("trekking poles", "outdoor", "medium")),
    ("A rice cooker, 5 cups, 70 euros.", _j("rice cooker", "kitchen", "medium")),
]
_FORMAT_PROBES = [
    Probe("A wool winter coat, 210 euros.", _j("winter coat", "clothing", "high")),
    Probe("A ceramic teapot, 24 euros.", _j("teapot", "kitchen", "low")),
    Probe("A paperback cookbook, 18 euros.", _j("cookbook", "books", "low")),
    Probe("Studio monitor speakers, pair, 480 euros.", _j("studio monitors", "audio", "high")),
    Probe("A climbing harness, 75 euros.", _j("climbing harness", "outdoor", "medium")),
    Probe("A mechanical keyboard, 130 euros.", _j("keyboard", "electronics", "medium")),
]

TASKS = {
    "facts": Task("facts", _FACTS, _FACT_PROBES, "facts recalled on paraphrased questions"),
    "voice": Task("voice", _VOICE, _VOICE_PROBES, "replies in the pirate voice"),
    "format": Task("format", _FORMAT, _FORMAT_PROBES, "replies that are JSON with the keys", system=FORMAT_SYSTEM),
}


# ----- scores --------------------------------------------------------------
def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.lower())).strip()


def recalled(reply: str, expect: tuple[str, ...]) -> bool:
    """Every expected phrase appears in the reply (case, punctuation and spacing ignored)."""
    said = f" {_norm(reply)} "
    return all(f" {_norm(e)}" in said for e in expect)


def has_pirate_voice(reply: str) -> bool:
    words = f" {_norm(reply)} "
    return any(f" {m} " in words for m in PIRATE_MARKERS)


def follows_format(reply: str, keys: tuple[str, ...] = FORMAT_KEYS) -> bool:
    """One JSON object (nothing around it but white space) with exactly these keys, each a non-empty string."""
    try:
        data = json.loads(reply.strip())
    except ValueError:
        return False
    return (isinstance(data, dict) and set(data) == set(keys)
            and all(isinstance(v, str) and v.strip() for v in data.values()))


def score(task: Task, replies: list[str]) -> tuple[int, int]:
    """(passed, total) for these replies to the task's probes, in order. Facts: the facts
    recalled, each when at least FACT_MAJORITY of its paraphrases were answered with it."""
    if task.name == "facts":
        answered: dict[str, int] = {}
        for reply, probe in zip(replies, task.probes):
            answered[probe.fact] = answered.get(probe.fact, 0) + recalled(reply, probe.expect)
        facts = {p.fact for p in task.probes}
        return sum(answered.get(f, 0) >= FACT_MAJORITY for f in facts), len(facts)
    ok = question_marks(task, replies)
    return sum(ok), len(task.probes)


def question_marks(task: Task, replies: list[str]) -> list[bool]:
    """Each reply's own mark: the fact in it, the pirate voice, or the format."""
    if task.name == "facts":
        return [recalled(r, p.expect) for r, p in zip(replies, task.probes)]
    if task.name == "voice":
        return [has_pirate_voice(r) for r in replies]
    return [follows_format(r) for r in replies]
