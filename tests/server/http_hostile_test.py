"""The HTTP API against hostile and careless clients: slow clients that never finish their
headers, header floods, bursts of connections, form-encoded specs, malformed Authorization and
Idempotency-Key headers, and requests meant to crash a handler. The real `trainyard server` is
started by harness.py. Usage: http_hostile_test.py PATH/TO/trainyard [unittest args]"""
import http.client
import json
import os
import resource
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SLOW_CLIENTS = 256
BURST = 500
P99_LIMIT_S = 0.200
RSS_GROWTH_LIMIT_KB = 64 * 1024


def raise_fd_limit(wanted=4096):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


def host_port(url):
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    return host.strip("[]"), int(port)


def request(url, method, path, body=None, headers=None, timeout=5):
    """One request on a fresh connection: (status, headers, body bytes)."""
    host, port = host_port(url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class SlowLoris:
    """Connections that each send a request line and then one header byte per second, forever."""

    def __init__(self, url, count):
        host, port = host_port(url)
        self.socks, self.stop = [], threading.Event()
        for _ in range(count):
            s = socket.create_connection((host, port), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            s.setblocking(False)
            self.socks.append(s)
        self.thread = threading.Thread(target=self.trickle, daemon=True)
        self.thread.start()

    def trickle(self):
        pattern = b"X-Slow: a\r\n"
        i = 0
        while not self.stop.wait(1.0):
            for s in self.socks:
                try:
                    s.send(pattern[i % len(pattern):i % len(pattern) + 1])
                except OSError:
                    pass  # closed by the server: it is allowed to drop idle clients
            i += 1

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def flood_request(n_headers, path="/healthz"):
    head = b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
    return head + b"".join(b"X-F%d: v\r\n" % i for i in range(n_headers)) + b"\r\n"


def send_flood(url, payload, timeout=30):
    """Sends one flood request; the status the server answered, or None when it closed first."""
    host, port = host_port(url)
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused mid-request: the reply (if any) may still be readable
        data = b""
        try:
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (ConnectionResetError, socket.timeout):
            pass
        if data.startswith(b"HTTP/1."):
            return int(data.split(b" ", 2)[1])
        return None
    finally:
        s.close()


class HeaderFlood:
    """Threads that keep sending requests with 20,000 headers (~200 KB) each."""

    def __init__(self, url, threads=2):
        self.url, self.stop, self.statuses = url, threading.Event(), []
        self.payload = flood_request(20000)
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def run(self):
        while not self.stop.is_set():
            try:
                self.statuses.append(send_flood(self.url, self.payload, timeout=10))
            except OSError:
                self.statuses.append(None)

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join()


class SlowClientsAndFloods(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise_fd_limit()
        cls.s = harness.Server(extra=["--require-auth"]).start()
        cls.token = cls.s.admin_token()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def probe(self, path, auth=True):
        headers = {"Authorization": "Bearer " + self.token} if auth else {}
        t0 = time.monotonic()
        try:
            status, _, _ = request(self.s.url, "GET", path, headers=headers, timeout=3)
        except OSError as e:
            return None, time.monotonic() - t0, repr(e)
        return status, time.monotonic() - t0, None

    def test_api_answers_under_slow_clients_and_a_header_flood(self):
        before = rss_kb(self.s.proc.pid)
        loris = SlowLoris(self.s.url, SLOW_CLIENTS)
        flood = HeaderFlood(self.s.url)
        try:
            time.sleep(1.5)  # every slow client has sent a few more header bytes
            latencies, failures = {"/healthz": [], "/api/v1/jobs?limit=10": []}, []
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline and len(failures) < 5:
                for path in latencies:
                    status, took, err = self.probe(path, auth=path != "/healthz")
                    if status != 200:
                        failures.append((path, status, err))
                    latencies[path].append(took)
            peak = rss_kb(self.s.proc.pid)
        finally:
            flood.close()
            loris.close()
        self.assertEqual(failures, [], "requests failed while slow clients were connected")
        for path, lat in latencies.items():
            self.assertGreaterEqual(len(lat), 20, path)
            p99 = percentile(lat, 0.99)
            print(f"\n  {path}: {len(lat)} requests, p50 {percentile(lat, 0.5) * 1e3:.1f} ms, "
                  f"p99 {p99 * 1e3:.1f} ms; RSS {before} -> {peak} kB; "
                  f"{len(flood.statuses)} flood requests", file=sys.stderr)
            self.assertLess(p99, P99_LIMIT_S, f"{path}: p99 {p99 * 1e3:.1f} ms over {len(lat)}")
        refused = [st for st in flood.statuses if st is not None]
        self.assertGreater(len(flood.statuses), 0)
        self.assertTrue(all(st == 431 for st in refused), flood.statuses[:20])
        self.assertLess(peak - before, RSS_GROWTH_LIMIT_KB,
                        f"RSS grew from {before} kB to {peak} kB")
        self.assertIsNone(self.s.proc.poll(), "the server exited")

    def test_four_requests_with_a_million_headers_are_refused_and_memory_stays_bounded(self):
        before = rss_kb(self.s.proc.pid)
        payload = flood_request(1_000_000)  # ~13 MB of headers
        statuses = [None] * 4

        def one(i):
            statuses[i] = send_flood(self.s.url, payload)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.5)
        after = rss_kb(self.s.proc.pid)
        print(f"\n  RSS {before} -> {after} kB; replies {statuses}", file=sys.stderr)
        self.assertTrue(all(st in (None, 431) for st in statuses), statuses)
        self.assertLess(after - before, RSS_GROWTH_LIMIT_KB,
                        f"RSS grew from {before} kB to {after} kB")
        self.assertEqual(self.probe("/healthz", auth=False)[0], 200)

    def test_a_burst_of_500_connections_is_answered_without_resets(self):
        barrier = threading.Barrier(BURST)
        results = [None] * BURST

        def one(i):
            barrier.wait()
            try:
                results[i] = request(self.s.url, "GET", "/healthz", timeout=20)[0]
            except OSError as e:
                results[i] = repr(e)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(BURST)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [r for r in results if r != 200]
        self.assertEqual(failed, [], f"{len(failed)} of {BURST} requests failed")


FORM = "application/x-www-form-urlencoded"


def padded_spec(name, size):
    """A valid job spec padded with YAML comments to about `size` bytes."""
    spec = ("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata:\n  name: %s\nspec:\n"
            "  template:\n    command: [\"true\"]\n" % name)
    line = "# " + "padding " * 12 + "\n"
    return (spec + line * ((size - len(spec)) // len(line) + 1)).encode()


class Bodies(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(config="maxRequestBytes: 65536\n").start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def test_a_form_encoded_spec_is_read_raw(self):
        body = padded_spec("form", 20 * 1024)
        self.assertGreater(len(body), 20 * 1024)
        status, _, reply = request(self.s.url, "POST", "/api/v1/jobs", body,
                                   {"Content-Type": FORM})
        self.assertEqual(status, 201, reply)
        self.assertEqual(json.loads(reply)["name"], "form")


    def test_a_spec_flattened_by_curl_d_gets_a_hint(self):
        # `curl -d @job.yaml` drops the line breaks and sends the form content type.
        flat = padded_spec("flat", 0).replace(b"\n", b"")
        status, _, reply = request(self.s.url, "POST", "/api/v1/jobs", flat,
                                   {"Content-Type": FORM})
        self.assertEqual(status, 400, reply)
        self.assertIn("curl --data-binary", json.loads(reply)["error"]["message"])
        # The same body under another content type gets the plain error.
        status, _, reply = request(self.s.url, "POST", "/api/v1/jobs", flat,
                                   {"Content-Type": "application/yaml"})
        self.assertEqual(status, 400, reply)
        self.assertNotIn("curl", json.loads(reply)["error"]["message"])
    def test_a_body_over_max_request_bytes_is_a_413_naming_the_limit(self):
        body = padded_spec("big", 100 * 1024)
        for ctype in (FORM, "application/yaml"):
            status, _, reply = request(self.s.url, "POST", "/api/v1/jobs", body,
                                       {"Content-Type": ctype})
            self.assertEqual(status, 413, reply)
            err = json.loads(reply)["error"]
            self.assertEqual(err["code"], "ResourceExhausted")
            self.assertIn("65536", err["message"])
            self.assertIn("maxRequestBytes", err["message"])
            self.assertIsNone(err["field"])

    def test_a_client_waiting_for_100_continue_gets_the_413_before_sending(self):
        host, port = host_port(self.s.url)
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n"
                      b"Expect: 100-continue\r\n\r\n")
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply[:200])

    def test_the_server_keeps_answering_after_a_refused_body(self):
        self.test_a_body_over_max_request_bytes_is_a_413_naming_the_limit()
        self.assertEqual(request(self.s.url, "GET", "/healthz")[0], 200)


class Headers(unittest.TestCase):
    """A loopback server without --require-auth: a request without Authorization is admin."""

    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server().start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def get_jobs(self, headers):
        status, _, body = request(self.s.url, "GET", "/api/v1/jobs", headers=headers)
        return status, json.loads(body)

    def test_no_authorization_header_is_anonymous(self):
        self.assertEqual(self.get_jobs({})[0], 200)

    def test_a_present_but_unusable_authorization_header_is_401(self):
        for value in ("Bearer ", "Bearer", "", "Basic dXNlcjpwYXNz", "bearer  ", "Token abc"):
            status, body = self.get_jobs({"Authorization": value})
            self.assertEqual(status, 401, (value, body))
            self.assertEqual(body["error"]["code"], "Unauthenticated")
            self.assertIn("Authorization header", body["error"]["message"])
            self.assertNotIn("dXNlcjpwYXNz", body["error"]["message"])  # never echo secrets

    def test_a_bearer_token_in_any_case_is_checked(self):
        token = self.s.admin_token()
        self.assertEqual(self.get_jobs({"Authorization": "bearer " + token})[0], 200)
        self.assertEqual(self.get_jobs({"Authorization": "Bearer ty_0"})[0], 401)

    def submit(self, key, name="idem"):
        body = ("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata:\n  name: %s\nspec:\n"
                "  template:\n    command: [\"true\"]\n" % name).encode()
        status, _, reply = request(self.s.url, "POST", "/api/v1/jobs", body,
                                   {"Idempotency-Key": key})
        return status, json.loads(reply)

    def test_an_idempotency_key_reaches_submit(self):
        key = "k-%d" % time.time_ns()
        first_status, first = self.submit(key)
        again_status, again = self.submit(key)
        self.assertEqual((first_status, again_status), (201, 201), (first, again))
        self.assertEqual(first["id"], again["id"], "the retry created a second job")

    def test_an_unusable_idempotency_key_is_400_naming_the_header(self):
        for key in ("x" * 256, "a\x01b", "tab\there", ""):
            status, body = self.submit(key)
            self.assertEqual(status, 400, (key, body))
            self.assertIn("Idempotency-Key", body["error"]["message"])
            self.assertIsNone(body["error"]["field"])
        self.assertEqual(self.submit("x" * 255)[0], 201)


class Robustness(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server().start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def raw(self, data, timeout=5, half_close=True):
        host, port = host_port(self.s.url)
        with socket.create_connection((host, port), timeout=timeout) as s:
            try:
                s.sendall(data)
                if half_close:  # the server sees the end of input and need not wait for more
                    s.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            out = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    out += chunk
            except OSError:
                pass
            return out

    def test_odd_requests_get_json_errors(self):
        cases = [
            ("GET", "/api/v1/jobs/%ff%fe", 404),
            ("GET", "/api/v1/jobs/%ff%fe/logs", 404),
            ("GET", "/%C0%80/x", 404),
            ("PUT", "/api/v1/jobs", 404),
            ("PATCH", "/api/v1/jobs/1", 400),  # the update route: a body that is not JSON
            ("PUT", "/api/v1/jobs/1", 404),
            ("GET", "/api/v1/jobs?limit=%ff", 400),
            ("GET", "/api/v1/jobs?state=%00", 400),
            ("GET", "/api/v1/jobs?limit=99999999999999999999999", 400),
            ("POST", "/api/v1/tokens", 400),
            ("GET", "/api/v1/jobs/99999999999999999999999", 404),
            ("GET", "/api/v1/jobs/1/logs?rank=-1", 400),
        ]
        for method, path, want in cases:
            status, headers, body = request(self.s.url, method, path,
                                            body=b"\xff\xfe{" if method != "GET" else None)
            self.assertEqual(status, want, (method, path, body))
            self.assertEqual(headers.get("Content-Type"), "application/json", (method, path))
            self.assertIn("error", json.loads(body), (method, path))

    def test_malformed_http_does_not_take_the_server_down(self):
        garbage = [
            b"\x00\x01\x02\r\n\r\n",
            b"GET\r\n\r\n",
            b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
            b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"GET /" + b"a" * 200000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX: " + b"v" * 200000 + b"\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\n" + b"\r\n" * 1000,
            b"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n\x00\xff\x00\xff\x00",
        ]
        for g in garbage:
            self.raw(g)
            self.assertIsNone(self.s.proc.poll(), f"the server exited after {g[:40]!r}")
        # A pipelined pair on one connection is answered in order.
        out = self.raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /api/v1/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                       half_close=False)
        self.assertEqual(out.count(b"HTTP/1.1 200"), 1, out[:300])
        self.assertEqual(out.count(b"HTTP/1.1 404"), 1, out[:300])
        self.assertEqual(request(self.s.url, "GET", "/healthz")[0], 200)

    def test_head_and_logs_headers_are_kept(self):
        status, headers, body = request(self.s.url, "HEAD", "/healthz")
        self.assertEqual((status, body), (200, b""))
        jid = self.s.run("--name", "hello", "--", "echo", "hi")
        self.s.wait(jid)
        status, headers, body = request(self.s.url, "GET", f"/api/v1/jobs/{jid}/logs")
        self.assertEqual((status, body), (200, b"hi\n"))
        self.assertEqual(headers.get("Content-Type"), "text/plain; charset=utf-8")
        self.assertEqual(headers.get("X-Trainyard-Complete"), "true")
        self.assertEqual(headers.get("X-Trainyard-Next-Offset"), "3")


class Shutdown(unittest.TestCase):
    def test_sigterm_under_load_stops_the_server_cleanly(self):
        s = harness.Server().start()
        stop, spec = threading.Event(), padded_spec("load", 200)

        def load():
            while not stop.is_set():
                try:
                    request(s.url, "POST", "/api/v1/jobs", spec, timeout=5)
                except OSError:
                    pass  # refused or cut once the server stops: expected

        threads = [threading.Thread(target=load) for _ in range(8)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.5)
            s.proc.send_signal(signal.SIGTERM)
            code = s.proc.wait(timeout=20)
        finally:
            stop.set()
            for t in threads:
                t.join()
            s.stop()
        self.assertEqual(code, 0, "the server did not stop through its SIGTERM handling")
        with open(os.path.join(s.state_dir, "server.log")) as f:
            self.assertIn("SIGTERM received, stopping", f.read())


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
