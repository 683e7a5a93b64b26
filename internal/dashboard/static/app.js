// Shutter dashboard: progressive enhancement only. Every page works
// without this file; it adds copy buttons, confirmations, remembering the
// playground key for this tab, and filters that apply on change.
"use strict";
(function () {
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source) return;
      var text = source.value || source.textContent;
      var done = function () {
        var label = button.textContent;
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = label; }, 1500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { source.select(); });
      } else {
        source.select();
        try { document.execCommand("copy"); done(); } catch (e) { /* the text stays selected */ }
      }
    });
  });

  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
    });
  });

  document.querySelectorAll("[data-remember]").forEach(function (input) {
    var name = input.getAttribute("data-remember");
    try {
      if (!input.value && sessionStorage.getItem(name)) input.value = sessionStorage.getItem(name);
      input.addEventListener("change", function () { sessionStorage.setItem(name, input.value); });
    } catch (e) { /* storage off: nothing to remember */ }
  });

  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();
