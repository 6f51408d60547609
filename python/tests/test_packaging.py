"""Packaging: `maturin build` gives an abi3 wheel and an sdist; the wheel, installed into
a fresh virtualenv (what `pip install guards` does), imports and guards calls.

Slow (a release build, reusing the cargo target dir of `make python`, plus a venv):
marked ``slow``; it runs in `make test`. Skipped where maturin or the sources are absent
(an installed copy of the tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "python" / "Cargo.toml"

USE_IT = """
import asyncio, guards, guards.events
assert guards.__file__.startswith(PREFIX), guards.__file__
pool = guards.Bulkhead(max_concurrent=1)
breaker = guards.CircuitBreaker(window_size=2)

@guards.guarded(breaker, pool, fallback=lambda exc: type(exc).__name__)
def call(fail):
    if fail:
        raise ConnectionError("down")
    return "ok"

assert call(True) == "ConnectionError"
assert call(True) == "ConnectionError"
assert breaker.state == "open"
assert call(False) == "BreakerOpen"
assert pool.in_flight == 0
assert guards.guarded(pool)(lambda: "ok")() == "ok"

@guards.retry(max_attempts=2, backoff={"base": 1e-6, "cap": 1e-6})
async def flaky(box=[0]):
    box[0] += 1
    if box[0] == 1:
        raise TimeoutError
    return box[0]

assert asyncio.run(flaky()) == 2
print("guards", guards.__version__, "works")
"""


def _maturin() -> str:
    here = Path(sys.executable).parent / "maturin"
    found = str(here) if here.exists() else shutil.which("maturin")
    if found is None or not MANIFEST.exists():
        pytest.skip("needs maturin and the repository's sources")
    return found


@pytest.mark.slow
def test_wheel_and_sdist_build_and_the_wheel_works_in_a_fresh_venv(tmp_path: Path) -> None:
    maturin = _maturin()
    out = tmp_path / "dist"
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", str(ROOT / "target" / "maturin"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    build = subprocess.run(
        [maturin, "build", "--release", "--sdist", "-m", str(MANIFEST), "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    wheels = list(out.glob("guards-*.whl"))
    sdists = list(out.glob("guards-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    wheel, sdist = wheels[0], sdists[0]
    assert "-abi3-" in wheel.name
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    for module in ("__init__", "events", "httpx", "otel", "retry", "middleware", "testing"):
        assert f"guards/{module}.py" in names, module
    assert "guards/py.typed" in names and "guards/_guards.pyi" in names
    assert any(n.startswith("guards/_guards.") and n.endswith((".so", ".pyd")) for n in names)
    with tarfile.open(sdist) as t:
        members = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
    assert "pyproject.toml" in members
    assert "guards/events.py" in members
    assert any(m.startswith("core/src/") for m in members)  # the Rust core travels with it

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, symlinks=True)
    py = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    install = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-4000:]
    code = f"PREFIX = {str(env_dir)!r}\n" + USE_IT
    run = subprocess.run(
        [str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.strip().endswith("works")
