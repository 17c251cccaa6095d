/* pareto.js — the Pareto front of a study of several metrics (the spec's `metrics`):
 * a scatter chart (SVG) of the SUCCEEDED trials on two metrics picked in two
 * selectors, the front's trials highlighted and joined by the front's step line, and a
 * table of the front's trials with every metric and parameter, sortable. The panel is
 * hidden for a study of one metric.
 *
 * The front is computed here from S.trials by the rule of the API's "pareto" (tuner/
 * study.c's study_pareto): the SUCCEEDED trials with a value of every metric that no
 * other such trial beats in all of them (duplicates of a front point are all on it).
 * So it follows the trials' events without reading the study again. The chart's step
 * line is the front of the two metrics shown (the same trials when the study has two).
 * Hover and click work as in the other charts: the trial under the pointer is outlined
 * everywhere (S.hover) and a click opens it. docs/dashboard-page.md, "Pareto front".
 */
import {
  $, el, sv, clear, setText, isNum, trunc, fmtNum, fmtParam, niceTicks, boxSize, showTip,
  hideTip, drawAxes
} from './util.js';
import { S, RENDER, invalidate, costLimited, navigate } from './model.js';
import { setHover } from './charts.js';

var MAX_ROWS = 1000; /* rows of the front's table; more are counted, not shown */

var P = {
  study: null,        /* the study the selectors were built for */
  sig: '',            /* its metrics, as built */
  x: 0, y: 1,         /* the metrics (indices) on the chart's axes */
  sort: null,         /* the table's sort: {key, desc} */
  chart: null,        /* scales and points of the last drawing, for hovering */
  rows: new Map()     /* trial number -> <tr> of the front's table */
};

/* The study's metrics, [{metricId, goal}], or [] when unknown. */
export function metricsOf() {
  var m = S.study && S.study.metrics;
  return Array.isArray(m) ? m.filter(function (x) { return x && typeof x.metricId === 'string'; }) : [];
}
function isMax(m) { return m.goal !== 'MINIMIZE'; }
function goalText(m) { return isMax(m) ? '↑ maximise' : '↓ minimise'; }
function arrow(m) { return isMax(m) ? ' ↑' : ' ↓'; }

/* ------------------------------------------------------------- the front */

/* `items` are {t, v}: v the values over the metrics whose goals (max: true when higher
 * is better) are `max`. Returns the items no other one dominates (no worse in every
 * metric and better in one), in the order of a lexicographic sort best first. After
 * that sort only an earlier item can dominate a later one, and if any does, one on
 * the front does; with two metrics, the last one put on it. */
function front(items, max) {
  var m = max.length;
  function cmp(a, b) {
    for (var k = 0; k < m; k++) {
      if (a.v[k] !== b.v[k]) return (a.v[k] > b.v[k]) === max[k] ? -1 : 1;
    }
    return a.t.number - b.t.number;
  }
  function dominates(a, b) {
    var strict = false;
    for (var k = 0; k < m; k++) {
      if (a[k] === b[k]) continue;
      if ((a[k] > b[k]) !== max[k]) return false;
      strict = true;
    }
    return strict;
  }
  var sorted = items.slice().sort(cmp), out = [];
  sorted.forEach(function (p) {
    if (m === 2) {
      if (out.length && dominates(out[out.length - 1].v, p.v)) return;
    } else {
      for (var i = out.length - 1; i >= 0; i--) if (dominates(out[i].v, p.v)) return;
    }
    out.push(p);
  });
  return out;
}

/* The trials with a value of each of the metrics `ks` (SUCCEEDED only), as {t, v}. */
function valued(ks) {
  var out = [];
  S.trials.forEach(function (t) {
    if (t.state !== 'SUCCEEDED' || !Array.isArray(t.values)) return;
    var v = [];
    for (var i = 0; i < ks.length; i++) {
      var x = t.values[ks[i]];
      if (!isNum(x)) return;
      v.push(x);
    }
    out.push({ t: t, v: v });
  });
  return out;
}

/* ------------------------------------------------------ building the panel */

/* Shows the panel for a study of several metrics (hides it otherwise) and fills the
 * selectors and the table's head; called when a study is loaded. The axes picked
 * are kept while the study stays the same. */
export function buildPareto() {
  var ms = metricsOf(), card = $('pareto-card');
  card.hidden = ms.length < 2;
  if (ms.length < 2) { P.chart = null; return; }
  var sig = JSON.stringify(ms);
  if (P.study === S.name && P.sig === sig) return;
  if (P.study !== S.name || P.x >= ms.length || P.y >= ms.length) { P.x = 0; P.y = 1; }
  P.study = S.name;
  P.sig = sig;
  P.sort = { key: 'm:0', desc: isMax(ms[0]) };
  ['pareto-x', 'pareto-y'].forEach(function (id) {
    var sel = $(id);
    clear(sel);
    ms.forEach(function (m, i) {
      el('option', { value: String(i), title: m.metricId + ' (' + goalText(m) + ')' }, sel, trunc(m.metricId, 60) + arrow(m));
    });
  });
  $('pareto-x').value = String(P.x);
  $('pareto-y').value = String(P.y);
  buildHead(ms);
}

function columns(ms) {
  var cols = [{ key: 'number', label: 'Trial', num: true }];
  ms.forEach(function (m, i) {
    cols.push({ key: 'm:' + i, label: m.metricId + arrow(m), title: m.metricId + ' (' + goalText(m) + ')', metric: i, num: true, max: isMax(m) });
  });
  ((S.study && S.study.params) || []).forEach(function (p) {
    cols.push({ key: 'p:' + p.name, label: p.name, title: p.name, param: p.name, num: p.type !== 'CATEGORICAL' });
  });
  return cols;
}
function buildHead(ms) {
  var head = $('pareto-head');
  clear(head);
  P.cols = columns(ms);
  P.cols.forEach(function (c) {
    var th = el('th', { scope: 'col', 'class': c.num ? 'num' : null, title: c.title || null }, head);
    var b = el('button', { type: 'button', title: 'sort by ' + (c.title || c.label) }, th, trunc(c.label, 40));
    b.addEventListener('click', function () {
      if (P.sort.key === c.key) P.sort.desc = !P.sort.desc;
      else P.sort = { key: c.key, desc: !!c.max };
      invalidate('paretoTable');
    });
    c.th = th;
  });
}
function cellValue(t, c) {
  if (c.key === 'number') return t.number;
  if (c.metric != null) return Array.isArray(t.values) ? t.values[c.metric] : null;
  return t.params && c.param in t.params ? t.params[c.param] : null;
}

/* ---------------------------------------------------------------- the chart */

var frontNow = [];  /* the study's front (all metrics), as {t, v}, for the table */

RENDER.pareto = costLimited('pareto', function () {
  var ms = metricsOf(), svg = $('pareto-chart');
  if (ms.length < 2 || $('pareto-card').hidden) return;
  var all = ms.map(function (m, i) { return i; });
  frontNow = front(valued(all), ms.map(isMax));
  var onFront = new Set(frontNow.map(function (p) { return p.t.number; }));
  var nums = Array.from(onFront).sort(function (a, b) { return a - b; });
  svg.setAttribute('data-front', nums.join(','));
  setText($('pareto-sub'), frontNow.length ? frontNow.length + (frontNow.length === 1 ? ' trial' : ' trials') +
    ' on the front of ' + ms.length + ' metrics' : 'no trial with every metric yet');
  renderTable();

  var size = boxSize(svg);
  if (!size.visible) return;
  clear(svg);
  var mx = ms[P.x], my = ms[P.y];
  var pts = valued([P.x, P.y]);
  pts.sort(function (a, b) { return a.t.number - b.t.number; });
  var xlo = Infinity, xhi = -Infinity, ylo = Infinity, yhi = -Infinity;
  pts.forEach(function (p) {
    if (p.v[0] < xlo) xlo = p.v[0];
    if (p.v[0] > xhi) xhi = p.v[0];
    if (p.v[1] < ylo) ylo = p.v[1];
    if (p.v[1] > yhi) yhi = p.v[1];
  });
  function range(lo, hi) {
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    if (lo === hi) { var d = Math.abs(lo) * 0.05 || 1; lo -= d; hi += d; }
    var pad = (hi - lo) * 0.06;
    return [lo - pad, hi + pad];
  }
  var xr = range(xlo, xhi), yr = range(ylo, yhi);
  var m = { l: 56, r: 14, t: 22, b: 34 }, W = size.w - m.l - m.r, H = size.h - m.t - m.b;
  function sx(v) { return m.l + (v - xr[0]) / (xr[1] - xr[0]) * W; }
  function sy(v) { return m.t + (1 - (v - yr[0]) / (yr[1] - yr[0])) * H; }
  var g = drawAxes(svg, m, W, H, niceTicks(yr[0], yr[1], Math.max(2, Math.floor(H / 40))), sy,
    niceTicks(xr[0], xr[1], Math.max(2, Math.floor(W / 80))), sx,
    trunc(mx.metricId, 50) + ' (' + goalText(mx) + ')', trunc(my.metricId, 50) + ' (' + goalText(my) + ')');
  var titles = g.querySelectorAll('text.title');
  if (titles[0]) sv('title', null, titles[0], mx.metricId + ' (' + goalText(mx) + ')');
  if (titles[1]) sv('title', null, titles[1], my.metricId + ' (' + goalText(my) + ')');

  /* the step line through the front of these two metrics: between two neighbours, the
   * corner both of them dominate (the boundary of what the front dominates) */
  var f2 = front(pts, [isMax(mx), isMax(my)]);
  f2.sort(function (a, b) { return a.v[0] - b.v[0] || a.v[1] - b.v[1]; });
  var step = '';
  f2.forEach(function (p, i) {
    var x = sx(p.v[0]).toFixed(1), y = sy(p.v[1]).toFixed(1);
    if (i === 0) { step = 'M' + x + ' ' + y; return; }
    var q = f2[i - 1];
    var cx = isMax(mx) ? Math.min(q.v[0], p.v[0]) : Math.max(q.v[0], p.v[0]);
    var cy = isMax(my) ? Math.min(q.v[1], p.v[1]) : Math.max(q.v[1], p.v[1]);
    step += 'L' + sx(cx).toFixed(1) + ' ' + sy(cy).toFixed(1) + 'L' + x + ' ' + y;
  });
  var dots = '', nFront = 0;
  pts.forEach(function (p) {
    if (!onFront.has(p.t.number)) dots += 'M' + sx(p.v[0]).toFixed(1) + ' ' + sy(p.v[1]).toFixed(1) + 'h0';
  });
  var dense = pts.length > 1000 ? ' dense' : '';
  sv('path', { d: dots || 'M0 0', 'class': 'dots pareto-dominated' + dense, visibility: dots ? null : 'hidden' }, svg);
  var line = sv('path', { d: step || 'M0 0', 'class': 'pareto-step', visibility: f2.length > 1 ? null : 'hidden' }, svg);
  line.setAttribute('data-trials', f2.map(function (p) { return p.t.number; }).sort(function (a, b) { return a - b; }).join(','));
  var fg = sv('g', { 'class': 'pareto-front' }, svg);
  pts.forEach(function (p) {
    if (!onFront.has(p.t.number)) return;
    nFront++;
    sv('circle', { cx: sx(p.v[0]).toFixed(1), cy: sy(p.v[1]).toFixed(1), r: 4.5, 'data-trial': String(p.t.number) }, fg);
  });
  var hl = sv('circle', { r: 7, 'class': 'hl-dot', visibility: 'hidden' }, svg);
  svg.setAttribute('data-study', S.name);
  svg.setAttribute('data-points', String(pts.length));
  svg.setAttribute('data-x', String(P.x));
  svg.setAttribute('data-y', String(P.y));
  svg.setAttribute('aria-label', 'Pareto front: ' + mx.metricId + ' against ' + my.metricId + ', ' +
    pts.length + ' trials, ' + nFront + ' on the front');
  setText($('pareto-line-key'), ms.length > 2 ? 'front of the two metrics shown' : 'the front');
  P.chart = { pts: pts, sx: sx, sy: sy, hl: hl, onFront: onFront };
  highlightPareto();
});

/* Outlines the trial hovered or open, in the chart and the table. */
function highlightPareto() {
  var n = S.hover != null ? S.hover : S.open;
  if (P.chart) {
    var hl = P.chart.hl, found = null;
    if (n != null) P.chart.pts.forEach(function (p) { if (p.t.number === n) found = p; });
    if (found) {
      hl.setAttribute('cx', P.chart.sx(found.v[0]).toFixed(1));
      hl.setAttribute('cy', P.chart.sy(found.v[1]).toFixed(1));
      hl.setAttribute('visibility', 'visible');
    } else hl.setAttribute('visibility', 'hidden');
  }
  P.rows.forEach(function (tr, k) {
    if (k === S.open) tr.setAttribute('aria-current', 'true'); else tr.removeAttribute('aria-current');
  });
}
RENDER.paretoHL = highlightPareto;

/* ---------------------------------------------------------------- the table */

function renderTable() {
  var ms = metricsOf();
  if (ms.length < 2 || !P.cols) return;
  var key = P.sort.key, desc = P.sort.desc, col = null;
  P.cols.forEach(function (c) {
    if (c.key === key) { col = c; c.th.setAttribute('aria-sort', desc ? 'descending' : 'ascending'); }
    else c.th.removeAttribute('aria-sort');
  });
  var list = frontNow.map(function (p) { return p.t; });
  list.sort(function (a, b) {
    var x = col ? cellValue(a, col) : a.number, y = col ? cellValue(b, col) : b.number;
    if (x == null && y == null) return a.number - b.number;
    if (x == null) return 1; /* missing values last either way */
    if (y == null) return -1;
    if (typeof x !== typeof y) { x = String(x); y = String(y); }
    var c = x < y ? -1 : x > y ? 1 : 0;
    if (desc) c = -c;
    return c || a.number - b.number;
  });
  var body = $('pareto-body');
  clear(body);
  P.rows = new Map();
  list.slice(0, MAX_ROWS).forEach(function (t) {
    var n = t.number;
    var tr = el('tr', { 'data-trial': String(n) }, body);
    P.cols.forEach(function (c) {
      var td = el('td', { 'class': (c.num ? 'num' : '') + (c.param ? ' param' : '') }, tr);
      if (c.key === 'number') {
        var b = el('button', { type: 'button', 'class': 'linklike', 'aria-label': 'open trial ' + n }, td, '#' + n);
        b.addEventListener('click', function (e) { e.stopPropagation(); navigate(S.name, n); });
        return;
      }
      var v = cellValue(t, c);
      var txt = c.metric != null ? (isNum(v) ? fmtNum(v) : '–') : (t.params && c.param in t.params ? fmtParam(v) : '');
      td.textContent = txt;
      if (c.param) td.setAttribute('title', txt);
    });
    tr.addEventListener('click', function () { navigate(S.name, n); });
    P.rows.set(n, tr);
  });
  $('pareto-table').setAttribute('data-rows', String(Math.min(list.length, MAX_ROWS)));
  $('pareto-more').hidden = list.length <= MAX_ROWS;
  setText($('pareto-more'), list.length > MAX_ROWS ? 'The first ' + MAX_ROWS + ' of ' + list.length + ' trials on the front.' : '');
  highlightPareto();
}
RENDER.paretoTable = renderTable;

/* ---------------------------------------------------------------- binding */

export function bindPareto() {
  var svg = $('pareto-chart'), tip = $('pareto-tip'), box = $('pareto-box');
  ['pareto-x', 'pareto-y'].forEach(function (id) {
    $(id).addEventListener('change', function (e) {
      var v = parseInt(e.target.value, 10), isX = id === 'pareto-x';
      if (!(v >= 0)) return;
      /* the same metric on both axes says nothing: the other axis takes the old one */
      if (isX) { if (v === P.y) P.y = P.x; P.x = v; } else { if (v === P.x) P.x = P.y; P.y = v; }
      $('pareto-x').value = String(P.x);
      $('pareto-y').value = String(P.y);
      invalidate('pareto');
    });
  });
  function pick(ev) {
    if (!P.chart || !P.chart.pts.length) return null;
    var r = svg.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    var bestD = 14 * 14, found = null;
    P.chart.pts.forEach(function (p) {
      var dx = P.chart.sx(p.v[0]) - x, dy = P.chart.sy(p.v[1]) - y, d = dx * dx + dy * dy;
      if (d < bestD) { bestD = d; found = p; }
    });
    return found ? { t: found.t, x: x, y: y } : null;
  }
  svg.addEventListener('mousemove', function (ev) {
    var p = pick(ev);
    setHover(p ? p.t.number : null);
    if (!p) { hideTip(tip); return; }
    var lines = ['trial ' + p.t.number + (P.chart.onFront.has(p.t.number) ? ' · on the Pareto front' : ' · dominated')];
    metricsOf().forEach(function (m, i) {
      var v = Array.isArray(p.t.values) ? p.t.values[i] : null;
      lines.push(trunc(m.metricId, 48) + arrow(m) + ' ' + (isNum(v) ? fmtNum(v) : '–'));
    });
    showTip(tip, box, p.x, p.y, lines);
  });
  svg.addEventListener('mouseleave', function () { setHover(null); hideTip(tip); });
  svg.addEventListener('click', function (ev) { var p = pick(ev); if (p) navigate(S.name, p.t.number); });
}
