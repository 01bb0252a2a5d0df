"""The strict JSON parser used on joined arguments (SPEC section 3.1)."""

import unittest

from support import vts

LIMITS = vts.Limits()


def problem(text, limits=LIMITS):
    try:
        vts.parse_strict_json(text, limits)
    except vts.JsonProblem as exc:
        return exc.code
    return None


class Accepts(unittest.TestCase):
    def test_plain_documents(self):
        for text, value in (
            ('{"a":1}', {"a": 1}),
            (' \t\r\n{"a":[1,2.5,-0,1e2,true,false,null]} \n', {"a": [1, 2.5, 0, 100.0, True, False, None]}),
            ('"x"', "x"),
            ("[]", []),
            ('{"e":"\\u00e9\\ud83d\\ude00"}', {"e": "\u00e9\U0001F600"}),
            ('{"tiny":1e-400}', {"tiny": 0.0}),
        ):
            with self.subTest(text=text):
                self.assertEqual(vts.parse_strict_json(text, LIMITS), value)

    def test_same_key_in_sibling_objects_is_fine(self):
        self.assertEqual(vts.parse_strict_json('[{"a":1},{"a":2}]', LIMITS), [{"a": 1}, {"a": 2}])

    def test_depth_at_the_limit_is_fine(self):
        text = "[" * 64 + "]" * 64
        self.assertIsNotNone(vts.parse_strict_json(text, LIMITS))


class Rejects(unittest.TestCase):
    def test_codes(self):
        cases = {
            "": "malformed_json",
            "   ": "malformed_json",
            '{"a":': "malformed_json",
            "{'a':1}": "malformed_json",
            '{"a":1,}': "malformed_json",
            '{"a":01}': "malformed_json",
            '{"a":"\x01"}': "malformed_json",
            '{"a":1}{"a":2}': "trailing_data",
            '{"a":1} x': "trailing_data",
            '{"a":1}\u00a0': "trailing_data",
            '{"a":NaN}': "non_finite_number",
            '{"a":Infinity}': "non_finite_number",
            '{"a":-Infinity}': "non_finite_number",
            '{"a":1e400}': "non_finite_number",
            '{"a":-1.5e309}': "non_finite_number",
            '{"a":' + "9" * 400 + "}": "non_finite_number",
            '{"a":' + "1" + "0" * 307 + "}": "limit_exceeded",    # an integer beyond +/-(2^53 - 1)
            '{"a":' + "1" + "0" * 307 + ".0}": None,              # the same number as a double
            '{"a":9007199254740991}': None,
            '{"a":-9007199254740991}': None,
            '{"a":9007199254740992}': "limit_exceeded",
            '{"a":-9007199254740992}': "limit_exceeded",
            '{"a":[1,{"b":12345678901234567890}]}': "limit_exceeded",
            '{"a":9007199254740993.0}': None,
            '{"a":9.007199254740993e15}': None,
            '{"a":1,"a":2}': "duplicate_key",
            '{"o":{"b":1,"b":1}}': "duplicate_key",
            '{"a":1,"\\u0061":2}': "duplicate_key",
            '{"a":"\\ud800"}': "invalid_unicode",
            '{"a":"\\udc00\\ud800"}': "invalid_unicode",
            '{"\\ud83d":1}': "invalid_unicode",
            "[" * 65 + "]" * 65: "limit_exceeded",
            "[" * 5000 + "]" * 5000: "limit_exceeded",
            "[" * 100000: "limit_exceeded",
            '{"n":' + "9" * 1001 + "}": "limit_exceeded",
            '{"n":' + "9" * 5000 + "}": "limit_exceeded",
        }
        for text, code in cases.items():
            with self.subTest(text=text[:40]):
                self.assertEqual(problem(text), code)

    def test_number_limit_is_configurable(self):
        big = '{"n":' + "9" * 5000 + "}"
        roomy = vts.Limits(max_number_length=6000)
        self.assertEqual(problem(big, roomy), "limit_exceeded")  # CPython's own digit cap, still a finding
        long_fraction = '{"n":0.' + "1" * 1998 + "}"
        self.assertEqual(problem(long_fraction), "limit_exceeded")
        self.assertIsNone(problem(long_fraction, vts.Limits(max_number_length=3000)))

    def test_escaped_backslash_before_u_is_not_a_surrogate(self):
        self.assertEqual(vts.parse_strict_json('{"a":"\\\\ud800"}', LIMITS), {"a": "\\ud800"})


class JoinFragments(unittest.TestCase):
    def test_split_surrogate_pair_joins_into_one_character(self):
        self.assertEqual(vts.join_fragments(['{"e":"\ud83d', '\ude00"}']), ('{"e":"\U0001F600"}', True))

    def test_unpaired_surrogates_are_reported(self):
        for parts in (["\ud83d"], ["a\ude00"], ["\ud83d", "x\ude00"], ["\ude00\ud83d"]):
            with self.subTest(parts=parts):
                self.assertFalse(vts.join_fragments(parts)[1])

    def test_plain_join(self):
        self.assertEqual(vts.join_fragments(['{"a"', ":", "", "1}"]), ('{"a":1}', True))


if __name__ == "__main__":
    unittest.main()
