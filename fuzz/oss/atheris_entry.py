"""The Atheris entry point: a decode property as a libFuzzer fuzz target (OSS-Fuzz, ClusterFuzzLite).

    python -m fuzz.oss.atheris_entry [--kvrow-property=P] [--kvrow-target=SPEC] [LIBFUZZER ARGS] [CORPUS_DIR]

``TestOneInput(data)`` runs one input through Hypothesis' ``fuzz_one_input``
(``fuzz.oss.target.Entry``); a violation writes its case file, then
re-raises, and libFuzzer records the crash input (``crash-<sha1>``), which
``kvrow-fuzz from-crash`` turns back into a case file anywhere.  It works on
plain ``bytes`` without Atheris (a test feeds it); ``main`` adds the
libFuzzer loop (``atheris.Setup`` + ``atheris.Fuzz``), with the model and
the harness instrumented for coverage (``INSTRUMENTED``).

What it fuzzes, each from the command line (``--kvrow-NAME=VALUE``, taken
out before libFuzzer sees argv), else the environment, else what a
generated fuzzer script bakes in (``fuzz.oss.stubs``), else the default:

  KVROW_FUZZ_TARGET    target spec, as ``run --target`` (default ``reference``)
  KVROW_FUZZ_PROPERTY  decode property (default ``write-within-row``)
  KVROW_FUZZ_CASES     where case files go (default ``fuzz-cases``)
  KVROW_FUZZ_BASELINE  a baseline file (``kvrow-fuzz baseline write``) covering the target: a violation whose
                       root cause it knows there counts as passing (a known, open bug), so the fuzzer
                       hunts for the next
  KVROW_FUZZ_KNOWN     deprecated: comma-separated group signatures that count as passing (a group's label,
                       not its cause: a new bug that shows in a known group passes too)

A baseline's causes are computed per violating input (``fuzz.causes.known``:
a few replays of the case, each case judged once); the known groups cost a
set lookup.  Bad input (an unknown property, target or signature; a file
that is not a baseline; no Atheris) is one line on stderr and exit 2,
before the loop starts.  Importing this module imports neither torch nor
Atheris.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fuzz.common.defaults import PROG
from fuzz.common.errors import BadInput, ExitCode, one_line

from .settings import (
    ENV_BASELINE,
    ENV_CASES,
    ENV_KNOWN,
    ENV_PROPERTY,
    ENV_TARGET,
    OPTIONS,
)

if TYPE_CHECKING:
    from .target import Entry

OPTION_PREFIX = "--kvrow-"
# Packages instrumented for libFuzzer's coverage feedback (torch and Hypothesis are not: the model's branches are
# what the search should reach).
INSTRUMENTED: tuple[str, ...] = ("allocator_model", "strategies", "fuzz")
# libFuzzer flags added unless given: Hypothesis reads a scenario from a buffer of tens of bytes, and libFuzzer's
# default length control starts at 4 (every input too short to draw one); -len_control=0 lets inputs reach
# -max_len at once (measured: the seed revision's first crash within ~30 to 120 inputs, none in 200 without it).
DEFAULT_LIBFUZZER_FLAGS: tuple[str, ...] = ("-len_control=0",)

_ENTRY: Entry | None = None  # the entry TestOneInput runs, built once per process


def split_argv(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """(this tool's ``--kvrow-NAME=VALUE`` options as environment names, libFuzzer's argv without them).

    BadInput for a ``--kvrow-`` option this tool does not have, or one without ``=VALUE``.
    """
    options: dict[str, str] = {}
    rest: list[str] = []
    for arg in argv:
        if not arg.startswith(OPTION_PREFIX):
            rest.append(arg)
            continue
        name, sep, value = arg[len(OPTION_PREFIX) :].partition("=")
        if name not in OPTIONS or not sep:
            known = ", ".join(f"{OPTION_PREFIX}{n}=VALUE" for n in OPTIONS)
            raise BadInput(f"unknown option {arg.split('=', 1)[0]!r} (this entry point takes {known})")
        options[OPTIONS[name]] = value
    return options, rest


def with_default_flags(argv: Sequence[str]) -> list[str]:
    """libFuzzer's argv with each ``DEFAULT_LIBFUZZER_FLAGS`` flag the command line does not set, after argv[0]."""
    given = {a.split("=", 1)[0] for a in argv[1:]}
    missing = [f for f in DEFAULT_LIBFUZZER_FLAGS if f.split("=", 1)[0] not in given]
    return [*argv[:1], *missing, *argv[1:]]


def settings_strings(
    environ: Mapping[str, str],
    options: Mapping[str, str] | None = None,
    *,
    prop: str | None = None,
    target: str | None = None,
    known: str | None = None,
    baseline: str | None = None,
) -> tuple[str | None, str | None, str | None, str | None, str | None]:
    """(target, property, cases, known, baseline): the command line's, else the environment's, else the
    keywords'."""
    # A variable set but empty (``KVROW_FUZZ_TARGET=``) says nothing: it never overrides a baked-in setting.
    given = {k: v for k, v in {**dict(environ), **dict(options or {})}.items() if v != ""}
    merged = {**{ENV_TARGET: target, ENV_PROPERTY: prop, ENV_KNOWN: known, ENV_BASELINE: baseline}, **given}
    get = merged.get
    return get(ENV_TARGET), get(ENV_PROPERTY), get(ENV_CASES), get(ENV_KNOWN), get(ENV_BASELINE)


def entry_from_environment(environ: Mapping[str, str] | None = None, **defaults: Any) -> Entry:
    """The ``Entry`` the environment describes (``defaults``: ``prop``/``target`` a fuzzer script bakes in)."""
    from .target import entry_from_strings

    return entry_from_strings(*settings_strings(os.environ if environ is None else environ, **defaults))


def TestOneInput(data: bytes) -> None:  # noqa: N802 - the name libFuzzer's Python harnesses use
    """One input: the environment's entry (built on the first call) runs it; a violation raises after its case
    file is written."""
    global _ENTRY
    if _ENTRY is None:
        _ENTRY = entry_from_environment()
    _ENTRY(data)


def import_atheris() -> Any:
    try:
        import atheris  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise BadInput("atheris is not installed (pip install atheris): the libFuzzer loop needs it") from None
    return atheris


def main(
    argv: Sequence[str] | None = None,
    *,
    prop: str | None = None,
    target: str | None = None,
    known: str | None = None,
    baseline: str | None = None,
) -> int:
    """Run the libFuzzer loop on ``TestOneInput``; returns only on bad input (2): libFuzzer exits the process.

    ``prop``, ``target``, ``known``, ``baseline``: what a generated fuzzer script bakes in (``fuzz.oss.stubs``).
    """
    global _ENTRY
    argv = list(sys.argv if argv is None else argv)
    try:
        options, libfuzzer_argv = split_argv(argv)
        atheris = import_atheris()
        with atheris.instrument_imports(include=list(INSTRUMENTED)):
            from .target import entry_from_strings

            baked = {"prop": prop, "target": target, "known": known, "baseline": baseline}
            _ENTRY = entry_from_strings(*settings_strings(os.environ, options, **baked))
    except BadInput as e:
        print(f"{PROG}: error: {one_line(str(e))}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    config = _ENTRY.config
    passing = f"; {len(_ENTRY.baseline)} baseline entr(ies) pass" if _ENTRY.baseline is not None else ""
    passing += f"; {len(config.known)} known group(s) pass (deprecated: KVROW_FUZZ_BASELINE)" if config.known else ""
    print(
        f"kvrow-fuzz: fuzzing {config.prop.value} on {_ENTRY.target.spec}; case files in {config.cases}{passing}",
        file=sys.stderr,
        flush=True,
    )
    atheris.Setup(with_default_flags(libfuzzer_argv), TestOneInput)
    atheris.Fuzz()
    return ExitCode.CLEAN  # not reached: Fuzz() ends the process


if __name__ == "__main__":
    sys.exit(main())
