// A result's page (dbarena site): the decision against the baseline chosen, which the
// URL's fragment keeps (#vs=ID), so that a link or the back button shows the same one.
// Every decision was drawn when the site was built; this only shows one of them.
(function () {
  "use strict";
  var select = document.getElementById("baseline");
  if (!select) { return; }
  function chosen() {
    var m = /(?:^#|&)vs=([^&]*)/.exec(location.hash);
    var id = m ? decodeURIComponent(m[1]) : select.options[0].value;
    return document.getElementById("vs-" + id) ? id : select.options[0].value;
  }
  function show() {
    var id = chosen();
    select.value = id;
    var all = document.querySelectorAll("div.vs");
    for (var i = 0; i < all.length; i++) { all[i].hidden = all[i].id !== "vs-" + id; }
  }
  select.addEventListener("change", function () { location.hash = "vs=" + encodeURIComponent(select.value); });
  window.addEventListener("hashchange", show);
  show();
}());
