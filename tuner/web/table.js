/* table.js — the table of trials: its columns (one per parameter), sorting, the state
 * and text filters, paging, and rows that follow the trials' events.
 *
 * 100 rows a page, paged and sorted by the server unless a text filter is typed (see
 * queryTable). Rows are kept by trial number and refilled only when what they show
 * changed (r.sig). What the table offers is in docs/dashboard-page.md, "Trials".
 */
import { $, el, clear, setText, fmtNum, fmtParam, fmtDur, lower } from './util.js';
import { api, studyPath, apiFailed } from './api.js';
import { S, STATES, RENDER, invalidate, liveDuration, navigate } from './model.js';

var PAGE_SIZE = 100;
var tableRows = new Map(); /* trial number -> {tr, cells} */
var columns = [];         /* {key, label, sort, num, param, th} in order */

/* Takes every row off the page. */
export function removeRows() {
  tableRows.forEach(function (r) { r.tr.remove(); });
  tableRows.clear();
}
/* Makes the next 'table' redraw fill rows anew (their marks depend on S.best and
 * S.open): every row, or with n only trial n's and the one marked open. */
export function refillRows(n) {
  tableRows.forEach(function (r, k) {
    if (n === undefined || k === n || r.tr.getAttribute('aria-current')) r.sig = '';
  });
}
/* Once a second: the duration of the running trials on the page. */
export function tickRows() {
  tableRows.forEach(function (r, n) {
    var t = S.trials.get(n);
    if (t && t.state === 'RUNNING') setText(r.cells.duration, fmtDur(liveDuration(t)));
  });
}

export function buildTableHead() {
  var head = $('trial-head');
  clear(head);
  removeRows();
  var params = (S.study && S.study.params) || [];
  columns = [{ key: 'number', label: 'Trial', sort: 'number', num: true },
    { key: 'state', label: 'State', sort: 'state' },
    { key: 'value', label: S.metric || 'objective', sort: 'value', num: true }];
  /* a study of several metrics: the others after the first (the objective), unsorted */
  var metrics = (S.study && Array.isArray(S.study.metrics)) ? S.study.metrics : [];
  metrics.forEach(function (m, i) {
    if (i > 0 && m) columns.push({ key: 'm:' + i, label: String(m.metricId), metric: i, num: true });
  });
  params.forEach(function (p) { columns.push({ key: 'p:' + p.name, label: p.name, param: p.name, num: p.type !== 'CATEGORICAL' }); });
  columns.push({ key: 'last_step', label: 'Step', num: true },
    { key: 'duration', label: 'Duration', sort: 'duration', num: true },
    { key: 'restarts', label: 'Restarts', num: true });
  columns.forEach(function (c) {
    var th = el('th', { scope: 'col', 'class': c.num ? 'num' : null }, head);
    if (c.sort) {
      var b = el('button', { type: 'button', title: 'sort by ' + c.label }, th, c.label);
      b.addEventListener('click', function () { sortBy(c.sort); });
      c.th = th;
    } else th.textContent = c.label;
    if (c.param || c.metric) th.setAttribute('title', c.label);
  });
  markSort();
}
function markSort() {
  var s = S.table.sort, key = s.replace(/^-/, '');
  columns.forEach(function (c) {
    if (!c.th) return;
    if (c.sort === key) c.th.setAttribute('aria-sort', s[0] === '-' ? 'descending' : 'ascending');
    else c.th.removeAttribute('aria-sort');
  });
}
function sortBy(key) {
  var cur = S.table.sort;
  if (cur.replace(/^-/, '') === key) {
    S.table.sort = cur[0] === '-' ? key : '-' + key;
  } else {
    S.table.sort = key === 'value' && S.study && S.study.goal !== 'MINIMIZE' ? '-value' : key;
  }
  S.table.offset = 0;
  markSort();
  queryTable(true);
}

export function buildStateFilter() {
  var box = $('state-filter');
  if (box.childNodes.length) return;
  STATES.forEach(function (s) {
    var lab = el('label', null, box);
    var cb = el('input', { type: 'checkbox', value: s }, lab);
    lab.appendChild(document.createTextNode(' ' + s.toLowerCase()));
    cb.addEventListener('change', function () {
      if (cb.checked) S.table.states.add(s); else S.table.states.delete(s);
      S.table.offset = 0;
      queryTable(true);
    });
  });
}

/* The table shows one page. Without a text filter the page comes from the API
 * (sorted, filtered by state and paged on the server); with one, it is computed
 * here from every trial the page holds (the same sort keys). Either way the cells
 * show the newest copy of each trial, which events keep up to date. */
var tableQueryAt = 0, tableTimer = 0, tableInFlight = false, tableAgain = false;
export function tableChanged() {
  if (S.table.text) { invalidate('table'); return; }
  if (tableTimer || tableInFlight) { tableAgain = true; return; }
  var wait = Math.max(0, tableQueryAt + 1000 - performance.now());
  tableTimer = setTimeout(function () { tableTimer = 0; queryTable(false); }, wait);
}
export function queryTable(now) {
  if (!S.loaded) return;
  var T = S.table;
  if (T.text) { invalidate('table'); return; }
  if (!now && tableInFlight) { tableAgain = true; return; }
  var seq = ++T.seq, gen = S.gen;
  var q = 'offset=' + T.offset + '&limit=' + PAGE_SIZE + '&sort=' + encodeURIComponent(T.sort);
  if (T.states.size) q += '&state=' + Array.from(T.states).join(',');
  tableInFlight = true;
  tableQueryAt = performance.now();
  api(studyPath(S.name) + '/trials?' + q).then(function (r) {
    if (seq !== T.seq || gen !== S.gen) return;
    T.total = r.total || 0;
    T.rows = (r.trials || []).map(function (t) {
      var have = S.trials.get(t.number);
      if (!have) { t._recv = performance.now(); S.trials.set(t.number, t); have = t; }
      return t.number;
    });
    if (T.offset > 0 && T.offset >= T.total) { T.offset = Math.max(0, Math.floor((T.total - 1) / PAGE_SIZE) * PAGE_SIZE); queryTable(true); return; }
    invalidate('table');
  }).catch(function (err) {
    if (seq === T.seq) apiFailed('cannot list trials', err);
  }).then(function () {
    tableInFlight = false;
    if (tableAgain) { tableAgain = false; tableChanged(); }
  });
}

function matches(t, terms) {
  var hay = ['#' + t.number, String(t.number), lower(t.state), t.value == null ? '' : fmtNum(t.value), lower(t.error || '')];
  for (var k in (t.params || {})) hay.push(lower(k) + '=' + lower(fmtParam(t.params[k])), lower(String(t.params[k])));
  var s = hay.join(' ');
  return terms.every(function (w) { return s.indexOf(w) >= 0; });
}
function clientPage() {
  var T = S.table, terms = lower(T.text).split(/\s+/).filter(Boolean);
  var key = T.sort.replace(/^-/, ''), desc = T.sort[0] === '-';
  var list = [];
  S.trials.forEach(function (t) {
    if (T.states.size && !T.states.has(t.state)) return;
    if (matches(t, terms)) list.push(t);
  });
  list.sort(function (a, b) {
    var x = key === 'duration' ? liveDuration(a) : a[key], y = key === 'duration' ? liveDuration(b) : b[key];
    if (x == null && y == null) return a.number - b.number;
    if (x == null) return 1; /* missing values last either way */
    if (y == null) return -1;
    var c = x < y ? -1 : x > y ? 1 : 0;
    if (desc) c = -c;
    return c || a.number - b.number;
  });
  T.total = list.length;
  if (T.offset >= T.total) T.offset = Math.max(0, Math.floor((T.total - 1) / PAGE_SIZE) * PAGE_SIZE);
  T.rows = list.slice(T.offset, T.offset + PAGE_SIZE).map(function (t) { return t.number; });
}

RENDER.table = function () {
  var T = S.table, body = $('trial-body');
  if (T.text) clientPage();
  var keep = new Set(T.rows);
  tableRows.forEach(function (r, n) { if (!keep.has(n)) { r.tr.remove(); tableRows.delete(n); } });
  var prev = null;
  T.rows.forEach(function (n) {
    var t = S.trials.get(n);
    if (!t) return;
    var r = tableRows.get(n) || makeRow(n);
    fillRow(r, t);
    var want = prev ? prev.nextSibling : body.firstChild;
    if (want !== r.tr) body.insertBefore(r.tr, want);
    prev = r.tr;
  });
  $('table-empty').hidden = T.rows.length > 0;
  var from = T.total ? T.offset + 1 : 0, to = Math.min(T.total, T.offset + T.rows.length);
  setText($('page-info'), from + '–' + to + ' of ' + T.total + (T.text ? ' matching' : ''));
  $('page-prev').disabled = T.offset <= 0;
  $('page-next').disabled = T.offset + PAGE_SIZE >= T.total;
  $('trial-table').setAttribute('data-total', String(T.total));
  $('trial-table').setAttribute('data-rows', String(T.rows.length));
};

function makeRow(n) {
  var tr = el('tr', { 'data-trial': String(n) });
  var cells = {};
  columns.forEach(function (c) {
    var td = el('td', { 'class': (c.num ? 'num' : '') + (c.param ? ' param' : '') }, tr);
    if (c.key === 'number') {
      var b = el('button', { type: 'button', 'class': 'linklike', 'aria-label': 'open trial ' + n }, td, '#' + n);
      b.addEventListener('click', function (e) { e.stopPropagation(); navigate(S.name, n); });
    }
    if (c.key === 'state') { cells.badge = el('span', { 'class': 'badge' }, td); }
    cells[c.key] = td;
  });
  tr.addEventListener('click', function () { navigate(S.name, n); });
  var r = { tr: tr, cells: cells, sig: '' };
  tableRows.set(n, r);
  return r;
}
function fillRow(r, t) {
  var sig = t.state + '|' + t.value + '|' + t.values + '|' + t.duration + '|' + t.last_step + '|' + t.restarts + '|' + (S.best && S.best.trial === t.number) + '|' + (S.open === t.number);
  if (sig === r.sig) return;
  r.sig = sig;
  var c = r.cells;
  setText(c.badge, t.state);
  c.badge.className = 'badge st-' + t.state;
  setText(c.value, t.value == null ? '–' : fmtNum(t.value));
  c.value.classList.toggle('best-mark', !!(S.best && S.best.trial === t.number));
  if (S.best && S.best.trial === t.number) c.value.setAttribute('title', 'best so far'); else c.value.removeAttribute('title');
  columns.forEach(function (col) {
    if (col.metric) {
      var mv = Array.isArray(t.values) ? t.values[col.metric] : null;
      setText(c[col.key], typeof mv === 'number' ? fmtNum(mv) : '–');
    }
    if (!col.param) return;
    var v = t.params ? t.params[col.param] : null;
    var inactive = t.params && !(col.param in t.params); /* a conditional parameter this trial does not have */
    var txt = inactive ? '' : fmtParam(v);
    setText(c[col.key], txt);
    c[col.key].setAttribute('title', inactive ? 'inactive for this trial' : txt);
  });
  setText(c.last_step, t.last_step == null ? '–' : fmtNum(t.last_step));
  setText(c.duration, fmtDur(liveDuration(t)));
  setText(c.restarts, t.restarts == null ? '–' : t.restarts);
  if (t.error) r.tr.setAttribute('title', t.error); else r.tr.removeAttribute('title');
  r.tr.setAttribute('data-state', t.state);
  if (S.open === t.number) r.tr.setAttribute('aria-current', 'true'); else r.tr.removeAttribute('aria-current');
}
export function updateRow(t) {
  var r = tableRows.get(t.number);
  if (r) fillRow(r, t);
}

export function bindTable() {
  $('page-prev').addEventListener('click', function () {
    S.table.offset = Math.max(0, S.table.offset - PAGE_SIZE);
    queryTable(true);
  });
  $('page-next').addEventListener('click', function () {
    if (S.table.offset + PAGE_SIZE < S.table.total) S.table.offset += PAGE_SIZE;
    queryTable(true);
  });
  var timer = 0;
  $('text-filter').addEventListener('input', function (e) {
    clearTimeout(timer);
    var v = e.target.value.trim();
    timer = setTimeout(function () {
      var was = S.table.text;
      S.table.text = v;
      S.table.offset = 0;
      if (v || was) queryTable(true);
    }, 150);
  });
}
