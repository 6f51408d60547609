#!/usr/bin/env python3
"""The Python API reference (pdoc), and the check that every public item is documented.

Walks the installed `guards` package as pdoc documents it (every public module, the names
in each module's `__all__` or its public names, each public class's own public methods,
properties and attributes; types from the `.pyi` stubs where a module has one) and lists
each item without a docstring. With an output directory it then renders the package with
pdoc; any warning pdoc emits fails the run too.

Usage:
  py_api_doc.py --check     check only
  py_api_doc.py OUT_DIR     check, then write the HTML into OUT_DIR

Run with the project's venv (`make docs-python`, `make docs-check`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import textwrap
import warnings
from unittest import mock
from pathlib import Path

import pdoc
import pdoc.doc
import pdoc.doc_pyi
import pdoc.render

PACKAGE = "guards"


def public_modules() -> list[str]:
    """The package and every module under it whose dotted name has no `_` part.

    (pdoc's own walk follows a package's `__all__`, which lists names, not submodules.)
    """
    import importlib
    import pkgutil

    pkg = importlib.import_module(PACKAGE)
    names = [PACKAGE]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=PACKAGE + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def with_native_stubs(mod: pdoc.doc.Module) -> pdoc.doc.Module:
    """The native classes and functions (of `guards._guards`) are documented where they
    are re-exported (`guards`, `guards.sim`), their stubs are `guards/_guards.pyi`: give
    those members the stub's signatures, annotations and docstrings, as pdoc gives a
    module those of its own `.pyi` file."""
    stub_file = pdoc.doc_pyi.find_stub_file(f"{PACKAGE}._guards")
    if stub_file is None:
        raise SystemExit("py_api_doc: guards/_guards.pyi not found")
    # What pdoc does for a module's own stub file, with the stub standing in for `guards`.
    native = importlib.import_module(f"{PACKAGE}._guards")
    stub = pdoc.doc_pyi._import_stub_file(PACKAGE, stub_file)
    del stub.__all__  # every stubbed name, also those only `guards.sim` re-exports
    pdoc.doc_pyi._prepare_module(mod)
    stub_doc = pdoc.doc.Module(stub)
    with mock.patch.dict("sys.modules", {PACKAGE: stub}):
        for member in mod.members.values():
            value = member.default_value if isinstance(member, pdoc.doc.Variable) else member.obj
            if member.name in stub_doc.members and getattr(native, member.name, None) is value:
                pdoc.doc_pyi._patch_doc(member, stub_doc)
    return mod


def hash_colon_comments(source: str) -> dict[str, str]:
    """`#:` lines just above an assignment in `source` (a module, or a class and the
    `self.name = ...` of its `__init__`), by the name assigned."""
    lines = source.splitlines()
    found: dict[str, str] = {}
    tree = ast.parse(source)
    body = tree.body[0].body if len(tree.body) == 1 and isinstance(tree.body[0], ast.ClassDef) \
        else tree.body
    inits = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    for node in body + [n for f in inits for n in ast.walk(f)]:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets_of = node.targets if isinstance(node, ast.Assign) else [node.target]
            attrs = [t.attr for t in targets_of if isinstance(t, ast.Attribute)
                     and isinstance(t.value, ast.Name) and t.value.id == "self"]
        else:
            attrs = []
        if attrs:
            targets = attrs
        elif isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            continue
        comment: list[str] = []
        i = node.lineno - 2
        while i >= 0 and lines[i].strip().startswith("#:"):
            comment.insert(0, lines[i].strip()[2:].strip())
            i -= 1
        for t in targets:
            if comment:
                found[t] = "\n".join(comment)
    return found


def comment_docs(mod: pdoc.doc.Module) -> None:
    """Variables documented the Sphinx way, by `#:` lines just above the assignment (this
    package's convention), get those lines as their docstring (pdoc reads only a string
    after the assignment)."""
    scopes: list[tuple[pdoc.doc.Namespace, object]] = [(mod, mod.obj)]
    scopes += [(m, m.obj) for m in mod.members.values() if isinstance(m, pdoc.doc.Class)]
    for ns, obj in scopes:
        try:
            source = textwrap.dedent(inspect.getsource(obj))  # type: ignore[arg-type]
        except (OSError, TypeError):
            continue
        for name, text in hash_colon_comments(source).items():
            doc = ns.members.get(name)
            if isinstance(doc, pdoc.doc.Variable) and not doc.docstring.strip():
                doc.docstring = text


def reexported_docs(modules: dict[str, pdoc.doc.Module]) -> None:
    """A module-level value re-exported by another module (`from .context import *`) keeps
    the docstring it has where it is defined."""
    by_value: dict[tuple[str, int], str] = {}
    for mod in modules.values():
        for name, var in mod.members.items():
            if isinstance(var, pdoc.doc.Variable) and var.docstring.strip():
                by_value[(name, id(var.default_value))] = var.docstring
    for mod in modules.values():
        for name, var in mod.members.items():
            if isinstance(var, pdoc.doc.Variable) and not var.docstring.strip():
                text = by_value.get((name, id(var.default_value)))
                if text:
                    var.docstring = text


def is_public(doc: pdoc.doc.Doc, module: pdoc.doc.Module) -> bool:
    """pdoc's own rule (its template's is_public), without the undocumented filter."""
    docstring = doc.docstring
    if "@private" in docstring:
        return False
    if "@public" in docstring:
        return True
    name = doc.name
    if name in ("__init__", "__doc__"):
        return False  # a constructor is documented by its class
    if isinstance(doc, pdoc.doc.Variable) and doc.is_typevar:
        return False
    if (doc.qualname or name) in (getattr(module.obj, "__all__", None) or []):
        return True
    return not name.startswith("_")


def undocumented(modules: dict[str, pdoc.doc.Module]) -> tuple[list[str], int]:
    """Each public item without a docstring, once (a re-exported item is listed where it
    is defined), and how many public items there are."""
    missing: list[str] = []
    done: set[tuple[str, str]] = set()
    seen = 0

    def count(doc: pdoc.doc.Doc, label: str) -> bool:
        nonlocal seen
        if doc.taken_from in done:
            return False
        done.add(doc.taken_from)
        seen += 1
        if not doc.docstring.strip():
            missing.append(f"{doc.kind} {label}")
        return True

    for name, mod in modules.items():
        seen += 1
        if not mod.docstring.strip():
            missing.append(f"module {name}")
        for member in mod.members.values():
            if not is_public(member, mod):
                continue
            if isinstance(member, pdoc.doc.Module):
                continue  # documented as a module of its own
            if not count(member, f"{name}.{member.qualname}"):
                continue
            if isinstance(member, pdoc.doc.Class):
                for sub in member.own_members:
                    if is_public(sub, mod):
                        count(sub, f"{name}.{sub.qualname}")
    return missing, seen


def render(modules: dict[str, pdoc.doc.Module], out: Path, version: str) -> None:
    """Every module's page, the index and the search index, as pdoc lays them out."""
    pdoc.render.configure(docformat="restructuredtext", show_source=False,
                          footer_text=f"guards {version}")
    for mod in modules.values():
        page = out / f"{mod.fullname.replace('.', '/')}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(pdoc.render.html_module(mod, modules))
    (out / "index.html").write_text(pdoc.render.html_index(modules))
    (out / "search.js").write_text(pdoc.render.search_index(modules))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    caught: list[warnings.WarningMessage] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        modules = {name: pdoc.doc.Module.from_name(name) for name in public_modules()}
        for mod in modules.values():
            with_native_stubs(mod)
        for mod in modules.values():
            comment_docs(mod)
        reexported_docs(modules)
        missing, seen = undocumented(modules)
        if not missing and argv[0] != "--check":
            render(modules, Path(argv[0]), modules[PACKAGE].obj.__version__)
    for m in missing:
        print(f"py_api_doc: no docstring: {m}", file=sys.stderr)
    for w in caught:
        print(f"py_api_doc: warning: {w.filename}:{w.lineno}: {w.message}", file=sys.stderr)
    if missing or caught:
        print(f"py_api_doc: {len(missing)} undocumented of {seen} public items, "
              f"{len(caught)} warnings", file=sys.stderr)
        return 1
    what = "checked" if argv[0] == "--check" else f"wrote {argv[0]}"
    print(f"py_api_doc: {seen} public items in {len(modules)} modules documented; {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
