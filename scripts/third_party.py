#!/usr/bin/env python3
"""Writes the third-party notice of one artefact: the crates compiled into the binary of
the given workspace package (normal dependencies for this host's target, proc-macros and
build scripts left out since no code of theirs ships), each with its licence from
`cargo metadata`, plus Rust's standard library, which is linked statically too.

usage: scripts/third_party.py PACKAGE [ARTEFACT-NAME] > LICENSE-THIRD-PARTY.md
"""

import json
import pathlib
import re
import subprocess
import sys


def host_triple() -> str:
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def main() -> int:
    root_name = sys.argv[1]
    artefact = sys.argv[2] if len(sys.argv) > 2 else root_name
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked",
             "--filter-platform", host_triple()],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    pkgs = {p["id"]: p for p in meta["packages"]}
    members = set(meta["workspace_members"])
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    roots = [i for i in members if pkgs[i]["name"] == root_name]
    if not roots:
        print(f"third_party.py: no workspace package {root_name!r}", file=sys.stderr)
        return 2

    def is_proc_macro(pid: str) -> bool:
        return any("proc-macro" in t["kind"] for t in pkgs[pid]["targets"])

    seen, stack = set(), list(roots)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            if not any(k["kind"] is None for k in dep["dep_kinds"]):
                continue  # dev- or build-dependency only
            if is_proc_macro(dep["pkg"]):
                continue  # runs in the compiler; none of its code is in the binary
            stack.append(dep["pkg"])

    own = sorted(pkgs[i]["name"] for i in seen if i in members)
    third = sorted((pkgs[i] for i in seen if i not in members), key=lambda p: p["name"])
    print(f"# Third-party software in {artefact}\n")
    print("This artefact is built from the guards workspace crates "
          f"({', '.join(own)}; licence MIT OR Apache-2.0, see LICENSE-MIT and LICENSE-APACHE) "
          "and contains, compiled in, the following Rust crates and Rust's standard library. "
          "Each is used under the licence named here (where a choice is offered, any of the "
          "options; the texts of MIT and Apache-2.0 are the ones shipped beside this file).\n")
    print("| crate | version | licence | source |")
    print("|---|---|---|---|")
    for p in third:
        lic = p.get("license") or (f"see {p['license_file']}" if p.get("license_file") else "unknown")
        src = p.get("repository") or "https://crates.io/crates/" + p["name"]
        print(f"| {p['name']} | {p['version']} | {lic} | {src} |")
    rustc = subprocess.run(["rustc", "--version"], check=True, capture_output=True, text=True).stdout.strip()
    print(f"| Rust standard library (std, core, alloc; {rustc}) | - | MIT OR Apache-2.0 | "
          "https://github.com/rust-lang/rust |")
    # The crates' own licence files (their copyright lines are part of what MIT, BSD and
    # Zlib ask to be kept), as each crate ships them.
    print("\n## Licence files of the crates above\n")
    missing, texts = [], {}
    for p in third:
        crate_dir = pathlib.Path(p["manifest_path"]).parent
        files = sorted(f for f in crate_dir.iterdir()
                       if f.is_file() and re.match(r"(?i)^(licen[cs]e|copying|unlicense|notice)", f.name))
        if not files:
            missing.append(p["name"])
        for f in files:
            text = f.read_text(errors="replace").rstrip()
            texts.setdefault(text, []).append(f"{p['name']} {p['version']} ({f.name})")
    for text, owners in texts.items():
        print("### " + ", ".join(owners) + "\n")
        print("```text")
        print(text)
        print("```\n")
    if missing:
        print("(no licence file shipped in the crate itself for: " + ", ".join(missing)
              + "; their licence is the SPDX expression in the table above)")
    unknown = [p["name"] for p in third if not p.get("license")]
    if unknown:
        print(f"third_party.py: no SPDX licence for {unknown}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
