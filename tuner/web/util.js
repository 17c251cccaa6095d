/* util.js — the dashboard's small tools: DOM and SVG element helpers, number, time and
 * duration formatting, axis ticks, the theme's colours (read from app.css, so the canvas
 * charts follow it), canvases sized to their box, tooltips and SVG axes.
 *
 * Imports nothing and keeps no state but the colours. Every string reaches the DOM here
 * through textContent or setAttribute (never innerHTML, never a style attribute): the
 * rule that keeps user strings inert (docs/dashboard-page.md, "Safety of user strings").
 */

var SVGNS = 'http://www.w3.org/2000/svg';

/* ------------------------------------------------------------------ the DOM */

export function $(id) { return document.getElementById(id); }

export function el(tag, attrs, parent, text) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) if (attrs[k] != null) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
export function sv(tag, attrs, parent, text) {
  var e = document.createElementNS(SVGNS, tag);
  if (attrs) for (var k in attrs) if (attrs[k] != null) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
export function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
export function setText(node, text) {
  text = text == null ? '' : String(text);
  if (node.textContent !== text) node.textContent = text;
}

/* ------------------------------------------------------------- formatting */

export function clamp(v, lo, hi) { return v < lo ? lo : v > hi ? hi : v; }
export function isNum(v) { return typeof v === 'number' && isFinite(v); }
export function trunc(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + '…' : s; }

export function fmtNum(v) {
  if (v == null || v === '') return '–';
  if (typeof v !== 'number') return String(v);
  if (!isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e9) return String(v);
  var a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3).replace(/\.?0+e/, 'e');
  return String(+v.toPrecision(5));
}
export function fmtParam(v) { return typeof v === 'number' ? fmtNum(v) : v == null ? '–' : String(v); }
export function fmtDur(s) {
  if (!isNum(s)) return '–';
  if (s < 0) s = 0;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + 's';
  var t = Math.round(s), h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), x = t % 60;
  function p2(n) { return (n < 10 ? '0' : '') + n; }
  return h ? h + 'h' + p2(m) + 'm' + p2(x) + 's' : m + 'm' + p2(x) + 's';
}
export function fmtTime(t, withDate) {
  if (!isNum(t)) return '–';
  var d = new Date(t * 1000);
  function p2(n) { return (n < 10 ? '0' : '') + n; }
  var time = p2(d.getHours()) + ':' + p2(d.getMinutes()) + ':' + p2(d.getSeconds());
  if (!withDate) return time;
  return d.getFullYear() + '-' + p2(d.getMonth() + 1) + '-' + p2(d.getDate()) + ' ' + time;
}
export function lower(s) { return String(s).toLowerCase(); }

/* Nice linear ticks over [lo, hi]. */
export function niceTicks(lo, hi, n) {
  if (!(hi > lo)) return [lo];
  var step0 = (hi - lo) / Math.max(1, n);
  var mag = Math.pow(10, Math.floor(Math.log10(step0)));
  var r = step0 / mag;
  var step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
  var out = [];
  for (var v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
    out.push(+v.toPrecision(12));
    if (out.length > 50) break;
  }
  return out;
}
export function niceCeil(v, lo) {
  var t = niceTicks(lo, v, 8);
  var step = t.length > 1 ? t[1] - t[0] : Math.abs(v) || 1;
  return Math.ceil(v / step - 1e-9) * step;
}

/* ---------------------------------------------------------------- colours */

/* Theme colours come from CSS custom properties, so canvas charts follow the CSS. */
export var C = {};
export function readColours() {
  var cs = getComputedStyle(document.documentElement);
  ['fg', 'muted', 'line', 'grid', 'card', 'c-pending', 'c-running', 'c-succeeded', 'c-failed',
    'c-stopped', 'c-cancelled', 'c-best', 'c-dot', 'c-curve', 'c-highlight', 'accent'
  ].forEach(function (k) { C[k] = cs.getPropertyValue('--' + k).trim() || '#888'; });
  C.ramp = (cs.getPropertyValue('--ramp').trim() || '#fcd47c #fe9f6d #de4968 #8c2981 #3b0f70').split(/\s+/);
}
function hexRgb(h) {
  h = h.replace('#', '');
  if (h.length === 3) h = h[0] + h[0] + h[1] + h[1] + h[2] + h[2];
  var n = parseInt(h, 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}
/* t in [0, 1]: 0 = worst, 1 = best. */
export function ramp(t) {
  var stops = C.ramp, k = stops.length - 1;
  var x = clamp(t, 0, 1) * k, i = Math.min(k - 1, Math.floor(x)), f = x - i;
  var a = hexRgb(stops[i]), b = hexRgb(stops[i + 1]);
  return 'rgb(' + Math.round(a[0] + (b[0] - a[0]) * f) + ',' + Math.round(a[1] + (b[1] - a[1]) * f) +
    ',' + Math.round(a[2] + (b[2] - a[2]) * f) + ')';
}

/* ------------------------------------------------------- drawing helpers */

/* A canvas sized to its box at the device's pixel ratio; returns its CSS size. */
export function fitCanvas(cv) {
  var r = cv.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
  var w = Math.max(1, Math.round(r.width)), h = Math.max(1, Math.round(r.height));
  if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
    cv.width = Math.round(w * dpr);
    cv.height = Math.round(h * dpr);
  }
  var ctx = cv.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  return { w: w, h: h, ctx: ctx, visible: r.width > 0 && r.height > 0 };
}
export function boxSize(node) {
  var r = node.getBoundingClientRect();
  return { w: Math.round(r.width), h: Math.round(r.height), visible: r.width > 0 && r.height > 0 };
}

export function showTip(tip, box, x, y, lines) {
  tip.textContent = lines.join('\n');
  tip.hidden = false;
  var bw = box.clientWidth, tw = tip.offsetWidth, th = tip.offsetHeight;
  var left = x + 12, top = y - th - 8;
  if (left + tw > bw) left = Math.max(0, x - tw - 12);
  if (top < 0) top = y + 14;
  tip.style.left = left + 'px';
  tip.style.top = top + 'px';
}
export function hideTip(tip) { tip.hidden = true; }

/* Axes with gridlines in an SVG; y ticks with sy(), x ticks with sx(). */
export function drawAxes(svg, m, W, H, yTicks, sy, xTicks, sx, xTitle, yTitle, xFmt) {
  var g = sv('g', { 'class': 'axis' }, svg);
  yTicks.forEach(function (v) {
    var y = sy(v).toFixed(1);
    sv('line', { x1: m.l, x2: m.l + W, y1: y, y2: y, 'class': 'gridline' }, g);
    sv('text', { x: m.l - 6, y: y, 'text-anchor': 'end', 'dominant-baseline': 'middle' }, g, fmtNum(v));
  });
  xTicks.forEach(function (v) {
    var x = sx(v).toFixed(1);
    sv('line', { x1: x, x2: x, y1: m.t + H, y2: m.t + H + 4 }, g);
    sv('text', { x: x, y: m.t + H + 16, 'text-anchor': 'middle' }, g, xFmt ? xFmt(v) : fmtNum(v));
  });
  sv('path', { d: 'M' + m.l + ' ' + m.t + 'V' + (m.t + H) + 'H' + (m.l + W) }, g);
  if (xTitle) sv('text', { x: m.l + W, y: m.t + H + 28, 'text-anchor': 'end', 'class': 'title' }, g, xTitle);
  if (yTitle) sv('text', { x: m.l - 6, y: m.t - 9, 'class': 'title' }, g, trunc(yTitle, 60));
  return g;
}
