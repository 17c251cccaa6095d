/* app.js — the dashboard page's entry point (index.html loads it as an ES module; it
 * imports the rest): reading the list of studies, following the address, loading the
 * selected study, applying its live events to the model, and start-up.
 * docs/dashboard-page.md describes what the page shows and how it is split into files.
 *
 * Rules the page's scripts keep:
 *  - every string that comes from the server (study names, parameter names and values,
 *    errors, log lines, event details) reaches the DOM through textContent, a text
 *    node, an SVG <text>/<title> or setAttribute of a non-script attribute; never
 *    innerHTML, never a style attribute (the page's CSP allows neither);
 *  - one EventSource for the selected study; events change the in-memory model and
 *    mark what must be redrawn; redraws happen once per animation frame, and the
 *    heavy charts (canvas) are redrawn at most as often as their cost allows;
 *  - imports point one way, down this list: util, api, model, charts, pareto, table,
 *    trial, summary, app. The one call upwards, navigate(), reaches route() here through
 *    model.js's onNavigate.
 */
import { $, setText, isNum, readColours } from './util.js';
import {
  api, studyPath, banner, apiFailed, readToken, openEvents, closeEvents, eventsDown, eventsOpen,
  setConn
} from './api.js';
import {
  S, invalidate, newCurve, addPoint, isLive, recount, readRoute, writeRoute, onNavigate
} from './model.js';
import { bindCharts, curveToBase, pcTrialChanged } from './charts.js';
import { buildPareto, bindPareto } from './pareto.js';
import {
  buildTableHead, buildStateFilter, queryTable, tableChanged, updateRow, removeRows, tickRows,
  bindTable
} from './table.js';
import {
  openTrial, closeTrial, refreshTrialView, trialViewChanged, tickTrialView, bindTrialView
} from './trial.js';
import { renderElapsed, bindCancel } from './summary.js';

var LOAD_PAGE = 1000; /* the API's largest page */

/* ---------------------------------------------------- the list of studies */

var listFetchAt = 0, listTimer = 0;
function fetchStudies() {
  listFetchAt = performance.now();
  return api('/api/studies').then(function (r) {
    S.studies = (r && r.studies) || [];
    invalidate('list');
    if (eventsDown() && S.name && !eventsOpen()) openEvents(S.name, true, STREAM);
    return S.studies;
  }, function (err) {
    if (eventsDown() || !eventsOpen()) setConn('down', 'disconnected');
    throw err;
  });
}
/* At most one /api/studies every 5 s, however many study events arrive. */
function refreshStudiesSoon() {
  if (listTimer) return;
  var wait = Math.max(0, listFetchAt + 5000 - performance.now());
  listTimer = setTimeout(function () {
    listTimer = 0;
    fetchStudies().catch(function () { /* the banner is for the selected study */ });
  }, wait);
}

/* ------------------------------------------------------------- navigation */

/* Makes the page show what the address names (popstate, hashchange, navigate()). */
function route() {
  if (readToken()) {
    /* a new token (the address was pasted again): start over with it */
    banner(null);
    S.name = null;
    fetchStudies().then(route, function (err) { apiFailed('cannot list studies', err); });
    return;
  }
  var r = readRoute();
  if (!r.study) {
    /* no study named: the first running one, else the newest */
    var pick = S.studies.filter(function (s) { return s.state === 'RUNNING'; }).pop() ||
      S.studies[S.studies.length - 1];
    if (!pick) { selectStudy(null); return; }
    writeRoute(pick.name, null, false);
    r.study = pick.name;
  }
  if (r.study !== S.name) selectStudy(r.study);
  if (r.trial !== S.open) {
    if (r.trial) openTrial(r.trial); else closeTrial(false);
  }
}

/* ------------------------------------------------------- loading a study */

function selectStudy(name) {
  closeEvents();
  S.name = name;
  S.gen++;
  S.loaded = false;
  S.study = null;
  S.trials = new Map();
  S.curves = new Map();
  S.buffered = [];
  S.table.offset = 0;
  S.table.rows = [];
  S.table.total = 0;
  removeRows();
  closeTrial(false);
  invalidate('list');
  $('no-study').hidden = !!name;
  $('study-body').hidden = true;
  setText($('top-study'), name ? 'study ' + name : '');
  document.title = name ? name + ' · tuner' : 'tuner dashboard';
  if (!name) { $('no-study').textContent = S.studies.length ? 'Pick a study on the left.' : 'No studies in this store yet.'; return; }
  $('no-study').hidden = false;
  $('no-study').textContent = 'Loading ' + name + '…';
  openEvents(name, false, STREAM);
  loadStudy();
}

/* Loads everything about the selected study: detail, every trial (1000 a request)
 * and every curve. Events that arrive meanwhile wait in S.buffered and are
 * applied after, so nothing is lost or applied to data that is then overwritten. */
function loadStudy() {
  var gen = ++S.gen, name = S.name, base = studyPath(name);
  S.loaded = false;
  var detail = api(base);
  var curves = api(base + '/curves');
  var trials = api(base + '/trials?sort=number&offset=0&limit=' + LOAD_PAGE).then(function (first) {
    var all = first.trials || [], total = first.total || 0, more = [];
    for (var off = all.length; off < total; off += LOAD_PAGE) {
      more.push(api(base + '/trials?sort=number&offset=' + off + '&limit=' + LOAD_PAGE));
    }
    return Promise.all(more).then(function (pages) {
      pages.forEach(function (p) { all = all.concat(p.trials || []); });
      return all;
    });
  });
  return Promise.all([detail, curves, trials]).then(function (res) {
    if (gen !== S.gen) return;
    var now = performance.now();
    S.study = res[0];
    S.studyAt = now;
    S.metric = (res[1] && res[1].metric) || S.study.metric || 'objective';
    S.trials = new Map();
    res[2].forEach(function (t) { t._recv = now; S.trials.set(t.number, t); });
    S.curves = new Map();
    ((res[1] && res[1].curves) || []).forEach(function (c) {
      var cur = newCurve(c.trial, c.state);
      (c.points || []).forEach(function (p) { if (isNum(p[1])) addPoint(cur, p[0], p[1]); });
      if (cur.steps.length) cur.src = '*'; /* the server's choice of replica */
      S.curves.set(c.trial, cur);
    });
    S.trials.forEach(function (t) {
      var cur = S.curves.get(t.number);
      if (!cur) S.curves.set(t.number, newCurve(t.number, t.state));
      else cur.state = t.state;
    });
    S.loaded = true;
    var buf = S.buffered;
    S.buffered = [];
    buf.forEach(function (ev) { applyEvent(ev[0], ev[1]); });
    banner(null);
    $('no-study').hidden = true;
    $('study-body').hidden = false;
    buildTableHead();
    buildStateFilter();
    buildPareto();
    recount();
    invalidate('summary', 'best', 'curves', 'pc', 'pareto', 'list');
    queryTable(true);
    /* ready once the study is drawn: this frame callback runs after frame() */
    requestAnimationFrame(function () { document.body.setAttribute('data-ready', '1'); });
    if (S.open != null) refreshTrialView(true);
  }).catch(function (err) {
    if (gen !== S.gen) return;
    apiFailed('cannot load study ' + name, err);
    if (err && err.status === 404) { $('no-study').textContent = 'No study named ' + name + '.'; }
  });
}

/* ------------------------------------------------------------- live events */

/* What the study's event stream does (api.js's openEvents). Events that arrive while
 * the study loads wait in S.buffered. After the stream broke, the study is read again. */
var STREAM = {
  event: function (kind, data) {
    if (!S.loaded) { S.buffered.push([kind, data]); return; }
    applyEvent(kind, data);
  },
  resync: resyncStudy,
  over: function () { return S.study && !(S.study.state === 'RUNNING' || S.study.state === 'CREATED'); }
};
function resyncStudy() {
  if (!S.name) return;
  banner(null);
  fetchStudies().catch(function () { });
  loadStudy();
}

function applyEvent(kind, d) {
  S.events++;
  document.body.setAttribute('data-events', String(S.events));
  if (kind === 'trial') applyTrial(d);
  else if (kind === 'measurement') applyMeasurement(d);
  else if (kind === 'study') applyStudy(d);
}

function applyTrial(t) {
  if (!t || !isNum(t.number)) return;
  var old = S.trials.get(t.number);
  t._recv = performance.now();
  if (old && t.last_step == null) t.last_step = old.last_step;
  S.trials.set(t.number, t);
  var cur = S.curves.get(t.number);
  if (!cur) S.curves.set(t.number, newCurve(t.number, t.state));
  else if (cur.state !== t.state) {
    var was = cur.state;
    cur.state = t.state;
    if (isLive(was) && !isLive(t.state)) { curveToBase(cur); invalidate('curvesLive'); }
    else invalidate('curves');
  }
  if (!old || old.state !== t.state || old.value !== t.value || String(old.values) !== String(t.values)) {
    invalidate('summary', 'best', 'pareto');
    pcTrialChanged(old, t);
  }
  updateRow(t);
  tableChanged();
  if (S.open === t.number) trialViewChanged(t);
}

function applyMeasurement(m) {
  if (!m || !isNum(m.trial)) return;
  var t = S.trials.get(m.trial);
  if (t && isNum(m.step) && (t.last_step == null || m.step > t.last_step)) {
    t.last_step = m.step;
    updateRow(t);
  }
  if (!isNum(m.value) || !isNum(m.step)) return;
  var cur = S.curves.get(m.trial);
  if (!cur) { cur = newCurve(m.trial, t ? t.state : 'RUNNING'); S.curves.set(m.trial, cur); }
  /* One replica's points make a curve, as the server's /curves picks them: the
   * chief's (or master's) when it reports, else those of the first replica that did. */
  var rep = String(m.replica || ''), chief = /^(chief|master):/.test(rep);
  if (chief) {
    if (cur.src && cur.src !== '*' && !/^(chief|master):/.test(cur.src)) {
      cur.steps = []; cur.vals = []; /* a chief took over from another replica */
      invalidate('curves');
    }
    cur.src = rep;
  } else if (!cur.src || (cur.src === '*' && !cur.steps.length)) {
    cur.src = rep;
  } else if (cur.src !== rep) {
    return;
  }
  var appended = addPoint(cur, m.step, m.value);
  if (!appended && (!isLive(cur.state) || cur.drawn)) invalidate('curves');
  else {
    if (!isLive(cur.state)) curveToBase(cur);
    invalidate('curvesLive');
  }
  if (S.open === m.trial) invalidate('tvCurve');
  if (S.hover === m.trial || S.open === m.trial) invalidate('curvesHL');
}

function applyStudy(s) {
  if (!s || !s.name) return;
  var i = S.studies.findIndex(function (x) { return x.name === s.name; });
  if (i >= 0) S.studies[i] = s; else { S.studies.push(s); refreshStudiesSoon(); }
  invalidate('list');
  refreshStudiesSoon();
  if (s.name === S.name && S.study) {
    var before = S.study.state;
    for (var k in s) if (k !== 'counts') S.study[k] = s[k];
    S.study.counts_server = s.counts;
    if (before !== s.state) {
      /* the error and the final elapsed time come with the detail */
      api(studyPath(S.name)).then(function (d) {
        if (!S.study || d.name !== S.study.name) return;
        S.study = d;
        S.studyAt = performance.now();
        invalidate('summary');
      }).catch(function () { });
    }
    invalidate('summary');
  }
}

/* Once a second: the elapsed time and the duration of running trials on screen. */
function tick() {
  if (document.hidden || !S.loaded) return;
  renderElapsed();
  tickRows();
  tickTrialView();
}

/* ------------------------------------------------------------------ start */

function start() {
  onNavigate(route);
  readColours();
  readToken();
  bindCharts();
  bindPareto();
  bindTable();
  bindTrialView();
  bindCancel();
  window.addEventListener('popstate', route);
  window.addEventListener('hashchange', route);
  if (window.matchMedia) {
    var mq = window.matchMedia('(prefers-color-scheme: dark)');
    var onTheme = function () { readColours(); invalidate('curves', 'pc', 'best'); };
    if (mq.addEventListener) mq.addEventListener('change', onTheme);
  }
  if (window.ResizeObserver) {
    var ro = new ResizeObserver(function () { invalidate('best', 'curves', 'pc', 'pareto', 'tvCurve'); });
    ['best-chart-box', 'curves-box', 'pc-box', 'pareto-box'].forEach(function (id) { ro.observe($(id)); });
  } else {
    window.addEventListener('resize', function () { invalidate('best', 'curves', 'pc', 'pareto', 'tvCurve'); });
  }
  setInterval(tick, 1000);
  /* the list of studies: on study events (at most every 5 s), and every 10 s for
   * studies other processes start */
  setInterval(function () { if (!document.hidden) refreshStudiesSoon(); }, 10000);
  fetchStudies().then(route).catch(function (err) {
    apiFailed('cannot list studies', err);
    route();
  });
}
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
