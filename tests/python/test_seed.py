"""The seed library's API, as its users wrote it (the model path aside)."""

from __future__ import annotations

import pytest

import clmcache
from clmcache import SemanticBlockSplitter, SuffixCacheManager

STORY = (
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
    "One day, she saw a big red ball under a tree. "
)


def test_the_seed_script_runs_and_its_stats_show_the_reuse(model_path, tmp_path):
    # The seed's own lines, with a model path and a directory of the test's.
    cache_mgr = SuffixCacheManager(model_path, max_memory_mb=64, disk_cache_path=str(tmp_path / "clm_cache"),
                                   block_strategy="semantic")
    cache_mgr.close()
    splitter = SemanticBlockSplitter()
    splitter.add_rule(r"[？\?：:]\s*$", block_type="question")
    splitter.add_rule(r"^\d+\.\s+", block_type="step")
    cache_mgr = SuffixCacheManager(model_path, block_strategy="semantic", block_splitter=splitter, min_block_length=8)
    first = cache_mgr.generate(STORY * 3, max_tokens=16, temperature=0)
    again = cache_mgr.generate(STORY * 3, max_tokens=16, temperature=0)
    stats = cache_mgr.get_stats()
    for key in ("block_hit_rate", "avg_reuse_depth", "disk_cache_size_gb", "memory_used_mb", "cache_efficiency_ratio"):
        assert isinstance(stats[key], float), key
    assert first.reuse["prefix"] == 0
    assert again.reuse["prefix"] > 0
    assert stats["block_hit_rate"] > 0
    assert stats["avg_reuse_depth"] == pytest.approx(again.reuse["prefix"] / 2)
    assert stats["memory_used_mb"] > 0
    assert stats["scheduler"]["requests_finished"] == 2
    assert again.text and again.token_ids == first.token_ids and again.finish_reason in ("stop", "length")
    cache_mgr.close()


def test_strategies_become_reuse_modes(model_path):
    with clmcache.Engine(model_path, ctx_size=512) as engine:
        token = SuffixCacheManager(engine, block_strategy="token")
        assert token.reuse == "blend"
        assert SuffixCacheManager(engine, block_strategy="token", enable_cross_attention=False).reuse == "shift"
        assert SuffixCacheManager(engine, block_strategy="session").reuse == "prefix"
        # A span seen elsewhere is reused under the token strategy.
        token.generate(STORY * 3, max_tokens=1, temperature=0)
        shifted = token.generate("Tom said: " + STORY * 3, max_tokens=1, temperature=0)
        assert shifted.reuse["shift"] > 0 and shifted.reuse["recomputed"] > 0
        token.close()
        assert not engine.closed  # a shared engine stays open


def test_the_seed_arguments_are_checked(model_path, tmp_path):
    with pytest.raises(ValueError, match="block_strategy"):
        SuffixCacheManager(model_path, block_strategy="paragraph")
    with pytest.raises(ValueError, match="pattern"):
        SemanticBlockSplitter().add_rule("(unclosed", block_type="question")
    with pytest.raises(ValueError, match="type"):
        SemanticBlockSplitter().add_rule("x", block_type="poem")
    with pytest.raises(ValueError, match="persist-sessions"):
        SuffixCacheManager(model_path, enable_session_persistence=True)
    with clmcache.Engine(model_path) as engine, pytest.raises(ValueError, match="new engine"):
        SuffixCacheManager(engine, max_memory_mb=64)
    splitter = SemanticBlockSplitter()
    with pytest.raises(ValueError):
        splitter.add_rule("[", block_type="step")
    assert splitter.rules == []  # a refused rule is not kept


def test_the_disk_cache_cap_evicts(model_path, tmp_path):
    with SuffixCacheManager(model_path, disk_cache_path=str(tmp_path / "cache"), block_strategy="session") as m:
        m.generate(STORY * 4, max_tokens=4, temperature=0)
        m.engine.close()  # writes the queued blocks
    with SuffixCacheManager(model_path, disk_cache_path=str(tmp_path / "cache"), block_strategy="session") as m:
        assert m.get_stats()["disk_cache_size_gb"] > 0
        m.set_disk_cache_max_size_gb(0.000001)  # 1000 bytes: smaller than one block
        assert m.get_stats()["disk_cache_size_gb"] == 0
        with pytest.raises(ValueError):
            m.set_disk_cache_max_size_gb(-1)
