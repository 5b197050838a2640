"""The one page of ``ragassay label``: plain HTML, CSS and script, no build step, no network. Data
comes from /api/state as JSON and goes on screen through textContent only."""

from __future__ import annotations

_PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ragassay label</title>
<style nonce="__NONCE__">
:root { --fg: #1d2433; --muted: #5b6578; --line: #d8dde6; --accent: #2557d6; --bg: #f6f7f9; --mark: #ffe58a; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: baseline; padding: 10px 18px; background: #fff;
  border-bottom: 1px solid var(--line); }
header h1 { font-size: 16px; margin: 0; }
header .muted { color: var(--muted); font-size: 13px; }
main { display: grid; grid-template-columns: minmax(0, 1fr) 340px; gap: 16px; padding: 16px 18px; max-width: 1280px;
  margin: 0 auto; }
@media (max-width: 820px) { main { grid-template-columns: minmax(0, 1fr); } }
section, aside > div { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; }
aside { display: flex; flex-direction: column; gap: 12px; }
h2 { font-size: 19px; margin: 0 0 6px; }
h3 { font-size: 13px; margin: 12px 0 4px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.need, .answer { color: var(--muted); white-space: pre-wrap; }
.text { white-space: pre-wrap; max-height: 46vh; overflow: auto; border: 1px solid var(--line); border-radius: 6px;
  padding: 10px 12px; background: #fcfcfd; }
mark { background: var(--mark); padding: 0 1px; border-radius: 2px; }
.scale { display: grid; gap: 6px; margin-top: 14px; }
.scale button { display: grid; grid-template-columns: 34px 1fr; gap: 10px; align-items: center; text-align: left;
  font: inherit; padding: 7px 10px; border: 1px solid var(--line); border-radius: 6px; background: #fff;
  cursor: pointer; }
.scale button:hover, .scale button:focus-visible { border-color: var(--accent); outline: none; }
.scale button.chosen { border-color: var(--accent); background: #eef3ff; }
.scale kbd { font: 600 14px ui-monospace, monospace; text-align: center; border: 1px solid var(--line);
  border-radius: 4px; padding: 2px 0; }
.feedback { min-height: 1.5em; margin-top: 10px; color: var(--muted); }
.keys { color: var(--muted); font-size: 13px; }
.keys kbd { font: 12px ui-monospace, monospace; border: 1px solid var(--line); border-radius: 3px; padding: 0 4px; }
.stat { display: flex; justify-content: space-between; gap: 8px; font-variant-numeric: tabular-nums; }
.stat span:first-child { white-space: nowrap; }
.bar { height: 6px; background: var(--line); border-radius: 3px; overflow: hidden; margin: 6px 0; }
.bar > div { height: 100%; background: var(--accent); }
#skipbox { display: none; margin-top: 10px; gap: 8px; }
#skipbox.open { display: flex; }
#skipbox input { flex: 1; font: inherit; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; }
.review { color: #8a5a00; }
.context { border-left: 3px solid var(--line); padding-left: 10px; margin: 6px 0; white-space: pre-wrap; }
.ctxid { font: 600 12px ui-monospace, monospace; color: var(--muted); }
</style>
</head>
<body>
<header><h1>ragassay label</h1><span class="muted" id="who"></span><span class="muted" id="where"></span></header>
<main>
<section aria-live="polite">
  <div id="item"></div>
  <div class="scale" id="scale"></div>
  <div id="skipbox"><input id="reason" placeholder="why skip? (Enter to skip, Esc to cancel)" maxlength="300"></div>
  <div class="feedback" id="feedback"></div>
</section>
<aside>
  <div><h3>Progress</h3><div class="bar"><div id="bar"></div></div><div id="progress"></div></div>
  <div><h3>You and the model</h3><div id="agreement"></div></div>
  <div id="peoplebox"><h3>You and other people</h3><div id="people"></div></div>
  <div class="keys" id="keyhint"></div>
</aside>
</main>
<script nonce="__NONCE__">
"use strict";
const TOKEN = "__TOKEN__";
let S = null, pos = 0, shownAt = performance.now(), chain = Promise.resolve();
// keys are handled one after another, each on the item shown when its turn comes: a fast labeller's
// second key labels the next item, never the same one twice, and none is dropped
function enqueue(f) { chain = chain.then(f).catch((e) => { $("feedback").textContent = "not saved: " + e.message; }); }
const $ = (id) => document.getElementById(id);
function el(tag, text, cls) { const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; }
async function api(path, body) {
  const opts = body === undefined ? { headers: { "X-Token": TOKEN } }
    : { method: "POST", headers: { "X-Token": TOKEN, "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const r = await fetch(path, opts);
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || r.status);
  return data;
}
function done(key) { return key in S.labels || key in S.skipped; }
function firstOpen() { const i = S.items.findIndex((it) => !done(it.key)); return i < 0 ? S.items.length : i; }
const STOP = new Set(
  ("the and for are was were with what when where which who how does did can you your from that this have has not "
   + "but about into than then there their they them its our out any all per").split(" "));
function queryWords(q) {
  return Array.from(new Set((q.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) || []).filter((w) => !STOP.has(w)))); }
function highlighted(text, words) {
  const box = document.createDocumentFragment();
  if (!words.length) { box.appendChild(document.createTextNode(text)); return box; }
  const esc = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const re = new RegExp("(?<![\\p{L}\\p{N}])(" + esc.join("|") + ")[\\p{L}\\p{N}]*", "giu");
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) box.appendChild(document.createTextNode(text.slice(last, m.index)));
    box.appendChild(el("mark", m[0]));
    last = m.index + m[0].length;
  }
  if (last < text.length) box.appendChild(document.createTextNode(text.slice(last)));
  return box;
}
function keyHint() {
  const box = $("keyhint"); box.replaceChildren();
  const add = (keys, what) => { keys.forEach((k) => { box.appendChild(el("kbd", k));
    box.appendChild(document.createTextNode(" ")); }); box.appendChild(document.createTextNode(what + "  ")); };
  add(S.scale.map((s) => s.key), "label \u00b7");
  add(["\u2190", "\u2192"], "move \u00b7");
  add(["u"], "undo \u00b7");
  add(["s"], "skip");
}
function render() {
  const item = $("item"); item.replaceChildren();
  keyHint();
  $("who").textContent = "assessor: " + S.assessor + (
    S.show_model ? " (model's labels shown)" : " (blind: the model's label shows once you have labelled)");
  $("where").textContent = "labels go to " + S.output;
  const p = S.progress;
  $("progress").replaceChildren(
    el("div", p.labelled + " of " + p.total + " labelled" + (p.skipped ? ", " + p.skipped + " skipped" : "")),
    el("div", p.seconds_per_label === null ? "" : p.seconds_per_label + " s a label"));
  $("bar").style.width = (100 * (p.labelled + p.skipped) / Math.max(1, p.total)) + "%";
  renderAgreement($("agreement"), S.agreement, "the model");
  const people = Object.entries(S.people);
  $("peoplebox").style.display = people.length ? "" : "none";
  $("people").replaceChildren(...people.map(([name, a]) => { const d = el("div"); renderAgreement(d, a, name);
    return d; }));
  const scale = $("scale"); scale.replaceChildren();
  if (pos >= S.items.length) {
    item.appendChild(el("h2", "All " + S.items.length + " items are done."));
    item.appendChild(el("p",
      "Your labels are in " + S.output + ". Press \u2190 to review, u to undo the last one, or close this tab."));
    return;
  }
  const it = S.items[pos], sh = it.show, mine = S.labels[it.key];
  const reviewing = done(it.key);
  item.appendChild(el("div",
    (pos + 1) + " / " + S.items.length + (reviewing ? (it.key in S.skipped ? "  (skipped: " + S.skipped[it.key] +
      ")" : "  (you labelled this: change it with a key)") : ""), reviewing ? "review" : "keys"));
  if (S.task === "pairs") {
    item.appendChild(el("h2", sh.question));
    if (sh.need) item.appendChild(el("div", sh.need, "need"));
    if (sh.answer) { item.appendChild(el("h3", "What a good answer contains")); item.appendChild(el("div", sh.answer,
      "answer")); }
    item.appendChild(el("h3", "Chunk " + sh.chunk_id + (sh.title ? " \u2014 " + sh.title : "")));
    const text = el("div", null, "text"); text.appendChild(highlighted(sh.text, queryWords(sh.question)));
      item.appendChild(text);
  } else {
    item.appendChild(el("h2", sh.question));
    item.appendChild(el("h3", "Reference" + (sh.reference.length > 1 ? " (any of these)" : "")));
    sh.reference.forEach((r) => item.appendChild(el("div", r, "answer")));
    item.appendChild(el("h3", "Response"));
    item.appendChild(el("div", sh.response, "text"));
    if (sh.contexts.length) {
      item.appendChild(el("h3", "Retrieved context (" + sh.contexts.length + ")"));
      const ctx = el("div", null, "text");
      sh.contexts.forEach((c, i) => {
        const box = el("div", null, "context");
        box.appendChild(el("div", (c.id === null ? "#" + (i + 1) : c.id) + (c.title ? " \u2014 " + c.title : ""),
          "ctxid"));
        box.appendChild(c.text === null ? el("div", "(no text: this id is not in the chunks given)", "keys")
                                        : highlighted(c.text, queryWords(sh.question)));
        ctx.appendChild(box);
      });
      item.appendChild(ctx);
    }
  }
  for (const s of S.scale) {
    const b = el("button", null, mine === s.value ? "chosen" : "");
    b.type = "button"; b.dataset.value = String(s.value);
    b.appendChild(el("kbd", s.key)); b.appendChild(el("span", (S.task === "pairs" ? "" : s.value + ": ") + s.meaning));
    b.addEventListener("click", () => enqueue(() => give(s.value)));
    scale.appendChild(b);
  }
  if (it.model !== null && (S.show_model || reviewing)) $("feedback").textContent = "the model said: " + it.model + (
    mine !== undefined ? "; you: " + mine : "");
}
function fmt(x) { return x === null || x === undefined ? "\u2013" : x.toFixed(3); }
function ci(i) { return i ? " [" + fmt(i[0]) + ", " + fmt(i[1]) + "]" : ""; }
function renderAgreement(box, a, who) {
  box.replaceChildren();
  if (!a || !a.n) { box.appendChild(el("div",
    who === "the model" && !S.items.some((
      i) => i.has_model) ? "no model labels given (pass --judgments or --checks)" : "no labels in common yet"));
      return; }
  const rows = [["labels in common", String(a.n)], ["exact agreement", fmt(a.exact)], ["kappa, 4 classes",
    fmt(a.kappa) + ci(a.interval)],
                [S.task === "pairs" ? "kappa, grade \u2265 2" : "kappa, correct or not",
                  fmt(a.binary_kappa) + ci(a.binary_interval)]];
  if (who !== "the model") box.appendChild(el("div", who));
  for (const [k, v] of rows) { const d = el("div", null, "stat"); d.appendChild(el("span", k));
    d.appendChild(el("span", v)); box.appendChild(d); }
  if (a.more_labels !== null) box.appendChild(el("div",
    a.more_labels === 0 ? "the 95% interval is narrower than " + S.target_width : "about " + a.more_labels +
      " more labels would narrow the 95% interval to " + S.target_width, "keys"));
}
async function act(path, body) {
  S = await api(path, body);
  return S;
}
async function give(value) {
  if (pos >= S.items.length) return;
  const it = S.items[pos];
  const r = await act("/api/label", { key: it.key, value: value, seconds: (performance.now() - shownAt) / 1000 });
  if (!r) return;
  const d = r.done;
  $("feedback").textContent = d.model === null || d.model === undefined ? "saved: " + d.value : "saved: " + d.value +
    " \u2014 the model said " + d.model;
  pos = firstOpen(); shownAt = performance.now(); render();
}
async function undo() {
  const r = await act("/api/undo", {});
  if (!r) return;
  const k = r.done.undone;
  $("feedback").textContent = k === null ? "nothing to undo" : "undone";
  if (k !== null) pos = S.items.findIndex((i) => i.key === k);
  shownAt = performance.now(); render();
}
function openSkip() { $("skipbox").classList.add("open"); $("reason").value = ""; $("reason").focus(); }
async function skip() {
  const reason = $("reason").value.trim() || "no reason given";
  $("skipbox").classList.remove("open");
  const r = await act("/api/skip", { key: S.items[pos].key, reason: reason });
  if (!r) return;
  $("feedback").textContent = "skipped";
  pos = firstOpen(); shownAt = performance.now(); render();
}
const COMMANDS = new Set(["arrowright", "arrowleft", "u", "backspace", "s"]);
document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (document.activeElement === $("reason")) {
    if (e.key === "Enter") { e.preventDefault(); enqueue(skip); }
    if (e.key === "Escape") { $("skipbox").classList.remove("open"); $("reason").blur(); }
    return;
  }
  const k = e.key.toLowerCase();
  if (!COMMANDS.has(k) && !/^[0-3cpha]$/.test(k)) return;
  e.preventDefault();
  enqueue(() => onKey(k));  // read at its turn: after the items have loaded and earlier keys are done
});
function onKey(k) {
  const s = S.scale.find((x) => x.key === k);
  if (s) return give(s.value);
  if (k === "arrowright" || k === "arrowleft") {
    pos = k === "arrowright" ? Math.min(S.items.length, pos + 1) : Math.max(0, pos - 1);
    $("feedback").textContent = ""; shownAt = performance.now(); render();
  } else if (k === "u" || k === "backspace") return undo();
  else if (k === "s" && pos < S.items.length) openSkip();
}
enqueue(async () => {
  try { S = await api("/api/state"); } catch (e) { $("item").replaceChildren(el("p", "cannot load: " + e.message));
    throw e; }
  pos = firstOpen(); shownAt = performance.now(); render();
});
</script>
</body>
</html>
"""


def page(token: str, nonce: str) -> str:
    """The page, with the server's token (URL-safe characters only) and the CSP nonce filled in."""
    return _PAGE.replace("__TOKEN__", token).replace("__NONCE__", nonce)
