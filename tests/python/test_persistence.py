"""The disk tier through the Python module: reused by a second process,
written at close() and at interpreter exit, as SIGTERM does to serve."""

from __future__ import annotations

import json

from conftest import run_python

PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play in the park with her dog. " * 3


def generate_in_new_process(model_path: str, cache: str, close: bool) -> dict:
    code = f"""
import json, clmcache
e = clmcache.Engine({model_path!r}, ctx_size=512, disk_cache={cache!r})
g = e.generate({PROMPT!r}, max_tokens=12, temperature=0)
print(json.dumps({{"reuse": g.reuse, "ids": g.token_ids}}))
{"e.close()" if close else "# left open: interpreter exit must write the queued blocks"}
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_reuses_what_close_wrote(model_path, tmp_path):
    cache = str(tmp_path / "cache")
    first = generate_in_new_process(model_path, cache, close=True)
    second = generate_in_new_process(model_path, cache, close=True)
    assert first["reuse"]["prefix"] == 0
    assert second["reuse"]["prefix"] >= 64
    assert second["ids"] == first["ids"]


def test_interpreter_exit_writes_the_disk_tier(model_path, tmp_path):
    cache = str(tmp_path / "cache")
    first = generate_in_new_process(model_path, cache, close=False)
    second = generate_in_new_process(model_path, cache, close=True)
    assert second["reuse"]["prefix"] >= 64
    assert second["ids"] == first["ids"]


def test_sessions_resume_in_a_new_process(model_path, tmp_path):
    cache = str(tmp_path / "cache")
    code = f"""
import json, clmcache
m = clmcache.SuffixCacheManager({model_path!r}, disk_cache_path={cache!r}, block_strategy="session",
                                enable_session_persistence=True, session_timeout_seconds=600)
restored = m.get_stats()["server"]["sessions"]
g = m.generate({PROMPT!r}, max_tokens=8, temperature=0, session_id="s1")
print(json.dumps({{"restored": restored, "reuse": g.reuse}}))
m.close()
"""
    first = run_python(code)
    assert first.returncode == 0, first.stderr
    second = run_python(code)
    assert second.returncode == 0, second.stderr
    before = json.loads(first.stdout.strip().splitlines()[-1])
    after = json.loads(second.stdout.strip().splitlines()[-1])
    assert before["restored"] == 0
    assert after["restored"] == 1  # s1, saved beside the disk cache by the first process
    assert after["reuse"]["prefix"] >= 64
