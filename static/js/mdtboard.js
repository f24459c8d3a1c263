// Small page behaviours that do not need a framework.
(function () {
  "use strict";
  var KEY = "mdtboard.largeText";
  function apply(on) {
    document.documentElement.classList.toggle("large-text", on);
    document.querySelectorAll("[data-toggle-large-text]").forEach(function (button) {
      button.setAttribute("aria-pressed", on ? "true" : "false");
    });
  }
  apply(window.localStorage.getItem(KEY) === "1");
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-toggle-large-text]");
    if (!button) { return; }
    var on = !document.documentElement.classList.contains("large-text");
    window.localStorage.setItem(KEY, on ? "1" : "0");
    apply(on);
  });
})();

// The live board: when its WebSocket opens (first time or after a reconnect), tell the server
// the last event this page already shows, so it sends everything after it exactly once.
(function () {
  "use strict";
  document.addEventListener("htmx:wsOpen", function (event) {
    var board = document.getElementById("board");
    if (!board || event.target !== board) { return; }
    var seq = document.getElementById("board-seq");
    var after = seq ? parseInt(seq.getAttribute("data-seq") || "0", 10) : 0;
    event.detail.socketWrapper.send(JSON.stringify({ type: "resume", after: after }), board);
  });
})();

// The board's elapsed time ticks while the run is going (the server sends only changes). The
// server's count is the base, so a wrong clock on this computer does not skew it.
(function () {
  "use strict";
  function show(element) {
    var base = parseInt(element.getAttribute("data-base") || "0", 10);
    if (!base) {
      var seconds = parseInt(element.getAttribute("data-elapsed-s") || "0", 10);
      base = Date.now() - seconds * 1000;
      element.setAttribute("data-base", String(base));
    }
    var elapsed = Math.max(0, Math.floor((Date.now() - base) / 1000));
    element.textContent = Math.floor(elapsed / 60) + " min " + (elapsed % 60) + " s";
  }
  window.setInterval(function () {
    document.querySelectorAll(".board-elapsed[data-ticking]").forEach(show);
  }, 1000);
})();
