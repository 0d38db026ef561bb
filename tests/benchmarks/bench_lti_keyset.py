"""LTI launches against a slow keyset (a script, not a test): do forged launches hold up other writers?

    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/bench_lti_keyset.py [--launches 5] [--delay-s 2] [--uploads 10]

SQLite. The real app under uvicorn (in this process) and a keyset server on loopback
(tests/service/lti/lti_probe.py) that answers after `--delay-s`. `--launches` forged launches (each with its
own login state, a token naming an unknown kid) are posted at once; meanwhile a learner uploads
`--uploads` notebooks one after another. Printed: the keyset fetches, the launches' answers, and the
uploads' latency (median, max) and answers. Run it with PYTHONPATH pointing at another tree to compare
(the probe and this script come from this tree).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "service" / "lti"))
CATALOGUE = REPO / "tests" / "fixtures" / "service_catalogue"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--delay-s", type=float, default=2.0)
    parser.add_argument("--uploads", type=int, default=10)
    args = parser.parse_args()

    import socket

    import httpx
    import uvicorn
    from lti_probe import CheckoutCounter, ProbeServer

    from grading.exercise import Catalogue
    from service.app import create_app
    from service.auth.service import create_token
    from service.config import Settings
    from service.db import check_schema, make_engine, transaction
    from service.lti import service as lti_service

    work = Path(tempfile.mkdtemp(prefix="bench-lti-"))
    url = f"sqlite:///{work / 'bench.db'}"
    check_schema(make_engine(url), migrate=True)
    settings = Settings(mode="dev", database_url=url, secret_key="b" * 40, sandbox="unsafe-local",
                        exercises_root=CATALOGUE / "exercises", reference_root=CATALOGUE / "reference",
                        lti_key_dir=work / "keys", submissions_per_minute=100_000)
    app = create_app(settings, catalogue=Catalogue(CATALOGUE / "exercises", CATALOGUE / "reference"))
    probe = ProbeServer(counter=CheckoutCounter(app.state.engine), sqlite_path=None, delay_s=args.delay_s)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    base = f"http://127.0.0.1:{port}"
    issuer = "https://lms.example"
    with transaction(app.state.sessions) as s:
        lti_service.create(s, name="bench", issuer=issuer, client_id="c", auth_login_url=probe.url + "/auth",
                           auth_token_url=probe.url + "/token", keyset_url=probe.url + "/jwks",
                           deployment_ids=["d1"])
        token = create_token(s, user="bench-learner", role="learner", course="c1")
    notebook = (CATALOGUE / "reference" / "ch05.svc_sum" / "solution.ipynb").read_bytes()

    client = httpx.Client(timeout=120, follow_redirects=False)
    logins = []
    for i in range(args.launches):
        resp = client.post(base + "/lti/login", data={"iss": issuer, "login_hint": f"f{i}", "target_link_uri": "x"})
        logins.append({k: v[0] for k, v in parse_qs(urlsplit(resp.headers["location"]).query).items()})
    cookies = dict(client.cookies)

    def forged(login: dict) -> int:
        now = int(time.time())
        claims = {"iss": issuer, "aud": "c", "sub": "f", "nonce": login["nonce"], "iat": now, "exp": now + 300,
                  LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
                  LTI + "deployment_id": "d1", LTI + "context": {"id": "x"}}
        with httpx.Client(timeout=120, cookies=cookies) as c:
            return c.post(base + "/lti/launch", data={"id_token": probe.sign(claims, kid="unknown"),
                                                      "state": login["state"]}).status_code

    latencies, answers = [], []
    with ThreadPoolExecutor(args.launches) as pool:
        launched = [pool.submit(forged, login) for login in logins]
        time.sleep(0.2)  # the launches are under way (their keyset fetch takes --delay-s)
        with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {token}"}) as up:
            for _ in range(args.uploads):
                start = time.perf_counter()
                resp = up.post(base + "/api/v1/submissions", files={"notebook": ("nb.ipynb", notebook)},
                               data={"exercise_id": "ch05.svc_sum"})
                latencies.append(time.perf_counter() - start)
                answers.append(resp.status_code)
        statuses = sorted(f.result() for f in launched)
    server.should_exit = True
    probe.stop()
    print(f"keyset fetches: {probe.fetches('/jwks')} for {args.launches} forged launches "
          f"(keyset answers after {args.delay_s} s); launch answers {statuses}")
    print(f"uploads during the launches: median {statistics.median(latencies) * 1000:.0f} ms, "
          f"max {max(latencies) * 1000:.0f} ms, answers {sorted(set(answers))}")


if __name__ == "__main__":
    main()
