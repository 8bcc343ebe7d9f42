// The live page of tau-demo ui.  It only draws the view the server computed (demo/timeline/board.py):
// live, pushed over Server-Sent Events (/api/stream); in replay, fetched for the slider's time (/api/view).
"use strict";

const $ = (id) => document.getElementById(id);
const SVGNS = "http://www.w3.org/2000/svg";
const RUN = new URLSearchParams(location.search).get("run");
const MARK = { marker: "#d32f2f", deadline: "#7b1fa2", decision: "#000000" };
const ROW_H = 26;
const LINES_SHOWN = 2;        // log lines beside a lane; the rest behind "more"
let view = null;
const opened = new Set();     // lanes whose log lines are expanded (kept across redraws)
window.tauSeen = {};          // lane -> when this page first showed it (epoch s): how fast the push is

function el(tag, attrs = {}, text = null) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== null) e.textContent = text;
  return e;
}

function sv(tag, attrs = {}, text = null) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== null) e.textContent = text;
  return e;
}

const rel = (t) => `+${(t - view.t0).toFixed(1)}s`;
const clock = (t) => new Date(t * 1000).toLocaleTimeString();

// The right end of the picture: now while a run is being recorded, else the moment shown.
function until(v) {
  if (v.mode === "live" && v.run && v.run.live) return Math.max(Date.now() / 1000, v.at || 0);
  return v.at;
}

function render(v) {
  view = v;
  const now = Date.now() / 1000;
  for (const l of v.lanes || []) if (!(l.id in window.tauSeen)) window.tauSeen[l.id] = now;
  document.body.dataset.mode = v.mode || "";
  document.body.dataset.outcome = (v.phases && v.phases.outcome) || "";
  document.body.dataset.cluster = v.cluster || "up";
  drawHeader(v);
  drawBanners(v);
  drawPhases(v);
  drawLanes(v);
  drawLegend(v);
}

function drawHeader(v) {
  const run = v.run || {};
  $("title").textContent = run.title || v.label || "tau-demo";
  const bits = [];
  if (run.job) bits.push(`Job demo/${run.job}`);
  if (v.label) bits.push(`log ${v.label}`);
  if (run.started) bits.push(`recorded from ${clock(run.started)}`);
  $("subtitle").textContent = bits.join(" · ");
  const badge = $("badge");
  if (v.mode === "replay") {
    badge.textContent = "replay"; badge.className = "badge replay";
  } else if (run.live) {
    badge.textContent = "● live"; badge.className = "badge live";
  } else {
    badge.textContent = v.empty ? "waiting for a run" : "finished (the newest run)"; badge.className = "badge";
  }
}

function show(id, text, cls) {
  const b = $(id);
  b.hidden = !text;
  b.textContent = text || "";
  if (cls !== undefined) b.className = `banner ${cls}`;
}

function drawBanners(v) {
  const out = v.outages || [];
  const last = out[out.length - 1];
  if (v.cluster === "down" && last) {
    show("cluster", `The cluster does not answer since ${clock(last.start)} (${rel(last.start)}): ${last.detail}. ` +
      "The apiserver is down or restarting; the lanes resume by themselves once it answers.", "down");
  } else if (last) {
    const secs = (last.stop - last.start).toFixed(1);
    show("cluster", `The apiserver did not answer for ${secs}s (${rel(last.start)} to ${rel(last.stop)}); ` +
      "the recorder resumed once it was back.", "");
  } else {
    show("cluster", "");
  }
  show("problems", (v.problems || []).length ? `Lines skipped in the event log: ${v.problems.join("; ")}` : "");
}

function drawPhases(v) {
  const box = $("phases");
  const over = (v.phases && v.phases.over) || "";
  box.dataset.over = over;
  // once the run has ended the server sends the phases over the run: what it reached, not its teardown
  show("phases-caption", over === "run" ? "The run has ended: the phases over the run, as far as each got." : "");
  box.replaceChildren();
  for (const p of (v.phases && v.phases.rows) || []) {
    const d = el("div", { class: `phase ${p.state}`, "data-phase": p.name, "data-state": p.state });
    d.append(el("div", { class: "name" }, `${p.symbol} ${p.name}`), el("div", { class: "detail" }, p.detail));
    box.append(d);
  }
}

function drawLanes(v) {
  const lanes = $("lanes");
  const empty = $("empty");
  empty.hidden = !v.empty;
  if (v.empty) {
    empty.textContent = `No event log under ${v.runs_dir} yet.  Start a scenario (./scenario.sh --ui, or ` +
      "tau-demo scenario run) and it shows here as it runs.";
    lanes.replaceChildren();
    return;
  }
  const label = parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--label")) || 250;
  const logs = parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--logs")) || 420;
  const W = Math.max(200, lanes.clientWidth - label - logs);
  const end = until(v);
  // replay: the axis spans the whole run, so the bars grow as the slider moves; live: up to now
  const tmax = Math.max(v.mode === "replay" ? v.last : end, ...v.markers.map((m) => m.t));
  const span = Math.max(tmax - v.t0, 1) * 1.03;
  const x = (t) => Math.max(0, Math.min(W, ((t - v.t0) / span) * W));
  const rows = [axisRow(v, W, x, span, true)];
  for (const lane of v.lanes) rows.push(laneRow(v, lane, W, x, end));
  rows.push(axisRow(v, W, x, span, false));
  lanes.replaceChildren(...rows);
}

function axisRow(v, W, x, span, top) {
  const row = el("div", { class: "row axis" });
  row.append(el("div", { class: "name" }, top ? "" : "s since the Job"));
  const h = top ? 34 : 22;
  const svg = sv("svg", { width: W, height: h, viewBox: `0 0 ${W} ${h}` });
  if (top) {
    const ends = [-1e9, -1e9];
    for (const m of v.markers) {
      const mx = x(m.t);
      const half = 3.3 * m.label.length;
      const r = mx - half > ends[0] + 6 ? 0 : (mx - half > ends[1] + 6 ? 1 : 0);
      ends[r] = mx + half;
      const anchor = mx + half > W ? "end" : (mx - half < 0 ? "start" : "middle");
      const t = sv("text", { x: mx, y: 12 + 14 * r, "text-anchor": anchor, fill: MARK[m.kind], "font-size": 11 }, m.label);
      t.append(sv("title", {}, `${m.label} at ${clock(m.t)} (${rel(m.t)})${m.detail ? ": " + m.detail : ""}`));
      svg.append(t);
    }
  } else {
    const raw = span / 8;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw);
    for (let k = 0; k * step <= span; k++) {
      const tx = x(v.t0 + k * step);
      svg.append(sv("line", { x1: tx, y1: 0, x2: tx, y2: 5, stroke: "#333" }));
      const label = String(+(k * step).toPrecision(6));        // 0.6, not 0.6000000000000001
      svg.append(sv("text", { x: tx, y: 17, "text-anchor": k === 0 ? "start" : "middle", "font-size": 11 }, label));
    }
    svg.append(sv("line", { x1: 0, y1: 0, x2: W, y2: 0, stroke: "#333" }));
  }
  row.append(svg, el("div", { class: "logs" }, top ? "controllers' log lines about the object" : ""));
  return row;
}

function laneRow(v, lane, W, x, end) {
  const segs = lane.segments;
  const state = segs.length ? segs[segs.length - 1].state : "";
  const ended = segs.length && segs[segs.length - 1].stop !== null;
  const row = el("div", { class: lane.of ? "row object" : "row", "data-lane": lane.id, "data-of": lane.of || "",
                          "data-state": ended ? "gone" : state });
  const name = el("div", { class: "name", title: lane.id });
  if (lane.of) {
    const sp = lane.id.indexOf(" ");
    name.append(el("span", { class: "kind" }, lane.id.slice(0, sp + 1)), document.createTextNode(lane.id.slice(sp + 1)));
  } else {
    name.textContent = lane.id;
  }
  const svg = sv("svg", { width: W, height: ROW_H, viewBox: `0 0 ${W} ${ROW_H}` });
  const defs = sv("defs");
  const pat = sv("pattern", { id: `hatch-${cssId(lane.id)}`, width: 6, height: 6, patternUnits: "userSpaceOnUse",
                              patternTransform: "rotate(45)" });
  pat.append(sv("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#999", "stroke-width": 2 }));
  defs.append(pat);
  svg.append(defs);
  for (const s of segs) {
    const x1 = x(s.start);
    const x2 = x(s.stop === null ? end : s.stop);
    const w = Math.max(x2 - x1, 1);
    const r = sv("rect", { x: x1, y: 2, width: w, height: ROW_H - 4, fill: s.color, stroke: "#fff" });
    r.append(sv("title", {}, `${lane.id}: ${s.state}${s.detail ? " — " + s.detail : ""} ` +
      `(${rel(s.start)} .. ${s.stop === null ? "now" : rel(s.stop)})`));
    svg.append(r);
    const label = fit(s.state, w);
    if (label) svg.append(sv("text", { x: x1 + 4, y: ROW_H / 2 + 4, "font-size": 11 }, label));
  }
  for (const o of v.outages) {
    const x1 = x(o.start);
    const x2 = x(o.stop === null ? end : o.stop);
    svg.append(sv("rect", { x: x1, y: 0, width: Math.max(x2 - x1, 2), height: ROW_H, fill: `url(#hatch-${cssId(lane.id)})`,
                            opacity: 0.6 }));
  }
  for (const m of v.markers) {
    const mx = x(m.t);
    svg.append(sv("line", { x1: mx, y1: 0, x2: mx, y2: ROW_H, stroke: MARK[m.kind], "stroke-width": 1.5,
                            "stroke-dasharray": "5,4" }));
  }
  row.append(name, svg, logCell(lane));
  return row;
}

// A bar's label: whole when it fits, else cut with "…" (as the SVG does: demo/timeline/svg.py fit); the bar's
// title and the legend say the rest.
function fit(label, w) {
  if (label.length * 6.4 + 8 <= w) return label;
  const n = Math.floor((w - 8) / 6.4) - 1;
  return n >= 3 ? label.slice(0, n) + "…" : "";
}

// What each colour drawn means (the server's legend: demo/timeline/svg.py MEANINGS).
function drawLegend(v) {
  const box = $("legend");
  box.replaceChildren();
  for (const k of v.legend || []) {
    const item = el("span", { class: "key", "data-class": k.class });
    item.append(el("span", { class: "swatch", style: `background: ${k.color}` }), document.createTextNode(k.meaning));
    box.append(item);
  }
}

function cssId(s) { return s.replace(/[^A-Za-z0-9_-]/g, "_"); }

function logLine(l) {
  const d = el("div", { class: "line", title: `${clock(l.t)} (${rel(l.t)}) ${l.source}: ${l.text}` });
  d.append(el("span", { class: `src ${l.source}` }, l.source), document.createTextNode(` ${rel(l.t)} ${l.text}`));
  return d;
}

function logCell(lane) {
  const cell = el("div", { class: "logs", "data-lines": lane.log_count });
  const lines = lane.logs;
  for (const l of lines.slice(-LINES_SHOWN)) cell.append(logLine(l));
  if (lines.length > LINES_SHOWN || lane.log_count > lines.length) {
    const det = el("details");
    if (opened.has(lane.id)) det.open = true;
    det.addEventListener("toggle", () => (det.open ? opened.add(lane.id) : opened.delete(lane.id)));
    const earlier = lane.log_count - LINES_SHOWN;
    det.append(el("summary", {}, `${earlier} earlier line${earlier === 1 ? "" : "s"}` +
      (lane.log_count > lines.length ? ` (the last ${lines.length - LINES_SHOWN} here, all in the event log)` : "")));
    for (const l of lines.slice(0, -LINES_SHOWN)) det.append(logLine(l));
    cell.prepend(det);
  }
  return cell;
}

// ------------------------------------------------------------------------- live: pushed by the server

function live() {
  const es = new EventSource("/api/stream");
  es.addEventListener("view", (e) => { render(JSON.parse(e.data)); });
  es.onopen = () => show("connection", "");
  es.onerror = () => show("connection", "Lost the connection to tau-demo ui (stopped or restarting?); " +
    "the browser reconnects by itself.");
  setInterval(() => { if (view && view.run && view.run.live) drawLanes(view); }, 1000);   // bars grow with time
}

// ------------------------------------------------------------------------- replay: a finished run

async function fetchView(at) {
  const q = `run=${encodeURIComponent(RUN)}` + (at === undefined ? "" : `&at=${at}`);
  const r = await fetch(`/api/view?${q}`);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

async function replay() {
  $("replay").hidden = false;
  const slider = $("slider");
  let v;
  try {
    v = await fetchView();
  } catch (e) {
    show("problems", `Cannot open ${RUN}: ${e.message}`);
    return;
  }
  slider.min = v.first; slider.max = v.last; slider.value = v.last;
  let busy = false, wanted = null, timer = null;
  const showAt = async (t) => {
    wanted = t;
    if (busy) return;
    busy = true;
    while (wanted !== null) {
      const at = wanted;
      wanted = null;
      try {
        const got = await fetchView(at);
        render(got);
        $("clock").textContent = `${clock(at)} (${rel(at)})`;
      } catch (e) {
        show("problems", `Cannot read ${RUN}: ${e.message}`);
      }
    }
    busy = false;
  };
  slider.addEventListener("input", () => showAt(parseFloat(slider.value)));
  $("play").addEventListener("click", () => {
    if (timer) { clearInterval(timer); timer = null; $("play").textContent = "▶ play"; return; }
    if (parseFloat(slider.value) >= v.last) slider.value = v.first;
    $("play").textContent = "❚❚ pause";
    timer = setInterval(() => {
      const t = Math.min(v.last, parseFloat(slider.value) + 0.5);     // 5x: 0.5s of the run every 100 ms
      slider.value = t;
      showAt(t);
      if (t >= v.last) { clearInterval(timer); timer = null; $("play").textContent = "▶ play"; }
    }, 100);
  });
  render(v);
  $("clock").textContent = `${clock(v.last)} (${rel(v.last)})`;
}

async function listRuns() {
  const sel = $("runs");
  try {
    const runs = await (await fetch("/api/runs")).json();
    for (const r of runs) sel.append(el("option", { value: r.id }, `${r.id}  (${clock(r.modified)})`));
  } catch (e) { /* the list is a convenience; the page works without it */ }
  sel.value = RUN || "";
  sel.addEventListener("change", () => { location.search = sel.value ? `?run=${encodeURIComponent(sel.value)}` : ""; });
}

window.addEventListener("resize", () => { if (view) drawLanes(view); });
listRuns();
if (RUN) replay(); else live();
