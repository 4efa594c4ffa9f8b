#!/usr/bin/env python3
"""Writes the case set of `clmcache eval evict` (docs/QUALITY.md).

Long children's stories, the text the TinyStories models know, built with the
templates of make-reuse-cases.py and a seeded random generator, so the same
seed always gives the same file. Each case is one text of about 2,600
characters (over 500 tokens of stories260K): the evaluation takes the first
tokens as the prompt, forgets part of them, and teacher-forces the next ones.
About one case in three starts with an unrelated short story, so the prompt
holds context the continuation no longer needs.

The second set, long_recall.json (--set long_recall), is made for the
measurement of issue 12 (a 500-token prompt, the next 12 tokens
teacher-forced, 80 cases) on a model whose context is 512 tokens: each story
introduces a fact near its start (the name of a pet or a friend, or a
number), never mentions it again in about 450 tokens of other events, and
asks for it in the continuation. So the continuation depends on early
context, and a policy that forgets the block holding the fact pays for it.
Placing the question needs token counts: the script tokenizes like the
engine's SentencePiece tokenizer, from the llama2.c vocabulary file of the
model (--tokenizer, e.g. ../shared/models/tok512.bin), and pads the story
until the answer begins a few tokens into the continuation.

usage: scripts/make-evict-cases.py [--seed N] [--cases N] [--out FILE]
       scripts/make-evict-cases.py --set long_recall --tokenizer tok512.bin [--seed N] [--cases N] [--out FILE]
"""

import argparse
import importlib.util
import json
import os
import random
import re
import struct

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


class Tokenizer:
    """SentencePiece-style encoding from a llama2.c vocabulary file: a space
    before the text, then greedy merges of the adjacent pair whose joined
    piece scores highest (ties: the leftmost), bytes for what no piece
    covers; BOS first. As src/model/spm_tokenizer.cpp does."""

    def __init__(self, path):
        data = open(path, "rb").read()
        at, self.score, self.cache = 4, {}, {}
        while at < len(data):
            score, n = struct.unpack_from("<fi", data, at)
            piece = data[at + 8:at + 8 + n].decode("utf-8", errors="replace")
            at += 8 + n
            special = piece in ("<unk>", "\n<s>\n", "\n</s>\n") or re.fullmatch(r"<0x[0-9A-F]{2}>", piece)
            if not special and piece not in self.score:
                self.score[piece] = score

    def count(self, text):
        # No piece holds a space but at its start, nor a newline: merges never
        # cross the start of a word, so words are encoded on their own.
        return 1 + sum(self._word(w) for w in re.findall(r" ?[^ \n]+|\n| ", " " + text))

    def _word(self, word):
        if word in self.cache:
            return self.cache[word]
        pieces = list(word)
        while True:
            best, at = None, -1
            for i in range(len(pieces) - 1):
                s = self.score.get(pieces[i] + pieces[i + 1])
                if s is not None and (best is None or s > best):
                    best, at = s, i
            if best is None:
                break
            pieces[at:at + 2] = [pieces[at] + pieces[at + 1]]
        n = sum(1 if p in self.score else len(p.encode("utf-8")) for p in pieces)
        self.cache[word] = n
        return n


NUMBER_WORDS = ["two", "three", "four", "five", "six", "seven", "eight", "nine"]


def fact(rng, hero):
    """A fact stated once near the start, and the question that asks for it:
    (statement, question up to the answer, answer, what)."""
    kind = rng.choice(["pet", "friend", "number", "digits"])
    if kind == "pet":
        return ("{S} had a {pet} named {pn}.".format(S=stories.cap(hero.she), pet=hero.pet, pn=hero.pet_name),
                "{N} looked for {her} {pet}. {N} called, \"Come here,".format(N=hero.name, her=hero.her, pet=hero.pet),
                " " + hero.pet_name, "the pet's name")
    if kind == "friend":
        return ("{Her} best friend was a {k} named {f}.".format(Her=stories.cap(hero.her),
                                                              k="boy" if hero.girl else "girl", f=hero.friend),
                "{N} wanted to play with {her} best friend. {Her} best friend was".format(
                    N=hero.name, her=hero.her, Her=stories.cap(hero.her)),
                " " + hero.friend, "the friend's name")
    if kind == "number":
        n = rng.choice(NUMBER_WORDS)
        return ("{S} had {n} {t}s in a big box.".format(S=stories.cap(hero.she), n=n, t=rng.choice(["ball", "doll", "kite", "boat"])),
                "{N} opened the big box and counted. There were".format(N=hero.name),
                " " + n, "a number word")
    n = str(rng.randint(10, 99))
    return ("The number on {her} door was {n}.".format(her=hero.her, n=n),
            "{N} walked home and looked at the door. The number on the door was".format(N=hero.name),
            " " + n, "a number in digits")


def filler_events(hero):
    """The story's events that never mention the pet's or the friend's name."""
    keep = []
    for e in stories.EVENTS:
        probe = e(random.Random(0), hero)
        if hero.pet_name not in probe and hero.friend not in probe:
            keep.append(e)
    return keep


def recall_case(rng, i, tok, prompt_tokens, answer_at):
    hero = stories.Hero(rng)
    while hero.pet_name == hero.name or hero.friend == hero.name:
        hero = stories.Hero(rng)
    variant = {"start": rng.choice(["once", "day", "long"]), "n": 2, "home": rng.choice(stories.HOMES),
               "hobby": hero.hobby(rng)}
    statement, question, answer, what = fact(rng, hero)
    head = stories.opening(rng, hero, variant) + " " + statement
    events = filler_events(hero)
    # Sentences until the question's answer would start past the wanted token.
    body, para = [], []
    deck = []
    while True:
        if not deck:
            deck = list(range(len(events)))
            rng.shuffle(deck)
        para.append(events[deck.pop()](rng, hero))
        text = head + "\n" + "\n".join(body + [" ".join(para)]) + "\n" + question
        if tok.count(text) >= prompt_tokens + answer_at:
            break
        if len(para) >= rng.randint(2, 4):
            body.append(" ".join(para))
            para = []
    # The last sentence overshot: drop it, then pad word by word with a
    # neutral sentence's words so the answer starts exactly at answer_at.
    para.pop()
    base = head + "\n" + "\n".join(body + ([" ".join(para)] if para else [])) + "\n"
    pad_words = "The sun was warm and bright and the sky was very blue and the birds sang in the big green trees all day long".split()
    pad = []
    while tok.count(base + " ".join(pad + ["."]) + ("\n" if pad else "") + question) < prompt_tokens + answer_at:
        pad.append(pad_words[len(pad) % len(pad_words)])
    padded = base + (" ".join(pad) + ".\n" if pad else "") + question
    n = tok.count(padded)
    if n != prompt_tokens + answer_at:
        return None
    text = padded + answer + ". " + stories.cap(hero.she) + " was very happy. The end."
    return {"id": "rc-{:03d}".format(i), "note": "recall " + what, "answer": answer,
            "answer_token": n, "text": text}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=120)
    ap.add_argument("--out", default=None, help="default: eval/cases/SET.json")
    ap.add_argument("--set", choices=["long_stories", "long_recall"], default="long_stories")
    ap.add_argument("--tokenizer", help="llama2.c vocabulary file of the model (long_recall)")
    ap.add_argument("--prompt-tokens", type=int, default=500, help="long_recall: prompt length, BOS included")
    ap.add_argument("--answer-at", type=int, default=4, help="long_recall: answer's first token after the prompt")
    a = ap.parse_args()
    out = a.out or os.path.join(HERE, "..", "eval", "cases", a.set + ".json")
    rng = random.Random(a.seed)
    if a.set == "long_recall":
        if not a.tokenizer:
            ap.error("--set long_recall needs --tokenizer")
        tok = Tokenizer(a.tokenizer)
        cases = []
        while len(cases) < a.cases:
            c = recall_case(rng, len(cases), tok, a.prompt_tokens, a.answer_at)
            if c is not None:
                cases.append(c)
        doc = {"name": "long_recall",
               "description": "a fact stated near the start, asked for at token {} of {}-token prompts".format(
                   a.prompt_tokens + a.answer_at, a.prompt_tokens),
               "generator": "scripts/make-evict-cases.py --set long_recall --tokenizer tok512.bin --seed {} --cases {} "
                            "--prompt-tokens {} --answer-at {}".format(a.seed, a.cases, a.prompt_tokens, a.answer_at),
               "cases": cases}
        with open(out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
        return
    doc = {"name": "long_stories",
           "description": "long stories: prompt = the first tokens, continuation = the next ones",
           "generator": "scripts/make-evict-cases.py --seed {} --cases {}".format(a.seed, a.cases),
           "cases": [case(rng, i) for i in range(a.cases)]}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
