"""`keras-seq serve` under load: throughput and latency at 1, 8 and 32 clients.

Each server runs in its own process (`python -m zoo.cli serve`), as a user
starts it: the SavedModel's, and beside it each CTranslate2 export given
with `--ctranslate2` (`serve --ctranslate2 DIR`, float32 or int8). Each
client is a thread with one kept-alive HTTP connection sending one
sentence a request, the next as soon as the answer is in. Greedy
(`serving_default`) and beam search (`beam_search`) are loaded in turn;
at each number of clients the servers take the same requests one after
the other, so a burst of load elsewhere on the machine falls on all of
them alike. Next to them, the same sentences one at a time in process:
through `TrainedModel.translate` (the Keras model, when `--model-dir` is
given), through the SavedModel's signature called directly (no HTTP) and
through `CTranslate2Model`, so a server's own cost reads as the
difference. An endurance run then sends `--endurance` requests (greedy
and beam alternating) to each server and reads its resident memory
(Linux `/proc`) after the first tenth and at the end.

    python -m benchmarks.serve_load --saved-model served/translator \\
        --model-dir runs/translator --ctranslate2 served/ct2 served/ct2-int8

writes `benchmarks/results/serve_load.json` and `serve_load.md`. Test
sentences come from the test split of `trans-de-en` when installed.
"""

import argparse
import http.client
import json
import os
import platform
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

import numpy as np

SIGNATURES = {"greedy": "serving_default", "beam": "beam_search"}
SAVED_MODEL = "saved_model"
FALLBACK = ["Ich habe keine Zeit.", "Wo ist der Bahnhof?", "Das ist gut!"]


def test_sentences(count):
    """`count` German sentences of the trans-de-en test split (or a few)."""
    try:
        from keras_seq.data import translation

        sentences = [source for source, _ in translation.load_trans_de_en().test]
    except (OSError, ValueError):
        sentences = FALLBACK
    return [sentences[i % len(sentences)] for i in range(count)]


def summary(latencies, seconds, failed):
    """Requests a second and latency percentiles (ms) of one run."""
    latencies = np.asarray(latencies) * 1e3
    return {
        "requests": int(latencies.size + failed),
        "failed": int(failed),
        "seconds": round(seconds, 3),
        "per_s": round(latencies.size / seconds, 2) if seconds else None,
        "p50_ms": round(float(np.percentile(latencies, 50)), 2),
        "p99_ms": round(float(np.percentile(latencies, 99)), 2),
        "mean_ms": round(float(latencies.mean()), 2),
    }


def median_round(rows):
    """The round of median requests a second (the lower middle one of an
    even count), its latencies with it; `per_s_rounds` lists every round's
    and `requests` and `failed` count them all."""
    ordered = sorted(rows, key=lambda row: row["per_s"])
    row = dict(ordered[(len(ordered) - 1) // 2])
    row["per_s_rounds"] = [r["per_s"] for r in rows]
    row["requests"] = sum(r["requests"] for r in rows)
    row["failed"] = sum(r["failed"] for r in rows)
    return row


def rss_bytes(pid):
    """The resident set of process `pid` (Linux), or None elsewhere."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class _Connection:
    """One kept-alive connection; reconnects after the server closes it."""

    def __init__(self, url):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.connection = None

    def post(self, path, body):
        if self.connection is None:
            self.connection = http.client.HTTPConnection(
                self.host, self.port, timeout=300
            )
        try:
            self.connection.request(
                "POST", path, body, {"Content-Type": "application/json"}
            )
            response = self.connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = None
            raise
        if response.getheader("Connection", "").lower() == "close":
            self.connection.close()
            self.connection = None
        return response.status, data


def load(url, name, bodies, clients, on_done=None):
    """Sends `bodies` (bytes) from `clients` threads; a summary of the run.

    Args:
        on_done: called with the number of answered requests after each.
    """
    path = f"/v1/models/{name}:predict"
    lock = threading.Lock()
    state = {"next": 0, "done": 0, "failed": 0}
    latencies = []

    def client():
        connection = _Connection(url)
        while True:
            with lock:
                index = state["next"]
                if index >= len(bodies):
                    return
                state["next"] += 1
            started = time.perf_counter()
            try:
                status, data = connection.post(path, bodies[index])
                ok = status == 200 and b'"predictions"' in data
            except (OSError, http.client.HTTPException):
                ok = False
            elapsed = time.perf_counter() - started
            with lock:
                if ok:
                    latencies.append(elapsed)
                else:
                    state["failed"] += 1
                state["done"] += 1
                done = state["done"]
            if on_done is not None:
                on_done(done)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return summary(latencies, time.perf_counter() - started, state["failed"])


def request_bodies(sentences, signature):
    return [
        json.dumps({"signature_name": signature, "instances": [s]}).encode()
        for s in sentences
    ]


def _timed_one_by_one(function, sentences, warm_up):
    for sentence in sentences[:warm_up]:
        function(sentence)
    latencies = []
    started = time.perf_counter()
    for sentence in sentences:
        start = time.perf_counter()
        function(sentence)
        latencies.append(time.perf_counter() - start)
    return summary(latencies, time.perf_counter() - started, 0)


def in_process(args, sentences):
    """One sentence at a time: the SavedModel called directly, the Keras
    model, the CTranslate2 exports; `{where: {strategy: summary}}`."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    from zoo.recipes.saved_model import latest_version

    loaded = tf.saved_model.load(latest_version(args.saved_model))
    widths = (("greedy", 1), ("beam", args.beam_width))
    rows = {}
    for strategy, signature in SIGNATURES.items():
        function = loaded.signatures[signature]
        rows.setdefault(SAVED_MODEL, {})[strategy] = _timed_one_by_one(
            lambda s, f=function: f(sentences=tf.constant([s])),
            sentences,
            args.warm_up,
        )
    if args.model_dir:
        from zoo.recipes.model_dir import load_model_dir

        trained = load_model_dir(args.model_dir)
        for strategy, width in widths:
            rows.setdefault("translate", {})[strategy] = _timed_one_by_one(
                lambda s, w=width: trained.translate([s], beam_width=w),
                sentences,
                args.warm_up,
            )
    for directory in args.ctranslate2:
        model = _ctranslate2_model(directory)
        row = rows.setdefault(ctranslate2_name(directory), {})
        for strategy, width in widths:
            row[strategy] = _timed_one_by_one(
                lambda s, w=width, m=model: m.translate([s], beam_width=w),
                sentences,
                args.warm_up,
            )
    return rows


def _ctranslate2_model(directory):
    # Imported only when asked for: it needs the `ctranslate2` extra.
    from zoo.serving.ctranslate2_model import CTranslate2Model

    return CTranslate2Model(directory)


def ctranslate2_name(directory):
    """`"ctranslate2 <quantization>"`, as the export recorded it."""
    from zoo.serving.ctranslate2_model import EXPORT_FILE

    with open(os.path.join(directory, EXPORT_FILE)) as file:
        return f"ctranslate2 {json.load(file)['quantization']}"


def start_server(flag, path, name, options=()):
    """`keras-seq serve FLAG PATH` in a new process; (process, url) once it is
    warm. FLAG: `--saved-model` or `--ctranslate2`."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable, "-m", "zoo.cli", "serve", flag, path,
               "--model-name", name, "--port", "0", *options]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    line = process.stdout.readline()
    if " at " not in line:
        process.kill()
        raise RuntimeError(f"the server did not start: {process.stderr.read()}")
    return process, line.split(" at ")[1].strip().rstrip("/")


def endurance(url, name, pid, sentences, total, clients):
    """`total` requests, greedy and beam alternating; RSS at 10% and the end."""
    greedy = request_bodies(sentences, SIGNATURES["greedy"])
    beam = request_bodies(sentences, SIGNATURES["beam"])
    bodies = [
        (greedy if i % 2 == 0 else beam)[i % len(sentences)] for i in range(total)
    ]
    marks = {}
    mark_at = max(total // 10, 1)

    def on_done(done):
        if done == mark_at and pid is not None:
            marks["rss_at_first_tenth"] = rss_bytes(pid)

    result = load(url, name, bodies, clients, on_done)
    result["rss_at_first_tenth"] = marks.get("rss_at_first_tenth")
    result["rss_at_end"] = rss_bytes(pid) if pid is not None else None
    result["first_tenth"] = mark_at
    if result["rss_at_first_tenth"] and result["rss_at_end"]:
        growth = result["rss_at_end"] / result["rss_at_first_tenth"] - 1
        result["rss_growth"] = round(growth, 4)
    return result


def run(args):
    """All measurements; returns the results dict."""
    sentences = test_sentences(args.sentences)
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": os.getloadavg(),
        },
        "settings": {
            key: value for key, value in vars(args).items() if key != "output"
        },
        "in_process": in_process(args, sentences),
        "served": {},
        "endurance": {},
    }
    servers = {SAVED_MODEL: ("--saved-model", args.saved_model)}
    for directory in args.ctranslate2:
        servers[ctranslate2_name(directory)] = ("--ctranslate2", directory)
    options = ["--max-batch-size", str(args.max_batch_size)]
    started = {}
    try:
        for name, (flag, path) in servers.items():
            started[name] = start_server(flag, path, args.model_name, options)
        _load_servers(args, sentences, started, results)
    finally:
        results["server_exit"] = {}
        for name, (process, _) in started.items():
            process.terminate()
            results["server_exit"][name] = process.wait(timeout=120)
    results["machine"]["load_average_at_end"] = os.getloadavg()
    runs = [row for rows in results["served"].values() for row in rows.values()]
    runs += list(results["endurance"].values())
    results["total_requests"] = sum(row["requests"] for row in runs)
    results["total_failed"] = sum(row["failed"] for row in runs)
    return results


def _load_servers(args, sentences, started, results):
    """The loads, each sent to every server in turn (`--rounds` times), then
    the endurance runs."""
    for strategy, signature in SIGNATURES.items():
        bodies = request_bodies(sentences, signature)
        for _, url in started.values():
            load(url, args.model_name, bodies[: args.warm_up], 1)
        for clients in args.clients:
            count = max(len(bodies), clients * args.per_client)
            requests = [bodies[i % len(bodies)] for i in range(count)]
            rounds = {name: [] for name in started}
            for _ in range(args.rounds):
                for name, (_, url) in started.items():
                    row = load(url, args.model_name, requests, clients)
                    rounds[name].append(row)
                    print(f"{name} {strategy} at {clients} clients: {row}", flush=True)
            for name, rows in rounds.items():
                row = median_round(rows)
                results["served"].setdefault(name, {})[f"{strategy} {clients}"] = row
    for name, (process, url) in started.items():
        row = endurance(
            url, args.model_name, process.pid, sentences, args.endurance,
            max(args.clients),
        )  # fmt: skip
        results["endurance"][name] = row
        print(f"{name} endurance: {row}", flush=True)


SERVED_LABELS = {SAVED_MODEL: "`keras-seq serve`"}
IN_PROCESS_LABELS = {
    SAVED_MODEL: "SavedModel, in process",
    "translate": "`TrainedModel.translate`",
}


def _label(name, labels, ctranslate2_label):
    if name in labels:
        return labels[name]
    return ctranslate2_label.format(name.split()[1])


def markdown(results):
    """The tables of `results`, as benchmarks/README.md shows them: each
    server's requests a second also as a ratio to the SavedModel server's
    at the same clients and strategy."""
    lines = [
        "| where | clients | strategy | requests/s | x SavedModel | p50 ms | "
        "p99 ms | failed |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for where, rows in results["in_process"].items():
        label = _label(where, IN_PROCESS_LABELS, "`CTranslate2Model` ({}), in process")
        for how, row in rows.items():
            lines.append(
                f"| {label} | 1 | {how} | {row['per_s']} | | {row['p50_ms']} | "
                f"{row['p99_ms']} | 0 |"
            )
    base = results["served"][SAVED_MODEL]
    for key in base:
        how, clients = key.split()
        for name, rows in results["served"].items():
            row = rows[key]
            label = _label(name, SERVED_LABELS, "`serve --ctranslate2` ({})")
            ratio = row["per_s"] / base[key]["per_s"]
            lines.append(
                f"| {label} | {clients} | {how} | {row['per_s']} | {ratio:.2f}x | "
                f"{row['p50_ms']} | {row['p99_ms']} | {row['failed']} |"
            )
    lines.append("")
    for name, run in results["endurance"].items():
        growth = run.get("rss_growth")
        lines.append(
            f"Endurance, {_label(name, SERVED_LABELS, '`serve --ctranslate2` ({})')}: "
            f"{run['requests']:,} requests (greedy and beam alternating) at "
            f"{max(results['settings']['clients'])} clients, {run['failed']} "
            f"failed, {run['per_s']} requests/s; server RSS "
            f"{_mib(run['rss_at_first_tenth'])} after request "
            f"{run['first_tenth']:,}, {_mib(run['rss_at_end'])} at the end"
            + (f" ({growth:+.1%})." if growth is not None else ".")
        )
    lines.append(
        f"Served rows: the median of {results['settings']['rounds']} round(s). "
        f"All runs: {results['total_failed']} failed of "
        f"{results['total_requests']:,} requests; load average "
        f"{_load(results['machine']['load_average_at_start'])} at the start, "
        f"{_load(results['machine']['load_average_at_end'])} at the end."
    )
    return "\n".join(lines) + "\n"


def _mib(value):
    return f"{value / 2**20:.0f} MiB" if value else "n/a"


def _load(values):
    return "/".join(f"{v:.1f}" for v in values)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saved-model", required=True, help="an export's base")
    parser.add_argument("--model-dir", help="its `keras-seq train` directory")
    parser.add_argument(
        "--ctranslate2",
        nargs="*",
        default=[],
        metavar="DIR",
        help="CTranslate2 exports of the same model, served beside it",
    )
    parser.add_argument("--model-name", default="translator")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument(
        "--per-client", type=int, default=25, help="requests per client and run"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="loads per server and setting (median)"
    )
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument(
        "--warm-up", type=int, default=100, help="sentences run before timing"
    )
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--endurance", type=int, default=10_000)
    parser.add_argument(
        "--output", default="benchmarks/results/serve_load", help="path without suffix"
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    results = run(args)
    table = markdown(results)
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output + ".json", "w") as file:
        json.dump(results, file, indent=1)
    with open(args.output + ".md", "w") as file:
        file.write(table)
    print(table)
    return results


if __name__ == "__main__":
    main()
