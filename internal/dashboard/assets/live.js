// Keeps the page live: fetches its main region again every data-poll milliseconds and
// swaps it in place, keeping the focused element's place when it can.
(function () {
  "use strict";
  var main = document.getElementById("main");
  if (!main) { return; }
  var every = parseInt(main.getAttribute("data-poll"), 10) || 2000;
  var busy = false;
  function refresh() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(location.href, { headers: { "X-Muster-Fragment": "1" }, cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var focused = document.activeElement;
        var href = focused && main.contains(focused) ? focused.getAttribute("href") : null;
        main.innerHTML = html;
        if (href) {
          var again = main.querySelector('[href="' + CSS.escape(href) + '"]');
          if (again) { again.focus(); }
        }
        var t = document.querySelector("#updated time");
        if (t) { t.textContent = new Date().toISOString().substring(11, 19); }
        document.body.removeAttribute("data-stale");
      })
      .catch(function () { document.body.setAttribute("data-stale", "true"); })
      .finally(function () { busy = false; });
  }
  setInterval(refresh, every);
})();
