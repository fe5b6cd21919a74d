"""A release's ``ServerArgs`` fields as it declares them, and a launch line's flags read against them.

The fields are read from the release's text (each ``name: A[T, ...] = default``
of the namespace classes, 0.5.19+, or of ``ServerArgs``; plain dataclass
fields to 0.5.14), never imported: the flag's value type, whether a flag sets
it at all (``Arg(no_cli=True)``: none does), and its default where that is a
literal.  ``parse_flags`` turns a line's flags into field values the way
argparse would, refusing in argparse's words.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fuzz.targets.base import TargetError

from .tree import SourceTree

SERVER_ARGS = "sglang/srt/server_args.py"
FIELDS_PACKAGE = "sglang.srt.arg_groups.fields."  # 0.5.19+: one namespace class per module


@dataclass(frozen=True)
class Field:
    """A ``ServerArgs`` field as the release declares it: its flag's value type and its literal default."""

    name: str
    kind: str  # "bool" (a store_true flag), "int", "float" or "str"
    default: Any
    literal: bool  # the default is a literal (else unpublished: reading it stops the check)
    cli: bool = True  # a flag sets it (``Arg(no_cli=True)``: none does)


def field_members(tree: SourceTree) -> list[str]:
    """The files ServerArgs takes its fields from: the namespace modules ``server_args.py`` imports, or itself."""
    source = tree.read(SERVER_ARGS)
    if source is None:
        raise TargetError(f"{tree.origin} has no {SERVER_ARGS}")
    modules = [
        n.module
        for n in ast.parse(source).body
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith(FIELDS_PACKAGE)
    ]
    return [m.replace(".", "/") + ".py" for m in dict.fromkeys(modules)] or [SERVER_ARGS]


def declared_fields(tree: SourceTree) -> dict[str, Field]:
    """Every ``name: A[T, ...] = default`` of the release's ServerArgs namespaces (the class bodies)."""
    members = field_members(tree)
    fields: dict[str, Field] = {}
    for member in members:
        source = tree.read(member)
        if source is None:
            raise TargetError(f"{tree.origin} has no {member}")
        for cls in (n for n in ast.parse(source).body if isinstance(n, ast.ClassDef)):
            if member == SERVER_ARGS and cls.name != "ServerArgs":
                continue
            for st in cls.body:
                plain = member == SERVER_ARGS  # 0.5.13-0.5.14 declare plain dataclass fields, no ``A[...]``
                if (
                    isinstance(st, ast.AnnAssign)
                    and isinstance(st.target, ast.Name)
                    and (_declares(st.annotation) or plain and not st.target.id.startswith("_"))
                ):
                    try:  # no default: a required field (model_path), which the line sets
                        default, literal = (ast.literal_eval(st.value), True) if st.value is not None else (None, False)
                    except ValueError:
                        default, literal = None, False
                    fields[st.target.id] = Field(
                        st.target.id, _kind(st.annotation), default, literal, cli=not _no_cli(st.annotation)
                    )
    if not fields:
        raise TargetError(f"{tree.origin}: no ServerArgs field declarations found in {', '.join(members)}")
    return fields


def _declares(annotation: ast.expr) -> bool:
    """``A[...]``: a field of the record (not a ClassVar or a bookkeeping annotation)."""
    return isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) == "A"


def _no_cli(annotation: ast.expr) -> bool:
    """``A[T, Arg(no_cli=True)]``: a field with no command-line flag."""
    return any(
        isinstance(node, ast.keyword) and node.arg == "no_cli" and ast.unparse(node.value) == "True"
        for node in ast.walk(annotation)
    )


def _kind(annotation: ast.expr) -> str:
    """The value type of ``A[T, ...]`` (``Optional[T]`` unwrapped): what argparse converts the flag's text to."""
    inner = (
        annotation.slice.elts[0]
        if isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple)
        else annotation
    )
    text = ast.unparse(inner)
    for kind in ("bool", "int", "float"):
        if text in (kind, f"Optional[{kind}]", f"{kind} | None"):
            return kind
    return "str"


class BadLine(Exception):
    """A flag the release's parser refuses, in argparse's words."""


def parse_flags(fields: Mapping[str, Field], flags: Sequence[str]) -> dict[str, Any]:
    """The flags as field values (``--page-size 16`` -> ``page_size=16``); BadLine where argparse refuses."""
    values: dict[str, Any] = {}
    it = iter(flags)
    for flag in it:
        name = flag.removeprefix("--").replace("-", "_")
        field = fields.get(name)
        if not flag.startswith("--") or field is None or not field.cli:
            raise BadLine(f"unrecognized arguments: {flag}")
        if field.kind == "bool":
            values[name] = True
            continue
        text = next(it, None)
        if text is None:
            raise BadLine(f"argument {flag}: expected one argument")
        try:
            values[name] = {"int": int, "float": float, "str": str}[field.kind](text)
        except ValueError:
            raise BadLine(f"argument {flag}: invalid {field.kind} value: {text!r}") from None
    return values
