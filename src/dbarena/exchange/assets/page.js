// A result's page (dbarena site): the decision against the baseline chosen, which the
// URL's fragment keeps (#vs=ID), so that a link or the back button shows the same one.
// Every decision was drawn when the site was built and shipped packed with the baselines'
// options (JSON, gzip, base64, in a script element no browser runs: exchange/site.py
// `packed`); this unpacks them into the page once and only shows one of them.
(function () {
  "use strict";
  var select = document.getElementById("baseline");
  var packed = document.getElementById("packed");
  var into = document.getElementById("decisions");
  if (!select || !packed || !into) { return; }
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
  function unpack() {
    var text = atob(packed.textContent.trim());
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).json();
  }
  if (typeof DecompressionStream === "undefined") {
    into.textContent = "This browser cannot unpack the decisions (it has no DecompressionStream): " +
      "any browser since 2023 can, or `dbarena compare` decides the pair.";
    return;
  }
  unpack().then(function (shipped) {
    // (Markup this site drew, every value from a bundle escaped when it was drawn.)
    select.innerHTML = shipped.options;
    into.innerHTML = shipped.decisions;
    select.addEventListener("change", function () { location.hash = "vs=" + encodeURIComponent(select.value); });
    window.addEventListener("hashchange", show);
    show();
  }, function (err) {
    into.textContent = "The decisions could not be unpacked: " + err;
  });
}());
