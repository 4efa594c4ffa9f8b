#!/usr/bin/env python3
"""Writes the case set of `clmcache eval evict` (docs/QUALITY.md).

Long children's stories, the text the TinyStories models know, built with the
templates of make-reuse-cases.py and a seeded random generator, so the same
seed always gives the same file. Each case is one text of about 2,600
characters (over 500 tokens of stories260K): the evaluation takes the first
tokens as the prompt, forgets part of them, and teacher-forces the next ones.
About one case in three starts with an unrelated short story, so the prompt
holds context the continuation no longer needs.

usage: scripts/make-evict-cases.py [--seed N] [--cases N] [--out FILE]
"""

import argparse
import importlib.util
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("reuse_cases", os.path.join(HERE, "make-reuse-cases.py"))
stories = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stories)


def case(rng, i):
    hero = stories.Hero(rng)
    variant = {"start": rng.choice(["once", "day", "long"]), "n": 3, "home": rng.choice(stories.HOMES),
               "hobby": hero.hobby(rng)}
    parts, note = [], "one story"
    if i % 3 == 2:
        parts.append(stories.distractor(rng))
        note = "an unrelated story, then the story"
    parts.append(stories.opening(rng, hero, variant) + "\n" + stories.story(rng, hero, 2600))
    return {"id": "ev-{:03d}".format(i), "note": note, "text": "\n".join(parts)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=120)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "eval", "cases", "long_stories.json"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    doc = {"name": "long_stories",
           "description": "long stories: prompt = the first tokens, continuation = the next ones",
           "generator": "scripts/make-evict-cases.py --seed {} --cases {}".format(a.seed, a.cases),
           "cases": [case(rng, i) for i in range(a.cases)]}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
