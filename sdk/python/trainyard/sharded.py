"""Checkpoints of a multi-rank job that every rank agrees on, through the file system alone.

`CheckpointManager(dir, sharded=True)` on each of W ranks (RANK, WORLD_SIZE and
TRAINYARD_ATTEMPT from the environment, or passed in). Ranks may be on different
nodes sharing the directory; no collective is needed. Layout (docs/job-contract.md):

  step-<N>/              one step; a checkpoint once MANIFEST.json is there
    MANIFEST.json        the global manifest, the commit: every rank's files, world_size
    rank-<r>/            rank r's shard: its files and its own MANIFEST.json
    rank-<r>.tmp/        rank r's shard being written
  step-<N>.damaged/      a step whose shard failed verification when loaded

Protocol, correct under SIGKILL of any rank at any instant:
1. Rank r writes its shard into step-<N>/rank-<r>.tmp/ exactly as a single-writer
   checkpoint (files fsynced, its manifest with rank, world_size and attempt, the
   directory fsynced), renames it to rank-<r>/ and fsyncs step-<N>/: the shard is
   durable and never changes afterwards.
2. Any rank that sees all W shards of step N committed with the same attempt and world
   size fsyncs step-<N>/ (so those renames are durable), writes the global manifest to a
   name of its own, fsyncs it, renames it to MANIFEST.json and fsyncs step-<N>/. The
   content is a pure function of the shard manifests, so ranks racing here write the
   same bytes and the rename is idempotent. A rank killed after its shard's commit
   leaves a complete set: every manager completes such sets when it opens and in latest().
3. Pruning counts only committed steps: the newest keep_last are kept, so the newest
   committed step is never removed; step directories older than it that never
   committed, or were marked damaged, are removed too.

Agreement: a step commits only once every rank has saved it, so the set of committed
steps cannot change under a rank that is still resuming (saves go forward: a rank may
not save a step older than the newest committed one), and latest() returns the newest
committed step on every rank. A shard left by an earlier attempt never joins a set of
this attempt's shards (the attempt is in each shard's manifest; trainyard raises
TRAINYARD_ATTEMPT on every restart; outside trainyard, give restarted ranks a new
TRAINYARD_ATTEMPT, else TORCHELASTIC_RESTART_COUNT is used). Each rank hashes only its
own shard when it loads; a rank whose shard fails moves the step aside to
step-<N>.damaged/ and raises, so the attempt fails and the next one resumes every rank
from the previous committed step. A world size that differs from the checkpoint's is an
error (no re-sharding); get(step, rank=q) reads any rank's shard for a conversion of
one's own.
"""

import hashlib
import json
import logging
import os
import re
import shutil

from . import checkpoint as _ck
from . import runtime as _job
from .checkpoint import MANIFEST, Checkpoint, CheckpointError, CheckpointManager

log = logging.getLogger("trainyard")

_MANIFEST_TMP = MANIFEST + ".tmp-"
_DAMAGED_DIR = re.compile(r"^step-(\d+)\.damaged$")


def _attempt_from_env(env):
    """TRAINYARD_ATTEMPT, else torchrun's restart count + 1, else 1."""
    for name, offset in (("TRAINYARD_ATTEMPT", 0), ("TORCHELASTIC_RESTART_COUNT", 1)):
        try:
            return int(env[name]) + offset
        except (KeyError, ValueError):
            continue
    return 1


def _read_json(path):
    """(raw bytes, parsed object) of a small JSON file, or (None, None)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        return raw, json.loads(raw.decode("utf-8"))
    except (OSError, ValueError):
        return None, None


class ShardedCheckpointManager(CheckpointManager):
    """One rank's side of a sharded checkpoint directory (module docstring)."""

    def __init__(self, directory=None, keep_last=3, job=None, sharded=True, rank=None,
                 world_size=None, attempt=None):
        j = job or _job.current()
        if rank is None:
            rank = j.rank if j is not None else _job._env_int(os.environ, "RANK", 0)
        if world_size is None:
            world_size = (j.world_size if j is not None
                          else _job._env_int(os.environ, "WORLD_SIZE", 1))
        if attempt is None:
            attempt = _attempt_from_env(os.environ)
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError("rank %r of world size %r: need 0 <= rank < world size"
                             % (rank, world_size))
        self.rank, self.world_size, self.attempt = rank, world_size, attempt
        self._opened = False
        super().__init__(directory, keep_last=keep_last, job=job)
        self._opened = True

    # ---- paths -------------------------------------------------------------------------
    def shard_path(self, step, rank=None):
        return os.path.join(self.path_for(step), "rank-%d" % (self.rank if rank is None
                                                              else rank))

    def _tmp_path(self, step):
        return self.shard_path(step) + ".tmp"

    def _manifest_fields(self):
        return {"rank": self.rank, "world_size": self.world_size, "attempt": self.attempt}

    def _step_dirs(self):
        """{step: directory name} of every step-<N> directory, committed or not."""
        out = {}
        for name in os.listdir(self.directory):
            m = _ck._STEP_DIR.match(name)
            if m and os.path.isdir(os.path.join(self.directory, name)):
                out[int(m.group(1))] = name
        return out

    # ---- reading the manifests ---------------------------------------------------------
    def _global(self, step):
        """The global manifest of `step` when it is committed, else None (no hashing)."""
        _, m = _read_json(os.path.join(self.path_for(step), MANIFEST))
        if (isinstance(m, dict) and m.get("format") == _ck.FORMAT and m.get("step") == step
                and isinstance(m.get("files"), list)):
            return m
        return None

    def _shard(self, step, rank):
        """(raw, manifest) of rank's committed shard of `step` when it is well formed and
        its files have their sizes, else (None, None)."""
        path = self.shard_path(step, rank)
        raw, m = _read_json(os.path.join(path, MANIFEST))
        if not (isinstance(m, dict) and m.get("format") == _ck.FORMAT and m.get("step") == step
                and m.get("rank") == rank and isinstance(m.get("world_size"), int)
                and "attempt" in m and isinstance(m.get("files"), list)):
            return None, None
        if Checkpoint(step, path).check() is not None:
            return None, None
        return raw, m

    def steps(self):
        """Committed steps (their global manifest is there), ascending; unverified."""
        return sorted(s for s in self._step_dirs() if self._global(s) is not None)

    # ---- committing a step -------------------------------------------------------------
    def _try_complete(self, step):
        """Writes step's global manifest when all world_size shards are committed by the
        same attempt. True when the step is committed (by this call or before)."""
        if self._global(step) is not None:
            return True
        shards = [self._shard(step, r) for r in range(self.world_size)]
        if any(m is None for _, m in shards) or any(
                m["world_size"] != self.world_size or m["attempt"] != shards[0][1]["attempt"]
                for _, m in shards):
            return False
        files = []
        for r, (raw, m) in enumerate(shards):
            prefix = "rank-%d/" % r
            files += [{"name": prefix + e["name"], "size": e["size"], "sha256": e["sha256"]}
                      for e in m["files"]]
            files.append({"name": prefix + MANIFEST, "size": len(raw),
                          "sha256": hashlib.sha256(raw).hexdigest()})
        doc = {"format": _ck.FORMAT, "version": _ck.VERSION, "step": step,
               "created": max(m["created"] for _, m in shards), "world_size": self.world_size,
               "attempt": shards[0][1]["attempt"],
               "files": sorted(files, key=lambda e: e["name"])}
        if shards[0][1].get("metadata") is not None:
            doc["metadata"] = shards[0][1]["metadata"]
        step_dir = self.path_for(step)
        tmp = os.path.join(step_dir, _MANIFEST_TMP + str(self.rank))
        try:
            _ck._fsync_dir(step_dir)  # the shards' renames are durable before the commit
            _ck._write_durably(tmp, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
            os.rename(tmp, os.path.join(step_dir, MANIFEST))  # the commit of step N
            _ck._fsync_dir(step_dir)
        except FileNotFoundError:
            return self._global(step) is not None  # pruned or moved aside meanwhile
        log.info("trainyard: step %d committed by all %d ranks", step, self.world_size)
        return True

    def _complete_pending(self):
        """Commits every complete set newer than the newest committed step (a rank was
        killed between its shard's commit and the global manifest)."""
        dirs = self._step_dirs()
        done = [s for s in dirs if self._global(s) is not None]
        newest = max(done) if done else -1
        for step in sorted(dirs):
            if step > newest and step not in done:
                self._try_complete(step)

    # ---- finding -----------------------------------------------------------------------
    def get(self, step, verify=True, rank=None):
        """This rank's shard of committed `step` as a Checkpoint (with .rank and
        .world_size), or None when the step is not committed. With verify, the sizes of
        every rank's files are checked and this rank's files hashed; a failure moves the
        step aside and raises CheckpointError (falling back alone would leave the ranks
        on different steps). rank=q reads another rank's shard, whatever this job's
        world size (a damaged one then gives None)."""
        m = self._global(step)
        if m is None:
            return None
        world = m.get("world_size")
        if not isinstance(world, int):
            raise CheckpointError("%s was written without sharded=True; open it with "
                                  "CheckpointManager(%r) on one rank" % (
                                      self.path_for(step), self.directory))
        if rank is None and world != self.world_size:
            raise CheckpointError(
                "checkpoint step %d in %s was written by %d ranks and this job has %d: "
                "resume with WORLD_SIZE=%d, or convert it (get(step, rank=q) reads rank q's "
                "shard) into a new directory" % (step, self.directory, world, self.world_size,
                                                 world))
        r = self.rank if rank is None else rank
        if not 0 <= r < world:
            raise ValueError("rank %d: step %d has ranks 0..%d" % (r, step, world - 1))
        ck = Checkpoint(step, self.shard_path(step, r))
        ck.rank, ck.world_size = r, world
        if verify:
            problem = Checkpoint(step, self.path_for(step)).check() or ck.verify()
            if problem and self._global(step) is None:
                return None  # pruned meanwhile: gone, not damaged
            if problem:
                if rank is not None:
                    log.warning("trainyard: shard %s is damaged (%s)", ck.path, problem)
                    return None
                self._set_aside(step, problem)
        return ck

    def latest(self, verify=True):
        """This rank's shard of the newest step every rank committed, or None. The same
        step on every rank; errors rather than a different step (see get())."""
        self._complete_pending()
        for step in reversed(self.steps()):
            ck = self.get(step, verify=verify)  # None only when pruned meanwhile
            if ck is not None:
                return ck
        return None

    def load_latest(self, names=None):
        """(checkpoint, {name: buffer}) of this rank's shard of the newest committed step,
        its files hashed while they are read (Checkpoint.load()); (None, {}) when there is
        none. A damaged shard raises as in get()."""
        ck = self.latest(verify=False)
        if ck is None:
            return None, {}
        problem = Checkpoint(ck.step, self.path_for(ck.step)).check()
        if problem is None:
            try:
                return ck, ck.load(names)
            except CheckpointError as e:
                problem = str(e)
        self._set_aside(ck.step, problem)

    def _set_aside(self, step, problem):
        """Moves a damaged committed step to step-<N>.damaged/ (no rank will take it
        again) and raises: this rank cannot go on alone from an older step."""
        src, dst = self.path_for(step), self.path_for(step) + ".damaged"
        try:
            if os.path.exists(dst):
                _ck._remove_tree(dst)
            os.rename(src, dst)
            _ck._fsync_dir(self.directory)
        except FileNotFoundError:
            pass  # another rank moved it first
        older = [s for s in self.steps() if s < step]
        raise CheckpointError(
            "rank %d: checkpoint step %d is damaged (%s); moved it to %s so that no rank "
            "resumes from it. Stop this attempt: other ranks may have loaded step %d; the "
            "next attempt resumes every rank from %s" % (
                self.rank, step, problem, dst, step,
                "step %d" % older[-1] if older else "scratch"))

    # ---- writing -----------------------------------------------------------------------
    def save(self, step, files, background=False, metadata=None):
        """Commits this rank's shard of `step` (CheckpointManager.save()); the step is
        committed once every rank's shard is. Returns the shard's path. A step already
        committed, or whose shard this rank already committed in this attempt, is kept
        as it is (a shard never changes once another rank may have counted it)."""
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise ValueError("step must be a non-negative int, got %r" % (step,))
        self.wait()
        committed = self.steps()
        if committed and step < committed[-1]:
            raise ValueError("step %d is older than step %d, which all ranks committed; "
                             "sharded saves go forward" % (step, committed[-1]))
        m = self._global(step)
        if m is not None:
            if m.get("world_size") != self.world_size:
                raise CheckpointError("step %d is already committed by %r ranks; this job "
                                      "has %d" % (step, m.get("world_size"), self.world_size))
            log.info("trainyard: step %d is already committed by all ranks; kept", step)
            self._prune(step)
            return self.shard_path(step)
        _, own = self._shard(step, self.rank)
        if own is not None and own["attempt"] == self.attempt:
            log.info("trainyard: rank %d already saved step %d in this attempt; kept",
                     self.rank, step)
            self._try_complete(step)
            return self.shard_path(step)
        os.makedirs(self.path_for(step), exist_ok=True)
        _ck._fsync_dir(self.directory)  # step-<N>/ itself is durable before shards in it
        super().save(step, files, background=background, metadata=metadata)
        return self.shard_path(step)

    def _publish(self, step, tmp):
        """Puts this rank's shard in place; an old shard of an earlier attempt goes first
        (no set of this attempt can include it)."""
        final = self.shard_path(step)
        if os.path.exists(final):
            _ck._remove_tree(final)
        os.rename(tmp, final)  # the shard's commit
        _ck._fsync_dir(self.path_for(step))
        self._try_complete(step)

    def _prune(self, keep):
        """Keeps the newest keep_last committed steps; removes older committed ones, and
        step directories older than the newest committed step that never committed or
        were set aside as damaged."""
        committed = self.steps()
        if not committed:
            return
        if self.keep_last is not None:
            for step in committed[:-self.keep_last]:
                _ck._remove_tree(self.path_for(step))
        newest = committed[-1]
        for name in os.listdir(self.directory):
            m = _ck._STEP_DIR.match(name) or _DAMAGED_DIR.match(name)
            if m and int(m.group(1)) < newest and not (
                    name == "step-%s" % m.group(1) and int(m.group(1)) in committed):
                _ck._remove_tree(os.path.join(self.directory, name))

    def _clean_leftovers(self):
        """When the manager opens: commits complete sets, then removes this rank's stale
        pieces (a shard of an earlier attempt in a set that never completed, its .tmp
        shard, its temporary global manifests) and trash. Nothing at later saves: another
        manager of this rank in this process may own them."""
        if self._opened or self._thread is not None:
            return
        self._complete_pending()
        mine = ("rank-%d.tmp" % self.rank, _MANIFEST_TMP + str(self.rank))
        for step, name in self._step_dirs().items():
            step_dir = os.path.join(self.directory, name)
            try:  # other ranks may be pruning step directories meanwhile
                entries = os.listdir(step_dir)
            except FileNotFoundError:
                continue
            for entry in entries:
                if entry in mine or entry.startswith(_ck._TRASH_PREFIX):
                    path = os.path.join(step_dir, entry)
                    if os.path.isdir(path):
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        _unlink(path)
            if self._global(step) is None:
                _, own = self._shard(step, self.rank)
                if own is not None and own["attempt"] != self.attempt:
                    _ck._remove_tree(self.shard_path(step))
        for name in os.listdir(self.directory):
            if name.startswith(_ck._TRASH_PREFIX):
                shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass

