"""vLLM's KV event schema, decoded independently of clmcache's encoder:
what `vllm/distributed/kv_events.py` publishes (array-like msgspec structs)
and llm-d's kv-cache-manager reads. A message is [topic, 8-byte big-endian
sequence number, msgpack EventBatch]; EventBatch is [ts, events,
data_parallel_rank?]; each event is an array tagged by its first element."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgpack

END_OF_REPLAY = b"\xff" * 8  # -1 as a signed 8-byte integer

FIELDS = {
    # tag: fields after the tag, in order
    "BlockStored": ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium"),
    "BlockRemoved": ("block_hashes", "medium"),
    "AllBlocksCleared": (),
}


@dataclass
class Event:
    tag: str
    fields: dict


@dataclass
class Batch:
    seq: int
    ts: float
    events: list[Event]
    data_parallel_rank: int | None


def decode_seq(frame: bytes) -> int:
    assert len(frame) == 8, f"sequence frame of {len(frame)} bytes"
    return int.from_bytes(frame, "big")


def decode_batch(seq: int, payload: bytes) -> Batch:
    batch = msgpack.unpackb(payload, raw=False, strict_map_key=True)
    assert isinstance(batch, list) and len(batch) in (2, 3), f"EventBatch is not [ts, events, rank?]: {batch!r}"
    ts, events = batch[0], batch[1]
    assert isinstance(ts, float), f"ts {ts!r}"
    assert isinstance(events, list), f"events {events!r}"
    rank = batch[2] if len(batch) == 3 else None
    assert rank is None or isinstance(rank, int)
    decoded = []
    for e in events:
        assert isinstance(e, list) and e and isinstance(e[0], str), f"untagged event {e!r}"
        tag = e[0]
        assert tag in FIELDS, f"unknown event {tag}"
        names = FIELDS[tag]
        assert len(e) == 1 + len(names), f"{tag} with {len(e) - 1} fields, expected {len(names)}: {e!r}"
        fields = dict(zip(names, e[1:]))
        if "block_hashes" in fields:
            hashes = fields["block_hashes"]
            assert isinstance(hashes, list) and hashes, f"{tag} without hashes"
            assert all(isinstance(h, int) and 0 <= h < 2**64 for h in hashes), hashes
            assert isinstance(fields["medium"], str), fields["medium"]
        if tag == "BlockStored":
            parent = fields["parent_block_hash"]
            assert parent is None or (isinstance(parent, int) and 0 <= parent < 2**64), parent
            assert isinstance(fields["block_size"], int) and fields["block_size"] > 0
            tokens = fields["token_ids"]
            assert all(isinstance(t, int) for t in tokens)
            assert len(tokens) == fields["block_size"] * len(fields["block_hashes"]), "tokens are not whole blocks"
            assert fields["lora_id"] is None
        decoded.append(Event(tag, fields))
    return Batch(seq, ts, decoded, rank)


@dataclass
class Holdings:
    """What an indexer learns from the events: blocks per medium."""

    live: dict[str, set[int]] = field(default_factory=dict)
    stored: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    clears: int = 0

    def apply(self, batch: Batch):
        for e in batch.events:
            if e.tag == "AllBlocksCleared":
                self.clears += 1
                self.live.clear()
                continue
            medium, hashes = e.fields["medium"], e.fields["block_hashes"]
            live = self.live.setdefault(medium, set())
            if e.tag == "BlockStored":
                self.stored[medium] = self.stored.get(medium, 0) + len(hashes)
                live.update(hashes)
            else:
                self.removed[medium] = self.removed.get(medium, 0) + len(hashes)
                live.difference_update(hashes)


def replay(ctx, endpoint: str, first_seq: int, timeout_ms: int = 10000) -> dict[int, bytes]:
    """The kept batches from first_seq on, asked of the ROUTER socket as a
    DEALER: [empty, seq] out, [empty, seq, batch]... then [empty, -1, empty]."""
    import zmq

    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.RCVTIMEO, timeout_ms)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(endpoint)
    try:
        dealer.send_multipart([b"", first_seq.to_bytes(8, "big")])
        got = {}
        while True:
            empty, seq, payload = dealer.recv_multipart()
            assert empty == b""
            if seq == END_OF_REPLAY:
                assert payload == b""
                return got
            got[decode_seq(seq)] = payload
    finally:
        dealer.close()
