#!/usr/bin/python3
"""The picture the console promises for two users sharing four devices:
alice's elastic exec alone holds 4; bob, in a browser of his own (a second
webdriver, his own session), submits his 4-worker elastic exec from the
submit form and they hold 2 + 2; he stops it from his exec's page and
alice's holds 4 again. The devices page (alice's, live through its event
stream) shows each step in its table and its timeline. Prints "bob's exec:
ID" once bob's page opened it. Screenshots of each step go to SHOTS.

   console_share.py URL USER PASSWORD EXEC_ID SHOTS OTHER_USER OTHER_PASSWORD OTHER_ZIP
"""
import os
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_driver import browser, check, failures, shot_to, wait  # noqa: E402

url, user, password, exec_id, shots, bob, bob_password, bob_zip = sys.argv[1:9]


def held(d):
    """The devices table's holders: alice's exec by its id, others hidden
    (read in one script: the table is replaced as events arrive)."""
    return d.execute_script(
        "return [...document.querySelectorAll('#devices tr[data-slot]')]"
        ".map(r => r.cells[2].textContent)")


def mine(d):
    return sum(1 for h in held(d) if exec_id in h)


def others(d):
    return sum(1 for h in held(d) if "another user" in h)


def text_of(d, css):
    els = d.find_elements(By.CSS_SELECTOR, css)
    return els[0].text if els else ""


def log_on(d, name, secret):
    d.get(url + "/")
    wait(d, 20, EC.presence_of_element_located((By.ID, "user")), "the log-on form")
    d.find_element(By.ID, "user").send_keys(name)
    d.find_element(By.ID, "password").send_keys(secret + Keys.ENTER)
    wait(d, 30, EC.presence_of_element_located((By.ID, "execs")), "the experiments page")


d = browser()
b = None
try:
    log_on(d, user, password)
    d.get(url + "/console/#/devices")
    alone = wait(d, 60, lambda d: mine(d) == 4, "alice's exec alone on 4 devices")
    check("alone, alice's exec holds the 4 devices (%s)" % held(d), bool(alone))
    check("the page is updated by the host's event stream",
          d.execute_script("return document.documentElement.dataset.updates") == "events")
    shot_to(d, shots, "share-alone")

    # bob, in his own browser: the submit form, 4 workers of edt, his
    # model directory as a zip
    b = browser()
    log_on(b, bob, bob_password)
    check("bob's session is his own (%s)" % text_of(b, "#who"), text_of(b, "#who").startswith(bob + " "))
    b.get(url + "/console/#/submit")
    wait(b, 20, lambda b: b.find_elements(By.CSS_SELECTOR, '#submit-framework option[value="edt"]'),
         "the frameworks")
    b.find_element(By.ID, "submit-file").send_keys(bob_zip)
    workers = b.find_element(By.ID, "submit-workers")
    workers.clear()
    workers.send_keys("4")
    b.find_element(By.ID, "submit-go").click()
    made = wait(b, 60, lambda b: "#/execs/" + bob + "-" in b.current_url, "bob's exec page")
    bob_exec = b.current_url.split("#/execs/")[-1] if made else ""
    check("bob's submission opens his exec (%s, %s)" % (b.current_url, text_of(b, "#status")), bool(made))
    print("bob's exec: " + bob_exec, flush=True)
    shot_to(b, shots, "share-bob-submitted")

    shared = wait(d, 90, lambda d: mine(d) == 2 and others(d) == 2, "2 + 2")
    check("bob's exec arrives: 2 + 2 (%s)" % held(d), bool(shared))
    shot_to(d, shots, "share-2-2")

    # bob stops it from his exec's page
    wait(b, 20, EC.element_to_be_clickable((By.ID, "exec-stop")), "bob's Stop button").click()
    stopped = wait(b, 60, lambda b: "KILLED" in text_of(b, "#exec-summary"), "bob's exec stopped")
    check("bob's Stop ends his exec (%s)" % text_of(b, "#status"), bool(stopped))
    shot_to(b, shots, "share-bob-stopped")
    back = wait(d, 90, lambda d: mine(d) == 4, "alice's exec back on 4")
    check("bob's exec ends: alice's holds 4 again (%s)" % held(d), bool(back))

    # The timeline: alice's series steps 4, then 2, then 4.
    def steps(d):
        ys = d.execute_script(
            "const c = window.Chart && window.Chart.getChart(document.getElementById('devices-chart'));"
            "const s = c && c.data.datasets.find(s => s.label === arguments[0]);"
            "return s ? s.data.map(p => p.y) : [];", exec_id)
        seq = [y for i, y in enumerate(ys) if i == 0 or y != ys[i - 1]]
        want, at = [4, 2, 4], 0
        for y in seq:
            if at < 3 and y == want[at]:
                at += 1
        return at == 3 and seq
    drawn = wait(d, 30, steps, "the timeline's 4 -> 2 -> 4")
    check("the timeline shows alice's exec on 4, then 2, then 4 (%s)" % drawn, bool(drawn))
    check("and bob's as another user's, never by name", d.execute_script(
        "const c = window.Chart.getChart(document.getElementById('devices-chart'));"
        "return c.data.datasets.some(s => s.label === \"another user's\" && s.data.some(p => p.y === 2))"))
    shot_to(d, shots, "share-timeline")
finally:
    if b:
        b.quit()
    d.quit()
sys.exit(1 if failures() else 0)
