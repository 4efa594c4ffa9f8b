"""clmcache.Engine: the engine `clmcache serve` runs, called in process.

Options are the serving flags under their long names in snake_case
(``ctx_size=2048`` is ``--ctx-size 2048``) and are checked by the same code;
requests are the HTTP API's bodies, so every field of POST /v1/completions
works here with the same meaning, and answers carry the same figures.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from . import _native


class Error(RuntimeError):
    """An engine error: a model that does not load, a full queue, a closed
    engine, a generation that failed. ``status`` is the HTTP status the
    server would have answered with (0 when there is none)."""

    def __init__(self, message: str, status: int = 0, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class Generation:
    """One finished generation."""

    text: str
    token_ids: list[int]
    finish_reason: str
    # Where each prompt token's K/V came from: prefix (exact), shift
    # (copied from elsewhere, K re-rotated), recomputed (copied, then
    # computed again by blend or the reuse lead), computed (no reuse).
    reuse: dict[str, int]
    prompt_token_ids: list[int]
    usage: dict[str, Any]
    # With logprobs=N: the completion endpoint's logprobs object.
    logprobs: dict[str, Any] | None = None
    # The whole response as the HTTP API answers it.
    response: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens not computed (reuse prefix + shift)."""
        return self.usage["prompt_tokens_details"]["cached_tokens"]


@dataclass
class StreamPiece:
    """Text released by one step of a streamed generation, and the token
    ids generated with it (text may lag behind ids: stop strings and
    partial characters are held back)."""

    text: str
    token_ids: list[int]


def _cli_args(options: Mapping[str, Any]) -> list[str]:
    args: list[str] = []
    for key, value in options.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                args.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                args += [flag, _flag_value(item)]
        else:
            args += [flag, _flag_value(value)]
    return args


def _flag_value(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back as the same number
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _raise_refusal(payload: str) -> None:
    refusal = json.loads(payload)
    error = refusal.get("error", {})
    message = error.get("message", "request refused")
    if error.get("param"):
        message = f"{error['param']}: {message}"
    status = int(refusal.get("status", 0))
    if status in (400, 404, 413, 422):
        raise ValueError(message)
    raise Error(message, status, error.get("code"))


_open_engines: "weakref.WeakSet[Engine]" = weakref.WeakSet()


@atexit.register
def _close_open_engines() -> None:
    # At interpreter exit every engine still open writes its queued disk
    # tier entries, as `clmcache serve` does on SIGTERM.
    for engine in list(_open_engines):
        engine.close()


class Engine:
    """A loaded model with its KV cache, tiers and continuous batcher.

    ``Engine(model_path, **options)``: options are the flags of ``clmcache
    serve`` (see the README) in snake_case: ``ctx_size``, ``threads``,
    ``kv_memory_mb``, ``disk_cache``, ``redis``, ``reuse``,
    ``block_strategy``, ``kv_budget_tokens``, ``split_rules``,
    ``session_timeout``, ``persist_sessions``, ``temp`` (the default
    temperature), ... A flag without a value takes ``True``. A bad option
    raises ValueError naming the flag; a missing model FileNotFoundError.

    Thread-safe: generations from several threads run in the same batches.
    ``close()`` (or leaving a ``with`` block, or interpreter exit) lets
    running generations finish for ``grace_s`` seconds and writes what the
    disk tier has queued.
    """

    def __init__(self, model_path: str | os.PathLike[str], **options: Any):
        path = os.fspath(model_path)
        if not os.path.isfile(path):
            raise FileNotFoundError(errno.ENOENT, "no such model file", path)
        if "model" in options:
            raise ValueError("give the model as the first argument, not model=")
        try:
            self._server = _native.Server(["--model", path] + _cli_args(options))
        except _native.BadOption as e:
            raise ValueError(str(e)) from None
        except _native.EngineFailure as e:
            raise Error(str(e)) from None
        info = self._server.info()
        self.model_path: str = info["model_path"]
        self.n_ctx: int = info["n_ctx"]
        self.n_vocab: int = info["n_vocab"]
        self.block_size: int = info["block_size"]
        # Non-empty when the model's chat template could not be used and a
        # hand-written format was chosen instead.
        self.chat_warning: str = info["chat_warning"]
        _open_engines.add(self)

    # -- generation -----------------------------------------------------

    def generate(
        self,
        prompt: str | Sequence[int],
        max_tokens: int = 128,
        temperature: float | None = None,
        seed: int | None = None,
        stop: str | Sequence[str] | None = None,
        reuse: str | None = None,
        session_id: str | None = None,
        **fields: Any,
    ) -> Generation:
        """Generates a continuation of ``prompt`` (text, or token ids used as
        they are). ``reuse`` is off / prefix / shift / blend for this
        request; ``session_id`` keeps the conversation's prefix resident.
        Any other field of POST /v1/completions may be given by its name
        (``top_p``, ``blend_ratio``, ``kv_budget_tokens``, ``logprobs``,
        ``ignore_eos``, ...). Bad values raise ValueError."""
        body = self._body(
            {"prompt": _prompt_value(prompt)}, max_tokens, temperature, seed, stop, reuse, session_id, fields
        )
        return self._run("completion", body)

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        max_tokens: int = 128,
        temperature: float | None = None,
        seed: int | None = None,
        stop: str | Sequence[str] | None = None,
        reuse: str | None = None,
        session_id: str | None = None,
        **fields: Any,
    ) -> Generation:
        """Answers a conversation (``[{"role": "user", "content": ...}]``)
        through the model's own chat template, as POST /v1/chat/completions
        does; the reply is ``.text``."""
        body = self._body(
            {"messages": [dict(m) for m in messages]}, max_tokens, temperature, seed, stop, reuse, session_id, fields
        )
        return self._run("chat", body)

    def stream(
        self,
        prompt: str | Sequence[int],
        max_tokens: int = 128,
        temperature: float | None = None,
        seed: int | None = None,
        stop: str | Sequence[str] | None = None,
        reuse: str | None = None,
        session_id: str | None = None,
        **fields: Any,
    ) -> Iterator[StreamPiece]:
        """generate() as an iterator of StreamPiece, one per token that
        released text. Leaving the loop early cancels the generation."""
        body = self._body(
            {"prompt": _prompt_value(prompt)}, max_tokens, temperature, seed, stop, reuse, session_id, fields
        )
        job = self._start("completion", body)
        return _stream(job)

    def score(self, token_ids: Sequence[int], logprob_start_len: int = 0) -> list[float | None]:
        """The log-probability of each token of ``token_ids`` given those
        before it, as the server's echo + logprobs returns them: None for
        the first token and, before ``logprob_start_len``, where a cached
        row was reused instead of computed. From ``logprob_start_len`` on
        every position is scored."""
        ids = _prompt_value(list(token_ids))
        body: dict[str, Any] = {"prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 0}
        if logprob_start_len:
            body["logprob_start_len"] = logprob_start_len
        result = self._run("completion", body)
        assert result.logprobs is not None
        return list(result.logprobs["token_logprobs"])

    # -- tokens and figures ----------------------------------------------

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> list[int]:
        """The model's token ids for ``text``; with ``add_special`` the BOS
        the model adds; with ``parse_special`` special-token text such as
        ``<s>`` becomes the token."""
        return self._server.tokenize(text, add_special, parse_special)

    def detokenize(self, token_ids: Sequence[int]) -> str:
        try:
            raw = self._server.detokenize(list(token_ids))
        except _native.BadOption as e:
            raise ValueError(str(e)) from None
        return raw.decode("utf-8", errors="replace")

    def stats(self) -> dict[str, Any]:
        """What GET /stats answers: cache, scheduler, reuse, tiers, server."""
        return json.loads(self._call(self._server.stats))

    def set_disk_cache_max_size_gb(self, gb: float) -> None:
        """Caps the disk or SQLite tier at ``gb`` GB (10^9 bytes; 0: no cap),
        evicting the least recently used entries that no longer fit."""
        if not isinstance(gb, (int, float)) or isinstance(gb, bool) or not gb >= 0:
            raise ValueError(f"the disk cache size must be a number of GB >= 0, not {gb!r}")
        self._call(self._server.set_disk_cache_max_bytes, int(gb * 1e9))

    # -- lifetime ---------------------------------------------------------

    def close(self, grace_s: float = 10.0) -> None:
        """Refuses new generations, lets running ones finish for up to
        grace_s seconds, cancels the rest and writes every queued disk tier
        entry. Idempotent."""
        self._server.close(grace_s)
        _open_engines.discard(self)

    @property
    def closed(self) -> bool:
        return self._server.closed

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------

    def _body(self, base, max_tokens, temperature, seed, stop, reuse, session_id, fields) -> dict[str, Any]:
        body = dict(base)
        body["max_tokens"] = max_tokens
        optional = {"temperature": temperature, "seed": seed, "stop": stop, "reuse": reuse, "session_id": session_id}
        body.update({k: v for k, v in optional.items() if v is not None})
        for key in fields:
            if key in ("prompt", "messages", "stream"):
                raise ValueError(f"'{key}' is not a field here: pass it as the method's argument")
        body.update(fields)
        return body

    def _start(self, endpoint: str, body: Mapping[str, Any]):
        try:
            text = json.dumps(body, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"the request cannot be sent: {e}") from None
        try:
            return self._server.start(endpoint, text)
        except _native.RequestRefused as e:
            _raise_refusal(str(e))
        except _native.EngineFailure as e:
            raise Error(str(e)) from None

    def _run(self, endpoint: str, body: Mapping[str, Any]) -> Generation:
        job = self._start(endpoint, body)
        response = json.loads(job.response())
        if "error" in response:
            _raise_refusal(json.dumps(response))
        choice = response["choices"][0]
        text = choice["message"]["content"] if endpoint == "chat" else choice["text"]
        usage = response["usage"]
        return Generation(
            text=text,
            token_ids=response["token_ids"],
            finish_reason=choice["finish_reason"],
            reuse=dict(usage["prompt_tokens_details"]["reuse"]),
            prompt_token_ids=response["prompt_token_ids"],
            usage=usage,
            logprobs=choice.get("logprobs"),
            response=response,
        )

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except _native.EngineFailure as e:
            raise Error(str(e)) from None


def _prompt_value(prompt: Any) -> Any:
    if isinstance(prompt, str):
        return prompt
    try:
        ids = [int(t) for t in prompt]
    except (TypeError, ValueError):
        raise ValueError("the prompt must be text or a sequence of token ids") from None
    if not ids:
        raise ValueError("the prompt is empty")
    return ids


def _stream(job) -> Iterator[StreamPiece]:
    done = False
    try:
        while not done:
            raw, ids, done = job.next()
            if raw or ids:
                yield StreamPiece(raw.decode("utf-8", errors="replace"), list(ids))
        response = json.loads(job.response())
        if "error" in response:
            _raise_refusal(json.dumps(response))
    finally:
        if not done:
            job.cancel()
