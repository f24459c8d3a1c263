// Rows added to and removed from a form list in the page (attendees of a meeting, items of an
// amendment). Without JavaScript the same buttons work through the server: "Add" sends the
// form back with one more empty row, and "Remove" is a checkbox that takes effect on saving.
(function () {
  "use strict";

  function enhance(root) {
    root.querySelectorAll("[data-formset-remove]").forEach(function (button) {
      button.hidden = false;
    });
    root.querySelectorAll("[data-formset-delete]").forEach(function (box) {
      box.hidden = true;
    });
  }

  document.addEventListener("DOMContentLoaded", function () { enhance(document); });

  document.addEventListener("click", function (event) {
    var add = event.target.closest("[data-formset-add]");
    if (add) {
      event.preventDefault();
      var prefix = add.getAttribute("data-formset-add");
      var total = document.getElementById("id_" + prefix + "-TOTAL_FORMS");
      var template = document.getElementById(prefix + "-empty-row");
      var list = document.getElementById(prefix + "-rows");
      if (!total || !template || !list) { return; }
      var index = parseInt(total.value, 10);
      var html = template.innerHTML
        .replace(/__prefix__/g, String(index))
        .replace(/__number__/g, String(index + 1));
      list.insertAdjacentHTML("beforeend", html);
      total.value = String(index + 1);
      var row = list.lastElementChild;
      enhance(row);
      var first = row.querySelector("input:not([type=hidden]), select, textarea");
      if (first) { first.focus(); }
      return;
    }
    var remove = event.target.closest("[data-formset-remove]");
    if (remove) {
      event.preventDefault();
      var item = remove.closest("[data-formset-row]");
      if (!item) { return; }
      var mark = item.querySelector("input[name$='-DELETE']");
      if (mark) { mark.checked = true; }
      item.hidden = true;
      var status = document.getElementById("formset-status");
      if (status) { status.textContent = remove.getAttribute("data-removed") || "Row removed."; }
    }
  });
})();
