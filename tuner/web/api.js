/* api.js — the dashboard's client of the tuner: the token, requests to /api/ and their
 * errors (the banner), and the study's event stream (EventSource) with its reconnecting.
 *
 * The token comes from the address (#token=..., then removed from it) or the tab's
 * sessionStorage; it goes with every request as `Authorization: Bearer` and with the
 * stream as ?token= (docs/dashboard-page.md, "The token"). The API is in
 * docs/dashboard.md. This module knows nothing of the page's model: what an event does
 * is the caller's (app.js), passed to openEvents.
 */
import { $, setText } from './util.js';

/* ------------------------------------------------------------------ token */

var TOKEN_KEY = 'tuner.dashboard.token';
var tok = null; /* the token, or null when the page has none */

/* The token, or null. */
export function token() { return tok; }
/* Takes the token from the address, else from sessionStorage. True when the address
 * brought a token (then removed from it) that differs from the one held. */
export function readToken() {
  var h = new URLSearchParams(location.hash.slice(1));
  if (h.has('token')) {
    var was = tok;
    tok = h.get('token') || null;
    try { if (tok) sessionStorage.setItem(TOKEN_KEY, tok); } catch (e) { /* storage off */ }
    h.delete('token');
    var rest = h.toString();
    history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
    return tok !== was;
  }
  if (!tok) {
    try { tok = sessionStorage.getItem(TOKEN_KEY); } catch (e) { tok = null; }
  }
  return false;
}
/* Holds t (null or '' forgets the token), in sessionStorage too. */
export function setToken(t) {
  tok = t || null;
  try {
    if (tok) sessionStorage.setItem(TOKEN_KEY, tok); else sessionStorage.removeItem(TOKEN_KEY);
  } catch (e) { /* storage off */ }
}

/* -------------------------------------------------------------------- API */

/* A reply other than 2xx: the HTTP status and the API's {error, hint}. */
function ApiError(status, body) {
  this.status = status;
  this.message = (body && body.error) || ('HTTP ' + status);
  this.hint = body && body.hint;
}
/* A promise of the JSON body of `method path` (GET by default); rejected with an
 * ApiError, or with fetch's TypeError when the tuner cannot be reached. */
export function api(path, method) {
  var headers = { Accept: 'application/json' };
  if (tok) headers.Authorization = 'Bearer ' + tok;
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
export function studyPath(name) { return '/api/studies/' + encodeURIComponent(name); }

/* The banner under the header: msg and a hint line; no msg hides it. */
export function banner(msg, hint) {
  var b = $('banner');
  if (!msg) { b.hidden = true; return; }
  b.textContent = hint ? msg + '\nhint: ' + hint : msg;
  b.hidden = false;
}
/* Says in the banner why `what` failed; a refused token is forgotten. */
export function apiFailed(what, err) {
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

/* ------------------------------------------------------------- live events */

var stream = {
  es: null,         /* the open EventSource, or null */
  errored: false,   /* it failed since it last opened: reload the study when it opens */
  down: false       /* it gave up (see openEvents) and waits to be opened again */
};

/* True when the stream gave up; then none is open. */
export function eventsDown() { return stream.down; }
/* True when a stream is open (or connecting). */
export function eventsOpen() { return stream.es !== null; }

export function closeEvents() {
  if (stream.es) { stream.es.close(); stream.es = null; }
  stream.down = false;
}
/* The connection indicator in the header: state is idle, live, reconnecting or down. */
export function setConn(state, text) {
  var c = $('conn');
  c.setAttribute('data-state', state);
  setText($('conn-text'), text);
}
/* The event stream of the study. EventSource reconnects by itself (the server
 * replays what was missed from Last-Event-ID, and the page reloads the study anyway
 * once the stream is back). After three failures in a row, or when the study is
 * over, the page stops trying and looks again with the 10 s refresh of the study
 * list: once the tuner answers, the stream is opened again.
 *
 * resync: true when events may already have been missed (reload once open). `on` has
 * event(kind, data) for each `trial`, `measurement` and `study` event; resync(), called
 * when the stream opens after a failure; over(), true when the study has ended. */
export function openEvents(name, resync, on) {
  closeEvents();
  var url = '/api/events?study=' + encodeURIComponent(name);
  if (tok) url += '&token=' + encodeURIComponent(tok);
  var es = new EventSource(url);
  stream.es = es;
  stream.errored = !!resync;
  stream.down = false;
  var failures = 0;
  setConn('reconnecting', 'connecting…');
  es.onopen = function () {
    if (stream.es !== es) return;
    failures = 0;
    setConn('live', 'live');
    if (stream.errored) {
      /* events may have been missed while disconnected: reload the study */
      stream.errored = false;
      on.resync();
    }
  };
  es.onerror = function () {
    if (stream.es !== es) return;
    stream.errored = true;
    failures++;
    if (es.readyState === 2 || failures >= 3 || on.over()) {
      es.close();
      stream.es = null;
      stream.down = true;
      setConn('down', 'disconnected');
    } else {
      setConn('reconnecting', 'reconnecting…');
    }
  };
  ['trial', 'measurement', 'study'].forEach(function (kind) {
    es.addEventListener(kind, function (e) {
      if (stream.es !== es) return;
      var data;
      try { data = JSON.parse(e.data); } catch (x) { return; }
      on.event(kind, data);
    });
  });
}
