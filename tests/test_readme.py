"""README.md must stay true to the code: codes, options, schema subset, first commands."""

import os
import re
import shlex
import subprocess
import sys
import unittest

from support import ROOT, run_cli, vts

with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
    README = handle.read()


def section(title):
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.S | re.M)
    if match is None:
        raise AssertionError(f"README has no section {title!r}")
    return match.group(1)


def heading_anchors(text):
    """The anchors GitHub gives the headings of a Markdown text (code blocks left out)."""
    anchors, seen, fenced = set(), {}, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"#{1,6} (.+)$", line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


class ReadmeIsTrue(unittest.TestCase):
    def test_every_finding_code_is_in_the_code_table(self):
        table = section("Finding codes")
        for code in vts.FINDING_CODES:
            self.assertIn(f"| `{code}` |", table)

    def test_every_cli_option_is_documented(self):
        with open(os.path.join(ROOT, "scripts", "validate_tool_stream.py"), encoding="utf-8") as handle:
            options = set(re.findall(r"--[a-z][a-z-]+", handle.read()))
        options &= {"--" + name.replace("_", "-") for name in vts.Limits.__slots__} | {
            "--report", "--expect", "--version", "--help", "--quiet", "--exclude", "--allow-not-applicable",
            "--adapter-output", "--redact-arguments", "--allow-invalid", "--no-redact", "--schemas", "--request",
            "--adapter-cmd", "--shell", "--timeout", "--host", "--port", "--jsonl"}
        for option in options | {"--report", "--expect"}:
            self.assertIn(f"`{option}", README)
        limits = section("Limits")   # each limit's default and meaning live in that table, with its option
        for name in vts.Limits.__slots__:   # (or, for a limit only the library has, how Limits sets it)
            self.assertTrue(f"`--{name.replace('_', '-')} N`" in limits or f"`Limits({name}=N)`" in limits, name)

    def test_schema_subset_lists_exactly_the_implemented_keywords(self):
        subset = section("Schema subset")
        for keyword in set(vts._SCH_KEYWORDS_2020) | set(vts._SCH_KEYWORDS_07) | set(vts._SCH_ANNOTATIONS):
            self.assertIn(f"`{keyword}`", subset)

    def test_hosted_tools_and_client_items_list_exactly_the_reviewed_tables(self):
        text = section("Hosted tools and client-executed items")
        reviewed = (set(vts._ANTHROPIC_SERVER_TOOLS) | set(vts._ANTHROPIC_SERVER_TOOLS.values())
                    | vts._ANTHROPIC_HOSTED_USES | set(vts._ANTHROPIC_RESULTS) | vts._RESPONSES_HOSTED_ITEMS
                    | set(vts._RESPONSES_UNCHECKED_CALLS) | set(vts._RESPONSES_ARGUMENT_ITEMS)
                    | set(vts._BEDROCK_SYSTEM_TOOLS) | set(vts._BEDROCK_SYSTEM_TOOLS.values()) | {"pause_turn"}
                    | set(vts._INTER_HOSTED_CALLS) | set(vts._INTER_HOSTED_CALLS.values()) | set(vts._INTER_HOSTED_RESULTS))
        for name in reviewed:
            self.assertIn(f"`{name}`", text)
        listed = set(re.findall(r"`([a-z_]+_tool_result|[a-z_]+_call|nova_[a-z_]+)`", text))
        self.assertLessEqual(listed, reviewed | {"tool_search_call"}, "README lists a type the code does not review")

    def test_provider_defined_tools_and_groq_types_list_exactly_the_reviewed_tables(self):
        rooms = section("Provider rooms")   # the table sits in the anthropic room
        rows = re.findall(r"^  \| (`[a-z_0-9]+`(?:, `[a-z_0-9]+`)*) \| `([a-z_]+)` \|", rooms, re.M)
        listed = {kind: name for kinds, name in rows for kind in re.findall(r"`([a-z_0-9]+)`", kinds)}
        self.assertEqual(listed, {kind: name for kind, (name, _) in vts.ANTHROPIC_CLIENT_TOOLS.items()})
        self.assertIn(f"`{vts.UNREVIEWED_TOOL_KEYWORD}`", section("Schema subset"))
        hosted = section("Hosted tools and client-executed items")
        for kind, name in vts._GROQ_EXECUTED_TOOLS.items():
            self.assertIn(f"`type` `{kind}`", hosted)
            self.assertIn(f"counted as `{name}`", hosted)
        self.assertIn(str(vts.MAX_SAFE_INTEGER), section("Limits"))

    def test_gemini_parts_and_hosted_members_are_documented(self):
        hosted = section("Hosted tools and client-executed items")
        for name in set(vts._GEMINI_HOSTED_METADATA) | set(vts._GEMINI_HOSTED_METADATA.values()) | {
                "executableCode", "codeExecutionResult", "code_execution", "toolCall", "toolResponse"} \
                | vts._GEMINI_CODE_OUTCOMES | set(vts._GEMINI_SERVER_TOOLS) | set(vts._GEMINI_SERVER_TOOLS.values()):
            self.assertIn(f"`{name}`", hosted)
        details = section("Provider rooms")
        for name in vts._GEMINI_PART_DATA | vts._GEMINI_PART_META | vts._GEMINI_CHUNK_KEYS | set(vts._GEMINI_VALUE_KEYS):
            self.assertIn(f"`{name}`", details)
        for reason in vts._GEMINI_TOOL_FAILURES | {vts._GEMINI_CONTINUATION}:
            self.assertIn(f"`{reason}`", details)
        for table in (vts._GEMINI_CHUNK_TYPES, vts._GEMINI_CANDIDATE_TYPES, vts._GEMINI_USAGE_TYPES,
                      vts._GEMINI_RATING_TYPES):
            for member in table:
                self.assertIn(member, details)

    def test_every_profile_is_in_the_envelope_table_and_the_skill(self):
        envelope = section("The fixture envelope")
        with open(os.path.join(ROOT, "SKILL.md"), encoding="utf-8") as handle:
            skill = handle.read()
        for profile in vts.PROFILES:
            self.assertIn(f"`{profile}`", envelope)
            self.assertIn(f"`{profile}`", skill)

    def test_every_profile_has_its_room(self):
        rooms = re.findall(r"^### (.+)$", section("Provider rooms"), re.M)
        for profile in vts.PROFILES:
            self.assertTrue(any(profile in re.split(r"[^a-z-]+", room) for room in rooms), (profile, rooms))

    def test_every_linked_anchor_exists(self):
        anchors = heading_anchors(README)
        with open(os.path.join(ROOT, "SKILL.md"), encoding="utf-8") as handle:
            skill = handle.read()
        links = [("README.md", name) for name in re.findall(r"\]\(#([^)\s]+)\)", README)]
        links += [("SKILL.md", name) for name in re.findall(r"\]\(README\.md#([^)\s]+)\)", skill)]
        self.assertTrue(any(where == "SKILL.md" for where, _ in links), "SKILL.md links to no README section")
        for where, name in links:
            with self.subTest(where=where, anchor=name):
                self.assertIn(name, anchors)

    def test_request_section_lists_every_request_member(self):
        text = section("Request context")
        for member in vts.REQUEST_KEYS:
            self.assertIn(f"`{member}`", text)

    def test_the_library_names_readme_documents_are_the_public_ones(self):
        # README names the library's functions as vts.NAME, or as `NAME(...)` "in the library"
        documented = set(re.findall(r"\bvts\.([A-Za-z_]\w*)", README))
        documented |= set(re.findall(r"`([A-Za-z_]\w*)(?:\([^`]*\))?`\s+(?:does\s+the\s+same\s+)?in\s+the\s+library",
                                     README))
        self.assertGreaterEqual(len(documented), 7, sorted(documented))
        self.assertLessEqual(documented, set(vts.__all__))
        for name in vts.__all__:
            with self.subTest(name=name):
                self.assertTrue(hasattr(vts, name))
                self.assertFalse(name.startswith("_"))
        self.assertEqual(len(vts.__all__), len(set(vts.__all__)))

    def test_first_screen_has_the_two_commands_and_they_work(self):
        first_screen = "\n".join(README.splitlines()[:30])
        commands = re.findall(r"^(PYTHONDONTWRITEBYTECODE=1 python3 .*)$", first_screen, re.M)
        self.assertEqual(len(commands), 2, commands)
        self.assertIn("-m unittest discover -s tests -p 'test_*.py'", commands[1])
        argv = shlex.split(commands[0])[1:]
        self.assertEqual(argv[0], "python3")
        proc = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, timeout=60,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(proc.stdout.startswith(b"== fixtures/") and b"\nPASS" in proc.stdout, proc.stdout[:200])



class SkillIsTrue(unittest.TestCase):
    """issue 12: SKILL.md is a valid Agent Skill whose commands run as written."""

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "SKILL.md"), encoding="utf-8") as handle:
            cls.text = handle.read()

    def front_matter(self):
        match = re.match(r"---\n(.*?)\n---\n", self.text, re.S)
        self.assertIsNotNone(match, "SKILL.md must start with YAML front matter")
        fields, key = {}, None
        for line in match.group(1).splitlines():
            top = re.match(r"([a-z-]+):\s*(.*)$", line)
            if top:
                key, value = top.groups()
                fields[key] = "" if value in (">-", ">", "|") else value
            elif key is not None:
                fields[key] = (fields[key] + " " + line.strip()).strip()
        return fields

    def test_front_matter_follows_the_agent_skills_specification(self):
        fields = self.front_matter()
        self.assertEqual(set(fields) - {"name", "description", "license", "compatibility", "metadata",
                                        "allowed-tools"}, set())
        name = fields["name"]
        self.assertEqual(name, "validate-tool-stream")
        self.assertRegex(name, r"^[a-z0-9]+(-[a-z0-9]+)*$")
        self.assertLessEqual(len(name), 64)
        self.assertTrue(0 < len(fields["description"]) <= 1024)
        self.assertLessEqual(len(fields.get("compatibility", "")), 500)

    def test_every_command_runs_as_written_from_the_repository_root(self):
        commands = re.findall(r"`(PYTHONDONTWRITEBYTECODE=1 python3 scripts/validate_tool_stream\.py [^`]+)`", self.text)
        self.assertGreaterEqual(len(commands), 3)
        for command in commands:
            with self.subTest(command=command):
                argv = shlex.split(command)[1:]
                proc = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, timeout=300,
                                      env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
                self.assertIn(proc.returncode, (0, 1, 2), proc.stderr[-500:])
                self.assertNotIn(b"Traceback", proc.stderr)

    def test_every_option_and_code_it_names_exists(self):
        help_text = run_cli("--help")[1]     # in this process: the same text a process prints
        capture_help = "".join(run_cli(command, "--help")[1] for command in ("capture", "serve", "conform"))
        for option in set(re.findall(r"`[^`]*?(--[a-z][a-z-]+)", self.text)):
            with self.subTest(option=option):
                self.assertTrue(option in help_text or option in capture_help, option)
        table_codes = set(re.findall(r"^\| `([a-z_]+)`", self.text, re.M))
        self.assertTrue(table_codes <= set(vts.FINDING_CODES), table_codes - set(vts.FINDING_CODES))

if __name__ == "__main__":
    unittest.main()
