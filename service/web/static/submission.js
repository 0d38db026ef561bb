// Live progress for a submission page: follows the run's server-sent events, then reloads the page
// so the (server-rendered, escaped) result shows. Only numbers from events are put into the page.
(function () {
  "use strict";
  var el = document.getElementById("progress");
  if (!el || !window.EventSource) { return; }
  var text = document.getElementById("progress-text");
  var source = new EventSource(el.dataset.events);
  function show(words) { text.textContent = words; }
  source.addEventListener("queued", function () { show(el.dataset.queued); });
  source.addEventListener("claimed", function () { show(el.dataset.started); });
  source.addEventListener("started", function () { show(el.dataset.started); });
  source.addEventListener("cell", function (e) {
    var d = JSON.parse(e.data);
    var i = Number(d.index) + 1, n = Number(d.total);
    if (Number.isFinite(i) && Number.isFinite(n)) {
      show(el.dataset.cell.replace("{i}", String(i)).replace("{n}", String(n)));
    }
  });
  source.addEventListener("checks", function () { show(el.dataset.checks); });
  source.addEventListener("done", function () { source.close(); window.location.reload(); });
})();
