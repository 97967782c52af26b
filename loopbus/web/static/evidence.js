// One finding: its fields, its evidence and the event that raised it, as the log holds it.
"use strict";

const query = new URLSearchParams(location.search);
const project = query.get("project") || "";
document.getElementById("back").href = `/?${new URLSearchParams({ project })}`;

function row(name, value) {
  const tr = document.createElement("tr");
  const th = document.createElement("th");
  const td = document.createElement("td");
  th.textContent = name;
  td.textContent = value === null || value === undefined || value === "" ? "-" : String(value);
  tr.append(th, td);
  return tr;
}

fetch(`/api/finding?${new URLSearchParams({ project, id: query.get("id") || "" })}`)
  .then((r) => r.json())
  .then((doc) => {
    if (doc.error) throw new Error(doc.error);
    const event = doc.event || {};
    const open = doc.open;
    const body = document.querySelector("#fields tbody");
    document.getElementById("title").textContent =
      `${open ? "open" : "not open any more"}: ${event.message || (open && open.message) || ""}`;
    const fields = open || event;
    for (const name of ["id", "severity", "producer", "class", "unit", "slice", "criterion", "target", "times", "raised_at"]) {
      let value = fields[name];
      if (name === "target" && value && typeof value === "object") value = JSON.stringify(value);
      body.append(row(name, value));
    }
    if (doc.event) {
      body.append(row("stream seq", event.seq), row("subject", event.subject), row("actor", `${event.actor.role}:${event.actor.principal}`));
      const evidence = event.evidence || {};
      document.getElementById("where").textContent = Object.keys(evidence).length
        ? "what the producer attached to the finding:" : "the producer attached no evidence beyond the target and message.";
      document.getElementById("evidence").textContent = JSON.stringify(evidence, null, 2);
      document.getElementById("event").textContent = JSON.stringify(event, null, 2);
    } else {
      document.getElementById("event").textContent = "the event was not found on the log";
    }
    document.body.dataset.loaded = "true";
  })
  .catch((err) => { document.getElementById("title").textContent = `cannot read this finding: ${err.message}`; });
