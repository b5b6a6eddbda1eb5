#!/usr/bin/env python3
"""Drives fieldcap serve's web page in a real headless Chromium (Debian's chromium and
chromium-driver, through Selenium), as a person would: opens it with ?token= (as a link from the
rig would), waits for the live preview, checks that the image changes and that the IMU's live plot
fills and moves (a screenshot of the plots kept beside the page's), starts a recording with
the page's button, marks a moment with its Mark button, stops it, and deletes the session from the sessions table. Saves a
screenshot taken while recording. Prints one JSON object with what it saw.
"""
import argparse
import json
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("screenshot")
    parser.add_argument("--token", default="")
    parser.add_argument("--camera", default="cam0")
    parser.add_argument("--sensor", default="imu0")
    arguments = parser.parse_args()

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,1400"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    result = {"steps": []}
    # The page re-renders its status and sessions tables on every status message: an element found
    # a moment ago may be replaced by the time it is read. A wait's condition that meets one looks
    # again at its next poll (Selenium's idiom for a live page), within the same 30 s.
    wait = WebDriverWait(driver, 30, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException])

    def step(name):
        result["steps"].append(name)

    def state():
        return driver.find_element(By.ID, "state").text

    try:
        driver.get(arguments.base + "/" + (f"?token={arguments.token}" if arguments.token else ""))
        wait.until(lambda d: state() == "idle")
        step("idle")
        result["token_form_shown"] = driver.find_element(By.ID, "token-form").is_displayed()
        image = wait.until(lambda d: d.find_element(By.ID, f"preview-{arguments.camera}"))
        wait.until(lambda d: d.execute_script("return arguments[0].naturalWidth", image) > 0)
        result["preview_size"] = driver.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", image)
        first = image.screenshot_as_png
        time.sleep(1.5)
        second = image.screenshot_as_png
        result["preview_changed"] = first != second
        step("preview")

        # The sensor's live plot: its accelerometer trace fills and moves (the canvas keeps how
        # many samples it holds and its newest values), and a screenshot of the plots is kept.
        canvas_id = f"plot-{arguments.sensor}-accel"
        canvas = wait.until(lambda d: d.find_element(By.ID, canvas_id))
        wait.until(lambda d: int(d.find_element(By.ID, canvas_id).get_attribute("data-samples") or 0) > 100)
        before = driver.find_element(By.ID, canvas_id).get_attribute("data-last")
        picture = canvas.screenshot_as_png
        time.sleep(1.5)
        result["plot_samples"] = int(driver.find_element(By.ID, canvas_id).get_attribute("data-samples"))
        result["plot_moved"] = before != driver.find_element(By.ID, canvas_id).get_attribute("data-last") \
            and picture != driver.find_element(By.ID, canvas_id).screenshot_as_png
        result["plot_caption"] = driver.find_element(By.ID, f"{canvas_id}-caption").text
        driver.find_element(By.ID, "sensors-section").screenshot(arguments.screenshot.replace(".png", "-plots.png"))
        step("plots")

        driver.find_element(By.ID, "duration").send_keys("60s")
        driver.find_element(By.ID, "start").click()
        wait.until(lambda d: state() == "recording")
        step("recording")
        # Once the status shows the camera's frames written.
        def written(d):
            rows = d.find_elements(By.CSS_SELECTOR, "#streams tr")
            cells = [r.find_elements(By.TAG_NAME, "td") for r in rows]
            return [c[3].text for c in cells if c and c[0].text == arguments.camera and c[3].text not in ("", "0")]
        wait.until(written)
        # A mark from the page's button: said in the message and counted in the status.
        driver.find_element(By.ID, "mark-label").send_keys("page-mark")
        driver.find_element(By.ID, "mark").click()
        wait.until(lambda d: d.find_element(By.ID, "message").text.startswith('marked m1 "page-mark"'))
        wait.until(lambda d: d.find_element(By.ID, "marks").text.startswith("1 mark"))
        result["mark_message"] = driver.find_element(By.ID, "message").text
        step("marked")
        time.sleep(1)
        driver.save_screenshot(arguments.screenshot)
        step("screenshot")
        driver.find_element(By.ID, "stop").click()
        wait.until(lambda d: state() == "idle")
        wait.until(lambda d: "dropped" in d.find_element(By.ID, "message").text)
        result["stop_message"] = driver.find_element(By.ID, "message").text
        step("stopped")

        # The table is reloaded after the stop: until then it still shows the session recording.
        def finished_rows(d):
            rows = d.find_elements(By.CSS_SELECTOR, "#sessions tr[data-name]")
            states = [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows]
            return rows if rows and all(state.startswith("complete") for state in states) else None
        def finished(d):
            rows = finished_rows(d)
            return rows and ([r.get_attribute("data-name") for r in rows], rows[0].find_elements(By.TAG_NAME, "td")[1].text)
        result["sessions"], result["session_state"] = wait.until(finished)
        result["session_marks"] = finished_rows(driver)[0].find_elements(By.TAG_NAME, "td")[6].text
        driver.execute_script("window.confirm = () => true")

        def delete(d):
            name = result["sessions"][0]
            d.find_element(By.CSS_SELECTOR, f'#sessions tr[data-name="{name}"] button.delete').click()
            return True
        wait.until(delete)
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#sessions tr[data-name]"))
        step("deleted")
        result["log"] = driver.find_element(By.ID, "log").text.splitlines()
    except Exception as error:  # noqa: BLE001 - reported, with where the page was
        result["error"] = f"{type(error).__name__}: {error}"
        try:
            result["page_state"] = state()
            result["message"] = driver.find_element(By.ID, "message").text
            driver.save_screenshot(arguments.screenshot)
        except Exception:  # noqa: BLE001
            pass
    finally:
        result["console"] = [entry.get("message") for entry in driver.get_log("browser")] if hasattr(driver, "get_log") else []
        driver.quit()
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
