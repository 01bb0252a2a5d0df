"""The validator's shape, as the module docstring and README promise it.

One file, sections in data-flow order listed with their doors in the docstring, each using only names
defined in it or above it; one provider is one room (no code outside a provider's sub-section compares
a value with a profile's name); every finding enters through the slot machine's one door; no
standard-library private member; lines of at most 120 characters; and at the top of the repository
only what the design card names.
"""

import ast
import functools
import os
import re
import subprocess
import unittest

from support import fixture_paths, fixture_report, ROOT, SCRIPT, slow, vts

BANNER = "# " + "-" * 75


@functools.lru_cache(maxsize=None)
def source():
    """The script's text, read once per run."""
    with open(SCRIPT, encoding="utf-8") as handle:
        return handle.read()


@functools.lru_cache(maxsize=None)
def tree():
    """The script's syntax tree, parsed once per run (the tests only read it)."""
    return ast.parse(source())


def sections(text):
    """[(title, first line, last line)] of the file's banner sections (1-based lines)."""
    lines = text.split("\n")
    starts = [(n + 2, lines[n + 1][2:]) for n in range(len(lines) - 2)
              if lines[n] == BANNER and lines[n + 2] == BANNER and lines[n + 1].startswith("# ")]
    return [(title, start, (starts[k + 1][0] - 2) if k + 1 < len(starts) else len(lines))
            for k, (start, title) in enumerate(starts)]


class Sections(unittest.TestCase):
    def test_the_docstring_names_every_section_in_order(self):
        text = source()
        titles = [title for title, _, _ in sections(text)]
        listed = re.findall(r"^  (\S[^.\n]*?) \.{3,}", vts.__doc__, re.M)
        self.assertGreater(len(titles), 15)
        wanted = []
        for title in titles:
            head = "Provider: one sub-section each" if title.startswith("Provider:") else title
            if not wanted or wanted[-1] != head:
                wanted.append(head)
        for title, entry in zip(wanted, listed):
            first = entry.split()[0].rstrip(",")
            self.assertTrue(title.startswith(first), f"docstring entry {entry!r} for section {title!r}")
        self.assertEqual(len(wanted), len(listed), (wanted, listed))

    def test_every_provider_section_ends_in_its_profile_row(self):
        text = source()
        lines = text.split("\n")
        rows = {name: row for name, row in vts.PROFILES.items()}
        found = {}
        for title, start, end in sections(text):
            if title.startswith("Provider:"):
                body = "\n".join(lines[start:end])
                for match in re.finditer(r"^([A-Z_]+) = Profile\(\s*name=\"([a-z-]+)\"", body, re.M):
                    found[match.group(2)] = title
        self.assertEqual(sorted(found), sorted(rows))

    def test_lines_are_at_most_120_characters(self):
        long = [n for n, line in enumerate(source().split("\n"), 1) if len(line) > 120]
        self.assertEqual(long, [])


class OneRoomPerProvider(unittest.TestCase):
    def test_no_code_outside_a_provider_section_compares_with_a_profile_name(self):
        text = source()
        rooms = [(start, end) for title, start, end in sections(text) if title.startswith("Provider:")]
        names = set(vts.PROFILES)
        offenders = []
        for node in ast.walk(tree()):
            if not isinstance(node, ast.Compare):
                continue
            constants = [c for c in [node.left, *node.comparators] for c in ast.walk(c)
                         if isinstance(c, ast.Constant) and c.value in names]
            if constants and not any(start <= node.lineno <= end for start, end in rooms):
                offenders.append((node.lineno, ast.get_source_segment(text, node)))
        self.assertEqual(offenders, [])

    def test_the_guard_sees_a_branch_on_a_name(self):
        planted = 'if profile == "gemini":\n    pass\n'
        node = ast.parse(planted).body[0].test
        self.assertIn("gemini", [c.value for c in ast.walk(node) if isinstance(c, ast.Constant)])


# A name's provider prefix (any case, after leading underscores) -> the profiles of the room it belongs to.
PREFIXES = {"chat": {"openai", "mistral"}, "openai": {"openai", "mistral"}, "mistral": {"openai", "mistral"},
            "anthropic": {"anthropic"}, "claude": {"anthropic"}, "responses": {"openai-responses"},
            "openai_responses": {"openai-responses"}, "bedrock": {"bedrock"}, "converse": {"bedrock"},
            "gemini": {"gemini"}, "vertex": {"gemini"}, "cohere": {"cohere"}, "ollama": {"ollama"},
            "langchain": {"ollama"}, "inter": {"gemini-interactions"}, "interactions": {"gemini-interactions"},
            "agui": {"ag-ui"}, "copilotkit": {"ag-ui"}, "realtime": {"openai-realtime"}}
PREFIX = re.compile(r"_*(openai_responses|[a-z]+)")
# A room that reads part of its wire with another room's own functions (its notes say which) -> those rooms:
# it may use their names too (the Live API's setup carries generateContent's Tool objects and Parts).
BUILDS_ON = {"gemini-live": ({"gemini"},)}


def room_profiles(title):
    """The profiles a "Provider:" section title names ("(profile x)", "(profiles x and y)"), else None."""
    named = re.search(r"\(profiles? ([^)]*)\)", title) if title.startswith("Provider:") else None
    return set(re.split(r",? and |, ", named.group(1))) if named else None


def provider_names_outside_their_room(text, parsed=None):
    """[(line, name)] of every provider-prefixed name defined or used outside its own room; the
    Profiles section, which lists the rows, is the one place where every room's name may stand."""
    spans = sections(text)
    offenders = []
    for node in ast.walk(parsed or ast.parse(text)):
        name = (node.id if isinstance(node, ast.Name) else node.name
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else None)
        prefix = PREFIX.match(name.lower()) if name else None
        owners = PREFIXES.get(prefix.group(1)) if prefix else None
        if owners is None:
            continue
        title = next((title for title, start, end in spans if start <= node.lineno <= end), "")
        room = room_profiles(title)
        if title.startswith("Profiles") or room == owners or any(
                owners in BUILDS_ON.get(profile, ()) for profile in room or ()):
            continue
        offenders.append((node.lineno, name))
    return offenders


class ProviderFactsInTheirRoom(unittest.TestCase):
    def test_every_profile_has_a_room(self):
        rooms = [room_profiles(title) for title, _, _ in sections(source())]
        self.assertEqual(set().union(*filter(None, rooms)), set(vts.PROFILES))
        self.assertTrue(all(owners in [r for r in rooms if r] for owners in PREFIXES.values()))

    def test_a_provider_prefixed_name_is_used_only_in_its_room(self):
        self.assertEqual(provider_names_outside_their_room(source(), tree()), [])

    def test_the_check_sees_a_fact_outside_its_room(self):
        planted = "\n".join([
            BANNER, "# Provider: Gemini streamGenerateContent (profile gemini)", BANNER, "",
            "_GEMINI_TABLE = 1", "",
            BANNER, "# Provider: Cohere v2 Chat stream events (profile cohere)", BANNER, "",
            "_COHERE_TABLE = 2",
            "_GEMINI_PLANTED = 1", "",
            BANNER, "# Profiles: the rows, one per wire format", BANNER, "",
            "ROWS = (_GEMINI_TABLE, _COHERE_TABLE)", "",
            BANNER, "# Capture import: a raw body becomes a fixture envelope", BANNER, "",
            "_Cohere_planted()", ""])
        found = [name for _, name in provider_names_outside_their_room(planted)]
        self.assertEqual(found, ["_GEMINI_PLANTED", "_Cohere_planted"])


class OneDoorForFindings(unittest.TestCase):
    def test_findings_are_appended_only_by_the_machine(self):
        places = []
        # one walk, keeping the functions and classes around each node: each call to
        # <x>.findings.append/extend names every function and class it stands in
        pending = [(tree(), ())]
        while pending:
            node, around = pending.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                around = around + (node.name,)
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("append", "extend")
                    and isinstance(node.func.value, ast.Attribute)
                    and node.func.value.attr == "findings"):
                places.extend(around)
            pending.extend((child, around) for child in ast.iter_child_nodes(node))
        self.assertTrue(places)
        self.assertEqual(set(places) - {"TurnMachine", "_find"}, set(), "findings appended outside TurnMachine._find")

    def test_the_findings_cap_holds_for_validation_findings(self):
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        limits = vts.Limits(max_findings=2)
        stream = [{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {"tool_calls": [
                       {"index": i, "id": f"call_{i}", "type": "function",
                        "function": {"name": "f", "arguments": '{"a": 1}'}} for i in range(12)]},
                       "finish_reason": None}]},
                  {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
        gate = vts.StreamGate("openai", {"f": schema}, limits)
        gate.feed_all(stream)
        machine = gate._machine
        report = gate.finish()
        self.assertEqual(len(machine.findings), 2 * 2)   # kept in full up to twice the limit, then counted
        self.assertEqual(machine.omitted, 12 - 4)
        self.assertEqual(report["findings"][-1]["code"], "limit_exceeded")


class OneDialect(unittest.TestCase):
    """Every message of every bundled fixture's report reads the same way: it starts in lower case
    (a JSON token such as NaN aside), quotes a token with double quotes, says a location once and
    ends without a full stop."""

    SINGLE_QUOTED = re.compile(r"(?<![A-Za-z\[])'[^'\s]+'(?![A-Za-z\]])")
    LOCATION_TWICE = re.compile(r"\(at ([^)]*)\)\.? \(at \1\)")

    def messages(self):
        for relpath in fixture_paths():
            for finding in fixture_report(relpath)["findings"]:
                yield os.path.basename(relpath), finding["message"]

    def test_every_message_is_in_one_dialect(self):
        seen = 0
        for name, message in self.messages():
            seen += 1
            with self.subTest(fixture=name, message=message[:100]):
                self.assertFalse(message[:1].isupper() and not message.startswith(("NaN", "Infinity")))
                self.assertIsNone(self.SINGLE_QUOTED.search(message))
                self.assertIsNone(self.LOCATION_TWICE.search(message))
                self.assertFalse(message.endswith("."))
        self.assertGreater(seen, 300)

    def test_the_dialect_check_sees_the_other_dialect(self):
        for old in ("schema of \"f\": A pattern must be a string (at #/a). (at #/a)", "Keyword 'if' is refused"):
            self.assertTrue(old[:1].isupper() or self.SINGLE_QUOTED.search(old) or self.LOCATION_TWICE.search(old))


class NoPrivateStandardLibrary(unittest.TestCase):
    def test_no_private_member_of_a_standard_module(self):
        modules = ("argparse", "json", "re", "sys", "os", "gc", "signal", "threading", "functools", "difflib",
                   "tempfile", "io", "struct", "zlib", "base64", "hashlib", "itertools", "math", "types", "typing",
                   "bisect", "secrets", "stat", "errno", "fnmatch", "tokenize", "unicodedata", "collections")
        pattern = re.compile(r"\b(?:%s)(?:\.[a-z]+)*\._[A-Za-z]" % "|".join(modules))
        self.assertEqual([m.group(0) for m in pattern.finditer(source())], [])
        self.assertFalse("_option_string_actions" in source(), "argparse's private option table is read")


@slow("asks git for the tracked files")
class PythonFloor(unittest.TestCase):
    """pyproject says Python 3.10: no pattern may use what re learned in 3.11 (possessive repeats and
    atomic groups, which 3.10 refuses when the pattern is compiled, at first use)."""

    NEWER = re.compile(r"[\])}][*+?]\+|\{[0-9]*,?[0-9]*\}\+|\(\?>")

    def test_no_pattern_uses_a_possessive_repeat_or_an_atomic_group(self):
        import io
        import tokenize

        with open(SCRIPT, encoding="utf-8") as handle:
            tokens = list(tokenize.generate_tokens(io.StringIO(handle.read()).readline))
        found = [(token.start[0], token.string[:60]) for token in tokens
                 if token.type == tokenize.STRING and self.NEWER.search(token.string)]
        self.assertEqual(found, [])

    def test_the_check_sees_them(self):
        for pattern in (r"(?:a|b)*+", r"[0-9]++", r"(?:x){8,}+", r"(?>ab)", r"a{2}+"):
            with self.subTest(pattern=pattern):
                self.assertIsNotNone(self.NEWER.search(repr(pattern)))


class TopLevel(unittest.TestCase):
    ALLOWED = {"scripts", "tests", "fixtures", "SKILL.md", "LICENSE", "README.md", "pyproject.toml",
               ".pre-commit-hooks.yaml", ".ci", ".gitignore"}

    def test_the_repository_top_holds_only_what_the_design_card_names(self):
        try:
            listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            self.skipTest("git is not available here")
        if listed.returncode != 0 or not listed.stdout:
            self.skipTest("not a git checkout")
        top = {path.split("/", 1)[0] for path in listed.stdout.splitlines()}
        self.assertEqual(top - self.ALLOWED, set())
        for folder in ("tests/adapters", "tests/bench", "tests/fuzz"):
            self.assertTrue(os.path.isfile(os.path.join(ROOT, folder, "README.md")), folder)


def _bound_in(function):
    """The names a function (or lambda) binds in its own scope: its parameters and whatever its body
    assigns, imports or defines, less what it declares global (nested scopes are not entered)."""
    args = function.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
    declared = set()
    todo = list(function.body) if isinstance(function.body, list) else [function.body]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            todo.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        todo.extend(ast.iter_child_nodes(node))
    return names - declared


def _module_names_read(statement):
    """Every name a top-level statement reads that no enclosing function binds: a module-level name,
    wherever in the statement (a function body, a default, an annotation, a class body)."""
    read = []

    def visit(node, local):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            outer = list(getattr(node, "decorator_list", [])) + args.defaults + [d for d in args.kw_defaults if d]
            outer += [a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
                      if a and a.annotation]
            outer += [node.returns] if getattr(node, "returns", None) else []
            for item in outer:
                visit(item, local)
            inner = local | _bound_in(node)
            for item in (node.body if isinstance(node.body, list) else [node.body]):
                visit(item, inner)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            targets = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            for child in ast.iter_child_nodes(node):
                visit(child, local | targets)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
            read.append(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, local)

    visit(statement, frozenset())
    return read


def forward_references(text, parsed=None):
    """{name: {(section that reads it, section that defines it)}} for every module-level name read in
    a top-level statement of a section above the one whose statement first defines it."""
    spans = sections(text)

    def section_of(line):
        inside = [index for index, (_, start, _) in enumerate(spans) if start <= line]
        return inside[-1] if inside else None

    tree = parsed or ast.parse(text)
    defined = {}
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [statement.name]
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        else:
            names = []
        for name in names:
            defined.setdefault(name, section_of(statement.lineno))
    found = {}
    for statement in tree.body:
        here = section_of(statement.lineno)
        for name in _module_names_read(statement):
            there = defined.get(name)
            if here is not None and there is not None and there > here:
                found.setdefault(name, set()).add((spans[here][0], spans[there][0]))
    return found


class ReadTopToBottom(unittest.TestCase):
    """A reader meets every module-level name in the section that defines it, or in one below: no
    section uses a name that only a later section defines (a room uses nothing from capture or serve,
    the envelope checks nothing from the gate)."""

    # name -> why it may be read above its section (each one is a debt, to be paid by moving it up)
    EXCEPTIONS: dict[str, str] = {}

    def test_no_section_reads_a_name_defined_below_it(self):
        found = forward_references(source(), tree())
        self.assertEqual({name: sorted(pairs) for name, pairs in found.items() if name not in self.EXCEPTIONS}, {})
        self.assertEqual(sorted(set(self.EXCEPTIONS) - set(found)), [], "an exception that no longer applies")

    def test_the_check_sees_a_name_from_below(self):
        planted = "\n".join([
            BANNER, "# First", BANNER, "",
            "def early(run):",
            "    def inner(x=LATER):",
            "        return helper(x) + run",
            "    return inner",
            "",
            "def shadowed():",
            "    helper = 1",
            "    return [helper for LATER in ()]",
            "",
            BANNER, "# Second", BANNER, "",
            "LATER = 1",
            "def helper(x):",
            "    return early(x)",
            "",
        ])
        self.assertEqual(forward_references(planted),
                         {"LATER": {("First", "Second")}, "helper": {("First", "Second")}})


if __name__ == "__main__":
    unittest.main()
