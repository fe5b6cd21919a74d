"""The published JSON schemas of reports and case files, and validation against them (``jsonschema``).

``report.schema.json``, ``case.schema.json``, ``finding.schema.json`` and
``baseline.schema.json`` (version 2: root-cause identities) sit
beside this module; a repository consuming our reports or case files can
validate them the same way.  ``jsonschema`` is a test dependency: the tool
itself never needs it at run time.
"""

from __future__ import annotations

import json
import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = {name: os.path.join(HERE, f"{name}.schema.json") for name in ("report", "case", "finding", "baseline")}


def load_schema(name: str) -> dict[str, Any]:
    with open(SCHEMAS[name]) as f:
        schema: dict[str, Any] = json.load(f)
    return schema


def validator(name: str) -> Any:
    """A ``jsonschema`` validator of the named schema, resolving the references between our schema files."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    schemas = {n: load_schema(n) for n in SCHEMAS}
    registry = Registry().with_resources((schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())
    return Draft202012Validator(schemas[name], registry=registry)


def validate(name: str, document: Any) -> None:
    """Raise ``jsonschema.ValidationError`` if ``document`` does not follow the named schema."""
    validator(name).validate(document)
