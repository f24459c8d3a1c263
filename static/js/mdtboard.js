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
