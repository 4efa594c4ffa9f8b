"""deploy/haproxy.cfg as shipped, in front of three `clmcache serve`
instances sharing one Redis, all started here on loopback: a conversation
with an X-Session-Id stays on one instance; after that instance is killed
(kill -9) it continues on another, which restores its prefix from Redis and
answers exactly what a cold run answers; an instance stopped with SIGTERM
while clients are busy costs them no failed request."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import zmq

from cluster import ClmServer, HaProxy, RedisServer, free_port, http, wait_for
from kv_event_schema import Holdings, decode_batch, replay

SOURCE = Path(os.environ.get("CLMCACHE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
CONFIG = SOURCE / "deploy" / "haproxy.cfg"
NAMES = ("clmcache1", "clmcache2", "clmcache3")

STORY = ("Lily and Ben went to the park on a sunny day. They saw a big dog with a red ball, and the dog ran "
         "to them and wagged its tail. Lily threw the ball far away and the dog ran after it. ")


@pytest.fixture
def cluster(tmp_path):
    parts = []
    try:
        redis = RedisServer(tmp_path)
        parts.append(redis)
        servers = {}
        for name in NAMES:
            servers[name] = ClmServer(name, tmp_path, [
                "-c", "1024", "--redis", redis.url, "--shutdown-grace", "20", "--shutdown-delay", "2",
                "--kv-events-endpoint", "tcp://127.0.0.1:*", "--kv-events-replay-endpoint", "tcp://127.0.0.1:*",
                "--kv-events-topic", f"kv@{name}@stories260K"])
            parts.append(servers[name])
        lb_port = free_port()
        env = {"CLMCACHE_LB_BIND": f"127.0.0.1:{lb_port}"}
        for i, name in enumerate(NAMES, start=1):
            env[f"CLMCACHE_SERVER_{i}"] = f"127.0.0.1:{servers[name].port}"
        lb = HaProxy(tmp_path, CONFIG, env)
        parts.append(lb)
        # Every instance answers through the balancer (health checks pass).
        served = set()

        def all_seen():
            try:
                status, _, headers = http(lb_port, "GET", "/v1/models", timeout_s=5)
            except OSError:  # not listening yet
                return False
            if status == 200:
                served.add(headers.get("X-Clmcache-Server"))
            return served >= set(NAMES)

        wait_for(all_seen, 30, "HAProxy to route to every instance")
        yield lb_port, servers, redis, lb
    finally:
        for p in reversed(parts):
            p.close()


def complete(port: int, prompt: str, session: str | None = None, reuse: str | None = None):
    body = {"prompt": prompt, "max_tokens": 12, "temperature": 0, "logprobs": 1}
    if reuse:
        body["reuse"] = reuse
    headers = {"X-Session-Id": session} if session else {}
    return http(port, "POST", "/v1/completions", body, headers)


def events_match_stats(server: ClmServer) -> Holdings:
    """Every KV event batch the instance published, replayed from 0 and
    decoded as vLLM's schema, adds up to what its /stats says."""
    stats = server.settled_stats()
    kv = stats["kv_events"]
    ctx = zmq.Context()
    try:
        got = replay(ctx, kv["replay_endpoint"], 0)
    finally:
        ctx.term()
    assert sorted(got) == list(range(kv["seq"])), f"{server.name}: sequence numbers with holes"
    holdings = Holdings()
    for seq in sorted(got):
        holdings.apply(decode_batch(seq, got[seq]))
    assert holdings.clears == 1
    assert holdings.stored == kv["blocks_stored"] and holdings.removed == kv["blocks_removed"], server.name
    assert len(holdings.live.get("cpu", ())) == stats["cache"]["prefix_blocks"], server.name
    return holdings


def answer(body: dict) -> tuple[str, list]:
    choice = body["choices"][0]
    return choice["text"], choice["logprobs"]["token_logprobs"]


def test_sessions_stick_survive_a_crash_and_a_drain(cluster):
    lb_port, servers, redis, lb = cluster
    reused_before = {n: s.stats()["cache"]["reused_tokens"] for n, s in servers.items()}

    # A conversation: each turn's prompt extends the last one.
    prompt = STORY
    homes = []
    for turn in range(3):
        status, body, headers = complete(lb_port, prompt, session="conversation-7")
        assert status == 200, body
        homes.append(headers["X-Clmcache-Server"])
        prompt += body["choices"][0]["text"] + f" Then they played game number {turn}. "
    home = homes[0]
    assert homes == [home] * 3, f"the conversation moved: {homes}"
    reused = {n: s.stats()["cache"]["reused_tokens"] - reused_before[n] for n, s in servers.items()}
    assert reused[home] > 0, "later turns did not hit the first turns' blocks"
    assert all(reused[n] == 0 for n in NAMES if n != home), reused

    # What each instance's KV events say it holds is what it holds; the
    # conversation's blocks went to RAM and, written through, to Redis.
    held = {n: events_match_stats(s) for n, s in servers.items()}
    assert held[home].stored.get("cpu", 0) > 0 and held[home].stored.get("redis", 0) > 0, held[home]
    assert all(not held[n].stored for n in NAMES if n != home)

    # Its blocks are in Redis (the writer was idle above): crash it.
    servers[home].kill()

    status, body, headers = complete(lb_port, prompt, session="conversation-7")
    assert status == 200, body
    new_home = headers["X-Clmcache-Server"]
    assert new_home != home
    cached = body["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0, "the new instance computed the whole conversation again"
    redis_hits = [t for t in servers[new_home].stats()["tiers"]["tiers"] if t["name"] == "redis"][0]["hits"]
    assert redis_hits > 0, "the prefix did not come from Redis"
    # Exactly what a cold run answers (prefix mode is exact), asked of the
    # third instance with reuse off.
    third = next(n for n in NAMES if n not in (home, new_home))
    cold_status, cold, _ = complete(servers[third].port, prompt, reuse="off")
    assert cold_status == 200, cold
    assert cold["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert answer(body) == answer(cold)
    # And it stays there.
    status, body, headers = complete(lb_port, prompt + body["choices"][0]["text"], session="conversation-7")
    assert status == 200 and headers["X-Clmcache-Server"] == new_home

    # Clients keep sending (with and without a session) while one of the
    # two remaining instances is stopped with SIGTERM: none may fail.
    failures, done = [], []
    stop = threading.Event()

    def client(k: int):
        n = 0
        while not stop.is_set():
            session = f"client-{k}-{n % 3}" if k % 2 else None
            status, body, _ = complete(lb_port, STORY + f" Question {k}.{n}:", session=session)
            if status != 200:
                failures.append((status, body))
            n += 1
        done.append(n)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    draining = servers[new_home]
    assert draining.terminate(timeout_s=40) == 0, draining.log()
    time.sleep(1.5)  # the survivor alone serves everyone
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert sum(done) > 8, f"the clients hardly ran: {done}"
    assert failures == [], f"{len(failures)} failed requests, first {failures[0]}\n{lb.log()}"
    assert servers[third].alive()
    events_match_stats(servers[third])
