#!/usr/bin/env python3
"""The C API reference: one HTML page from include/guards.h's doc comments.

cbindgen writes every doc comment of ffi/src/c/ into the header as a `/** ... */` block
before the item. This script reads the header, checks that every exported item (constant,
enum and each of its values, struct and each of its fields, opaque type, function) has such
a comment and that every name is prefixed `guards_` / `GUARDS_` (an unprefixed macro would
clash with the user's other headers), and writes one HTML page.

Usage:
  c_api_doc.py HEADER --check            check only
  c_api_doc.py HEADER OUT.html [--css URL]  check, then write the page

Exits 1, listing each item, when an item has no comment or an unprefixed name.
"""

from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Member:
    name: str
    decl: str
    doc: str


@dataclass
class Item:
    kind: str  # constant, enum, struct, opaque, function
    name: str
    decl: str
    doc: str
    line: int
    members: list[Member] = field(default_factory=list)


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def comment_text(lines: list[str]) -> str:
    """The text of a `/** ... */` block, without the comment marks."""
    out = []
    for raw in lines:
        s = raw.strip()
        if s.startswith("/**"):
            s = s[3:]
        if s.endswith("*/"):
            s = s[:-2]
        s = s.rstrip()
        if s.startswith("* "):
            s = s[2:]
        elif s.strip() == "*":
            s = ""
        elif s.startswith(" * "):
            s = s[3:]
        out.append(s)
    return "\n".join(out).strip("\n")


def parse(text: str) -> list[Item]:
    lines = text.split("\n")
    items: list[Item] = []
    doc: str | None = None
    i = 0

    def take_comment(j: int) -> tuple[str, int]:
        block = []
        while True:
            block.append(lines[j])
            if lines[j].rstrip().endswith("*/"):
                return comment_text(block), j + 1
            j += 1

    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith("/**"):
            doc, i = take_comment(i)
            continue
        if s.startswith("/*"):  # the file's banner: not a doc comment
            while not lines[i].rstrip().endswith("*/"):
                i += 1
            i += 1
            continue
        if not s or s.startswith(("#if", "#else", "#endif", "#include", "extern \"C\"", "}  //")):
            i += 1
            continue
        if s.startswith("#define"):
            parts = s.split(None, 2)
            name = parts[1]
            if name != "GUARDS_H":
                items.append(Item("constant", name, s, doc or "", i + 1))
            doc = None
            i += 1
            continue
        if s.startswith("typedef enum ") or s.startswith("typedef uint32_t "):
            i += 1  # the C spelling of an enum already read
            continue
        m = re.match(r"enum (\w+)$", s)
        if m:
            item = Item("enum", m.group(1), f"enum {m.group(1)}", doc or "", i + 1)
            doc = None
            while not lines[i].strip().endswith("{"):
                i += 1
            i += 1
            mdoc = ""
            while lines[i].strip() != "};":
                t = lines[i].strip()
                if t.startswith("/**"):
                    mdoc, i = take_comment(i)
                    continue
                if t:
                    name = IDENT.match(t)
                    assert name, t
                    item.members.append(Member(name.group(0), t.rstrip(","), mdoc))
                    mdoc = ""
                i += 1
            items.append(item)
            i += 1
            continue
        m = re.match(r"typedef struct (\w+) (\w+);$", s)
        if m:
            items.append(Item("opaque", m.group(2), s, doc or "", i + 1))
            doc = None
            i += 1
            continue
        m = re.match(r"typedef struct (\w+) \{$", s)
        if m:
            item = Item("struct", m.group(1), f"typedef struct {m.group(1)} {{ ... }} {m.group(1)};",
                        doc or "", i + 1)
            doc = None
            i += 1
            mdoc = ""
            while not lines[i].startswith("}"):
                t = lines[i].strip()
                if t.startswith("/**"):
                    mdoc, i = take_comment(i)
                    continue
                if t:
                    fname = re.search(r"(\w+)(\[[^\]]*\])?;$", t)
                    assert fname, t
                    item.members.append(Member(fname.group(1), t, mdoc))
                    mdoc = ""
                i += 1
            items.append(item)
            i += 1
            continue
        # a function prototype, possibly over several lines
        start = i
        decl = [s]
        while not decl[-1].endswith(";"):
            i += 1
            decl.append(lines[i].strip())
        proto = " ".join(decl)
        m = re.search(r"(\w+)\(", proto)
        if not m:
            raise SystemExit(f"c_api_doc: line {start + 1}: cannot read {proto!r}")
        items.append(Item("function", m.group(1), proto, doc or "", start + 1))
        doc = None
        i += 1
    return items


def problems(items: list[Item]) -> list[str]:
    out = []
    for it in items:
        prefix = "GUARDS_" if it.kind == "constant" else "guards_"
        if not it.name.startswith(prefix):
            out.append(f"line {it.line}: {it.kind} {it.name} is not prefixed {prefix}")
        if not it.doc.strip():
            out.append(f"line {it.line}: {it.kind} {it.name} has no doc comment")
        for mem in it.members:
            if it.kind == "enum" and not mem.name.startswith("GUARDS_"):
                out.append(f"line {it.line}: {it.name}::{mem.name} is not prefixed GUARDS_")
            if not mem.doc.strip():
                out.append(f"line {it.line}: {it.name}.{mem.name} has no doc comment")
    return out


def md(text: str) -> str:
    import markdown  # the docs venv has it (make docs)

    # rustdoc's section headings (`# Safety`) become small headings inside an item
    text = re.sub(r"^# ", "##### ", text, flags=re.M)
    return markdown.markdown(text, extensions=["fenced_code", "tables"])


def render(items: list[Item], css: str) -> str:
    types = {it.name for it in items if it.kind in ("opaque", "struct")}
    groups: dict[str, list[Item]] = {}
    order = ["constant", "enum", "struct", "opaque"]
    for it in items:
        if it.kind == "function":
            # a function belongs to the longest handle type its name starts with
            owner = max((t for t in types if it.name.startswith(t + "_")), key=len, default="")
            groups.setdefault(owner or "other functions", []).append(it)
    titles = {"constant": "Constants", "enum": "Enumerations", "struct": "Structures",
              "opaque": "Opaque handles"}
    esc = html.escape
    toc, body = [], []
    for kind in order:
        sel = [it for it in items if it.kind == kind]
        toc.append(f'<li><a href="#{kind}s">{titles[kind]}</a> ({len(sel)})</li>')
        body.append(f'<h2 id="{kind}s">{titles[kind]}</h2>')
        for it in sel:
            body.append(item_html(it))
    toc.append('<li><a href="#functions">Functions</a><ul>')
    body.append('<h2 id="functions">Functions</h2>')
    for owner in sorted(groups, key=lambda g: (g == "other functions", g)):
        gid = "fn-" + owner.replace(" ", "-")
        toc.append(f'<li><a href="#{gid}">{esc(owner)}</a> ({len(groups[owner])})</li>')
        body.append(f'<h3 id="{gid}">{esc(owner)}</h3>')
        body.extend(item_html(it) for it in groups[owner])
    toc.append("</ul></li>")
    n = sum(1 for it in items if it.kind == "function")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>guards.h: the C API</title><link rel="stylesheet" href="{esc(css)}"></head>
<body><main class="api">
<p><a href="../index.html">guards documentation</a></p>
<h1>guards.h: the C API</h1>
<p>Generated from the doc comments of <code>include/guards.h</code> (which cbindgen writes
from <code>ffi/src/c/</code>): {n} functions, {len(items) - n} constants and types.
Link with <code>pkg-config --cflags --libs guards</code>.</p>
<nav><ul>{''.join(toc)}</ul></nav>
{''.join(body)}
</main></body></html>
"""


def item_html(it: Item) -> str:
    esc = html.escape
    out = [f'<section class="item" id="{esc(it.name)}"><h4><a href="#{esc(it.name)}">'
           f'{esc(it.name)}</a></h4><pre><code>{esc(it.decl)}</code></pre>{md(it.doc)}']
    if it.members:
        out.append('<table class="members"><tbody>')
        for mem in it.members:
            out.append(f"<tr><td><code>{esc(mem.decl)}</code></td><td>{md(mem.doc)}</td></tr>")
        out.append("</tbody></table>")
    out.append("</section>")
    return "".join(out)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    header = Path(argv[0])
    items = parse(header.read_text())
    errs = problems(items)
    for e in errs:
        print(f"c_api_doc: {header}: {e}", file=sys.stderr)
    if errs:
        print(f"c_api_doc: {len(errs)} problems", file=sys.stderr)
        return 1
    counts = {k: sum(1 for it in items if it.kind == k) for k in
              ("function", "constant", "enum", "struct", "opaque")}
    if argv[1] == "--check":
        print(f"c_api_doc: every item of {header} documented {counts}")
        return 0
    css = argv[argv.index("--css") + 1] if "--css" in argv else "../style.css"
    out = Path(argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(items, css))
    print(f"c_api_doc: wrote {out} {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
