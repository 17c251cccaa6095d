/* model.js — the page's copy of the selected study (S), the redraw scheduler every view
 * registers in, and the address (#study=NAME&trial=N) of what is shown.
 *
 * Events and API answers change S and mark what must be redrawn (invalidate); one
 * animation-frame callback redraws the marked parts once, in ORDER, and the heavy
 * charts (canvas) at most as often as their cost allows (costLimited). A view
 * registers its redraw as RENDER.<key> when its module loads. docs/dashboard-page.md,
 * "Live updates" and "10,000 trials", says why.
 */
import { isNum } from './util.js';

export var STATES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'STOPPED', 'CANCELLED'];
export var DONE_STATES = { SUCCEEDED: 1, FAILED: 1, STOPPED: 1 };

/* --------------------------------------------------------------- the model */

export var S = {
  studies: [],            /* /api/studies entries */
  name: null,             /* selected study */
  study: null,            /* /api/studies/{id}, kept up to date by events */
  studyAt: 0,             /* performance.now() when study.elapsed was read */
  trials: new Map(),      /* number -> trial: every trial of the study */
  curves: new Map(),      /* number -> {trial, state, steps[], vals[], drawn, src} */
  metric: '',
  loaded: false,
  gen: 0,                 /* bumped on every (re)load; late answers are dropped */
  buffered: [],           /* events that arrive while the study loads */
  events: 0,              /* events applied (exposed for tests) */
  table: { sort: '-number', states: new Set(), text: '', offset: 0, total: 0, rows: [], seq: 0 },
  open: null,             /* trial number shown in the trial view */
  hover: null,            /* trial number under the pointer in a chart */
  counts: {}, best: null  /* by recount(): trials per state; {trial, value} or null */
};

/* A trial's learning curve: its points in step order, `drawn` of them on the base
 * canvas, `src` the replica they come from ('*': the server's choice). */
export function newCurve(n, state) { return { trial: n, state: state || 'RUNNING', steps: [], vals: [], drawn: 0 }; }
/* Adds (step, value); a step seen before is replaced. True when appended at the end. */
export function addPoint(c, step, v) {
  var k = c.steps.length;
  if (!k || step > c.steps[k - 1]) { c.steps.push(step); c.vals.push(v); return true; }
  var lo = 0, hi = k;
  while (lo < hi) { var mid = (lo + hi) >> 1; if (c.steps[mid] < step) lo = mid + 1; else hi = mid; }
  if (c.steps[lo] === step) c.vals[lo] = v; else { c.steps.splice(lo, 0, step); c.vals.splice(lo, 0, v); }
  return false;
}

export function isLive(state) { return state === 'RUNNING' || state === 'PENDING'; }

/* S.counts (trials per state) and S.best (the best SUCCEEDED trial, the lower number
 * on a tie) from S.trials. */
export function recount() {
  var c = {};
  STATES.forEach(function (s) { c[s] = 0; });
  var best = null, goalMax = !S.study || S.study.goal !== 'MINIMIZE';
  S.trials.forEach(function (t) {
    c[t.state] = (c[t.state] || 0) + 1;
    if (t.state === 'SUCCEEDED' && isNum(t.value)) {
      if (!best || (goalMax ? t.value > best.value : t.value < best.value) ||
          (t.value === best.value && t.number < best.trial)) best = { trial: t.number, value: t.value };
    }
  });
  S.counts = c;
  S.best = best;
}

export function maxTrials() {
  var m = S.study && S.study.max_trials;
  return isNum(m) ? m : S.trials.size;
}

/* A trial's duration in seconds, counting on while it runs. */
export function liveDuration(t) {
  if (t.state === 'RUNNING' && isNum(t.duration)) return t.duration + (performance.now() - t._recv) / 1000;
  if (t.state === 'RUNNING' && isNum(t.started)) return Date.now() / 1000 - t.started;
  return t.duration;
}

/* ------------------------------------------------------------- scheduling */

var dirty = new Set(), rafPending = false;
/* Marks the named parts (RENDER keys) for the next animation frame. */
export function invalidate() {
  for (var i = 0; i < arguments.length; i++) dirty.add(arguments[i]);
  if (!rafPending) { rafPending = true; requestAnimationFrame(frame); }
}
/* The redraws, by key; summary.js (list, summary), charts.js (best, curves*, pc*),
 * pareto.js (pareto*), table.js (table) and trial.js (tvCurve) fill it in. */
export var RENDER = {};
var ORDER = ['list', 'summary', 'best', 'curves', 'curvesLive', 'curvesHL', 'pc', 'pcLive', 'pcHL', 'pareto',
  'paretoTable', 'paretoHL', 'table', 'tvCurve'];
/* The full redraws of the big charts cost the most: at most one a frame. */
var HEAVY = { best: 1, curves: 1, pc: 1, pareto: 1 };
function frame() {
  rafPending = false;
  var d = dirty;
  dirty = new Set();
  if (d.has('curves')) d.delete('curvesLive');
  if (d.has('pc')) d.delete('pcLive');
  if (d.has('pareto')) d.delete('paretoTable');
  var heavy = false;
  ORDER.forEach(function (k) {
    if (!d.has(k)) return;
    if (HEAVY[k] && heavy) { invalidate(k); return; }
    if (HEAVY[k]) heavy = true;
    try { RENDER[k](); } catch (e) { reportError(e); }
  });
}
function reportError(e) {
  /* A bug in one chart must not stop the others; it still shows in the console. */
  setTimeout(function () { throw e; });
}
/* A redraw that costs c ms runs at most every 3c ms (at most every 2 s). The
 * cost is measured up to the next animation frame, so it includes the browser's
 * own painting of what the redraw changed (canvas rasterisation, SVG). */
export function costLimited(key, fn) {
  var st = { last: -1e9, cost: 0, timer: 0 };
  return function () {
    var now = performance.now(), wait = st.last + Math.min(2000, st.cost * 3) - now;
    if (wait > 0) {
      if (!st.timer) st.timer = setTimeout(function () { st.timer = 0; invalidate(key); }, wait);
      return;
    }
    var t0 = performance.now();
    fn();
    st.last = performance.now();
    st.cost = st.last - t0;
    requestAnimationFrame(function () {
      var total = performance.now() - t0 - 17;
      if (total > st.cost) { st.cost = total; st.last = performance.now(); }
    });
  };
}

/* ------------------------------------------------------------- navigation */

/* What the address shows: {study, trial}, each null when not named. */
export function readRoute() {
  var h = new URLSearchParams(location.hash.slice(1));
  var t = parseInt(h.get('trial') || '', 10);
  return { study: h.get('study'), trial: t > 0 ? t : null };
}
/* Writes the address: a new history entry when push, else in place. */
export function writeRoute(study, trial, push) {
  var h = new URLSearchParams();
  if (study) h.set('study', study);
  if (trial) h.set('trial', String(trial));
  var s = h.toString(), url = location.pathname + location.search + (s ? '#' + s : '');
  if (location.hash.slice(1) === s) return;
  if (push) history.pushState(null, '', url); else history.replaceState(null, '', url);
}
var follow = null; /* app.js's route(): makes the page show what the address names */
/* Shows a study (and a trial of it) as a followed link would: a new history entry,
 * then the page follows the address. */
export function navigate(study, trial) {
  writeRoute(study, trial, true);
  follow();
}
/* app.js hands its route() over at start-up, so no module needs to import app.js. */
export function onNavigate(fn) { follow = fn; }
