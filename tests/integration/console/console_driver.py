"""What the browser tests share: Debian's Chromium, headless, through
chromium-driver and python3-selenium; checks printed one a line ("ok: ..."
or "FAIL: ..."), counted; waits that fail as a check when they time out."""
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

_failed = 0


def check(what, cond):
    global _failed
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    _failed += 0 if cond else 1


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-background-networking",
              "--disable-gpu", "--disable-dev-shm-usage",
              "--user-data-dir=" + tempfile.mkdtemp(prefix="loom-chromium-")):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    d.set_window_size(1280, 800)
    return d


def wait(d, seconds, cond, what):
    try:
        return WebDriverWait(d, seconds, poll_frequency=0.2).until(cond)
    except Exception:
        check(what + " (timed out after %d s)" % seconds, False)
        return None


def failures():
    return _failed


def shot_to(d, folder, name):
    d.save_screenshot("%s/%s.png" % (folder, name))
