// The portal works without this file; with it, an attempt's status and the instructor's class progress update
// live (an attempt's status streamed by the server as it changes, the class's the portal's own JSON), and a
// notebook can be dropped on the upload field.
"use strict";

// The instructor's class progress: asked again every `every` ms.
function poll(url, every, onData) {
  let stopped = false;
  async function tick() {
    if (stopped) return;
    let next = every;
    try {
      const response = await fetch(url, {credentials: "same-origin", cache: "no-store"});
      if (response.ok) {
        const data = await response.json();
        if (onData(data) === false) { stopped = true; return; }
        if (data.poll_seconds) next = data.poll_seconds * 1000;
      }
    } catch (error) { /* the next tick tries again */ }
    setTimeout(tick, next);
  }
  setTimeout(tick, every);
}

const LONG_RUN = "your notebook needed longer than a short run while other students' notebooks waited; it runs "
  + "again with its full time as soon as no one else's notebook waits (this uses no extra attempt).";

function describe(s) {
  if (s.status === "queued" && s.full_run) return `Queued: ${LONG_RUN}`;
  if (s.status === "queued") return `Queued: ${s.ahead} ahead of yours, about ${Math.round(s.wait_seconds)} s to wait.`;
  if (s.status === "running") return `Running in the grading sandbox (about ${Math.round(s.wait_seconds)} s left).`;
  if (s.status === "graded") return s.score === null ? "Graded." : `Graded: ${s.score} / ${s.max_score}.`;
  return "The grader could not run this notebook (not your fault; this attempt is not counted).";
}

const RETRY_MS = 2000;

// Long polling, where a browser has no EventSource: each request names the status shown and the server answers
// when it changes (or after a while); poll_seconds says how soon to ask again (0 after a held request; more when
// the server could not hold it).
function follow(url, status, onData) {
  async function ask() {
    let next = RETRY_MS;
    try {
      const response = await fetch(`${url}?since=${encodeURIComponent(status)}`,
                                   {credentials: "same-origin", cache: "no-store"});
      if (response.ok && response.status !== 204) {
        const data = await response.json();
        if (onData(data) === false) return;
        status = data.status;
        next = data.poll_seconds * 1000;
      }
    } catch (error) { /* asked again after RETRY_MS */ }
    setTimeout(ask, next);
  }
  ask();
}

// Server-sent events: the server sends the status now and at each change, on one request for the whole wait; the
// EventSource connects again by itself when a stream ends (after the wait the server names when it could not hold
// the stream) until the status is finished.
function stream(url, onData) {
  const source = new EventSource(url);
  source.onmessage = (event) => { if (onData(JSON.parse(event.data)) === false) source.close(); };
}

function watchAttempt(element) {
  if (!["queued", "running"].includes(element.dataset.status)) return;
  const show = (s) => {
    element.textContent = describe(s);
    element.dataset.status = s.status;
    element.className = `status ${s.status}`;
    if (s.status === "graded" || s.status === "error") { window.location.reload(); return false; }
    return true;
  };
  if (typeof EventSource === "function") stream(element.dataset.events, show);
  else follow(element.dataset.url, element.dataset.status, show);
}

function watchClass(table) {
  poll(table.dataset.url, 2000, (data) => {
    for (const [name, value] of Object.entries(data.counts)) {
      const cell = document.querySelector(`[data-count="${name}"]`);
      if (cell) cell.textContent = value;
    }
    for (const row of data.rows) {
      const line = table.querySelector(`tr[data-key="${CSS.escape(row.student + "/" + row.assignment)}"]`);
      if (!line) continue;
      line.querySelector('[data-field="attempts"]').textContent = row.attempts;
      line.querySelector('[data-field="latest"]').textContent = row.latest;
      line.querySelector('[data-field="score"]').textContent =
        (row.score === null ? "" : `${row.score} / ${row.max_score}`) + (row.late ? " late" : "");
    }
    return true;
  });
}

function dropZone(zone) {
  const input = zone.querySelector('input[type="file"]');
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    if (event.dataTransfer.files.length) input.files = event.dataTransfer.files;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const status = document.getElementById("status");
  if (status) watchAttempt(status);
  const progress = document.getElementById("progress");
  if (progress) watchClass(progress);
  document.querySelectorAll(".dropzone").forEach(dropZone);
});

// The page returning an instructor's deep-linking choice posts its form to the LMS at once (its button does the
// same without JavaScript).
const autoSubmit = document.querySelector("form[data-auto-submit]");
if (autoSubmit) autoSubmit.submit();
