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

// Live sockets come back after any interruption. htmx's WebSocket extension reconnects only
// after abnormal closes (1006, 1011, 1012, 1013); a server that restarts may close with 1001
// ("going away"), 1000 or no status (1005), and the page would then stay silent until
// reloaded. Other closes are the server's decision and final: a refusal (4401 not signed in,
// 4403 not allowed), a policy or protocol violation (1008, 1003, 1007, 1009); so is a socket
// whose element left the page (closed on purpose).
(function () {
  "use strict";
  var RECONNECT_ON = [1000, 1001, 1005];
  var attempts = new WeakMap();
  var openedAt = new WeakMap();
  document.addEventListener("htmx:wsClose", function (event) {
    var element = event.target;
    var code = event.detail.event ? event.detail.event.code : 0;
    if (RECONNECT_ON.indexOf(code) < 0 || !document.body.contains(element)) { return; }
    // Back off further while the server keeps closing right after accepting.
    var lasted = Date.now() - (openedAt.get(element) || 0);
    var tries = lasted > 10000 ? 0 : attempts.get(element) || 0;
    attempts.set(element, tries + 1);
    var delay = Math.random() * 1000 * Math.pow(2, Math.min(tries, 5));
    window.setTimeout(function () {
      if (document.body.contains(element)) { event.detail.socketWrapper.reconnect(); }
    }, delay);
  });
  document.addEventListener("htmx:wsOpen", function (event) {
    openedAt.set(event.target, Date.now());
  });
})();

// The notification socket has no history to replay (yet): after an interruption it asks for
// what it missed (a server that keeps notices answers; today's ignores the message) and tells
// the user that notices from the gap may be missing, rather than letting silence pass for
// "nothing happened".
(function () {
  "use strict";
  var closedAt = null;
  document.addEventListener("htmx:wsClose", function (event) {
    if (event.target.id === "notices" && closedAt === null) { closedAt = new Date(); }
  });
  document.addEventListener("htmx:wsOpen", function (event) {
    var notices = event.target;
    if (notices.id !== "notices" || closedAt === null) { return; }
    var since = closedAt.toISOString();
    closedAt = null;
    event.detail.socketWrapper.send(JSON.stringify({ type: "resume", since: since }), notices);
    var note = document.createElement("p");
    note.className = "notice notice--warning";
    note.setAttribute("role", "status");
    note.setAttribute("data-reconnected", "");
    note.textContent = "The live connection was interrupted and is back. Notices sent in " +
      "between may be missing: each consultation's board shows its status.";
    notices.appendChild(note);
  });
})();
