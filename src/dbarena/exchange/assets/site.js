// The index of a dbarena site: the results (data.js, written by `dbarena site`) as rows,
// filtered by what the URL's fragment says (#engine=postgres&arch=aarch64&view=core),
// so that a link shows the same rows and the back button the previous filter. Every value
// comes from a bundle, which anyone can write: it is set as text (textContent), never as
// markup. Nothing is fetched: the page works from file:// and from any static host.
(function () {
  "use strict";
  var site = window.DBARENA_SITE || {results: [], refused: []};
  var FILTERS = [["engine", "engine"], ["version", "version"], ["workload", "workload"], ["arch", "architecture"],
                 ["cpu", "CPU model"], ["cloud", "cloud"], ["instance", "instance type"], ["managed", "managed"]];
  var VIEWS = {tps: ["peak", 1, "peak"], core: ["peak per core", 2, "peak_per_core"],
               price: ["peak per price unit an hour", 3, "peak_per_price"]};
  var form = document.getElementById("filters");
  var body = document.querySelector("#results tbody");
  var SVG = "http://www.w3.org/2000/svg";

  function state() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var i = part.indexOf("=");
      if (i > 0) { out[decodeURIComponent(part.slice(0, i))] = decodeURIComponent(part.slice(i + 1)); }
    });
    if (!VIEWS[out.view]) { out.view = "tps"; }
    return out;
  }
  function go(next) {
    var parts = [];
    Object.keys(next).sort().forEach(function (k) {
      if (next[k] && !(k === "view" && next[k] === "tps")) {
        parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(next[k]));
      }
    });
    location.hash = parts.join("&");  // a new history entry: the back button returns to this one's filter
  }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function number(v) {
    if (v === null || v === undefined) { return "-"; }
    return Math.abs(v) >= 10 ? v.toLocaleString("en", {maximumFractionDigits: 1}) : v.toPrecision(3);
  }
  function curve(points, column) {
    var pts = points.filter(function (p) { return typeof p[column] === "number"; });
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("width", "160"); svg.setAttribute("height", "40");
    if (!pts.length) { return svg; }
    var top = Math.max.apply(null, pts.map(function (p) { return p[column]; })) || 1;
    var lo = pts[0][0], hi = pts[pts.length - 1][0];
    var line = document.createElementNS(SVG, "polyline");
    line.setAttribute("fill", "none"); line.setAttribute("stroke", "#36c"); line.setAttribute("stroke-width", "1.5");
    line.setAttribute("points", pts.map(function (p) {
      var x = 4 + 152 * (hi > lo ? (p[0] - lo) / (hi - lo) : 0.5);
      return x.toFixed(1) + "," + (37 - 34 * p[column] / top).toFixed(1);
    }).join(" "));
    var title = document.createElementNS(SVG, "title");
    title.textContent = pts.map(function (p) { return p[0] + " threads: " + number(p[column]); }).join("; ");
    svg.appendChild(title); svg.appendChild(line);
    return svg;
  }
  function buildForm(s) {
    form.textContent = "";
    FILTERS.forEach(function (f) {
      var values = {};
      site.results.forEach(function (r) { if (r[f[0]]) { values[r[f[0]]] = true; } });
      var label = el("label", f[1] + " ");
      var select = el("select"); select.name = f[0];
      select.appendChild(el("option", "any")).value = "";
      Object.keys(values).sort().forEach(function (v) { select.appendChild(el("option", v)).value = v; });
      select.value = s[f[0]] || "";
      select.addEventListener("change", function () { var n = state(); n[f[0]] = select.value; go(n); });
      label.appendChild(select); form.appendChild(label);
    });
    var view = el("label", "figure ");
    var vs = el("select"); vs.name = "view";
    [["tps", "throughput"], ["core", "per core"], ["price", "per price"]].forEach(function (v) {
      vs.appendChild(el("option", v[1])).value = v[0];
    });
    vs.value = s.view;
    vs.addEventListener("change", function () { var n = state(); n.view = vs.value; go(n); });
    view.appendChild(vs); form.appendChild(view);
  }
  function render() {
    var s = state();
    buildForm(s);
    var view = VIEWS[s.view];
    document.getElementById("figure-head").textContent = view[0];
    var shown = site.results.filter(function (r) {
      return FILTERS.every(function (f) { return !s[f[0]] || r[f[0]] === s[f[0]]; });
    });
    var key = view[2];
    shown.sort(function (a, b) {
      var x = a[key], y = b[key];
      if ((x === null) !== (y === null)) { return x === null ? 1 : -1; }
      return (a.lower_is_better ? x - y : y - x) || (a.id < b.id ? -1 : 1);
    });
    var frag = document.createDocumentFragment();
    shown.forEach(function (r) {
      var tr = el("tr"); tr.dataset.id = r.id;
      var name = el("td"); var a = el("a", r.label); a.href = "r/" + encodeURIComponent(r.id) + ".html";
      name.appendChild(a); tr.appendChild(name);
      tr.appendChild(el("td", r.engine + " " + r.server_version));
      tr.appendChild(el("td", r.workload));
      tr.appendChild(el("td", [r.cloud, r.instance, r.arch, r.cpu, r.cores ? r.cores + " cores" : "", r.managed]
        .filter(Boolean).join(", ")));
      var fig = r[key] === null ? (s.view === "price" ? "no price" : "-") : number(r[key]);
      tr.appendChild(el("td", fig + (r[key] !== null && r.peak_threads ? " at " + r.peak_threads + " threads" : ""),
        "num figure"));
      var c = el("td"); c.appendChild(curve(r.curve, view[1])); tr.appendChild(c);
      var trust = el("td", r.trust.text, r.trust.signed ? "" : "unsigned");
      if (r.imported) { trust.appendChild(el("div", "imported, not measured by dbarena", "imported")); }
      if (r.probe_text) { trust.appendChild(el("div", "probe: " + r.probe_text)); }
      tr.appendChild(trust);
      frag.appendChild(tr);
    });
    body.textContent = "";
    body.appendChild(frag);
    document.getElementById("shown").textContent = shown.length + " of " + site.results.length + " result(s) shown";
  }
  window.addEventListener("hashchange", render);
  render();
}());
