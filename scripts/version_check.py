#!/usr/bin/env python3
"""Every artefact's version must be the workspace's one (`[workspace.package] version`).

Checks the sources (every crate's Cargo.toml, python/pyproject.toml, node/package.json and
its lock file, the Makefile's GUARDS_VERSION, CHANGELOG.md) and then every artefact this
tree has built (the C library's guards_version(), guards.pc from `make install`, the Python
package's guards.__version__, the Node addon's version). An artefact not built yet is
listed as skipped; with --built, a skipped one is an error.

Usage: python3 scripts/version_check.py [--built]
"""

from __future__ import annotations

import ctypes
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def workspace_version() -> str:
    data = tomllib.loads((ROOT / "Cargo.toml").read_text())
    return str(data["workspace"]["package"]["version"])


def crate_versions(errors: list[str], want: str) -> None:
    """Each member crate inherits the version (or states the same one)."""
    ws = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]
    for member in ws["members"]:
        manifest = ROOT / member / "Cargo.toml"
        pkg = tomllib.loads(manifest.read_text())["package"]
        v = pkg.get("version")
        if v == {"workspace": True} or v == want:
            continue
        errors.append(f"{member}/Cargo.toml: version {v!r}, expected version.workspace = true")


def source_versions(errors: list[str], want: str) -> list[str]:
    checked = []
    crate_versions(errors, want)
    checked.append("crates")

    py = tomllib.loads((ROOT / "python/pyproject.toml").read_text())["project"]
    if "version" in py:
        errors.append(f"python/pyproject.toml: a static version {py['version']!r}; use dynamic")
    elif "version" not in py.get("dynamic", []):
        errors.append('python/pyproject.toml: "version" is not in project.dynamic')
    checked.append("pyproject (dynamic, from Cargo)")

    pkg = json.loads((ROOT / "node/package.json").read_text())
    if pkg.get("version") != want:
        errors.append(f"node/package.json: version {pkg.get('version')!r}, expected {want!r}")
    lock = json.loads((ROOT / "node/package-lock.json").read_text())
    for where, v in (("version", lock.get("version")),
                     ('packages[""].version', lock.get("packages", {}).get("", {}).get("version"))):
        if v != want:
            errors.append(f"node/package-lock.json: {where} {v!r}, expected {want!r}")
    checked.append("package.json")

    make = subprocess.run(["make", "-s", "-C", str(ROOT), "--no-print-directory", "print-version"],
                          capture_output=True, text=True)
    if make.returncode != 0 or make.stdout.strip() != want:
        errors.append(f"Makefile: GUARDS_VERSION is {make.stdout.strip()!r} ({make.stderr.strip()})"
                      f", expected {want!r}")
    checked.append("Makefile GUARDS_VERSION")

    changelog = (ROOT / "CHANGELOG.md").read_text()
    if not re.search(rf"^## \[{re.escape(want)}\]", changelog, re.M):
        errors.append(f"CHANGELOG.md: no '## [{want}]' section")
    checked.append("CHANGELOG")
    return checked


def built_versions(errors: list[str], want: str) -> tuple[list[str], list[str]]:
    checked, skipped = [], []

    lib = ROOT / "target/release/libguards.so"
    if lib.exists():
        so = ctypes.CDLL(str(lib))
        so.guards_version.restype = ctypes.c_char_p
        got = so.guards_version().decode()
        if got != want:
            errors.append(f"{lib.relative_to(ROOT)}: guards_version() is {got!r}")
        checked.append("libguards.so guards_version()")
    else:
        skipped.append("libguards.so (make ffi-lib)")

    pc = ROOT / "target/install-test/lib/pkgconfig/guards.pc"
    if pc.exists():
        m = re.search(r"^Version:\s*(\S+)", pc.read_text(), re.M)
        got = m.group(1) if m else None
        if got != want:
            errors.append(f"{pc.relative_to(ROOT)}: Version {got!r}")
        checked.append("guards.pc")
    else:
        skipped.append("guards.pc (make test-c-install)")

    vpy = ROOT / ".venv/bin/python"
    probe = "import guards, guards._guards as n; print(guards.__version__, n.__version__)"
    r = subprocess.run([str(vpy), "-c", probe], capture_output=True, text=True) if vpy.exists() else None
    if r is not None and r.returncode == 0:
        for got in r.stdout.split():
            if got != want:
                errors.append(f"python: guards.__version__ / guards._guards.__version__ is {got!r}")
        meta = subprocess.run([str(vpy), "-c", "import importlib.metadata as m; print(m.version('guards'))"],
                              capture_output=True, text=True)
        if meta.stdout.strip() != want:
            errors.append(f"python: the installed distribution's version is {meta.stdout.strip()!r}")
        checked.append("python guards.__version__ + dist metadata")
    else:
        skipped.append("python package (make python)")

    if (ROOT / "node/guards.node").exists():
        r = subprocess.run(["node", "-e", "process.stdout.write(require('./').version)"],
                           cwd=ROOT / "node", capture_output=True, text=True)
        if r.returncode != 0 or r.stdout != want:
            errors.append(f"node: require('guards').version is {r.stdout!r} {r.stderr.strip()}")
        checked.append("node require('guards').version")
    else:
        skipped.append("node addon (make node)")
    return checked, skipped


def main() -> int:
    want = workspace_version()
    errors: list[str] = []
    checked = source_versions(errors, want)
    built, skipped = built_versions(errors, want)
    checked += built
    if "--built" in sys.argv[1:]:
        errors += [f"not built: {s}" for s in skipped]
    for e in errors:
        print(f"version-check: {e}", file=sys.stderr)
    if errors:
        print(f"version-check: FAILED ({len(errors)} mismatches against {want})", file=sys.stderr)
        return 1
    note = f"; skipped (not built): {', '.join(skipped)}" if skipped else ""
    print(f"version-check: {want} everywhere ({', '.join(checked)}){note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
