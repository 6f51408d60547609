"""The package surface: every exported name exists, the native module is private, the
stubs and the py.typed marker ship with it."""

from __future__ import annotations

import importlib.resources

import guards
import guards._guards as native


def test_every_name_in_all_exists() -> None:
    assert len(set(guards.__all__)) == len(guards.__all__)
    for name in guards.__all__:
        assert hasattr(guards, name), name


def test_every_native_name_is_reexported() -> None:
    for name in native.__all__:
        assert getattr(guards, name) is getattr(native, name), name


def test_classes_live_in_the_public_module() -> None:
    for name in native.__all__:
        obj = getattr(native, name)
        if isinstance(obj, type):
            assert obj.__module__ == "guards", name


def test_version_and_typing_files() -> None:
    assert isinstance(guards.__version__, str) and guards.__version__.count(".") == 2
    files = importlib.resources.files("guards")
    assert files.joinpath("py.typed").is_file()
    assert files.joinpath("_guards.pyi").is_file()


def test_priority_names() -> None:
    p = guards.Priority
    assert (p.CRITICAL_PLUS, p.CRITICAL, p.SHEDDABLE_PLUS, p.SHEDDABLE, p.COUNT) == (0, 1, 2, 3, 8)


def test_no_stray_names_in_the_namespace() -> None:
    """Every public name of `guards` is in `__all__`, or is one of its submodules."""
    import types

    stray = []
    for name in dir(guards):
        if name.startswith("_") or name in guards.__all__:
            continue
        value = getattr(guards, name)
        if isinstance(value, types.ModuleType) and value.__name__ == f"guards.{name}":
            continue  # a submodule (guards.context, guards.middleware, ...)
        stray.append(name)
    assert stray == []


def test_events_is_the_public_module() -> None:
    assert guards.events.__name__ == "guards.events"
    assert "events" in guards.__all__
