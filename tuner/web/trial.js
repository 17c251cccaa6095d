/* trial.js — the trial view: the panel on the right with one trial's state, facts,
 * parameters, curve (SVG), replicas, log tail and events.
 *
 * Opened and closed by the address (#study=NAME&trial=N, app.js's route). What comes
 * with events (the header and facts) is redrawn at once; the replicas and events are
 * read again at most once a second, and the log tail every 2 s while the trial runs.
 * A generation number (tv.gen) drops answers for a trial no longer shown.
 */
import {
  $, el, sv, clear, setText, fmtNum, fmtParam, fmtDur, fmtTime, niceTicks, boxSize, drawAxes
} from './util.js';
import { api, studyPath, apiFailed } from './api.js';
import { S, RENDER, invalidate, liveDuration, writeRoute } from './model.js';
import { highlightBest } from './charts.js';
import { refillRows } from './table.js';

var tv = {
  detail: null,       /* /api/studies/{id}/trials/{n} of the trial shown */
  replica: null,      /* the replica whose log is shown */
  logTimer: 0, detailTimer: 0,
  lastFocus: null,    /* focused before the view opened; focused again when it closes */
  gen: 0              /* bumped when the view opens or closes; late answers are dropped */
};

/* Shows trial n in the view (opening it, focused, when closed) and reads its detail. */
export function openTrial(n) {
  var view = $('trial-view');
  var wasOpen = !view.hidden;
  if (!wasOpen) tv.lastFocus = document.activeElement;
  S.open = n;
  tv.gen++;
  tv.detail = null;
  view.hidden = false;
  setText($('tv-title'), 'Trial ' + n);
  var t = S.trials.get(n);
  renderTrialHeader(t);
  renderTrialFacts(t);
  renderTrialParams(t);
  clear($('tv-replicas'));
  clear($('tv-events'));
  clear($('tv-replica'));
  $('tv-log').textContent = '';
  setText($('tv-log-note'), '');
  invalidate('tvCurve', 'curvesHL', 'pcHL', 'paretoHL');
  highlightBest();
  refillRows(n);
  invalidate('table');
  $('tv-title').focus();
  refreshTrialView(true);
}
/* Closes the view; with push, as the user's doing: a history entry without the trial,
 * and the focus back where it was. */
export function closeTrial(push) {
  if (S.open == null && $('trial-view').hidden) return;
  S.open = null;
  tv.gen++;
  clearTimeout(tv.logTimer);
  clearTimeout(tv.detailTimer);
  $('trial-view').hidden = true;
  refillRows();
  invalidate('table', 'curvesHL', 'pcHL', 'paretoHL');
  highlightBest();
  if (push) {
    writeRoute(S.name, null, true);
    if (tv.lastFocus && document.contains(tv.lastFocus)) tv.lastFocus.focus();
  }
}

/* Reads the open trial's detail (replicas, events, log files) again; withLog, its log too. */
export function refreshTrialView(withLog) {
  var n = S.open, gen = tv.gen;
  if (n == null || !S.name) return;
  api(studyPath(S.name) + '/trials/' + n).then(function (d) {
    if (gen !== tv.gen) return;
    tv.detail = d;
    var t = S.trials.get(n);
    if (!t) { d._recv = performance.now(); S.trials.set(n, d); t = d; }
    renderTrialHeader(t);
    renderTrialFacts(t);
    renderTrialParams(t);
    renderReplicas(d);
    renderEvents(d);
    var sel = $('tv-replica'), logs = d.logs || [];
    var want = tv.replica && logs.indexOf(tv.replica) >= 0 ? tv.replica : logs[0];
    if (sel.options.length !== logs.length || Array.prototype.some.call(sel.options, function (o, i) { return o.value !== logs[i]; })) {
      clear(sel);
      logs.forEach(function (name) { el('option', { value: name }, sel, name); });
    }
    sel.disabled = !logs.length;
    if (want) sel.value = want;
    tv.replica = want || null;
    if (!logs.length) { $('tv-log').textContent = ''; setText($('tv-log-note'), 'no log files'); }
    else if (withLog) loadLog();
    invalidate('tvCurve');
  }).catch(function (err) {
    if (gen !== tv.gen) return;
    if (err && err.status === 404) setText($('tv-log-note'), 'no trial ' + n + ' in this study');
    else apiFailed('cannot load trial ' + n, err);
  });
}
/* An event about the open trial: header now, replicas and events soon (1/s). */
export function trialViewChanged(t) {
  renderTrialHeader(t);
  renderTrialFacts(t);
  if (tv.detailTimer) return;
  tv.detailTimer = setTimeout(function () { tv.detailTimer = 0; refreshTrialView(false); }, 1000);
}

/* Once a second: the facts of a running trial (its duration grows). */
export function tickTrialView() {
  if (S.open == null) return;
  var t = S.trials.get(S.open);
  if (t && t.state === 'RUNNING') renderTrialFacts(t);
}

function renderTrialHeader(t) {
  var b = $('tv-state');
  setText(b, t ? t.state : '');
  b.className = 'badge' + (t ? ' st-' + t.state : '');
  var err = $('tv-error');
  err.hidden = !(t && t.error);
  setText(err, t && t.error ? t.error : '');
}
function renderTrialFacts(t) {
  var dl = $('tv-facts');
  clear(dl);
  if (!t) return;
  var ms = (S.study && Array.isArray(S.study.metrics) && S.study.metrics.length > 1) ? S.study.metrics : null;
  var values = ms ? ms.map(function (m, i) {
    var v = Array.isArray(t.values) ? t.values[i] : null;
    return [String(m.metricId), typeof v === 'number' ? fmtNum(v) : i === 0 && t.value != null ? fmtNum(t.value) : '–'];
  }) : [[S.metric, t.value == null ? '–' : fmtNum(t.value)]];
  values.concat([['duration', fmtDur(liveDuration(t))],
    ['last step', t.last_step == null ? '–' : fmtNum(t.last_step)],
    ['started', fmtTime(t.started, true)], ['finished', fmtTime(t.finished, true)],
    ['attempts / restarts', (t.attempts == null ? '–' : t.attempts) + ' / ' + (t.restarts == null ? '–' : t.restarts)]
  ]).forEach(function (f) {
    var d = el('div', null, dl);
    el('dt', null, d, f[0]);
    el('dd', null, d, f[1]);
  });
}
function renderTrialParams(t) {
  var dl = $('tv-params');
  clear(dl);
  if (!t || !t.params) return;
  for (var k in t.params) {
    el('dt', null, dl, k);
    el('dd', null, dl, fmtParam(t.params[k]));
  }
}
function renderReplicas(d) {
  var body = $('tv-replicas');
  clear(body);
  (d.replicas || []).forEach(function (r) {
    var tr = el('tr', null, body);
    el('td', null, tr, r.name);
    var td = el('td', null, tr);
    el('span', { 'class': 'badge st-' + r.state }, td, r.state);
    el('td', null, tr, r.exit_code == null ? '–' : String(r.exit_code));
    el('td', null, tr, r.restarts == null ? '–' : String(r.restarts));
  });
  if (!(d.replicas || []).length) el('td', { colspan: 4, 'class': 'muted' }, el('tr', null, body), 'no replicas recorded');
}
function renderEvents(d) {
  var ol = $('tv-events');
  clear(ol);
  var evs = d.events || [], from = Math.max(0, evs.length - 200);
  if (from) el('li', { 'class': 'muted' }, ol, from + ' earlier events not shown');
  for (var i = from; i < evs.length; i++) {
    var e = evs[i], li = el('li', null, ol);
    el('time', null, li, fmtTime(e.time));
    li.appendChild(document.createTextNode((e.replica ? e.replica + ' ' : '') + e.kind + (e.detail ? ': ' + e.detail : '')));
  }
}

function loadLog() {
  clearTimeout(tv.logTimer);
  var n = S.open, rep = tv.replica, gen = tv.gen;
  if (n == null || !rep) return;
  api(studyPath(S.name) + '/trials/' + n + '/logs/' + encodeURIComponent(rep) + '?lines=200').then(function (r) {
    if (gen !== tv.gen || rep !== tv.replica) return;
    var pre = $('tv-log');
    var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    var text = (r.lines || []).join('\n');
    if (pre.textContent !== text) {
      pre.textContent = text;
      if (atEnd || !pre.getAttribute('data-loaded')) pre.scrollTop = pre.scrollHeight;
    }
    pre.setAttribute('data-loaded', rep);
    pre.setAttribute('data-lines', String((r.lines || []).length));
    setText($('tv-log-note'), (r.truncated ? 'last ' + (r.lines || []).length + ' lines' : (r.lines || []).length + ' lines') + ' · ' + fmtTime(Date.now() / 1000));
  }).catch(function (err) {
    if (gen !== tv.gen) return;
    $('tv-log').textContent = '';
    setText($('tv-log-note'), err && err.status === 404 ? 'no log yet' : 'cannot read the log: ' + (err && err.message));
  }).then(function () {
    if (gen !== tv.gen) return;
    /* a running trial's log grows: read it again every 2 s while it is open */
    var t = S.trials.get(n);
    if (t && (t.state === 'RUNNING' || t.state === 'PENDING')) tv.logTimer = setTimeout(loadLog, 2000);
  });
}

RENDER.tvCurve = function () {
  var svg = $('tv-curve');
  if (S.open == null || $('trial-view').hidden) return;
  var size = boxSize(svg);
  clear(svg);
  var c = S.curves.get(S.open);
  if (!c || !c.steps.length) {
    sv('text', { x: 10, y: 20 }, svg, 'no measurements of ' + S.metric + ' yet');
    svg.setAttribute('data-points', '0');
    setText($('tv-curve-sub'), '');
    return;
  }
  var k = c.steps.length, lo = Math.min.apply(null, c.vals), hi = Math.max.apply(null, c.vals);
  var x0 = Math.min(0, c.steps[0]), x1 = Math.max(c.steps[k - 1], x0 + 1);
  if (lo === hi) { var d = Math.abs(lo) * 0.05 || 1; lo -= d; hi += d; }
  var pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
  var m = { l: 52, r: 10, t: 20, b: 28 }, W = size.w - m.l - m.r, H = size.h - m.t - m.b;
  function sx(s) { return m.l + (s - x0) / (x1 - x0) * W; }
  function sy(v) { return m.t + (1 - (v - lo) / (hi - lo)) * H; }
  drawAxes(svg, m, W, H, niceTicks(lo, hi, 3), sy, niceTicks(x0, x1, 5), sx, 'step', S.metric);
  var line = '', dots = '';
  for (var i = 0; i < k; i++) {
    var p = sx(c.steps[i]).toFixed(1) + ' ' + sy(c.vals[i]).toFixed(1);
    line += (i ? 'L' : 'M') + p;
    dots += 'M' + p + 'h0';
  }
  sv('path', { d: line, 'class': 'tv-line' }, svg);
  if (k <= 60) sv('path', { d: dots, 'class': 'tv-pts' }, svg);
  svg.setAttribute('data-points', String(k));
  setText($('tv-curve-sub'), k + ' measurements, last ' + fmtNum(c.vals[k - 1]) + ' at step ' + fmtNum(c.steps[k - 1]));
};

export function bindTrialView() {
  $('tv-close').addEventListener('click', function () { closeTrial(true); });
  $('tv-replica').addEventListener('change', function (e) {
    tv.replica = e.target.value;
    $('tv-log').removeAttribute('data-loaded');
    loadLog();
  });
  $('tv-log-refresh').addEventListener('click', loadLog);
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Escape' && S.open != null && !$('cancel-dialog').open) closeTrial(true);
  });
}
