// minibroker console: the live tail and the live trace (server-sent events; the server renders each row).
// Everything else is plain HTML forms and htmx's periodic refresh.
"use strict";

function startStream(table) {
  const body = table.querySelector("tbody");
  const status = document.getElementById(table.dataset.status);
  const max = parseInt(table.dataset.max || "500", 10);
  const source = new EventSource(table.dataset.stream);
  const setStatus = (text, on) => {
    if (!status) return;
    status.textContent = text;
    const dot = document.getElementById(table.dataset.status + "-dot");
    if (dot) dot.classList.toggle("on", on);
  };
  source.addEventListener("open", () => setStatus("live", true));
  source.addEventListener("row", (event) => {
    const template = document.createElement("template");
    template.innerHTML = event.data.trim();
    const empty = body.querySelector("tr.empty");
    if (empty) empty.remove();
    body.prepend(...template.content.childNodes);
    while (body.rows.length > max) body.deleteRow(body.rows.length - 1);
  });
  source.addEventListener("failure", (event) => { setStatus(event.data, false); source.close(); });
  source.addEventListener("error", () => setStatus("reconnecting…", false));
  window.addEventListener("pagehide", () => source.close());
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table[data-stream]").forEach(startStream);
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });
});
