// dbarena serve: draws the pages' charts in the browser from the data the server put in
// each <div class="chart" data-chart="..."> (report/chartspecs.py says the format and why it
// is drawn here). Small and self-contained: it ships in the package, loads from /static
// (the Content-Security-Policy allows no CDN and no inline script), and puts every text
// in the page as text (textContent, never HTML). A chart whose spec says zoom: drag
// across it to zoom into those seconds (every chart of its group follows), double-click
// or "whole series" to go back.
// A capacity curve (--slo) adds to a spec: "xmin"/"xmax" (its x axis, shared by its two
// charts), "ylog" (a log y axis), "hlines" ([{y, text}]: the objective, a red line named),
// per series "line": false (markers only), "dots": false (a line only), "star" (star markers: the closed-loop point),
// "pattern" (its dashes, e.g. "1 3"), a point's fifth item 1 (an open marker: a rate that
// missed the objective), and a mark's "label" (a text at its top: the capacity).
'use strict';
(function () {
  const NS = 'http://www.w3.org/2000/svg';
  const W = 800, H = 280, L = 70, R = 16, T = 14, B = 40;
  const OBJECTIVE = '#d62728';
  // matplotlib's colours (the report's charts): a label has the same colour in both. Set
  // as attributes, not by the style sheet, so that a saved SVG keeps them.
  const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
                  '#bcbd22', '#17becf'];
  const groups = new Map();  // zoom group -> its charts' redraw functions

  function el(name, attrs, parent) {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (parent) parent.appendChild(node);
    return node;
  }

  function ticks(lo, hi, n) {
    // "Nice" steps (1, 2, 5 x 10^k), about n of them.
    const span = hi - lo || 1;
    const raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(function (m) { return m * mag; }).find(function (s) { return s >= raw; });
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
    return out;
  }

  function fmt(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toLocaleString('en', {maximumFractionDigits: 1}) + 'M';
    if (a >= 1e4) return (v / 1e3).toLocaleString('en', {maximumFractionDigits: 1}) + 'k';
    return v.toLocaleString('en', {maximumFractionDigits: a < 10 ? 2 : 0});
  }

  function local(href) {
    // Links the server made start with "/": anything else is not followed.
    return typeof href === 'string' && href.startsWith('/') && !href.startsWith('//') ? href : null;
  }

  function draw(holder, spec, domain) {
    const old = holder.querySelector('svg');
    if (old) old.remove();
    const all = spec.series.flatMap(function (s) { return s.points.map(function (p) { return p[0]; }); });
    if (!all.length) return;
    // (A loop, not Math.min(...all): a day-long series holds more seconds than a call takes arguments.)
    const x0 = domain ? domain[0] : (typeof spec.xmin === 'number' ? spec.xmin
      : all.reduce(function (a, b) { return Math.min(a, b); }, Infinity));
    const x1 = domain ? domain[1] : (typeof spec.xmax === 'number' ? spec.xmax
      : all.reduce(function (a, b) { return Math.max(a, b); }, -Infinity));
    const inside = function (x) { return x >= x0 && x <= x1; };
    const hlines = spec.hlines || [];
    let top = 0, low = Infinity;
    for (const s of spec.series) {
      for (const p of s.points) if (inside(p[0])) { top = Math.max(top, p[1]); if (p[1] > 0) low = Math.min(low, p[1]); }
      for (const b of s.band) if (inside(b[0])) top = Math.max(top, b[2]);
    }
    for (const h of hlines) { top = Math.max(top, h.y); if (h.y > 0) low = Math.min(low, h.y); }
    const sx = function (x) { return L + (x - x0) / ((x1 - x0) || 1) * (W - L - R); };
    let sy, yticks;
    if (spec.ylog && low < Infinity) {
      // Whole decades, the lowest and highest figure within them.
      const lo = Math.floor(Math.log10(low)), hi = Math.max(Math.ceil(Math.log10(top)), lo + 1);
      sy = function (y) { return H - B - (Math.log10(y) - lo) / (hi - lo) * (H - B - T); };
      yticks = [];
      for (let k = lo; k <= hi; k++) yticks.push(Math.pow(10, k));
    } else {
      top = top * 1.05 || 1;
      sy = function (y) { return H - B - y / top * (H - B - T); };
      yticks = ticks(0, top, 5);
    }
    // (On a log axis a figure of 0 or less has no place: left out.)
    const shownY = function (p) { return !spec.ylog || p[1] > 0; };
    const svg = el('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', class: 'drawn'});
    el('title', {}, svg).textContent = spec.title;
    const axes = el('g', {class: 'axes'}, svg);
    for (const y of yticks) {
      el('line', {class: 'grid', x1: L, x2: W - R, y1: sy(y), y2: sy(y)}, axes);
      el('text', {x: L - 6, y: sy(y) + 4, 'text-anchor': 'end'}, axes).textContent = fmt(y);
    }
    // Levels of threads where the spec names them, never 1.5 threads; or the spec's own
    // texts at their places (a History run's id), about 12 of them where there are more.
    const named = spec.xlabels ? spec.xlabels.filter(function (l) { return inside(l[0]); }) : null;
    const every = named ? Math.max(1, Math.ceil(named.length / 12)) : 1;
    const xs = named ? named.filter(function (l, n) { return n % every === 0; })
      : (spec.xticks ? spec.xticks.filter(inside)
         : ticks(x0, x1, 8).filter(function (v) { return !spec.integer || Number.isInteger(v); }))
        .map(function (x) { return [x, fmt(x)]; });
    for (const [x, text] of xs) {
      el('text', {x: sx(x), y: H - B + 16, 'text-anchor': 'middle', class: 'xtick'}, axes).textContent = text;
    }
    el('line', {class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B}, axes);
    el('line', {class: 'axis', x1: L, x2: L, y1: T, y2: H - B}, axes);
    el('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle'}, axes).textContent = spec.x;
    el('text', {x: 14, y: (T + H - B) / 2, 'text-anchor': 'middle',
                transform: 'rotate(-90 14 ' + (T + H - B) / 2 + ')'}, axes).textContent = spec.y;
    const clip = 'clip-' + Math.random().toString(36).slice(2);
    el('rect', {x: L, y: T - 4, width: W - L - R, height: H - B - T + 8},
       el('clipPath', {id: clip}, el('defs', {}, svg)));
    const plot = el('g', {'clip-path': 'url(#' + clip + ')'}, svg);
    for (const s of spec.series) {
      const cls = ' s' + (s.i % 10) + (s.cls ? ' ' + s.cls : '');
      const color = COLORS[s.i % 10];
      if (s.band.length) {
        const upper = s.band.map(function (b) { return sx(b[0]).toFixed(1) + ',' + sy(b[2]).toFixed(1); });
        const lower = s.band.slice().reverse().map(function (b) { return sx(b[0]).toFixed(1) + ',' + sy(b[1]).toFixed(1); });
        el('polygon', {class: 'band' + cls, fill: color, 'fill-opacity': 0.15, stroke: 'none', points: upper.concat(lower).join(' ')}, plot);
      }
      const shown = s.points.filter(function (p) { return inside(p[0]) && shownY(p); });
      if (s.line !== false) {
        el('polyline', {class: 'line' + cls + (s.dash ? ' dash' : ''), fill: 'none', stroke: color,
                        'stroke-width': 1.5, 'stroke-dasharray': s.pattern || (s.dash ? '5 3' : 'none'),
                        points: shown.map(function (p) { return sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1); }).join(' ')}, plot);
      }
      // Hover targets: every point of a short series, about 400 of a long one (the line
      // shows them all; a zoom brings every second back).
      const every = Math.max(1, Math.ceil(shown.length / 400));
      const dots = el('g', {class: 'dots' + cls, fill: color}, plot);
      if (s.dots === false) continue;
      shown.forEach(function (p, n) {
        if (n % every) return;
        const href = local(p[3]);
        const parent = href ? el('a', {href: href}, dots) : dots;
        const cx = sx(p[0]), cy = sy(p[1]);
        let dot;
        if (s.star) {
          const corners = [];
          for (let k = 0; k < 10; k++) {
            const r = k % 2 ? 3.5 : 8, a = Math.PI * k / 5 - Math.PI / 2;
            corners.push((cx + r * Math.cos(a)).toFixed(1) + ',' + (cy + r * Math.sin(a)).toFixed(1));
          }
          dot = el('polygon', {class: 'star', points: corners.join(' ')}, parent);
        } else {
          dot = el('circle', {cx: cx.toFixed(1), cy: cy.toFixed(1), r: href ? 4 : 3}, parent);
          if (p[4]) { dot.setAttribute('class', 'open'); dot.setAttribute('fill', '#fff'); dot.setAttribute('stroke', color); }
        }
        el('title', {}, dot).textContent = p[2];
      });
    }
    for (const h of hlines) {
      const at = sy(h.y);
      const line = el('line', {class: 'hline', x1: L, x2: W - R, y1: at, y2: at, stroke: OBJECTIVE, 'stroke-width': 1.5}, plot);
      el('title', {}, line).textContent = h.text;
      el('text', {class: 'hline-label', x: W - R - 4, y: at - 4, 'text-anchor': 'end', fill: OBJECTIVE}, plot)
        .textContent = h.text;
    }
    for (const m of spec.marks) {
      if (!inside(m.x)) continue;
      const href = local(m.href);
      const parent = href ? el('a', {href: href, class: 'mark-link'}, plot) : plot;
      const line = el('line', {class: 'mark', x1: sx(m.x), x2: sx(m.x), y1: T, y2: H - B}, parent);
      el('title', {}, line).textContent = m.text;
      if (m.label) el('text', {class: 'mark-label', x: sx(m.x) + 3, y: T + 10}, parent).textContent = m.label;
      if (href) {
        // A wide, invisible line over it: a dotted line 1 px wide is hard to click.
        const hit = el('line', {class: 'hit', x1: sx(m.x), x2: sx(m.x), y1: T, y2: H - B}, parent);
        el('title', {}, hit).textContent = m.text;
      }
    }
    if (spec.zoom) zoomable(holder, svg, spec, x0, x1, sx);
    holder.insertBefore(svg, holder.querySelector('.legend'));
  }

  function zoomable(holder, svg, spec, x0, x1, sx) {
    const pick = el('rect', {class: 'pick', x: 0, y: T, width: 0, height: H - B - T}, svg);
    const at = function (event) {
      const box = svg.getBoundingClientRect();
      const px = (event.clientX - box.left) / box.width * W;
      return x0 + (Math.min(Math.max(px, L), W - R) - L) / (W - L - R) * (x1 - x0);
    };
    let start = null;
    svg.addEventListener('mousedown', function (event) { start = at(event); event.preventDefault(); });
    svg.addEventListener('mousemove', function (event) {
      if (start === null) return;
      const a = Math.min(start, at(event)), b = Math.max(start, at(event));
      pick.setAttribute('x', sx(a)); pick.setAttribute('width', Math.max(sx(b) - sx(a), 0));
    });
    svg.addEventListener('mouseup', function (event) {
      if (start === null) return;
      const a = Math.min(start, at(event)), b = Math.max(start, at(event));
      start = null;
      pick.setAttribute('width', 0);
      if (sx(b) - sx(a) >= 6) zoom(spec.group, holder, [a, b]);
    });
    svg.addEventListener('dblclick', function () { zoom(spec.group, holder, null); });
  }

  function zoom(group, holder, domain) {
    const members = group ? groups.get(group) : [holder.redraw];
    for (const redraw of members) redraw(domain);
  }

  for (const holder of document.querySelectorAll('div.chart[data-chart]')) {
    let spec;
    try {
      spec = JSON.parse(holder.dataset.chart);
    } catch (e) {
      continue;
    }
    const legend = document.createElement('ul');
    legend.className = 'legend';
    const named = new Set();
    for (const s of spec.series) {
      if (named.has(s.name)) continue;
      named.add(s.name);
      const item = document.createElement('li');
      item.className = 'key s' + (s.i % 10) + (s.dash ? ' dash' : '') + (s.cls ? ' ' + s.cls : '');
      item.textContent = s.name;
      legend.appendChild(item);
    }
    holder.appendChild(legend);
    let reset = null;
    holder.redraw = function (domain) {
      draw(holder, spec, domain);
      if (reset) reset.hidden = !domain;
    };
    if (spec.zoom) {
      reset = document.createElement('button');
      reset.type = 'button';
      reset.className = 'reset';
      reset.textContent = 'whole series';
      reset.hidden = true;
      reset.addEventListener('click', function () { zoom(spec.group, holder, null); });
      holder.appendChild(reset);
      if (spec.group) {
        if (!groups.has(spec.group)) groups.set(spec.group, []);
        groups.get(spec.group).push(holder.redraw);
      }
    }
    holder.redraw(null);
    holder.classList.add('ready');
  }

  // "save as SVG" under a chart: the chart already in the page, as a file.
  document.addEventListener('click', function (event) {
    const a = event.target.closest('a.save-svg');
    if (!a) return;
    const svg = a.closest('figure').querySelector('svg');
    if (!svg) return;
    const copy = svg.cloneNode(true);
    copy.setAttribute('xmlns', NS);
    a.href = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(copy)], {type: 'image/svg+xml'}));
  });
})();
