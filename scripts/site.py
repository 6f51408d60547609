#!/usr/bin/env python3
"""The pages of the documentation site: the landing page, getting-started pages and guides.

Renders the repository's markdown (docs/*.md, docs/getting-started/*.md and the packages'
READMEs) to HTML with the `markdown` package, rewrites links between them to the rendered
pages (a link to any other file of the repository becomes its path in code, since the
site has no copy of it), fills the landing page (docs/site/index.html) and copies the style
sheet. Then every link of every page written here must resolve inside the site: the API
reference directories (rust/, python/, node/, c/) must already be built (make docs builds
them first). Exits 1 listing each broken link.

Usage: site.py SITE_DIR
"""

from __future__ import annotations

import html
import re
import shutil
import sys
from pathlib import Path

import markdown

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "docs" / "site"

# repository file -> (site page, title shown in the navigation)
START = {
    "core/README.md": ("start/rust.html", "Rust"),
    "docs/getting-started/c.md": ("start/c.html", "C"),
    "docs/getting-started/python.md": ("start/python.html", "Python"),
    "docs/getting-started/node.md": ("start/node.html", "Node"),
}
PACKAGES = {
    "python/README.md": "guides/python-package.html",
    "node/README.md": "guides/node-package.html",
    "ffi/README.md": "guides/c-library.html",
    "examples/c/README.md": "guides/c-server.html",
    "sim/README.md": "guides/simulator.html",
    "tests/vectors/README.md": "guides/vectors.html",
    "README.md": "guides/overview.html",
    "CHANGELOG.md": "changelog.html",
}


def guides() -> dict[str, str]:
    return {f"docs/{p.name}": f"guides/{p.stem}.html" for p in sorted((ROOT / "docs").glob("*.md"))}


def slug(text: str, separator: str = "-") -> str:
    """Heading anchors as the links in the markdown spell them (GitHub's rule)."""
    text = re.sub(r"<[^>]+>", "", text)
    text = html.unescape(text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", separator)


def title_of(md_text: str, fallback: str) -> str:
    m = re.search(r"^# (.+)$", md_text, re.M)
    return m.group(1).strip() if m else fallback


def page(title: str, body: str, depth: int) -> str:
    up = "../" * depth
    nav = " · ".join(
        [f'<a href="{up}index.html">guards</a>']
        + [f'<a href="{up}{p}">{t}</a>' for p, t in START.values()]
        + [f'<a href="{up}index.html#api">API reference</a>', f'<a href="{up}index.html#guides">Guides</a>']
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · guards</title>
<link rel="stylesheet" href="{up}style.css"></head>
<body><header class="top"><nav>{nav}</nav></header>
<main class="doc">
{body}
</main></body></html>
"""


def rewrite_links(body: str, source: str, pages: dict[str, str], out_page: str) -> str:
    """Links between markdown files become links between pages; other files, their path."""
    src_dir = Path(source).parent
    depth = out_page.count("/")

    def fix(m: re.Match[str]) -> str:
        href, text = html.unescape(m.group(1)), m.group(2)
        if re.match(r"^[a-z]+:", href) or href.startswith("#"):
            return m.group(0)
        path, _, anchor = href.partition("#")
        target = (src_dir / path).as_posix() if path else source
        target = os_normpath(target)
        if target in pages:
            dest = "../" * depth + pages[target] + (f"#{anchor}" if anchor else "")
            return f'<a href="{html.escape(dest)}">{text}</a>'
        if (ROOT / target).exists():
            label = re.sub(r"<[^>]+>", "", text)
            if label in (target, href):
                return f"<code>{html.escape(target)}</code>"
            return f"{text} (<code>{html.escape(target)}</code>)"
        raise SystemExit(f"site: {source}: link to {href!r}: no such file in the repository")

    return re.sub(r'<a href="([^"]*)">(.*?)</a>', fix, body, flags=re.S)


def os_normpath(p: str) -> str:
    parts: list[str] = []
    for part in p.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/".join(parts)


def render_md(source: str, pages: dict[str, str]) -> tuple[str, str]:
    text = (ROOT / source).read_text()
    md = markdown.Markdown(extensions=["fenced_code", "tables", "toc", "sane_lists"],
                           extension_configs={"toc": {"slugify": slug}})
    body = md.convert(text)
    return title_of(text, source), rewrite_links(body, source, pages, pages[source])


def check_links(site: Path, written: list[Path]) -> list[str]:
    bad = []
    for f in written:
        for href in re.findall(r'href="([^"]+)"', f.read_text()):
            href = html.unescape(href)
            if re.match(r"^[a-z]+:", href):
                continue
            path, _, anchor = href.partition("#")
            target = (f.parent / path).resolve() if path else f
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                bad.append(f"{f.relative_to(site)}: {href}: no such page")
            elif anchor and target.suffix == ".html" and \
                    f'id="{anchor}"' not in target.read_text():
                bad.append(f"{f.relative_to(site)}: {href}: no such anchor")
    return bad


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    site = Path(argv[0])
    site.mkdir(parents=True, exist_ok=True)
    shutil.copy(SRC / "style.css", site / "style.css")
    pages = {**{k: v for k, (v, _) in START.items()}, **guides(), **PACKAGES}
    written = []
    titles = {}
    for source, out in pages.items():
        title, body = render_md(source, pages)
        titles[source] = title
        dest = site / out
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(page(title, body, out.count("/")))
        written.append(dest)

    def items(srcs: list[str]) -> str:
        return "\n".join(f'<li><a href="{pages[s]}">{html.escape(titles[s])}</a></li>' for s in srcs)

    landing = (SRC / "index.html").read_text()
    landing = landing.replace("<!-- guides -->", items(list(guides())))
    landing = landing.replace("<!-- packages -->", items([s for s in PACKAGES if s != "CHANGELOG.md"]))
    (site / "index.html").write_text(landing)
    written.append(site / "index.html")

    bad = check_links(site, written)
    for b in bad:
        print(f"site: broken link: {b}", file=sys.stderr)
    if bad:
        print(f"site: {len(bad)} broken links", file=sys.stderr)
        return 1
    print(f"site: wrote {len(written)} pages into {site}; every link resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
