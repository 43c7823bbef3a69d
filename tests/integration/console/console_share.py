#!/usr/bin/python3
"""The picture the console promises for two users sharing four devices:
alice's elastic exec alone holds 4; bob's arrives and they hold 2 + 2; bob's
ends and alice's holds 4 again. The devices page (alice's, live through
its event stream) shows each step in its table and its timeline. The test
script starts and stops bob's exec when this prints "step: NAME" and
answers on stdin. Screenshots of each step go to SHOTS.

   console_share.py URL USER PASSWORD EXEC_ID SHOTS
"""
import os
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_driver import browser, check, failures, shot_to, wait  # noqa: E402

url, user, password, exec_id, shots = sys.argv[1:6]


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


def step(name):
    print("step: " + name, flush=True)
    sys.stdin.readline()


d = browser()
try:
    d.get(url + "/")
    wait(d, 20, EC.presence_of_element_located((By.ID, "user")), "the log-on form")
    d.find_element(By.ID, "user").send_keys(user)
    d.find_element(By.ID, "password").send_keys(password + Keys.ENTER)
    wait(d, 30, EC.presence_of_element_located((By.ID, "execs")), "the experiments page")
    d.get(url + "/console/#/devices")
    alone = wait(d, 60, lambda d: mine(d) == 4, "alice's exec alone on 4 devices")
    check("alone, alice's exec holds the 4 devices (%s)" % held(d), bool(alone))
    check("the page is updated by the host's event stream",
          d.execute_script("return document.documentElement.dataset.updates") == "events")
    shot_to(d, shots, "share-alone")

    step("bob submits")
    shared = wait(d, 90, lambda d: mine(d) == 2 and others(d) == 2, "2 + 2")
    check("bob's exec arrives: 2 + 2 (%s)" % held(d), bool(shared))
    shot_to(d, shots, "share-2-2")

    step("bob stops")
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
    d.quit()
sys.exit(1 if failures() else 0)
