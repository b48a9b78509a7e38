"""The page at `/`: type sentences, see every text signature's answer.

One self-contained HTML document (no scripts or styles fetched from
elsewhere, so it works on a machine without internet). Its script calls
the same `:predict` route as any client, once per signature that takes
text (for a translator: greedy `serving_default` and the n-best lists of
`beam_search` with their scores), and shows the server's `error` text when
a request is refused. A server that streams (CTranslate2's) also shows
each greedy translation as its words come, from `:stream`, with a box for
the start of the translation.
"""

import html
import json

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>keras-seq serve: __TITLE__</title>
<style>
 body { font-family: sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
        color: #222; }
 textarea { width: 100%; font-size: 1rem; box-sizing: border-box; }
 button { font-size: 1rem; margin: .5rem 0; padding: .3rem 1.2rem; }
 #error { color: #a00; white-space: pre-wrap; }
 .sentence { margin: 1rem 0; border-top: 1px solid #ccc; padding-top: .5rem; }
 .source { font-weight: bold; }
 table { border-collapse: collapse; margin: .3rem 0 .3rem 1rem; }
 td, th { padding: .1rem .6rem; text-align: left; vertical-align: top; }
 th { color: #555; font-weight: normal; }
 .score { font-family: monospace; color: #555; }
 .streamed { margin: .3rem 0 .3rem 1rem; font-style: italic; }
 .meta { color: #666; font-size: .9rem; }
</style>
</head>
<body>
<h1>__TITLE__</h1>
<p class="meta">Model <code>__NAME__</code>, version __VERSION__, served by
<code>keras-seq serve</code> through TF Serving's REST API
(<code>POST /v1/models/__NAME__:predict</code>). One sentence per line.</p>
<textarea id="sentences" rows="5" placeholder="Ich habe keine Zeit."></textarea>
<div id="streaming" hidden><label class="meta">The start of each streamed
translation (optional): <input id="prefix" size="30"></label></div>
<br><button id="run">Run</button> <span id="busy" class="meta"></span>
<div id="error" role="alert"></div>
<div id="results"></div>
<script>
const MODEL = __MODEL_JSON__;
const SIGNATURES = __SIGNATURES_JSON__;
// A server that streams (`:stream`, Server-Sent Events) shows each greedy
// translation as its words come, after the signatures' answers.
const STREAMS = __STREAMS_JSON__;
document.getElementById("streaming").hidden = !STREAMS;

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
}

function show(value) {
  return typeof value === "number" ? value.toFixed(4) : String(value);
}

// One table per signature: a row per output, or per hypothesis when the
// outputs are parallel lists (translations with their scores).
function table(signature, prediction) {
  const t = document.createElement("table");
  t.className = "signature";
  t.dataset.signature = signature;
  const head = t.insertRow();
  const th = document.createElement("th");
  th.textContent = signature;
  th.colSpan = 2;
  head.appendChild(th);
  const values = typeof prediction === "object" && !Array.isArray(prediction)
    ? prediction : {"": prediction};
  const names = Object.keys(values);
  const lists = names.filter((n) => Array.isArray(values[n]));
  if (lists.length === names.length && lists.length === 2) {
    const [text, score] = typeof values[lists[0]][0] === "string"
      ? lists : [lists[1], lists[0]];
    values[text].forEach((hypothesis, i) => {
      const row = t.insertRow();
      row.className = "hypothesis";
      cell(row, hypothesis, "output");
      cell(row, show(values[score][i]), "score");
    });
  } else {
    names.forEach((name) => {
      const row = t.insertRow();
      cell(row, Array.isArray(values[name])
        ? values[name].map(show).join(", ") : show(values[name]), "output");
      if (name) cell(row, name, "score");
    });
  }
  return t;
}

async function predict(signature, lines) {
  const response = await fetch(`/v1/models/${MODEL}:predict`, {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({signature_name: signature, instances: lines}),
  });
  const body = await response.json();
  if (!response.ok) {
    throw new Error(`${signature}: ${body.error} (HTTP ${response.status})`);
  }
  return body.predictions;
}

async function stream(line, prefix, target) {
  const request = {sentence: line};
  if (prefix) request.target_prefix = prefix;
  const response = await fetch(`/v1/models/${MODEL}:stream`, {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify(request),
  });
  if (!response.ok) {
    const body = await response.json();
    throw new Error(`stream: ${body.error} (HTTP ${response.status})`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, {stream: true});
    let end;
    while ((end = buffer.indexOf("\\n\\n")) >= 0) {
      const fields = {};
      buffer.slice(0, end).split("\\n").forEach((field) => {
        const colon = field.indexOf(": ");
        fields[field.slice(0, colon)] = field.slice(colon + 2);
      });
      buffer = buffer.slice(end + 2);
      if (fields.event === "end") return;
      const data = JSON.parse(fields.data);
      if (fields.event === "error") throw new Error(`stream: ${data.error}`);
      target.textContent += data.text;
    }
  }
}

async function run() {
  const lines = document.getElementById("sentences").value.split("\\n")
    .filter((line) => line.trim() !== "");
  const error = document.getElementById("error");
  const results = document.getElementById("results");
  error.textContent = "";
  results.textContent = "";
  document.getElementById("busy").textContent = "working...";
  try {
    const answers = await Promise.all(SIGNATURES.map((s) => predict(s, lines)));
    lines.forEach((line, i) => {
      const block = document.createElement("div");
      block.className = "sentence";
      const source = document.createElement("div");
      source.className = "source";
      source.textContent = line;
      block.appendChild(source);
      SIGNATURES.forEach((s, j) => block.appendChild(table(s, answers[j][i])));
      results.appendChild(block);
    });
    if (STREAMS) {
      const prefix = document.getElementById("prefix").value;
      const blocks = results.getElementsByClassName("sentence");
      for (let i = 0; i < lines.length; i++) {
        const streamed = document.createElement("div");
        streamed.className = "streamed";
        blocks[i].appendChild(streamed);
        await stream(lines[i], prefix, streamed);
      }
    }
  } catch (e) {
    error.textContent = e.message;
  } finally {
    document.getElementById("busy").textContent = "";
    document.body.dataset.done = String(Date.now());
  }
}

document.getElementById("run").addEventListener("click", run);
</script>
</body>
</html>
"""


def render(server):
    """The page for `server` (a `ModelServer`), or a short note while loading."""
    if server.servable is None:
        names = []
    else:
        # The default signature first, then the others that take text.
        names = sorted(
            (s.name for s in server.servable.signatures.values() if s.takes_text),
            key=lambda name: (name != "serving_default", name),
        )
    title = f"{server.model_name} ({server.state.lower()})"
    replacements = {
        "__MODEL_JSON__": json.dumps(server.model_name),
        "__SIGNATURES_JSON__": json.dumps(names),
        "__STREAMS_JSON__": json.dumps(hasattr(server.servable, "stream")),
        "__TITLE__": html.escape(title),
        "__NAME__": html.escape(server.model_name),
        "__VERSION__": str(server.version),
    }
    text = _PAGE
    for key, value in replacements.items():
        text = text.replace(key, value)
    return text
