"""clmcache.Engine: the same engine as the CLI and the server, in process."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest

import clmcache

PROMPT = "Once upon a time, there was a little girl named Lily."


def test_greedy_generation_equals_the_cli(engine, model_path, binary):
    got = engine.generate(PROMPT, max_tokens=24, temperature=0)
    cli = subprocess.run(
        [binary, "run", "-m", model_path, "-c", "512", "-t", "2", "-p", PROMPT, "-n", "24", "--temp", "0", "--json"],
        capture_output=True, text=True, check=True,
    )
    expected = json.loads(cli.stdout)
    assert got.prompt_token_ids == expected["prompt_token_ids"]
    assert got.token_ids == expected["token_ids"]
    assert got.text == expected["text"]
    assert got.finish_reason in ("stop", "length")
    assert sum(got.reuse.values()) == len(got.prompt_token_ids)


def test_a_repeated_prompt_reuses_its_prefix(engine):
    first = engine.generate(PROMPT * 4, max_tokens=8, temperature=0)
    second = engine.generate(PROMPT * 4, max_tokens=8, temperature=0)
    assert first.reuse["prefix"] == 0
    assert second.reuse["prefix"] >= engine.block_size
    assert second.cached_tokens == second.reuse["prefix"] + second.reuse["shift"]
    assert second.token_ids == first.token_ids  # prefix reuse is exact


def test_token_ids_in_and_out(engine):
    ids = engine.tokenize(PROMPT)
    assert ids[0] == 1  # the model's BOS
    assert engine.detokenize(ids[1:]).strip() == PROMPT
    by_text = engine.generate(PROMPT, max_tokens=12, temperature=0)
    by_ids = engine.generate(ids, max_tokens=12, temperature=0)
    assert by_ids.prompt_token_ids == ids
    assert by_ids.token_ids == by_text.token_ids


def test_stream_pieces_add_up_to_the_generation(engine):
    whole = engine.generate(PROMPT, max_tokens=30, temperature=0, ignore_eos=True)
    pieces = list(engine.stream(PROMPT, max_tokens=30, temperature=0, ignore_eos=True))
    assert len(pieces) > 1
    assert "".join(p.text for p in pieces) == whole.text
    assert [t for p in pieces for t in p.token_ids] == whole.token_ids


def test_stop_strings_cut_the_text(engine):
    whole = engine.generate(PROMPT, max_tokens=40, temperature=0, ignore_eos=True)
    word = whole.text.split()[3]
    cut = engine.generate(PROMPT, max_tokens=40, temperature=0, ignore_eos=True, stop=[word])
    assert cut.finish_reason == "stop"
    assert word not in cut.text
    assert whole.text.startswith(cut.text)


def test_seeded_sampling_repeats(engine):
    a = engine.generate(PROMPT, max_tokens=20, temperature=0.9, seed=7)
    b = engine.generate(PROMPT, max_tokens=20, temperature=0.9, seed=7)
    assert a.token_ids == b.token_ids


def test_chat_uses_a_chat_format(engine):
    reply = engine.chat([{"role": "user", "content": "Tell me a story."}], max_tokens=10, temperature=0)
    assert reply.token_ids
    assert reply.prompt_token_ids != engine.tokenize("Tell me a story.")


def test_options_are_the_cli_flags(model_path):
    with clmcache.Engine(model_path, ctx_size=256, block_size=16, kv_memory_mb=4, reuse="shift") as e:
        assert e.n_ctx == 256
        assert e.block_size == 16
        stats = e.stats()
        assert stats["reuse"]["mode"] == "shift"
        assert stats["cache"]["block_bytes"] * stats["cache"]["blocks_total"] <= 4 << 20


def test_bad_options_and_requests_raise_clear_errors(model_path, engine, tmp_path):
    with pytest.raises(FileNotFoundError):
        clmcache.Engine(tmp_path / "absent.gguf")
    with pytest.raises(ValueError, match="ctx-size"):
        clmcache.Engine(model_path, ctx_size=0)
    with pytest.raises(ValueError, match="no-such-flag"):
        clmcache.Engine(model_path, no_such_flag=3)
    with pytest.raises(ValueError, match="reuse"):
        clmcache.Engine(model_path, reuse="sideways")
    not_a_model = tmp_path / "text.gguf"
    not_a_model.write_text("not a model")
    with pytest.raises(clmcache.Error):
        clmcache.Engine(not_a_model)
    with pytest.raises(ValueError, match="temperature"):
        engine.generate(PROMPT, temperature=-1)
    with pytest.raises(ValueError, match="reuse"):
        engine.generate(PROMPT, reuse="sideways")
    with pytest.raises(ValueError, match="prompt"):
        engine.generate(PROMPT * 200, max_tokens=1)  # past the 512-token context
    with pytest.raises(ValueError):
        engine.generate([], max_tokens=1)
    with pytest.raises(ValueError, match="vocabulary"):
        engine.detokenize([10**6])
    with pytest.raises(clmcache.Error, match="disk cache"):
        engine.set_disk_cache_max_size_gb(1)
    # The engine still works after every refusal.
    assert engine.generate(PROMPT, max_tokens=4, temperature=0).token_ids


def test_a_closed_engine_refuses_work(model_path):
    e = clmcache.Engine(model_path, ctx_size=256)
    e.close()
    e.close()  # idempotent
    assert e.closed
    with pytest.raises(clmcache.Error, match="closed"):
        e.generate(PROMPT)


def test_threads_share_the_batcher(engine):
    expected = engine.generate(PROMPT, max_tokens=300, temperature=0, ignore_eos=True).token_ids
    results: list[list[int]] = [[] for _ in range(4)]
    running_seen = []

    def work(i: int) -> None:
        results[i] = engine.generate(PROMPT, max_tokens=300, temperature=0, ignore_eos=True).token_ids

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        running_seen.append(engine.stats()["scheduler"]["running"])
    for t in threads:
        t.join()
    assert all(r == expected for r in results)
    # The Python threads' requests ran in one batch: the GIL was released.
    assert max(running_seen) >= 2
