"""Checked tables: an engine's per-request tables, declared once each, and the checks judged on them.

``Table`` (``declared.py``) declares one; ``Access`` (``observe.py``) is what
an execution did to it; ``judge`` (``checks.py``) is the generic verdict.
"""

from .checks import Breach, judge
from .declared import CodeRef, Layout, Table, Width, declare_table, rule_text, table, tables
from .observe import GUARD, Access, AccessKind, Span

__all__ = [
    "GUARD",
    "Access",
    "AccessKind",
    "Breach",
    "CodeRef",
    "Layout",
    "Span",
    "Table",
    "Width",
    "declare_table",
    "judge",
    "rule_text",
    "table",
    "tables",
]
