"""score(): the server's echo + logprobs, in process, bit for bit."""

from __future__ import annotations

PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play outside."


def test_score_equals_the_servers_echo_logprobs(engine, serve, model_path):
    ids = engine.tokenize(PROMPT)
    scored = engine.score(ids)
    server = serve("-m", model_path, "-c", "512", "-t", "2")
    body = {"prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 0}
    over_http = server.post("/v1/completions", body)["choices"][0]["logprobs"]["token_logprobs"]
    assert scored[0] is None and over_http[0] is None
    assert len(scored) == len(ids)
    assert all(isinstance(x, float) for x in scored[1:])
    assert scored == over_http  # the same doubles, not merely close ones


def test_score_from_logprob_start_len_is_a_cold_runs_whatever_the_cache_holds(engine):
    ids = engine.tokenize(PROMPT + " " + PROMPT)
    assert len(ids) > 40  # more than one 32-token block
    cold = engine.score(ids)  # a fresh engine: nothing cached, every row computed
    assert all(isinstance(x, float) for x in cold[1:])
    warm = engine.score(ids)  # the cached prefix is reused: its positions have none
    assert any(x is None for x in warm[1:])
    k = len(ids) // 2
    scored = engine.score(ids, logprob_start_len=k)
    assert all(isinstance(x, float) for x in scored[k:])
    assert scored[k:] == cold[k:]  # bit for bit
