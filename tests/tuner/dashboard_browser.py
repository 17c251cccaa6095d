#!/usr/bin/env python3
"""dashboard_browser.py — the dashboard's page in a real headless Chromium.

    dashboard_browser.py BIN_DIR WORKDIR

Runs a small study (`tuner run`, fake replicas that report a metric with a growing
global_step for a few seconds) with its dashboard on a free loopback port, opens the
page in Debian's chromium (driven by chromium-driver through python3-selenium) and
checks, while the study runs, that the study list, progress, best-so-far chart, curves
chart, parallel coordinates and trial table appear and update live (no reload). One
categorical value of the study and a line each replica prints are planted HTML
(<img src=x onerror=...>, <script>...</script>): they must show as text and never run.
Then, once the run has ended, `tuner serve` serves the same store: the page shows the
finished study, the trial view shows a log tail, and the "Cancel study" button asks for
the token and cancels a second, stored study. Between the two, studies of two and three
metrics (told by `tuner tell`, one metric id planted HTML) show the Pareto panel: one
point per SUCCEEDED trial, the front's points and table rows are the API's "pareto",
every metric in the table, an axis selector re-plots, hover and click reach a trial, a
value told meanwhile joins the front live; a study of one metric has no such panel.
No console errors and no CSP violations
are allowed anywhere. Screenshots (1366x768) go to WORKDIR: dashboard-live.png (while
running), dashboard.png (the finished study; docs/dashboard.png is a copy of one) and
dashboard-pareto.png (the three-metric study).

Prints "ok NAME" / "FAIL NAME: why" per check and exits non-zero when anything failed.
Without chromium, chromedriver or selenium it FAILS (it does not skip): install them with
scripts/install-deps.sh.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

HINT = ("install them with `sudo scripts/install-deps.sh` (Debian packages chromium, "
        "chromium-driver, python3-selenium)")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
except ImportError:
    # Debian's python3-selenium is installed for /usr/bin/python3; another python3 may
    # come first on PATH (pyenv, a venv): run again with Debian's.
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and \
            os.path.exists("/usr/bin/python3") and not os.environ.get("TN_DASH_REEXEC"):
        os.environ["TN_DASH_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("FAIL setup: python3-selenium is missing; " + HINT)
    sys.exit(1)

if len(sys.argv) != 3:
    sys.exit("usage: dashboard_browser.py BIN_DIR WORKDIR")
BIN = os.path.abspath(sys.argv[1])
WORK = os.path.abspath(sys.argv[2])
TUNER = os.path.join(BIN, "tuner")
PLANT_IMG = '<img src=x onerror="window.__pwned=1">'
PLANT_SCRIPT = "<script>window.__pwned=1</script>"
# The study: 12 trials, 2 at a time, each 8 measurements 0.35 s apart: about 20 s.
TRIALS, PARALLEL, STEPS, PAUSE = 12, 2, 8, 0.35

passed = failed = 0
procs = []
driver = None


def ok(name):
    global passed
    passed += 1
    print("ok " + name, flush=True)


def fail(name, why):
    global failed
    failed += 1
    print("FAIL %s: %s" % (name, why), flush=True)


def check(name, cond, why=""):
    if cond:
        ok(name)
    else:
        fail(name, why or "condition false")
    return cond


def wait_for(fn, timeout, step=0.1):
    """fn() until it is truthy (returned) or the time is up (the last value)."""
    end = time.time() + timeout
    while True:
        try:
            v = fn()
        except WebDriverException:
            v = None
        if v or time.time() > end:
            return v
        time.sleep(step)


def finish():
    if driver:
        try:
            driver.quit()
        except Exception:
            pass
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    print("%d passed, %d failed" % (passed, failed), flush=True)
    sys.exit(1 if failed else 0)


# ---- the environment ---------------------------------------------------------------
for path, what in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromedriver")):
    if not os.access(path, os.X_OK):
        print("FAIL setup: %s is missing (%s); %s" % (what, path, HINT))
        sys.exit(1)
if not os.access(TUNER, os.X_OK):
    print("FAIL setup: no tuner binary at %s" % TUNER)
    sys.exit(1)

shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
os.chdir(WORK)
env = dict(os.environ, TUNER_DB=os.path.join(WORK, "tuner.db"))
env.pop("TN_DASH_REEXEC", None)

REPLICA = os.path.join(WORK, "replica.py")
with open(REPLICA, "w") as f:
    f.write(r'''
import json, math, os, signal, sys, time
a = dict(x[2:].split("=", 1) for x in sys.argv[1:] if x.startswith("--") and "=" in x)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
steps, pause = int(a.get("steps", 8)), float(a.get("pause", 0.3))
print("replica %s of trial %s starts" % (json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("type"),
      os.environ.get("CLOUD_ML_TRIAL_ID")), flush=True)
print("planted: <script>window.__pwned=1</script> and <img src=x onerror=\"window.__pwned=1\">", flush=True)
q = 0.55 + 0.05 * int(a["units"]) - 0.06 * abs(math.log10(float(a["lr"])) + 2) + (0.1 if a["opt"] == "sgd" else 0)
path, records = os.environ["CLOUD_ML_HP_METRIC_FILE"], []
for step in range(1, steps + 1):
    v = q * (1 - math.exp(-step / 3.0))
    records.append({"global_step": str(step), "score": str(v), "timestamp": time.time(),
                    "trial": os.environ.get("CLOUD_ML_TRIAL_ID", "")})
    with open(path + ".tmp", "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    os.replace(path + ".tmp", path)
    print("step %d: score=%.4f" % (step, v), flush=True)
    time.sleep(pause)
''')


def spec(name, maxtrials):
    s = {"jobId": name, "trainingInput": {
        "scaleTier": "BASIC", "jobDir": "runs/" + name,
        "command": [sys.executable, REPLICA, "--steps=%d" % STEPS, "--pause=%g" % PAUSE],
        "hyperparameters": {
            "goal": "MAXIMIZE", "hyperparameterMetricTag": "score", "maxTrials": maxtrials,
            "maxParallelTrials": PARALLEL, "algorithm": "RANDOM_SEARCH",
            "enableTrialEarlyStopping": True, "earlyStopping": {"policy": "median", "minTrials": 3},
            "params": [
                {"parameterName": "lr", "type": "DOUBLE", "minValue": 1e-4, "maxValue": 0.1,
                 "scaleType": "UNIT_LOG_SCALE"},
                {"parameterName": "units", "type": "INTEGER", "minValue": 1, "maxValue": 4},
                {"parameterName": "opt", "type": "CATEGORICAL",
                 "categoricalValues": ["sgd", PLANT_IMG, PLANT_SCRIPT]}]}}}
    with open(name + ".json", "w") as f:
        json.dump(s, f, indent=1)
    return name + ".json"


def start(args, out):
    log = open(out, "w")
    p = subprocess.Popen([TUNER] + args, env=env, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    procs.append(p)
    return p


def dashboard_url(out, proc, timeout=15):
    def find():
        with open(out) as f:
            m = re.search(r"^dashboard: (http://\S+)$", f.read(), re.M)
        if m:
            return m.group(1)
        if proc.poll() is not None:
            return "exited"
        return None
    url = wait_for(find, timeout)
    if not url or url == "exited":
        with open(out) as f:
            print(f.read())
        fail("dashboard_url", "no 'dashboard: URL' line from `tuner %s`" % " ".join(proc.args[1:]))
        finish()
    return url


# ---- the browser ---------------------------------------------------------------------
def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    o.add_argument("--headless=new")
    if os.geteuid() == 0:
        o.add_argument("--no-sandbox")  # Chromium's sandbox refuses to run as root
    o.add_argument("--window-size=1366,768")
    o.add_argument("--hide-scrollbars")
    o.add_argument("--disable-gpu")
    o.add_argument("--no-first-run")
    o.add_argument("--disable-background-networking")
    o.add_argument("--user-data-dir=" + os.path.join(WORK, "chromium-profile"))
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)
    except WebDriverException as e:
        d = None
        print("FAIL setup: cannot start chromium through chromedriver: %s; %s" % (str(e).strip(), HINT))
        finish()
    global driver
    driver = d
    d.set_script_timeout(20)
    # The screenshots are of a 1366x768 viewport exactly.
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": 1366, "height": 768, "deviceScaleFactor": 1, "mobile": False})
    return d


console = []


def drain_console(d):
    """Browser console entries since the last call, minus those expected: kept in
    `console`; returns the unexpected ones."""
    bad = []
    for e in d.get_log("browser"):
        console.append(e)
        msg = e.get("message", "")
        if "/cancel" in msg and "status of 403" in msg:
            continue  # the wrong token the test types on purpose
        if e.get("level") in ("SEVERE", "WARNING") or "Content Security Policy" in msg or \
                "Refused to" in msg:
            bad.append(msg)
    return bad


JS_STATE = """
const $ = (id) => document.getElementById(id);
const n = (el, a) => el && el.getAttribute(a) !== null ? Number(el.getAttribute(a)) : -1;
return {
  ready: document.body.dataset.ready === '1',
  events: Number(document.body.dataset.events || 0),
  marker: window.__tn_marker || null,
  pwned: typeof window.__pwned,
  imgs: document.querySelectorAll('img').length,
  scripts: document.querySelectorAll('script').length,
  studies: Array.from(document.querySelectorAll('#study-list .s-name')).map((e) => e.textContent),
  name: $('study-name').textContent,
  state: $('study-state').textContent,
  done: Number($('done-count').textContent),
  max: Number($('max-trials').textContent),
  counts: Object.fromEntries(Array.from(document.querySelectorAll('#counts li')).map((li) => [li.dataset.state, Number(li.dataset.count)])),
  best: $('best').getAttribute('data-value'),
  dots: n($('best-chart'), 'data-dots'),
  bestLine: document.querySelector('#best-chart path.step') ? document.querySelector('#best-chart path.step').getAttribute('d').length : 0,
  curves: n($('curves-canvas'), 'data-curves'),
  points: n($('curves-canvas'), 'data-points'),
  lines: n($('pc-canvas'), 'data-lines'),
  rows: document.querySelectorAll('#trial-body tr').length,
  total: n($('trial-table'), 'data-total'),
  optAxis: Array.from(document.querySelectorAll('#pc-axes g[data-axis="opt"] title')).map((e) => e.textContent),
  lrScale: (document.querySelector('#pc-axes g[data-axis="lr"]') || {getAttribute: () => null}).getAttribute('data-scale'),
  optCells: Array.from(document.querySelectorAll('#trial-body td.param')).map((e) => e.textContent),
  paretoShown: !$('pareto-card').hidden,
  pixels: (function () {
    /* the canvases are not blank */
    const c = $('curves-canvas'), p = $('pc-canvas');
    function inked(cv) {
      if (!cv.width || !cv.height) return 0;
      const copy = document.createElement('canvas');
      copy.width = cv.width;
      copy.height = cv.height;
      const ctx = copy.getContext('2d', {willReadFrequently: true});
      ctx.drawImage(cv, 0, 0);
      const d = ctx.getImageData(0, 0, cv.width, cv.height).data;
      let k = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]) k++;
      return k;
    }
    return [inked(c), inked(p)];
  })(),
};
"""


def state(d):
    return d.execute_script(JS_STATE)


def open_trial_view(d, name):
    """Clicks the first trial of the table; waits for a log tail; returns its text."""
    d.find_element(By.CSS_SELECTOR, "#trial-body tr button").click()
    view = wait_for(lambda: d.find_element(By.ID, "trial-view").is_displayed(), 5)
    check(name + "_trial_view_opens", view, "the trial view did not open")
    text = wait_for(lambda: d.execute_script(
        "const p = document.getElementById('tv-log'); return p.getAttribute('data-loaded') && p.textContent"), 10)
    return text or ""


# ---- the Pareto front: studies of two and three metrics, told by `tuner tell` -------
# Goals: ACC maximised, the others minimised. The first metric's id is planted HTML.
METRIC_PLANT = '<img src=x onerror="window.__pwned=1">acc'
PARETO2 = ("dash_pareto2", [(METRIC_PLANT, "MAXIMIZE"), ("latency_ms", "MINIMIZE")], [
    (0.80, 10), (0.90, 20), (0.85, 25), (0.70, 5), "failed", (0.95, 40), (0.90, 20),
    (0.60, 30), "open", (0.75, 12)])
# front: 1, 2, 4, 6, 7 (7 a duplicate of 2); 3, 8, 10 dominated; 5 failed; 9 running
PARETO3 = ("dash_pareto3", [("acc", "MAXIMIZE"), ("lat", "MINIMIZE"), ("<b>mem</b>", "MINIMIZE")], [
    (0.90, 20, 100), (0.80, 10, 100), (0.80, 20, 50), (0.70, 25, 120), (0.85, 15, 200),
    (0.60, 30, 40), (0.79, 11, 110)])
# front: 1, 2, 3, 5, 6; of (acc, lat) alone 1, 2, 5; of (acc, mem) alone 1, 3, 6


def tuner_cmd(*args):
    return subprocess.run([TUNER] + [str(a) for a in args], env=env, capture_output=True, text=True)


def make_pareto_studies():
    for name, metrics, outcomes in (PARETO2, PARETO3):
        s = {"jobId": name, "trainingInput": {"hyperparameters": {
            "maxTrials": 20, "algorithm": "RANDOM_SEARCH",
            "metrics": [{"metricId": m, "goal": g} for m, g in metrics],
            "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 1e-4, "maxValue": 0.1,
                        "scaleType": "UNIT_LOG_SCALE"}]}}}
        with open(name + ".json", "w") as f:
            json.dump(s, f)
        r = tuner_cmd("create", name + ".json")
        if r.returncode:
            fail(name + "_create", r.stdout + r.stderr)
            return
        for o in outcomes:
            n = json.loads(tuner_cmd("ask", name).stdout)["trial"]
            if o == "failed":
                r = tuner_cmd("tell", name, n, "--failed")
            elif o != "open":
                r = tuner_cmd("tell", name, n, *o)
            if r.returncode:
                fail(name + "_tell", r.stdout + r.stderr)


def api_get(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as r:
        return json.loads(r.read().decode())


JS_PARETO = """
const $ = (id) => document.getElementById(id);
const svg = $('pareto-chart'), step = document.querySelector('#pareto-chart path.pareto-step');
const nums = (s) => s ? s.split(',').map(Number) : [];
return {
  ready: document.body.dataset.ready === '1',
  name: $('study-name').textContent,
  shown: !$('pareto-card').hidden,
  points: Number(svg.getAttribute('data-points') || -1),
  front: nums(svg.getAttribute('data-front')),
  circles: Array.from(document.querySelectorAll('#pareto-chart .pareto-front circle')).map((c) => Number(c.dataset.trial)),
  line: nums(step ? step.dataset.trials : ''),
  step: step ? step.getAttribute('d') : '',
  study: svg.getAttribute('data-study'),
  x: svg.getAttribute('data-x'), y: svg.getAttribute('data-y'),
  titles: Array.from(document.querySelectorAll('#pareto-chart text.title')).map((e) => e.firstChild.textContent),
  options: Array.from(document.querySelectorAll('#pareto-x option')).map((e) => e.textContent),
  head: Array.from(document.querySelectorAll('#pareto-head th')).map((e) => e.getAttribute('title') || e.textContent),
  sorted: Array.from(document.querySelectorAll('#pareto-head th')).map((e) => e.getAttribute('aria-sort')),
  rows: Array.from(document.querySelectorAll('#pareto-body tr')).map((tr) =>
    [Number(tr.dataset.trial)].concat(Array.from(tr.querySelectorAll('td')).slice(1).map((td) => td.textContent))),
  tableHead: Array.from(document.querySelectorAll('#trial-head th')).map((e) => e.textContent),
  goal: $('study-goal').textContent,
  tip: $('pareto-tip').hidden ? null : $('pareto-tip').textContent,
};
"""


def pareto_checks(d, base):
    """The Pareto panel of the two- and three-metric studies, against the API."""
    for name, metrics, outcomes in (PARETO2, PARETO3):
        m = len(metrics)
        d.get(base + "#study=" + name)
        st = wait_for(lambda: (lambda p: p if p["ready"] and p["study"] == name and p["shown"] else None)(
            d.execute_script(JS_PARETO)), 15)
        if not check(name + "_panel_shown", st, str(d.execute_script(JS_PARETO))):
            continue
        study = api_get(base, "api/studies/" + name)
        trials = {t["number"]: t for t in api_get(base, "api/studies/%s/trials?limit=1000" % name)["trials"]}
        done = [n for n, t in trials.items() if t["state"] == "SUCCEEDED"]
        pareto = sorted(study["pareto"])
        check(name + "_one_point_per_trial", st["points"] == len(done) == len([o for o in outcomes if isinstance(o, tuple)]),
              "%d points, %d SUCCEEDED trials" % (st["points"], len(done)))
        check(name + "_front_is_api_pareto", st["front"] == pareto and sorted(st["circles"]) == pareto,
              "page %s, circles %s, API %s" % (st["front"], st["circles"], pareto))
        check(name + "_axes_default", st["x"] == "0" and st["y"] == "1", "%s %s" % (st["x"], st["y"]))
        check(name + "_axis_titles", len(st["titles"]) == 2 and st["titles"][0].startswith(metrics[0][0]) and
              "maximise" in st["titles"][0] and st["titles"][1].startswith(metrics[1][0]) and "minimise" in st["titles"][1],
              str(st["titles"]))
        check(name + "_selector_options", [o.rsplit(" ", 1)[0] for o in st["options"]] == [x[0] for x in metrics],
              str(st["options"]))
        check(name + "_table_head", all(any(h.startswith(mid) for h in st["head"]) for mid, _ in metrics),
              str(st["head"]))
        rows_ok = sorted(r[0] for r in st["rows"]) == pareto and all(
            len(r) >= 1 + m and all(float(r[1 + k]) == trials[r[0]]["values"][k] for k in range(m)) for r in st["rows"])
        check(name + "_table_is_front_with_every_metric", rows_ok, "rows %s, API pareto %s" % (st["rows"], pareto))
        check(name + "_main_table_metric_columns", all(mid in st["tableHead"] for mid, _ in metrics), str(st["tableHead"]))
        check(name + "_goal_names_metrics", all(mid in st["goal"] for mid, _ in metrics), st["goal"])
        # the table sorts by a metric: ascending by the second (minimised) metric
        d.find_element(By.CSS_SELECTOR, "#pareto-head th:nth-child(3) button").click()
        srt = wait_for(lambda: (lambda p: p if p["sorted"][2] == "ascending" else None)(d.execute_script(JS_PARETO)), 5)
        check(name + "_table_sorts", srt and [float(r[2]) for r in srt["rows"]] == sorted(float(r[2]) for r in srt["rows"]),
              str(srt and srt["rows"]))

    # two metrics: the step line joins the front; a click on a front point opens it
    name = PARETO2[0]
    d.get(base + "#study=" + name)
    st = wait_for(lambda: (lambda p: p if p["ready"] and p["study"] == name else None)(
        d.execute_script(JS_PARETO)), 15)
    check("pareto2_step_line_is_front", st and st["line"] == st["front"], str(st))
    dot = d.find_element(By.CSS_SELECTOR, '#pareto-chart .pareto-front circle[data-trial="6"]')
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", dot)
    ActionChains(d).move_to_element(dot).perform()
    tip = wait_for(lambda: d.execute_script(JS_PARETO)["tip"], 5)
    check("pareto_hover_tip", tip and tip.startswith("trial 6 ") and "on the Pareto front" in tip and METRIC_PLANT in tip,
          repr(tip))
    ActionChains(d).move_to_element(dot).click().perform()
    opened = wait_for(lambda: d.find_element(By.ID, "trial-view").is_displayed() and
                      d.find_element(By.ID, "tv-title").text == "Trial 6" and "trial=6" in d.current_url, 5)
    check("pareto_click_opens_trial", opened, d.current_url)
    facts = d.execute_script("return Array.from(document.querySelectorAll('#tv-facts dt')).map((e) => e.textContent)")
    check("trial_view_every_metric", METRIC_PLANT in facts and "latency_ms" in facts, str(facts))
    d.find_element(By.ID, "tv-close").click()
    # live: the open trial (9) is told a value that joins the front; no reload
    d.execute_script("window.__tn_marker = 'pareto page';")
    r = tuner_cmd("tell", name, 9, 0.99, 45)
    st = wait_for(lambda: (lambda p: p if 9 in p["front"] else None)(d.execute_script(JS_PARETO)), 10)
    pareto = sorted(api_get(base, "api/studies/" + name)["pareto"])
    check("pareto_live", r.returncode == 0 and st and st["front"] == pareto and st["points"] == 9 and
          9 in [x[0] for x in st["rows"]] and d.execute_script("return window.__tn_marker") == "pareto page",
          "tell: %s; page %s; API %s" % (r.stderr.strip(), st and st["front"], pareto))

    # three metrics: another axis re-plots (same points, same front, another step line)
    name = PARETO3[0]
    d.get(base + "#study=" + name)
    before = wait_for(lambda: (lambda p: p if p["ready"] and p["study"] == name else None)(
        d.execute_script(JS_PARETO)), 15)
    check("pareto3_line_of_two_metrics", before and before["line"] == [1, 2, 5], str(before and before["line"]))
    Select(d.find_element(By.ID, "pareto-y")).select_by_value("2")
    after = wait_for(lambda: (lambda p: p if p["y"] == "2" else None)(d.execute_script(JS_PARETO)), 5)
    check("pareto_axis_switch_replots", after and before and after["x"] == "0" and after["line"] == [1, 3, 6] and
          after["step"] != before["step"] and after["front"] == before["front"] and after["points"] == before["points"] and
          after["titles"][1].startswith("<b>mem</b>") and "minimise" in after["titles"][1],
          "before %s; after %s" % (before, after))
    # the same metric on both axes is not offered: x takes y's old metric instead
    Select(d.find_element(By.ID, "pareto-x")).select_by_value("2")
    swapped = wait_for(lambda: (lambda p: p if p["x"] == "2" else None)(d.execute_script(JS_PARETO)), 5)
    check("pareto_axis_swap", swapped and swapped["y"] == "0", str(swapped and (swapped["x"], swapped["y"])))
    s = state(d)
    check("pareto_not_pwned", s["pwned"] == "undefined" and s["imgs"] == 0 and s["scripts"] == 1,
          "pwned %s, %d img, %d script elements" % (s["pwned"], s["imgs"], s["scripts"]))
    d.save_screenshot(os.path.join(WORK, "dashboard-pareto.png"))
    bad = drain_console(d)
    check("pareto_console_clean", not bad, "; ".join(bad))


# ---- phase 1: a running study ---------------------------------------------------------
d = browser()  # first: on a busy machine the browser is the slow part to start
run_spec = spec("dash_live", TRIALS)
run = start(["run", run_spec, "--dashboard=127.0.0.1:0", "--poll=0.1", "--grace=2", "--seed=7"],
            os.path.join(WORK, "run.out"))
t_open = time.time()
try:
    url = dashboard_url(os.path.join(WORK, "run.out"), run)
    check("url_has_token", "#token=" in url, url)
    d.get(url)
    check("page_ready", wait_for(lambda: state(d)["ready"], 15), "body[data-ready] never set")
    s = state(d)
    check("token_removed_from_url", "token=" not in d.current_url, d.current_url)
    check("study_listed", "dash_live" in s["studies"], str(s["studies"]))
    check("study_selected", s["name"] == "dash_live", s["name"])
    check("max_trials_shown", s["max"] == TRIALS, str(s["max"]))
    d.execute_script("window.__tn_marker = 'same page';")
    first = s
    print("# first look: done %d, rows %d, points %d, events %d" % (s["done"], s["rows"], s["points"], s["events"]))

    # Live: counts, rows, points, dots grow while the study runs, with no reload.
    def grown():
        now = state(d)
        if now["done"] > first["done"] and now["points"] > first["points"] and now["dots"] > 0 \
                and now["rows"] >= now["done"] and now["events"] > first["events"] and now["done"] >= 3:
            return now
        return None
    s = wait_for(grown, 30, 0.25)
    if check("updates_live", s, "no growth: first %s, last %s" % (first, state(d))):
        check("no_reload", s["marker"] == "same page", "the page was reloaded")
        check("done_count_grew", s["done"] > first["done"], "%d -> %d" % (first["done"], s["done"]))
        check("table_rows", s["rows"] >= s["done"] and s["total"] >= s["rows"], "rows %d, total %d, done %d" % (s["rows"], s["total"], s["done"]))
        check("best_chart_dots", s["dots"] > 0 and s["bestLine"] > 0, "dots %d" % s["dots"])
        check("curves_chart", s["curves"] > 0 and s["points"] >= s["curves"], "curves %d points %d" % (s["curves"], s["points"]))
        check("parallel_coordinates", s["lines"] >= s["done"], "lines %d" % s["lines"])
        check("canvases_drawn", s["pixels"][0] > 0 and s["pixels"][1] > 0, str(s["pixels"]))
        check("log_axis", s["lrScale"] == "UNIT_LOG_SCALE", str(s["lrScale"]))
        check("planted_value_as_text_in_chart", PLANT_IMG in s["optAxis"] and PLANT_SCRIPT in s["optAxis"], str(s["optAxis"]))
        check("best_shown", s["best"] is not None, "no best value shown")
    # Still running? (the rest of this phase needs the live server)
    check("study_still_running", run.poll() is None, "the run ended before the live checks were done")
    d.save_screenshot(os.path.join(WORK, "dashboard-live.png"))
    text = open_trial_view(d, "live")
    check("live_log_tail_is_text", PLANT_SCRIPT in text and "step " in text, repr(text[:300]))
    s = state(d)
    check("live_not_pwned", s["pwned"] == "undefined" and s["imgs"] == 0 and s["scripts"] == 1,
          "pwned %s, %d img, %d script elements" % (s["pwned"], s["imgs"], s["scripts"]))
    d.find_element(By.ID, "tv-close").click()
    bad = drain_console(d)
    check("live_console_clean", not bad, "; ".join(bad))
    d.get("about:blank")  # closes the event stream before the run ends
    print("# live phase took %.1f s" % (time.time() - t_open))

    # ---- phase 2: the finished study, served by `tuner serve` --------------------------
    try:
        rc = run.wait(60)
    except subprocess.TimeoutExpired:
        rc = None
    check("run_exit0", rc == 0, "tuner run exited %s; see %s/run.out" % (rc, WORK))
    trials = []
    make_pareto_studies()
    cancel_spec = spec("dash_cancel", 3)
    subprocess.run([TUNER, "create", cancel_spec], env=env, check=False, stdout=subprocess.DEVNULL)
    serve = start(["serve", "--listen=127.0.0.1:0"], os.path.join(WORK, "serve.out"))
    surl = dashboard_url(os.path.join(WORK, "serve.out"), serve)
    token = surl.split("#token=", 1)[1]
    base = surl.split("#", 1)[0]
    # Without the token: a loopback dashboard answers GETs; cancelling asks for it.
    d.get(base + "#study=dash_live")
    check("serve_page_ready", wait_for(lambda: state(d)["ready"], 15), "body[data-ready] never set")
    s = wait_for(lambda: (lambda x: x if x["done"] == TRIALS and x["rows"] == TRIALS and x["dots"] > 0 else None)(state(d)), 10)
    if check("finished_study_shown", s, str(state(d))):
        c = s["counts"]
        check("counts_add_up", c.get("SUCCEEDED", 0) + c.get("FAILED", 0) + c.get("STOPPED", 0) == TRIALS, str(c))
        check("final_state", s["state"] == "SUCCEEDED", s["state"])
        check("one_metric_no_pareto_panel", not s["paretoShown"], "a study of one metric shows the Pareto panel")
        check("dots_per_valued_trial", s["dots"] == c.get("SUCCEEDED", 0) + c.get("STOPPED", 0), "%d dots, %s" % (s["dots"], c))
        trials = json.loads(subprocess.run([TUNER, "trials", "dash_live", "--format=json"], env=env,
                                           capture_output=True, text=True).stdout or "[]")
        planted = sorted({t["params"]["opt"] for t in trials} - {"sgd"})
        check("planted_value_as_text_in_table", planted and all(v in s["optCells"] for v in planted),
              "planted values sampled: %s; cells: %s" % (planted, s["optCells"]))
        best = json.loads(subprocess.run([TUNER, "best", "dash_live", "--format=json"], env=env,
                                         capture_output=True, text=True).stdout or "{}")
        check("best_matches_cli", s["best"] is not None and abs(float(s["best"]) - best.get("objective", 1e9)) < 1e-9,
              "page %s, tuner best %s" % (s["best"], best.get("objective")))
    # Sorting by the objective (on the server): the first row has the highest value.
    top = max((t for t in trials if t["objective"] is not None), key=lambda t: t["objective"],
              default={"number": None})
    d.find_element(By.CSS_SELECTOR, "#trial-head th:nth-child(3) button").click()
    first_row = wait_for(lambda: d.execute_script(
        "const th = document.querySelector('#trial-head th:nth-child(3)');"
        "return th.getAttribute('aria-sort') === 'descending' && document.querySelector('#trial-body tr').dataset.trial"), 5)
    check("sort_by_value", first_row and int(first_row) == top["number"], "first row %s, highest %s" % (first_row, top["number"]))
    # The state filter
    d.find_element(By.CSS_SELECTOR, "#state-filter input[value='SUCCEEDED']").click()
    rows = wait_for(lambda: (lambda st: st if st and all(x == "SUCCEEDED" for x in st) else None)(d.execute_script(
        "return Array.from(document.querySelectorAll('#trial-body tr')).map(r => r.dataset.state)")), 5)
    check("state_filter", rows and len(rows) == s["counts"].get("SUCCEEDED", -1) if s else False, str(rows))
    d.find_element(By.CSS_SELECTOR, "#state-filter input[value='SUCCEEDED']").click()
    text = open_trial_view(d, "final")
    check("final_log_tail_is_text", PLANT_SCRIPT in text and PLANT_IMG in text, repr(text[:300]))
    reps = d.execute_script("return document.querySelectorAll('#tv-replicas tr').length")
    check("replicas_listed", reps >= 1, "%d replica rows" % reps)
    tv_points = d.execute_script("return Number(document.getElementById('tv-curve').getAttribute('data-points'))")
    check("trial_curve", tv_points == STEPS or tv_points > 0, "%s points" % tv_points)
    d.find_element(By.ID, "tv-close").click()
    time.sleep(0.3)
    d.execute_script("window.scrollTo(0, 0)")
    d.save_screenshot(os.path.join(WORK, "dashboard.png"))

    pareto_checks(d, base)

    # Cancel the stored study from the page: the token is asked for; a wrong one is refused.
    d.find_element(By.XPATH, "//ul[@id='study-list']//button[.//span[text()='dash_cancel']]").click()
    check("switch_study", wait_for(lambda: state(d)["name"] == "dash_cancel" and state(d)["ready"], 10), state(d)["name"])
    check("pareto_panel_gone", wait_for(lambda: not state(d)["paretoShown"], 5), "the Pareto panel stayed for a study of one metric")
    d.find_element(By.ID, "cancel-btn").click()
    asked = wait_for(lambda: d.find_element(By.ID, "cancel-token").is_displayed(), 5)
    check("cancel_asks_token", asked, "no token field in the dialog")
    d.find_element(By.ID, "cancel-token").send_keys("0" * 32)
    d.find_element(By.ID, "cancel-go").click()
    msg = wait_for(lambda: d.find_element(By.ID, "cancel-msg").is_displayed() and d.find_element(By.ID, "cancel-msg").text, 5)
    check("cancel_wrong_token_refused", msg and "wrong" in msg, str(msg))
    d.find_element(By.ID, "cancel-token").send_keys(token)
    d.find_element(By.ID, "cancel-go").click()
    closed = wait_for(lambda: not d.find_element(By.ID, "cancel-dialog").is_displayed(), 5)
    check("cancel_dialog_closes", closed, "the dialog stayed open: %s" % d.find_element(By.ID, "cancel-msg").text)
    shown = json.loads(subprocess.run([TUNER, "show", "dash_cancel", "--format=json"], env=env,
                                      capture_output=True, text=True).stdout or "{}")
    check("cancelled_in_store", shown.get("state") == "CANCELLED", str(shown.get("state")))
    check("cancelled_on_page", wait_for(lambda: state(d)["state"] == "CANCELLED", 5), state(d)["state"])

    s = state(d)
    check("never_pwned", s["pwned"] == "undefined" and s["imgs"] == 0,
          "window.__pwned is %s; %d <img> elements in the page" % (s["pwned"], s["imgs"]))
    bad = drain_console(d)
    check("console_clean", not bad, "; ".join(bad))
except WebDriverException as e:
    fail("browser", str(e).splitlines()[0])
finish()
