"""The documented install: `cmake --install build --component python` puts
a package that imports and runs without the build tree on the path (staged
under DESTDIR here, so that the test writes nothing outside its folder)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def install_dir(build: str) -> str:
    cache = Path(build, "CMakeCache.txt").read_text()
    m = re.search(r"^CLMCACHE_PYTHON_INSTALL_DIR:PATH=(.*)$", cache, re.M)
    assert m and m.group(1), "CLMCACHE_PYTHON_INSTALL_DIR is not set in the build"
    return m.group(1)


def test_the_installed_package_imports_and_generates(model_path, tmp_path):
    build = os.environ["CLMCACHE_BUILD_DIR"]
    env = dict(os.environ, DESTDIR=str(tmp_path))
    subprocess.run(["cmake", "--install", build, "--component", "python"], check=True, capture_output=True, env=env)
    site = Path(str(tmp_path) + install_dir(build))
    assert (site / "clmcache" / "__init__.py").is_file()
    assert any(site.glob("clmcache/_native*.so"))
    code = (
        "import clmcache; print(clmcache.__file__); "
        f"print(len(clmcache.Engine({model_path!r}).generate('Once', max_tokens=4, temperature=0).token_ids))"
    )
    run_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run_env["PYTHONPATH"] = str(site)
    done = subprocess.run([sys.executable, "-c", code], env=run_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    where, n = done.stdout.strip().splitlines()[-2:]
    assert Path(where).is_relative_to(site)
    assert int(n) > 0
