// The operator page: reads /api/overview and /api/findings, and reads them again each time
// /api/events says the project's log moved. Read-only; text is always set as text.
"use strict";

const STATES = ["planned", "dispatched", "working", "blocked", "done", "failed", "lost"];
const SECTIONS = { slices: 20, waiting: 50, convergence: 50, record: 20, findings: 50 };
const params = new URLSearchParams(location.search);
const view = {
  project: params.get("project") || "",
  offsets: { slices: 0, waiting: 0, convergence: 0, record: 0, findings: 0 },
  filters: { unit: "", producer: "", severity: "", class: "" },
};
for (const name of Object.keys(view.filters)) view.filters[name] = params.get(name) || "";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "width") node.style.width = v; // CSSOM: the policy forbids style attributes
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function duration(seconds) {
  let s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  if (d) return `${d}d${String(h).padStart(2, "0")}h`;
  if (h) return `${h}h${String(m).padStart(2, "0")}m`;
  if (m) return `${m}m${String(s).padStart(2, "0")}s`;
  return `${s}s`;
}

function fill(tbody, rows, empty, columns) {
  tbody.replaceChildren();
  if (!rows.length) {
    tbody.append(el("tr", { class: "empty" }, el("td", { colspan: columns, class: "dim", text: empty })));
    return;
  }
  for (const row of rows) tbody.append(row);
}

function pager(section, page) {
  const box = document.querySelector(`.pager[data-section="${section}"]`);
  box.replaceChildren();
  if (page.total <= page.limit && page.offset === 0) return;
  const last = Math.min(page.offset + page.limit, page.total);
  const prev = el("button", { type: "button", "data-move": "prev", text: "previous" });
  const next = el("button", { type: "button", "data-move": "next", text: "next" });
  prev.disabled = page.offset === 0;
  next.disabled = last >= page.total;
  prev.onclick = () => { view.offsets[section] = Math.max(0, page.offset - page.limit); refresh(); };
  next.onclick = () => { view.offsets[section] = page.offset + page.limit; refresh(); };
  box.append(prev, el("span", { text: `${page.total ? page.offset + 1 : 0} to ${last} of ${page.total}` }), next);
}

function api(path, extra) {
  const query = new URLSearchParams({ project: view.project, ...extra });
  return fetch(`${path}?${query}`).then((r) => r.json().then((body) => {
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }));
}

// -- sections ------------------------------------------------------------------------

function renderCounts(counts) {
  const box = document.getElementById("counts");
  box.replaceChildren(el("span", { class: "dim", text: `${counts.units} units:` }));
  for (const state of STATES) {
    const n = counts.by_state[state];
    if (n) box.append(el("span", { class: `chip state-${state}`, "data-count": state, text: `${state} ${n}` }));
  }
  box.append(el("span", { class: "dim", text: `· ${counts.open_findings} open findings, ${counts.resolved_findings} resolved` }));
}

function renderCharter(charter) {
  const box = document.getElementById("charter");
  box.dataset.held = charter.held;
  box.dataset.total = charter.total;
  box.textContent = charter.lines.join(" · ");
}

function renderPlanner(planner) {
  // Shown only while a charter runs: a project planned by hand has no planner.
  const box = document.getElementById("planner");
  box.hidden = !planner.run;
  box.dataset.planning = planner.planning;
  box.dataset.proposal = planner.proposal ? planner.proposal.status : "";
  box.dataset.refused = planner.refused.length;
  box.textContent = planner.run ? `planner: ${planner.lines.join(" · ")}` : "";
}

function renderLeases(leases) {
  // Who holds which gate run or builder round now, and the recent lapses.
  const box = document.getElementById("leases");
  box.dataset.live = leases.live;
  box.textContent = leases.lines.join(" · ");
}

function renderMerges(merges) {
  const trunk = merges.trunk;
  const badge = document.getElementById("trunk");
  badge.className = `trunk trunk-${trunk.colour}`;
  badge.dataset.colour = trunk.colour;
  const failing = trunk.failing.length ? ` (failing: ${trunk.failing.join(", ")})` : "";
  const green = trunk.green_commit ? `; last green ${trunk.green_commit}` : "";
  badge.textContent = trunk.commit
    ? `trunk ${trunk.commit}: ${trunk.colour}${failing}${green}`
    : "trunk: not seen yet";
  const flight = merges.in_flight;
  document.getElementById("in-flight").textContent =
    (flight ? `in flight: ${flight.unit} merged as ${flight.merge}, trunk gates due · ` : "") +
    `${merges.merged} merged, ${merges.reverted} reverted, ${merges.conflicted} conflicted`;
  const rows = merges.queue.items.map((q) => el("tr", {}, el("td", { text: q.position }),
    el("td", { text: q.unit }), el("td", { text: q.head }), el("td", { text: q.approver }),
    el("td", { text: q.status })));
  fill(document.querySelector("#queue tbody"), rows, "the merge queue is empty", 5);
}

function renderWaiting(page) {
  const rows = page.items.map((g) => el("tr", { "data-subject": g.subject },
    el("td", { text: duration(g.longest_s) }), el("td", { text: g.reason }),
    el("td", { text: g.subject }),
    el("td", {}, g.units.map((u) => `${u.unit} (${duration(u.waited_s)}${u.held ? ", held" : ""})`).join(", ") +
      (g.count > g.units.length ? ` … and ${g.count - g.units.length} more` : ""))));
  fill(document.querySelector("#waiting tbody"), rows, "nothing: no unit is blocked", 4);
  pager("waiting", page);
}

function unitBox(u) {
  const title = [u.unit, u.title, u.state, u.wait ? `waiting on ${u.wait}` : ""].filter(Boolean).join(" · ");
  return el("span", { class: `unit state-${u.state}`, "data-unit": u.unit, "data-state": u.state, title }, u.unit);
}

function renderSlices(page) {
  const box = document.getElementById("slices");
  box.replaceChildren();
  if (!page.items.length) box.append(el("p", { class: "dim", text: "no slice planned yet" }));
  for (const s of page.items) {
    const section = el("div", { class: "slice", "data-slice": s.slice },
      el("h3", {}, `${s.slice} `, el("span", { class: "dim", text: `${s.status} · ${s.where} · ${s.units_total} units` })));
    let shown = 0;
    s.waves.forEach((wave, w) => {
      const row = el("div", { class: "wave" }, el("span", { class: "wave-label", text: s.status === "unplanned" ? "units" : `wave ${w}` }));
      for (const group of wave) {
        if (!group.length) continue;
        shown += group.length;
        row.append(el("div", { class: "group" }, ...group.map(unitBox)));
      }
      section.append(row);
    });
    if (shown < s.units_total) section.append(el("div", { class: "more", text: `… ${s.units_total - shown} more units not drawn` }));
    box.append(section);
  }
  pager("slices", page);
}

function renderBudgets(budgets) {
  const box = document.getElementById("budgets");
  box.replaceChildren();
  if (!budgets.length) { box.append(el("p", { class: "dim", text: "no slice has budgets yet" })); return; }
  for (const b of budgets) {
    const table = el("table", { "data-slice": b.slice }, el("thead", {}, el("tr", {},
      ...["budget", "used", "limit", "", "detail"].map((h) => el("th", { text: h })))));
    const body = el("tbody");
    for (const m of b.measures) {
      const ratio = m.limit ? Math.min(1, (m.value || 0) / m.limit) : 0;
      const bar = el("span", { class: m.breached ? "bar over" : "bar" }, el("span", { width: `${Math.round(ratio * 100)}%` }));
      const mark = m.breached ? el("span", { class: "breached", text: m.raised ? " breached (raised)" : " breached" }) : null;
      body.append(el("tr", {}, el("td", {}, m.budget, mark), el("td", { text: m.value === null ? "-" : +m.value.toFixed(2) }),
        el("td", { text: m.limit === null ? "none" : `${m.kind === "floor" ? "≥" : "≤"} ${m.limit}` }),
        el("td", {}, m.limit ? bar : ""), el("td", { class: "dim", text: m.detail })));
    }
    table.append(body);
    box.append(el("h3", { text: b.slice }), table);
  }
}

function renderRisk(reports) {
  // One list per closed slice, newest first; each item under the heading of its band.
  const box = document.getElementById("risk");
  box.replaceChildren();
  if (!reports.length) { box.append(el("p", { class: "dim", text: "no slice has closed yet" })); return; }
  for (const r of reports) {
    const list = el("ul", { "data-slice": r.slice });
    for (const item of r.items) {
      list.append(el("li", { "data-band": item.band }, el("strong", { text: `${item.title}: ` }), item.text));
    }
    box.append(el("h3", { text: r.slice }), list);
  }
}

function renderConvergence(page) {
  const rows = page.items.map((c) => el("tr", { "data-unit": c.unit }, el("td", { text: c.unit }),
    el("td", { text: c.rounds }), el("td", { text: c.verdict || "no round closed" }),
    el("td", { text: c.action || "" }), el("td", { text: c.ended_by || "" }),
    el("td", { text: `${c.rung} (${c.tactic})` }), el("td", { class: "dim", text: c.why })));
  fill(document.querySelector("#convergence tbody"), rows, "no review round yet", 7);
  pager("convergence", page);
}

function renderRecord(page) {
  const rows = page.items.map((r) => el("tr", {}, el("td", { text: r.dispatched_at.replace("T", " ").slice(0, 19) }),
    el("td", { text: r.slice }), el("td", { text: `${r.unit}${r.title ? " — " + r.title : ""}` }),
    el("td", { text: r.attempt }), el("td", { text: r.wave }),
    el("td", { text: r.ended ? `${r.ended}${r.ended_by ? " (" + r.ended_by + ")" : ""}${r.summary ? ": " + r.summary : ""}` : "running" }),
    el("td", { text: r.commands.map((c) => `${c.check} ${c.outcome}`).join(", ") || "-" }),
    el("td", { text: r.files_changed.join(", ") || "-" })));
  fill(document.querySelector("#record tbody"), rows, "nothing dispatched yet", 8);
  pager("record", page);
}

function renderFindings(doc) {
  for (const name of ["producer", "severity", "class"]) {
    const select = document.getElementById(`f-${name}`);
    const wanted = view.filters[name];
    const values = doc.facets[name].includes(wanted) || !wanted ? doc.facets[name] : [...doc.facets[name], wanted];
    select.replaceChildren(el("option", { value: "", text: "any" }), ...values.map((v) => el("option", { value: v, text: v })));
    select.value = wanted;
  }
  const unitInput = document.getElementById("f-unit");
  if (document.activeElement !== unitInput) unitInput.value = view.filters.unit;
  document.getElementById("findings-count").textContent = `${doc.total} of ${doc.open} open findings match`;
  const rows = doc.items.map((f) => {
    const link = el("a", { href: `/evidence?${new URLSearchParams({ project: view.project, id: f.id })}`, text: "evidence" });
    return el("tr", { "data-id": f.id, "data-severity": f.severity, "data-producer": f.producer, "data-class": f.class, "data-unit": f.unit },
      el("td", { class: `sev sev-${f.severity}`, text: f.severity }), el("td", { text: f.unit || "project" }),
      el("td", { text: f.producer }), el("td", { text: f.class }), el("td", { text: f.target }),
      el("td", { text: f.criterion }), el("td", { class: "msg", text: f.message }),
      el("td", { text: f.times > 1 ? `×${f.times}` : "" }), el("td", {}, link));
  });
  fill(document.querySelector("#findings tbody"), rows, "no open finding matches", 9);
  pager("findings", { total: doc.total, offset: doc.offset, limit: doc.limit });
}

// -- reading -------------------------------------------------------------------------

let busy = false;
let again = false;

async function refresh() {
  if (!view.project) return;
  if (busy) { again = true; return; }
  busy = true;
  try {
    const pages = {};
    for (const s of ["slices", "waiting", "convergence", "record"]) pages[s] = view.offsets[s];
    const filters = Object.fromEntries(Object.entries(view.filters).filter(([, v]) => v));
    const [overview, findings] = await Promise.all([
      api("/api/overview", pages),
      api("/api/findings", { ...filters, offset: view.offsets.findings, limit: SECTIONS.findings }),
    ]);
    renderCounts(overview.counts);
    renderMerges(overview.merges);
    renderCharter(overview.charter);
    renderPlanner(overview.planner);
    renderLeases(overview.leases);
    renderWaiting(overview.waiting);
    renderSlices(overview.slices);
    renderRisk(overview.risk);
    renderBudgets(overview.budgets);
    renderConvergence(overview.convergence);
    renderRecord(overview.record);
    renderFindings(findings);
    const seq = document.getElementById("seq");
    seq.dataset.seq = overview.seq;
    seq.textContent = `folded through seq ${overview.seq} · log at ${overview.log_last}`;
    document.body.dataset.loaded = "true";
  } catch (err) {
    document.getElementById("seq").textContent = `cannot read: ${err.message}`;
  } finally {
    busy = false;
    if (again) { again = false; refresh(); }
  }
}

let source = null;

function listen() {
  if (source) source.close();
  const live = document.getElementById("live");
  source = new EventSource(`/api/events?${new URLSearchParams({ project: view.project })}`);
  source.onopen = () => { live.className = "live on"; live.textContent = "live"; };
  source.onerror = () => { live.className = "live off"; live.textContent = "reconnecting…"; };
  source.onmessage = () => refresh();
}

function remember() {
  const query = new URLSearchParams({ project: view.project });
  for (const [k, v] of Object.entries(view.filters)) if (v) query.set(k, v);
  history.replaceState(null, "", `?${query}`);
}

function setFilter(name, value) {
  view.filters[name] = value;
  view.offsets.findings = 0;
  remember();
  refresh();
}

async function start() {
  const legend = document.getElementById("legend");
  for (const state of STATES) legend.append(el("span", { class: `unit state-${state}`, text: state }));
  const select = document.getElementById("project");
  const known = await fetch("/api/projects").then((r) => r.json());
  const projects = known.projects;
  if (!view.project) view.project = known.default || projects[0] || "";
  if (view.project && !projects.includes(view.project)) projects.unshift(view.project);
  select.replaceChildren(...projects.map((p) => el("option", { value: p, text: p })));
  select.value = view.project;
  select.onchange = () => {
    view.project = select.value;
    for (const k of Object.keys(view.offsets)) view.offsets[k] = 0;
    remember(); listen(); refresh();
  };
  for (const name of ["producer", "severity", "class"]) {
    document.getElementById(`f-${name}`).onchange = (e) => setFilter(name, e.target.value);
  }
  let typing = null;
  document.getElementById("f-unit").oninput = (e) => {
    clearTimeout(typing);
    typing = setTimeout(() => setFilter("unit", e.target.value.trim()), 250);
  };
  document.getElementById("filters").onreset = () => {
    for (const k of Object.keys(view.filters)) view.filters[k] = "";
    view.offsets.findings = 0;
    remember();
    setTimeout(refresh, 0);
  };
  if (!view.project) {
    document.getElementById("seq").textContent = "no project yet: report something, or open ?project=ID";
    return;
  }
  remember();
  listen();
  refresh();
}

start();
