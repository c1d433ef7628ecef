"""The RMB demo (``make demo``) and end-to-end scenarios: the public npm clients against two
reference daemons on real redis-servers, with recorders between them and a third twin that is
down. Each scenario returns what happened; the demo prints it, the tests assert on it.

    python -m rmkit.reference_impl.rmb.demo --npm interop/rmb-npm [--dir DIR] [--profile P]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from rmkit.protocols.rmb.model import rmb_spec
from rmkit.reference_impl.rmb.cluster import Cluster
from rmkit.reference_impl.rmb.handler import serve_commands


@dataclass
class Step:
    name: str
    explanation: str
    ok: bool = False
    facts: dict = field(default_factory=dict)


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.is_file() else []


def _wait_log(path: Path, pred, timeout: float = 5.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        found = [e for e in _log(path) if pred(e)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


class PythonHandler:
    """The Python handler of twin 2 (py.echo, py.slow) in a thread of its own."""

    def __init__(self, redis_url: str):
        self.loop = asyncio.new_event_loop()
        self.stop_event: asyncio.Event | None = None
        self.url = redis_url
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.stop_event = asyncio.Event()

        async def slow(req, payload):
            await asyncio.sleep(3)
            return "too late"

        self.loop.run_until_complete(serve_commands(self.url, {"py.echo": lambda req, p: {"echo": p.decode()}, "py.slow": slow},
                                                    self.stop_event))

    def __enter__(self):
        self.thread.start()
        while self.stop_event is None:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(10)


def npm_client(node: str, npm_dir: Path, port: int, dst: int, cmd: str, payload: str, exp: int, tries: int, timeout_s: float) -> dict:
    done = subprocess.run([node, "e2e.js", "client", str(port), str(dst), cmd, payload, str(exp), str(tries), str(timeout_s)],
                          cwd=npm_dir, capture_output=True, text=True, timeout=timeout_s + 30)
    if done.returncode != 0:
        raise RuntimeError(f"npm client failed ({done.returncode}): {done.stderr[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _post_tampered(sent: dict, url: str) -> dict:
    """POST a request that was sent and accepted again with its dat changed: the status and body."""
    tampered = {**sent, "dat": base64.b64encode(b"[200, 300]").decode()}
    req = urllib.request.Request(url, data=json.dumps(tampered).encode(), method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return {"status": resp.status, "why": resp.read().decode()}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "why": e.read().decode()}


def run_scenarios(npm_dir: Path, workdir: Path, profile: str = "spec") -> list[Step]:
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not installed: the npm clients cannot run")
    if not (npm_dir / "node_modules" / "ts-rmb-redis-client").is_dir():
        raise RuntimeError(f"{npm_dir}: the npm clients are not installed (cd {npm_dir} && npm ci)")
    be = rmb_spec().behaviour(profile)
    steps: list[Step] = []
    with Cluster(2, profile=profile, workdir=workdir, record=True, down=1) as c:
        a, b = c.twins
        server = subprocess.Popen([node, "e2e.js", "server", str(b.redis.port)], cwd=npm_dir, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        try:
            server.stdout.readline()  # "ready"
            with PythonHandler(b.redis.url):
                s = Step("npm client -> twin 1 -> twin 2 -> npm MessageBusServer",
                         "ts-rmb-redis-client pushes calc.add [2, 3] to twin 1's msgbus.system.local; twin 1 signs and POSTs it "
                         f"to twin 2's {be['remote_endpoint']}; the npm MessageBusServer answers on msgbus.system.reply; twin 2 "
                         f"signs the answer and POSTs it to twin 1's {be['reply_endpoint']}, which pushes it to the client's ret.")
                r = npm_client(node, npm_dir, a.redis.port, 2, "calc.add", "[2, 3]", 30, 2, 20)
                reply = (r.get("replies") or [{}])[0]
                s.facts = {"reply dat": reply.get("dat"), "reply err": reply.get("err"), "reply src": reply.get("src")}
                s.ok = reply.get("dat") == "5" and reply.get("err") == "" and reply.get("src") == 2
                steps.append(s)

                s = Step("npm client -> twin 1 -> twin 2 -> Python handler",
                         "The same path with a Python handler (rmkit.reference_impl.rmb.handler) serving py.echo on twin 2.")
                r = npm_client(node, npm_dir, a.redis.port, 2, "py.echo", "hello rmb", 30, 2, 20)
                reply = (r.get("replies") or [{}])[0]
                s.facts = {"reply dat": reply.get("dat"), "reply err": reply.get("err")}
                s.ok = reply.get("dat") == json.dumps({"echo": "hello rmb"}) and reply.get("err") == ""
                steps.append(s)

                s = Step("a destination that is down",
                         "Twin 3 is in the directory but nothing listens: twin 1 tries try=3 times (connection errors are "
                         "retried), then pushes an error message (src/dst swapped, err set) to the client's ret.")
                r = npm_client(node, npm_dir, a.redis.port, 3, "calc.add", "[1, 1]", 30, 3, 30)
                reply = (r.get("replies") or [{}])[0]
                posts = _wait_log(a.log, lambda e: e["event"] == "http-post" and e["peer"].startswith("3@"))
                s.facts = {"attempts": len(posts), "error on ret": reply.get("err")}
                s.ok = len(posts) == 3 and "connection error" in (reply.get("err") or "")
                steps.append(s)

                s = Step("an expired backlog",
                         "py.slow answers after 3 s but the request's exp is 1 s: the backlog entry on twin 1 is gone "
                         f"when the reply arrives, so twin 1's {be['reply_endpoint']} answers {be['reply_without_backlog']} "
                         "and drops the reply; the client times out.")
                r = npm_client(node, npm_dir, a.redis.port, 2, "py.slow", "x", 1, 1, 5)
                answers = _wait_log(a.log, lambda e: e["event"] == "http-answer" and e["endpoint"] == be["reply_endpoint"]
                                    and e["status"] == be["reply_without_backlog"])
                s.facts = {"client timed out": bool(r.get("timeout")), "reply endpoint answered": answers[0]["status"] if answers else None}
                s.ok = bool(r.get("timeout")) and bool(answers)
                steps.append(s)

            s = Step("a tampered signature",
                     f"The request twin 1 sent in the first scenario, with its dat changed, POSTed again to twin 2: {be['status_bad_signature']}.")
            accepted = _wait_log(a.log, lambda e: e["event"] == "http-post" and e["status"] == be["accepted"]["status"])
            if accepted:
                s.facts = _post_tampered(accepted[0]["message"], f"http://{b.address}{be['remote_endpoint']}")
                s.ok = s.facts["status"] == be["status_bad_signature"] and "RMB-SIG-002" in s.facts["why"]
            else:  # the first scenario failed: no request to tamper with (a failed step, not a crash)
                s.facts = {"status": None, "why": f"twin 1's log holds no request twin 2 accepted ({a.log.name})"}
            steps.append(s)
        finally:
            server.terminate()
            server.wait(10)
        s = Step("message logs", "Every message and HTTP exchange each daemon saw, and what the recorders between them saw (JSON Lines).")
        for t in c.twins:
            events: dict[str, int] = {}
            for e in _log(t.log):
                events[e["event"]] = events.get(e["event"], 0) + 1
            s.facts[f"twin {t.twin} log"] = events
            s.facts[f"recorder {t.twin} exchanges"] = sum(1 for e in _log(c.dir / f"recorder-{t.twin}.log.jsonl") if e["event"] == "recorded-response")
        s.ok = all(s.facts[f"recorder {t.twin} exchanges"] > 0 for t in c.twins)
        steps.append(s)
    return steps


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--npm", default="interop/rmb-npm", help="folder of the pinned npm clients (npm ci done)")
    p.add_argument("--dir", help="where the twins' directory, keys and logs go (default: a temporary folder)")
    p.add_argument("--profile", default="spec")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rmb-demo-") as tmp:
        workdir = Path(args.dir or tmp)
        try:
            steps = run_scenarios(Path(args.npm).resolve(), workdir, args.profile)
        except RuntimeError as exc:
            print(f"rmb demo: {exc}", file=sys.stderr)
            return 2
        for i, s in enumerate(steps, 1):
            print(f"-- {i}. {s.name}: {'ok' if s.ok else 'NOT AS EXPECTED'}")
            print(f"   {s.explanation}")
            for k, v in s.facts.items():
                print(f"   {k}: {v}")
        if args.dir:
            print(f"logs and directory in {workdir}")
    return 0 if all(s.ok for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
