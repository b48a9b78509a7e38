"""Markdown tables from the results of `benchmarks/run.py`."""

import argparse
import json
import statistics

OURS = "keras-seq"
HUB = "keras-hub"
TORCH = "torch.nn.Transformer"
TRAINING_TARGET = 1.25  # x the fastest peer
DECODING_TARGET = 1.25  # x keras-hub's cached decoder
MFU_TARGET = 0.50
# Keras on PyTorch (issue 35): training at least keras-hub's speed there,
# and a late decoding step at most this much slower than an early one.
TORCH_TRAINING_TARGET = 1.0  # x keras-hub on PyTorch
POSITION_TARGET = 1.3  # time per token at the late position / the early one


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def throughput_rows(runs, cases):
    """Sentences per second of each implementation, from fresh processes.

    Args:
        runs: `{name: [per-process medians]}`, each a dict of seconds per
            call keyed `"<batch>x<beams>"`.
        cases: the (batch, beams) pairs timed.

    Returns:
        `{name: {"<batch>x<beams>": {"sentences_per_s", "per_process_s"}}}`,
        each rate the batch over the median of the per-process medians.
    """
    table = {}
    for name, medians in runs.items():
        table[name] = {}
        for batch, beams in cases:
            key = f"{batch}x{beams}"
            median = statistics.median(m[key] for m in medians)
            table[name][key] = {
                "sentences_per_s": batch / median,
                "per_process_s": [m[key] for m in medians],
            }
    return table


def throughput_table(first_column, table, cases, baseline_of):
    """The markdown table of `throughput_rows`: a column per case, each rate
    with its ratio to the same case of the row `baseline_of(name)`."""
    header = [first_column] + [
        f"batch {batch}, {'greedy' if beams == 1 else f'{beams} beams'}"
        for batch, beams in cases
    ]
    rows = []
    for name, row in table.items():
        base = table[baseline_of(name)]
        cells = [name]
        for batch, beams in cases:
            key = f"{batch}x{beams}"
            rate = row[key]["sentences_per_s"]
            cells.append(f"{rate:.1f} ({rate / base[key]['sentences_per_s']:.2f}x)")
        rows.append(cells)
    return _table(header, rows)


def size_line(what, sizes):
    """`what: float32 ... MB, int8 ... MB (...x smaller)`."""
    float_bytes, int8_bytes = sizes["float32_bytes"], sizes["int8_bytes"]
    return (
        f"{what}: float32 {float_bytes / 1e6:.2f} MB, int8 {int8_bytes / 1e6:.2f} MB "
        f"({float_bytes / int8_bytes:.2f}x smaller)"
    )


def _number(value, digits=0):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _rates(rate):
    """(FLOP/s, FLOPs per processor-second) of a JSON matmul entry."""
    return tuple(rate) if isinstance(rate, (list, tuple)) else (rate, None)


def best_matmul(results, cpu=False):
    """The best float32 matmul rate any library reached, and which.

    With `cpu`, FLOPs per second of processor time (all threads), which
    a busy machine disturbs less than the wall clock.
    """
    best = (0.0, None)
    for worker in results["backends"].values():
        for library, rate in worker.get("matmul", {}).items():
            value = _rates(rate)[1 if cpu else 0]
            if value:
                best = max(best, (value, library))
    return best


def _xla(row, backend):
    if row["xla"] is None or backend == "torch":
        return "eager"
    if backend == "jax":
        return "jit"
    return "on" if row["xla"] else "off"


def _timed(rows):
    """The rows that were timed: an implementation that failed has only
    `implementation` and `failed` (`timing.first_call_fails`)."""
    return {key: row for key, row in rows.items() if "failed" not in row}


def _failures(backend, rows, what):
    """One line per implementation that failed, naming the error."""
    return [
        f"- {backend}: {key} {what} failed: `{row['failed']}`"
        for key, row in rows.items()
        if "failed" in row
    ]


def _fastest(rows, ours):
    """The most target tokens/s of ours or of the peers (a NaN loss: none)."""
    chosen = [
        r
        for r in rows.values()
        if (r["implementation"] == OURS) == ours and not r.get("loss_is_nan")
    ]
    return max((r["tokens_per_s"] for r in chosen), default=None)


def _percent(value):
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _ratio(value):
    return "n/a" if value is None else f"{value:.2f}x"


def training_section(results, name, peak, cpu_peak):
    table_rows, failures = [], []
    for backend, worker in results["backends"].items():
        rows = worker.get("training", {}).get(name)
        if not rows:
            continue
        failures += _failures(backend, rows, "training")
        rows = _timed(rows)
        fastest_peer = _fastest(rows, ours=False)
        least_cpu = min(
            (r["cpu_step_ms"] for r in rows.values() if r["implementation"] != OURS),
            default=None,
        )
        for row in rows.values():
            ratio = row["tokens_per_s"] / fastest_peer if fastest_peer else None
            # FLOPs of a step from its figures: FLOP/s x seconds per step.
            step_flops = row["flops_per_s"] * row["step_ms"] / 1e3
            cpu_rate = step_flops / (row["cpu_step_ms"] / 1e3)
            table_rows.append(
                [
                    backend,
                    row["implementation"]
                    + (" (**loss NaN**)" if row.get("loss_is_nan") else ""),
                    _xla(row, backend),
                    row.get("length", "n/a"),
                    _number(row["step_ms"], 1),
                    _number(row["cpu_step_ms"], 1),
                    _number(row["tokens_per_s"]),
                    _percent(row["flops_per_s"] / peak if peak else None),
                    _percent(cpu_rate / cpu_peak if cpu_peak else None),
                    _ratio(ratio),
                    _ratio(least_cpu / row["cpu_step_ms"] if least_cpu else None),
                ]
            )
    if not table_rows:
        return ""
    header = [
        "backend",
        "implementation",
        "XLA",
        "batch length",
        "step (ms)",
        "CPU time (ms)",
        "target tokens/s",
        "MFU",
        "MFU, CPU time",
        "vs fastest peer",
        "vs fastest peer, CPU time",
    ]
    text = f"### Training, `{name}`\n\n" + _table(header, table_rows) + "\n"
    return text + ("\n" + "\n".join(failures) + "\n" if failures else "")


def _decoding_rows(backend, decoding):
    batches = sorted(decoding, key=int)
    methods = ("cached greedy", "recompute greedy", "beam")
    implementations = []
    for key in decoding[batches[0]]:
        name = key.split(" | ")[0]
        if name not in implementations:
            implementations.append(name)
    rows = []
    for name in implementations:
        for method in methods:
            key = f"{name} | {method}"
            if key not in decoding[batches[0]]:
                continue
            cells = [backend, name, method]
            for batch in batches:
                entry = decoding[batch].get(key, {})
                if "ms" not in entry:
                    cells += ["failed", "see below"]
                    continue
                cells += [_number(entry["ms"], 1), _number(entry["tokens_per_s"])]
            rows.append(cells)
    header = ["backend", "implementation", "decoding"]
    for batch in batches:
        header += [f"batch {batch} (ms)", f"batch {batch} tokens/s"]
    return header, rows


def decoding_section(results):
    header, table_rows = None, []
    for backend, worker in results["backends"].items():
        if "decoding" not in worker:
            continue
        header, rows = _decoding_rows(backend, worker["decoding"])
        table_rows += rows
    if not table_rows:
        return ""
    lines = ["### Decoding", "", _table(header, table_rows), ""]
    for backend, worker in results["backends"].items():
        decoding = worker.get("decoding")
        if not decoding:
            continue
        for batch in sorted(decoding, key=int):
            d = decoding[batch]

            def ms(key, d=d):
                return d.get(key, {}).get("ms")

            def spread(numerator, denominator, digits, d=d):
                """Each process's own ratio, where several processes ran."""
                top = d[numerator].get("process_ms", [])
                bottom = d[denominator].get("process_ms", [])
                if len(top) < 2 or len(top) != len(bottom):
                    return ""
                each = ", ".join(f"{a / b:.{digits}f}x" for a, b in zip(top, bottom))
                return f" (per process: {each})"

            facts = []
            for key, row in d.items():
                if "failed" in row:
                    facts.append(f"{key} failed: `{row['failed']}`")
            cached_key = f"{OURS} | cached greedy"
            cached, recompute = ms(cached_key), ms(f"{OURS} | recompute greedy")
            hub = ms(f"{HUB} | cached greedy")
            if cached and hub:
                facts.append(
                    f"ours {hub / cached:.2f}x keras-hub's cached decoder"
                    + spread(f"{HUB} | cached greedy", cached_key, 2)
                )
            if cached and recompute:
                facts.append(
                    f"recomputing takes {recompute / cached:.1f}x as long"
                    + spread(f"{OURS} | recompute greedy", cached_key, 1)
                )
            native = ms(f"{TORCH} | recompute greedy")
            if cached and native:
                facts.append(
                    f"ours {native / cached:.2f}x {TORCH}'s greedy (no cache: "
                    "it recomputes)"
                )
            if ms(f"{OURS} | beam") and ms(f"{TORCH} | beam"):
                facts.append(
                    f"ours {ms(f'{TORCH} | beam') / ms(f'{OURS} | beam'):.2f}x "
                    f"{TORCH}'s beam search"
                )
            if cached and ms(f"{OURS} | beam"):
                facts.append(
                    f"beam 4 costs {ms(f'{OURS} | beam') / cached:.2f}x greedy"
                    + spread(f"{OURS} | beam", cached_key, 2)
                )
            lines.append(f"- {backend}, batch {batch}: " + "; ".join(facts) + ".")
    return "\n".join(lines) + "\n"


def serving_section(results):
    worker = results["backends"].get("tensorflow", {})
    serving = worker.get("serving")
    if not serving:
        return ""
    decoding = worker.get("decoding", {})
    rows = []
    for batch in sorted(serving, key=int):
        entry = serving[batch]
        generate = decoding.get(batch, {}).get(f"{OURS} | cached greedy")
        rows.append(
            [
                batch,
                _number(entry["ms"], 1),
                _number(entry["sentences_per_s"], 1),
                _number(generate["ms"], 1) if generate else "n/a",
            ]
        )
    header = [
        "batch",
        "SavedModel call (ms)",
        "sentences/s",
        "in-process `generate` (ms)",
    ]
    return "### SavedModel serving (TensorFlow)\n\n" + _table(header, rows) + "\n"


def memory_section(results):
    if not results.get("memory"):
        return ""
    rows = [
        [
            m["implementation"],
            m["backend"] if m["implementation"] != "torch.nn.Transformer" else "torch",
            _number(m["after_imports_mib"]),
            _number(m["peak_training_mib"]),
            _number(m["peak_mib"]),
            _number(m["peak_mib"] - m["after_imports_mib"]),
        ]
        for m in results["memory"]
    ]
    header = [
        "implementation",
        "backend",
        "after imports (MiB)",
        "peak, training (MiB)",
        "peak, + decoding (MiB)",
        "peak - imports (MiB)",
    ]
    return "### Peak memory (resident set)\n\n" + _table(header, rows) + "\n"


def _best_by_implementation(rows):
    """Each implementation's most target tokens/s; rows whose loss was NaN
    are no training speed and are left out."""
    best = {}
    for row in rows.values():
        if row.get("loss_is_nan"):
            continue
        name = row["implementation"]
        best[name] = max(best.get(name, 0.0), row["tokens_per_s"])
    return best


def _cpu_ratio(rows):
    """Fastest peer's processor time per step over ours (best modes)."""
    ours = min(r["cpu_step_ms"] for r in rows.values() if r["implementation"] == OURS)
    peers = min(r["cpu_step_ms"] for r in rows.values() if r["implementation"] != OURS)
    return peers / ours


def _fixed_length_ratio(rows, fastest_peer):
    """Ours on the longest (the peers') batch length, over the fastest peer."""
    longest = max(r.get("length") or 0 for r in rows.values())
    ours = [
        r["tokens_per_s"]
        for r in rows.values()
        if r["implementation"] == OURS and (r.get("length") or 0) == longest
    ]
    return max(ours) / fastest_peer if ours else None


def _step_flops(row):
    return row["flops_per_s"] * row["step_ms"] / 1e3


def _verdict(ok):
    return "met" if ok else "**missed**"


def targets_section(results, peak, cpu_peak=None):
    """The speed targets, each with the measured figure and a verdict."""
    lines = []
    for backend, worker in results["backends"].items():
        rows = _timed(worker.get("training", {}).get("small", {}))
        if rows and backend == "torch":
            lines += _torch_training_targets(rows)
        elif rows:
            best = _best_by_implementation(rows)
            peers = {k: v for k, v in best.items() if k != OURS}
            cpu = _cpu_ratio(rows)
            if OURS in best and peers:
                ratio = best[OURS] / max(peers.values())
                slowest = min(peers.values()) / max(peers.values())
                verdict = _verdict(ratio >= TRAINING_TARGET)
                lengths = sorted({r.get("length") for r in rows.values()} - {None})
                fixed = _fixed_length_ratio(rows, max(peers.values()))
                how = ""
                if len(lengths) > 1 and fixed is not None:
                    how = (
                        f" on its length-bucketed batches ({lengths[0]} of "
                        f"{lengths[-1]} columns; {fixed:.2f}x on the peers' "
                        "fixed-length batch)"
                    )
                lines.append(
                    f"- Training, `small`, {backend}: ours {ratio:.2f}x the fastest "
                    f"peer{how} (target {TRAINING_TARGET}x): {verdict} ({cpu:.2f}x "
                    "by processor time); the slowest peer runs at "
                    f"{100 * slowest:.0f}% of the fastest's speed."
                )
            if peak and OURS in best:
                flops = max(
                    r["flops_per_s"]
                    for r in rows.values()
                    if r["implementation"] == OURS
                )
                peer_mfu = sorted(
                    r["flops_per_s"] / peak
                    for r in rows.values()
                    if r["implementation"] != OURS
                )
                verdict = _verdict(flops / peak >= MFU_TARGET)
                by_cpu = ""
                if cpu_peak:
                    ours_cpu = max(
                        _step_flops(r) / (r["cpu_step_ms"] / 1e3) / cpu_peak
                        for r in rows.values()
                        if r["implementation"] == OURS
                    )
                    peers_cpu = sorted(
                        _step_flops(r) / (r["cpu_step_ms"] / 1e3) / cpu_peak
                        for r in rows.values()
                        if r["implementation"] != OURS
                    )
                    by_cpu = (
                        f" (by processor time: ours {100 * ours_cpu:.0f}%, the "
                        f"peers {100 * peers_cpu[0]:.0f}-{100 * peers_cpu[-1]:.0f}%)"
                    )
                lines.append(
                    f"- Training, `small`, {backend}: ours reaches "
                    f"{100 * flops / peak:.0f}% of the best matmul rate (target "
                    f"{100 * MFU_TARGET:.0f}%): {verdict}; the peers "
                    f"{100 * peer_mfu[0]:.0f}-{100 * peer_mfu[-1]:.0f}%{by_cpu}."
                )
        decoding = worker.get("decoding", {})
        for batch in sorted(decoding, key=int):
            ours = decoding[batch].get(f"{OURS} | cached greedy", {})
            hub = decoding[batch].get(f"{HUB} | cached greedy", {})
            if "ms" in ours and "ms" in hub:
                ratio = hub["ms"] / ours["ms"]
                cpu = hub["cpu_ms"] / ours["cpu_ms"]
                lines.append(
                    f"- Cached greedy decoding, {backend}, batch {batch}: ours "
                    f"{ratio:.2f}x keras-hub's cached decoder (target "
                    f"{DECODING_TARGET}x): {_verdict(ratio >= DECODING_TARGET)} "
                    f"({cpu:.2f}x by processor time)."
                )
        lines += _position_targets(backend, worker.get("positions", {}))
    return _targets_section(lines)


def _torch_training_targets(rows):
    """Training on PyTorch: ours against keras-hub there (target 1x) and
    against `torch.nn.Transformer` (no target), on the same fixed-length
    batch, and bucketed as ours is fed."""
    longest = max(r.get("length") or 0 for r in rows.values())

    def speed(name, fixed=True):
        found = [
            r
            for r in rows.values()
            if r["implementation"] == name
            and not r.get("loss_is_nan")
            and (not fixed or (r.get("length") or 0) == longest)
        ]
        best = max(found, key=lambda r: r["tokens_per_s"], default=None)
        return best and (best["tokens_per_s"], best["cpu_step_ms"])

    ours, bucketed = speed(OURS), speed(OURS, fixed=False)
    lines = []
    for peer, target in ((HUB, TORCH_TRAINING_TARGET), (TORCH, None)):
        other = speed(peer)
        if not (ours and other):
            continue
        ratio = ours[0] / other[0]
        verdict = (
            f"(target {target}x): {_verdict(ratio >= target)}"
            if target
            else "(no target)"
        )
        lines.append(
            f"- Training, `small`, torch: ours {ratio:.2f}x {peer} on the same "
            f"batch {verdict} ({other[1] / ours[1]:.2f}x by processor time); "
            f"{bucketed[0] / other[0]:.2f}x on its length-bucketed batches."
        )
    return lines


def _position_targets(backend, positions):
    """Ours: the late step's time over the early one's (target 1.3x)."""
    lines = []
    for batch in sorted(positions, key=int):
        rows = positions[batch]
        late = [
            (key, row) for key, row in rows.items()
            if key.startswith(f"{OURS} | ") and "ratio" in row
        ]  # fmt: skip
        for key, row in late:
            early = min(
                int(k.split(" | ")[1]) for k in rows if k.startswith(f"{OURS} | ")
            )
            lines.append(
                f"- Time per token, {backend}, batch {batch}: ours "
                f"{row['ratio']:.2f}x at position {key.split(' | ')[1]} what it "
                f"is at position {early} (paired {row['paired_ratio']:.2f}x; "
                f"target at most {POSITION_TARGET}x): "
                f"{_verdict(row['ratio'] <= POSITION_TARGET)}."
            )
    return lines


def positions_section(results):
    """One decoder step early and late in a translation, per implementation."""
    table_rows, notes = [], []
    for backend, worker in results["backends"].items():
        for batch, rows in sorted(
            worker.get("positions", {}).items(), key=lambda x: int(x[0])
        ):
            names = []
            for key in rows:
                name = key.split(" | ")[0]
                if name not in names:
                    names.append(name)
            for name in names:
                keys = sorted(
                    (k for k in rows if k.startswith(f"{name} | ")),
                    key=lambda k: int(k.split(" | ")[1]),
                )
                early, late = rows[keys[0]], rows[keys[-1]]
                if "ms" not in early or "ms" not in late:
                    failed = early.get("failed") or late.get("failed")
                    notes.append(
                        f"- {backend}, batch {batch}: {name} failed: `{failed}`"
                    )
                    continue
                table_rows.append(
                    [
                        backend,
                        name,
                        batch,
                        _number(early["ms"], 2),
                        _number(late["ms"], 2),
                        _ratio(late.get("ratio")),
                        _ratio(late.get("paired_ratio")),
                    ]
                )
                positions = [k.split(" | ")[1] for k in keys]
    if not table_rows and not notes:
        return ""
    header = [
        "backend",
        "implementation",
        "batch",
        f"step at position {positions[0]} (ms)",
        f"step at position {positions[-1]} (ms)",
        "late / early",
        "late / early, paired",
    ]
    text = (
        "### Time per token, early and late\n\n"
        "One decoder step at each position, its self-attention caches as long "
        "as a translation of that many tokens has, the cross-attention caches "
        "filled beforehand; medians of interleaved repetitions, and the median "
        "of the ratio within each repetition (paired).\n\n"
        + _table(header, table_rows)
        + "\n"
    )
    return text + ("\n" + "\n".join(notes) + "\n" if notes else "")


def _targets_section(lines):
    """The "Targets" subsection of verdict lines, or "" when there are none."""
    if not lines:
        return ""
    return "### Targets\n\n" + "\n".join(lines) + "\n"


def _decoding_processes_note(results):
    counts = {w.get("decoding_processes", 1) for w in results["backends"].values()}
    counts.discard(1)  # One process: the header's sentence already says so.
    if not counts:
        return ""
    return (
        f" Decoding was timed that way in {', '.join(map(str, sorted(counts)))} "
        "separate processes per backend (the first after the other stages); "
        "each decoding figure is the median of the processes' medians, and "
        "the ratios below the decoding table give each process's own."
    )


def _allocator_note(results):
    tuned = {w.get("allocator_tuned") for w in results["backends"].values()}
    if tuned == {True}:
        return (
            " Each process let glibc keep large freed blocks for reuse "
            "(`zoo.recipes.allocator.tune_allocator`, as the `keras-seq` "
            "commands do), for every implementation in it."
        )
    return ""


def _header(results, peak):
    machine = results["machine"]
    versions = {}
    loads = [results["load"].get("start"), results["load"].get("end")]
    for worker in results["backends"].values():
        versions.update(worker.get("versions", {}))
        loads += [worker["load"].get("start"), worker["load"].get("end")]
    loads = [x for x in loads if x is not None]
    minutes = results.get("wall_seconds", 0) / 60
    repeats = {w.get("repeats") for w in results["backends"].values()}
    lines = [
        "## Benchmarks",
        "",
        f"Generated by `{results['command'].strip()}` on {results['started']} "
        f"in {minutes:.1f} minutes. Machine: {machine['cpu']}, "
        f"{machine['logical_cpus']} logical CPUs, {_device_words(machine)}. "
        + ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
        + ".",
        "",
        f"Each figure is the median of {', '.join(map(str, sorted(repeats)))} "
        "repetitions after a warm-up, with the implementations timed "
        "round-robin in one process per backend. The CPU is shared: the "
        "1-minute load average read "
        + (f"{min(loads):.1f} to {max(loads):.1f}" if loads else "n/a")
        + " during the run (2 = both cores busy), so compare ratios within a "
        "table rather than absolute figures across runs."
        + _decoding_processes_note(results)
        + _allocator_note(results),
        "",
    ]
    if peak[0]:
        cpu_peak = best_matmul(results, cpu=True)
        per_cpu = (
            f" and {cpu_peak[0] / 1e9:,.1f} GFLOP per second of processor time "
            f"({cpu_peak[1]}; MFU, CPU time divides model FLOPs per "
            "processor-second by it)"
            if cpu_peak[0]
            else ""
        )
        lines += [
            f"Best measured float32 matmul rate: {peak[0] / 1e9:,.1f} GFLOP/s "
            f"({peak[1]}){per_cpu}; MFU is model FLOP/s over it. Model FLOPs of a "
            "training step: 6 x matmul weights x tokens (attention "
            "projections, feed-forward and output layers; every position, "
            "padding included) plus the attention matmuls Q K^T and A V "
            "(2 B T S D each, x 3 for the backward pass).",
            "",
        ]
    return "\n".join(lines)


def matmul_section(results):
    rows = []
    for backend, worker in results["backends"].items():
        for library, rate in worker.get("matmul", {}).items():
            wall, cpu = _rates(rate)
            rows.append(
                [
                    library,
                    f"{backend} process",
                    _number(wall / 1e9, 1),
                    _number(cpu / 1e9 if cpu else None, 1),
                ]
            )
    if not rows:
        return ""
    header = [
        "library",
        "measured in",
        "float32 matmul GFLOP/s",
        "GFLOP per processor-second",
    ]
    return "### Matmul rate\n\n" + _table(header, rows) + "\n"


def _device_words(machine):
    """Where the figures were computed, from `machine["gpu"]`."""
    gpu = machine.get("gpu", "none (CPU only)")
    if gpu.startswith("none"):
        return "no GPU (every figure is CPU)"
    return f"GPU {gpu} (PyTorch and the Keras backends compute there)"


def render(results):
    """The whole Markdown report."""
    peak = best_matmul(results)
    cpu_peak = best_matmul(results, cpu=True)[0]
    sections = [
        _header(results, peak),
        targets_section(results, peak[0], cpu_peak),
        matmul_section(results),
    ]
    names = []
    for worker in results["backends"].values():
        for name in worker.get("training", {}):
            if name not in names:
                names.append(name)
    sections += [training_section(results, name, peak[0], cpu_peak) for name in names]
    sections += [
        decoding_section(results),
        positions_section(results),
        serving_section(results),
        memory_section(results),
    ]
    return "\n".join(s for s in sections if s)


# The accelerator's targets (issue: the zoo on a GPU).
ACCELERATOR_TRAINING_TARGET = 1.25  # x the fastest peer, `base` in bf16
ACCELERATOR_MFU_TARGET = 0.35  # of the measured bf16 matmul rate
BEAM_PROCESSOR_SHARE = 0.5  # beam search's processor time / its wall time
COMPUTE_DTYPE = {"mixed_bfloat16": "bfloat16", "float32": "float32"}


def _peak(results, dtype):
    """(best matmul FLOP/s in `dtype` over the libraries, library)."""
    rates = results.get("matmul", {}).get(dtype, {})
    return max(((_rates(r)[0], lib) for lib, r in rates.items()), default=(0, None))


def _loss(row):
    if row.get("loss_is_nan"):
        return "**NaN**"
    return "n/a" if row.get("loss") is None else f"{row['loss']:.3f}"


def accelerator_training_section(results, name):
    rows = _timed(results["training"][name])
    if not rows:
        return ""
    policy = next(iter(rows.values())).get("policy", "float32")
    dtype = COMPUTE_DTYPE[policy]
    peak, _ = _peak(results, dtype)
    fastest_peer = _fastest(rows, ours=False)
    table_rows = []
    for row in rows.values():
        flops = row["flops_per_s"]
        table_rows.append(
            [
                row["implementation"],
                "eager" if row["xla"] is None else "jit",
                _number(row["step_ms"], 2),
                _number(row["cpu_step_ms"], 2),
                _number(row["tokens_per_s"]),
                _number(flops / 1e12, 1),
                f"{100 * flops / peak:.1f}%" if peak else "n/a",
                _ratio(row["tokens_per_s"] / fastest_peer if fastest_peer else None),
                _loss(row),
            ]
        )
    header = [
        "implementation",
        "mode",
        "step (ms)",
        "processor time (ms)",
        "target tokens/s",
        "model TFLOP/s",
        f"share of the {dtype} matmul rate",
        "vs fastest peer",
        "last loss",
    ]
    title = f"### Training, `{name}` ({policy})"
    note = ""
    if any(r.get("loss_is_nan") for r in rows.values()):
        nan = [r["implementation"] for r in rows.values() if r.get("loss_is_nan")]
        note = (
            f"\nThe loss of {', '.join(nan)} was NaN: its step time is not "
            "that of a working training step.\n"
        )
    return f"{title}\n\n" + _table(header, table_rows) + "\n" + note


def accelerator_decoding_section(results):
    decoding = results.get("decoding")
    if not decoding:
        return ""
    batches = sorted(decoding, key=int)
    keys = list(decoding[batches[0]])
    header = ["implementation", "decoding"]
    for batch in batches:
        header += [f"batch {batch} (ms)", f"batch {batch} processor time (ms)"]
    table_rows = []
    for key in keys:
        name, method = key.split(" | ")
        cells = [name, method]
        for batch in batches:
            entry = decoding[batch].get(key)
            cells += [
                _number(entry["ms"], 2) if entry else "n/a",
                _number(entry["cpu_ms"], 2) if entry else "n/a",
            ]
        table_rows.append(cells)
    config = results.get("decoding_config", "small")
    tokens = results.get("new_tokens", 32)
    title = f"### Decoding, `{config}`, {tokens} new tokens"
    lines = [title, "", _table(header, table_rows)]
    agrees = results.get("decoding_agrees")
    if agrees is not None:
        lines += [
            "",
            "Cached greedy tokens equal recomputed ones: "
            + ("yes." if agrees else "**no**."),
        ]
    return "\n".join(lines) + "\n"


def accelerator_targets_section(results):
    """The issue's GPU targets, each with its figure and a verdict."""
    lines = []
    for name, rows in results.get("training", {}).items():
        rows = _timed(rows)
        policy = next(iter(rows.values()), {}).get("policy", "float32")
        if policy != "mixed_bfloat16" or not rows:
            continue
        best = _best_by_implementation(rows)
        peers = {k: v for k, v in best.items() if k != OURS}
        if OURS in best and peers:
            ratio = best[OURS] / max(peers.values())
            lines.append(
                f"- Training, `{name}`: ours {ratio:.2f}x the fastest peer (target "
                f"{ACCELERATOR_TRAINING_TARGET}x): "
                f"{_verdict(ratio >= ACCELERATOR_TRAINING_TARGET)}."
            )
        peak, _ = _peak(results, "bfloat16")
        ours = [r["flops_per_s"] for r in rows.values() if r["implementation"] == OURS]
        if peak and ours:
            share = max(ours) / peak
            lines.append(
                f"- Training, `{name}`: ours at {100 * share:.1f}% of the measured "
                f"bfloat16 matmul rate (target {100 * ACCELERATOR_MFU_TARGET:.0f}%): "
                f"{_verdict(share >= ACCELERATOR_MFU_TARGET)}."
            )
    decoding = results.get("decoding", {})
    for batch in sorted(decoding, key=int):
        d = decoding[batch]
        for method, title in (
            ("cached greedy", "Cached greedy decoding"),
            ("beam", "Beam search"),
        ):
            ours, hub = d.get(f"{OURS} | {method}"), d.get(f"{HUB} | {method}")
            if ours and hub:
                ratio = hub["ms"] / ours["ms"]
                lines.append(
                    f"- {title}, batch {batch}: ours {ratio:.2f}x "
                    f"keras-hub's speed (target 1x): {_verdict(ratio >= 1)}."
                )
        beam = d.get(f"{OURS} | beam")
        if beam:
            share = beam["cpu_ms"] / beam["ms"]
            lines.append(
                f"- Beam search, batch {batch}: processor time {100 * share:.0f}% "
                f"of its wall time (target under {100 * BEAM_PROCESSOR_SHARE:.0f}%): "
                f"{_verdict(share < BEAM_PROCESSOR_SHARE)}."
            )
    return _targets_section(lines)


def accelerator_matmul_section(results):
    rows = []
    for dtype, rates in results.get("matmul", {}).items():
        for library, rate in rates.items():
            rows.append([library, dtype, _number(_rates(rate)[0] / 1e12, 1)])
    if not rows:
        return ""
    header = ["library", "dtype", "matmul TFLOP/s"]
    return "### Matmul rate\n\n" + _table(header, rows) + "\n"


def render_accelerator(results):
    """The Markdown of `python -m benchmarks.run --accelerator`."""
    versions = results.get("versions", {})
    devices = results.get("device", {})
    head = [
        "## Benchmarks on an accelerator",
        "",
        f"Generated by `{results['command'].strip()}` on {results['started']} "
        f"in {results.get('wall_seconds', 0) / 60:.1f} minutes. Device: "
        f"{results['accelerator']}"
        + "".join(f"; {lib} on {where}" for lib, where in sorted(devices.items()))
        + ". "
        + ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
        + ".",
        "",
        "Keras backend JAX (XLA). Each figure is the median of the repetitions "
        "after a warm-up; each training implementation runs in a process of "
        "its own. Processor time is the whole process's (all threads): where "
        "it approaches the wall time, the host is busy for the whole call. "
        "Model FLOPs of a training step as on the CPU (`config.training_flops`); "
        "the share divides model FLOP/s by the matmul rate measured here in the "
        "policy's compute dtype.",
        "",
    ]
    if results.get("complete") is False:
        head += [
            "**Partial**: written after each finished process; the run had not "
            "finished when these were written, so the tables below hold only "
            "what it had measured by then.",
            "",
        ]
    sections = ["\n".join(head), accelerator_targets_section(results)]
    sections.append(accelerator_matmul_section(results))
    sections += [
        accelerator_training_section(results, name) for name in results["training"]
    ]
    sections.append(accelerator_decoding_section(results))
    return "\n".join(s for s in sections if s)


README_START = "<!-- benchmarks:start -->"
README_END = "<!-- benchmarks:end -->"


def update_readme(path, markdown, stem="benchmarks"):
    """Replace the text between a README's `<!-- {stem}:start -->` and
    `<!-- {stem}:end -->` markers with `markdown`.

    `stem` is the results' file name (`run.output_stem`): the TensorFlow
    and JAX tables and the PyTorch ones each have their markers.

    The report's own "## Benchmarks" title is left out: the README gives the
    section its title (benchmarks/README.md, "Latest results").
    """
    with open(path, encoding="utf-8") as file:
        text = file.read()
    start, end = f"<!-- {stem}:start -->", f"<!-- {stem}:end -->"
    if start not in text or end not in text:
        raise ValueError(f"{path} has no {start} ... {end} markers")
    body = (
        markdown.split("\n", 1)[1].strip() if markdown.startswith("## ") else markdown
    )
    body = body.replace("\n### ", "\n#### ")  # One level below README's section.
    if body.startswith("### "):
        body = "#" + body
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    with open(path, "w", encoding="utf-8") as file:
        file.write(f"{head}{start}\n{body}\n{end}{tail}")


def main(argv=None):
    """`python -m benchmarks.report RESULTS.json [--readme benchmarks/README.md]`."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("results", help="benchmarks.json written by run.py")
    parser.add_argument("--readme", help="also update this file between its markers")
    args = parser.parse_args(argv)
    with open(args.results, encoding="utf-8") as file:
        results = json.load(file)
    markdown = render(results)
    print(markdown)
    if args.readme:
        update_readme(args.readme, markdown, results.get("stem", "benchmarks"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
