/* tuner dashboard — the page's only script (no framework, nothing from the network
 * but this server's /api/). docs/dashboard-page.md describes what it shows.
 *
 * Rules this file keeps:
 *  - every string that comes from the server (study names, parameter names and values,
 *    errors, log lines, event details) reaches the DOM through textContent, a text
 *    node, an SVG <text>/<title> or setAttribute of a non-script attribute; never
 *    innerHTML, never a style attribute (the page's CSP allows neither);
 *  - one EventSource for the selected study; events change the in-memory model and
 *    mark what must be redrawn; redraws happen once per animation frame, and the
 *    heavy charts (canvas) are redrawn at most as often as their cost allows.
 */
(function () {
  'use strict';

  var STATES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'STOPPED', 'CANCELLED'];
  var DONE_STATES = { SUCCEEDED: 1, FAILED: 1, STOPPED: 1 };
  var BAR_ORDER = ['SUCCEEDED', 'STOPPED', 'FAILED', 'CANCELLED', 'RUNNING', 'PENDING'];
  var PAGE_SIZE = 100;
  var LOAD_PAGE = 1000; /* the API's largest page */
  var SVGNS = 'http://www.w3.org/2000/svg';

  function $(id) { return document.getElementById(id); }

  /* ------------------------------------------------------------------ helpers */

  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] != null) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function sv(tag, attrs, parent, text) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) for (var k in attrs) if (attrs[k] != null) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function setText(node, text) {
    text = text == null ? '' : String(text);
    if (node.textContent !== text) node.textContent = text;
  }
  function clamp(v, lo, hi) { return v < lo ? lo : v > hi ? hi : v; }
  function isNum(v) { return typeof v === 'number' && isFinite(v); }
  function trunc(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + '…' : s; }

  function fmtNum(v) {
    if (v == null || v === '') return '–';
    if (typeof v !== 'number') return String(v);
    if (!isFinite(v)) return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e9) return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3).replace(/\.?0+e/, 'e');
    return String(+v.toPrecision(5));
  }
  function fmtParam(v) { return typeof v === 'number' ? fmtNum(v) : v == null ? '–' : String(v); }
  function fmtDur(s) {
    if (!isNum(s)) return '–';
    if (s < 0) s = 0;
    if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + 's';
    var t = Math.round(s), h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), x = t % 60;
    function p2(n) { return (n < 10 ? '0' : '') + n; }
    return h ? h + 'h' + p2(m) + 'm' + p2(x) + 's' : m + 'm' + p2(x) + 's';
  }
  function fmtTime(t, withDate) {
    if (!isNum(t)) return '–';
    var d = new Date(t * 1000);
    function p2(n) { return (n < 10 ? '0' : '') + n; }
    var time = p2(d.getHours()) + ':' + p2(d.getMinutes()) + ':' + p2(d.getSeconds());
    if (!withDate) return time;
    return d.getFullYear() + '-' + p2(d.getMonth() + 1) + '-' + p2(d.getDate()) + ' ' + time;
  }
  function lower(s) { return String(s).toLowerCase(); }

  /* Nice linear ticks over [lo, hi]. */
  function niceTicks(lo, hi, n) {
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
  function niceCeil(v, lo) {
    var t = niceTicks(lo, v, 8);
    var step = t.length > 1 ? t[1] - t[0] : Math.abs(v) || 1;
    return Math.ceil(v / step - 1e-9) * step;
  }

  /* Theme colours come from CSS custom properties, so canvas charts follow the CSS. */
  var C = {};
  function readColours() {
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
  function ramp(t) {
    var stops = C.ramp, k = stops.length - 1;
    var x = clamp(t, 0, 1) * k, i = Math.min(k - 1, Math.floor(x)), f = x - i;
    var a = hexRgb(stops[i]), b = hexRgb(stops[i + 1]);
    return 'rgb(' + Math.round(a[0] + (b[0] - a[0]) * f) + ',' + Math.round(a[1] + (b[1] - a[1]) * f) +
      ',' + Math.round(a[2] + (b[2] - a[2]) * f) + ')';
  }

  /* A canvas sized to its box at the device's pixel ratio; returns its CSS size. */
  function fitCanvas(cv) {
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
  function boxSize(node) {
    var r = node.getBoundingClientRect();
    return { w: Math.round(r.width), h: Math.round(r.height), visible: r.width > 0 && r.height > 0 };
  }

  function showTip(tip, box, x, y, lines) {
    tip.textContent = lines.join('\n');
    tip.hidden = false;
    var bw = box.clientWidth, tw = tip.offsetWidth, th = tip.offsetHeight;
    var left = x + 12, top = y - th - 8;
    if (left + tw > bw) left = Math.max(0, x - tw - 12);
    if (top < 0) top = y + 14;
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }
  function hideTip(tip) { tip.hidden = true; }

  /* --------------------------------------------------------------- the model */

  var S = {
    token: null,
    studies: [],            /* /api/studies entries */
    name: null,             /* selected study */
    study: null,            /* /api/studies/{id}, kept up to date by events */
    studyAt: 0,             /* performance.now() when study.elapsed was read */
    trials: new Map(),      /* number -> trial: every trial of the study */
    curves: new Map(),      /* number -> {trial, state, steps[], vals[], drawn} */
    metric: '',
    loaded: false,
    gen: 0,                 /* bumped on every (re)load; late answers are dropped */
    es: null, esErrored: false, esDown: false,
    buffered: [],           /* events that arrive while the study loads */
    events: 0,              /* events applied (exposed for tests) */
    table: { sort: '-number', states: new Set(), text: '', offset: 0, total: 0, rows: [], seq: 0 },
    open: null,             /* trial number shown in the trial view */
    hover: null,            /* trial number under the pointer in a chart */
    counts: {}, best: null
  };

  /* ------------------------------------------------------------------ token */

  var TOKEN_KEY = 'tuner.dashboard.token';
  /* True when the address brought a token (then removed from it). */
  function readToken() {
    var h = new URLSearchParams(location.hash.slice(1));
    if (h.has('token')) {
      var was = S.token;
      S.token = h.get('token') || null;
      try { if (S.token) sessionStorage.setItem(TOKEN_KEY, S.token); } catch (e) { /* storage off */ }
      h.delete('token');
      var rest = h.toString();
      history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
      return S.token !== was;
    }
    if (!S.token) {
      try { S.token = sessionStorage.getItem(TOKEN_KEY); } catch (e) { S.token = null; }
    }
    return false;
  }
  function setToken(t) {
    S.token = t || null;
    try {
      if (S.token) sessionStorage.setItem(TOKEN_KEY, S.token); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage off */ }
  }

  /* -------------------------------------------------------------------- API */

  function ApiError(status, body) {
    this.status = status;
    this.message = (body && body.error) || ('HTTP ' + status);
    this.hint = body && body.hint;
  }
  function api(path, method) {
    var headers = { Accept: 'application/json' };
    if (S.token) headers.Authorization = 'Bearer ' + S.token;
    return fetch(path, { method: method || 'GET', headers: headers, cache: 'no-store', credentials: 'same-origin' })
      .then(function (r) {
        return r.text().then(function (txt) {
          var body = null;
          try { body = txt ? JSON.parse(txt) : null; } catch (e) { body = null; }
          if (!r.ok) throw new ApiError(r.status, body);
          return body;
        });
      });
  }
  function studyPath(name) { return '/api/studies/' + encodeURIComponent(name); }

  function banner(msg, hint) {
    var b = $('banner');
    if (!msg) { b.hidden = true; return; }
    b.textContent = hint ? msg + '\nhint: ' + hint : msg;
    b.hidden = false;
  }
  function apiFailed(what, err) {
    if (err && err.status === 401) {
      banner(what + ': this dashboard needs its token', 'open the URL the tuner printed (it ends in #token=…)');
    } else if (err && err.status === 403) {
      setToken(null);
      banner(what + ': the token was refused', 'open the URL the tuner printed (it ends in #token=…)');
    } else if (err instanceof ApiError) {
      banner(what + ': ' + err.message, err.hint);
    } else {
      banner(what + ': the tuner cannot be reached', 'is `tuner run` or `tuner serve` still running?');
    }
  }

  /* ------------------------------------------------------------- scheduling */

  var dirty = new Set(), rafPending = false;
  function invalidate() {
    for (var i = 0; i < arguments.length; i++) dirty.add(arguments[i]);
    if (!rafPending) { rafPending = true; requestAnimationFrame(frame); }
  }
  var RENDER = {};
  var ORDER = ['list', 'summary', 'best', 'curves', 'curvesLive', 'curvesHL', 'pc', 'pcLive', 'pcHL', 'table', 'tvCurve'];
  /* The full redraws of the big charts cost the most: at most one a frame. */
  var HEAVY = { best: 1, curves: 1, pc: 1 };
  function frame() {
    rafPending = false;
    var d = dirty;
    dirty = new Set();
    if (d.has('curves')) d.delete('curvesLive');
    if (d.has('pc')) d.delete('pcLive');
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
  function costLimited(key, fn) {
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

  var listFetchAt = 0, listTimer = 0;
  function fetchStudies() {
    listFetchAt = performance.now();
    return api('/api/studies').then(function (r) {
      S.studies = (r && r.studies) || [];
      invalidate('list');
      if (S.esDown && S.name && !S.es) openEvents(S.name, true);
      return S.studies;
    }, function (err) {
      if (S.esDown || !S.es) setConn('down', 'disconnected');
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

  function readRoute() {
    var h = new URLSearchParams(location.hash.slice(1));
    var t = parseInt(h.get('trial') || '', 10);
    return { study: h.get('study'), trial: t > 0 ? t : null };
  }
  function writeRoute(study, trial, push) {
    var h = new URLSearchParams();
    if (study) h.set('study', study);
    if (trial) h.set('trial', String(trial));
    var s = h.toString(), url = location.pathname + location.search + (s ? '#' + s : '');
    if (location.hash.slice(1) === s) return;
    if (push) history.pushState(null, '', url); else history.replaceState(null, '', url);
  }
  function navigate(study, trial) {
    writeRoute(study, trial, true);
    route();
  }
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
    tableRows.forEach(function (r) { r.tr.remove(); });
    tableRows.clear();
    closeTrial(false);
    invalidate('list');
    $('no-study').hidden = !!name;
    $('study-body').hidden = true;
    setText($('top-study'), name ? 'study ' + name : '');
    document.title = name ? name + ' · tuner' : 'tuner dashboard';
    if (!name) { $('no-study').textContent = S.studies.length ? 'Pick a study on the left.' : 'No studies in this store yet.'; return; }
    $('no-study').hidden = false;
    $('no-study').textContent = 'Loading ' + name + '…';
    openEvents(name);
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
      recount();
      invalidate('summary', 'best', 'curves', 'pc', 'list');
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

  function closeEvents() {
    if (S.es) { S.es.close(); S.es = null; }
    S.esDown = false;
  }
  function setConn(state, text) {
    var c = $('conn');
    c.setAttribute('data-state', state);
    setText($('conn-text'), text);
  }
  /* The event stream of the study. EventSource reconnects by itself (the server
   * replays what was missed from Last-Event-ID, and the page reloads the study anyway
   * once the stream is back). After three failures in a row, or when the study is
   * over, the page stops trying and looks again with the 10 s refresh of the study
   * list: once the tuner answers, the stream is opened again. */
  function openEvents(name, resync) {
    closeEvents();
    var url = '/api/events?study=' + encodeURIComponent(name);
    if (S.token) url += '&token=' + encodeURIComponent(S.token);
    var es = new EventSource(url);
    S.es = es;
    S.esErrored = !!resync;
    S.esDown = false;
    var failures = 0;
    setConn('reconnecting', 'connecting…');
    es.onopen = function () {
      if (S.es !== es) return;
      failures = 0;
      setConn('live', 'live');
      if (S.esErrored) {
        /* events may have been missed while disconnected: reload the study */
        S.esErrored = false;
        resyncStudy();
      }
    };
    es.onerror = function () {
      if (S.es !== es) return;
      S.esErrored = true;
      failures++;
      var over = S.study && !(S.study.state === 'RUNNING' || S.study.state === 'CREATED');
      if (es.readyState === 2 || failures >= 3 || over) {
        es.close();
        S.es = null;
        S.esDown = true;
        setConn('down', 'disconnected');
      } else {
        setConn('reconnecting', 'reconnecting…');
      }
    };
    ['trial', 'measurement', 'study'].forEach(function (kind) {
      es.addEventListener(kind, function (e) {
        if (S.es !== es) return;
        var data;
        try { data = JSON.parse(e.data); } catch (x) { return; }
        if (!S.loaded) { S.buffered.push([kind, data]); return; }
        applyEvent(kind, data);
      });
    });
  }
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
      if (isLive(was) && !isLive(t.state)) { curvesAdd.push(cur); invalidate('curvesLive'); }
      else invalidate('curves');
    }
    if (!old || old.state !== t.state || old.value !== t.value) {
      invalidate('summary', 'best');
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
      if (!isLive(cur.state)) curvesAdd.push(cur);
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

  /* ---------------------------------------------------------------- summary */

  function recount() {
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

  function maxTrials() {
    var m = S.study && S.study.max_trials;
    return isNum(m) ? m : S.trials.size;
  }

  RENDER.summary = function () {
    var st = S.study;
    if (!st) return;
    var before = S.best && S.best.trial;
    recount();
    if ((S.best && S.best.trial) !== before) {
      /* the best-so-far mark in the table moves */
      tableRows.forEach(function (r) { r.sig = ''; });
      invalidate('table');
    }
    setText($('study-name'), st.name);
    var badge = $('study-state');
    setText(badge, st.state);
    badge.className = 'badge st-' + st.state;
    setText($('study-goal'), (st.goal === 'MINIMIZE' ? 'minimize ' : 'maximize ') + (st.metric || S.metric));
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

  function renderElapsed() {
    var st = S.study;
    if (!st) return;
    var e = isNum(st.elapsed) ? st.elapsed : (isNum(st.updated) && isNum(st.created) ? st.updated - st.created : null);
    if (e != null && st.state === 'RUNNING') e += (performance.now() - S.studyAt) / 1000;
    setText($('elapsed'), fmtDur(e));
  }

  /* Once a second: the elapsed time and the duration of running trials on screen. */
  function tick() {
    if (document.hidden || !S.loaded) return;
    renderElapsed();
    tableRows.forEach(function (r, n) {
      var t = S.trials.get(n);
      if (t && t.state === 'RUNNING') setText(r.cells.duration, fmtDur(liveDuration(t)));
    });
    if (S.open != null) {
      var t = S.trials.get(S.open);
      if (t && t.state === 'RUNNING') renderTrialFacts(t);
    }
  }
  function liveDuration(t) {
    if (t.state === 'RUNNING' && isNum(t.duration)) return t.duration + (performance.now() - t._recv) / 1000;
    if (t.state === 'RUNNING' && isNum(t.started)) return Date.now() / 1000 - t.started;
    return t.duration;
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
  function highlightBest() {
    if (!bestState) return;
    var n = S.hover != null ? S.hover : S.open, hl = bestState.hl;
    var t = n != null ? S.trials.get(n) : null;
    if (t && isNum(t.value) && (t.state === 'SUCCEEDED' || t.state === 'STOPPED')) {
      hl.setAttribute('cx', bestState.sx(t.number).toFixed(1));
      hl.setAttribute('cy', bestState.sy(t.value).toFixed(1));
      hl.setAttribute('visibility', 'visible');
    } else hl.setAttribute('visibility', 'hidden');
  }

  /* Axes with gridlines in an SVG; y ticks with sy(), x ticks with sx(). */
  function drawAxes(svg, m, W, H, yTicks, sy, xTicks, sx, xTitle, yTitle, xFmt) {
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

  function setHover(n) {
    if (S.hover === n) return;
    S.hover = n;
    highlightBest();
    invalidate('curvesHL', 'pcHL');
  }

  /* ------------------------------------------------------------ curves chart */

  /* Two canvases: the base layer holds finished curves (many, drawn rarely), the
   * live layer on top the running ones (few, redrawn whenever they grow). A trial
   * that finishes is drawn onto the base layer by itself; the base layer is redrawn
   * in full only when the scales change (a point outside them) or on resize. */
  function newCurve(n, state) { return { trial: n, state: state || 'RUNNING', steps: [], vals: [], drawn: 0 }; }
  /* Adds (step, value); a step seen before is replaced. True when appended at the end. */
  function addPoint(c, step, v) {
    var k = c.steps.length;
    if (!k || step > c.steps[k - 1]) { c.steps.push(step); c.vals.push(v); return true; }
    var lo = 0, hi = k;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (c.steps[mid] < step) lo = mid + 1; else hi = mid; }
    if (c.steps[lo] === step) c.vals[lo] = v; else { c.steps.splice(lo, 0, step); c.vals.splice(lo, 0, v); }
    return false;
  }
  /* Lines at most one device pixel wide are rasterised by a much faster path (10x in
   * Chromium's software canvas), which matters with thousands of them. */
  function hairline(n) { return n > 500 ? 1 / (window.devicePixelRatio || 1) : 1; }
  function isLive(state) { return state === 'RUNNING' || state === 'PENDING'; }

  var CURVE_GROUPS = ['STOPPED', 'CANCELLED', 'FAILED', 'SUCCEEDED'];
  function curveGroup(state) { return CURVE_GROUPS.indexOf(state) >= 0 ? state : 'SUCCEEDED'; }
  var cv = null;          /* scales of the last full drawing */
  var curvesAdd = [];     /* finished curves with points not yet on the base layer */
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
  function pcTrialChanged(old, t) {
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

  /* ------------------------------------------------------------------ table */

  var tableRows = new Map(); /* trial number -> {tr, cells} */
  var SORTABLE = { number: 'number', state: 'state', value: 'value', duration: 'duration' };
  var columns = [];

  function buildTableHead() {
    var head = $('trial-head');
    clear(head);
    tableRows.forEach(function (r) { r.tr.remove(); });
    tableRows.clear();
    var params = (S.study && S.study.params) || [];
    columns = [{ key: 'number', label: 'Trial', sort: 'number', num: true },
      { key: 'state', label: 'State', sort: 'state' },
      { key: 'value', label: S.metric || 'objective', sort: 'value', num: true }];
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
      if (c.param) th.setAttribute('title', c.label);
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

  function buildStateFilter() {
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
  function tableChanged() {
    if (S.table.text) { invalidate('table'); return; }
    if (tableTimer || tableInFlight) { tableAgain = true; return; }
    var wait = Math.max(0, tableQueryAt + 1000 - performance.now());
    tableTimer = setTimeout(function () { tableTimer = 0; queryTable(false); }, wait);
  }
  function queryTable(now) {
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
    var sig = t.state + '|' + t.value + '|' + t.duration + '|' + t.last_step + '|' + t.restarts + '|' + (S.best && S.best.trial === t.number) + '|' + (S.open === t.number);
    if (sig === r.sig) return;
    r.sig = sig;
    var c = r.cells;
    setText(c.badge, t.state);
    c.badge.className = 'badge st-' + t.state;
    setText(c.value, t.value == null ? '–' : fmtNum(t.value));
    c.value.classList.toggle('best-mark', !!(S.best && S.best.trial === t.number));
    if (S.best && S.best.trial === t.number) c.value.setAttribute('title', 'best so far'); else c.value.removeAttribute('title');
    columns.forEach(function (col) {
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
  function updateRow(t) {
    var r = tableRows.get(t.number);
    if (r) fillRow(r, t);
  }

  function bindTable() {
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

  /* ------------------------------------------------------------- trial view */

  var tv = { detail: null, replica: null, logTimer: 0, detailTimer: 0, lastFocus: null, gen: 0 };

  function openTrial(n) {
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
    invalidate('tvCurve', 'curvesHL', 'pcHL');
    highlightBest();
    tableRows.forEach(function (r, k) { if (k === n || r.tr.getAttribute('aria-current')) { r.sig = ''; } });
    invalidate('table');
    $('tv-title').focus();
    refreshTrialView(true);
  }
  function closeTrial(push) {
    if (S.open == null && $('trial-view').hidden) return;
    S.open = null;
    tv.gen++;
    clearTimeout(tv.logTimer);
    clearTimeout(tv.detailTimer);
    $('trial-view').hidden = true;
    tableRows.forEach(function (r) { r.sig = ''; });
    invalidate('table', 'curvesHL', 'pcHL');
    highlightBest();
    if (push) {
      writeRoute(S.name, null, true);
      if (tv.lastFocus && document.contains(tv.lastFocus)) tv.lastFocus.focus();
    }
  }

  function refreshTrialView(withLog) {
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
  function trialViewChanged(t) {
    renderTrialHeader(t);
    renderTrialFacts(t);
    if (tv.detailTimer) return;
    tv.detailTimer = setTimeout(function () { tv.detailTimer = 0; refreshTrialView(false); }, 1000);
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
    [[S.metric, t.value == null ? '–' : fmtNum(t.value)], ['duration', fmtDur(liveDuration(t))],
      ['last step', t.last_step == null ? '–' : fmtNum(t.last_step)],
      ['started', fmtTime(t.started, true)], ['finished', fmtTime(t.finished, true)],
      ['attempts / restarts', (t.attempts == null ? '–' : t.attempts) + ' / ' + (t.restarts == null ? '–' : t.restarts)]
    ].forEach(function (f) {
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

  function bindTrialView() {
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

  /* ----------------------------------------------------------------- cancel */

  function bindCancel() {
    var dlg = $('cancel-dialog'), form = $('cancel-form');
    $('cancel-btn').addEventListener('click', function () {
      if (!S.study) return;
      setText($('cancel-name'), S.study.name);
      $('cancel-token-row').hidden = !!S.token;
      $('cancel-token').value = '';
      $('cancel-msg').hidden = true;
      $('cancel-go').disabled = false;
      dlg.showModal();
      (S.token ? $('cancel-keep') : $('cancel-token')).focus();
    });
    $('cancel-keep').addEventListener('click', function () { dlg.close(); });
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var msg = $('cancel-msg');
      if (!S.token) {
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

  /* ------------------------------------------------------------------ start */

  function start() {
    readColours();
    readToken();
    bindBestHover();
    bindCurvesHover();
    bindPcHover();
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
      var ro = new ResizeObserver(function () { invalidate('best', 'curves', 'pc', 'tvCurve'); });
      ['best-chart-box', 'curves-box', 'pc-box'].forEach(function (id) { ro.observe($(id)); });
    } else {
      window.addEventListener('resize', function () { invalidate('best', 'curves', 'pc', 'tvCurve'); });
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
})();
