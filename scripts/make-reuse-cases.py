#!/usr/bin/env python3
"""Writes the case sets of `clmcache eval reuse` (docs/QUALITY.md).

Simple children's stories, the text the TinyStories models know, built from
templates with a seeded random generator, so the same seed always gives the
same files:

  edited_preamble.json  cache S' + H, ask S + H + Q: S and S' differ only by
                        an edit near the start (a name, a word, a sentence)
  inserted_text.json    cache P + H, ask P + X + H + Q: X is a sentence or
                        two inserted between the opening and the story
  reordered_chunks.json cache P + C2 + C1 (+ C3 ...), ask the chunks in
                        another order: P + C1 + C2 + Q (retrieved documents
                        arriving in a different order)
  chunks_alone.json     cache each chunk computed on its own, without BOS,
                        ask P + C1 + C2 + Q (the RAG case: documents cached
                        separately and concatenated)

H is a story of a few hundred tokens, Q a short cue to continue from. About
one case in five also caches an unrelated story first, as a busy cache would.

usage: scripts/make-reuse-cases.py [--seed N] [--cases N] [--out DIR]
"""

import argparse
import json
import os
import random

GIRLS = ["Lily", "Mia", "Sue", "Anna", "Lucy", "Amy", "Kate", "Emma", "Jane", "Sara"]
BOYS = ["Tom", "Ben", "Max", "Tim", "Sam", "Jack", "Leo", "Bob", "Joe", "Dan"]
PETS = ["dog", "cat", "bird", "bunny", "frog", "duck", "fish", "puppy"]
PET_NAMES = ["Spot", "Fluffy", "Buddy", "Coco", "Daisy", "Rex", "Pip", "Tiny"]
TOYS = ["ball", "kite", "doll", "toy car", "teddy bear", "box", "drum", "boat"]
COLORS = ["red", "blue", "green", "yellow", "pink", "big", "shiny", "little"]
PLACES = ["park", "garden", "beach", "forest", "farm", "lake", "school", "shop"]
FEELINGS = ["happy", "sad", "scared", "excited", "tired", "angry", "surprised"]
FOODS = ["cake", "apple", "cookie", "soup", "ice cream", "bread", "pie"]
WEATHER = ["sunny", "rainy", "windy", "cold", "warm", "bright"]
DAYS = ["Monday", "Tuesday", "Friday", "Saturday", "Sunday"]
HOMES = ["a small house", "a big house", "a little red house", "a house near the park", "a house by the lake"]
HOBBIES = ["play with her toys", "sing songs", "draw pictures", "run and jump", "read books", "dance", "help her mom"]


class Hero:
    def __init__(self, rng, girl=None):
        self.girl = rng.random() < 0.5 if girl is None else girl
        self.name = rng.choice(GIRLS if self.girl else BOYS)
        self.she = "she" if self.girl else "he"
        self.her = "her" if self.girl else "his"
        self.kind = "girl" if self.girl else "boy"
        self.friend = rng.choice(BOYS if self.girl else GIRLS)
        self.pet = rng.choice(PETS)
        self.pet_name = rng.choice(PET_NAMES)

    def hobby(self, rng):
        h = rng.choice(HOBBIES)
        return h if self.girl else h.replace("her ", "his ")


def cap(s):
    return s[0].upper() + s[1:]


def opening(rng, hero, variant):
    """A one to three sentence preamble. `variant` fixes the wording choices so
    that an edited copy can change exactly one of them."""
    first = {
        "once": "Once upon a time, there was a little {kind} named {name}.",
        "day": "One day, there was a little {kind} named {name}.",
        "long": "A long time ago, there was a little {kind} named {name}.",
    }[variant["start"]]
    s = first.format(kind=hero.kind, name=hero.name)
    if variant["n"] >= 2:
        s += " " + cap(hero.she) + " lived in " + variant["home"] + " with " + hero.her + " mom and dad."
    if variant["n"] >= 3:
        s += " " + cap(hero.she) + " liked to " + variant["hobby"] + " every day."
    return s


EVENTS = [
    lambda r, h: "One day, {n} went to the {p} with {her} mom. It was a {w} day.".format(
        n=h.name, p=r.choice(PLACES), her=h.her, w=r.choice(WEATHER)),
    lambda r, h: "{N} saw a {c} {t} on the ground. {S} wanted to play with it.".format(
        N=h.name, c=r.choice(COLORS), t=r.choice(TOYS), S=cap(h.she)),
    lambda r, h: "{N} had a {pet} named {pn}. {pn} liked to run and play.".format(
        N=h.name, pet=h.pet, pn=h.pet_name),
    lambda r, h: "\"Look, Mom!\" {n} said. \"Can I play with the {t}?\" Mom smiled and said, \"Yes, you can.\"".format(
        n=h.name, t=r.choice(TOYS)),
    lambda r, h: "{N} and {f} played together all day. They had a lot of fun.".format(N=h.name, f=h.friend),
    lambda r, h: "{N} felt {f}. {S} did not know what to do.".format(N=h.name, f=r.choice(FEELINGS), S=cap(h.she)),
    lambda r, h: "Mom made a big {food} for {n}. {N} ate it all and said, \"Thank you, Mom!\"".format(
        food=r.choice(FOODS), n=h.name, N=h.name),
    lambda r, h: (lambda a: "Then {n} saw a little {a}. The {a} was sad because it was lost. {n} said, "
                  "\"Do not be sad. I will help you.\" The {a} was very happy.".format(n=h.name, a=a))(r.choice(PETS)),
    lambda r, h: "{F} came to play with {n}. \"Let's go to the {p}!\" {f} said.".format(
        F=h.friend, n=h.name, f=h.friend, p=r.choice(PLACES)),
    lambda r, h: "They ran to the {p} and played with the {t}. The sun was warm and bright.".format(
        p=r.choice(PLACES), t=r.choice(TOYS)),
    lambda r, h: "Suddenly, it started to rain. {N} and {her} {pet} ran home fast.".format(
        N=h.name, her=h.her, pet=h.pet),
    lambda r, h: "{N} wanted to climb the big tree, but it was too high. {S} was a little scared.".format(
        N=h.name, S=cap(h.she)),
    lambda r, h: "Mom said, \"Be careful, {n}. The {t} can break.\" {N} said, \"I will be careful.\"".format(
        n=h.name, N=h.name, t=r.choice(TOYS)),
    lambda r, h: "At night, {n} went to bed. {S} hugged {her} {t} and went to sleep.".format(
        n=h.name, S=cap(h.she), her=h.her, t=r.choice(TOYS)),
    lambda r, h: "{N} learned that it is good to share. {S} gave {f} a {c} {t}.".format(
        N=h.name, S=cap(h.she), f=h.friend, c=r.choice(COLORS), t=r.choice(TOYS)),
    lambda r, h: "The next day, {n} found a {c} flower in the garden. {S} gave it to {her} mom.".format(
        n=h.name, c=r.choice(COLORS), S=cap(h.she), her=h.her),
    lambda r, h: "{F} was sad because {f_his} {t} was broken. {N} helped {f_him} fix it.".format(
        F=h.friend, f_his="his" if h.girl else "her", t=r.choice(TOYS), N=h.name,
        f_him="him" if h.girl else "her"),
]

CUES = [
    lambda h: "The next day, {n}".format(n=h.name),
    lambda h: "Then {n} said, \"".format(n=h.name),
    lambda h: "After that, {n} and {f}".format(n=h.name, f=h.friend),
    lambda h: "One day, {n} went to the".format(n=h.name),
    lambda h: "{N} looked at the".format(N=h.name),
    lambda h: "Mom said, \"",
    lambda h: "Later, {n} saw".format(n=h.name),
]


def story(rng, hero, target_chars):
    """Paragraphs of events about `hero`, about target_chars long."""
    paragraphs, para, chars = [], [], 0
    deck = []  # every event once before any repeats
    while chars < target_chars:
        if not deck:
            deck = list(range(len(EVENTS)))
            rng.shuffle(deck)
        sentence = EVENTS[deck.pop()](rng, hero)
        para.append(sentence)
        chars += len(sentence) + 1
        if len(para) >= rng.randint(2, 4):
            paragraphs.append(" ".join(para))
            para = []
    if para:
        paragraphs.append(" ".join(para))
    return "\n".join(paragraphs)


def history_chars(rng, i, n):
    # Spread the lengths over the set: about 150 to 750 tokens at ~2.5
    # characters a token, from short to long, then shuffled by the case order.
    lo, hi = 380, 1900
    return int(lo + (hi - lo) * ((i * 7919) % n) / max(n - 1, 1)) + rng.randint(-40, 40)


def distractor(rng):
    h = Hero(rng)
    return opening(rng, h, {"start": "once", "n": 2, "home": rng.choice(HOMES), "hobby": h.hobby(rng)}) + " " + \
        story(rng, h, rng.randint(300, 700))


def edited_preamble_case(rng, i, n):
    hero = Hero(rng)
    variant = {"start": rng.choice(["once", "day", "long"]), "n": rng.randint(1, 3),
               "home": rng.choice(HOMES), "hobby": hero.hobby(rng)}
    edit = rng.choice(["name", "start", "kind", "home", "hobby", "sentence"])
    if edit in ("home", "hobby", "sentence"):
        variant["n"] = max(variant["n"], 2 if edit != "hobby" else 3)
    old = dict(variant)
    old_hero = Hero.__new__(Hero)
    old_hero.__dict__.update(hero.__dict__)
    if edit == "name":
        old_hero.name = rng.choice([x for x in (GIRLS if hero.girl else BOYS) if x != hero.name])
        what = "name {} -> {}".format(old_hero.name, hero.name)
    elif edit == "start":
        old["start"] = rng.choice([s for s in ("once", "day", "long") if s != variant["start"]])
        what = "opening words ({} -> {})".format(old["start"], variant["start"])
    elif edit == "kind":
        old_hero.kind = "child"
        what = "little child -> little {}".format(hero.kind)
    elif edit == "home":
        old["home"] = rng.choice([x for x in HOMES if x != variant["home"]])
        what = "home '{}' -> '{}'".format(old["home"], variant["home"])
    elif edit == "hobby":
        old["hobby"] = rng.choice([x for x in HOBBIES if x != variant["hobby"]])
        what = "hobby '{}' -> '{}'".format(old["hobby"], variant["hobby"])
    else:
        # The second sentence replaced by another one.
        what = "second sentence replaced"
    s_new = opening(rng, hero, variant)
    s_old = opening(rng, old_hero, old)
    if edit == "sentence":
        parts = s_old.split(". ")
        parts[1] = "{} had a {} named {}".format(cap(hero.she), hero.pet, hero.pet_name)
        s_old = ". ".join(parts)
        if not s_old.endswith("."):
            s_old += "."
    h = story(rng, hero, history_chars(rng, i, n))
    q = rng.choice(CUES)(hero)
    warm = [s_old + " " + h]
    if rng.random() < 0.2:
        warm.insert(0, distractor(rng))
    return {"id": "ep-{:03d}".format(i), "note": "edit: " + what,
            "warm": warm, "ask": s_new + " " + h + "\n" + q}


INSERTS = [
    lambda r, h: "{S} had a little {pet} named {pn}.".format(S=cap(h.she), pet=h.pet, pn=h.pet_name),
    lambda r, h: "It was a {w} day, and the sky was blue.".format(w=r.choice(WEATHER)),
    lambda r, h: "{Her} mom gave {her} a {c} hat. {S} liked it very much.".format(
        Her=cap(h.her), her="her" if h.girl else "him", c=r.choice(COLORS), S=cap(h.she)),
    lambda r, h: "{N} was {a} years old and {S} had a best friend named {f}.".format(
        N=h.name, a=r.choice(["three", "four", "five", "six"]), S=h.she, f=h.friend),
    lambda r, h: "Every morning, {n} ate a {food} with {her} dad. Then {s} went outside to play.".format(
        n=h.name, food=r.choice(FOODS), her=h.her, s=h.she),
    lambda r, h: "On {d}, {n} and {her} family went to the {p}.".format(
        d=r.choice(DAYS), n=h.name, her=h.her, p=r.choice(PLACES)),
    lambda r, h: "{N} did not like the dark. {S} always slept with a small light on.".format(
        N=h.name, S=cap(h.she)),
    lambda r, h: "{N} loved the color {c}. {S} had a {c} {t} and a {c} bag.".format(
        N=h.name, c=r.choice(["red", "blue", "green", "yellow", "pink"]), S=cap(h.she), t=r.choice(TOYS)),
]


def inserted_text_case(rng, i, n):
    hero = Hero(rng)
    variant = {"start": rng.choice(["once", "day", "long"]), "n": rng.randint(1, 3),
               "home": rng.choice(HOMES), "hobby": hero.hobby(rng)}
    p = opening(rng, hero, variant)
    picks = rng.sample(range(len(INSERTS)), rng.randint(1, 2))
    x = " ".join(INSERTS[k](rng, hero) for k in picks)
    h = story(rng, hero, history_chars(rng, i, n))
    q = rng.choice(CUES)(hero)
    warm = [p + " " + h]
    if rng.random() < 0.2:
        warm.insert(0, distractor(rng))
    return {"id": "it-{:03d}".format(i), "note": "inserted {} sentence(s)".format(len(picks)),
            "warm": warm, "ask": p + " " + x + " " + h + "\n" + q}


PREAMBLES = [
    "Mom read {k} stories to the children before bed.",
    "Here are {k} short stories about some children.",
    "The teacher told the class {k} stories that day.",
    "These are {k} stories from the big book.",
]

NUMBERS = {2: "two", 3: "three"}


def chunks_of(rng, k):
    """k short stories about different heroes, about 110 tokens each."""
    heroes, names = [], set()
    while len(heroes) < k:
        h = Hero(rng)
        if h.name in names:
            continue
        names.add(h.name)
        heroes.append(h)
    texts = []
    for h in heroes:
        variant = {"start": rng.choice(["once", "day", "long"]), "n": rng.randint(1, 2),
                   "home": rng.choice(HOMES), "hobby": h.hobby(rng)}
        texts.append(opening(rng, h, variant) + " " + story(rng, h, rng.randint(180, 260)).replace("\n", " "))
    return heroes, texts


def chunk_case(rng, i, alone):
    k = rng.choice([2, 3])
    heroes, chunks = chunks_of(rng, k)
    p = rng.choice(PREAMBLES).format(k=NUMBERS[k])
    q = rng.choice(CUES)(heroes[rng.randrange(k)])
    ask = p + "\n" + "\n".join(chunks) + "\n" + q
    if alone:
        warm = list(chunks)
        rng.shuffle(warm)
        return {"id": "ca-{:03d}".format(i), "note": "{} chunks cached one by one".format(k),
                "warm_bos": False, "warm": warm, "ask": ask}
    order = list(range(k))
    while order == list(range(k)):
        rng.shuffle(order)
    warm = [p + "\n" + "\n".join(chunks[j] for j in order)]
    return {"id": "rc-{:03d}".format(i), "note": "cached order " + "".join(str(j + 1) for j in order),
            "warm": warm, "ask": ask}


def write(path, name, description, seed, cases):
    doc = {"name": name, "description": description,
           "generator": "scripts/make-reuse-cases.py --seed {}".format(seed), "cases": cases}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=36, help="cases per set")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "eval", "cases"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    ep = [edited_preamble_case(rng, i, a.cases) for i in range(a.cases)]
    write(os.path.join(a.out, "edited_preamble.json"), "edited_preamble",
          "cache S'+H, ask S+H+Q: the preamble edited near its start (a name, a word, a sentence)", a.seed, ep)
    rng = random.Random(a.seed + 1)
    it = [inserted_text_case(rng, i, a.cases) for i in range(a.cases)]
    write(os.path.join(a.out, "inserted_text.json"), "inserted_text",
          "cache P+H, ask P+X+H+Q: one or two sentences inserted after the opening", a.seed, it)
    rng = random.Random(a.seed + 2)
    rc = [chunk_case(rng, i, False) for i in range(a.cases)]
    write(os.path.join(a.out, "reordered_chunks.json"), "reordered_chunks",
          "cache P+C2+C1 (two or three short stories in another order), ask P+C1+C2+Q", a.seed, rc)
    rng = random.Random(a.seed + 3)
    ca = [chunk_case(rng, i, True) for i in range(a.cases)]
    write(os.path.join(a.out, "chunks_alone.json"), "chunks_alone",
          "cache each short story on its own without BOS, ask P+C1+C2(+C3)+Q", a.seed, ca)


if __name__ == "__main__":
    main()
