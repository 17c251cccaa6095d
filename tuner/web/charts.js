/* charts.js — the study's three charts: the objective by trial with the best-so-far
 * step line (SVG), the learning curves (two canvases under SVG axes) and the parallel
 * coordinates of the parameters against the objective (the same), with their hover,
 * tooltips and click-to-open.
 *
 * Each registers its redraws in RENDER (model.js): a full one, cost-limited, and for
 * the canvas charts a cheap live one that adds what finished and redraws what runs.
 * The trial under the pointer (S.hover) or open (S.open) is outlined in all three.
 * What they show is in docs/dashboard-page.md; how they stay fast with 10,000 trials
 * in its "10,000 trials".
 */
import {
  $, sv, clear, setText, clamp, isNum, trunc, fmtNum, fmtParam, niceTicks, niceCeil, C, ramp,
  fitCanvas, boxSize, showTip, hideTip, drawAxes
} from './util.js';
import { S, RENDER, invalidate, costLimited, maxTrials, isLive, navigate } from './model.js';

/* The hover of all three charts. */
export function bindCharts() {
  bindBestHover();
  bindCurvesHover();
  bindPcHover();
}

/* -------------------------------------------------------- best-so-far chart */

var bestState = null; /* scales and the finished trials, for hovering */
RENDER.best = costLimited('best', function () {
  var svg = $('best-chart'), size = boxSize(svg);
  if (!size.visible || !S.study) return;
  clear(svg);
  var goalMax = S.study.goal !== 'MINIMIZE';
  var pts = [];
  var maxN = 1, lo = Infinity, hi = -Infinity;
  S.trials.forEach(function (t) {
    if (t.number > maxN) maxN = t.number;
    if ((t.state === 'SUCCEEDED' || t.state === 'STOPPED') && isNum(t.value)) {
      pts.push(t);
      if (t.value < lo) lo = t.value;
      if (t.value > hi) hi = t.value;
    }
  });
  pts.sort(function (a, b) { return a.number - b.number; });
  var mt = maxTrials();
  if (mt > maxN) maxN = mt;
  var m = { l: 56, r: 12, t: 22, b: 30 }, W = size.w - m.l - m.r, H = size.h - m.t - m.b;
  if (!pts.length) { lo = 0; hi = 1; }
  if (lo === hi) { var d = Math.abs(lo) * 0.05 || 1; lo -= d; hi += d; }
  var pad = (hi - lo) * 0.06; lo -= pad; hi += pad;
  var x0 = 0.5, x1 = maxN + 0.5;
  function sx(n) { return m.l + (n - x0) / (x1 - x0) * W; }
  function sy(v) { return m.t + (1 - (v - lo) / (hi - lo)) * H; }
  drawAxes(svg, m, W, H, niceTicks(lo, hi, Math.max(2, Math.floor(H / 40))), sy,
    niceTicks(1, maxN, Math.max(2, Math.floor(W / 70))).filter(function (n) { return Number.isInteger(n) && n >= 1; }), sx,
    'trial', S.metric + (goalMax ? ' (higher is better)' : ' (lower is better)'));
  var dots = '', stopped = '', step = '', best = null, nDots = 0;
  pts.forEach(function (t) {
    var p = 'M' + sx(t.number).toFixed(1) + ' ' + sy(t.value).toFixed(1) + 'h0';
    if (t.state === 'STOPPED') stopped += p; else dots += p;
    nDots++;
    if (t.state !== 'SUCCEEDED') return;
    if (best === null || (goalMax ? t.value > best : t.value < best)) {
      var y = sy(t.value).toFixed(1);
      step += best === null ? 'M' + sx(t.number).toFixed(1) + ' ' + y : 'H' + sx(t.number).toFixed(1) + 'V' + y;
      best = t.value;
    }
  });
  if (best !== null) step += 'H' + sx(x1).toFixed(1);
  var dense = nDots > 1000 ? ' dense' : '';
  sv('path', { d: stopped || 'M0 0', 'class': 'dots-stopped' + dense, visibility: stopped ? null : 'hidden' }, svg);
  sv('path', { d: dots || 'M0 0', 'class': 'dots' + dense, visibility: dots ? null : 'hidden' }, svg);
  sv('path', { d: step || 'M0 0', 'class': 'step', visibility: step ? null : 'hidden' }, svg);
  var hl = sv('circle', { r: 6, 'class': 'hl-dot', visibility: 'hidden' }, svg);
  svg.setAttribute('data-dots', String(nDots));
  svg.setAttribute('data-best', best === null ? '' : String(best));
  setText($('best-sub'), nDots ? nDots + ' with a value' : 'no finished trial yet');
  bestState = { pts: pts, sx: sx, sy: sy, hl: hl };
  highlightBest();
});
export function highlightBest() {
  if (!bestState) return;
  var n = S.hover != null ? S.hover : S.open, hl = bestState.hl;
  var t = n != null ? S.trials.get(n) : null;
  if (t && isNum(t.value) && (t.state === 'SUCCEEDED' || t.state === 'STOPPED')) {
    hl.setAttribute('cx', bestState.sx(t.number).toFixed(1));
    hl.setAttribute('cy', bestState.sy(t.value).toFixed(1));
    hl.setAttribute('visibility', 'visible');
  } else hl.setAttribute('visibility', 'hidden');
}



function bindBestHover() {
  var svg = $('best-chart'), tip = $('best-tip'), box = $('best-chart-box');
  function pick(ev) {
    if (!bestState || !bestState.pts.length) return null;
    var r = svg.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    var bestD = 14 * 14, found = null;
    bestState.pts.forEach(function (t) {
      var dx = bestState.sx(t.number) - x, dy = bestState.sy(t.value) - y, d = dx * dx + dy * dy;
      if (d < bestD) { bestD = d; found = t; }
    });
    return found ? { t: found, x: x, y: y } : null;
  }
  svg.addEventListener('mousemove', function (ev) {
    var p = pick(ev);
    setHover(p ? p.t.number : null);
    if (p) showTip(tip, box, p.x, p.y, ['trial ' + p.t.number + ' · ' + p.t.state, S.metric + ' ' + fmtNum(p.t.value)]);
    else hideTip(tip);
  });
  svg.addEventListener('mouseleave', function () { setHover(null); hideTip(tip); });
  svg.addEventListener('click', function (ev) { var p = pick(ev); if (p) navigate(S.name, p.t.number); });
}

/* The trial under the pointer in a chart (or none): outlined in every chart. */
export function setHover(n) {
  if (S.hover === n) return;
  S.hover = n;
  highlightBest();
  invalidate('curvesHL', 'pcHL', 'paretoHL');
}

/* ------------------------------------------------------------ curves chart */

/* Two canvases: the base layer holds finished curves (many, drawn rarely), the
 * live layer on top the running ones (few, redrawn whenever they grow). A trial
 * that finishes is drawn onto the base layer by itself; the base layer is redrawn
 * in full only when the scales change (a point outside them) or on resize. */

/* Lines at most one device pixel wide are rasterised by a much faster path (10x in
 * Chromium's software canvas), which matters with thousands of them. */
function hairline(n) { return n > 500 ? 1 / (window.devicePixelRatio || 1) : 1; }

var CURVE_GROUPS = ['STOPPED', 'CANCELLED', 'FAILED', 'SUCCEEDED'];
function curveGroup(state) { return CURVE_GROUPS.indexOf(state) >= 0 ? state : 'SUCCEEDED'; }
var cv = null;          /* scales of the last full drawing */
var curvesAdd = [];     /* finished curves with points not yet on the base layer */
/* A finished curve, or one with new points, to be drawn onto the base layer at the
 * next 'curvesLive' redraw. */
export function curveToBase(c) { curvesAdd.push(c); }
function curveStyle(group, n) {
  var base = clamp(5 / Math.sqrt(Math.max(1, n)), 0.03, 0.85);
  switch (group) {
    case 'STOPPED': return { c: C['c-stopped'], a: base * 0.5, w: hairline(n) };
    case 'CANCELLED': return { c: C['c-cancelled'], a: base * 0.5, w: hairline(n) };
    case 'FAILED': return { c: C['c-failed'], a: base * 0.6, w: hairline(n) };
    case 'RUNNING': return { c: C['c-running'], a: 0.9, w: 1.6 };
    default: return { c: C['c-curve'], a: base, w: n > 200 ? hairline(n) : 1.4 };
  }
}
/* Points from index `from`; at most about one point per pixel column. */
function tracePath(ctx, c, sx, sy, pxWidth, from) {
  var k = c.steps.length;
  from = from || 0;
  if (from >= k) return;
  var stride = Math.max(1, Math.floor((k - from) / Math.max(1, pxWidth)));
  var x0 = sx(c.steps[from]), y0 = sy(c.vals[from]);
  if (k === 1) { ctx.moveTo(x0 + 1.5, y0); ctx.arc(x0, y0, 1.5, 0, 2 * Math.PI); return; } /* a lone point */
  ctx.moveTo(x0, y0);
  if (from === k - 1) return;
  for (var i = from + stride; i < k; i += stride) ctx.lineTo(sx(c.steps[i]), sy(c.vals[i]));
  if ((k - 1 - from) % stride) ctx.lineTo(sx(c.steps[k - 1]), sy(c.vals[k - 1]));
}
/* Strokes many curves in chunks: one huge path is slow to rasterise. */
function strokeCurves(ctx, list, style, fromOf) {
  if (!list.length) return;
  ctx.globalAlpha = style.a;
  ctx.strokeStyle = style.c;
  ctx.lineWidth = style.w;
  for (var i = 0; i < list.length; i += 256) {
    ctx.beginPath();
    for (var j = i; j < Math.min(list.length, i + 256); j++) {
      tracePath(ctx, list[j], cv.sx, cv.sy, cv.W, fromOf ? fromOf(list[j]) : 0);
    }
    ctx.stroke();
  }
}
function clipPlot(ctx) {
  ctx.save();
  ctx.beginPath();
  ctx.rect(cv.m.l, cv.m.t, cv.W, cv.H);
  ctx.clip();
  ctx.lineJoin = 'round';
}
function inScale(c, from) {
  for (var i = Math.max(0, from); i < c.steps.length; i++) {
    var s = c.steps[i], v = c.vals[i];
    if (s < cv.xMin || s > cv.xMax || v < cv.yMin || v > cv.yMax) return false;
  }
  return true;
}
function curveStats() {
  var n = 0, pts = 0;
  S.curves.forEach(function (c) { if (c.steps.length) { n++; pts += c.steps.length; } });
  var canvas = $('curves-canvas');
  canvas.setAttribute('data-curves', String(n));
  canvas.setAttribute('data-points', String(pts));
  setText($('curves-sub'), n ? n + ' trials, ' + pts + ' points' : 'no measurements yet');
  return n;
}

RENDER.curves = costLimited('curves', function () {
  var canvas = $('curves-canvas'), svg = $('curves-axes');
  var f = fitCanvas(canvas);
  curvesAdd = [];
  if (!f.visible) { cv = null; return; }
  clear(svg);
  var xMin = Infinity, xMax = -Infinity, yMin = Infinity, yMax = -Infinity;
  S.curves.forEach(function (c) {
    var k = c.steps.length;
    c.drawn = 0;
    if (!k) return;
    if (c.steps[0] < xMin) xMin = c.steps[0];
    if (c.steps[k - 1] > xMax) xMax = c.steps[k - 1];
    for (var i = 0; i < k; i++) { var v = c.vals[i]; if (v < yMin) yMin = v; if (v > yMax) yMax = v; }
  });
  var n = curveStats();
  var m = { l: 56, r: 12, t: 22, b: 30 }, W = f.w - m.l - m.r, H = f.h - m.t - m.b;
  if (!n) { xMin = 0; xMax = 1; yMin = 0; yMax = 1; }
  if (xMin > 0 && xMin <= (xMax - xMin)) xMin = 0;
  if (xMax <= xMin) xMax = xMin + 1;
  /* headroom, so the next measurements of running trials mostly land inside */
  xMax = niceCeil(xMin + (xMax - xMin) * 1.1, xMin);
  if (yMin === yMax) { var d = Math.abs(yMin) * 0.05 || 1; yMin -= d; yMax += d; }
  var pad = (yMax - yMin) * 0.08; yMin -= pad; yMax += pad;
  var sx = function (s) { return m.l + (s - xMin) / (xMax - xMin) * W; };
  var sy = function (v) { return m.t + (1 - (v - yMin) / (yMax - yMin)) * H; };
  cv = { xMin: xMin, xMax: xMax, yMin: yMin, yMax: yMax, sx: sx, sy: sy, m: m, W: W, H: H, n: n };
  drawAxes(svg, m, W, H, niceTicks(yMin, yMax, Math.max(2, Math.floor(H / 40))), sy,
    niceTicks(xMin, xMax, Math.max(2, Math.floor(W / 70))), sx, 'step', S.metric);
  cv.hl = sv('path', { 'class': 'hl-line', d: 'M0 0', visibility: 'hidden' }, svg);
  var ctx = f.ctx, groups = {};
  CURVE_GROUPS.forEach(function (g) { groups[g] = []; });
  S.curves.forEach(function (c) {
    if (c.steps.length && !isLive(c.state)) groups[curveGroup(c.state)].push(c);
  });
  clipPlot(ctx);
  CURVE_GROUPS.forEach(function (g) {
    strokeCurves(ctx, groups[g], curveStyle(g, n));
    groups[g].forEach(function (c) { c.drawn = c.steps.length; });
  });
  ctx.restore();
  drawLiveCurves();
  highlightCurve();
});

/* Every frame with news: finished curves (or their new points) onto the base
 * layer, the live layer redrawn; a point outside the scales means a full redraw. */
RENDER.curvesLive = function () {
  if (!cv) { invalidate('curves'); return; }
  var add = curvesAdd;
  curvesAdd = [];
  var ok = add.every(function (c) { return inScale(c, c.drawn - 1); });
  if (ok) S.curves.forEach(function (c) { if (ok && isLive(c.state) && c.steps.length && !inScale(c, 0)) ok = false; });
  if (!ok) { invalidate('curves'); return; }
  if (add.length) {
    var ctx = $('curves-canvas').getContext('2d');
    clipPlot(ctx);
    var n = curveStats();
    add.forEach(function (c) {
      if (c.drawn >= c.steps.length || isLive(c.state)) return;
      strokeCurves(ctx, [c], curveStyle(curveGroup(c.state), n), function (x) { return Math.max(0, x.drawn - 1); });
      c.drawn = c.steps.length;
    });
    ctx.restore();
  }
  drawLiveCurves();
  highlightCurve();
};
function drawLiveCurves() {
  var f = fitCanvas($('curves-live'));
  if (!cv || !f.visible) return;
  var live = [];
  S.curves.forEach(function (c) { if (isLive(c.state) && c.steps.length) live.push(c); });
  clipPlot(f.ctx);
  strokeCurves(f.ctx, live, curveStyle('RUNNING', live.length));
  f.ctx.restore();
  curveStats();
}

function highlightCurve() {
  if (!cv || !cv.hl) return;
  var n = S.hover != null ? S.hover : S.open, c = n != null ? S.curves.get(n) : null;
  if (!c || !c.steps.length) { cv.hl.setAttribute('visibility', 'hidden'); return; }
  var d = '', k = c.steps.length, stride = Math.max(1, Math.floor(k / Math.max(1, cv.W)));
  for (var i = 0; i < k; i += stride) {
    d += (i ? 'L' : 'M') + cv.sx(c.steps[i]).toFixed(1) + ' ' + cv.sy(c.vals[i]).toFixed(1);
  }
  d += 'L' + cv.sx(c.steps[k - 1]).toFixed(1) + ' ' + cv.sy(c.vals[k - 1]).toFixed(1);
  cv.hl.setAttribute('d', d);
  cv.hl.setAttribute('visibility', 'visible');
}
RENDER.curvesHL = function () { highlightCurve(); highlightPc(); };

function bindCurvesHover() {
  var canvas = $('curves-live'), tip = $('curves-tip'), box = $('curves-box');
  function pick(ev) {
    if (!cv) return null;
    var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    var step = cv.xMin + (x - cv.m.l) / cv.W * (cv.xMax - cv.xMin);
    var bestD = 10 * 10, found = null, fi = 0;
    S.curves.forEach(function (c) {
      var k = c.steps.length;
      if (!k) return;
      var lo = 0, hi = k - 1;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (c.steps[mid] < step) lo = mid + 1; else hi = mid; }
      for (var i = Math.max(0, lo - 1); i <= Math.min(k - 1, lo + 1); i++) {
        var dx = cv.sx(c.steps[i]) - x, dy = cv.sy(c.vals[i]) - y, d = dx * dx + dy * dy;
        if (d < bestD) { bestD = d; found = c; fi = i; }
      }
      /* between two points: distance to the segment's height at x */
      if (lo > 0 && lo < k) {
        var x0 = cv.sx(c.steps[lo - 1]), x1 = cv.sx(c.steps[lo]);
        if (x1 > x0 && x >= x0 && x <= x1) {
          var yy = cv.sy(c.vals[lo - 1]) + (cv.sy(c.vals[lo]) - cv.sy(c.vals[lo - 1])) * (x - x0) / (x1 - x0);
          var dd = (yy - y) * (yy - y);
          if (dd < bestD) { bestD = dd; found = c; fi = x - x0 < x1 - x ? lo - 1 : lo; }
        }
      }
    });
    return found ? { c: found, i: fi, x: x, y: y } : null;
  }
  var pending = null;
  canvas.addEventListener('mousemove', function (ev) {
    if (pending) { pending = ev; return; }
    pending = ev;
    requestAnimationFrame(function () {
      var e = pending;
      pending = null;
      var p = pick(e);
      setHover(p ? p.c.trial : null);
      if (p) {
        showTip(tip, box, p.x, p.y, ['trial ' + p.c.trial + ' · ' + p.c.state,
          'step ' + fmtNum(p.c.steps[p.i]) + ': ' + S.metric + ' ' + fmtNum(p.c.vals[p.i])]);
      } else hideTip(tip);
    });
  });
  canvas.addEventListener('mouseleave', function () { pending = null; setHover(null); hideTip(tip); });
  canvas.addEventListener('click', function (ev) { var p = pick(ev); if (p) navigate(S.name, p.c.trial); });
}

/* ------------------------------------------------- parallel coordinates */

/* An axis maps a value to u in [0, 1] (1 at the top) as the search space does
 * (docs/search.md): log and reverse-log scales for numbers, equal shares for
 * categories and discrete values. */
function makeAxis(p) {
  var a = { name: p.name, type: p.type, scale: p.scale || 'NONE' };
  if (p.type === 'CATEGORICAL' || p.type === 'DISCRETE') {
    a.kind = 'cat';
    var vals = (p.values || []).slice();
    if (p.type === 'DISCRETE') vals.sort(function (x, y) { return x - y; });
    a.cats = vals.map(function (v) { return p.type === 'DISCRETE' ? fmtNum(v) : String(v); });
    a.raw = vals;
    a.index = new Map();
    vals.forEach(function (v, i) { a.index.set(p.type === 'DISCRETE' ? Number(v) : String(v), i); });
  } else {
    a.kind = 'num';
    a.lo = isNum(p.min) ? p.min : null;
    a.hi = isNum(p.max) ? p.max : null;
    if ((a.scale === 'UNIT_LOG_SCALE' || a.scale === 'UNIT_REVERSE_LOG_SCALE') && !(a.lo > 0)) a.scale = 'UNIT_LINEAR_SCALE';
  }
  return a;
}
function axisU(a, v) {
  if (a.kind === 'cat') {
    var i;
    if (a.type === 'DISCRETE') {
      i = a.index.get(Number(v));
      if (i == null && isNum(v)) {
        var bd = Infinity;
        a.raw.forEach(function (x, j) { var d = Math.abs(x - v); if (d < bd) { bd = d; i = j; } });
      }
    } else {
      i = a.index.get(String(v));
      if (i == null && v != null) { /* a value outside the spec (a warm start): its own tick */
        i = a.cats.length; a.cats.push(String(v)); a.index.set(String(v), i); a.grew = true;
      }
    }
    if (i == null) return NaN;
    return (i + 0.5) / a.cats.length;
  }
  if (!isNum(v)) return NaN;
  var lo = a.lo, hi = a.hi;
  if (!(hi > lo)) return 0.5;
  v = clamp(v, lo, hi);
  if (a.scale === 'UNIT_LOG_SCALE') return (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo));
  if (a.scale === 'UNIT_REVERSE_LOG_SCALE') {
    var w = clamp((hi - v) + lo, lo, hi);
    return 1 - (Math.log(w) - Math.log(lo)) / (Math.log(hi) - Math.log(lo));
  }
  return (v - lo) / (hi - lo);
}
/* Tick values for a numeric axis, spaced at least minGap apart in u. */
function axisTicks(a, minGap) {
  var lo = a.lo, hi = a.hi;
  if (!(hi > lo)) return isNum(lo) ? [lo] : [];
  var ends = a.ends || [lo, hi];
  var cand = ends.concat(niceTicks(lo, hi, 6));
  if (a.scale === 'UNIT_LOG_SCALE' || a.scale === 'UNIT_REVERSE_LOG_SCALE') {
    var logs = [];
    for (var e = Math.floor(Math.log10(lo)) - 1; e <= Math.ceil(Math.log10(hi)) + 1; e++) {
      [1, 2, 5].forEach(function (f) { logs.push(+(f * Math.pow(10, e)).toPrecision(6)); });
    }
    if (a.scale === 'UNIT_LOG_SCALE') cand = [lo, hi].concat(logs.filter(function (x) { return x === 1 || x % 10 === 0 || Math.log10(x) % 1 === 0; }), logs);
    else cand = [lo, hi].concat(logs.map(function (x) { return +((hi - x) + lo).toPrecision(6); }), niceTicks(lo, hi, 6));
  }
  var out = [];
  cand.forEach(function (v) {
    if (!isNum(v) || v < lo || v > hi) return;
    var u = axisU(a, v);
    if (out.every(function (o) { return Math.abs(o.u - u) >= minGap; })) out.push({ v: v, u: u });
  });
  return out;
}

function pcAxes() {
  var st = S.study, params = (st && st.params) || [];
  if (!params.length) {
    /* no parameter list: infer from the trials */
    var names = new Map();
    S.trials.forEach(function (t) {
      for (var k in (t.params || {})) if (!names.has(k)) names.set(k, typeof t.params[k] === 'number' ? 'DOUBLE' : 'CATEGORICAL');
    });
    params = [];
    names.forEach(function (type, name) { params.push({ name: name, type: type, values: [] }); });
  }
  var axes = params.map(makeAxis);
  axes.forEach(function (a) {
    if (a.kind !== 'num' || (a.lo != null && a.hi != null)) return;
    var lo = Infinity, hi = -Infinity;
    S.trials.forEach(function (t) { var v = t.params && t.params[a.name]; if (isNum(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    if (a.lo == null) a.lo = isFinite(lo) ? lo : 0;
    if (a.hi == null) a.hi = isFinite(hi) ? hi : 1;
  });
  return axes;
}

/* Like the curves: finished trials on the base canvas (redrawn in full only when
 * an axis changes: a new extreme of the objective, a category not in the spec),
 * running ones dashed on the live canvas above. */
var pc = null;
var pcAdd = []; /* trials that finished since the last frame */
export function pcTrialChanged(old, t) {
  if (old && !isLive(old.state)) { invalidate('pc'); return; } /* a finished trial changed */
  if (!isLive(t.state)) pcAdd.push(t.number);
  invalidate('pcLive');
}
function pcRow(t) {
  var A = pc.A, row = new Float32Array(A);
  for (var i = 0; i < A; i++) {
    var a = pc.axes[i];
    var u = a.objective ? (isNum(t.value) ? axisU(a, t.value) : NaN) : axisU(a, t.params ? t.params[a.name] : null);
    row[i] = isNaN(u) ? NaN : pc.yOf(u);
  }
  return row;
}
function pcBucket(v) {
  var q = (v - pc.obj.lo) / (pc.obj.hi - pc.obj.lo);
  if (!pc.goalMax) q = 1 - q;
  return Math.min(pc.BUCKETS - 1, Math.floor(clamp(q, 0, 1) * pc.BUCKETS));
}
function pcStroke(ctx, rows, colour, alpha, dash, width) {
  if (!rows.length) return;
  var A = pc.A, xs = pc.xs;
  ctx.setLineDash(dash || []);
  ctx.globalAlpha = alpha;
  ctx.strokeStyle = colour;
  ctx.lineWidth = width || hairline(pc.N);
  for (var c = 0; c < rows.length; c += 1024) {
    ctx.beginPath();
    for (var j = c; j < Math.min(rows.length, c + 1024); j++) {
      var row = rows[j], pen = false;
      for (var i = 0; i < A; i++) {
        var y = row[i];
        if (isNaN(y)) { pen = false; continue; }
        if (pen) ctx.lineTo(xs[i], y); else ctx.moveTo(xs[i], y);
        pen = true;
      }
    }
    ctx.stroke();
  }
  ctx.setLineDash([]);
  ctx.globalAlpha = 1;
}
/* fainter as trials get many, so dense regions read as dense; better ones bolder */
function pcAlpha(N, bucket) {
  var a = clamp(8 / Math.sqrt(Math.max(1, N)), 0.03, 0.85);
  return bucket == null ? a * 0.6 : Math.min(1, a * (0.5 + bucket / pc.BUCKETS));
}
/* finished trials onto the base canvas: no objective first (grey), then by
 * objective, worst first, so the best lie on top */
function pcDrawFinished(ctx, numbers) {
  var grey = [], buckets = [];
  for (var b = 0; b < pc.BUCKETS; b++) buckets.push([]);
  numbers.forEach(function (n) {
    var t = S.trials.get(n), row = pc.rows.get(n);
    if (!t || !row) return;
    if (isNum(t.value)) buckets[pcBucket(t.value)].push(row); else grey.push(row);
  });
  pcStroke(ctx, grey, C['c-pending'], pcAlpha(pc.N));
  buckets.forEach(function (rows, bi) { pcStroke(ctx, rows, ramp((bi + 0.5) / pc.BUCKETS), pcAlpha(pc.N, bi)); });
}

RENDER.pc = costLimited('pc', function () {
  var canvas = $('pc-canvas'), svg = $('pc-axes');
  var f = fitCanvas(canvas);
  pcAdd = [];
  if (!f.visible || !S.study) { pc = null; return; }
  clear(svg);
  var goalMax = S.study.goal !== 'MINIMIZE';
  var axes = pcAxes();
  var vlo = Infinity, vhi = -Infinity;
  S.trials.forEach(function (t) {
    if (isNum(t.value)) { if (t.value < vlo) vlo = t.value; if (t.value > vhi) vhi = t.value; }
  });
  var noValues = !isFinite(vlo);
  if (noValues) { vlo = 0; vhi = 1; }
  if (!(vhi > vlo)) { var d = Math.abs(vlo) * 0.05 || 1; vlo -= d; vhi += d; }
  var vpad = (vhi - vlo) * 0.04;
  var obj = { name: S.metric, kind: 'num', type: 'OBJECTIVE', scale: 'NONE', lo: vlo - vpad, hi: vhi + vpad, objective: true, ends: [vlo, vhi] };
  axes.push(obj);
  var A = axes.length;
  var m = { l: 60, r: 70, t: 30, b: 14 }, W = f.w - m.l - m.r, H = f.h - m.t - m.b;
  var xs = axes.map(function (a, i) { return m.l + (A === 1 ? W / 2 : i * W / (A - 1)); });
  pc = {
    noValues: noValues, axes: axes, A: A, xs: xs, m: m, H: H, obj: obj, goalMax: goalMax, BUCKETS: 16, N: S.trials.size,
    yOf: function (u) { return m.t + (1 - u) * H; }, rows: new Map()
  };
  /* categories outside the spec get their own ticks: find them all first */
  S.trials.forEach(function (t) {
    axes.forEach(function (a) { if (a.kind === 'cat' && !a.objective && t.params) axisU(a, t.params[a.name]); });
  });
  axes.forEach(function (a) { a.grew = false; });
  var finished = [];
  S.trials.forEach(function (t) {
    pc.rows.set(t.number, pcRow(t));
    if (!isLive(t.state)) finished.push(t.number);
  });
  pcDrawFinished(f.ctx, finished);
  canvas.setAttribute('data-lines', String(pc.rows.size));
  setText($('pc-sub'), pc.rows.size ? pc.rows.size + ' trials, coloured by ' + S.metric + ' (scale on its axis)' : 'no trials yet');

  /* axes in SVG: names and ticks are text nodes */
  var defs = sv('defs', null, svg);
  var grad = sv('linearGradient', { id: 'pc-grad', x1: 0, y1: goalMax ? 1 : 0, x2: 0, y2: goalMax ? 0 : 1 }, defs);
  C.ramp.forEach(function (c, i) { sv('stop', { offset: (i / (C.ramp.length - 1)).toFixed(2), 'stop-color': c }, grad); });
  axes.forEach(function (a, i) {
    var g = sv('g', { 'class': 'axis', 'data-axis': a.name, 'data-scale': a.objective ? 'objective' : a.kind === 'cat' ? 'categorical' : a.scale }, svg);
    var x = xs[i];
    if (a.objective) sv('rect', { x: x - 3, y: m.t, width: 6, height: H, fill: 'url(#pc-grad)' }, g);
    sv('line', { x1: x, x2: x, y1: m.t, y2: m.t + H }, g);
    var anchor = i === 0 ? 'start' : i === A - 1 ? 'end' : 'middle';
    var label = a.objective ? a.name + (goalMax ? ' ↑' : ' ↓') : a.name;
    var tt = sv('text', { x: x, y: m.t - 16, 'text-anchor': anchor, 'class': 'title' }, g, trunc(label, 22));
    sv('title', null, tt, a.objective ? a.name + (goalMax ? ' (higher is better)' : ' (lower is better)') : a.name);
    var scaleNote = a.kind === 'cat' ? (a.type === 'DISCRETE' ? 'discrete' : 'categorical') :
      a.scale === 'UNIT_LOG_SCALE' ? 'log' : a.scale === 'UNIT_REVERSE_LOG_SCALE' ? 'reverse log' : a.objective ? 'objective' : 'linear';
    sv('text', { x: x, y: m.t - 4, 'text-anchor': anchor }, g, scaleNote);
    var anchorEnd = i === A - 1 ? 'start' : 'end', dx = i === A - 1 ? 8 : -5;
    if (a.kind === 'cat') {
      var every = Math.max(1, Math.ceil(a.cats.length * 14 / Math.max(1, H)));
      a.cats.forEach(function (c, ci) {
        if (ci % every) return;
        var y = pc.yOf((ci + 0.5) / a.cats.length);
        sv('line', { x1: x - 3, x2: x + 3, y1: y, y2: y }, g);
        var te = sv('text', { x: x + dx, y: y, 'text-anchor': anchorEnd, 'dominant-baseline': 'middle' }, g, trunc(c, 14));
        sv('title', null, te, c);
      });
    } else {
      axisTicks(a, 16 / Math.max(1, H)).forEach(function (tk) {
        var y = pc.yOf(tk.u);
        sv('line', { x1: x - 3, x2: x + 3, y1: y, y2: y }, g);
        sv('text', { x: x + dx, y: y, 'text-anchor': anchorEnd, 'dominant-baseline': 'middle' }, g, fmtNum(tk.v));
      });
    }
  });
  pc.hl = sv('path', { 'class': 'hl-line', d: 'M0 0', visibility: 'hidden' }, svg);
  drawPcLive();
  highlightPc();
});

RENDER.pcLive = function () {
  if (!pc) { invalidate('pc'); return; }
  var add = pcAdd;
  pcAdd = [];
  var full = false;
  add.forEach(function (n) {
    var t = S.trials.get(n);
    if (t && isNum(t.value) && (pc.noValues || t.value < pc.obj.lo || t.value > pc.obj.hi)) full = true;
  });
  if (!full) S.trials.forEach(function (t) { if (isLive(t.state) || !pc.rows.has(t.number)) pc.rows.set(t.number, pcRow(t)); });
  add.forEach(function (n) { var t = S.trials.get(n); if (t) pc.rows.set(n, pcRow(t)); });
  if (full || pc.axes.some(function (a) { return a.grew; })) { invalidate('pc'); return; }
  pc.N = pc.rows.size;
  if (add.length) pcDrawFinished($('pc-canvas').getContext('2d'), add);
  $('pc-canvas').setAttribute('data-lines', String(pc.rows.size));
  setText($('pc-sub'), pc.rows.size + ' trials, coloured by ' + S.metric + ' (scale on its axis)');
  drawPcLive();
  highlightPc();
};
function drawPcLive() {
  var f = fitCanvas($('pc-live'));
  if (!pc || !f.visible) return;
  var rows = [];
  S.trials.forEach(function (t) { if (isLive(t.state) && pc.rows.has(t.number)) rows.push(pc.rows.get(t.number)); });
  pcStroke(f.ctx, rows, C['c-running'], 0.8, [5, 4], 1.4);
}

function highlightPc() {
  if (!pc || !pc.hl) return;
  var n = S.hover != null ? S.hover : S.open, row = n != null ? pc.rows.get(n) : null;
  if (!row) { pc.hl.setAttribute('visibility', 'hidden'); return; }
  var d = '', pen = false;
  for (var i = 0; i < pc.A; i++) {
    var y = row[i];
    if (isNaN(y)) { pen = false; continue; }
    d += (pen ? 'L' : 'M') + pc.xs[i].toFixed(1) + ' ' + y.toFixed(1);
    pen = true;
  }
  pc.hl.setAttribute('d', d || 'M0 0');
  pc.hl.setAttribute('visibility', d ? 'visible' : 'hidden');
}
RENDER.pcHL = highlightPc;

function bindPcHover() {
  var canvas = $('pc-live'), tip = $('pc-tip'), box = $('pc-box');
  function pick(ev) {
    if (!pc || !pc.rows.size) return null;
    var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    var xs = pc.xs, A = pc.A, i = 0;
    if (x < xs[0] - 10 || x > xs[A - 1] + 10) return null;
    while (i < A - 2 && x > xs[i + 1]) i++;
    var f = A === 1 ? 0 : clamp((x - xs[i]) / (xs[i + 1] - xs[i]), 0, 1);
    var bestD = 8, found = null;
    pc.rows.forEach(function (row, n) {
      var y0 = row[i], y1 = A === 1 ? y0 : row[i + 1];
      if (isNaN(y0) || isNaN(y1)) return;
      var d = Math.abs(y0 + (y1 - y0) * f - y);
      if (d < bestD) { bestD = d; found = n; }
    });
    return found != null ? { n: found, x: x, y: y } : null;
  }
  canvas.addEventListener('mousemove', function (ev) {
    var p = pick(ev);
    setHover(p ? p.n : null);
    if (!p) { hideTip(tip); return; }
    var t = S.trials.get(p.n), lines = ['trial ' + p.n + ' · ' + (t ? t.state : '') + (t && isNum(t.value) ? ' · ' + S.metric + ' ' + fmtNum(t.value) : '')];
    if (t && t.params) for (var k in t.params) lines.push(trunc(k, 24) + ' = ' + trunc(fmtParam(t.params[k]), 40));
    showTip(tip, box, p.x, p.y, lines);
  });
  canvas.addEventListener('mouseleave', function () { setHover(null); hideTip(tip); });
  canvas.addEventListener('click', function (ev) { var p = pick(ev); if (p) navigate(S.name, p.n); });
}
