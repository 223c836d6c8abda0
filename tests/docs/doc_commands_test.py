"""Runs the shell commands that README.md and docs/*.md show, so the docs cannot drift from the
program. A code block is run when the line just above its opening fence is `<!-- runnable -->`:
- in a `console` block, the lines starting with `$ ` are commands (with `\\` continuations) and the
  other lines are output, not checked;
- in any other block, every line is a command; `#` comments are kept (bash reads them).
The runnable blocks of one file run in order in one bash with `set -eo pipefail`, from the
repository's root, as a reader would type them into one shell: what a block exports, later blocks
see. Each file gets a fresh home directory and, when run as root, an empty /var/lib/trainyard
(the default state of a root server) in a mount namespace of its own. Unless one of its blocks
starts `trainyard server` itself, a `trainyard server --gpus sim:4xH100-80GB` with the default
address and state is started first. The file fails at the first command that exits non-zero,
and the report names the block. Usage: doc_commands_test.py TRAINYARD_BINARY"""
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


FILE_TIMEOUT_S = 300
START_SERVER = """trainyard server --gpus sim:4xH100-80GB >"$HOME/server.log" 2>&1 &
for _ in $(seq 100); do trainyard ls >/dev/null 2>&1 && break; sleep 0.2; done
"""


def file_script(blocks):
    """One bash script for the runnable blocks of one file; `@@ where` lines mark each block."""
    # curl -s exits 0 on an HTTP error: the docs' curl calls must get a 2xx to pass.
    out = ["set -eo pipefail", "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT",
           'curl() { command curl --fail-with-body "$@"; }']
    if not any(b.starts_a_server() for b in blocks):
        out.append(START_SERVER)
    for b in blocks:
        out += [f"printf '\\n@@ %s\\n' '{b.where()}'", "{", b.script().rstrip("\n"), "}"]
    return "\n".join(out) + "\n"


def run_file(blocks, scratch):
    """(exit code, output, the block that was running) for one file's blocks."""
    home = tempfile.mkdtemp(prefix="home-", dir=scratch)
    # As a user's home usually is: others may pass through (a root server's workers, which run as
    # users of their own, must reach their run directories in the state directory).
    os.chmod(home, 0o711)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
    env.update(PATH=os.path.dirname(harness.BIN) + os.pathsep + env.get("PATH", ""), HOME=home,
               XDG_DATA_HOME=os.path.join(home, ".local", "share"),
               XDG_CONFIG_HOME=os.path.join(home, ".config"))
    argv = ["bash", "-c", file_script(blocks)]
    if os.geteuid() == 0:
        # A root server's default state is /var/lib/trainyard: give the file an empty one of its
        # own, in a mount namespace, so that it neither sees nor leaves state there.
        argv = ["unshare", "--mount", "--propagation", "private", "bash", "-c",
                "mkdir -p /var/lib/trainyard && mount -t tmpfs -o mode=0711 tmpfs "
                "/var/lib/trainyard && exec \"$@\"", "-"] + argv
    try:
        r = subprocess.run(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=FILE_TIMEOUT_S)
        code, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        code, out = 124, out + f"\n(timed out after {FILE_TIMEOUT_S} s)"
    marks = re.findall(r"^@@ (.*)$", out, re.M)
    return code, out, marks[-1] if marks else "(before the first block)"


class Extraction(unittest.TestCase):
    """The reader itself: a runner that found nothing or ignored failures would pass anything."""

    def test_a_failing_command_fails_its_block(self):
        with tempfile.TemporaryDirectory() as d:
            md = os.path.join(d, "x.md")
            with open(md, "w") as f:
                f.write("text\n\n" + MARKER + "\n```console\n$ export A=1\nsome output\n$ echo a \\\n"
                        "  b\n```\n\n```sh\nnot marked\n```\n" + MARKER + "\n```sh\ntest $A = 1\n"
                        "false\necho never\n```\n")
            blocks = runnable_blocks(md)
            self.assertEqual([b.line for b in blocks], [4, 15])
            self.assertEqual(blocks[0].script(), "export A=1\necho a \\\n  b\n")
            # Without the server the script would start: these blocks need none.
            script = file_script(blocks).replace(START_SERVER, "")
            r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertNotIn("never", r.stdout)
            self.assertEqual(re.findall(r"^@@ (.*)$", r.stdout, re.M)[-1], blocks[1].where())

    def test_a_block_that_starts_a_server_is_recognized(self):
        self.assertTrue(Block("f", 1, "sh", ["trainyard server --gpus sim:1xL4 &"]).starts_a_server())
        self.assertFalse(Block("f", 1, "sh", ["trainyard ls"]).starts_a_server())


class DocCommands(unittest.TestCase):
    def test_every_runnable_block_succeeds(self):
        files = [blocks for blocks in map(runnable_blocks, doc_files()) if blocks]
        total = sum(len(blocks) for blocks in files)
        # The markers are what make this test check anything: losing them must not pass quietly.
        self.assertGreaterEqual(total, 10, "fewer runnable blocks than expected in the docs")
        failures = []
        with tempfile.TemporaryDirectory(prefix="ty-docs-") as scratch:
            os.chmod(scratch, 0o711)
            for blocks in files:
                code, out, where = run_file(blocks, scratch)
                print(f"{os.path.relpath(blocks[0].path, REPO)}: {len(blocks)} block(s), exit {code}",
                      flush=True)
                if code != 0:
                    block = next(b for b in blocks if b.where() == where) if where.startswith(
                        os.path.relpath(blocks[0].path, REPO)) else None
                    failures.append(f"{where}: exit {code}\n{block.script() if block else ''}"
                                    f"--- output ---\n{out[-3000:]}")
        self.assertFalse(failures, "\n\n".join(failures))


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
