#!/usr/bin/python3
"""Drives Debian's Chromium (headless, through chromium-driver and
python3-selenium) against a live loom host: log on through the page, see
the experiments page list an exec, its loss curve grow, the devices page
and its timeline, the plans and models pages, Stop from the page, a model
deployed from a zip, its profile edited (seen by `loom model view`),
started, asked, stopped and undeployed, a tuning task submitted from its
JSON and a zip (a bad one refused as the CLI refuses it) and its
experiments and plots filling, and the refusals a browser meets
(a wrong password, another user's exec, a bad profile value).
Screenshots of every page go to SHOTS. Prints one "ok: ..." or "FAIL: ..."
line per check; exits 1 when any failed.

   console_browser.py URL USER PASSWORD EXEC_ID OTHER_EXEC_ID SHOTS MODEL_ZIP SERVING_ZIP LOOM \
       TASK_JSON TASK_ZIP
"""
import json
import os
import subprocess
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_driver import browser, check, failures, wait  # noqa: E402

url, user, password, exec_id, other_exec, shots, model_zip, serving_zip, loom, task_json, task_zip = \
    sys.argv[1:12]


def model_view(name):
    """`loom --json model view NAME` (the test's administrator), or None."""
    r = subprocess.run([loom, "--json", "model", "view", name], capture_output=True, text=True)
    if r.returncode != 0:
        print("loom model view %s: %s" % (name, r.stderr.strip()), flush=True)
    return json.loads(r.stdout) if r.returncode == 0 else None

def text_of(d, css):
    els = d.find_elements(By.CSS_SELECTOR, css)
    return els[0].text if els else ""


def log_on(d, name, secret):
    d.get(url + "/")
    wait(d, 20, EC.presence_of_element_located((By.ID, "user")), "the log-on form")
    check("the log-on form's controls are labelled", not unlabelled(d))
    d.find_element(By.ID, "user").send_keys(name)
    d.find_element(By.ID, "password").send_keys(secret)
    d.find_element(By.ID, "logon-submit").click()


def shot(d, name):
    d.save_screenshot("%s/%s.png" % (shots, name))


def unlabelled(d):
    """The form controls on the page with no label, and the buttons and
    links with no text."""
    return d.execute_script(
        "return [...document.querySelectorAll('input, select, textarea')]"
        ".filter(e => !e.labels || !e.labels.length).map(e => e.id || e.name)"
        ".concat([...document.querySelectorAll('button, a')].filter(e => !e.textContent.trim())"
        ".map(e => e.outerHTML.slice(0, 60)))")


AXE = open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "axe-core-4.10.2", "axe.min.js")).read()


def serious_violations(d):
    """axe-core's serious and critical violations on the page, as
    "rule: target" texts."""
    d.execute_script(AXE)
    found = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations"
        ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
        ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).slice(0, 3).join(', '))))"
        ".catch(e => done(['axe failed: ' + e]))")
    return found


def updates(d):
    """How the page is kept up to date: "events" or "poll"."""
    return d.execute_script("return document.documentElement.dataset.updates")


def no_horizontal_scroll(d):
    return d.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")


def settles_without_horizontal_scroll(d, seconds=10):
    """After a resize a page lays out again in its own time (Chart.js sizes
    its canvas from a ResizeObserver, after the resize has returned: a
    check made at once once saw the model page's 1280 px chart at 375 px):
    true once nothing scrolls sideways, false if it still does after
    `seconds`."""
    try:
        return bool(WebDriverWait(d, seconds, poll_frequency=0.2).until(no_horizontal_scroll))
    except TimeoutException:
        return False


d = browser()
try:
    # A wrong password: the page says so, no session.
    log_on(d, user, "wrong-password")
    st = wait(d, 20, lambda d: "refused" in text_of(d, "#status"), "a wrong password is refused")
    check("a wrong password is refused on the page", bool(st))
    shot(d, "logon-refused")
    found = serious_violations(d)
    check("axe-core: no serious or critical violation on the log-on page %s" % found, not found)
    check("no session cookie readable by the page (HttpOnly)",
          "loom_session" not in d.execute_script("return document.cookie"))

    # Log on; the experiments page lists the exec.
    d.find_element(By.ID, "password").clear()
    # from the keyboard alone: Enter in the password field
    d.find_element(By.ID, "password").send_keys(password + Keys.ENTER)
    row = wait(d, 30, EC.presence_of_element_located(
        (By.CSS_SELECTOR, '#execs tr[data-exec="%s"]' % exec_id)), "the exec in the list")
    check("the experiments page lists the exec", row is not None)
    check("the session cookie is HttpOnly (the page cannot read it)",
          "loom_session" not in d.execute_script("return document.cookie"))
    shot(d, "experiments")

    # One exec: its loss curve grows as it trains.
    d.get(url + "/console/#/execs/" + exec_id)
    def plotted(d):
        return int(text_of(d, "#loss-points").split(" ")[0] or 0)
    first = wait(d, 120, lambda d: plotted(d) >= 1, "a first epoch's loss")
    seen_first = plotted(d)
    grown = wait(d, 120, lambda d: plotted(d) > seen_first, "the loss curve grows")
    check("the loss curve grows while the page watches (%d, then %s)" %
          (seen_first, text_of(d, "#loss-points")), bool(first) and bool(grown))
    check("Chart.js holds the points", d.execute_script(
        "const c = window.Chart && window.Chart.getChart(document.getElementById('loss-chart'));"
        "return c ? c.data.datasets[0].data.length : 0") >= 2)
    check("Chart.js drew on the canvas", d.execute_script(
        "return !!window.Chart && !!window.Chart.getChart(document.getElementById('loss-chart'))"))
    check("the exec's facts show", "Owner" in text_of(d, "#exec-summary"))
    check("the exec page follows the host's event stream (%s)" % updates(d), updates(d) == "events")
    logged = wait(d, 30, lambda d: "epoch" in d.find_element(By.ID, "exec-log").get_attribute("textContent"),
                  "the training driver's log")
    check("the training driver's log is followed", bool(logged))
    check("every worker's log may be picked", len(d.find_elements(By.CSS_SELECTOR, "#log-worker option")) == 3)
    shot(d, "exec")

    # Devices: every device, and the exec holding some while it runs.
    d.get(url + "/console/#/devices")
    rows = wait(d, 20, EC.presence_of_all_elements_located((By.CSS_SELECTOR, "#devices tr[data-slot]")),
                "the devices table")
    check("the devices page lists the devices", bool(rows))
    hist = wait(d, 20, lambda d: text_of(d, "#devices-history").split(" ")[0].isdigit() and
                int(text_of(d, "#devices-history").split(" ")[0]) >= 2, "the last hour's changes")
    check("the last hour's timeline has the exec's devices (%s)" % text_of(d, "#devices-history"),
          bool(hist) and d.execute_script(
              "const c = window.Chart.getChart(document.getElementById('devices-chart'));"
              "return c.data.datasets.some(s => s.label === arguments[0] &&"
              " s.data.some(p => p.y === 2))", exec_id))
    shot(d, "devices")

    # Another user's exec: the host answers 404, the page says so.
    d.get(url + "/console/#/execs/" + other_exec)
    st = wait(d, 20, lambda d: "not found" in text_of(d, "#status").lower() or
              "no exec" in text_of(d, "#status").lower(), "another user's exec refused")
    check("another user's exec is not shown (%s)" % text_of(d, "#status"), bool(st))
    check("its refused stream falls back to polling, said on the page (%s: %s)" %
          (updates(d), text_of(d, "#updates")), updates(d) == "poll" and "refused" in text_of(d, "#updates"))
    shot(d, "other-users-exec")

    # Plans and models: the tables (the models page has no model here).
    for page, ready, name in (("#/plans", "#plans tr[data-plan]", "plans"),
                              ("#/models", "#models p, #models tr", "models")):
        d.get(url + "/console/" + page)
        check("the %s page" % name, wait(d, 20, EC.presence_of_element_located(
            (By.CSS_SELECTOR, ready)), "page " + page) is not None)
        if name == "plans":
            # the running exec's devices, against what the round gave
            held = text_of(d, '#plans tr[data-plan="/"] td.held')
            check("the root plan holds the running exec's devices (%s)" % held,
                  held.split(" ")[0].isdigit() and int(held.split(" ")[0]) >= 1)
        shot(d, name)

    # Stop from the page: a state-changing call, which carries the CSRF
    # token the page holds in memory.
    d.get(url + "/console/#/execs/" + exec_id)
    wait(d, 20, EC.element_to_be_clickable((By.ID, "exec-stop")), "the Stop button").click()
    stopped = wait(d, 60, lambda d: "KILLED" in text_of(d, "#exec-summary") or
                   "FINISHED" in text_of(d, "#exec-summary"), "the exec stopped")
    check("Stop from the page ends the exec (%s)" % text_of(d, "#status"),
          bool(stopped) and "KILLED" in text_of(d, "#exec-summary"))
    shot(d, "exec-stopped")
    # Its result folder as a zip, through the page's link (the cookie).
    got = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(document.getElementById('exec-download').href, {credentials: 'same-origin'})"
        ".then(r => r.arrayBuffer().then(b => done([r.status, new TextDecoder().decode(new Uint8Array(b).slice(0, 2))])))"
        ".catch(e => done([0, String(e)]));")
    check("the result downloads as a zip from the page (%s)" % got, got == [200, "PK"])

    # A tuning task from the page: a bad one (an algorithm the host does not
    # have) refused in the words the CLI prints for the same file; then the
    # task's JSON from its file and the folder's zip, and its page opens.
    d.get(url + "/console/#/tuning")
    wait(d, 20, EC.presence_of_element_located((By.ID, "task-form")), "the task form")
    check("every control of the task form is labelled (%s)" % unlabelled(d), not unlabelled(d))
    check("the task is prefilled with a template", "hyperParams" in
          d.find_element(By.ID, "task-json").get_attribute("value"))
    bad = json.load(open(task_json))
    bad["hpoName"], bad["algoDef"]["algorithm"] = "console-bad", "no-such-search"
    bad_path = os.path.join(os.path.dirname(task_json), "bad-task.json")
    json.dump(bad, open(bad_path, "w"))
    cli = subprocess.run([loom, "hpo", "submit", bad_path, "--model-dir",
                          os.path.join(os.path.dirname(task_zip), "tune")], capture_output=True, text=True)
    d.execute_script("document.getElementById('task-json').value = arguments[0]", json.dumps(bad))
    d.find_element(By.ID, "task-file").send_keys(task_zip)
    d.find_element(By.ID, "task-go").click()
    refused = wait(d, 30, lambda d: "Refused" in text_of(d, "#status"), "a refused task")
    words = text_of(d, "#status").replace("Refused: ", "", 1)
    check("a bad task is refused as the CLI refuses it (page: %s; CLI: %s)" % (words, cli.stderr.strip()),
          bool(refused) and cli.returncode != 0 and words and words in cli.stderr)
    shot(d, "tuning-refused")
    d.find_element(By.ID, "task-json-file").send_keys(task_json)
    wait(d, 10, lambda d: "console-tune" in d.find_element(By.ID, "task-json").get_attribute("value"),
         "the task's file read into the form")
    d.find_element(By.ID, "task-go").click()
    made = wait(d, 60, lambda d: d.current_url.endswith("#/tuning/console-tune"), "the new task's page")
    check("a task submitted from the page opens its page (%s, %s)" % (d.current_url, text_of(d, "#status")),
          bool(made))

    # Its experiments fill, the objective with the running best, and the
    # parallel coordinates.
    rows = wait(d, 180, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#task-experiments tr[data-experiment]")) == 4,
                "the task's 4 experiments")
    check("the tuning page lists the task's experiments", bool(rows))
    check("the task page follows the host's event stream (%s)" % updates(d), updates(d) == "events")
    plotted = wait(d, 180, lambda d: d.execute_script(
        "const c = window.Chart.getChart(document.getElementById('objective-chart'));"
        "const [o, b] = c.data.datasets; return o.data.length === 4 && b.data.length === 4 &&"
        " b.data.every((p, i) => i === 0 || p.y <= b.data[i - 1].y)"), "the 4 experiments' objective")
    check("the objective is plotted with the best so far", bool(plotted))
    check("the parallel coordinates draw one line an experiment",
          len(d.find_elements(By.CSS_SELECTOR, "#parallel polyline")) == 4)
    shot(d, "tuning")

    # Deploy from the page: a zip without model.json is refused as the host
    # words it; the zip of echo-so's folder is deployed and its page opens.
    d.get(url + "/console/#/models")
    wait(d, 20, EC.presence_of_element_located((By.ID, "deploy-file")), "the deploy form")
    check("every control of the deploy form is labelled (%s)" % unlabelled(d), not unlabelled(d))
    d.find_element(By.ID, "deploy-file").send_keys(model_zip)
    d.find_element(By.ID, "deploy-go").click()
    refused = wait(d, 30, lambda d: "Refused" in text_of(d, "#status"), "a refused deploy")
    check("a model directory without model.json is refused, the host's words shown (%s)" %
          text_of(d, "#status"), bool(refused) and "model.json" in text_of(d, "#status"))
    d.find_element(By.ID, "deploy-file").clear()
    d.find_element(By.ID, "deploy-file").send_keys(serving_zip)
    d.find_element(By.ID, "deploy-go").click()
    opened = wait(d, 60, lambda d: d.current_url.endswith("#/models/echo-so"), "the deployed model's page")
    check("a zip deployed from the page opens its model (%s, %s)" % (d.current_url, text_of(d, "#status")),
          bool(opened))
    check("the host has it", (model_view("echo-so") or {}).get("name") == "echo-so")
    wait(d, 20, lambda d: text_of(d, "#model-state").startswith("stopped"), "the model's state")
    check("the model page follows the host's event stream (%s)" % updates(d), updates(d) == "events")
    check("and says nothing of polling", not d.find_element(By.ID, "updates").is_displayed())
    shot(d, "model-deployed")

    # Its profile from the form: kernel_max 2, seen by loom model view; 100
    # (past 64) refused with the host's words.
    check("every control of the profile form is labelled (%s)" % unlabelled(d), not unlabelled(d))
    def set_max(v):
        box = d.find_element(By.ID, "profile-kernel_max")
        box.clear()
        box.send_keys(v)
        d.find_element(By.ID, "profile-save").click()
    set_max("2")
    saved = wait(d, 20, lambda d: "saved" in text_of(d, "#status"), "the profile saved")
    policy = ((model_view("echo-so") or {}).get("profile") or {}).get("policy") or {}
    check("kernel_max from the form is the model's (%s; loom model view: %s)" %
          (text_of(d, "#status"), policy), bool(saved) and policy.get("kernel_max") == 2)
    set_max("100")
    refused = wait(d, 20, lambda d: "Refused" in text_of(d, "#status"), "a bad kernel_max refused")
    check("kernel_max 100 is refused, the host's words shown (%s)" % text_of(d, "#status"),
          bool(refused) and "kernel_max" in text_of(d, "#status"))
    policy = ((model_view("echo-so") or {}).get("profile") or {}).get("policy") or {}
    check("and the profile kept 2 (%s)" % policy, policy.get("kernel_max") == 2)
    found = serious_violations(d)
    check("axe-core: no serious or critical violation on the model page %s" % found, not found)
    shot(d, "model-profile-refused")
    d.set_window_size(375, 800)
    check("no horizontal scroll at 375 px: the model page", settles_without_horizontal_scroll(d))
    d.set_window_size(1280, 800)

    # A model: started from the page, a request sent and answered (the
    # inference lane checks the cookie's CSRF token too), stopped.
    wait(d, 20, EC.element_to_be_clickable((By.ID, "model-start")), "the Start button").click()
    started = wait(d, 90, lambda d: text_of(d, "#model-state").startswith("started"), "the model serving")
    check("Start from the page serves the model (%s)" % text_of(d, "#model-state"), bool(started))
    body = d.find_element(By.ID, "infer-body")
    body.clear()
    body.send_keys('{"from": "the console"}')
    d.find_element(By.ID, "infer-send").click()
    answered = wait(d, 30, lambda d: "the console" in text_of(d, "#infer-answer"), "the answer")
    check("the model answers the page's request (%s)" % text_of(d, "#infer-answer"), bool(answered))
    shot(d, "model")
    d.find_element(By.ID, "model-stop").click()
    stopped = wait(d, 60, lambda d: text_of(d, "#model-state").startswith("stopped"), "the model stopped")
    check("Stop from the page stops the model", bool(stopped))

    # Undeploy, asked first.
    d.find_element(By.ID, "model-undeploy").click()
    asked = wait(d, 10, EC.visibility_of_element_located((By.ID, "model-undeploy-confirm")), "the question")
    check("Undeploy asks first", asked is not None and model_view("echo-so") is not None)
    asked.click()
    gone = wait(d, 60, lambda d: d.current_url.endswith("#/models") and
                not d.find_elements(By.CSS_SELECTOR, '#models tr[data-model="echo-so"]'), "the model undeployed")
    check("Undeploy from the page removes the model (%s)" % text_of(d, "#status"),
          bool(gone) and model_view("echo-so") is None)

    # Submit from the page: the host's own refusal shown, then an exec made.
    d.get(url + "/console/#/submit")
    wait(d, 20, lambda d: d.find_elements(By.CSS_SELECTOR, '#submit-framework option[value="edt"]'),
         "the frameworks")
    d.find_element(By.ID, "submit-file").send_keys(model_zip)
    check("every control of the submit form is labelled (%s)" % unlabelled(d), not unlabelled(d))
    check("the model directory's name from the zip's",
          d.find_element(By.ID, "submit-dir").get_attribute("value") == "small")
    d.find_element(By.ID, "submit-plan").send_keys("/no-such-plan")
    d.find_element(By.ID, "submit-go").click()
    refused = wait(d, 30, lambda d: "Refused" in text_of(d, "#status"), "a refused submission")
    check("the host's refusal is shown (%s)" % text_of(d, "#status"),
          bool(refused) and "no-such-plan" in text_of(d, "#status"))
    d.find_element(By.ID, "submit-plan").clear()
    d.find_element(By.ID, "submit-go").click()
    made = wait(d, 60, lambda d: "#/execs/" + user + "-" in d.current_url, "the new exec's page")
    check("a submission from the page opens its exec (%s)" % d.current_url, bool(made))
    shown = wait(d, 30, lambda d: "Owner" in text_of(d, "#exec-summary"), "the new exec")
    check("the new exec is the user's", bool(shown) and user in text_of(d, "#exec-summary"))
    shot(d, "submitted")

    # 375 px wide: no horizontal scrolling on the pages.
    d.set_window_size(375, 800)
    for page, ready in (("#/execs", "#execs tr"), ("#/execs/" + exec_id, "#exec-summary dl"),
                        ("#/devices", "#devices tr"), ("#/plans", "#plans tr"),
                        ("#/models", "#models p, #models tr"), ("#/submit", "#submit-form"),
                        ("#/plugins", "#plugins tr"), ("#/tuning/console-tune", "#parallel")):
        d.get(url + "/console/" + page)
        wait(d, 20, EC.presence_of_element_located((By.CSS_SELECTOR, ready)), "page " + page)
        check("no horizontal scroll at 375 px: " + page, settles_without_horizontal_scroll(d))
        found = serious_violations(d)
        check("axe-core: no serious or critical violation on %s %s" % (page, found), not found)
    shot(d, "devices-375")

    # No page broke the CSP or failed a script.
    errors = [e for e in d.get_log("browser")
              if e["level"] == "SEVERE" and ("Content Security Policy" in e["message"] or
                                             "Uncaught" in e["message"])]
    check("no CSP violation or script error (%s)" % errors[:2], not errors)
finally:
    d.quit()
sys.exit(1 if failures() else 0)
