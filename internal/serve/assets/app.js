// Live updates for dsh serve's pages. The page works without this file;
// with it, the element carrying data-events follows the server's event
// stream: each "fragment" event is the element's new content, rendered and
// escaped by the server's templates.
"use strict";
(function () {
  var el = document.querySelector("[data-events]");
  var status = document.getElementById("live-status");
  if (!el || !window.EventSource) {
    return;
  }
  var es = new EventSource(el.getAttribute("data-events"));
  function show(text, cls) {
    if (!status) {
      return;
    }
    status.hidden = false;
    status.textContent = text;
    status.className = "live-status " + cls;
  }
  es.addEventListener("open", function () {
    show("live", "on");
  });
  es.addEventListener("fragment", function (e) {
    el.innerHTML = e.data;
    el.setAttribute("data-updated", String(Date.now()));
    show("live", "on");
  });
  es.addEventListener("error", function () {
    show("reconnecting…", "off");
  });
})();
