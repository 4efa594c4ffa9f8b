"""clmcache in process: the engine and OpenAI-compatible server's core,
with its KV cache that never recomputes what it has computed.

    import clmcache
    with clmcache.Engine("model.gguf", ctx_size=2048, disk_cache="cache/") as engine:
        print(engine.generate("Once upon a time", max_tokens=32, temperature=0).text)

See the README's "Python" section.
"""

from ._engine import Engine, Error, Generation, StreamPiece
from ._seed import SemanticBlockSplitter, SuffixCacheManager

__all__ = ["Engine", "Error", "Generation", "StreamPiece", "SemanticBlockSplitter", "SuffixCacheManager"]
