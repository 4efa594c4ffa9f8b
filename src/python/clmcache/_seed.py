"""The names of the Python library clmcache grew from, on today's engine:
SuffixCacheManager, SemanticBlockSplitter and get_stats(). Each argument
is translated to an engine option or a request field; the README's
"Python" section lists them, and those that have no meaning here."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Mapping

from . import _native
from ._engine import Engine, Generation

# A block strategy and the seed's cross-attention switch as a reuse mode:
# the token and semantic strategies reuse cached spans found anywhere in a
# prompt (shift), and with cross-attention enabled blend recomputes the
# copied tokens whose K/V the new context changes most; the session
# strategy reuses the exact prefix only.
_STRATEGIES = ("token", "semantic", "session")


def _reuse_mode(block_strategy: str, enable_cross_attention: bool) -> str:
    if block_strategy == "session":
        return "prefix"
    return "blend" if enable_cross_attention else "shift"


class SemanticBlockSplitter:
    """The splitter that types a prompt's spans, so that a cached span is
    reused only for text of the same block type. Rules are RE2 patterns
    tagged with a block type (question, instruction, step, section, turn,
    document, context); the rules added here come first, then the built-in
    ones (unless ``default_rules=False``). It is the same splitter
    ``--split-rules`` configures on the server."""

    def __init__(self, default_rules: bool = True, min_block_length: int | None = None):
        self._rules: list[dict[str, Any]] = []
        self._default_rules = bool(default_rules)
        self.min_block_length = min_block_length
        self._check()

    def add_rule(self, pattern: str, block_type: str = "context", min_length: int = 0) -> "SemanticBlockSplitter":
        """Adds a rule; a bad pattern or an unknown block type raises
        ValueError at once."""
        if not isinstance(pattern, str):
            raise ValueError("the pattern must be a string")
        rule = {"pattern": pattern, "type": block_type, "min_length": min_length}
        self._rules.append(rule)
        try:
            self._check()
        except ValueError:
            self._rules.pop()
            raise
        return self

    @property
    def rules(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._rules]

    def to_json(self, min_block_length: int | None = None) -> str:
        """The rule file ``--split-rules`` reads."""
        doc: dict[str, Any] = {"rules": self._rules, "default_rules": self._default_rules}
        length = min_block_length if min_block_length is not None else self.min_block_length
        if length is not None:
            doc["min_block_length"] = length
        return json.dumps(doc)

    def _check(self) -> None:
        try:
            _native.check_split_rules(self.to_json())
        except _native.BadOption as e:
            raise ValueError(str(e)) from None


class SuffixCacheManager:
    """The seed's cache manager over an Engine.

    ``model`` is a GGUF path (an Engine is made with the options below and
    closed with the manager) or an Engine (shared; only the per-request
    options apply). Arguments:

    - ``max_memory_mb``: the KV pool's budget (``kv_memory_mb``).
    - ``disk_cache_path``: a directory (or ``sqlite:FILE``) keeping KV
      blocks across restarts (``disk_cache``).
    - ``block_strategy``: "token", "semantic" or "session" (see the
      README's block strategies), sent with every request.
    - ``block_splitter`` and ``min_block_length``: the semantic splitter's
      rules and its shortest reusable block (``split_rules``).
    - ``token_window_size``: spans are searched only in the last N prompt
      tokens (``reuse_window``).
    - ``enable_cross_attention``: with the token and semantic strategies,
      recompute the copied tokens that the new context changes most
      (``reuse="blend"``) rather than copying every one (``"shift"``).
    - ``session_timeout_seconds`` and ``enable_session_persistence``:
      how long a session_id's prefix stays pinned, and whether sessions
      resume after a restart (needs ``disk_cache_path``).

    Any other keyword is an Engine option (``ctx_size``, ``threads``,
    ``redis``, ...).
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | Engine,
        max_memory_mb: int | None = None,
        disk_cache_path: str | os.PathLike[str] | None = None,
        block_strategy: str = "token",
        block_splitter: SemanticBlockSplitter | None = None,
        min_block_length: int | None = None,
        token_window_size: int | None = None,
        enable_cross_attention: bool = True,
        session_timeout_seconds: float | None = None,
        enable_session_persistence: bool = False,
        **engine_options: Any,
    ):
        if block_strategy not in _STRATEGIES:
            raise ValueError(f"block_strategy must be one of {', '.join(_STRATEGIES)}, not {block_strategy!r}")
        if block_splitter is not None and not isinstance(block_splitter, SemanticBlockSplitter):
            raise ValueError("block_splitter must be a SemanticBlockSplitter")
        self.block_strategy = block_strategy
        self.reuse = _reuse_mode(block_strategy, enable_cross_attention)
        options: dict[str, Any] = dict(engine_options)
        options.update(
            {
                "kv_memory_mb": max_memory_mb,
                "disk_cache": os.fspath(disk_cache_path) if disk_cache_path is not None else None,
                "reuse_window": token_window_size,
                "session_timeout": session_timeout_seconds,
                "persist_sessions": bool(enable_session_persistence),
            }
        )
        rules_text = None
        if block_splitter is not None or min_block_length is not None:
            splitter = block_splitter or SemanticBlockSplitter()
            rules_text = splitter.to_json(min_block_length)
            try:
                _native.check_split_rules(rules_text)
            except _native.BadOption as e:
                raise ValueError(str(e)) from None
        if isinstance(model, Engine):
            given = [k for k, v in options.items() if v not in (None, False)]
            if given or rules_text is not None:
                raise ValueError(
                    "these options configure a new engine and cannot change the one given: "
                    + ", ".join(given + (["block_splitter/min_block_length"] if rules_text else []))
                )
            self.engine = model
            self._owns_engine = False
            return
        self._owns_engine = True
        if rules_text is None:
            self.engine = Engine(model, **options)
            return
        # The engine reads its rule file once, at start.
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(rules_text)
        try:
            self.engine = Engine(model, split_rules=f.name, **options)
        finally:
            os.unlink(f.name)

    def generate(
        self,
        prompt: str | list[int],
        max_tokens: int = 128,
        temperature: float | None = None,
        session_id: str | None = None,
        **fields: Any,
    ) -> Generation:
        """Generates with the manager's reuse mode and block strategy;
        ``.text``, ``.token_ids``, ``.finish_reason`` and ``.reuse``
        ({prefix, shift, recomputed, computed}) say what happened."""
        fields.setdefault("reuse", self.reuse)
        fields.setdefault("block_strategy", self.block_strategy)
        return self.engine.generate(prompt, max_tokens=max_tokens, temperature=temperature, session_id=session_id, **fields)

    def chat(self, messages, max_tokens: int = 128, temperature: float | None = None,
             session_id: str | None = None, **fields: Any) -> Generation:
        fields.setdefault("reuse", self.reuse)
        fields.setdefault("block_strategy", self.block_strategy)
        return self.engine.chat(messages, max_tokens=max_tokens, temperature=temperature, session_id=session_id, **fields)

    def get_stats(self) -> dict[str, Any]:
        """The cache's figures, as GET /stats reports them: the seed's keys
        (block_hit_rate, avg_reuse_depth, disk_cache_size_gb,
        memory_used_mb, cache_efficiency_ratio) and every other counter of
        /stats' "cache" object at the top level, plus /stats' "scheduler",
        "reuse", "tiers" and "server" objects. disk_cache_size_gb is 0.0
        without a disk cache (/stats says null)."""
        full = self.engine.stats()
        stats: dict[str, Any] = dict(full["cache"])
        stats["disk_cache_size_gb"] = full["tiers"].get("disk_cache_size_gb") or 0.0
        for section in ("scheduler", "reuse", "tiers", "server"):
            stats[section] = full[section]
        return stats

    def set_disk_cache_max_size_gb(self, gb: float) -> None:
        self.engine.set_disk_cache_max_size_gb(gb)

    def close(self) -> None:
        """Closes the engine if the manager made it (writing what the disk
        cache has queued); a shared Engine stays open."""
        if self._owns_engine:
            self.engine.close()

    def __enter__(self) -> "SuffixCacheManager":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
