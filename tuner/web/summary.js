/* summary.js — the parts of the page about studies as a whole: the list of studies on
 * the left, the selected study's summary (state, goal, progress bar, counts, elapsed
 * time, best so far) and the Cancel study dialog.
 *
 * The list and the summary are redraws registered in RENDER ('list', 'summary'); the
 * summary recounts the trials (model.js's recount) each time it is drawn. Cancelling
 * asks for the token when the page has none (docs/dashboard-page.md, "The token").
 */
import { $, el, sv, clear, setText, isNum, fmtNum, fmtDur } from './util.js';
import { api, studyPath, token, setToken } from './api.js';
import { S, DONE_STATES, RENDER, invalidate, recount, maxTrials, navigate } from './model.js';
import { refillRows } from './table.js';

var BAR_ORDER = ['SUCCEEDED', 'STOPPED', 'FAILED', 'CANCELLED', 'RUNNING', 'PENDING'];

/* ------------------------------------------------------------ study list */

var listRows = new Map();
RENDER.list = function () {
  var ul = $('study-list');
  $('study-list-empty').hidden = S.studies.length > 0;
  var seen = new Set(), prev = null;
  S.studies.forEach(function (s) {
    seen.add(s.name);
    var row = listRows.get(s.name);
    if (!row) {
      var li = el('li');
      var b = el('button', { type: 'button' }, li);
      var nm = el('span', { 'class': 's-name' }, b, s.name);
      var meta = el('span', { 'class': 's-meta' }, b);
      b.addEventListener('click', function () { navigate(s.name, null); });
      row = { li: li, b: b, nm: nm, meta: meta };
      listRows.set(s.name, row);
    }
    var c = s.counts || {}, done = 0;
    for (var k in DONE_STATES) done += c[k] || 0;
    var best = s.best && isNum(s.best.value) ? ' · best ' + fmtNum(s.best.value) : '';
    setText(row.meta, s.state + ' · ' + done + '/' + (s.max_trials == null ? '?' : s.max_trials) + best);
    row.b.setAttribute('aria-current', s.name === S.name ? 'true' : 'false');
    row.b.setAttribute('title', s.name);
    /* the server's order; a row is moved only when it must (moving drops focus) */
    var want = prev ? prev.nextSibling : ul.firstChild;
    if (want !== row.li) ul.insertBefore(row.li, want);
    prev = row.li;
  });
  listRows.forEach(function (row, name) {
    if (!seen.has(name)) { row.li.remove(); listRows.delete(name); }
  });
};

/* ---------------------------------------------------------------- summary */

RENDER.summary = function () {
  var st = S.study;
  if (!st) return;
  var before = S.best && S.best.trial;
  recount();
  if ((S.best && S.best.trial) !== before) {
    /* the best-so-far mark in the table moves */
    refillRows();
    invalidate('table');
  }
  setText($('study-name'), st.name);
  var badge = $('study-state');
  setText(badge, st.state);
  badge.className = 'badge st-' + st.state;
  var ms = Array.isArray(st.metrics) && st.metrics.length > 1 ? st.metrics : null;
  setText($('study-goal'), ms ? ms.map(function (m) { return (m.goal === 'MINIMIZE' ? 'minimize ' : 'maximize ') + m.metricId; }).join(' · ')
    : (st.goal === 'MINIMIZE' ? 'minimize ' : 'maximize ') + (st.metric || S.metric));
  var err = $('study-error');
  err.hidden = !st.error;
  setText(err, st.error ? 'error: ' + st.error : '');
  var c = S.counts, done = 0;
  for (var k in DONE_STATES) done += c[k] || 0;
  var mt = maxTrials();
  setText($('done-count'), done);
  setText($('max-trials'), mt);
  $('done-count').setAttribute('data-value', String(done));

  /* the bar: one rect per state, widths in 1000ths of max(max_trials, trials) */
  var bar = $('progress-bar'), total = Math.max(mt, S.trials.size, 1);
  clear(bar);
  var x = 0, labels = [];
  BAR_ORDER.forEach(function (s) {
    var n = c[s] || 0;
    if (!n) return;
    var w = 1000 * n / total;
    var r = sv('rect', { x: x.toFixed(2), y: 0, width: w.toFixed(2), height: 10, 'class': 'bar-' + s }, bar);
    sv('title', null, r, n + ' ' + s.toLowerCase());
    x += w;
    labels.push(n + ' ' + s.toLowerCase());
  });
  bar.setAttribute('aria-label', done + ' of ' + mt + ' trials done' + (labels.length ? ': ' + labels.join(', ') : ''));

  var ul = $('counts');
  clear(ul);
  ['SUCCEEDED', 'RUNNING', 'FAILED', 'STOPPED', 'PENDING', 'CANCELLED'].forEach(function (s) {
    var n = c[s] || 0;
    if (!n && (s === 'PENDING' || s === 'CANCELLED')) return;
    var li = el('li', { 'data-state': s, 'data-count': String(n) }, ul);
    el('span', { 'class': 'sw sw-' + s, 'aria-hidden': 'true' }, li);
    el('span', null, li, n + ' ' + (s === 'STOPPED' ? 'stopped early' : s.toLowerCase()));
  });

  renderElapsed();
  var bestDd = $('best');
  clear(bestDd);
  if (S.best) {
    bestDd.appendChild(document.createTextNode(fmtNum(S.best.value) + ' '));
    var b = el('button', { type: 'button', 'class': 'linklike' }, bestDd, 'trial ' + S.best.trial);
    var n = S.best.trial;
    b.addEventListener('click', function () { navigate(S.name, n); });
    bestDd.setAttribute('data-value', String(S.best.value));
  } else {
    bestDd.textContent = 'none yet';
    bestDd.removeAttribute('data-value');
  }
  setText($('parallel'), st.parallel != null ? st.parallel : '–');
  var alg = st.algorithm || (st.spec && st.spec.trainingInput && st.spec.trainingInput.hyperparameters &&
    st.spec.trainingInput.hyperparameters.algorithm) || '–';
  setText($('algorithm'), alg === 'ALGORITHM_UNSPECIFIED' ? 'Bayesian (default)' : alg);
  var canCancel = st.state === 'RUNNING' || st.state === 'CREATED' || st.state === 'STOPPED';
  $('cancel-btn').disabled = !canCancel;
  document.title = st.name + ' · ' + done + '/' + mt + ' · tuner';
  setText($('top-study'), 'study ' + st.name + ' · ' + st.state);
};

/* The elapsed time, counting on while the study runs. */
export function renderElapsed() {
  var st = S.study;
  if (!st) return;
  var e = isNum(st.elapsed) ? st.elapsed : (isNum(st.updated) && isNum(st.created) ? st.updated - st.created : null);
  if (e != null && st.state === 'RUNNING') e += (performance.now() - S.studyAt) / 1000;
  setText($('elapsed'), fmtDur(e));
}

/* ----------------------------------------------------------------- cancel */

/* The Cancel study button and its dialog. */
export function bindCancel() {
  var dlg = $('cancel-dialog'), form = $('cancel-form');
  $('cancel-btn').addEventListener('click', function () {
    if (!S.study) return;
    setText($('cancel-name'), S.study.name);
    $('cancel-token-row').hidden = !!token();
    $('cancel-token').value = '';
    $('cancel-msg').hidden = true;
    $('cancel-go').disabled = false;
    dlg.showModal();
    (token() ? $('cancel-keep') : $('cancel-token')).focus();
  });
  $('cancel-keep').addEventListener('click', function () { dlg.close(); });
  form.addEventListener('submit', function (e) {
    e.preventDefault();
    var msg = $('cancel-msg');
    if (!token()) {
      var v = $('cancel-token').value.trim();
      if (!v) { msg.textContent = 'The token is needed to cancel a study.'; msg.hidden = false; return; }
      setToken(v);
    }
    $('cancel-go').disabled = true;
    api(studyPath(S.study.name) + '/cancel', 'POST').then(function (r) {
      dlg.close();
      if (S.study && r && r.state) { S.study.state = r.state; invalidate('summary'); }
    }).catch(function (err) {
      $('cancel-go').disabled = false;
      var text;
      if (err && (err.status === 401 || err.status === 403)) {
        setToken(null);
        $('cancel-token-row').hidden = false;
        $('cancel-token').value = '';
        $('cancel-token').focus();
        text = err.status === 401 ? 'The token is needed to cancel a study.' : 'That token is wrong.';
      } else if (err && err.status === 409) {
        text = 'The study has already finished: ' + err.message;
      } else {
        text = 'Cannot cancel: ' + (err && err.message ? err.message : 'the tuner cannot be reached');
      }
      msg.textContent = text;
      msg.hidden = false;
    });
  });
}
