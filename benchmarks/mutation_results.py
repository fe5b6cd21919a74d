"""The mutation benchmark's verdicts on disk: JSON lines, appended and fsynced as each comes, read back to resume.

A line is a base (``{"kind": "base", "shape", "base", "with_plugin", ...}``: its
groups, causes and baseline) or a mutant (``{"kind": "mutant", "shape",
"base", "key", "name", "with_plugin", "outcome", ...}``). ``base`` and ``key``
are digests of the base's and the mutant's source, so a line recorded on
another base (another wheel, another main shape) is never taken for this
one; ``with_plugin`` says whether the plugin line was judged too (a verdict
without it does not answer a run with it). A line that does not parse (a
run killed mid-write) is skipped and judged again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mutator import Mutant

# What an ``equivalent`` record written now means: 2, its proofs found no group the base's does not, and none
# with more configurations or a worse overflow (``mutation_verdicts.changed``); 1 (an earlier version's), no
# group the base's does not.
EQUIVALENCE = 2

ENTRIES = ("run ci", "plugin")  # the quick verdicts judged
GROUP = "group"  # killed by a new bug group only: without the baseline, not with it (``mutation_verdicts.killed_by``)
BASE_FIELDS = ("proof counts", "run ci", "plugin fails", "plugin groups")  # a base record's, the plugin line's last


def digest(source: str) -> str:
    """A base's or a mutant's key: the first 16 hex digits of its source's SHA-256."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


@dataclass
class Results:
    path: Path
    bases: dict[tuple[str, str, bool], dict[str, Any]] = field(default_factory=dict)
    mutants: dict[tuple[str, str, bool], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path) -> Results:
        r = cls(path)
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    d = json.loads(line)
                    r._take(d)
                except (ValueError, KeyError, TypeError):
                    continue
        return r

    def _take(self, d: dict[str, Any]) -> None:
        if d["kind"] == "base":
            self.bases[(d["shape"], d["base"], bool(d["with_plugin"]))] = d
        elif d["kind"] == "mutant":
            self.mutants[(d["base"], d["key"], bool(d["with_plugin"]))] = d

    def _append(self, d: dict[str, Any]) -> dict[str, Any]:
        self._take(d)
        with self.path.open("a") as f:
            f.write(json.dumps(d, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return d

    def base(self, shape: str, key: str, plugin: bool) -> dict[str, Any] | None:
        """The base's record; one judged with the plugin line also answers a run without it. A record without
        a field this version reads (written by an earlier one) answers nothing: the base is judged again."""
        d = self.bases.get((shape, key, plugin)) or self.bases.get((shape, key, True))
        return d if d is not None and all(k in d for k in BASE_FIELDS[: 4 if plugin else 2]) else None

    def mutant(self, base: str, key: str, plugin: bool) -> dict[str, Any] | None:
        """The mutant's record on ``base``; one judged with the plugin line also answers a run without it. An
        earlier version's record without ``by`` killed by a new cause or test only: a kill stands (``by`` set),
        a survivor answers nothing (it is judged again, by group too); an earlier ``equivalent`` (its proofs'
        groups alone were the base's) answers nothing either."""
        d = self.mutants.get((base, key, plugin)) or self.mutants.get((base, key, True))
        if d is not None and d["outcome"] == "equivalent" and d.get("equivalence", 1) < EQUIVALENCE:
            return None  # equivalent by its groups alone: judged again, by their counts too
        if d is None or d["outcome"] != "judged":
            return d
        for e in (e for e in ENTRIES if e in d and "by" not in d[e]):
            if not d[e]["killed"]:
                return None
            d[e]["by"] = "cause" if e == "run ci" else "test"
        return d

    def add_base(self, shape: str, key: str, plugin: bool, record: dict[str, Any]) -> dict[str, Any]:
        return self._append({**record, "kind": "base", "shape": shape, "base": key, "with_plugin": plugin})

    def add_mutant(self, shape: str, base: str, m: Mutant, plugin: bool, record: dict[str, Any]) -> dict[str, Any]:
        return self._append(
            {**record, "kind": "mutant", "shape": shape, "base": base, "key": digest(m.source), "name": m.name}
            | {"function": m.function, "with_plugin": plugin}
        )

    @staticmethod
    def line(r: dict[str, Any]) -> str:
        """One mutant's verdicts in a line of progress."""
        took = ", ".join(f"{k} {v:.0f}s" for k, v in r.get("seconds", {}).items())
        if r["outcome"] != "judged":
            return f"{r['outcome']}{' (' + r['why'] + ')' if r.get('why') else ''} [{took}]"
        words = [f"proof finds {', '.join(r['proof'][:2])}"]
        for entry in ENTRIES:
            if entry in r:
                words.append(f"{entry} {'killed by a new ' + r[entry]['by'] if r[entry]['killed'] else 'SURVIVED'}")
        if "run ci" in r and r["run ci"]["causes"]:
            words.append(f"new cause {', '.join(r['run ci']['causes'][:2])}")
        return f"{'; '.join(words)} [{took}]"


def print_score(shape: str, base: str, chosen: list[Mutant], results: Results, plugin: bool) -> bool:
    """One shape's score: mutants, refused, equivalent, killed by each entry point, survivors by name, tool
    crashes, seconds per verdict; whether every mutant is judged and none survives or crashed."""
    records = [results.mutant(base, digest(m.source), plugin) for m in chosen]
    done = [r for r in records if r is not None]
    by = {o: [r for r in done if r["outcome"] == o] for o in ("refused", "equivalent", "judged", "crashed")}
    known = [r for r in by["judged"] if r.get("explained")]  # widen the known bug only: no new bug to kill
    live = [r for r in by["judged"] if not r.get("explained")]
    print(
        f"\n{shape}: {len(chosen)} mutants ({len(done)} judged), {len(by['refused'])} refused at load, "
        f"{len(by['equivalent'])} equivalent, {len(live)} non-equivalent"
        + (f", {len(known)} widening the known bug only" if known else "")
    )
    for r in by["crashed"]:
        print(f"  KVROW-FUZZ CRASHED on {r['name']}: {r['why']}")
    ok = len(done) == len(chosen) and not by["crashed"]
    for entry in ENTRIES if plugin else ENTRIES[:1]:
        survivors = [r["name"] for r in live if not r[entry]["killed"]]
        hidden = [r["name"] for r in live if r[entry]["killed"] and r[entry]["by"] == GROUP]
        how = Counter(r[entry]["by"] for r in live if r[entry]["killed"])
        named = sum(1 for r in live if r[entry].get("named")) if entry == "run ci" else None
        parts = [f"{n} by a new {k}" for k, n in sorted(how.items())]
        parts += [f"{named} by a new cause naming the mutated function"] if named else []
        print(
            f"  killed by {entry}: without the baseline {len(live) - len(survivors)}/{len(live)}, "
            f"with it {len(live) - len(survivors) - len(hidden)}/{len(live)}"
            + (f" ({'; '.join(parts)})" if parts else "")
            + (f"; SURVIVORS: {', '.join(survivors)}" if survivors else "")
            + (f"; HIDDEN BY THE BASELINE (a new group, no new cause): {', '.join(hidden)}" if hidden else "")
        )
        ok &= not survivors and not hidden
    if known:
        names = ", ".join(r["name"] for r in known)
        print(f"  widen a known bug only (its fix clears every group they break, no new bug): {names}")
    if elsewhere := [r["name"] for r in live if not r["run ci"].get("named")]:
        print(f"  run ci's new causes name another function for: {', '.join(elsewhere)}")
    seconds: dict[str, list[float]] = {}
    for r in done:
        for k, v in r.get("seconds", {}).items():
            seconds.setdefault(k, []).append(v)
    for k, xs in sorted(seconds.items()):
        print(f"  {k}: {sum(xs) / len(xs):.1f}s per mutant (max {max(xs):.1f}s, {len(xs)} mutants)")
    return ok
