"""KV events of one `clmcache serve`, read as a router would: a ZeroMQ
subscriber decoding vLLM's schema sees consecutive sequence numbers, finds
the gap left while it was stopped and fills it through the replay socket,
and ends up knowing the blocks /stats reports."""

from __future__ import annotations

import time

import pytest
import zmq

from cluster import ClmServer, http
from kv_event_schema import Holdings, decode_batch, decode_seq, replay

TOPIC = "kv@pod-0@stories260K"


def prompt(i: int) -> str:
    return " ".join(f"Tom saw {i} red birds near the old mill and {i + k} more." for k in range(12))


class Subscriber:
    def __init__(self, ctx, endpoint: str):
        self.sock = ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt_string(zmq.SUBSCRIBE, "kv@")
        self.sock.connect(endpoint)

    def drain(self, into: dict[int, bytes], wait_ms: int = 300) -> int:
        n = 0
        while self.sock.poll(wait_ms):
            topic, seq, payload = self.sock.recv_multipart()
            assert topic.decode() == TOPIC
            into[decode_seq(seq)] = payload
            n += 1
        return n

    def close(self):
        self.sock.close()


@pytest.fixture
def server(tmp_path):
    s = ClmServer("events", tmp_path, ["-c", "512", "--kv-events-endpoint", "tcp://127.0.0.1:*",
                                       "--kv-events-replay-endpoint", "tcp://127.0.0.1:*", "--kv-events-topic", TOPIC])
    yield s
    s.close()


def complete(server, i: int):
    status, body, _ = http(server.port, "POST", "/v1/completions",
                           {"prompt": prompt(i), "max_tokens": 6, "temperature": 0})
    assert status == 200, body


def work_until_received(server, sub: Subscriber, into: dict[int, bytes], i: int) -> int:
    """Sends completions until a batch reaches the subscriber (a subscription
    takes effect a moment after connect); returns the next prompt number."""
    deadline = time.monotonic() + 30
    while not into:
        assert time.monotonic() < deadline, "no KV event reached the subscriber"
        complete(server, i)
        i += 1
        sub.drain(into, 200)
    return i


def test_sequence_gaps_are_filled_by_replay_and_counts_match_stats(server):
    bound = server.stats()["kv_events"]
    assert bound["enabled"] and bound["topic"] == TOPIC
    ctx = zmq.Context()
    received: dict[int, bytes] = {}
    sub = Subscriber(ctx, bound["endpoint"])
    i = work_until_received(server, sub, received, 0)
    for _ in range(4):
        complete(server, i)
        i += 1
    sub.drain(received)
    # It joined after the start: batch 0 (AllBlocksCleared, sent at start)
    # was missed, and so is anything else before the subscription took.
    first = min(received)
    assert first > 0, "the start-up batch cannot have reached a late subscriber"
    received.update(replay(ctx, bound["replay_endpoint"], 0))
    assert sorted(received) == list(range(max(received) + 1)), "replay did not fill the start"

    # The subscriber stops; what is published meanwhile is lost to it.
    sub.close()
    stopped_at = max(received)
    for _ in range(4):
        complete(server, i)
        i += 1
    assert server.stats()["kv_events"]["seq"] > stopped_at + 1, "nothing was published while it was stopped"
    sub = Subscriber(ctx, bound["endpoint"])
    after: dict[int, bytes] = {}
    i = work_until_received(server, sub, after, i)
    gap_from = stopped_at + 1
    assert min(after) > gap_from, "a gap in the sequence numbers"
    received.update(after)
    received.update(replay(ctx, bound["replay_endpoint"], gap_from))
    stats = server.settled_stats()
    sub.drain(received)
    sub.close()
    ctx.term()

    n = stats["kv_events"]["seq"]
    assert sorted(received) == list(range(n)), "sequence numbers with holes after replay"
    batches = [decode_batch(seq, received[seq]) for seq in range(n)]
    assert batches[0].events[0].tag == "AllBlocksCleared"
    holdings = Holdings()
    for b in batches:
        holdings.apply(b)
    ev = stats["kv_events"]
    assert ev["events_dropped"] == 0
    assert ev["replay_requests"] == 2
    assert holdings.stored == ev["blocks_stored"]
    assert holdings.removed == ev["blocks_removed"]
    assert holdings.removed.get("cpu", 0) > 0, "the pool never evicted: the test did not exercise BlockRemoved"
    assert len(holdings.live["cpu"]) == stats["cache"]["prefix_blocks"] > 0


def vllm_hash_chain(seed: str, tokens: list[int], block_size: int) -> list[int]:
    """vLLM's sha256_cbor block hashes of the full blocks of `tokens`, as a
    router computes them (cbor2 and hashlib, nothing of clmcache's): each
    is SHA-256 of canonical CBOR (parent digest, tuple of tokens, None), the
    first parent SHA-256 of the CBOR of the seed; the low 64 bits."""
    import hashlib

    import cbor2

    def sha256_cbor(obj) -> bytes:
        return hashlib.sha256(cbor2.dumps(obj, canonical=True)).digest()

    parent = sha256_cbor(seed)
    out = []
    for b in range(len(tokens) // block_size):
        parent = sha256_cbor((parent, tuple(tokens[b * block_size:(b + 1) * block_size]), None))
        out.append(int.from_bytes(parent, "big") & (2**64 - 1))
    return out


def test_vllm_block_hashes_match_what_a_router_computes(tmp_path):
    server = ClmServer("vllm-hashes", tmp_path, ["-c", "512", "--kv-events-endpoint", "tcp://127.0.0.1:*",
                                                 "--kv-events-replay-endpoint", "tcp://127.0.0.1:*",
                                                 "--kv-events-block-hash", "vllm", "--kv-events-hash-seed", "0"])
    try:
        first = [(7 * i) % 400 + 3 for i in range(100)]  # token ids: 3 full blocks of 32 and 4 more
        second = first[:64] + [(11 * i) % 400 + 3 for i in range(70)]  # shares 2 blocks, then its own
        for prompt in (first, second):
            status, body, _ = http(server.port, "POST", "/v1/completions",
                                   {"prompt": prompt, "max_tokens": 1, "temperature": 0})
            assert status == 200, body
        stats = server.settled_stats()
        assert stats["kv_events"]["block_hash"] == "vllm_sha256_cbor"
        assert stats["kv_events"]["blocks_unhashable"] == 0
        ctx = zmq.Context()
        got = replay(ctx, stats["kv_events"]["replay_endpoint"], 0)
        ctx.term()
        stored = [e for seq in sorted(got) for e in decode_batch(seq, got[seq]).events
                  if e.tag == "BlockStored" and e.fields["medium"] == "cpu"]
        announced = [h for e in stored for h in e.fields["block_hashes"]]
        block_size = stored[0].fields["block_size"]
        want_first = vllm_hash_chain("0", first, block_size)
        want_second = vllm_hash_chain("0", second, block_size)
        assert announced == want_first + want_second[2:]
        # Each event names its first block's parent: none for a prompt's
        # first block, else the block before it (how blocks fall into events
        # depends on when the publisher woke).
        chain = {h: p for p, h in zip([None] + want_first, want_first)}
        chain.update({h: p for p, h in zip([None] + want_second, want_second)})
        for e in stored:
            assert e.fields["parent_block_hash"] == chain[e.fields["block_hashes"][0]]
        assert any(e.fields["parent_block_hash"] == want_second[1] for e in stored), "no event chains off the shared block"
    finally:
        server.close()
