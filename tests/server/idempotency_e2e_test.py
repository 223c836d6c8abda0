"""End-to-end tests of safe job submission: the real `trainyard server` with an Idempotency-Key
on POST /api/v1/jobs (raw HTTP), across a kill -9 and restart, and the real CLI retrying through a
proxy that loses the server's first reply. Usage: idempotency_e2e_test.py PATH/TO/trainyard
[unittest args]"""
import json
import os
import socket
import sys
import threading
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

FAST = "reconcileIntervalSeconds: 0.05\n"


def spec(name, command=("sleep", "30")):
    return json.dumps({"apiVersion": "trainyard.dev/v1", "kind": "Job",
                       "metadata": {"name": name},
                       "spec": {"template": {"command": list(command),
                                             "resources": {"limits": {"nvidia.com/gpu": 1}}}}}).encode()


def post_job(server, body, key=None, token=None):
    """POST /api/v1/jobs with an optional Idempotency-Key; returns (status, reply JSON)."""
    req = urllib.request.Request(server.url + "/api/v1/jobs?file=e2e", data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    if key is not None:
        req.add_header("Idempotency-Key", key)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def job_ids(server, name=None, token=None):
    args = ["ls", "-o", "json", "--limit", "1000"] + (["--name", name] if name else [])
    return sorted(j["id"] for j in json.loads(server.cli(*args, token=token).stdout))


class LossyProxy:
    """A TCP proxy in front of the server that spoils the first `spoil` connections: in mode
    "drop" it forwards the request, waits for the server's reply and closes the client's socket
    without passing the reply on (a reply lost in the network after the server committed); in
    mode "503" it answers 503 itself without forwarding. Later connections pass through. It
    records the Idempotency-Key header of every request it sees."""

    def __init__(self, upstream_url, mode, spoil=1):
        host, port = upstream_url.split("://", 1)[1].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.mode, self.spoil = mode, spoil
        self.keys, self.connections, self.lock = [], 0, threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                spoiled = self.connections <= self.spoil
            threading.Thread(target=self._serve, args=(client, spoiled), daemon=True).start()

    @staticmethod
    def _read_message(sock):
        """One HTTP/1.1 message: headers, then a Content-Length body, a chunked body, or (for a
        reply with neither) everything up to the end of the connection."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        length, chunked = None, False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip())
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if length is None and not chunked and head.startswith(b"HTTP/"):
            length = float("inf")
        elif length is None and not chunked:
            length = 0
        while (len(body) < length) if not chunked else not body.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def _record_key(self, request):
        for line in request.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"idempotency-key":
                with self.lock:
                    self.keys.append(value.strip().decode())

    def _serve(self, client, spoiled):
        upstream = None
        try:
            if spoiled:
                request = self._read_message(client)
                self._record_key(request)
                if self.mode == "503":
                    body = b'{"error":{"code":"Unavailable","message":"try again"}}'
                    client.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                                   b"application/json\r\nConnection: close\r\nContent-Length: "
                                   + str(len(body)).encode() + b"\r\n\r\n" + body)
                    return
                upstream = socket.create_connection(self.upstream)
                upstream.sendall(request)
                upstream.recv(65536)  # the server has committed and replied ...
                return  # ... and the reply is lost: the client's socket closes unanswered
            upstream = socket.create_connection(self.upstream)
            # One request per connection is all the CLI sends: relay it and the reply.
            request = self._read_message(client)
            self._record_key(request)
            upstream.sendall(request)
            client.sendall(self._read_message(upstream))
        except OSError:
            pass
        finally:
            client.close()
            if upstream:
                upstream.close()


class RawHttp(harness.ServerTestCase):
    CONFIG = FAST

    def test_same_key_twice_gives_one_job(self):
        body = spec("raw-twice")
        code1, first = post_job(self.s, body, key='"raw-twice-0001"')
        code2, again = post_job(self.s, body, key='"raw-twice-0001"')
        self.assertEqual(code1, 201, first)
        self.assertEqual(code2, 201, again)
        self.assertEqual(again["id"], first["id"])
        self.assertNotIn("idempotentReplay", first)
        self.assertIs(again["idempotentReplay"], True)
        # The bare form of the same key (as Stripe's clients send it) is the same key.
        code3, bare = post_job(self.s, body, key="raw-twice-0001")
        self.assertEqual((code3, bare["id"]), (201, first["id"]))
        self.assertEqual(job_ids(self.s, "raw-twice"), [first["id"]])

    def test_same_key_with_another_spec_is_refused(self):
        code, first = post_job(self.s, spec("raw-a"), key="raw-conflict")
        self.assertEqual(code, 201, first)
        code, err = post_job(self.s, spec("raw-b"), key="raw-conflict")
        self.assertEqual(code, 409, err)
        self.assertEqual(err["error"]["code"], "AlreadyExists")
        self.assertIn("was used for another job spec", err["error"]["message"])
        self.assertEqual(job_ids(self.s, "raw-b"), [])

    def test_without_a_key_a_repeat_is_a_second_job(self):
        body = spec("raw-nokey")
        code1, a = post_job(self.s, body)
        code2, b = post_job(self.s, body)
        self.assertEqual((code1, code2), (201, 201))
        self.assertNotEqual(a["id"], b["id"])
        self.assertEqual(len(job_ids(self.s, "raw-nokey")), 2)

    def test_malformed_key_is_refused(self):
        code, err = post_job(self.s, spec("raw-bad"), key="k" * 256)
        self.assertEqual(code, 400, err)
        self.assertTrue(err["error"]["message"].startswith("Idempotency-Key: "), err)
        self.assertEqual(job_ids(self.s, "raw-bad"), [])

    def test_keys_are_scoped_to_teams(self):
        admin = self.s.admin_token()
        tokens = {}
        for team in ("idem-a", "idem-b"):
            out = self.s.cli("token", "create", "--team", team, "--name", team + "-bot", token=admin)
            tokens[team] = out.stdout.strip().split()[-1]
        ids = {}
        for team, token in tokens.items():
            code, job = post_job(self.s, spec("raw-scoped"), key="shared-key", token=token)
            self.assertEqual(code, 201, job)
            self.assertEqual(job["team"], team)
            ids[team] = job["id"]
        self.assertNotEqual(ids["idem-a"], ids["idem-b"])
        code, again = post_job(self.s, spec("raw-scoped"), key="shared-key", token=tokens["idem-a"])
        self.assertEqual((code, again["id"]), (201, ids["idem-a"]))


class LostReply(unittest.TestCase):
    def test_kill9_after_commit_then_resubmit_to_the_restarted_server_gives_one_job(self):
        s = harness.Server(config=FAST).start()
        try:
            body = spec("crash-once")
            code, first = post_job(s, body, key="crash-key-1")
            self.assertEqual(code, 201, first)
            # The server dies right after committing; the client never saw the reply and retries.
            s.kill9()
            s.start()
            code, again = post_job(s, body, key="crash-key-1")
            self.assertEqual(code, 201, again)
            self.assertEqual(again["id"], first["id"])
            self.assertIs(again["idempotentReplay"], True)
            self.assertEqual(job_ids(s, "crash-once"), [first["id"]])
            # The CLI's own key survives a crash the same way.
            spec_path = os.path.join(s.state_dir, "crash-two.json")
            with open(spec_path, "wb") as f:
                f.write(spec("crash-two"))
            cli_id = int(s.cli("submit", "-q", "--idempotency-key", "crash-key-2", "-f",
                               spec_path).stdout)
            s.kill9()
            s.start()
            again_id = int(s.cli("submit", "-q", "--idempotency-key", "crash-key-2", "-f",
                                 spec_path).stdout)
            self.assertEqual(again_id, cli_id)
            self.assertEqual(job_ids(s, "crash-two"), [cli_id])
        finally:
            s.stop()

    def test_cli_retries_a_lost_reply_with_the_same_key(self):
        s = harness.Server(config=FAST).start()
        proxy = LossyProxy(s.url, "drop")
        try:
            real = s.url
            s.url = proxy.url  # the CLI talks to the proxy
            r = s.cli("run", "-q", "--name", "lost-reply", "--", "sleep", "30")
            s.url = real
            jid = int(r.stdout.strip())
            self.assertIn("retrying", r.stderr)
            self.assertEqual(len(proxy.keys), 2, proxy.keys)
            self.assertEqual(proxy.keys[0], proxy.keys[1])  # the retry sent the same key
            self.assertRegex(proxy.keys[0], r'^"[0-9a-f]{32}"$')
            self.assertEqual(job_ids(s, "lost-reply"), [jid])
        finally:
            s.url = real
            proxy.close()
            s.stop()

    def test_cli_submit_retries_a_503_and_fresh_submissions_get_fresh_keys(self):
        s = harness.Server(config=FAST).start()
        proxy = LossyProxy(s.url, "503")
        real = s.url
        try:
            path = os.path.join(s.state_dir, "retry-503.json")
            with open(path, "wb") as f:
                f.write(spec("retry-503"))
            s.url = proxy.url
            first = s.submit_file(path)
            second = s.submit_file(path)  # a new command: a new submission, a new job
            s.url = real
            self.assertNotEqual(first, second)
            self.assertEqual(len(proxy.keys), 3, proxy.keys)
            self.assertEqual(proxy.keys[0], proxy.keys[1])
            self.assertNotEqual(proxy.keys[1], proxy.keys[2])
            self.assertEqual(job_ids(s, "retry-503"), sorted([first, second]))
        finally:
            s.url = real
            proxy.close()
            s.stop()

    def test_cli_gives_up_after_its_retries_with_exit_code_5(self):
        s = harness.Server(config=FAST).start()
        proxy = LossyProxy(s.url, "503", spoil=100)
        real = s.url
        try:
            s.url = proxy.url
            r = s.cli("run", "-q", "--name", "never", "--", "true", check=False)
            s.url = real
            self.assertEqual(r.returncode, 5, r.stderr)
            self.assertEqual(len(proxy.keys), 5, proxy.keys)
            self.assertEqual(len(set(proxy.keys)), 1)
            self.assertIn("tried 5 times with Idempotency-Key", r.stderr)
            self.assertEqual(job_ids(s, "never"), [])
        finally:
            s.url = real
            proxy.close()
            s.stop()


if __name__ == "__main__":
    harness.BIN = sys.argv.pop(1)
    unittest.main()
