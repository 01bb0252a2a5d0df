"""issue 11 item 7: nothing from the stream but call identity and arguments reaches any output.

A secret-shaped string is planted in every string value and every member name of every
bundled fixture's stream, one position at a time; the JSON and text reports (and the
redacted ones) must not carry it unless the report's calls carry it as an id, a name or
arguments -- the only stream data the report is allowed to echo.

Positions are taken one per class, with a fixed seed: a class is the fixture's scenario (its
folder, profile, expected status and codes), key or value, and the path with list indices
wildcarded -- so every member name at every depth of every scenario's streams is planted; where
fixtures of one scenario, or list items (chunk 3, chunk 4, ...), share a shape, one is chosen.
Every fixture also gets an unknown top-level key and a planted profile.  (Planting at every
index of every list of every fixture was 45,000 runs.)
"""

import copy
import json
import random
import unittest

from support import copy_along, fixture_paths, load_fixture, one_per_shape, slow, vts

SECRETS = (
    "sk-proj-AbCdEf0123456789XyZ0123456789abcd",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "ghp_a1B2c3D4e5F6g7H8i9J0",
    "xK9mQ2vR7tL4wZ8p",            # 16 random characters, the size of a short token
)


def positions(value, path=()):
    """Every (path, kind) where a string can be planted: ('value', path) or ('key', path)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield "key", path + (key,)
            yield from positions(item, path + (key,))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from positions(item, path + (n,))
    elif isinstance(value, str):
        yield "value", path


def planted(doc, kind, path, secret):
    """A copy of doc with the secret planted (support.copy_along: the test checks that the
    validator leaves the original untouched)."""
    out, parent = copy_along(doc, path)
    last = path[-1]
    if kind == "value":
        parent[last] = secret
    else:
        parent[secret] = parent.pop(last)
    return out


# Members whose values are call identity or arguments (any profile): the report may echo them.
IDENTITY = frozenset({"id", "name", "call_id", "item_id", "toolUseId", "tool_use_id", "arguments", "partial_json",
                      "input", "delta", "tool_id", "namespace",   # a Responses call's namespace is identity
                      "toolCallId", "toolCallName"})               # AG-UI's


def identity_position(kind, path):
    """The planted value is an identity member, or inside an arguments/input container."""
    last = path[-1] if path else None
    return kind == "value" and (last in IDENTITY or any(key in ("input", "arguments") for key in path[:-1]))


def echoed_as_identity(report, secret):
    for call in report["calls"]:
        if secret in (call["id"], call["name"], call.get("namespace")):
            return True
        arguments = call["arguments"]
        if isinstance(arguments, str) and secret in arguments:
            return True
    return False


class PlantedSecrets(unittest.TestCase):
    @slow("thousands of validations")
    def test_no_output_echoes_stream_content(self):
        checked = 0
        rng = random.Random(11)
        docs, found = {}, []
        for relpath in fixture_paths():
            doc = load_fixture(relpath)[1]
            if not isinstance(doc, dict):
                continue
            stream_key = "events" if "events" in doc else "chunks"
            if not isinstance(doc.get(stream_key), list):
                continue
            docs[relpath] = doc
            expect = doc.get("expect") if isinstance(doc.get("expect"), dict) else {}
            scenario = (relpath.split("/")[0], json.dumps(doc.get("profile")), json.dumps(expect.get("status")),
                        json.dumps(sorted(map(str, expect.get("codes") or []))))
            found += [(scenario, relpath, kind, path) for kind, path in positions(doc[stream_key], (stream_key,))]
        # one position per (folder, profile, expected status and codes, key/value, path shape), fixed seed
        chosen = one_per_shape(found, rng, path=lambda place: place[3], kind=lambda place: place[0] + place[2:3])
        by_fixture = {}
        for _, relpath, kind, path in chosen:
            by_fixture.setdefault(relpath, []).append((kind, path))
        planted_in = {docs[relpath].get("profile") for _, relpath, _, _ in chosen}
        self.assertEqual([name for name in vts.PROFILES if name not in planted_in], [],
                         "rows of PROFILES with no bundled stream to plant secrets in")
        for relpath, doc in docs.items():
            places = by_fixture.get(relpath, [])
            places += [("key", ()), ("value", ("profile",))]           # an unknown top-level key, the profile
            for number, (kind, path) in enumerate(places):
                secret = SECRETS[number % len(SECRETS)]
                if kind == "key" and path == ():
                    bad = dict(doc, **{secret: 1})
                else:
                    bad = planted(doc, kind, path, secret)
                report = vts.validate_envelope(bad)
                checked += 1
                if identity_position(kind, path) or echoed_as_identity(report, secret):
                    continue              # the report may echo it: nothing to check (so nothing rendered)
                redacted = vts.redact_arguments(copy.deepcopy(report))
                outputs = (vts.render_json(report), vts.render_text(report),
                           vts.render_json(redacted), vts.render_text(redacted))
                for rendered in outputs:
                    with self.subTest(fixture=relpath, kind=kind, path=path):
                        self.assertNotIn(secret, rendered)
                        self.assertNotIn(json.dumps(secret)[1:-1], rendered)
            self.assertEqual(doc, load_fixture(relpath)[1], f"{relpath}: the validator changed its input")
        self.assertGreater(checked, 5000)


if __name__ == "__main__":
    unittest.main()
