"""Runs the shell commands that README.md and docs/*.md show, so the docs cannot drift from the
program. A code block is run when the line just above its opening fence is `<!-- runnable -->`:
- in a `console` block, the lines starting with `$ ` are commands (with `\\` continuations) and the
  other lines are output, not checked;
- in any other block, every line is a command; `#` comments are kept (bash reads them).
The blocks of one file run in order, in one bash each with `set -eo pipefail`, from the
repository's root, against one real `trainyard server` with simulated GPUs started for that file
(TRAINYARD_SERVER points at it), so a later block may use the jobs an earlier one submitted. A
block that starts its own `trainyard server` runs without TRAINYARD_SERVER, in a home and data
directory of its own, and its background jobs are killed when it ends. A block fails when any
command in it exits non-zero. Usage: doc_commands_test.py TRAINYARD_BINARY"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import harness  # noqa: E402

REPO = harness.REPO
MARKER = "<!-- runnable -->"
BLOCK_TIMEOUT_S = 180


class Block:
    def __init__(self, path, line, lang, lines):
        self.path, self.line, self.lang, self.lines = path, line, lang, lines

    def where(self):
        return f"{os.path.relpath(self.path, REPO)}:{self.line}"

    def script(self):
        if self.lang != "console":
            return "\n".join(self.lines) + "\n"
        out, continuing = [], False
        for text in self.lines:
            if continuing or text.startswith("$ "):
                out.append(text if continuing else text[2:])
                continuing = text.endswith("\\")
        return "\n".join(out) + "\n"

    def starts_a_server(self):
        return re.search(r"(^|[;&|]\s*)trainyard server\b(?!.*--check)", self.script(), re.M)


def runnable_blocks(path):
    """The runnable blocks of one Markdown file, in order."""
    with open(path) as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        fence = re.match(r"^(```+)\s*([\w-]*)", lines[i])
        if not fence:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith(fence.group(1)):
            end += 1
        if i > 0 and lines[i - 1].strip() == MARKER:
            blocks.append(Block(path, i + 1, fence.group(2), lines[i + 1:end]))
        i = end + 1
    return blocks


def doc_files():
    docs = os.path.join(REPO, "docs")
    return [os.path.join(REPO, "README.md")] + sorted(
        os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))


def run_block(block, server_url, scratch):
    """(exit code, output) of one block."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(harness.BIN) + os.pathsep + env.get("PATH", "")
    env.pop("TRAINYARD_TOKEN", None)
    prelude = "set -eo pipefail\n"
    if block.starts_a_server():
        env.pop("TRAINYARD_SERVER", None)
        home = tempfile.mkdtemp(prefix="home-", dir=scratch)
        # As a user's home usually is: others may pass through (a root server's workers, which
        # run as users of their own, must reach their run directories in the state directory).
        os.chmod(home, 0o711)
        env.update(HOME=home, XDG_DATA_HOME=os.path.join(home, "data"),
                   XDG_CONFIG_HOME=os.path.join(home, "config"))
        prelude += "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n"
    else:
        env["TRAINYARD_SERVER"] = server_url
    argv = ["bash", "-c", prelude + block.script()]
    if block.starts_a_server() and os.geteuid() == 0:
        # A root server's default state is /var/lib/trainyard: give the block an empty one of
        # its own, in a mount namespace, so that it neither sees nor leaves state there.
        argv = ["unshare", "--mount", "--propagation", "private", "bash", "-c",
                "mkdir -p /var/lib/trainyard && mount -t tmpfs -o mode=0711 tmpfs "
                "/var/lib/trainyard && exec \"$@\"", "-"] + argv
    try:
        r = subprocess.run(argv, cwd=REPO, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=BLOCK_TIMEOUT_S)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (
            e.stdout or "")
        return 124, out + f"\n(timed out after {BLOCK_TIMEOUT_S} s)"


class Extraction(unittest.TestCase):
    """The reader itself: a runner that found nothing or ignored failures would pass anything."""

    def test_a_failing_command_fails_its_block(self):
        with tempfile.TemporaryDirectory() as d:
            md = os.path.join(d, "x.md")
            with open(md, "w") as f:
                f.write("text\n\n" + MARKER + "\n```console\n$ true\nsome output\n$ echo a \\\n"
                        "  b\n```\n\n```sh\nnot marked\n```\n" + MARKER + "\n```sh\ntrue\nfalse\n"
                        "echo never\n```\n")
            blocks = runnable_blocks(md)
            self.assertEqual([b.line for b in blocks], [4, 15])
            self.assertEqual(blocks[0].script(), "true\necho a \\\n  b\n")
            self.assertEqual(run_block(blocks[0], "", d)[0], 0)
            code, out = run_block(blocks[1], "", d)
            self.assertNotEqual(code, 0)
            self.assertNotIn("never", out)

    def test_a_block_that_starts_a_server_is_recognized(self):
        self.assertTrue(Block("f", 1, "sh", ["trainyard server --gpus sim:1xL4 &"]).starts_a_server())
        self.assertFalse(Block("f", 1, "sh", ["trainyard ls"]).starts_a_server())


class DocCommands(unittest.TestCase):
    def test_every_runnable_block_succeeds(self):
        files = [(path, runnable_blocks(path)) for path in doc_files()]
        total = sum(len(blocks) for _, blocks in files)
        # The markers are what make this test check anything: losing them must not pass quietly.
        self.assertGreaterEqual(total, 1, "fewer runnable blocks than expected in the docs")
        failures = []
        with tempfile.TemporaryDirectory(prefix="ty-docs-") as scratch:
            os.chmod(scratch, 0o711)
            for path, blocks in files:
                if not blocks:
                    continue
                server = harness.Server(gpus="sim:4xH100-80GB").start()
                try:
                    for block in blocks:
                        code, out = run_block(block, server.url, scratch)
                        print(f"{block.where()}: exit {code}", flush=True)
                        if code != 0:
                            failures.append(f"{block.where()}: exit {code}\n{block.script()}"
                                            f"--- output ---\n{out[-3000:]}")
                finally:
                    server.stop()
        self.assertFalse(failures, "\n\n".join(failures))


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
