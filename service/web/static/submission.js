// Live progress for a submission page: follows the run's server-sent events, then reloads the page
// so the (server-rendered, escaped) result shows. Only numbers from events are put into the page; the
// words are the page's own (data-* attributes, in its language), a requeue's cause picks one of them.
//
// One status element, driven by a small state machine: `queued` (with the position and estimate the
// stream sends) or `running` (started, cell i of n, checks), then `done`. An event that does not fit the
// state is ignored: a late `estimate` after the claim, or a `cell` of a lost attempt after `requeued`,
// never shows "queued" and "running cell 3 of 3" together.
(function () {
  "use strict";
  var el = document.getElementById("progress");
  if (!el || !window.EventSource) { return; }
  var text = document.getElementById("progress-text");
  var detail = document.getElementById("progress-detail");
  var notice = document.getElementById("progress-notice");
  var CAUSES = ["sandbox_users_exhausted", "host_busy", "db_unavailable", "worker_lost", "kernel_crash", "other"];
  var state = { name: el.dataset.state === "running" ? "running" : "queued", phase: "started", cell: null,
                estimate: null, cause: null };

  function num(x) { var n = Number(x); return Number.isFinite(n) ? n : null; }
  function fill(template, key, value) { return template.split("{" + key + "}").join(String(value)); }

  // The next state after one event (kind, data); the same state object when the event does not apply.
  function step(s, kind, d) {
    var next = { name: s.name, phase: s.phase, cell: s.cell, estimate: s.estimate, cause: s.cause };
    if (kind === "queued") {
      next.name = "queued"; next.cell = null;
    } else if (kind === "requeued") {
      next.name = "queued"; next.cell = null; next.estimate = null;
      next.cause = CAUSES.indexOf(d.cause) >= 0 ? d.cause : "other";
    } else if (kind === "estimate") {
      if (s.name !== "queued") { return s; }
      next.estimate = { position: num(d.position), slots: num(d.worker_slots), finish: num(d.finish_in_s) };
    } else if (kind === "claimed") {
      if (s.name === "done") { return s; }
      next.name = "running"; next.phase = "started"; next.cell = null; next.estimate = null;
    } else if (kind === "started" || kind === "cell" || kind === "checks") {
      if (s.name !== "running") { return s; }
      next.phase = kind === "cell" ? "cell" : (kind === "checks" ? "checks" : "started");
      if (kind === "cell") {
        var i = num(d.index), n = num(d.total);
        if (i === null || n === null) { return s; }
        next.cell = { i: i + 1, n: n };
      }
    } else if (kind === "done") {
      next.name = "done";
    } else {
      return s;
    }
    return next;
  }

  function duration(seconds) {
    if (seconds < 90) { return fill(el.dataset.sec, "n", Math.max(5, Math.round(seconds / 5) * 5)); }
    return fill(el.dataset.min, "n", Math.ceil(seconds / 60));
  }

  function words(s) {
    if (s.name === "queued") { return el.dataset.queued; }
    if (s.phase === "cell" && s.cell) { return fill(fill(el.dataset.cell, "i", s.cell.i), "n", s.cell.n); }
    return s.phase === "checks" ? el.dataset.checks : el.dataset.started;
  }

  function waiting(s) {
    var e = s.estimate;
    if (s.name !== "queued" || !e || e.position === null) { return ""; }
    var parts = [fill(el.dataset.position, "p", e.position)];
    if (e.slots === 0) { parts.push(el.dataset.noWorker); }
    else if (e.finish === null) { parts.push(el.dataset.noEta); }
    else { parts.push(fill(el.dataset.eta, "t", duration(e.finish))); }
    return "(" + parts.join("; ") + ")";
  }

  function show(s) {
    text.textContent = words(s);  // written on every event: observers see each step
    detail.textContent = waiting(s);
    if (s.cause) {
      var key = "why" + s.cause.replace(/(^|_)([a-z])/g, function (_m, _u, c) { return c.toUpperCase(); });
      notice.textContent = fill(el.dataset.requeued, "why", el.dataset[key] || el.dataset.whyOther);
      notice.hidden = false;
    }
  }

  var source = new EventSource(el.dataset.events);
  ["queued", "requeued", "estimate", "claimed", "started", "cell", "checks", "done"].forEach(function (kind) {
    source.addEventListener(kind, function (e) {
      var d = {};
      try { d = JSON.parse(e.data) || {}; } catch (_err) { d = {}; }
      state = step(state, kind, d);
      if (state.name === "done") { source.close(); window.location.reload(); return; }
      show(state);
    });
  });
})();
