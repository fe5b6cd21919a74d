"""The advisory of a table checked on its own (an attention backend's CUDA-graph page table): its cases, its text.

A table case is validated as ``repro`` validates it (``fuzz.tables.case.table_case_of``: its table, property and
target), then as a decode case is (the release launches the deployment, ``Revision.refuses``; a page table's data
is a decode scenario its scheduler can reach, ``page_tables.scenario``), all before any case runs.

Its advisory says what the table's width is sized from and what the modes publish, from the example case's builds
on the target (SGLang's own builders, executed, on a real target: ``Table.observe``), where the code is, that the
read past the row happens in the backend's CUDA kernel (which this machine does not run: the read follows from the
length the builders published), and, given fixes, each one's verdict (``fixjudge``).
"""

from __future__ import annotations

import json
from typing import Any

from allocator_model.page_tables import Build, pages, steps
from fuzz.common.text import printable
from fuzz.engines.sglang.decode.replay import ReplayableCase
from fuzz.engines.sglang.groups import serving_config
from fuzz.engines.sglang.launch import launch_line
from fuzz.engines.sglang.page_table_builds import row_width_of
from fuzz.engines.sglang.page_tables import GRAPH_TABLES, backend_of, scenario
from fuzz.engines.sglang.representative import deployment_rank
from fuzz.findings.casefile import CaseFileError
from fuzz.findings.kinds import Outcome, OutcomeKind, Property
from fuzz.findings.model import Finding
from fuzz.tables.case import sized_by, table_case_of
from fuzz.tables.declared import TABLE_CASE, Explained, Table, table

from .advisory_parts import Advisory, code, fenced, regression_section

# What upstream holds of each table's cause (an open report of its class, the pull requests that propose a fix).
UPSTREAM = {
    "fa3_page_table": "the class of sgl-project/sglang#34239 (open: an illegal memory access near the 262,144-token "
    "context limit with NEXTN, reported on 0.5.16; #35985 names FA3's page table as its cause); fixes proposed: "
    "#35985 (open), #29665 (closed)",
    # the function's docstring names the PRs that fixed its topk factor [cite: triton-draft-topk-factor]; the fix
    # judged sizes from the backend's pool_len, the req_to_token row's width [cite: triton-draft-pool-len]
    "triton_draft_kv_indices": "new: no upstream issue or pull request names it (sgl-project/sglang#27338 and "
    "#27460 fixed the row's topk factor, as draft_kv_indices_buffer_width's docstring says, not its length)",
    "dsa_index_key_cache": "named in review of sgl-project/sglang#36990 (open: DCP for DSA models; the allocator "
    "reaches (size + page_size) * dcp_size - 1, past the indexer cache); 0.5.22 sizes the cache for the DCP "
    "allocator",
}


def table_replayable(doc: dict[str, Any], where: str, named: str | None) -> ReplayableCase:
    """A table case document as every replay takes it, or CaseFileError (one line)."""
    target, case, prop = table_case_of(doc, where, named)
    refusal = target.revision.refuses(case.config)
    if refusal is not None:
        raise CaseFileError(f"{where}: {target.spec} does not launch this configuration: {refusal}")
    if case.table.name in GRAPH_TABLES:
        try:
            scenario(target, case.config, case.data)
        except (ValueError, TypeError) as e:
            raise CaseFileError(f"{where}: not a valid case for {target.spec}: {e}".splitlines()[0]) from None
    return ReplayableCase(TABLE_CASE, prop, target, case.config, None, None, table=case)


def example(adv: Advisory) -> tuple[str, Finding]:
    """The case a table's advisory shows: a representative case where the inputs hold one (``deployment_rank``'s
    first term), then a page above 1, not adaptive, the one whose step builds the most modes (every mode's published
    length shown), the nearest a deployment, by name."""
    pairs = [(spec, f) for spec, fs in adv.findings.items() for f in fs]

    def key(p: tuple[str, Finding]) -> tuple[Any, ...]:
        cfg = serving_config(p[1])
        modes = len(list(steps(cfg, cfg.launch_runtime)))
        rank = deployment_rank(cfg)
        return rank[0], cfg.page_size == 1, cfg.speculative_adaptive, -modes, rank, str(p[1].signature)

    return min(pairs, key=key)


def render_table(adv: Advisory, fixes: list[str]) -> str:
    """The Markdown advisory of ``adv``, a table's cause, shown on its ``example`` case; ``fixes``: the section of
    the fixes judged (``fixjudge.fix_section``), Markdown already."""
    spec, f = example(adv)
    c, t = adv.cause, table(f.case["table"])
    target, cfg = adv.targets[spec], serving_config(f)
    said = t.explain(target, f) if t.explain is not None else _page_table(t, target, f, c.fix)
    lines = [
        f"# {printable(c.title, 300)}",
        "",
        f"- **Upstream:** {UPSTREAM.get(t.name, 'new: no upstream issue or pull request names it')}",
        f"- **Affected:** {', '.join(printable(s, 300) for s in sorted(adv.findings))}",
        f"- **Outcome:** {f.signature.outcome} ({said.outcome})",
        f"- **Found by:** kvrow-fuzz, on {t.observer(target) if t.observer else 'the table'}; root cause: the code "
        f"that sizes {t.name} (a table checked on its own has that one cause)",
        "",
        "## Deployment",
        "",
        fenced([launch_line(cfg, backend_of(t.name))]),
        "## The mismatch",
        "",
        *said.mismatch,
        "## What happens",
        "",
        f"On {code(spec)}:",
        "",
        fenced(f.violation.describe().splitlines() + ([f"reached: {f.reached_by}"] if f.reached_by else [])),
        "## Where",
        "",
    ]
    for where_spec, where in sorted(adv.where.items()):
        lines.append(f"- {code(where_spec)}: " + ("; ".join(code(w) for w in where) if where else "(not located)"))
    lines += ["", "## Fix", "", printable(said.fix), "", *fixes, "## Variants", ""]
    lines += ["| bug group | algorithm | page | outcome |", "|---|---|---|---|"]
    seen = set()
    for g in (g for fs in adv.findings.values() for g in fs):
        if g.signature not in seen:
            seen.add(g.signature)
            gc = serving_config(g)
            lines.append(f"| {code(g.signature)} | {gc.speculative_algorithm or 'none'} | {gc.page_size} | "
                         f"{g.signature.outcome} |")  # fmt: skip
    lines += regression_section(f, said.reads)
    return "\n".join(lines)


def _page_table(t: Table, target: Any, f: Finding, fix: str) -> Explained:
    """The account of a backend's page table: the kernel's read past the row, or a builder's write past it."""
    graph = GRAPH_TABLES.get(t.name)
    into = "the next request's pages" if graph is None or not graph.draft_steps_only else "the next draft step's row"
    reads = "the backend's builders are read and run from there; needs `pip install kvrow-fuzz` and triton"
    said = outcome_text(f.signature.outcome, f.violation.prop, into)
    return Explained(said, tuple(_mismatch(t, target, f)), fix, reads)


def outcome_text(outcome: Outcome, prop: Property, into: str) -> str:
    """What a table finding's outcome does on a running server, said plainly: a write SGLang's own check stops
    crashes the step (nothing corrupted); a silent write or a read past the row goes unstopped into ``into``."""
    if outcome.kind is OutcomeKind.GUARD:
        return (
            f"a builder would write past the row, into {into}; SGLang's own check {outcome.guard} stops the step "
            "first: the step raises and the server crashes (nothing is corrupted)"
        )
    if prop == Property.READ_WITHIN_ROW:
        return f"the attention kernel reads past the row, into {into}; nothing stops it"
    return f"a builder writes past the row, into {into}; nothing stops it"


def _mismatch(t: Table, target: Any, f: Finding) -> list[str]:
    """What the width is sized from and what each mode publishes, from the example case's builds on ``target``, in
    the table's own columns: pages, or token slots where the backend's table ``counts_tokens`` (triton's)."""
    cfg, data = serving_config(f), f.case["data"]
    observed = t.observe(target, cfg, data) if t.observe else []
    # each build once (a build is its write, its read and its copy; one SGLang's own check stopped, its write alone)
    shown = list({id(a.native): a.native for a in observed if isinstance(a.native, Build)}.values())
    if not shown:
        return ["(the builds of the case are not shown: the table has none to show)", ""]
    graph = GRAPH_TABLES.get(t.name)
    slots = graph is not None and graph.backend.counts_tokens
    units, p = ("slots", 1) if slots else ("pages", cfg.page_size)
    c, width = cfg.context_len, shown[0].width
    row = row_width_of(target, cfg)
    seq = int(data["committed_len"]) + int(data["device_lag"])
    if width != pages(c, p):
        sized = f"{width} {units}"
    elif slots:
        sized = f"{width} slots, one per token of the context: sized from the model's context length"
    else:
        sized = f"ceil(context_len / page_size) = ceil({c} / {p}) = {width} pages: sized from the model's context"
        sized += " length"
    held = "" if slots else f", {pages(row, p)} pages"
    lengths = graph.lengths if graph is not None else "cache_seqlens"
    lines = [
        f"Every row of {code(t.name)} is {sized} ({code(sized_by(t))}). The `req_to_token` row the builders copy "
        f"the request's slots from is {row} columns wide (context_len + {row - c}: the headroom SGLang's sizing "
        f"module gives the row){held}; the table has none of that headroom.",
        "",
        f"Each mode of the step publishes a length to the kernel ({code(lengths)}): the request's device length at "
        f"the step, {seq} (committed {data['committed_len']} + overlap lag {data['device_lag']}), plus what the mode "
        "adds. The kernel reads that length " + ("in slots of the row:" if slots else "in whole pages of the row:"),
        "",
        f"| mode | buffer | published | {units} read | row width | |",
        "|---|---|---|---|---|---|",
    ]
    for b in shown:
        past = "past the row" if b.read_pages > b.width else "within"
        if b.spilled:
            past = f"writes {b.spilled} past the row"
        said = f"{b.published} = {seq} + {b.published - seq}" if b.published else "0 (no step reads this row)"
        read: int | str = b.read_pages
        if b.stopped_by is not None:  # asked of SGLang's check, which raised: nothing written, nothing read
            said, read, past = f"asks {said}", "none", f"stopped by {b.stopped_by}: nothing written"
        lines.append(f"| {b.label} | {code(b.buffer)} | {said} | {read} | {b.width} | {past} |")
    d = cfg.speculative_num_draft_tokens
    plus_d = [b.label for b in shown if d and b.published - seq == d]
    if plus_d:
        lines += ["", f"{' and '.join(plus_d)} publish the device length + D (D = speculative_num_draft_tokens = {d}), "
                  "and the device length runs ahead of the committed length by the overlap lag."]  # fmt: skip
    kernel = graph.kernel if graph is not None else "the backend's kernel"
    kind = graph.kernel_kind if graph is not None else "CUDA"
    beyond = (
        graph.next_row(shown[0])
        if graph is not None and graph.draft_steps_only
        else "the next batch row's page indices (another request's KV), or past the buffer for the bucket's last row"
    )
    readers = ", ".join(code(f"{r.qualname}()") for r in t.readers)
    observer = t.observer(target) if t.observer else "the table"
    guard = f.signature.outcome
    if guard.kind is OutcomeKind.GUARD:
        return lines + [
            "",
            f"Confirmed on {observer}: each width above is the buffer SGLang's own code allocated; SGLang's own "
            f"check {code(guard.guard)} raised on the step before its builders stored anything (the table still "
            f"held what it held before), run from {code(f.target)} ({_case_line(f)}).",
            "",
            "The check turns the write past the row into an error of the step: on a GPU the step raises the same "
            "way (no kernel runs on a table it refused), the scheduler's step fails and the server crashes. Nothing "
            "is corrupted; a request near the context limit takes the server down.",
            "",
        ]
    lines += [
        "",
        f"Confirmed on {observer}: each width above is the buffer SGLang's own code allocated, each published length "
        f"what its own builders stored for the kernel, run from {code(f.target)} ({_case_line(f)}).",
        "",
        f"The read past the row happens in {kernel} ({kind}, on the GPU; called from {readers}), which this machine "
        "does not run: it has no GPU. What is shown is what SGLang's Python and triton builders did "
        f"(executed on CPU, under triton's interpreter); the read of the published length, in {units}, follows from "
        f"them: on a GPU it takes {beyond}.",
        "",
    ]
    return lines


def _case_line(f: Finding) -> str:
    return f"case {json.dumps(f.case['data'], sort_keys=True)}"
