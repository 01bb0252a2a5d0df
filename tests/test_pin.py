"""`pin` rewrites fixtures in place: it must never damage one, whatever happens to the run.

`validate_tool_stream.py pin FIXTURE_OR_FOLDER...` writes each fixture's outcome into its
`expect` block.  The fixtures are a project's test data, often under review in a working tree,
so a pin that is killed, interrupted, runs out of disk, meets a link or a file that is not a
fixture must leave every file either exactly as it was or exactly as a clean pin would write it.
These tests are the specification for that; every one runs the real CLI in a subprocess, on
copies in temporary folders (never the bundled fixtures/).

What is checked, and why:

* Atomic replacement.  Each file is written to a hidden temporary file in the same folder (a
  name starting with "." and ending in ".tmp", never in ".json", so a later `pin FOLDER` or
  `validate FOLDER` never mistakes it for a fixture), flushed and fsynced, given the original
  file's permission bits, then renamed over the original.  Observable as: the pinned path is a
  new inode, its mode is the old mode, and a clean run leaves nothing else in the folder.
* SIGKILL at random moments.  Six ~3 MB fixtures are pinned by a run that is killed after a
  seeded random delay (spread over the length of a clean run that was measured first), and in
  more rounds a few milliseconds after the run was seen to start changing the folder (a file's
  inode/size/mtime or a new entry), which is where a non-atomic write would be caught mid-way.
  After each kill every fixture must be byte-identical to its old bytes or to the bytes a clean
  pin writes; leftover temporary files are allowed but must be hidden ".tmp" names.
* SIGINT.  The same run interrupted with Ctrl-C ends with exit 3, says it was interrupted, prints
  no traceback and removes its temporary file; the fixtures are old or new, never cut.
* A full disk (simulated with RLIMIT_FSIZE smaller than the rewritten file).  The files that
  cannot be written keep their old bytes, each is named on stderr, the fixtures that fit are still
  pinned in the same run, the exit code is 3 and nothing is reported as an internal error.
* Links.  `pin F` does not follow a file link or a folder link that leads outside F (it would
  rewrite files the caller never named): those files are untouched, the links are named on stderr
  as skipped and the exit code is 3.  A link inside F stays a link.
* Not a fixture.  A JSON object that is not a fixture envelope (a package.json in the same
  folder) never gets an "expect" member, even with --allow-invalid.
* Read-only files.  A fixture with mode 0o444 is not replaced (a rename would succeed even so, so
  the tool must check the mode itself, also when running as root); the others are pinned; exit 3.
* Permission bits.  A pinned 0o640 file is still 0o640 (a temporary file is created 0o600).
* A folder swapped for a link while pin runs.  The files are checked before any is validated;
  a folder on a file's path replaced afterwards by a link out of F must not be followed (each
  file is reached again from F one folder at a time, refusing links): the file outside keeps its
  bytes, the one in the moved folder too, and the run says so and exits 3.
* The given folder, or the one above it, swapped for a link to an outside copy after the check or
  between two files: each folder given is opened once at the start and everything is reached
  through it, so the outside files keep their bytes and the folder opened is pinned whole (exit 0).
* Another writer.  An edit saved between pin's read of a file and its rename is kept (the file is
  read again just before the rename and skipped, exit 3); a file that meanwhile got exactly the
  pinned bytes (another pin) counts as pinned.
* Already pinned.  A copy of the bundled fixtures/ pinned again: no byte, inode or time changes,
  exit 0, and stderr counts them all as already up to date; an equivalent block (codes or keys in
  another order, other escapes, notes) is kept; one that pins less or more is rewritten; an envelope
  never judged whose block pins exactly that needs no --allow-invalid.
* Names.  A legal file name of 245 bytes (60 four-byte characters) is pinned: the temporary
  file's name stays within the 255-byte limit.  A pipe named *.json given to pin is skipped as
  not a regular file (reading it would block).
* Concurrent pins.  Two pins of one folder at once, while a third process keeps reading and
  parsing every fixture: every read parses, both runs succeed, nothing is left behind.
"""

import atexit
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import contextlib
import io
from unittest import mock

from support import BLOCKED_DOC, ENV, FIXTURES, Folder, one_chunk_per_line, PASS_DOC, run_cli, SCRIPT, slow, vts

try:
    import resource
except ImportError:  # pragma: no cover - not on POSIX
    resource = None

TIMEOUT = 120
SEED = 20240611


# --------------------------------------------------------------------------- helpers


# The real processes below run the tool as a module from a bytecode cache outside the checkout
# (PYTHONPYCACHEPREFIX), so the many runs of this module do not each compile the 15,000-line file
# again, and without the site start-up (-S: the installation's path files; the tool and the reader
# use the standard library only): the same code, started in a fraction of the time.
_PYC_CACHE = tempfile.mkdtemp(prefix="vts-pin-pyc-")
atexit.register(shutil.rmtree, _PYC_CACHE, True)
PIN_ENV = {key: value for key, value in ENV.items() if key != "PYTHONDONTWRITEBYTECODE"}
PIN_ENV.update(PYTHONPATH=os.path.dirname(SCRIPT), PYTHONPYCACHEPREFIX=_PYC_CACHE)


def pin_command(*args):
    return [sys.executable, "-S", "-m", "validate_tool_stream", "pin", *args]


def warm_cache():
    """Compile the tool into the bytecode cache, so that a run timed next is as long as the runs after it."""
    subprocess.run(pin_command("--help"), stdout=subprocess.DEVNULL, env=PIN_ENV, timeout=TIMEOUT, check=True)


def run_pin(*args, preexec_fn=None, process=False):
    """Run `pin` to the end; returns (exit code, stdout, stderr).  In this process (support.run_cli)
    unless process=True or a preexec_fn (a resource limit) asks for a real process."""
    if preexec_fn is None and not process:
        return run_cli("pin", *args, decode="replace")
    proc = subprocess.run(pin_command(*args), capture_output=True, env=PIN_ENV, timeout=TIMEOUT,
                          preexec_fn=preexec_fn)
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def fixture(call_id, text_size=40, fragment=4096):
    """An openai fixture (no expect block, so pin must write one): one call `note` whose
    arguments {"text": "..."} of about text_size characters arrive in fragments."""
    arguments = json.dumps({"text": ("abcdefghij" * (text_size // 10 + 1))[:text_size]})
    pieces = [arguments[at:at + fragment] for at in range(0, len(arguments), fragment)]
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": call_id, "type": "function", "function": {"name": "note", "arguments": ""}}]}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]}
               for piece in pieces]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    doc = {"profile": "openai",
           "tool_schemas": {"note": {"type": "object", "properties": {"text": {"type": "string"}}}},
           "chunks": chunks}
    return (json.dumps(doc, indent=2) + "\n").encode("utf-8")


def real_tempdir():
    """A TemporaryDirectory and its real path (no link in it, so "outside" is unambiguous)."""
    holder = tempfile.TemporaryDirectory(prefix="pin-safety-")
    return holder, os.path.realpath(holder.name)


def write_files(folder, files):
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(data)


def read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def reset_folder(folder, files):
    """Empty folder (leftover temporary files included) and write files into it again."""
    for entry in os.listdir(folder):
        os.unlink(os.path.join(folder, entry))
    write_files(folder, files)


def clean_pin(testcase, files, process=False):
    """What a clean `pin` writes for each of files ({name: bytes}), and how long it took (process=True: as
    a real process, the run KilledRun kills)."""
    holder, folder = real_tempdir()
    with holder:
        write_files(folder, files)
        started = time.monotonic()
        code, _, err = run_pin(folder, process=process)  # KilledRun: a real process, its duration spreads the kills
        took = time.monotonic() - started
        testcase.assertEqual(code, 0, f"a clean pin of the reference copy failed: {err}")
        pinned = {name: read_bytes(os.path.join(folder, name)) for name in files}
    for name, data in pinned.items():
        testcase.assertNotEqual(data, files[name], f"the reference pin did not rewrite {name}")
        testcase.assertIn("expect", json.loads(data))
    return pinned, took


def folder_state(folder, names):
    """(entries, {name: (inode, size, mtime)}) -- what a watcher can see of a run's progress."""
    entries = frozenset(os.listdir(folder))
    stats = {}
    for name in names:
        try:
            info = os.stat(os.path.join(folder, name))
            stats[name] = (info.st_ino, info.st_size, info.st_mtime_ns)
        except OSError:
            stats[name] = None
    return entries, stats


def changes(first, now):
    """How many things changed from state first to state now (new entries + changed files)."""
    entries, stats = now
    return len(entries - first[0]) + sum(1 for name, value in stats.items() if value != first[1][name])


def symlinks_work(folder):
    if not hasattr(os, "symlink"):
        return False
    probe = os.path.join(folder, ".probe-link")
    try:
        os.symlink(folder, probe)
    except (OSError, NotImplementedError):
        return False
    os.unlink(probe)
    return True


class PinSafetyCase(unittest.TestCase):
    def assert_old_or_new(self, folder, old, new, context):
        for name in sorted(old):
            data = read_bytes(os.path.join(folder, name))
            if data != old[name] and data != new[name]:
                self.fail(f"{context}: {name} is neither its old bytes ({len(old[name])}) nor its pinned bytes "
                          f"({len(new[name])}) but {len(data)} bytes" + (" (empty)" if not data else ""))

    def assert_no_strays(self, folder, names, temps_allowed, context):
        """Only the fixtures are left, or (after SIGKILL) also hidden '.*.tmp' temporary files."""
        for entry in sorted(os.listdir(folder)):
            if entry in names:
                continue
            self.assertFalse(entry.endswith(".json"), f"{context}: stray file {entry!r} would be taken for a fixture")
            if not temps_allowed:
                self.fail(f"{context}: leftover file {entry!r}")
            self.assertTrue(entry.startswith(".") and entry.endswith(".tmp"),
                            f"{context}: leftover {entry!r} is not a hidden '.*.tmp' temporary file")

    def assert_clean_stderr(self, err):
        self.assertNotIn("Traceback", err)
        self.assertNotIn("internal error", err)


# --------------------------------------------------------------------------- atomic replace, modes


class AtomicReplace(PinSafetyCase):
    def test_a_pinned_file_is_replaced_by_rename_and_nothing_is_left_behind(self):
        files = {"a.json": fixture("call_a", 3000), "b.json": fixture("call_b", 200)}
        new, _ = clean_pin(self, files)
        holder, folder = real_tempdir()
        with holder:
            write_files(folder, files)
            inodes = {name: os.stat(os.path.join(folder, name)).st_ino for name in files}
            code, out, err = run_pin(folder)
            self.assertEqual(code, 0, err)
            self.assert_clean_stderr(err)
            for name in files:
                path = os.path.join(folder, name)
                self.assertEqual(read_bytes(path), new[name])
                self.assertNotEqual(os.stat(path).st_ino, inodes[name],
                                    f"{name} was rewritten in place, not replaced by renaming a temporary file")
            self.assert_no_strays(folder, set(files), temps_allowed=False, context="clean pin")

    def test_permission_bits_are_kept(self):
        files = {"group.json": fixture("call_g", 500), "shared.json": fixture("call_s", 500)}
        wanted = {"group.json": 0o640, "shared.json": 0o664}
        new, _ = clean_pin(self, files)
        holder, folder = real_tempdir()
        with holder:
            write_files(folder, files)
            for name, mode in wanted.items():
                os.chmod(os.path.join(folder, name), mode)
            code, _, err = run_pin(folder)
            self.assertEqual(code, 0, err)
            for name, mode in wanted.items():
                path = os.path.join(folder, name)
                self.assertEqual(read_bytes(path), new[name], f"{name} was not pinned")
                self.assertEqual(oct(stat.S_IMODE(os.stat(path).st_mode)), oct(mode), f"{name} lost its mode")

    def test_a_read_only_fixture_is_not_rewritten(self):
        files = {"a-ok.json": fixture("call_a", 300), "b-read-only.json": fixture("call_b", 300),
                 "c-ok.json": fixture("call_c", 300)}
        new, _ = clean_pin(self, files)
        holder, folder = real_tempdir()
        with holder:
            write_files(folder, files)
            locked = os.path.join(folder, "b-read-only.json")
            os.chmod(locked, 0o444)
            try:
                code, _, err = run_pin(folder)
                self.assertEqual(read_bytes(locked), files["b-read-only.json"], "a read-only fixture was rewritten")
                self.assertEqual(stat.S_IMODE(os.stat(locked).st_mode), 0o444)
                self.assertIn(locked, err, "stderr does not name the read-only fixture")
                for name in ("a-ok.json", "c-ok.json"):
                    self.assertEqual(read_bytes(os.path.join(folder, name)), new[name], f"{name} was not pinned")
                self.assertEqual(code, 3, err)
                self.assert_clean_stderr(err)
                self.assert_no_strays(folder, set(files), temps_allowed=False, context="read-only")
            finally:
                os.chmod(locked, 0o644)

    def test_a_json_object_that_is_not_an_envelope_never_gets_an_expect_block(self):
        package = (json.dumps({"name": "x", "version": "1.0.0"}, indent=2) + "\n").encode("utf-8")
        files = {"package.json": package, "real.json": fixture("call_r", 200)}
        new, _ = clean_pin(self, {"real.json": files["real.json"]})
        for flags in ([], ["--allow-invalid"]):
            with self.subTest(flags=flags):
                holder, folder = real_tempdir()
                with holder:
                    write_files(folder, files)
                    code, _, err = run_pin(folder, *flags)
                    self.assertEqual(read_bytes(os.path.join(folder, "package.json")), package,
                                     "a package.json was given an expect block")
                    self.assertIn(os.path.join(folder, "package.json"), err, "stderr does not name package.json")
                    self.assertEqual(read_bytes(os.path.join(folder, "real.json")), new["real.json"])
                    self.assertEqual(code, 3, err)
                    self.assert_clean_stderr(err)


# --------------------------------------------------------------------------- full disk


@unittest.skipIf(resource is None or not hasattr(resource, "RLIMIT_FSIZE"), "no resource.RLIMIT_FSIZE here")
class FullDisk(PinSafetyCase):
    @slow("a real process under a file-size limit")
    def test_a_write_that_does_not_fit_keeps_the_old_file_and_the_run_goes_on(self):
        files = {"a-big.json": fixture("call_a", 40_000), "b-small.json": fixture("call_b", 50),
                 "c-big.json": fixture("call_c", 40_000), "d-small.json": fixture("call_d", 60)}
        new, _ = clean_pin(self, files)
        limit = max(len(new["b-small.json"]), len(new["d-small.json"])) + 4096
        self.assertLess(limit, min(len(new["a-big.json"]), len(new["c-big.json"])), "test setup: limit too large")

        def small_files_only():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        holder, folder = real_tempdir()
        with holder:
            write_files(folder, files)
            code, _, err = run_pin(folder, preexec_fn=small_files_only)
            for name in ("a-big.json", "c-big.json"):
                path = os.path.join(folder, name)
                self.assertEqual(read_bytes(path), files[name], f"{name} was damaged by a write that did not fit")
                self.assertIn(path, err, f"stderr does not name {name}, which could not be written")
            for name in ("b-small.json", "d-small.json"):
                self.assertEqual(read_bytes(os.path.join(folder, name)), new[name],
                                 f"{name} fits under the limit but was not pinned (the run stopped?)")
            self.assertEqual(code, 3, err)
            self.assert_clean_stderr(err)
            self.assert_no_strays(folder, set(files), temps_allowed=False, context="file-size limit")


# --------------------------------------------------------------------------- links


class Links(PinSafetyCase):
    def test_links_leading_outside_the_folder_are_skipped(self):
        holder, root = real_tempdir()
        with holder:
            if not symlinks_work(root):
                self.skipTest("symbolic links are not available here")
            outside = os.path.join(root, "outside")
            os.makedirs(os.path.join(outside, "dir"))
            outside_files = {os.path.join(outside, "target.json"): fixture("call_t", 200),
                             os.path.join(outside, "dir", "deep.json"): fixture("call_d", 200)}
            for path, data in outside_files.items():
                with open(path, "wb") as handle:
                    handle.write(data)
            folder = os.path.join(root, "F")
            os.mkdir(folder)
            inside = {"real.json": fixture("call_r", 200)}
            new, _ = clean_pin(self, inside)
            write_files(folder, inside)
            file_link = os.path.join(folder, "link.json")
            folder_link = os.path.join(folder, "sub")
            inner_link = os.path.join(folder, "inner-link.json")
            os.symlink(os.path.join(outside, "target.json"), file_link)
            os.symlink(os.path.join(outside, "dir"), folder_link)
            os.symlink("real.json", inner_link)

            code, _, err = run_pin(folder)
            for path, data in outside_files.items():
                self.assertEqual(read_bytes(path), data, f"pin F rewrote {path}, outside F, through a link")
            self.assertIn(file_link, err, "stderr does not say the file link was skipped")
            self.assertIn(folder_link, err, "stderr does not say the folder link was skipped")
            self.assertEqual(read_bytes(os.path.join(folder, "real.json")), new["real.json"],
                             "the real fixture inside F was not pinned")
            self.assertTrue(os.path.islink(inner_link), "a link inside F was replaced by a regular file")
            self.assertTrue(os.path.islink(file_link) and os.path.islink(folder_link))
            self.assertEqual(code, 3, err)
            self.assert_clean_stderr(err)


class SwappedFolder(PinSafetyCase):
    def test_a_folder_replaced_by_a_link_after_the_check_is_not_followed(self):
        holder, root = real_tempdir()
        with holder:
            if not symlinks_work(root):
                self.skipTest("symbolic links are not available here")
            folder, outside = os.path.join(root, "F"), os.path.join(root, "outside")
            os.makedirs(os.path.join(folder, "z"))
            os.mkdir(outside)
            data = fixture("call_z", 200)
            write_files(os.path.join(folder, "z"), {"b.json": data})
            write_files(outside, {"b.json": data})
            checked = vts._pin_targets

            def check_then_swap(*args):   # the race, made certain: after the check, before the write
                targets = checked(*args)
                os.rename(os.path.join(folder, "z"), os.path.join(folder, "z.orig"))
                os.symlink(outside, os.path.join(folder, "z"))
                return targets

            err = io.StringIO()
            with mock.patch.object(vts, "_pin_targets", check_then_swap), \
                    contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = vts.main(["pin", folder])
            self.assertEqual(read_bytes(os.path.join(outside, "b.json")), data, "pin wrote through the swapped link")
            self.assertEqual(read_bytes(os.path.join(folder, "z.orig", "b.json")), data)
            self.assertEqual(code, 3)
            self.assertIn("replaced by a link while pinning", err.getvalue())
            self.assert_clean_stderr(err.getvalue())


    def test_the_given_folder_or_one_above_it_swapped_for_a_link_after_the_start_is_not_followed(self):
        # root/P/F is the folder given to pin; root/evil/F holds fixtures of the same names outside it.
        # F itself, or its parent P, is swapped for a link that leads to the outside copy: right
        # after the check (before any file is read), or between the first file and the next.
        names = ("a.json", "b.json", "c.json")
        inside = {name: fixture(f"call_{name[0]}", 200) for name in names}
        outside = {name: fixture(f"call_out_{name[0]}", 200) for name in names}
        new, _ = clean_pin(self, inside)
        for swapped in ("the folder", "its parent"):
            for moment in ("after the check", "between two files"):
                with self.subTest(swapped=swapped, moment=moment):
                    holder, root = real_tempdir()
                    with holder:
                        if not symlinks_work(root):
                            self.skipTest("symbolic links are not available here")
                        folder = os.path.join(root, "P", "F")
                        evil = os.path.join(root, "evil", "F")
                        os.makedirs(folder)
                        os.makedirs(evil)
                        write_files(folder, inside)
                        write_files(evil, outside)
                        victim = folder if swapped == "the folder" else os.path.dirname(folder)
                        lure = evil if swapped == "the folder" else os.path.dirname(evil)
                        moved = victim + ".orig"

                        def swap():
                            os.rename(victim, moved)
                            os.symlink(lure, victim)

                        checked, pin_one, done = vts._pin_targets, vts._pin_one, []

                        def check_then_swap(*args):
                            targets = checked(*args)
                            swap()
                            return targets

                        def pin_then_swap(*args):
                            pinned = pin_one(*args)
                            if not done:
                                done.append(1)
                                swap()
                            return pinned

                        hook = (("_pin_targets", check_then_swap) if moment == "after the check"
                                else ("_pin_one", pin_then_swap))
                        with mock.patch.object(vts, *hook):
                            code, _, err = run_pin(folder)
                        for name in names:
                            self.assertEqual(read_bytes(os.path.join(evil, name)), outside[name],
                                             f"pin wrote {name} outside the folder it was given, through the link")
                        held = moved if swapped == "the folder" else os.path.join(moved, "F")
                        for name in names:   # the folder held from the start is pinned, whole
                            self.assertEqual(read_bytes(os.path.join(held, name)), new[name], f"{name} not pinned")
                        self.assertEqual(code, 0, err)
                        self.assert_clean_stderr(err)
                        self.assert_no_strays(held, set(names), temps_allowed=False, context=f"{swapped} swapped")
                        self.assert_no_strays(evil, set(names), temps_allowed=False, context="outside")


class Names(PinSafetyCase):
    def test_a_long_utf8_file_name_can_be_pinned(self):
        holder, folder = real_tempdir()
        with holder:
            name = "\U0001F600" * 60 + ".json"
            self.assertEqual(len(name.encode("utf-8")), 245)
            try:
                write_files(folder, {name: fixture("call_long", 200)})
            except OSError:
                self.skipTest("this file system does not take a 245-byte name")
            code, out, err = run_pin(folder)
            self.assertEqual(code, 0, err)
            self.assertIn("expect", json.loads(read_bytes(os.path.join(folder, name))))
            self.assert_no_strays(folder, {name}, False, "long name")

    @unittest.skipUnless(hasattr(os, "mkfifo"), "no named pipes here")
    @slow("real processes: a pipe read would hang")
    def test_a_pipe_is_not_read_or_pinned(self):
        holder, folder = real_tempdir()
        with holder:
            os.mkfifo(os.path.join(folder, "pipe.json"))
            code, _, err = run_pin(os.path.join(folder, "pipe.json"), process=True)   # a hang would time out
            self.assertEqual(code, 3)
            self.assertIn("pipe.json: skipped: not a regular file", err)
            code, _, err = run_pin(folder, process=True)   # in a folder: refused before anything is read
            self.assertEqual(code, 3)
            self.assertIn("pipe.json is not a regular file", err)
            self.assert_clean_stderr(err)



# --------------------------------------------------------------------------- another writer, files already pinned


class AnotherWriter(PinSafetyCase):
    """An edit made by someone else between pin's read of a file and its rename is never lost."""

    def run_with_edit(self, files, victim, edit):
        """Pin files ({name: bytes}); once `victim` has been read and its pinned text computed,
        `edit` (its new bytes) is written over it in place, as an editor would save it."""
        holder, folder = real_tempdir()
        with holder:
            write_files(folder, files)
            pinned_text = vts._pinned_text

            def read_then_edit(text, *args):
                result = pinned_text(text, *args)
                if text.encode("utf-8") == files[victim]:
                    with open(os.path.join(folder, victim), "r+b") as handle:
                        handle.write(edit)
                        handle.truncate()
                return result

            with mock.patch.object(vts, "_pinned_text", read_then_edit):
                code, out, err = run_pin(folder)
            after = {name: read_bytes(os.path.join(folder, name)) for name in files}
            self.assert_no_strays(folder, set(files), temps_allowed=False, context="edited meanwhile")
        return code, out, err, after

    def test_an_edit_between_the_read_and_the_rename_is_kept_and_the_file_skipped(self):
        files = {"a.json": fixture("call_a", 300), "b.json": fixture("call_b", 300)}
        new, _ = clean_pin(self, files)
        edited = fixture("call_edited", 500)
        code, out, err, after = self.run_with_edit(files, "a.json", edited)
        self.assertEqual(after["a.json"], edited, "the other writer's edit was lost")
        self.assertEqual(after["b.json"], new["b.json"], "the run did not go on to the next file")
        self.assertIn("a.json: not written: it changed while pin was working on it", err)
        self.assertIn("pin: 1 written, 0 already up to date, 1 not pinned", err)
        self.assertNotIn("a.json", out)
        self.assertEqual(code, 3, err)
        self.assert_clean_stderr(err)

    def test_a_file_that_meanwhile_got_the_pinned_bytes_counts_as_pinned(self):
        # another pin of the same folder got there first: nothing is lost, nothing is left to do
        files = {"a.json": fixture("call_a", 300)}
        new, _ = clean_pin(self, files)
        code, _, err, after = self.run_with_edit(files, "a.json", new["a.json"])
        self.assertEqual(after["a.json"], new["a.json"])
        self.assertEqual(code, 0, err)
        self.assert_clean_stderr(err)


class AlreadyPinned(PinSafetyCase):
    """pin over fixtures whose expect blocks already hold their outcome changes nothing at all."""

    def test_the_bundled_fixtures_are_already_pinned_and_nothing_is_written(self):
        holder, root = real_tempdir()
        with holder:
            folder = os.path.join(root, "fixtures")
            shutil.copytree(FIXTURES, folder)

            def state():
                seen = {}
                for where, _, names in os.walk(folder):
                    for name in names + [""]:
                        info = os.stat(os.path.join(where, name))
                        seen[os.path.join(where, name)] = (info.st_ino, info.st_mtime_ns, info.st_size)
                return seen

            before = state()
            contents = {path: read_bytes(path) for path in before if os.path.isfile(path)}
            pinned = [path for path in contents if path.endswith(".json")]
            code, out, err = run_pin(folder)
            self.assertEqual(state(), before, "pin changed a fixture (or added a file) whose expect block matched")
            for path, data in contents.items():
                self.assertEqual(read_bytes(path), data, path)
            self.assertEqual(code, 0, err)
            self.assertEqual(err.strip(), f"pin: 0 written, {len(pinned)} already up to date, 0 not pinned")
            self.assertEqual(out.count("already pinned "), len(pinned))

    def test_an_equivalent_block_is_kept_as_written(self):
        # codes in another order, a call's keys in another order, an escape the tool would not write,
        # and a note: as --expect judges them, the same pin
        doc = dict(BLOCKED_DOC)
        with Folder({"x.json": doc}) as folder:
            self.assertEqual(run_cli("pin", folder.path)[0], 0)
            pinned = json.loads(read_bytes(folder.file("x.json")))["expect"]
        call = pinned["calls"][0]
        doc["expect"] = {"note": "keep", "calls": [dict(reversed(list(call.items())))],
                         "codes": list(reversed(pinned["codes"])) + [], "status": pinned["status"]}
        text = json.dumps(doc, indent=1, ensure_ascii=True).replace('"call_1"', '"\\u0063all_1"')
        with Folder({"x.json": text}) as folder:
            code, out, err = run_cli("pin", folder.path)
            self.assertEqual(read_bytes(folder.file("x.json")).decode("utf-8"), text)
            self.assertEqual(code, 0, err)
            self.assertIn("already pinned", out)
            self.assertIn("pin: 0 written, 1 already up to date, 0 not pinned", err)

    def test_a_block_that_pins_less_or_more_is_rewritten(self):
        for partial in ({"status": "blocked"}, {"status": "blocked", "codes": []},
                        {"status": "blocked", "codes": ["missing_terminal", "stream_error"], "calls": []}):
            with self.subTest(expect=partial):
                with Folder({"x.json": dict(BLOCKED_DOC, expect=partial)}) as folder:
                    code, _, err = run_cli("pin", folder.path)
                    self.assertEqual(code, 0, err)
                    self.assertIn("pin: 1 written, 0 already up to date, 0 not pinned", err)
                    self.assertEqual(json.loads(read_bytes(folder.file("x.json")))["expect"]["codes"],
                                     ["missing_terminal"])

    def test_an_envelope_never_judged_whose_block_pins_exactly_that_needs_no_allow_invalid(self):
        bad = {"profile": "watsonx", "tool_schemas": {}, "chunks": []}
        exact = {"status": "blocked", "codes": ["unknown_profile"], "calls": []}
        with Folder({"pinned.json": dict(bad, expect=exact),
                     "loose.json": dict(bad, expect={"status": "blocked", "codes": ["unknown_profile"]})}) as folder:
            before = read_bytes(folder.file("pinned.json"))
            code, _, err = run_cli("pin", folder.file("pinned.json"))
            self.assertEqual(read_bytes(folder.file("pinned.json")), before)
            self.assertEqual(code, 0, err)
            code, _, err = run_cli("pin", folder.file("loose.json"))   # it pins less: still refused without the flag
            self.assertEqual(code, 3, err)
            self.assertIn("loose.json: not pinned: it is unknown_profile (pin it anyway with --allow-invalid)", err)

# --------------------------------------------------------------------------- killed and interrupted runs


@slow("real processes killed at random moments")
class KilledRun(PinSafetyCase):
    """Six ~3 MB fixtures; runs killed at random moments must leave each file old or new."""

    COPIES = 6
    RANDOM_ROUNDS = 8        # SIGKILL after a delay spread over a clean run's duration
    WATCHED_ROUNDS = 8       # SIGKILL a few ms after the run was seen changing the folder

    @classmethod
    def setUpClass(cls):
        cls.holder, cls.folder = real_tempdir()
        # distinct call ids, so a temporary file renamed over the wrong fixture is caught too
        cls.old = {f"big-{n}.json": fixture(f"call_{n}", 2_900_000) for n in range(cls.COPIES)}
        cls.names = set(cls.old)

    @classmethod
    def tearDownClass(cls):
        cls.holder.cleanup()

    def setUp(self):
        if not hasattr(type(self), "new"):
            warm_cache()   # else the first run compiles the tool, and kills timed from it would come after the end
            type(self).new, type(self).duration = clean_pin(self, self.old, process=True)
        reset_folder(self.folder, self.old)

    def start(self):
        # SIGINT at its default in the run: a shell without job control starts a background job (this
        # suite, say) with SIGINT ignored, its children inherit that, and Python keeps an ignored SIGINT
        return subprocess.Popen(pin_command(self.folder), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=PIN_ENV, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def watch_until(self, proc, wanted):
        """Poll the folder until `wanted` things changed; True if the run was still going then."""
        first = folder_state(self.folder, self.names)
        deadline = time.monotonic() + TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline:
            if changes(first, folder_state(self.folder, self.names)) >= wanted:
                return True
            time.sleep(0.0002)     # a look every ~0.25 ms, not a spin that takes a core from the run it watches
        return False

    def finish(self, proc):
        _, err = proc.communicate(timeout=TIMEOUT)
        return proc.returncode, err.decode("utf-8", "replace")

    def test_sigkill_at_any_moment_leaves_each_file_old_or_new(self):
        rng = random.Random(SEED)
        self.assertGreater(min(len(data) for data in self.old.values()), 2_500_000)   # about 3 MB each
        rounds = []
        for n in range(self.RANDOM_ROUNDS):
            rounds.append(("after", self.duration * (n + rng.random()) / self.RANDOM_ROUNDS))
        for _ in range(self.WATCHED_ROUNDS):
            rounds.append(("watched", (rng.randint(1, 2 * self.COPIES), rng.uniform(0.0, 0.008))))
        rng.shuffle(rounds)
        for kind, when in rounds:
            reset_folder(self.folder, self.old)
            proc = self.start()
            if kind == "after":
                time.sleep(when)
                context = f"SIGKILL after {when:.3f}s of a {self.duration:.3f}s run"
            else:
                wanted, extra = when
                self.watch_until(proc, wanted)
                time.sleep(extra)
                context = f"SIGKILL {extra * 1000:.1f}ms after {wanted} changes in the folder"
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            self.finish(proc)
            self.assert_old_or_new(self.folder, self.old, self.new, context)
            self.assert_no_strays(self.folder, self.names, temps_allowed=True, context=context)

    def test_sigint_stops_cleanly_with_exit_3(self):
        rng = random.Random(SEED + 1)
        for attempt in range(5):
            reset_folder(self.folder, self.old)
            proc = self.start()
            running = self.watch_until(proc, 1)                  # the first temporary file is being written
            time.sleep(rng.uniform(0.0, 0.002))
            self.assertTrue(running and proc.poll() is None,
                            "test timing: the run ended before it could be interrupted")
            proc.send_signal(signal.SIGINT)
            code, err = self.finish(proc)
            finished = code == 0 and all(read_bytes(os.path.join(self.folder, name)) == self.new[name]
                                         for name in self.names)
            if not finished:
                break
            # test timing: on a busy machine the watcher can look so late that the signal lands after the
            # last file, while the interpreter exits; that run finished cleanly, so interrupt another
        self.assertEqual(code, 3, err)
        self.assertIn("interrupted", err.lower())
        self.assertNotIn("Traceback", err)
        self.assert_old_or_new(self.folder, self.old, self.new, "SIGINT")
        self.assert_no_strays(self.folder, self.names, temps_allowed=False, context="SIGINT")


# --------------------------------------------------------------------------- concurrent pins

READER = r"""
import json, os, sys
stop, paths = sys.argv[1], sys.argv[2:]
reads, failures = 0, []
print("ready", flush=True)
while not os.path.exists(stop):
    for path in paths:
        data = b""
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            json.loads(data)
        except (OSError, ValueError) as exc:
            failures.append([os.path.basename(path), len(data), type(exc).__name__])
        reads += 1
print(json.dumps({"reads": reads, "failures": len(failures), "first": failures[:5]}), flush=True)
"""


@slow("real processes racing")
class ConcurrentPins(PinSafetyCase):
    ROUNDS = 4

    def test_two_pins_at_once_never_show_a_reader_a_half_written_file(self):
        files = {f"c-{n}.json": fixture(f"call_{n}", 150_000) for n in range(6)}
        new, _ = clean_pin(self, files)
        holder, folder = real_tempdir()
        control_holder, control = real_tempdir()
        with holder, control_holder:
            write_files(folder, files)
            stop = os.path.join(control, "stop")
            paths = [os.path.join(folder, name) for name in sorted(files)]
            reader = subprocess.Popen([sys.executable, "-S", "-c", READER, stop, *paths], stdout=subprocess.PIPE,
                                      env=ENV, text=True)
            try:
                self.assertEqual(reader.stdout.readline().strip(), "ready")
                for n in range(self.ROUNDS):
                    if n:   # back to the old bytes, atomically, while the reader keeps reading
                        for name, data in files.items():
                            spare = os.path.join(control, name)
                            with open(spare, "wb") as handle:
                                handle.write(data)
                            os.replace(spare, os.path.join(folder, name))
                    first = subprocess.Popen(pin_command(folder), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                             env=PIN_ENV)
                    second = subprocess.Popen(pin_command(folder), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                              env=PIN_ENV)
                    for proc in (first, second):
                        _, err = proc.communicate(timeout=TIMEOUT)
                        self.assertEqual(proc.returncode, 0, f"round {n}: a concurrent pin failed: {err!r}")
                        self.assertNotIn(b"Traceback", err)
                    for name in files:
                        self.assertEqual(read_bytes(os.path.join(folder, name)), new[name], f"round {n}: {name}")
                    self.assert_no_strays(folder, set(files), temps_allowed=False, context=f"round {n}")
            finally:
                with open(stop, "w"):
                    pass
                out, _ = reader.communicate(timeout=TIMEOUT)
            result = json.loads(out.strip().splitlines()[-1])
            self.assertGreater(result["reads"], len(files) * self.ROUNDS, "the reader hardly ran")
            self.assertEqual(result["failures"], 0,
                             f"a reader saw a file that does not parse ({result['failures']} of {result['reads']} "
                             f"reads; first: {result['first']})")

# ---------------------------------------------------------------------------------------------------
# pin writes the outcome (was test_ci_integration.py, issue 12).
# ---------------------------------------------------------------------------------------------------


class Pin(unittest.TestCase):
    def test_pin_writes_the_outcome_and_keeps_every_other_byte(self):
        text = one_chunk_per_line(PASS_DOC)
        with Folder({"a.json": text, "b.json": json.dumps(dict(BLOCKED_DOC, expect={"note": "keep"})),
                     "bad.json": {"profile": "watsonx", "tool_schemas": {}, "chunks": []}}) as folder:
            code, out, err = run_cli("pin", folder.path)
            self.assertEqual(code, 3)                                  # bad.json refused
            self.assertIn("unknown_profile", err)
            with open(folder.file("a.json"), encoding="utf-8") as handle:
                pinned = handle.read()
            self.assertTrue(pinned.startswith(text.rstrip()[:-1].rstrip()))   # everything before is unchanged
            self.assertEqual(json.loads(pinned)["expect"], {
                "status": "pass", "codes": [],
                "calls": [{"id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'}]})
            with open(folder.file("b.json"), encoding="utf-8") as handle:
                self.assertEqual(json.loads(handle.read())["expect"], {
                    "status": "blocked", "codes": ["missing_terminal"],
                    "calls": [{"id": "call_1", "name": "weather", "arguments": '{"ci'}], "note": "keep"})
            with open(folder.file("bad.json"), encoding="utf-8") as handle:
                self.assertNotIn("expect", handle.read())
            code, out, _ = run_cli("pin", folder.path, "--exclude", "bad.json")
            self.assertEqual(code, 0)
            self.assertEqual(out.count("already pinned"), 2)
            self.assertEqual(run_cli(folder.path, "--expect", "--exclude", "bad.json")[0], 0)
            self.assertEqual(run_cli("pin", folder.file("bad.json"), "--allow-invalid")[0], 0)
            self.assertEqual(run_cli(folder.file("bad.json"), "--expect")[0], 0)
            self.assertEqual(run_cli("pin", "-", stdin=b"{}")[0], 3)


if __name__ == "__main__":
    unittest.main()
