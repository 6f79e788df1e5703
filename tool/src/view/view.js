// acp view: draws the transcript embedded in #acp-data (written by tool/src/view/render.rs).
//
// The data: {files: [File], rules: {id: {tier, sentence, source}}}. A File has name, summary,
// lanes, the interned strings methods/sessions/updates, directions ([from lane, to lane], -1:
// unknown), one array per column with an entry per message (line: delta from the previous line;
// direction: index; code: kind + 5 * status + 25 if the message's leading "jsonrpc":"2.0" was
// left out, kind 0 request, 1 notification, 2 response, 3 error response, 4 invalid, status 0 ok,
// 1 extension, 2 unmatched, 3 lossy, 4 error; method/session/update/tool: index + 1, 0 for none;
// turn: the same, as a delta from the previous row's; pair: offset to the paired row, 0 for none;
// time: tenths of a ms since the previous row, timed false when none was recorded), turns
// [kind (0 prompt, 1 state), session, start row, end row or -1, stop reason, cancelled, column],
// tools [id, title], the findings as columns (findingRow: row + 1 as a delta, 0 for none;
// findingCode: kind (0 error, 1 lossy, 2 unmatched, 3 warning, 4 rule) + 5 * at the end + 10 *
// (index + 1 into findingRules [[rule, tier, by]], 0 for none); findingText: index into
// findingTexts; findingCount of them), state (v2's x-state: rules, the lists of rules the rows
// use, each [scope, action, target, id, field, value, entryId, text]; rows, [row, session, path
// of the value in the message, union tag or null, index into rules or -1 for unapplied]), and
// messages (each as recorded). "findings" is left empty, for the script. A column whose values are all the same is written as that one number.
//
// Only the rows in sight are in the DOM (location.hash "#all" draws every row: for tests and
// printing; "#line=N" opens with line N selected; "#group" with the updates folded). Every text goes in with textContent or an attribute, never as markup.
"use strict";
(function () {
  const ROW = 24, LEFT = 56 + 72, GUTTER = 12, RIGHT = 280;
  let LANE = 170;
  const KINDS = ["request", "notification", "response", "error response", "invalid"];
  const STATUS = ["ok", "extension", "unmatched", "lossy", "error"];
  const FINDING = ["error", "lossy", "unmatched", "warning", "rule"];
  const ALL = location.hash.indexOf("all") >= 0;
  const data = JSON.parse(document.getElementById("acp-data").textContent);
  const $ = (id) => document.getElementById(id);
  const scroller = $("scroller"), canvas = $("canvas");

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // Replaces node's children with parts (a list of any length: no spread into arguments).
  function fill(node, parts) {
    const all = document.createDocumentFragment();
    for (const p of parts) all.appendChild(p);
    node.replaceChildren(all);
  }

  // One file, its columns decoded once.
  // A column written as one number holds that value n times.
  function expand(f, names, n) {
    for (const name of names) if (typeof f[name] === "number") f[name] = new Array(n).fill(f[name]);
  }

  function load(f) {
    const n = f.messages.length;
    expand(f, ["line", "direction", "code", "method", "session", "update", "pair", "turn", "tool", "time"], n);
    expand(f, ["findingRow", "findingCode", "findingText"], f.findingCount);
    const line = new Array(n), pair = new Int32Array(n).fill(-1);
    f.kind = new Uint8Array(n);
    f.status = new Uint8Array(n);
    f.from = new Int32Array(n);
    f.to = new Int32Array(n);
    let at = 0, turn = 0, time = 0;
    for (let i = 0; i < n; i++) {
      at += f.line[i];
      line[i] = at;
      if (f.pair[i]) pair[i] = i + f.pair[i];
      const code = f.code[i];
      f.kind[i] = code % 5;
      f.status[i] = Math.floor(code / 5) % 5;
      [f.from[i], f.to[i]] = f.directions[f.direction[i]];
      turn += f.turn[i];
      f.turn[i] = turn;
      time += f.time[i];
      f.time[i] = f.timed ? time / 10 : null;
    }
    // Back to [row or -1, kind, rule, tier, by, text, at the end], rule and text shared.
    let row = 0;
    f.findings = f.findingCode.map((code, i) => {
      row += f.findingRow[i];
      const who = Math.floor(code / 10);
      const r = who ? f.findingRules[who - 1] : [null, null, null];
      return [row - 1, code % 5, r[0], r[1], r[2], f.findingTexts[f.findingText[i]], Math.floor(code / 5) % 2];
    });
    const byRow = new Map();
    f.findings.forEach((x, i) => {
      if (x[0] < 0) return;
      if (!byRow.has(x[0])) byRow.set(x[0], []);
      byRow.get(x[0]).push(i);
    });
    const columns = f.turns.reduce((most, t) => Math.max(most, t[6] + 1), 1);
    return { f, n, line, pair, byRow, columns, text: new Array(n) };
  }

  let file, view = [], groups = [], selected = -1, expanded = new Set();

  // What a message says in a few words, from its JSON (a record's message, a bare one, or an
  // official trace event).
  function words(m) {
    if (m === null || typeof m !== "object") return typeof m === "string" ? m : "";
    let p = m.params, r = m.result !== undefined ? m.result : m.payload;
    if (p && p.params && typeof p.params === "object" && p.method) p = p.params;
    const text = (c) => {
      if (!c) return "";
      if (Array.isArray(c)) return c.map(text).filter(Boolean).join(" ");
      if (typeof c.text === "string") return c.text;
      if (c.content) return text(c.content);
      return c.type ? "[" + c.type + "]" : "";
    };
    if (m.error || m.is_error) {
      const e = m.error || r || {};
      return "error " + (e.code !== undefined ? e.code + " " : "") + (e.message || "");
    }
    if (p && p.update) {
      const u = p.update;
      const bits = [];
      if (u.title) bits.push(u.title);
      if (u.status) bits.push(u.status);
      if (u.state) bits.push(u.state + (u.stopReason ? " (" + u.stopReason + ")" : ""));
      if (u.content) bits.push(text(u.content));
      if (Array.isArray(u.entries)) bits.push(u.entries.length + " entries");
      return bits.join(" · ");
    }
    if (p && Array.isArray(p.prompt)) return text(p.prompt);
    if (p && p.toolCall) return (p.toolCall.title || p.toolCall.toolCallId || "") + (Array.isArray(p.options) ? " · " + p.options.length + " options" : "");
    if (p && p.path) return p.path;
    if (p && p.command) return p.command;
    if (p && p.protocolVersion !== undefined) return "protocolVersion " + p.protocolVersion;
    if (r && typeof r === "object") {
      if (r.stopReason) return r.stopReason;
      if (r.sessionId) return r.sessionId;
      if (r.outcome) return r.outcome.outcome + (r.outcome.optionId ? " " + r.outcome.optionId : "");
      if (r.protocolVersion !== undefined) return "protocolVersion " + r.protocolVersion;
    }
    return "";
  }

  // The message as recorded (its leading "jsonrpc" put back).
  const message = (i) => (file.f.code[i] >= 25 ? Object.assign({ jsonrpc: "2.0" }, file.f.messages[i]) : file.f.messages[i]);
  const method = (i) => (file.f.method[i] ? file.f.methods[file.f.method[i] - 1] : "");
  const update = (i) => (file.f.update[i] ? file.f.updates[file.f.update[i] - 1] : "");
  const session = (i) => (file.f.session[i] ? file.f.sessions[file.f.session[i] - 1] : "");
  function searchText(i) {
    if (file.text[i] === undefined) {
      file.text[i] = (file.line[i] + " " + method(i) + " " + update(i) + " " + JSON.stringify(message(i))).toLowerCase();
    }
    return file.text[i];
  }

  // The rows (and folded groups of updates) that pass the filters.
  function build() {
    const f = file.f;
    const m = +$("method").value, s = +$("session").value, k = $("finding").value;
    const q = $("search").value.trim().toLowerCase();
    const group = $("group").checked;
    view = [];
    groups = [];
    let run = null;
    const flush = () => {
      if (!run) return;
      if (run.rows.length > 1 && !expanded.has(run.rows[0])) {
        groups.push(run);
        view.push(-groups.length);
      } else {
        for (const r of run.rows) view.push(r);
      }
      run = null;
    };
    for (let i = 0; i < file.n; i++) {
      if (m && f.method[i] !== m) continue;
      if (s && f.session[i] !== s) continue;
      if (k) {
        const found = file.byRow.get(i);
        if (!found) continue;
        if (k !== "any" && !found.some((x) => matches(f.findings[x], k))) continue;
      }
      if (q && searchText(i).indexOf(q) < 0) continue;
      if (group && f.kind[i] === 1 && f.update[i] && f.turn[i] && !file.byRow.has(i)) {
        if (run && run.turn === f.turn[i] && run.tool === f.tool[i] && run.rows[run.rows.length - 1] === i - 1) {
          run.rows.push(i);
          continue;
        }
        flush();
        run = { turn: f.turn[i], tool: f.tool[i], rows: [i] };
        continue;
      }
      flush();
      view.push(i);
    }
    flush();
    canvas.style.height = view.length * ROW + "px";
    $("count").textContent = view.length === file.n ? file.n + " messages" : view.length + " of " + file.n + " rows";
    document.documentElement.dataset.rows = String(file.n);
    draw();
  }

  function matches(x, k) {
    if (k.startsWith("rule:")) return x[2] === k.slice(5);
    return FINDING[x[1]] === k;
  }

  const laneX = (l) => LEFT + GUTTER * file.columns + 20 + l * LANE + LANE / 2;
  const hue = (n) => (n * 137) % 360;

  function rowElement(i, top) {
    const f = file.f;
    const d = el("div", "row k" + f.kind[i] + " s" + f.status[i]);
    d.style.top = top + "px";
    d.dataset.row = i;
    d.dataset.line = file.line[i];
    d.dataset.status = STATUS[f.status[i]];
    if (file.pair[i] >= 0) d.dataset.pairLine = file.line[file.pair[i]];
    if (f.turn[i]) d.dataset.turn = f.turn[i] - 1;
    if (i === selected) d.classList.add("selected");
    if (selected >= 0 && file.pair[selected] === i) d.classList.add("paired");
    if (selected >= 0 && f.tool[i] && f.tool[i] === f.tool[selected]) d.classList.add("same-tool");
    d.appendChild(el("span", "ln", file.line[i]));
    const t = f.time[i];
    d.appendChild(el("span", "tm", t === null ? "" : t < 1000 ? t.toFixed(1) + " ms" : (t / 1000).toFixed(3) + " s"));
    const from = f.from[i], to = f.to[i];
    const label = method(i) + (update(i) ? " " + update(i) : "");
    const say = words(message(i));
    if (from >= 0 && to >= 0) {
      const a = Math.min(laneX(from), laneX(to)), b = Math.max(laneX(from), laneX(to));
      const arrow = el("span", "arrow " + (to > from ? "right" : "left"));
      arrow.style.left = a + "px";
      arrow.style.width = b - a + "px";
      d.appendChild(arrow);
      const lab = el("span", "label");
      lab.style.left = a + 6 + "px";
      // Up to the marks beyond the last lane when the arrow reaches it, else past its end a little.
      lab.style.width = Math.max(LANE - 12, b - a - 16 + LANE / 2) + "px";
      lab.appendChild(el("b", null, label || KINDS[f.kind[i]]));
      if (say) lab.appendChild(el("span", "say", " " + say));
      d.appendChild(lab);
    } else {
      const lab = el("span", "label free", (label || KINDS[f.kind[i]]) + " " + say);
      lab.style.left = laneX(0) + "px";
      d.appendChild(lab);
    }
    const right = el("span", "marks");
    right.style.left = laneX(file.f.lanes.length - 1) + LANE / 2 + "px";
    if (f.status[i] !== 0) right.appendChild(el("span", "st", STATUS[f.status[i]]));
    if (file.pair[i] >= 0) {
      const p = el("span", "pair", (f.kind[i] === 0 ? "→ " : "← ") + file.line[file.pair[i]]);
      p.title = (f.kind[i] === 0 ? "answered on line " : "answers line ") + file.line[file.pair[i]];
      p.dataset.goto = file.pair[i];
      right.appendChild(p);
    }
    if (f.tool[i]) {
      const tool = f.tools[f.tool[i] - 1];
      const c = el("span", "tool", tool[0]);
      c.style.borderColor = "hsl(" + hue(f.tool[i]) + ",60%,45%)";
      c.title = "tool call " + tool[0] + (tool[1] ? ": " + tool[1] : "");
      right.appendChild(c);
    }
    for (const x of file.byRow.get(i) || []) {
      const g = f.findings[x];
      const b = el("span", "fd f" + g[1], g[2] || FINDING[g[1]]);
      b.dataset.finding = x;
      b.title = findingText(g);
      right.appendChild(b);
    }
    d.appendChild(right);
    return d;
  }

  function findingText(g) {
    if (g[2]) return (g[6] ? "end: " : "") + g[2] + " (" + g[3] + ", " + g[4] + "): " + g[5];
    return FINDING[g[1]] + ": " + g[5];
  }

  function groupElement(g, top) {
    const f = file.f;
    const d = el("div", "row group");
    d.style.top = top + "px";
    d.dataset.group = g.rows[0];
    d.appendChild(el("span", "ln", file.line[g.rows[0]] + "…"));
    d.appendChild(el("span", "tm"));
    const counts = new Map();
    for (const r of g.rows) counts.set(update(r), (counts.get(update(r)) || 0) + 1);
    const what = [...counts].map(([k, v]) => v + " " + k).join(", ");
    const tool = g.tool ? f.tools[g.tool - 1] : null;
    const lab = el("span", "label free", "▸ " + g.rows.length + " updates: " + what + (tool ? " · tool call " + tool[0] + (tool[1] ? " " + tool[1] : "") : ""));
    lab.style.left = laneX(0) + "px";
    d.appendChild(lab);
    return d;
  }

  // The turn bars of the rows in view: from the first visible row of the turn to its last.
  function turnBars(first, last) {
    const f = file.f, out = [];
    const seen = new Set();
    for (let v = first; v <= last; v++) {
      const rows = view[v] >= 0 ? [view[v]] : groups[-view[v] - 1].rows;
      for (const r of rows) {
        if (!f.turn[r] || seen.has(f.turn[r])) continue;
        seen.add(f.turn[r]);
        out.push(f.turn[r] - 1);
      }
    }
    return out.map((t) => {
      const turn = f.turns[t];
      const startV = indexOf(turn[2]), endV = turn[3] >= 0 ? indexOf(turn[3]) : view.length - 1;
      const a = startV.at, b = turn[3] >= 0 ? endV.at - (endV.exact ? 0 : 1) : view.length - 1;
      const bar = el("div", "turn" + (turn[5] ? " cancelled" : "") + (turn[3] < 0 ? " open" : ""));
      bar.style.top = a * ROW + 2 + "px";
      bar.style.height = Math.max(1, b - a + 1) * ROW - 4 + "px";
      bar.style.left = LEFT + turn[6] * GUTTER + 2 + "px";
      bar.style.background = "hsl(" + hue(turn[1] + 3) + ",55%,55%)";
      bar.dataset.turn = t;
      bar.dataset.startLine = file.line[turn[2]];
      bar.dataset.endLine = turn[3] >= 0 ? file.line[turn[3]] : "open";
      bar.dataset.kind = turn[0] ? "state" : "prompt";
      if (turn[4]) bar.dataset.stop = turn[4];
      if (turn[5]) bar.dataset.cancelled = "true";
      const session = f.sessions[turn[1] - 1];
      bar.title = "turn of session " + session + ": " + (turn[0] ? "running" : "session/prompt") + " (line " + file.line[turn[2]] + ") → " +
        (turn[3] >= 0 ? (turn[0] ? "idle" : "response") + " (line " + file.line[turn[3]] + ")" : "never ended") +
        (turn[4] ? ", " + turn[4] : "") + (turn[5] ? ", cancel sent" : "");
      return bar;
    });
  }

  // Where row r sits in the view (or where it would: exact false).
  function indexOf(r) {
    let lo = 0, hi = view.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (first(view[mid]) < r) lo = mid + 1; else hi = mid;
    }
    if (lo < view.length && view[lo] < 0) return { at: lo, exact: groups[-view[lo] - 1].rows.indexOf(r) >= 0 };
    if (lo > 0 && view[lo - 1] < 0 && groups[-view[lo - 1] - 1].rows.indexOf(r) >= 0) return { at: lo - 1, exact: true };
    return { at: lo, exact: view[lo] === r };
  }
  const first = (v) => (v >= 0 ? v : groups[-v - 1].rows[0]);

  function draw() {
    const h = scroller.clientHeight || 800;
    const top = scroller.scrollTop;
    const a = ALL ? 0 : Math.max(0, Math.floor(top / ROW) - 10);
    const b = ALL ? view.length - 1 : Math.min(view.length - 1, Math.ceil((top + h) / ROW) + 10);
    const parts = [];
    for (let l = 0; l < file.f.lanes.length; l++) {
      const line = el("div", "lifeline");
      line.style.left = laneX(l) + "px";
      parts.push(line);
    }
    if (b >= a) for (const bar of turnBars(a, b)) parts.push(bar);
    for (let v = a; v <= b; v++) parts.push(view[v] >= 0 ? rowElement(view[v], v * ROW) : groupElement(groups[-view[v] - 1], v * ROW));
    fill(canvas, parts);
    document.documentElement.dataset.rendered = String(Math.max(0, b - a + 1));
  }

  function lanesHeader() {
    const lanes = $("lanes");
    // The lanes share the width there is (within reason).
    const room = (scroller.clientWidth || 1000) - LEFT - GUTTER * file.columns - 20 - RIGHT;
    LANE = Math.max(170, Math.min(420, Math.floor(room / file.f.lanes.length)));
    const parts = [];
    file.f.lanes.forEach((name, l) => {
      const h = el("span", "lane", name);
      h.style.left = laneX(l) - LANE / 2 + "px";
      h.style.width = LANE + "px";
      parts.push(h);
    });
    const w = laneX(file.f.lanes.length - 1) + LANE / 2 + RIGHT;
    canvas.style.width = w + "px";
    lanes.style.width = w + "px";
    fill(lanes, parts);
  }

  function options(select, list) {
    // The first option ("all …") stays.
    const parts = select.options.length ? [select.options[0]] : [];
    list.forEach(([value, text]) => {
      const o = el("option", null, text);
      o.value = value;
      parts.push(o);
    });
    fill(select, parts);
    select.value = "";
  }

  function filters() {
    const f = file.f;
    options($("method"), f.methods.map((m, i) => [i + 1, m]));
    options($("session"), f.sessions.map((s, i) => [i + 1, s]));
    const kinds = [["any", "with any finding"]];
    const counts = new Array(5).fill(0), rules = new Map();
    for (const x of f.findings) {
      counts[x[1]]++;
      if (x[2]) rules.set(x[2], (rules.get(x[2]) || 0) + 1);
    }
    FINDING.forEach((k, i) => counts[i] && kinds.push([k, k + " (" + counts[i] + ")"]));
    for (const [id, n] of [...rules].sort()) kinds.push(["rule:" + id, "rule " + id + " (" + n + ")"]);
    options($("finding"), kinds);
  }

  function findingsList() {
    const f = file.f, list = $("findings");
    const cap = ALL ? Infinity : 2000;
    const parts = [];
    f.findings.slice(0, cap).forEach((g, x) => {
      const li = el("li", "f" + g[1]);
      li.dataset.finding = x;
      li.dataset.row = g[0];
      li.dataset.line = g[0] >= 0 ? file.line[g[0]] : 0;
      li.appendChild(el("span", "where", g[0] >= 0 ? "line " + file.line[g[0]] : "end"));
      li.appendChild(el("span", "fd f" + g[1], g[2] || FINDING[g[1]]));
      li.appendChild(el("span", "what", " " + g[5]));
      parts.push(li);
    });
    if (f.findings.length > cap) parts.push(el("li", "more", f.findings.length - cap + " more: filter by finding to see them"));
    fill(list, parts);
    $("findings-title").textContent = f.findings.length ? "Findings (" + f.findings.length + ")" : "No findings";
  }

  function detail(i) {
    const f = file.f, box = $("detail");
    const parts = [];
    const from = f.from[i] >= 0 ? f.lanes[f.from[i]] : "?", to = f.to[i] >= 0 ? f.lanes[f.to[i]] : "?";
    parts.push(el("h2", null, "line " + file.line[i] + ": " + from + " → " + to + ", " + KINDS[f.kind[i]] + (method(i) ? " " + method(i) : "")));
    parts.push(el("p", "verdict s" + f.status[i], STATUS[f.status[i]]));
    const facts = el("ul", "facts");
    if (session(i)) facts.appendChild(el("li", null, "session " + session(i)));
    if (file.pair[i] >= 0) facts.appendChild(link((f.kind[i] === 0 ? "answered on line " : "answers the request on line ") + file.line[file.pair[i]], file.pair[i]));
    if (f.turn[i]) {
      const t = f.turns[f.turn[i] - 1];
      facts.appendChild(link("turn: line " + file.line[t[2]] + " → " + (t[3] >= 0 ? "line " + file.line[t[3]] : "never ended") + (t[4] ? " (" + t[4] + ")" : "") + (t[5] ? ", cancel sent" : ""), t[2]));
    }
    if (f.tool[i]) {
      const tool = f.tools[f.tool[i] - 1];
      const rows = [];
      for (let r = 0; r < file.n && rows.length < 50; r++) if (f.tool[r] === f.tool[i]) rows.push(r);
      const li = el("li", null, "tool call " + tool[0] + (tool[1] ? " (" + tool[1] + ")" : "") + ": lines ");
      rows.forEach((r, n) => {
        const a = el("a", null, file.line[r]);
        a.href = "#";
        a.dataset.goto = r;
        li.appendChild(a);
        if (n + 1 < rows.length) li.appendChild(document.createTextNode(", "));
      });
      facts.appendChild(li);
    }
    parts.push(facts);
    for (const x of file.byRow.get(i) || []) parts.push(findingBox(f.findings[x]));
    parts.push(el("pre", "json", JSON.stringify(message(i), null, 2)));
    const state = stateBox(i);
    if (state) parts.push(state);
    fill(box, parts);
  }

  // The session state after a row (v2's `x-state`): the rules of the rows up to it, applied as
  // acp_types::support::state applies them. The page holds, per row that changes state, its
  // session, where the value is, the union tag to leave out and the rules (f.state).
  const valueAt = (v, path) => {
    for (const k of path) {
      if (v === null || typeof v !== "object" || Array.isArray(v) || !(k in v)) return undefined;
      v = v[k];
    }
    return v;
  };
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  function parentOf(entry, path) {
    let v = entry;
    for (let n = 0; n + 1 < path.length; n++) {
      if (!isObject(v[path[n]])) v[path[n]] = {};
      v = v[path[n]];
    }
    return [v, path[path.length - 1]];
  }
  function patch(entry, update) {
    for (const k of Object.keys(update)) {
      if (update[k] === null) delete entry[k];
      else entry[k] = update[k];
    }
  }
  function applyRule(state, rule, msg) {
    const [, action, target, id, field, path, entryId, text] = rule;
    let key = null, idValue;
    if (id.length) {
      idValue = valueAt(msg, id);
      if (idValue === undefined || idValue === null) return;
      key = typeof idValue === "string" ? idValue : JSON.stringify(idValue);
    }
    const keyed = id.length > 0;
    if (keyed && !isObject(state[target])) state[target] = {};
    const holder = keyed ? state[target] : state, at = keyed ? key : target;
    if (action === "remove") return void delete holder[at];
    let value = path.length ? valueAt(msg, path) : msg;
    if (value === undefined) return;
    value = JSON.parse(JSON.stringify(value));
    const entry = () => {
      if (holder[at] === undefined) holder[at] = {};
      return holder[at];
    };
    if (action === "replace" && !field.length) {
      if (value === null) delete holder[at];
      else holder[at] = value;
    } else if (action === "replace") {
      const [p, k] = parentOf(entry(), field);
      if (value === null) delete p[k];
      else p[k] = value;
    } else if (action === "upsert" && field.length) {
      const [p, k] = parentOf(entry(), field);
      if (isObject(p[k]) && isObject(value)) patch(p[k], value);
      else p[k] = value;
    } else if (action === "upsert") {
      if (value === null) delete holder[at];
      else if (isObject(entry()) && isObject(value)) patch(holder[at], value);
      else holder[at] = value;
    } else if (action === "append") {
      const e = entry();
      if (idValue !== undefined && entryId.length && valueAt(e, entryId) === undefined) {
        const [p, k] = parentOf(e, entryId);
        p[k] = idValue;
      }
      const [p, k] = parentOf(e, field);
      const now = p[k];
      if (text && typeof value === "string" && typeof now === "string") p[k] = now + value;
      else if (text && typeof value === "string" && (now === undefined || now === null)) p[k] = value;
      else if (Array.isArray(now)) now.push(value);
      else if (now === undefined || now === null) p[k] = [value];
      else p[k] = [now, value];
    }
  }
  function stateAfter(i, session) {
    const f = file.f, state = {};
    for (const [row, s, path, tag, rules] of f.state.rows) {
      if (row > i) break;
      if (s !== session) continue;
      let msg = valueAt(message(row), path);
      if (msg === undefined) continue;
      if (rules < 0) {
        (state.unapplied || (state.unapplied = [])).push(msg);
        continue;
      }
      if (tag && isObject(msg)) {
        msg = Object.assign({}, msg);
        delete msg[tag];
      }
      for (const rule of f.state.rules[rules]) if (rule[0] === "session") applyRule(state, rule, msg);
    }
    return state;
  }
  function stateBox(i) {
    const f = file.f;
    if (!f.state || !f.state.rows.length) return null;
    let session = f.session[i];
    if (!session) {
      const op = f.state.rows.find((o) => o[0] === i);
      if (!op) return null;
      session = op[1];
    }
    const box = el("details", "state");
    box.open = true;
    box.appendChild(el("summary", null, "session state after line " + file.line[i] + " (x-state)"));
    box.appendChild(el("pre", "json", JSON.stringify(stateAfter(i, session), null, 2)));
    return box;
  }

  function link(text, row) {
    const li = el("li");
    const a = el("a", null, text);
    a.href = "#";
    a.dataset.goto = row;
    li.appendChild(a);
    return li;
  }

  function findingBox(g) {
    const box = el("div", "finding f" + g[1]);
    box.appendChild(el("b", null, g[2] ? (g[6] ? "end of conversation: " : "") + "rule " + g[2] + " (" + g[3] + ", broken by the " + g[4] + ")" : FINDING[g[1]]));
    box.appendChild(el("p", null, g[5]));
    const rule = g[2] && data.rules[g[2]];
    if (rule) {
      box.appendChild(el("blockquote", null, rule.sentence));
      box.appendChild(el("p", "source", rule.source));
    }
    return box;
  }

  function select(i) {
    selected = i;
    detail(i);
    draw();
  }

  // Scrolls row r into sight (clearing the filters that hide it) and selects it.
  function jump(r) {
    let at = indexOf(r);
    if (!at.exact) {
      $("method").value = $("session").value = $("finding").value = $("search").value = "";
      if (view[at.at] < 0) expanded.add(groups[-view[at.at] - 1].rows[0]);
      build();
      at = indexOf(r);
    }
    if (view[at.at] < 0) {
      expanded.add(groups[-view[at.at] - 1].rows[0]);
      build();
      at = indexOf(r);
    }
    scroller.scrollTop = Math.max(0, at.at * ROW - scroller.clientHeight / 2);
    select(r);
  }

  const loaded = [];
  function open(n) {
    file = loaded[n] || (loaded[n] = load(data.files[n]));
    selected = -1;
    expanded = new Set();
    $("summary").textContent = file.f.summary;
    $("detail").replaceChildren(el("p", "hint", "Click a message to see its JSON and its findings."));
    lanesHeader();
    filters();
    findingsList();
    scroller.scrollTop = 0;
    build();
  }

  // Wiring.
  options($("file"), data.files.map((f, i) => [i, f.name]));
  $("file").value = "0";
  $("file").hidden = data.files.length < 2;
  $("file").addEventListener("change", () => open(+$("file").value));
  for (const id of ["method", "session", "finding", "group"]) $(id).addEventListener("change", build);
  let pending = 0;
  $("search").addEventListener("input", () => {
    clearTimeout(pending);
    pending = setTimeout(build, 200);
  });
  let frame = 0;
  scroller.addEventListener("scroll", () => {
    $("lanes").style.transform = "translateX(" + -scroller.scrollLeft + "px)";
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; draw(); });
  });
  window.addEventListener("resize", () => { lanesHeader(); draw(); });
  document.addEventListener("click", (e) => {
    const go = e.target.closest("[data-goto]");
    if (go) {
      e.preventDefault();
      jump(+go.dataset.goto);
      return;
    }
    const item = e.target.closest("#findings li[data-row]");
    if (item) {
      if (+item.dataset.row >= 0) jump(+item.dataset.row);
      else {
        const g = file.f.findings[+item.dataset.finding];
        $("detail").replaceChildren(findingBox(g));
      }
      return;
    }
    const group = e.target.closest(".row.group");
    if (group) {
      expanded.add(+group.dataset.group);
      build();
      return;
    }
    const row = e.target.closest(".row[data-row]");
    if (row) select(+row.dataset.row);
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || selected < 0) return;
    const step = e.key === "ArrowDown" || e.key === "j" ? 1 : e.key === "ArrowUp" || e.key === "k" ? -1 : 0;
    if (!step) return;
    e.preventDefault();
    const at = indexOf(selected).at + step;
    if (at >= 0 && at < view.length && view[at] >= 0) jump(view[at]);
  });
  // "#group" opens with the updates folded.
  $("group").checked = /group/.test(location.hash);
  open(0);
  // "#line=N" opens on line N, selected (a link to one message).
  const asked = /line=(\d+)/.exec(location.hash);
  if (asked) {
    const r = file.line.indexOf(+asked[1]);
    if (r >= 0) jump(r);
  }
  document.documentElement.dataset.ready = performance.now().toFixed(0);
})();
