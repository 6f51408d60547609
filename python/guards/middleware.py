"""Placeholder: the Pythonic layer (py-layer) provides this module."""

from __future__ import annotations

__all__: list[str] = []
