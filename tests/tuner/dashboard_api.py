#!/usr/bin/env python3
"""dashboard_api.py -- the dashboard's HTTP API against a running tuner, end to end.

    dashboard_api.py BIN_DIR WORKDIR        (BIN_DIR holds tuner)

Runs real studies of small fake replicas (a Python script written into WORKDIR that
reports a learning curve by the cloudml-hypertune file protocol and prints a planted
<script> tag and invalid UTF-8 into its log), with the dashboard on a free loopback
port, and checks what docs/dashboard.md promises: every endpoint's status and JSON
shape, paging, sorting and filters, errors (400, 401, 403, 404, 405, 409, 413, 417, 431,
501, 505), path traversal, the token (its file and mode, header and query forms, constant-time
compare aside), the live event stream (trial, measurement and study events within a
second of the store, Last-Event-ID), cancelling, ports in use, non-loopback addresses,
`tuner serve`, response headers, the Host rules, HEAD (headers only, on a kept-alive
connection), request framing (a body's length or chunks judged at once: 413, 400, 431,
100 Continue; a refusal pipelined after a good request; a refused client that keeps
sending), escaping of planted markup, SIGPIPE, the connection cap (a place given back
when a connection closes), slow clients (Slowloris, against a 2 s request deadline set
with TUNER_DASHBOARD_REQUEST_TIMEOUT) and bench_dashfill's message for a missing study.
Python standard library only.

Each check prints "ok NAME" or "FAIL NAME: why"; the last line is "N passed, N
failed"; the exit status is non-zero when anything failed.
"""
import http.client
import json
import os
import re
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from free_ports import free_ports  # noqa: E402 (tests/free_ports.py)

BIN, WORK = sys.argv[1], sys.argv[2]
TUNER = os.path.join(BIN, "tuner")
PLANT = "<script>alert('xss')</script>"
LOG_PLANT = "<script>alert('log')</script>"
passed = failed = 0


def check(name, cond, why=""):
    global passed, failed
    if cond:
        print("ok", name)
        passed += 1
    else:
        print("FAIL %s: %s" % (name, why))
        failed += 1
    sys.stdout.flush()
    return cond


def free_port():
    return free_ports(1)[0]


def request(port, method, path, headers=None, body=None, timeout=10):
    """(status, headers with lower-case names, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, data


def get_json(port, path, headers=None):
    status, hdrs, data = request(port, "GET", path, headers)
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        doc = None
    return status, hdrs, doc, data


def raw(port, data, timeout=5, most=20000):
    """Sends bytes on a fresh connection; returns what comes back until close or timeout
    (or, when most is not None, once past the headers and most bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        s.sendall(data)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            if most is not None and b"\r\n\r\n" in out and len(out) > most:
                break
    except (socket.timeout, ConnectionResetError, BrokenPipeError):
        pass
    s.close()
    return out


def status_of(resp):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", resp)
    return int(m.group(1)) if m else None


def header_map(head):
    """A response's headers (bytes up to the empty line) as {lower-case name: value}."""
    lines = head.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}


def responses(data):
    """Splits what a connection received into [(status, headers, body)] by Content-Length;
    a reply cut short comes last with status None."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        h = header_map(head + sep)
        n = int(h.get("content-length", "0"))
        if not sep or len(rest) < n:
            out.append((None, h, data))
            break
        out.append((status_of(head), h, rest[:n]))
        data = rest[n:]
    return out


# The headers every reply carries, evhttp's and those the server writes itself (the
# gate's refusals, the cap's 503) alike: a JSON error must have the values of the API's.
SECURITY = ("content-type", "x-content-type-options", "referrer-policy", "x-frame-options",
            "content-security-policy", "cache-control")


def security_differs(hdrs, want):
    """The names of SECURITY whose value in hdrs is not want's."""
    return [k for k in SECURITY if hdrs.get(k) != want.get(k)]


def wait_for(cond, seconds, step=0.05):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


class Stream(threading.Thread):
    """An SSE client: collects (event, id, data, time received) until the stream ends."""

    def __init__(self, port, study, headers=None):
        super().__init__(daemon=True)
        self.port, self.study, self.headers = port, study, headers or {}
        self.events, self.comments, self.status, self.ctype = [], [], None, None
        self.ended = False

    def run(self):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            c.request("GET", "/api/events?study=" + self.study,
                      headers=dict({"Accept": "text/event-stream"}, **self.headers))
            r = c.getresponse()
            self.status, self.ctype = r.status, r.getheader("Content-Type")
            ev = {}
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.decode("utf-8").rstrip("\n")
                if line == "":
                    if "data" in ev:
                        ev["t"] = time.time()
                        self.events.append(ev)
                    ev = {}
                elif line.startswith(":"):
                    self.comments.append(line)
                else:
                    key, _, value = line.partition(":")
                    ev[key] = value[1:] if value.startswith(" ") else value
        except (OSError, http.client.HTTPException):
            pass
        self.ended = True

    def of(self, kind):
        return [e for e in self.events if e.get("event") == kind]


# --- set-up: a fake replica and specs ---------------------------------------------
os.makedirs(WORK, exist_ok=True)
os.chdir(WORK)
DB = os.path.join(WORK, "tuner.db")
for f in os.listdir(WORK):
    if f.startswith("tuner.db") or f.endswith(".json"):
        os.remove(os.path.join(WORK, f))
subprocess.run(["rm", "-rf", os.path.join(WORK, "runs")])
env = dict(os.environ, TUNER_DB=DB)

REPLICA = os.path.join(WORK, "replica.py")
with open(REPLICA, "w") as f:
    f.write(r'''import json, os, sys, time
a = dict(x[2:].split("=", 1) for x in sys.argv[1:] if x.startswith("--") and "=" in x)
x, steps, pause = float(a["x"]), int(a.get("steps", "5")), float(a.get("pause", "0.1"))
print("replica of trial %s with opt=%s" % (os.environ.get("CLOUD_ML_TRIAL_ID"), a.get("opt")))
print("planted: <script>alert('log')</script>")
sys.stdout.flush()
sys.stdout.buffer.write(b"bad utf-8: \xff\xfe\xc3 end\n")
for i in range(300):
    print("line %d" % i)
sys.stdout.flush()
path, recs = os.environ["CLOUD_ML_HP_METRIC_FILE"], []
for step in range(1, steps + 1):
    recs.append({"global_step": str(step), "score": str(x * step / steps),
                 "timestamp": time.time(), "trial": os.environ.get("CLOUD_ML_TRIAL_ID", "")})
    with open(path + ".tmp", "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))
    os.replace(path + ".tmp", path)
    time.sleep(pause)
''')


def spec(name, trials, parallel, command):
    doc = {"jobId": name, "trainingInput": {
        "scaleTier": "BASIC", "jobDir": "runs/" + name, "command": command,
        "hyperparameters": {
            "goal": "MAXIMIZE", "hyperparameterMetricTag": "score", "maxTrials": trials,
            "maxParallelTrials": parallel, "algorithm": "RANDOM_SEARCH",
            "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0.1, "maxValue": 1},
                       {"parameterName": "opt", "type": "CATEGORICAL",
                        "categoricalValues": ["sgd", PLANT]}]}}}
    with open(name + ".json", "w") as f:
        json.dump(doc, f)
    return name + ".json"


def run_tuner(args, **kw):
    return subprocess.run([TUNER] + args, env=env, capture_output=True, text=True, **kw)


def start(args, err_path):
    return subprocess.Popen([TUNER] + args, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(err_path, "w"))


def wait_port(port, seconds=10):
    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False
    return wait_for(up, seconds)


# --- A. a study run with the dashboard: token file, live events ----------------------
port = free_port()
spec("dash", 8, 3, ["python3", REPLICA, "--steps=6", "--pause=0.12"])
run = start(["run", "dash.json", "--seed=7", "--poll=0.1", "--cores=8", "--oversubscribe",
             "--dashboard=127.0.0.1:%d" % port], "dash.err")
token_file = os.path.join(WORK, "runs/dash/.dashboard-token")
check("run_token_file_written", wait_for(lambda: os.path.exists(token_file), 15), token_file)
check("run_listening", wait_port(port), "port %d" % port)
stream = Stream(port, "dash")
stream.start()
token = open(token_file).read().strip() if os.path.exists(token_file) else ""
mode = stat.S_IMODE(os.stat(token_file).st_mode) if os.path.exists(token_file) else None
check("token_file_mode_0600", mode == 0o600, oct(mode or 0))
check("token_128_bits_hex", re.fullmatch(r"[0-9a-f]{32}", token) is not None, token)
status, _, doc, _ = get_json(port, "/api/studies")
check("run_lists_its_study", status == 200 and doc and doc["studies"][0]["name"] == "dash",
      str(doc)[:200])
rc = run.wait(timeout=60)
check("run_exit0", rc == 0, "exit %s; %s" % (rc, open("dash.err").read()[-500:]))
err_text = open("dash.err").read()
check("run_prints_url", "dashboard: http://127.0.0.1:%d/#token=%s" % (port, token) in err_text,
      err_text[:300])
check("run_token_file_removed", not os.path.exists(token_file))
stream.join(10)
check("stream_ended_with_the_run", stream.ended)
check("stream_status_and_type", stream.status == 200 and
      (stream.ctype or "").startswith("text/event-stream"), "%s %s" % (stream.status, stream.ctype))
check("stream_hello_first", stream.comments[:1] == [": hello"], str(stream.comments[:3]))
trials_ev = stream.of("trial")
meas_ev = stream.of("measurement")
study_ev = stream.of("study")
numbers = {json.loads(e["data"])["number"] for e in trials_ev}
check("stream_trial_events", numbers == set(range(1, 9)), sorted(numbers))
done_ev = [json.loads(e["data"]) | {"t": e["t"]} for e in trials_ev]
done_ev = [d for d in done_ev if d["state"] == "SUCCEEDED"]
check("stream_trials_succeeded_live", len(done_ev) == 8, len(done_ev))
lag = max((d["t"] - d["finished"] for d in done_ev), default=99)
check("stream_within_1s_of_the_store", lag < 1.0, "largest lag %.3f s" % lag)
m0 = json.loads(meas_ev[0]["data"]) if meas_ev else {}
check("stream_measurement_events", len(meas_ev) >= 8 * 6 and
      set(m0) == {"trial", "step", "value", "replica"} and m0["replica"] == "chief:0",
      "%d events, first %s" % (len(meas_ev), m0))
last_study = json.loads(study_ev[-1]["data"]) if study_ev else {}
check("stream_study_events", len(study_ev) >= 2 and last_study.get("state") == "SUCCEEDED" and
      last_study["counts"]["SUCCEEDED"] == 8, str(last_study)[:300])
check("stream_event_ids", all(re.fullmatch(r"\d+\.\d+", e.get("id", "")) for e in stream.events))

# --- B. tuner serve on the finished store -------------------------------------------
srv = subprocess.Popen([TUNER, "serve", "--listen=127.0.0.1:0"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
line = srv.stdout.readline()
m = re.search(r"http://127\.0\.0\.1:(\d+)/#token=([0-9a-f]{32})", line)
check("serve_prints_url", m is not None, line)
sport, stoken = (int(m.group(1)), m.group(2)) if m else (0, "")
serve_token_file = DB + ".dashboard-token"
check("serve_token_file", os.path.exists(serve_token_file) and
      open(serve_token_file).read().strip() == stoken and
      stat.S_IMODE(os.stat(serve_token_file).st_mode) == 0o600)
AUTH = {"Authorization": "Bearer " + stoken}

# A second server of the same store leaves the first one's token file alone (it took it
# over, and at its exit removed it): its own goes beside it, named by its port, and goes
# when it does.
srv2 = subprocess.Popen([TUNER, "serve", "--listen=127.0.0.1:0"], env=env,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
line2 = srv2.stdout.readline() + srv2.stdout.readline()
m2 = re.search(r":(\d+)/#token=([0-9a-f]{32})\ntoken: (\S+)", line2)
second_file = m2.group(3) if m2 else ""
check("second_serve_token_beside", m2 is not None and
      second_file == "%s.%s" % (serve_token_file, m2.group(1)) and
      open(second_file).read().strip() == m2.group(2), line2)
check("second_serve_first_token_kept", open(serve_token_file).read().strip() == stoken)
srv2.send_signal(signal.SIGTERM)
srv2.communicate(timeout=10)
check("second_serve_token_removed", second_file and not os.path.exists(second_file))
check("second_serve_first_token_still_there", os.path.exists(serve_token_file) and
      open(serve_token_file).read().strip() == stoken)

status, hdrs, doc, body = get_json(sport, "/api/studies")
entry = doc["studies"][0] if doc and doc.get("studies") else {}
check("studies_200", status == 200)
check("studies_entry_shape",
      set(entry) >= {"id", "name", "state", "created", "updated", "counts", "max_trials", "goal",
                     "metric", "best"} and entry["name"] == "dash" and
      entry["counts"] == {"PENDING": 0, "RUNNING": 0, "SUCCEEDED": 8, "FAILED": 0, "STOPPED": 0,
                          "CANCELLED": 0} and entry["max_trials"] == 8 and
      entry["goal"] == "MAXIMIZE" and entry["metric"] == "score" and
      isinstance(entry["created"], float), str(entry)[:400])
check("api_headers", hdrs.get("content-type") == "application/json; charset=utf-8" and
      hdrs.get("x-content-type-options") == "nosniff" and hdrs.get("cache-control") == "no-store"
      and hdrs.get("referrer-policy") == "no-referrer" and hdrs.get("x-frame-options") == "DENY",
      str(hdrs))
API_HEADERS = {k: hdrs.get(k) for k in SECURITY}  # what raw replies are held to
check("api_security_headers", all(API_HEADERS.values()), str(API_HEADERS))

status, _, study, body = get_json(sport, "/api/studies/dash")
check("study_200_shape", status == 200 and study and
      set(study) >= set(entry) | {"spec", "params", "parallel", "elapsed", "error", "best_so_far"},
      str(study)[:300])
if study:
    check("study_params", study["params"][0] == {"name": "x", "type": "DOUBLE",
                                                 "scale": "NONE", "min": 0.1, "max": 1} and
          study["params"][1] == {"name": "opt", "type": "CATEGORICAL", "values": ["sgd", PLANT]},
          str(study["params"]))
    check("study_parallel_elapsed", study["parallel"] == 3 and study["elapsed"] > 0 and
          study["error"] is None and study["spec"]["jobId"] == "dash")
    bsf = study["best_so_far"]
    ok = len(bsf) == 8 and [b["trial"] for b in bsf] == list(range(1, 9))
    run_best = None
    for b in bsf:
        run_best = b["value"] if run_best is None else max(run_best, b["value"])
        ok = ok and abs(b["best"] - run_best) < 1e-12
    check("study_best_so_far", ok, str(bsf)[:300])
    check("study_best_is_max", study["best"]["value"] == max(b["value"] for b in bsf))
    check("study_one_metric_and_pareto",
          study["metrics"] == [{"metricId": study["metric"], "goal": "MAXIMIZE"}] and
          study["pareto"] == [study["best"]["trial"]], str(study.get("pareto")))
    check("study_by_numeric_id", get_json(sport, "/api/studies/%d" % study["id"])[2]["name"] == "dash")
check("planted_markup_escaped_in_params", b"<script>" not in body and
      b"\\u003cscript\\u003e" in body)

status, _, page, _ = get_json(sport, "/api/studies/dash/trials")
t0 = page["trials"][0] if page and page["trials"] else {}
check("trials_default_page", status == 200 and page["total"] == 8 and page["offset"] == 0 and
      page["limit"] == 100 and [t["number"] for t in page["trials"]] == list(range(1, 9)))
check("trial_shape", set(t0) == {"number", "state", "params", "value", "created", "started",
                                 "finished", "duration", "attempts", "restarts", "error",
                                 "executor_job", "last_step", "values"} and t0["last_step"] == 6
      and t0["values"] == [t0["value"]]
      and t0["attempts"] == 1 and t0["executor_job"] is None
      and t0["duration"] > 0 and set(t0["params"]) == {"x", "opt"}, str(t0))
got = []
for off in range(0, 8, 3):
    s_, _, p_, _ = get_json(sport, "/api/studies/dash/trials?offset=%d&limit=3" % off)
    got += [t["number"] for t in p_["trials"]]
    check("paging_offset_%d" % off, p_["total"] == 8 and p_["limit"] == 3 and p_["offset"] == off
          and len(p_["trials"]) == min(3, 8 - off))
check("paging_covers_all_once", got == list(range(1, 9)), got)
check("paging_past_end", get_json(sport, "/api/studies/dash/trials?offset=50")[2]["trials"] == [])
vals = [t["value"] for t in get_json(sport, "/api/studies/dash/trials?sort=-value")[2]["trials"]]
check("sort_value_desc", vals == sorted(vals, reverse=True), vals)
vals = [t["value"] for t in get_json(sport, "/api/studies/dash/trials?sort=value")[2]["trials"]]
check("sort_value_asc", vals == sorted(vals), vals)
nums = [t["number"] for t in get_json(sport, "/api/studies/dash/trials?sort=-number")[2]["trials"]]
check("sort_number_desc", nums == list(range(8, 0, -1)), nums)
durs = [t["duration"] for t in get_json(sport, "/api/studies/dash/trials?sort=-duration")[2]["trials"]]
check("sort_duration_desc", durs == sorted(durs, reverse=True), durs)
check("sort_state", get_json(sport, "/api/studies/dash/trials?sort=state")[0] == 200)
p_ = get_json(sport, "/api/studies/dash/trials?state=SUCCEEDED,running")[2]
check("filter_state", p_["total"] == 8 and len(p_["trials"]) == 8)
p_ = get_json(sport, "/api/studies/dash/trials?state=FAILED")[2]
check("filter_state_none", p_["total"] == 0 and p_["trials"] == [])
for q, want in [("limit=1001", "1000"), ("limit=-1", "limit"), ("limit=abc", "limit"),
                ("offset=-5", "offset"), ("sort=bogus", "-duration"), ("state=DONE", "SUCCEEDED")]:
    s_, h_, d_, _ = get_json(sport, "/api/studies/dash/trials?" + q)
    check("trials_400_" + q.split("=")[0] + "_" + q.split("=")[1], s_ == 400 and
          set(d_) == {"error", "hint"} and want in d_["error"] + d_["hint"], "%s %s" % (s_, d_))
check("limit_1000_ok", get_json(sport, "/api/studies/dash/trials?limit=1000")[0] == 200)
# legal query strings with empty parameters or a bare name are not malformed
for q in ["&limit=2", "limit=2&&x=1", "x&limit=2", "limit=2&"]:
    s_, _, p_, _ = get_json(sport, "/api/studies/dash/trials?" + q)
    check("query_%s_ok" % q.replace("&", "amp").replace("=", "eq"),
          s_ == 200 and p_ and len(p_.get("trials", [])) == 2, "%s: %s %s" % (q, s_, str(p_)[:200]))
check("page_bare_query_ok", request(sport, "GET", "/?x")[0] == 200)

status, _, curves, _ = get_json(sport, "/api/studies/dash/curves")
c1 = curves["curves"][0] if curves and curves.get("curves") else {}
check("curves_shape", status == 200 and curves["metric"] == "score" and
      [c["trial"] for c in curves["curves"]] == list(range(1, 9)) and
      c1["state"] == "SUCCEEDED" and [p[0] for p in c1["points"]] == [1, 2, 3, 4, 5, 6], str(c1))
x1 = t0["params"]["x"] if t0 else 0
check("curves_values", c1 and abs(c1["points"][-1][1] - x1) < 1e-9 and
      abs(c1["points"][0][1] - x1 / 6) < 1e-9, str(c1)[:200])

status, _, tr, body = get_json(sport, "/api/studies/dash/trials/1")
check("trial_detail_200", status == 200 and tr and set(tr) >= set(t0) |
      {"measurements", "events", "replicas", "logs"})
if tr:
    ms = tr["measurements"]
    check("trial_measurements", len(ms) == 6 and ms[0]["replica"] == "chief:0" and
          set(ms[0]) == {"step", "replica", "attempt", "metrics", "timestamp"} and
          ms[0]["attempt"] == 1 and "score" in ms[0]["metrics"], str(ms[:1]))
    kinds = [e["kind"] for e in tr["events"]]
    exits = [e for e in tr["events"] if e["kind"] == "exited"]
    check("trial_events", "started" in kinds and "exited" in kinds and
          set(tr["events"][0]) == {"time", "replica", "kind", "detail", "exit_code", "signal"},
          kinds)
    check("trial_exit_as_data", exits and exits[-1]["exit_code"] == 0 and
          exits[-1]["signal"] is None, str(exits))
    check("trial_replicas", tr["replicas"] == [{"name": "chief-0", "state": "EXITED",
                                                "exit_code": 0, "restarts": 0, "signal": None}],
          str(tr["replicas"]))
    check("trial_logs", tr["logs"] == ["chief-0"], tr["logs"])
# A replica that reports steps 5 and 6, crashes and is restarted, and reports them
# again with earlier timestamps (a clock set back): every record is kept with its
# attempt, and the curve has the newest attempt's values, not the latest timestamps'.
RESTARTER = os.path.join(WORK, "restarter.sh")
with open(RESTARTER, "w") as f:
    f.write("""for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done
if [ ! -e "$d/ran" ]; then
  touch "$d/ran"
  printf '{"score": "0.2", "global_step": "5", "timestamp": 2000}\\n{"score": "0.3", "global_step": "6", "timestamp": 2001}\\n' >>"$CLOUD_ML_HP_METRIC_FILE"
  exit 1
fi
printf '{"score": "0.7", "global_step": "5", "timestamp": 1000}\\n{"score": "0.8", "global_step": "6", "timestamp": 1001}\\n' >>"$CLOUD_ML_HP_METRIC_FILE"
""")
spec("restarted", 1, 1, ["/bin/sh", RESTARTER])
r_ = run_tuner(["run", "restarted.json", "--quiet", "--poll=0.05", "--dashboard=off"], timeout=60)
check("restarted_run_exit0", r_.returncode == 0, r_.stderr[-300:])
s_, _, d_, _ = get_json(sport, "/api/studies/restarted/curves")
pts = d_["curves"][0]["points"] if s_ == 200 and d_["curves"] else None
check("curves_newest_attempt", pts == [[5, 0.7], [6, 0.8]], str(d_)[:300])
s_, _, d_, _ = get_json(sport, "/api/studies/restarted/trials/1")
got = [(m["step"], m.get("attempt"), m["metrics"].get("score"), m["timestamp"])
       for m in d_.get("measurements", [])] if s_ == 200 else None
check("trial_measurements_attempts", got == [(5, 1, 0.2, 2000), (5, 2, 0.7, 1000),
                                             (6, 1, 0.3, 2001), (6, 2, 0.8, 1001)], str(got))
check("trial_404", get_json(sport, "/api/studies/dash/trials/99")[0] == 404)
check("trial_404_not_a_number", get_json(sport, "/api/studies/dash/trials/abc")[0] == 404)
# one spelling of each number: "01" is no trial, study or replica index (it was served,
# and /logs/chief-00 answered "chief-00" with chief-0's log)
check("trial_404_leading_zero", get_json(sport, "/api/studies/dash/trials/01")[0] == 404)
check("study_404_leading_zero", get_json(sport, "/api/studies/01")[0] == 404)
check("log_400_leading_zero", get_json(sport, "/api/studies/dash/trials/1/logs/chief-00")[0] == 400)
check("study_404", get_json(sport, "/api/studies/nosuch")[0] == 404)
check("study_404_trials", get_json(sport, "/api/studies/nosuch/trials")[0] == 404)
check("route_404", get_json(sport, "/api/nothing")[0] == 404)
s_, _, d_, _ = get_json(sport, "/api/studies/nosuch/curves")
check("errors_are_json", s_ == 404 and set(d_) == {"error", "hint"}, str(d_))

status, _, log, body = get_json(sport, "/api/studies/dash/trials/1/logs/chief-0?lines=5")
check("log_tail", status == 200 and log["replica"] == "chief-0" and
      log["lines"] == ["line %d" % i for i in range(295, 300)] and log["truncated"] is True,
      str(log)[:300])
status, _, log, body = get_json(sport, "/api/studies/dash/trials/1/logs/chief-0?lines=5000")
check("log_whole", status == 200 and log["truncated"] is False and len(log["lines"]) == 303 and
      log["lines"][1] == "planted: " + LOG_PLANT, str(log and log["lines"][:3]))
check("log_planted_markup_escaped", b"<script>" not in body and b"\\u003cscript\\u003e" in body)
check("log_invalid_utf8_replaced", log and log["lines"][2] == "bad utf-8: \ufffd\ufffd\ufffd end",
      repr(log and log["lines"][2]))
# A log of control characters grows sixfold as JSON (\u0001): the reply stays within
# 4 MiB of lines, the newest kept, and says it is truncated; a single line larger
# than that keeps its end.
big = os.path.join(WORK, "runs/dash/1/logs/worker-9.log")
with open(big, "wb") as f:
    for i in range(5000):
        f.write(b"\x01" * 838 + b" %d\n" % i)  # 4 MiB read, 25 MB escaped
status, _, log, body = get_json(sport, "/api/studies/dash/trials/1/logs/worker-9?lines=5000")
check("log_reply_bounded", status == 200 and len(body) <= (4 << 20) + 4096 and
      log["truncated"] is True and log["lines"][-1].endswith(" 4999") and
      len(log["lines"]) < 5000, "%d bytes, %s lines" % (len(body), log and len(log["lines"])))
with open(big, "wb") as f:
    f.write(b"<" * (1 << 20) + b"\xc3\xa9 the end\n")  # one line: 6 MiB escaped
status, _, log, body = get_json(sport, "/api/studies/dash/trials/1/logs/worker-9")
check("log_one_huge_line_keeps_its_end", status == 200 and len(body) <= (4 << 20) + 4096 and
      log["truncated"] is True and len(log["lines"]) == 1 and
      log["lines"][0].endswith("\u00e9 the end") and log["lines"][0].startswith("<"),
      "%d bytes" % len(body))
os.remove(big)
check("log_lines_max", get_json(sport, "/api/studies/dash/trials/1/logs/chief-0?lines=5001")[0] == 400)
check("log_missing_404", get_json(sport, "/api/studies/dash/trials/1/logs/worker-3")[0] == 404)
secret = b"root:x:0:0"
for path in ["/api/studies/dash/trials/1/logs/../../../../etc/passwd",
             "/api/studies/dash/trials/1/logs/..%2f..%2f..%2f..%2fetc%2fpasswd",
             "/api/studies/dash/trials/1/logs/%2e%2e",
             "/api/studies/dash/trials/1/logs/%2Fetc%2Fpasswd",
             "/api/studies/dash/trials/1/logs/chief-0%00",
             "/api/studies/dash/trials/1/logs/chief-0.log",
             "/api/studies/dash/trials/1/logs/chief",
             "/api/studies/%2e%2e/trials/1/logs/chief-0",
             "/api/studies/..%2fdash/trials",
             "/..%2f..%2fetc/passwd", "/../../etc/passwd", "//etc/passwd", "/etc/passwd",
             "/%2e%2e/%2e%2e/etc/passwd", "/app.js/../../etc/passwd", "/.dashboard-token",
             "/tuner.db", "/index.html%00"]:
    s_, _, data = request(sport, "GET", path)
    check("traversal " + path, s_ in (400, 404) and secret not in data and
          stoken.encode() not in data, "%s %s" % (s_, data[:100]))
resp = raw(sport, b"GET /api/studies/dash/trials/1/logs/chief-0\x00/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
check("raw_nul_rejected", status_of(resp) == 400 and b'"error"' in resp and secret not in resp,
      resp[:80])

# the page
status, hdrs, page_html = request(sport, "GET", "/")
check("page_200", status == 200 and hdrs.get("content-type") == "text/html; charset=utf-8" and
      b"<html" in page_html)
check("page_csp", hdrs.get("content-security-policy") ==
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
      "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      hdrs.get("content-security-policy"))
check("page_nosniff_frame", hdrs.get("x-content-type-options") == "nosniff" and
      hdrs.get("x-frame-options") == "DENY" and hdrs.get("referrer-policy") == "no-referrer")
check("app_js", request(sport, "GET", "/app.js")[1].get("content-type") ==
      "text/javascript; charset=utf-8")
# the page's ES modules: a browser runs one only when served with a JavaScript type
web = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tuner", "web")
for name in sorted(f for f in os.listdir(web) if f.endswith(".js")):
    s_, h_, b_ = request(sport, "GET", "/" + name)
    check("module " + name, s_ == 200 and h_.get("content-type") == "text/javascript; charset=utf-8"
          and b_ == open(os.path.join(web, name), "rb").read(), "%s %s" % (s_, h_.get("content-type")))
check("app_css", request(sport, "GET", "/app.css")[1].get("content-type") ==
      "text/css; charset=utf-8")
check("favicon", request(sport, "GET", "/favicon.ico")[0] in (200, 204))
check("unknown_file_404", request(sport, "GET", "/nope.js")[0] == 404)
s_, h_, b_ = request(sport, "HEAD", "/api/studies")
check("head_ok", s_ == 200 and b_ == b"" and h_.get("content-type", "").startswith("application/json"))
# HEAD (RFC 9110 9.3.2): the GET's headers, its Content-Length too, and no body, so the
# next response on a kept-alive connection starts right after the headers
for path in ["/api/studies", "/api/studies/dash", "/app.js", "/", "/api/studies/nosuch",
             "/api/events?study=nosuch"]:
    g_ = request(sport, "GET", path)
    resp = raw(sport, b"HEAD " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
               b"GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    head, _, rest = resp.partition(b"\r\n\r\n")
    cl = re.search(rb"(?im)^content-length: *(\d+)\r?$", head)
    check("head_no_body " + path, status_of(head) == g_[0] and rest.startswith(b"HTTP/1.1 204 ") and
          cl is not None and int(cl.group(1)) == len(g_[2]), resp[:400])
resp = raw(sport, b"HEAD /api/events?study=dash HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
           b"GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
head, _, rest = resp.partition(b"\r\n\r\n")
check("head_stream_headers_only", status_of(head) == 200 and b"text/event-stream" in head and
      b"Content-Length" not in head and rest.startswith(b"HTTP/1.1 204 "), resp[:400])

# methods, sizes
s_, h_, d_ = request(sport, "PUT", "/api/studies", body=b"{}")
check("put_405", s_ == 405 and h_.get("allow") == "GET, HEAD", "%s %s" % (s_, h_.get("allow")))
s_, h_, d_ = request(sport, "DELETE", "/api/studies/dash")
check("delete_405", s_ == 405 and "allow" in h_)
s_, h_, d_ = request(sport, "POST", "/api/studies")
check("post_on_read_405", s_ == 405 and h_.get("allow") == "GET, HEAD")
s_, h_, d_ = request(sport, "GET", "/api/studies/dash/cancel")
check("get_on_cancel_405", s_ == 405 and h_.get("allow") == "POST")
try:
    s_, _, _ = request(sport, "POST", "/api/studies/dash/cancel", headers=AUTH, body=b"x" * 200000)
except (ConnectionResetError, BrokenPipeError) as e:
    s_ = str(e)
check("huge_body_413", s_ == 413, s_)
resp = raw(sport, b"GET /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20000 +
           b"\r\n\r\n")
check("huge_headers_431_json", status_of(resp) == 431 and b'"error"' in resp, resp[:300])
# a request's framing is judged as it arrives, before evhttp reads a body: a length over
# 4 KiB (however large) is 413 at once, one that is not a number 400; a chunk size that
# is not hex 400, chunks over 4 KiB 413; the reply is JSON and the connection closed
CANCEL = b"POST /api/studies/dash/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\n"
CHUNKED = b"Transfer-Encoding: chunked\r\n\r\n"
for name, data, want in [
        ("huge_content_length_413", CANCEL + b"Content-Length: 99999999999999999999999\r\n\r\nabc", 413),
        ("big_content_length_413", CANCEL + b"Content-Length: 4097\r\n\r\n", 413),
        ("bad_content_length_400", CANCEL + b"Content-Length: 12abc\r\n\r\n", 400),
        ("two_content_lengths_400", CANCEL + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        ("bad_chunk_size_400", CANCEL + CHUNKED + b"zzzz\r\nabc\r\n0\r\n\r\n", 400),
        ("big_chunk_413", CANCEL + CHUNKED + b"1001\r\n", 413),
        ("chunked_with_length_400", CANCEL + b"Content-Length: 3\r\n" + CHUNKED, 400),
        ("head_refused_no_body", b"HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 9000 +
         b"\r\n\r\n", 431),
        # what evhttp 2.1 would answer with its own HTML page
        ("unknown_method_501", b"BREW /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501),
        ("lowercase_method_501", b"get /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501),
        ("http2_version_505", b"GET /api/studies HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n", 505),
        ("bad_version_400", b"GET /api/studies HTTP/x.y\r\nHost: 127.0.0.1\r\n\r\n", 400),
        ("bare_cr_header_400", b"GET /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\rb\r\n"
         b"\r\n", 400),
        ("nul_header_400", b"GET /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\nX\x00A: 1\r\n\r\n",
         400),
        ("bad_authority_400", b"GET http://[::1/api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
         400),
        ("bad_port_400", b"GET //127.0.0.1:x/api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
         400),
        ("expect_other_417", CANCEL + b"Expect: fast\r\nContent-Length: 2\r\n\r\n{}", 417),
        ("expect_tab_417", CANCEL + b"Expect:\t100-continue\r\nContent-Length: 2\r\n\r\n{}", 417),
        ("empty_target_400", b"POST  HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400),
        ("version_tab_400", b"GET /api/studies HTTP/1.1\t\r\nHost: 127.0.0.1\r\n\r\n", 400),
        ("connect_bad_authority_400", b"CONNECT a:b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400),
        # refused before the "100 Continue" the client waits for
        ("bad_target_before_continue_400", b"POST http://[::1/api/studies/dash/cancel HTTP/1.1"
         b"\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", 400)]:
    t0 = time.time()
    resp = raw(sport, data, timeout=5)
    took = time.time() - t0
    head, _, rest = resp.partition(b"\r\n\r\n")
    cl = re.search(rb"(?im)^content-length: *(\d+)\r?$", head)
    check(name, status_of(resp) == want and took < 1.5 and b"connection: close" in head.lower() and
          cl is not None and len(rest) == (0 if data.startswith(b"HEAD") else int(cl.group(1))) and
          (data.startswith(b"HEAD") or b'"error"' in rest), "%.1f s: %s" % (took, resp[:300]))
    differs = security_differs(header_map(head), API_HEADERS)
    check(name + "_security_headers", not differs, "%s: %s" % (differs, head[:600]))
# well-formed bodies still pass, and the next request on the connection is read after them
resp = raw(sport, CANCEL + CHUNKED + b"3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n" + CANCEL +
           b"Content-Length: 2\r\n\r\n{}GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           b"Connection: close\r\n\r\n")
check("bodies_then_next_request", [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", resp)] ==
      [401, 401, 204], resp[:200])
# empty lines before a request line are ignored (RFC 9112 2.2): at the start of a
# connection, and after a body (the CRLF some clients send after a POST's)
resp = raw(sport, b"\r\n\nGET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + CANCEL +
           b"Content-Length: 2\r\n\r\n{}\r\nGET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           b"Connection: close\r\n\r\n")
check("empty_lines_before_request", [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", resp)] ==
      [204, 401, 204], resp[:300])
# a refusal pipelined after a good request: the good reply whole (a small one, and one of
# several segments), then the refusal, then the close
charts = open(os.path.join(web, "charts.js"), "rb").read()
for name, first, body, bad, want in [
        ("pipelined_refusal_after_small_reply", b"GET /api/studies HTTP/1.1\r\n"
         b"Host: 127.0.0.1\r\n\r\n", None, CANCEL + b"Content-Length: 99999999\r\n\r\n", 413),
        ("pipelined_refusal_after_big_reply", b"GET /charts.js HTTP/1.1\r\n"
         b"Host: 127.0.0.1\r\n\r\n", charts, CANCEL + CHUNKED + b"zz\r\n", 400)]:
    t0 = time.time()
    got = responses(raw(sport, first + bad, timeout=5, most=None))
    took = time.time() - t0
    ok_first = len(got) >= 1 and got[0][0] == 200 and (
        got[0][2] == body if body is not None else b'"studies"' in got[0][2])
    check(name, ok_first and len(got) == 2 and got[1][0] == want and
          got[1][1].get("connection") == "close" and b'"error"' in got[1][2] and took < 1.5,
          "%.1f s: %s" % (took, [(st, len(b_), b_[:80]) for st, _, b_ in got]))
# Expect: 100-continue: "100 Continue" once the headers are in, then the answer
s = socket.create_connection(("127.0.0.1", sport), timeout=5)
s.sendall(CANCEL + ("Authorization: Bearer %s\r\n" % stoken).encode() +
          b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n")
first = s.recv(100)
s.sendall(b"{}")
second = s.recv(4096)
s.close()
check("expect_100_continue", first == b"HTTP/1.1 100 Continue\r\n\r\n" and
      status_of(second) == 409, "%r %r" % (first, second[:100]))
check("server_alive_after_bad_requests", get_json(sport, "/api/studies")[0] == 200)
# a target in absolute form whose authority parses is served as its path
resp = raw(sport, ("GET http://127.0.0.1:%d/api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Connection: close\r\n\r\n" % sport).encode())
check("absolute_form_200", status_of(resp) == 200 and b'"studies"' in resp, resp[:200])
# the authority of an absolute-form target is the request's host, not Host (RFC 9112
# 3.2.2): another site's name there is refused as in Host
resp = raw(sport, b"GET http://evil.example/api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           b"Connection: close\r\n\r\n")
check("absolute_form_foreign_host_403", status_of(resp) == 403, resp[:200])
resp = raw(sport, ("GET http://[::1]:%d/api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Connection: close\r\n\r\n" % sport).encode())
check("absolute_form_ipv6_loopback_200", status_of(resp) == 200, resp[:200])
s_, _, d_ = request(sport, "GET", "/api/studies", headers={"Host": "evil.example:%d" % sport})
check("foreign_host_refused", s_ == 403, s_)
# Host (RFC 7230 5.4): HTTP/1.1 needs exactly one; HTTP/1.0 may omit it (no browser does)
resp = raw(sport, b"GET /api/studies HTTP/1.1\r\n\r\n")
body = resp.partition(b"\r\n\r\n")[2]
check("http11_without_host_400", status_of(resp) == 400 and b'"error"' in body and
      b"Host" in body, resp[:300])
resp = raw(sport, b"GET /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n")
check("two_host_headers_400", status_of(resp) == 400 and b"Host" in resp, resp[:300])
resp = raw(sport, b"GET /api/studies HTTP/1.0\r\n\r\n")
check("http10_without_host_200", status_of(resp) == 200 and b'"studies"' in resp, resp[:300])

# cancel a finished study: 409 (with the token); without: 401
s_, _, d_ = request(sport, "POST", "/api/studies/dash/cancel")
check("cancel_no_token_401", s_ == 401, s_)
s_, _, d_ = request(sport, "POST", "/api/studies/dash/cancel", headers=AUTH)
check("cancel_finished_409", s_ == 409 and b"already finished" in d_, "%s %s" % (s_, d_))
check("cancel_unknown_404", request(sport, "POST", "/api/studies/nosuch/cancel", headers=AUTH)[0] == 404)

# Last-Event-ID: a stream from the start replays every trial once, every measurement
resume = Stream(sport, "dash", {"Last-Event-ID": "0.0"})
resume.start()
wait_for(lambda: len(resume.of("measurement")) >= 48 and resume.of("study"), 10)
n_trials = len({json.loads(e["data"])["number"] for e in resume.of("trial")})
check("last_event_id_replays", len(resume.of("trial")) == 8 and n_trials == 8 and
      len(resume.of("measurement")) == 48, "%d trial, %d measurement events" %
      (len(resume.of("trial")), len(resume.of("measurement"))))
fresh = Stream(sport, "dash")
fresh.start()
wait_for(lambda: fresh.of("study"), 5)
time.sleep(0.4)
check("new_stream_starts_at_now", fresh.comments[:1] == [": hello"] and not fresh.of("trial") and
      len(fresh.of("study")) == 1, "%d events" % len(fresh.events))
check("stream_unknown_study_404", request(sport, "GET", "/api/events?study=nosuch")[0] == 404)
check("stream_needs_study_400", request(sport, "GET", "/api/events")[0] == 400)

# clients that go away mid-stream or mid-reply must not hurt the server (SIGPIPE, leaks)
for i in range(30):
    s = socket.create_connection(("127.0.0.1", sport))
    s.sendall(b"GET /api/events?study=dash HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    if i % 2:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()
for i in range(20):
    s = socket.create_connection(("127.0.0.1", sport))
    s.sendall(b"GET /api/studies/dash/curves HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
              b"GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()
time.sleep(0.5)
check("sigpipe_survived", srv.poll() is None and get_json(sport, "/api/studies")[0] == 200)

# the connection cap: beyond it, 503 or a closed socket; afterwards, service as before
socks = []
for i in range(80):
    try:
        socks.append(socket.create_connection(("127.0.0.1", sport), timeout=2))
    except OSError:
        break
time.sleep(0.3)
refused = 0
for s in socks[64:]:
    try:
        s.settimeout(1)
        data = s.recv(200)
        refused += data == b"" or data.startswith(b"HTTP/1.1 503")
    except (socket.timeout, ConnectionResetError):
        pass
for s in socks:
    s.close()
check("connection_cap", len(socks) == 80 and refused >= len(socks) - 64, "%d of %d refused" % (refused, len(socks) - 64))
time.sleep(0.3)
check("service_after_cap", get_json(sport, "/api/studies")[0] == 200)


def hold(port):
    """A connection that had a GET answered and stays open, taking a place under the cap;
    None when it was not served (the cap's 503, or its close)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    data = b""
    try:
        s.sendall(b"GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    if status_of(data) == 204:  # no body: the reply is whole
        return s
    s.close()
    return None


def refusal(port):
    """What a connection that sends nothing gets: the cap's 503 at once, or b"" (held)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.settimeout(1)
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return data


# the cap gives a place back when a connection closes: fill it with kept-alive
# connections (the streams still open hold places too), then close one of them
held = []
while len(held) < 80:
    c = hold(sport)
    if c is None:
        break
    held.append(c)
busy = refusal(sport)
busy_head = header_map(busy)
check("cap_full_503", 0 < len(held) < 64 and status_of(busy) == 503 and
      busy_head.get("connection") == "close" and b'"too many connections"' in busy,
      "%d held: %r" % (len(held), busy[:200]))
differs = security_differs(busy_head, API_HEADERS)
check("cap_503_security_headers", not differs, "%s: %r" % (differs, busy[:600]))
held.pop().close()
again = []
check("cap_place_given_back", wait_for(lambda: again.append(hold(sport)) or again[-1], 2),
      "no new connection served after one closed")
check("cap_place_given_back_once", status_of(refusal(sport)) == 503)
for c in held + again:
    if c:
        c.close()


def open_stream(port, target, version=b"1.1"):
    """A raw event-stream connection: (socket, status, what came after the headers)."""
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(b"GET " + target + b" HTTP/" + version + b"\r\nHost: 127.0.0.1\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = c.recv(4096)
        if not chunk:
            break
        got += chunk
    return c, status_of(got), got.partition(b"\r\n\r\n")[2]


# the event streams' cap: at most 32 streams; then a GET is 503 with Retry-After, and a HEAD,
# which answers what a GET would, is 503 too (it was 200); one closed, one more served
time.sleep(0.5)  # the closed connections above leave the server's count
streams = []
for _ in range(40):  # until the cap (earlier tests may hold some of its 32)
    if streams and streams[-1][1] != 200:
        break
    c, st, _ = open_stream(sport, b"/api/events?study=dash")
    streams.append((c, st))
refused = streams.pop()
refused[0].close()
check("stream_cap_reached", refused[1] == 503 and 0 < len(streams) <= 32 and
      all(st == 200 for _, st in streams), "%d served, then %s" % (len(streams), refused[1]))
for method in ("GET", "HEAD"):
    resp = raw(sport, method.encode() + b" /api/events?study=dash HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               b"Connection: close\r\n\r\n")
    check("stream_cap_%s_503" % method.lower(), status_of(resp) == 503 and
          header_map(resp).get("retry-after") == "5", resp[:300])
streams.pop()[0].close()
time.sleep(0.3)
resp = raw(sport, b"HEAD /api/events?study=dash HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
check("stream_cap_room_again_head_200", status_of(resp) == 200, resp[:200])
for c, _ in streams:
    c.close()


# a study's id has one spelling, whether or not a stream already follows the study
held, st1, _ = open_stream(sport, b"/api/events?study=1")
check("stream_by_id_200", st1 == 200, st1)
for target in (b"/api/events?study=01", b"/api/events?study=001"):
    resp = raw(sport, b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    check("stream_leading_zero_404_" + target.decode()[-3:], status_of(resp) == 404, resp[:200])
held.close()

# a client that sends on and on while its stream is written is closed (what it sent was
# kept, with no bound, while evhttp wrote the reply); the server serves on
flood, stf, _ = open_stream(sport, b"/api/events?study=dash")
closed = False
try:
    for _ in range(64):  # 1 MiB, well past the 80 KiB a client may send ahead
        flood.sendall(b"x" * 16384)
    flood.settimeout(5)
    t0 = time.time()
    while time.time() - t0 < 5:
        if not flood.recv(65536):
            closed = True
            break
except (ConnectionResetError, BrokenPipeError):
    closed = True
except socket.timeout:
    pass
flood.close()
check("stream_flood_closed", stf == 200 and closed, "status %s, closed %s" % (stf, closed))
check("served_after_flood", get_json(sport, "/api/studies")[0] == 200)

# an HTTP/1.0 stream (no chunks, no keep-alive) ended by the server's stop: its end freed
# the connection at once, and with it the stream's client, then freed that again
old10, st10, _ = open_stream(sport, b"/api/events?study=dash", b"1.0")
check("stream_http10_200", st10 == 200, st10)

srv.send_signal(signal.SIGINT)
try:
    _, serve_err = srv.communicate(timeout=10)
    rc = srv.returncode
except subprocess.TimeoutExpired:
    srv.kill()
    rc, serve_err = "hung", ""
check("serve_stops_on_sigint", rc == 0, rc)
SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error|ThreadSanitizer")
check("serve_no_sanitizer_reports", not SANITIZER.search(serve_err), serve_err[-2000:])
check("serve_token_file_removed", not os.path.exists(serve_token_file))
for st in (stream, resume, fresh):
    st.join(1)
old10.close()

# --- C. a running study: second bind, cancel with the token --------------------------
port2 = free_port()
spec("long", 4, 2, ["python3", REPLICA, "--steps=200", "--pause=0.2"])
run = start(["run", "long.json", "--poll=0.1", "--grace=1", "--cores=8", "--oversubscribe",
             "--dashboard=127.0.0.1:%d" % port2], "long.err")
token_file = os.path.join(WORK, "runs/long/.dashboard-token")
wait_for(lambda: os.path.exists(token_file), 15)
wait_port(port2)
ltoken = open(token_file).read().strip()
spec("other", 1, 1, ["python3", REPLICA])
r = run_tuner(["run", "other.json", "--dashboard=127.0.0.1:%d" % port2])
check("explicit_port_in_use_exit2", r.returncode == 2, "%d %s" % (r.returncode, r.stderr))
check("explicit_port_in_use_message",
      "tuner: error: dashboard: cannot listen on 127.0.0.1:%d: Address already in use" % port2
      in r.stderr and "hint:" in r.stderr, r.stderr)
check("explicit_port_in_use_nothing_stored", run_tuner(["show", "other"]).returncode == 4)
# serve has no --dashboard flag and cannot be off: its hints name --listen
r = run_tuner(["serve", "--listen=127.0.0.1:%d" % port2])
check("serve_port_in_use_exit2", r.returncode == 2, "%d %s" % (r.returncode, r.stderr))
check("serve_port_in_use_hint", "hint: another process holds the port: pick another with "
      "--listen=ADDR:PORT" in r.stderr and "--dashboard" not in r.stderr, r.stderr)
wait_for(lambda: (get_json(port2, "/api/studies/long")[2] or {}).get("counts", {})
         .get("RUNNING", 0) == 2, 15)
s_, _, d_ = request(port2, "POST", "/api/studies/long/cancel")
check("cancel_without_token_401", s_ == 401, "%s %s" % (s_, d_))
s_, _, d_ = request(port2, "POST", "/api/studies/long/cancel?token=" + ltoken)
check("cancel_query_token_not_enough_401", s_ == 401, "%s %s" % (s_, d_))
s_, _, d_ = request(port2, "POST", "/api/studies/long/cancel",
                    headers={"Authorization": "Bearer " + "0" * 32})
check("cancel_wrong_token_403", s_ == 403, "%s %s" % (s_, d_))
s_, _, d_ = request(port2, "POST", "/api/studies/long/cancel",
                    headers={"Authorization": "Bearer " + ltoken[:-1] + "x"})
check("cancel_near_token_403", s_ == 403)
check("still_running_after_bad_cancels", run.poll() is None)
s_, _, d_ = request(port2, "POST", "/api/studies/long/cancel",
                    headers={"Authorization": "Bearer " + ltoken})
check("cancel_202", s_ == 202 and json.loads(d_) == {"study": "long", "state": "CANCELLED"},
      "%s %s" % (s_, d_))
try:
    rc = run.wait(timeout=20)
except subprocess.TimeoutExpired:
    run.kill()
    rc = "hung"
check("cancelled_run_exits_130", rc == 130, rc)
r = run_tuner(["show", "long", "--format=json"])
check("cancelled_state", r.returncode == 0 and json.loads(r.stdout)["state"] == "CANCELLED")

# --- D. addresses: non-loopback needs the public flag; the default port falls back ----
r = run_tuner(["run", "other.json", "--dashboard=0.0.0.0:%d" % free_port()])
check("non_loopback_run_exit2", r.returncode == 2 and "not a loopback address" in r.stderr and
      "hint:" in r.stderr, r.stderr)
check("non_loopback_run_nothing_stored", run_tuner(["show", "other"]).returncode == 4)
r = run_tuner(["serve", "--listen=0.0.0.0:0"])
check("non_loopback_serve_exit2", r.returncode == 2 and "not a loopback address" in r.stderr)
check("non_loopback_serve_hint", "allow it with --public;" in r.stderr, r.stderr)
r = run_tuner(["serve", "--listen=nonsense"])
check("bad_address_exit2", r.returncode == 2 and "hint:" in r.stderr, r.stderr)
check("bad_address_serve_no_off", "[::1]:8470\n" in r.stderr and "or off" not in r.stderr,
      r.stderr)
# each malformed address is named for what is wrong with it
for addr, says in [("[::1", "needs its closing ']'"), ("[::1]", "the port is missing after ']'"),
                   ("::1:8470", "an IPv6 address goes in brackets, as in [::1]:8470"),
                   ("127.0.0.1", "the port is missing"),
                   ("[::1]:99999", "the port must be a number from 0 to 65535"),
                   ("[zz]:80", "'zz' is not an IPv6 address")]:
    r = run_tuner(["serve", "--listen=" + addr])
    check("bad_address_%s" % re.sub(r"\W", "_", addr), r.returncode == 2 and says in r.stderr,
          r.stderr)
r = run_tuner(["run", "other.json", "--dashboard=nonsense"])
check("bad_address_run_offers_off", r.returncode == 2 and "[::1]:8470, or off" in r.stderr,
      r.stderr)

pub = subprocess.Popen([TUNER, "serve", "--listen=0.0.0.0:0", "--public"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
line = pub.stdout.readline()
m = re.search(r"http://0\.0\.0\.0:(\d+)/#token=([0-9a-f]{32})", line)
check("public_serve_url", m is not None, line)
if m:
    pport, ptoken = int(m.group(1)), m.group(2)
    check("public_get_needs_token_401", request(pport, "GET", "/api/studies")[0] == 401)
    check("public_get_wrong_token_403", request(pport, "GET", "/api/studies",
          headers={"Authorization": "Bearer " + "f" * 32})[0] == 403)
    check("public_get_header_token_200", request(pport, "GET", "/api/studies",
          headers={"Authorization": "Bearer " + ptoken})[0] == 200)
    check("public_get_query_token_200",
          request(pport, "GET", "/api/studies/dash/trials?token=" + ptoken)[0] == 200)
    check("public_stream_needs_token", request(pport, "GET", "/api/events?study=dash")[0] == 401)
    check("public_unknown_route_needs_token", request(pport, "GET", "/api/nothing")[0] == 401)
    check("public_page_loads_without_token", request(pport, "GET", "/")[0] == 200)
    check("public_no_such_page_404_without_token", request(pport, "GET", "/a%20b")[0] == 404)
    resp = raw(pport, b"GET /api/studies HTTP/1.1\r\nAuthorization: Bearer " +
               ptoken.encode() + b"\r\n\r\n")
    check("public_http11_without_host_400", status_of(resp) == 400 and b"Host" in resp,
          resp[:300])
pub.send_signal(signal.SIGHUP)  # a closed terminal stops it as SIGTERM does
try:
    check("serve_sighup_exit0", pub.wait(timeout=10) == 0, "exit %s" % pub.returncode)
except subprocess.TimeoutExpired:
    pub.kill()
    pub.wait()
    check("serve_sighup_exit0", False, "still serving 10 s after SIGHUP")

# the default port: taken, the next free one is used and said (serve and run alike)
holder = socket.socket()
holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    holder.bind(("127.0.0.1", 8470))
    holder.listen(1)
except OSError:
    pass  # something else holds it: in use all the same
dflt = subprocess.Popen([TUNER, "serve"], env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
line = dflt.stdout.readline()
dflt.send_signal(signal.SIGTERM)
_, errs = dflt.communicate(timeout=10)
check("default_port_fallback",
      re.search(r"port 8470 is in use; serving on port 84[789]\d instead", errs) is not None and
      re.search(r"http://127\.0\.0\.1:84[789]\d/", line) is not None, errs + line)
holder.close()

# --- E. slow clients (Slowloris): a deadline for the whole request ---------------------
# A server whose deadline is DEADLINE s (the TUNER_DASHBOARD_REQUEST_TIMEOUT knob; 10 s
# by default). The cap's 64 connections: one event stream, then 63 slow clients that
# never finish a request, of four kinds. Every slow one must be closed within the
# deadline and a margin; a normal client, refused (503, closed at once) while the cap is
# full, gets its 200 by then; the refused connections hold no place; the stream stays.
DEADLINE, MARGIN = 2.0, 2.0


class Slow(threading.Thread):
    """Sends `first`, then one piece of `trickle` every `every` s (after a reply to
    `first`, when it is a whole request), until the server closes or `limit` s pass."""

    def __init__(self, port, first, trickle, every=0.5, limit=DEADLINE + MARGIN + 3):
        super().__init__(daemon=True)
        self.port, self.first, self.trickle, self.every, self.limit = \
            port, first, trickle, every, limit
        self.got, self.closed_at, self.t0 = b"", None, None
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)

    def run(self):
        s, self.t0 = self.sock, time.time()
        try:
            s.sendall(self.first)
            i = 0
            while time.time() - self.t0 < self.limit:
                ready, _, _ = select.select([s], [], [], self.every)
                if ready:
                    data = s.recv(65536)
                    if not data:
                        self.closed_at = time.time()
                        break
                    self.got += data
                    continue
                s.sendall(self.trickle(i))
                i += 1
        except OSError:  # reset by the server: closed all the same
            self.closed_at = time.time()
        s.close()


def refused_at_once(port):
    """A normal request while the cap is full: (status, seconds to the close)."""
    t = time.time()
    resp = raw(port, b"GET /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", timeout=3)
    return status_of(resp), time.time() - t


slow_env = dict(env, TUNER_DASHBOARD_REQUEST_TIMEOUT="%g" % DEADLINE)
slow_srv = subprocess.Popen([TUNER, "serve", "--listen=127.0.0.1:0"], env=slow_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
m = re.search(r"http://127\.0\.0\.1:(\d+)/", slow_srv.stdout.readline())
wport = int(m.group(1)) if m else 0
sse = Stream(wport, "dash")
sse.start()
t_sse = time.time()
wait_for(lambda: sse.of("study"), 5)
GET = b"GET /api/studies HTTP/1.1\r\n"
slow = [Slow(wport, GET + b"Host: 127.0.0.1\r\n", lambda i: b"X-Slow-%d: 1\r\n" % i)
        for _ in range(30)]                                  # one header line at a time
slow += [Slow(wport, GET[:1], lambda i: GET[1 + i:2 + i] or b"X") for _ in range(30)]  # a byte
slow += [Slow(wport, b"POST /api/studies/dash/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Length: 100\r\n\r\n", lambda i: b"x") for _ in range(2)]  # the body
slow += [Slow(wport, GET + b"Host: 127.0.0.1\r\n\r\n", lambda i: (GET + b"X: 1\r\n")[i:i + 1])]
for t in slow:  # the last: a whole request, answered, then a second one byte by byte
    t.start()
t_slow = time.time()
time.sleep(0.3)
busy, took = refused_at_once(wport)
check("slowloris_cap_full_503_at_once", busy == 503 and took < 1.0, "%s after %.2f s" % (busy, took))
refused = [refused_at_once(wport) for _ in range(40)]
check("slowloris_refused_closed_at_once", all(st == 503 and dt < 1.0 for st, dt in refused),
      str([r for r in refused if r[0] != 503 or r[1] >= 1.0][:5]))
t_ok = None
while time.time() - t_slow < DEADLINE + MARGIN:
    try:
        if request(wport, "GET", "/api/studies", timeout=2)[0] == 200:
            t_ok = time.time() - t_slow
            break
    except (OSError, http.client.HTTPException):
        pass  # the 503 closes the connection: http.client may see a reset
    time.sleep(0.1)
check("slowloris_normal_client_served_by_deadline", t_ok is not None,
      "no 200 within %.1f s of %d slow clients" % (DEADLINE + MARGIN, len(slow)))
for t in slow:
    t.join(DEADLINE + MARGIN + 4)
late = [t.closed_at - t.t0 if t.closed_at else None for t in slow]
check("slowloris_slow_clients_closed",
      all(x is not None and DEADLINE - 0.5 <= x <= DEADLINE + MARGIN for x in late),
      "seconds to the close: %s" % late)
check("slowloris_keepalive_first_answered", slow[-1].got.startswith(b"HTTP/1.1 200"),
      slow[-1].got[:80])
held = []  # the 40 refused connections hold no place: 63 new ones are served at once
for i in range(63):
    c = http.client.HTTPConnection("127.0.0.1", wport, timeout=5)
    try:
        c.request("GET", "/api/studies")
        r = c.getresponse()
        r.read()
        held.append(r.status)
    except (OSError, http.client.HTTPException) as e:
        held.append(str(e))
    slow.append(c)  # kept open until the end of the check
check("slowloris_refused_hold_no_place", held == [200] * 63,
      "%d of 63 served: %s" % (held.count(200), [h for h in held if h != 200][:3]))
for c in slow[-63:]:
    c.close()


def served(port):
    """Whether a GET on a new connection gets its 200."""
    try:
        return request(port, "GET", "/api/studies", timeout=2)[0] == 200
    except (OSError, http.client.HTTPException):
        return False  # a 503 closes the connection: http.client may see a reset


# Draining a refused connection: a client that goes on sending the body its 413 refused
# sees the reply whole and its end at once; what it sends is read (8 MB, where the
# socket buffers take about 3 MB unread) with no reset until the connection is closed at
# the request deadline; the server serves on.
wait_for(lambda: served(wport), 3)  # the places just given up are free again
s = socket.create_connection(("127.0.0.1", wport), timeout=5)
s.sendall(b"POST /api/studies/dash/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          b"Content-Length: 1000000000\r\n\r\n")
t0, got, eof_at, closed_at, sent = time.time(), b"", None, None, 0
s.setblocking(False)
piece = b"x" * 131072
while closed_at is None and time.time() - t0 < DEADLINE + MARGIN + 2:
    r_, w_, _ = select.select([] if eof_at else [s], [s], [], 0.05)
    try:
        if r_:
            chunk = s.recv(65536)
            got += chunk
            if not chunk:
                eof_at = time.time() - t0
        if w_:
            sent += s.send(piece)
            time.sleep(0.01)
    except BlockingIOError:
        pass
    except OSError:  # the server closed: the next send is reset
        closed_at = time.time() - t0
s.close()
drained = responses(got)
check("drain_refused_413_whole_then_end", len(drained) == 1 and drained[0][0] == 413 and
      b'"error"' in drained[0][2] and eof_at is not None and eof_at < 1.0,
      "end after %s s: %r" % (eof_at, got[:200]))
check("drain_body_read", sent >= 8 << 20, "%d bytes sent" % sent)
check("drain_closed_at_deadline", closed_at is not None and
      DEADLINE - 0.5 <= closed_at <= DEADLINE + MARGIN, "closed after %s s" % closed_at)
check("drain_server_serves_on", served(wport))
time.sleep(max(0.0, t_sse + DEADLINE + 1 - time.time()))
check("slowloris_stream_survives_the_deadline", not sse.ended and sse.status == 200,
      "status %s, ended %s" % (sse.status, sse.ended))
slow_srv.send_signal(signal.SIGINT)
try:
    _, slow_err = slow_srv.communicate(timeout=10)
except subprocess.TimeoutExpired:
    slow_srv.kill()
    _, slow_err = slow_srv.communicate()
check("slowloris_no_sanitizer_reports", not SANITIZER.search(slow_err), slow_err[-2000:])
sse.join(2)

# --- F. bench_dashfill on a study that does not exist ---------------------------------
fill = os.path.join(BIN, "bench_dashfill")
if os.path.exists(fill):
    r = subprocess.run([fill, DB, "nosuch", "1", "1"], capture_output=True, text=True)
    check("dashfill_missing_study", r.returncode == 1 and
          r.stderr.startswith("bench_dashfill: no such study 'nosuch' in %s\n" % DB) and
          "hint: " in r.stderr, "%d %r" % (r.returncode, r.stderr))
    check("dashfill_no_sanitizer_reports", not SANITIZER.search(r.stderr), r.stderr[-2000:])

for name in ("dash.err", "long.err"):
    text = open(name).read()
    check("no_sanitizer_reports_" + name, not SANITIZER.search(text), text[-2000:])

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
