#!/usr/bin/env python3
"""Checks fieldcap serve's real responses against its OpenAPI document with openapi-core (a
validator nobody here wrote): every endpoint, idle and recording, with and without the token,
refusals included. The document is the one the rig serves (/api/v1/openapi.yaml), which must
also be the file in the repository. Prints one JSON object: each request's method, path, status
and what the validator said; exits 1 if any response does not match.
"""
import argparse
import json
import sys
import time
from datetime import datetime, timedelta, timezone

import requests
from openapi_core import OpenAPI
from openapi_core.contrib.requests import RequestsOpenAPIRequest, RequestsOpenAPIResponse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("spec", help="the repository's openapi.yaml")
    parser.add_argument("--token", required=True)
    parser.add_argument("--session", help="only GET this session and the sessions, as they are now")
    arguments = parser.parse_args()
    base, token = arguments.base, arguments.token

    served = requests.get(base + "/api/v1/openapi.yaml", timeout=10)
    same_document = served.status_code == 200 and served.text == open(arguments.spec, encoding="utf-8").read()
    openapi = OpenAPI.from_file_path(arguments.spec)
    checks = []

    def call(method, path, expected, body=None, authorised=True, stream=False):
        headers = {"Authorization": f"Bearer {token}"} if authorised and token else {}
        response = requests.request(method, base + path, headers=headers, json=body, timeout=30, stream=stream)
        if stream:
            # A live MJPEG stream: the first bytes are enough for its status and type.
            first = next(response.iter_content(4096), b"")
            response.close()
            response._content = first
        error = None
        try:
            openapi.validate_response(RequestsOpenAPIRequest(response.request), RequestsOpenAPIResponse(response))
        except Exception as failure:  # noqa: BLE001 - every mismatch is reported
            error = f"{type(failure).__name__}: {failure}"
            cause = getattr(failure, "__cause__", None)
            if cause is not None:
                error += f" ({cause})"
        checks.append({
            "method": method, "path": path, "status": response.status_code, "expected": expected,
            "valid": error is None, "error": error,
        })
        return response

    if arguments.session:
        call("GET", "/api/v1/sessions", 200)
        call("GET", f"/api/v1/sessions/{arguments.session}", 200)
        return finish(same_document, checks)

    call("GET", "/api/health", 200, authorised=False)
    for path in ("/api/v1/rig", "/api/v1/status", "/api/v1/sessions", "/api/v1/preview/cam0.jpg", "/api/v1/live/imu0"):
        call("GET", path, 401, authorised=False)
    call("POST", "/api/v1/recording/start", 401, authorised=False)
    call("GET", "/api/v1/rig", 200)
    call("GET", "/api/v1/status", 200)
    call("POST", "/api/v1/recording/stop", 409)
    call("POST", "/api/v1/marks", 409, body={"label": "idle"})
    call("GET", "/api/v1/marks", 200)
    call("POST", "/api/v1/recording/start", 400, body={"durration": "1s"})
    started = call("POST", "/api/v1/recording/start", 201, body={"duration": "20s", "segment": "2s"}).json()
    name = started.get("name", "")
    call("POST", "/api/v1/recording/start", 409)
    time.sleep(2.5)
    call("GET", "/api/v1/status", 200)
    call("GET", "/api/v1/rig", 200)
    call("GET", "/api/v1/sessions", 200)
    call("GET", f"/api/v1/sessions/{name}", 200)
    call("GET", f"/api/v1/sessions/{name}/archive", 409)
    call("GET", "/api/v1/preview/cam0.jpg", 200)
    call("GET", "/api/v1/preview/cam0.mjpg", 200, stream=True)
    call("GET", "/api/v1/preview/imu0.jpg", 404)
    call("GET", "/api/v1/live/imu0", 426)
    call("GET", "/api/v1/live/cam0", 404)
    call("GET", "/api/v1/live/imu0?max_rate=0", 400)
    call("POST", "/api/v1/marks", 201, body={"label": "near-miss", "note": "a note", "before": "1s", "after": 0.5})
    call("POST", "/api/v1/marks", 400, body={"label": "bell\u0007"})
    call("POST", "/api/v1/marks", 401, body={"label": "x"}, authorised=False)
    call("GET", "/api/v1/marks", 200)
    call("POST", "/api/v1/recording/stop", 200)
    call("GET", "/api/v1/status", 200)
    call("GET", "/api/v1/sessions", 200)
    call("GET", f"/api/v1/sessions/{name}", 200)
    call("GET", f"/api/v1/sessions/{name}/archive", 200)
    now = datetime.now(timezone.utc)
    utc = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    call("GET", f"/api/v1/extract?from={utc(now - timedelta(seconds=3))}&to={utc(now - timedelta(seconds=1))}", 200)
    call("GET", "/api/v1/extract?from=yesterday&to=today", 400)
    call("GET", "/api/v1/sessions/x%01y", 400)
    call("GET", "/api/v1/sessions/nosuch", 404)
    call("DELETE", f"/api/v1/sessions/{name}", 200)
    call("DELETE", f"/api/v1/sessions/{name}", 404)

    # A recording checked for sync once it stopped: the rig's still, so each pair is refused,
    # and the session shows why.
    checked = call("POST", "/api/v1/recording/start", 201, body={"duration": "1.5s", "check_sync": True}).json()
    call("POST", "/api/v1/recording/start", 400, body={"check_sync": "yes"})
    deadline, shown = time.monotonic() + 60, {}
    while time.monotonic() < deadline:
        shown = requests.get(f"{base}/api/v1/sessions/{checked.get('name', '')}",
                             headers={"Authorization": f"Bearer {token}"}, timeout=10).json()
        if "sync_check" in shown:
            break
        time.sleep(0.5)
    call("GET", f"/api/v1/sessions/{checked.get('name', '')}", 200)
    call("GET", "/api/v1/sessions", 200)
    finish(same_document, checks, {"sync_check": shown.get("sync_check")})


def finish(same_document, checks, extra=None):
    failed = [c for c in checks if not c["valid"] or c["status"] != c["expected"]]
    json.dump({"same_document": same_document, "checks": checks, "failed": failed, **(extra or {})}, sys.stdout)
    print()
    sys.exit(0 if same_document and not failed else 1)


if __name__ == "__main__":
    main()
