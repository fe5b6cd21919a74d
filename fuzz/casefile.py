"""Case files: the one artifact a counterexample leaves behind, and its deterministic replay.

Plain JSON with a schema version, independent of the Hypothesis version:
the target spec, the configuration (SGLang argument names), the case, and
the property it broke.  Replaying runs the same model code on the same
inputs, so the same file always prints the same story.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

from allocator_model.config import ConfigError, ServingConfig
from allocator_model.scenario import DecodeScenario, scenario_problem

from .targets import TargetError, resolve_target

SCHEMA = "kvrow-fuzz/case"
SCHEMA_VERSION = 1
DECODE_SCENARIO = "decode-scenario"


class CaseFileError(Exception):
    """A case file that cannot be read or does not describe a case."""


@dataclass
class Replay:
    reproduced: bool
    text: str


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def document(kind: str, target: str, violation, config, case: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The envelope every case file shares: schema, kind, target, what broke, the config and the case."""
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "target": target,
        **extra,
        "property": violation.prop,
        "signature": violation.signature,
        "config": config.to_dict(),
        "case": case,
        "message": violation.describe(),
    }


def decode_document(target: str, failure) -> dict[str, Any]:
    return document(DECODE_SCENARIO, target, failure.violation, failure.config, failure.case_json())


def write_atomically(path: str, text: str) -> None:
    """Write via a temporary file and rename: an interrupted run leaves no half-written case."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".case-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_document(doc: dict[str, Any], directory: str) -> str:
    """TARGET--SIGNATURE.json; kinds other than decode scenarios are named apart: TARGET--KIND--SIGNATURE.json."""
    kind = "" if doc["kind"] == DECODE_SCENARIO else f"{doc['kind']}--"
    path = os.path.join(directory, f"{slug(doc['target'])}--{kind}{slug(doc['signature'])}.json")
    write_atomically(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return path


def load_document(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise CaseFileError(f"case file {path} does not exist") from None
    except IsADirectoryError:
        raise CaseFileError(f"case file {path} is a directory") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CaseFileError(f"cannot read case file {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise CaseFileError(f"case file {path} is not valid JSON (line {e.lineno}: {e.msg})") from None
    return validate_document(doc, path)


def validate_document(doc: Any, where: str) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise CaseFileError(f"{where} is not a kvrow-fuzz case file (no \"schema\": \"{SCHEMA}\")")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise CaseFileError(f"{where} has schema_version {doc.get('schema_version')!r}; this tool reads {SCHEMA_VERSION}")
    for key in ("kind", "target", "property", "config", "case"):
        if key not in doc:
            raise CaseFileError(f"{where} is missing the field {key!r}")
    if isinstance(doc["kind"], str) and doc["kind"] not in REPLAYERS and doc["kind"] in REPLAYER_MODULES:
        importlib.import_module(REPLAYER_MODULES[doc["kind"]])  # registers its replayer in REPLAYERS
    if doc["kind"] not in REPLAYERS:
        raise CaseFileError(f"{where} has unknown kind {doc['kind']!r} (known: {', '.join(REPLAYERS)})")
    return doc


def decode_scenario_of(doc: dict[str, Any], where: str) -> DecodeScenario:
    try:
        cfg = ServingConfig.from_dict(doc["config"])
        return DecodeScenario.from_dict(cfg, doc["case"])
    except (ConfigError, TypeError) as e:
        raise CaseFileError(f"{where}: {e}") from None


def replay_decode(doc: dict[str, Any], where: str) -> Replay:
    from .harness import check_scenario  # the harness imports this module's writers

    scenario = decode_scenario_of(doc, where)
    try:
        target = resolve_target(doc["target"])
    except TargetError as e:
        raise CaseFileError(f"{where}: {e}") from None
    problem = scenario_problem(scenario, target.revision)
    if problem:
        raise CaseFileError(f"{where}: not a valid case for {target.spec}: {problem}")
    _, found = check_scenario(target, scenario)
    lines = [
        f"target: {target.spec}",
        f"config: {scenario.config.short()}",
        f"case:   {scenario.describe()}",
    ]
    same = [v for v in found if v.prop == doc["property"]]
    if same:
        lines.append(f"FAILS {same[0].signature}")
        lines.append(same[0].describe())
    else:
        lines.append(f"passes: {doc['property']} no longer fails on {target.spec}")
    for v in found:
        if v.prop != doc["property"]:
            lines.append(f"also fails {v.signature}: {v.headline}")
    return Replay(bool(same), "\n".join(lines))


# Replayers by case kind; the lifecycle (stateful) kind registers here too.
REPLAYERS: dict[str, Callable[[dict[str, Any], str], Replay]] = {DECODE_SCENARIO: replay_decode}
# Kinds whose module registers its replayer on import; imported the first time such a case is read.
REPLAYER_MODULES: dict[str, str] = {"lifecycle": "fuzz.lifecycle"}


def replay(path: str) -> Replay:
    doc = load_document(path)
    return REPLAYERS[doc["kind"]](doc, path)


def replay_document(doc: dict[str, Any], where: str = "the case") -> Replay:
    """Replay a case given as a dict (an emitted regression test embeds one)."""
    validate_document(doc, where)
    return REPLAYERS[doc["kind"]](doc, where)
