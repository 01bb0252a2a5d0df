#!/usr/bin/env python3
"""validate_tool_stream: a fail-closed gate for streamed LLM tool calls.

Given a redacted capture of one assistant turn, this tool answers one question:
may the tool calls in it be handed to execution?  It never executes anything and
never touches the network.

Theory of operation (data flows one way, top to bottom of this file):

    load envelope -> normalize -> reassemble -> validate -> gate -> report

* The envelope loader parses the fixture strictly; a malformed envelope is a
  finding, never "no tool calls".
* A normalizer per wire format translates raw chunks/events into a handful of
  provider-neutral events (open, fragment, end of a slot; end of a choice or of
  the turn).  A normalizer only reports what it cannot translate; it never
  decides whether a slot is complete or consistent.
* One provider-neutral slot machine consumes those events.  Every rule about
  identity, ordering and terminal evidence lives there, in transition tables.
* Only after the stream is consumed are slots that reached their provider's
  terminal validated: strict JSON first, then the tool's schema subset.
* The gate is atomic: one finding anywhere blocks every call of the turn.

Profiles: openai and mistral (chat-completion chunks), anthropic (Messages
events; also Claude on Bedrock InvokeModelWithResponseStream), openai-responses
(Responses API events), bedrock (ConverseStream), gemini (streamGenerateContent
chunks, Gemini API and Vertex AI), cohere (v2 chat stream events), ollama
(native /api/chat lines).
Besides validation the file holds a raw-body import (`capture`) and an adapter
differential (`--adapter-output`); both sit after the gate and reuse it.

Sections, in data-flow order, each with its one door (what the sections after it call):

  Finding codes, records, limits ... FINDING_CODES, Finding, Limits
  Strict JSON primitives ........... decode_document(), join_fragments()
  Wire toolkit ..................... CaptureError; the SSE, JSON list, JSON Lines and AWS event-stream
                                     readers; wire_json(), sse_body(), ndjson_body(), eventstream_frame();
                                     _neutral()
  Envelope loading ................. parse_envelope_bytes()
  Request context .................. RequestContext, RequestError; the request translators a row defaults to;
                                     offered_schemas() (what each row's request_body builds on)
  Neutral events ................... the event records, TurnRules, Profile and its rule groups
  Provider: one sub-section each ... its Profile row: normalizer, TurnRules, request translators,
                                     redactor, protected paths, capture rules (openai and mistral,
                                     anthropic, openai-responses, bedrock, gemini, cohere, ollama)
  Profiles ......................... PROFILES: name -> row (nothing else branches on a name); what a body's
                                     payloads look like (_check_profile_shape) and each framing's checks
  Slot state machine ............... TurnMachine.feed() for events, TurnMachine.record() for
                                     every later finding (validation, the request check)
  Strict JSON for arguments ........ check_arguments()
  Schema subset .................... compile_schema(), validate_instance()
  Validation ....................... validate_slots(), check_hosted_names(), check_request()
  Gate and report .................. check_envelope(), request_context(); StreamGate (feed, feed_all,
                                     feed_bytes, finish; the stream list is read by feed_text(), a raw
                                     body by _BodyReader), gate_stream(), agate_stream(),
                                     validate_envelope(), validate_bytes(), check_expect()
  Output ........................... _out() and _err(); render_json/text/github/junit()
  Capture import ................... sse_to_envelope(), request_from_body(), schemas_from_doc()
  Adapter differential ............. compare_calls()
  Command-line toolkit ............. UsageError, _new_parser(), _strict_parse(), _read_input(), _walk_json()
  Serve ............................ serve_plan(), make_server(); each room's http rules
  Conform .......................... conform_fixture(), request_differences(), conform_summary()
  Command line ..................... main()

Standard library only; Python 3.10+.
"""

from __future__ import annotations

import sys

if sys.version_info < (3, 10):   # before any newer code runs: exit 3 ("could not run"), never 1 ("blocked")
    _NEEDS = f"validate_tool_stream: needs Python 3.10 or newer, this is {sys.version_info[0]}.{sys.version_info[1]}"
    if __name__ == "__main__":
        sys.stderr.write(_NEEDS + "; no verdict\n")
        raise SystemExit(3)
    raise ImportError(_NEEDS)

import bisect
import functools
import json
import math
import re
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Union

VERSION = "0.1.0"
TOOL = "validate_tool_stream"

# ---------------------------------------------------------------------------
# Finding codes (stable: renaming one is a breaking change)
# ---------------------------------------------------------------------------

INVALID_FIXTURE = "invalid_fixture"
UNKNOWN_PROFILE = "unknown_profile"
UNSUPPORTED_EVENT = "unsupported_event"
UNEXPECTED_EVENT = "unexpected_event"
STREAM_ERROR = "stream_error"
MISSING_INDEX = "missing_index"
MISSING_SLOT = "missing_slot"
IDENTITY_COLLISION = "identity_collision"
MISSING_ID = "missing_id"
MISSING_NAME = "missing_name"
DELTA_AFTER_TERMINAL = "delta_after_terminal"
DUPLICATE_TERMINAL = "duplicate_terminal"
MISSING_TERMINAL = "missing_terminal"
WRONG_TERMINAL_REASON = "wrong_terminal_reason"
AMBIGUOUS_CHOICE = "ambiguous_choice"
MALFORMED_JSON = "malformed_json"
TRAILING_DATA = "trailing_data"
NON_FINITE_NUMBER = "non_finite_number"
DUPLICATE_KEY = "duplicate_key"
INVALID_UNICODE = "invalid_unicode"
LIMIT_EXCEEDED = "limit_exceeded"
NON_OBJECT_ARGUMENTS = "non_object_arguments"
UNKNOWN_TOOL = "unknown_tool"
UNSUPPORTED_SCHEMA = "unsupported_schema"
SCHEMA_VIOLATION = "schema_violation"
REQUEST_VIOLATION = "request_violation"
ADAPTER_MISMATCH = "adapter_mismatch"  # only with --adapter-output (differential testing)

FINDING_CODES: dict[str, str] = {
    INVALID_FIXTURE: "the envelope is not a valid fixture",
    UNKNOWN_PROFILE: "the profile is not one this tool knows",
    UNSUPPORTED_EVENT: "a chunk or event this tool cannot translate",
    UNEXPECTED_EVENT: "a known event in a place the protocol does not allow",
    STREAM_ERROR: "the provider reported an error inside the stream",
    MISSING_INDEX: "a tool-call fragment without a usable slot index",
    MISSING_SLOT: "a slot index gap, or a tool signal with no slot",
    IDENTITY_COLLISION: "a slot's id or name changed, or two slots share an id",
    MISSING_ID: "a slot reached its terminal without an id",
    MISSING_NAME: "a slot reached its terminal without a name",
    DELTA_AFTER_TERMINAL: "a fragment or event after its terminal signal",
    DUPLICATE_TERMINAL: "a terminal signal sent twice",
    MISSING_TERMINAL: "the stream ended before a required terminal signal",
    WRONG_TERMINAL_REASON: "the turn ended for a reason other than tool use",
    AMBIGUOUS_CHOICE: "tool calls in more than one choice",
    MALFORMED_JSON: "the arguments are not JSON",
    TRAILING_DATA: "something follows the first JSON document",
    NON_FINITE_NUMBER: "NaN, Infinity, or a number that overflows a double",
    DUPLICATE_KEY: "an object repeats a key",
    INVALID_UNICODE: "an unpaired UTF-16 surrogate",
    LIMIT_EXCEEDED: "a documented size, depth or count limit was exceeded",
    NON_OBJECT_ARGUMENTS: "the arguments are JSON but not an object",
    UNKNOWN_TOOL: "the call names a tool absent from tool_schemas",
    UNSUPPORTED_SCHEMA: "the tool's schema is outside the supported subset",
    SCHEMA_VIOLATION: "the arguments do not satisfy the tool's schema",
    REQUEST_VIOLATION: "a call the request's tool controls did not allow",
    ADAPTER_MISMATCH: "the application's adapter reassembled different calls",
}

ENVELOPE_KEYS = frozenset({"profile", "tool_schemas", "chunks", "events", "meta", "expect", "request", "serve"})

# What the application executes for a call: a JSON function call (arguments are a JSON
# object), a custom tool call (free-form text input), or an item kind of its own
# (computer_call, local_shell_call...) that this tool reports but has no check for.
FUNCTION, CUSTOM = "function", "custom"

EXIT_PASS, EXIT_BLOCKED, EXIT_NOT_APPLICABLE, EXIT_CANNOT_RUN = 0, 1, 2, 3
EXIT_BY_STATUS = {"pass": EXIT_PASS, "blocked": EXIT_BLOCKED, "not_applicable": EXIT_NOT_APPLICABLE}


class _Record:
    """Equality and repr from __slots__ for the small value classes of this file.

    Written out rather than taken from dataclasses: importing and applying that
    module cost more than a whole small validation, and start-up time counts
    when a CI step runs this once per fixture.
    """

    __slots__ = ()
    __hash__ = None  # mutable records are not hashable, as with a plain dataclass

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({values})"


class _FrozenRecord(_Record):
    """A read-only _Record: set once through _freeze(), hashable by value."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in self.__slots__))


def _freeze(record: _FrozenRecord, values: dict[str, Any]) -> None:
    """Fill a frozen record's slots from its __init__ arguments (locals())."""
    for name in record.__slots__:
        object.__setattr__(record, name, values[name])


MAX_SCHEMA_SECONDS = 1_000_000  # the interval timer refuses much larger budgets


class Limits(_FrozenRecord):
    """Bounds that turn pathological input into limit_exceeded, never a crash.

    Every count is a positive integer.  max_schema_seconds is off (None) by default:
    schema work is bounded by counted steps only, so a verdict never depends on the
    machine or its load; given, it is a number of seconds in (0, MAX_SCHEMA_SECONDS],
    an opt-in wall-clock backstop.  Anything else is a ValueError at construction.
    """

    __slots__ = ("max_input_bytes", "max_argument_bytes", "max_depth", "max_number_length", "max_calls",
                 "max_schema_depth", "max_evaluations", "max_turn_evaluations", "max_pattern_subject",
                 "max_findings", "max_schema_seconds", "max_frame_bytes")

    def __init__(self, max_input_bytes: int = 256 * 1024 * 1024, max_argument_bytes: int = 32 * 1024 * 1024,
                 max_depth: int = 64, max_number_length: int = 1000, max_calls: int = 256,
                 max_schema_depth: int = 64, max_evaluations: int = 1_000_000, max_pattern_subject: int = 1_000,
                 max_findings: int = 1000, max_schema_seconds: float | None = None,
                 max_turn_evaluations: int = 4_000_000, max_frame_bytes: int = 64 * 1024 * 1024) -> None:
        values = dict(locals())
        for name in self.__slots__:
            value = values[name]
            if name == "max_schema_seconds":
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                if value is not None and (not number or not 0 < value <= MAX_SCHEMA_SECONDS):  # nan fails too
                    raise ValueError(f"Limits: max_schema_seconds must be None (off) or a number in "
                                     f"(0, {MAX_SCHEMA_SECONDS}], got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"Limits: {name} must be a positive integer, got {value!r}")
        _freeze(self, values)


class Finding(_Record):
    """One reason to block, tied to the stream position and slot where it arose."""

    __slots__ = ("code", "message", "position", "choice", "index", "pointer")

    def __init__(self, code: str, message: str, position: int | None = None, choice: int | None = None,
                 index: int | None = None, pointer: str | None = None) -> None:
        self.code = code
        self.message = message
        self.position = position
        self.choice = choice
        self.index = index
        self.pointer = pointer

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "choice": self.choice,
            "index": self.index,
            "position": self.position,
            "message": self.message,
        }
        if self.pointer is not None:
            out["pointer"] = self.pointer
        return out


_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


# A protocol word: "tool_use", "contentBlockDelta", "MAX_TOKENS", "web_search_20250305",
# "response.output_item.added".  Each piece between _ . - is digits, capitals, or a
# (camel-case) word; a piece that mixes letters and digits, a long capital run or many
# case changes looks like a key id or token (sk-..., AKIA..., eyJ...) and is never quoted.
_WORD_PIECE = re.compile(r"[0-9]{1,8}|[A-Z]{1,12}|[A-Z]?[a-z]+(?:[A-Z][a-z]+){0,3}")
_WORD_SPLIT = re.compile(r"[_.-]")
_WORD_MAX = 40


def _protocol_word(value: Any) -> str | None:
    """value when it is safe to quote in a message (see _WORD_PIECE), else None."""
    if (isinstance(value, str) and 0 < len(value) <= _WORD_MAX and _TOKEN_CHARS.issuperset(value)
            and all(not piece or _WORD_PIECE.fullmatch(piece) for piece in _WORD_SPLIT.split(value))):
        return value
    return None


# --- a value in a message ----------------------------------------------------------
#
# One dialect for every message: it starts in lower case, quotes a token, a name or a schema
# value with double quotes (JSON's), says where once ("(at #/pointer)"), and has no full stop.
# A value reaches a message only through one of these, each bounded:
#   _token      a wire value that is not call identity: quoted only when it is a protocol word
#               (never stream content or a secret), else described by its kind (_describe)
#   _quoted     a tool or call name: quoted, at most _QUOTED_MAX characters
#   _sch_brief  a value of the caller's own schema or of the arguments it checks: quoted, clipped
#   _describe   the kind of a value, no content
# (the adapter differential quotes both sides' arguments clipped, see _shown; --redact-arguments
# replaces those messages).  The output door (_out, _err) then escapes control characters.

def _token(value: Any) -> str:
    """Quote a wire value that is not call identity or arguments; the one place that does.

    The report and every message must not carry stream content or secrets,
    so only a protocol word is quoted; anything else is described by its kind.
    """
    if _protocol_word(value) is not None:
        return json.dumps(value)
    if isinstance(value, str):
        return "an unrecognised string" if value else "an empty string"
    return _describe(value)


def _describe(value: Any) -> str:
    """Short, content-free description of a wire value for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) >= 10 ** 24:
        return "a number of more than 24 digits"   # repr() of a huge int may even raise
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 24 else text[:21] + "..."
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


_QUOTED_MAX = 120   # characters of a name a message quotes


def _quoted(name: str) -> str:
    """A tool or call name as a message quotes it: JSON-quoted, at most _QUOTED_MAX characters
    (the report's calls hold the whole name; a message repeated per call must stay small)."""
    if len(name) <= _QUOTED_MAX:
        return json.dumps(name)
    return json.dumps(name[:_QUOTED_MAX])[:-1] + f'..." ({len(name)} characters)'


_SCH_BRIEF_LIMIT = 60          # characters of a value quoted in a message


def _sch_brief(value: object) -> str:
    """A short rendering for messages; never dumps a large argument."""
    if isinstance(value, str):
        text = value if len(value) <= _SCH_BRIEF_LIMIT else value[:_SCH_BRIEF_LIMIT] + "..."
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return f"an array of {len(value)} items"
    if isinstance(value, dict):
        return f"an object with {len(value)} members"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= _SCH_BRIEF_LIMIT else text[:_SCH_BRIEF_LIMIT] + "..."


def _is_json(value: Any) -> bool:
    """Whether value serialises as strict JSON (what the report must be)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _wire_str(value: Any) -> str | None:
    """A wire value used as a table key: strings only (a list or object is unhashable)."""
    return value if isinstance(value, str) else None


def _is_index(value: Any) -> bool:
    """A slot or choice index is a non-negative JSON integer; true is not 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# ---------------------------------------------------------------------------
# Strict JSON primitives, shared by the envelope, SSE import and arguments
# ---------------------------------------------------------------------------


class JsonProblem(Exception):
    """Text that fails strict JSON; carries the finding code (and a line when known)."""

    def __init__(self, code: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.line = line


_JSON_WS_CHARS = (" ", "\t", "\n", "\r")
_WS_RUN = re.compile(r"[ \t\n\r]*")  # RFC 8259 whitespace only, not Python's wider str.isspace set


def _skip_ws(text: str, pos: int) -> int:
    """The position after the run of JSON whitespace at pos."""
    return _WS_RUN.match(text, pos).end()


def _strict_pairs(pairs: list[tuple[str, Any]], dict: type = dict, len: Callable = len) -> dict[str, Any]:
    obj = dict(pairs)  # builtins bound as defaults: this runs once per parsed object
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonProblem(DUPLICATE_KEY, f"key {_token(key)} appears twice in one object")
            seen.add(key)
    return obj


def _strict_constant(name: str) -> Any:
    raise JsonProblem(NON_FINITE_NUMBER, f"{name} is not a JSON number")


def _finite_float(token: str) -> float:
    value = float(token)
    if value in (float("inf"), float("-inf")):
        raise JsonProblem(NON_FINITE_NUMBER, f"number {token[:24]} overflows a double")
    return value


def _strict_decoder(parse_float: Callable[[str], Any] = _finite_float,
                    parse_int: Callable[[str], Any] = int) -> json.JSONDecoder:
    """Python's decoder with the hooks that refuse what RFC 8259 or this tool does not allow."""
    return json.JSONDecoder(object_pairs_hook=_strict_pairs, parse_float=parse_float, parse_int=parse_int,
                            parse_constant=_strict_constant)


_DEFAULT_DECODER = _strict_decoder()   # stateless: one serves every document parsed with the default hooks


def decode_document(text: str, parse_float: Callable[[str], Any] = _finite_float,
                    parse_int: Callable[[str], Any] = int, what: str = "the text") -> Any:
    """Exactly one strict RFC 8259 document, or JsonProblem.

    Python's json accepts NaN and Infinity, turns 1e400 into inf, keeps the
    last duplicate key and lets raw_decode stop before trailing data; the
    hooks and checks here refuse each.  Lone surrogate escapes pass: callers
    decide (fixture strings may hold half a pair, arguments may not).
    """
    start = _skip_ws(text, 0)
    if start == len(text):
        raise JsonProblem(MALFORMED_JSON, f"{what}: empty" if not text else f"{what}: only whitespace")
    default = parse_float is _finite_float and parse_int is int
    decoder = _DEFAULT_DECODER if default else _strict_decoder(parse_float, parse_int)
    try:
        value, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise _decode_problem(exc, exc.lineno, exc.colno) from None
    except RecursionError:
        raise JsonProblem(LIMIT_EXCEEDED, f"{what}: nesting too deep to parse") from None
    except ValueError as exc:  # integers beyond CPython's digit limit
        raise JsonProblem(LIMIT_EXCEEDED, f"a number cannot be read: {str(exc)[:80]}") from None
    if _skip_ws(text, end) != len(text):
        raise JsonProblem(TRAILING_DATA, f"data after the JSON document at character {end}",
                          text.count("\n", 0, end) + 1)
    return value


def _decode_problem(exc: json.JSONDecodeError, line: int, column: int) -> JsonProblem:
    """The JsonProblem of Python's decoding error at line and column (of the document; a reader of a
    document in pieces gives them)."""
    reason = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg   # "...string starting at" + " at line"
    reason = (reason[:1].lower() + reason[1:]).replace("'", '"')      # Python's wording in our dialect
    return JsonProblem(MALFORMED_JSON, f"{reason} at line {line} column {column}", line)


def _has_surrogate(text: str) -> bool:
    """True when text holds a lone UTF-16 surrogate code point."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# JavaScript's Number.MAX_SAFE_INTEGER.  Readers that hold every JSON number as a double (the
# Vercel AI SDK, js-genai) cannot tell an integer beyond it from its neighbours and may run
# another number than the Python SDKs, which keep it exact: an argument integer beyond it is
# limit_exceeded on every profile.  Only integer tokens count: a fraction or an exponent is a
# double in every reader alike.
MAX_SAFE_INTEGER = 2 ** 53 - 1
UNSAFE_INTEGER_MESSAGE = ("an integer beyond +/-(2^53 - 1), JavaScript's safe range: readers that hold numbers as "
                          "doubles (the Vercel AI SDK) may run another number")


def _unsafe_integer(value: Any) -> bool:
    """An int (not a bool) outside +/-MAX_SAFE_INTEGER."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER


def join_fragments(parts: list[str]) -> tuple[str, bool]:
    """Join argument fragments as UTF-16 code units.

    A high surrogate ending one fragment and a low surrogate starting the next
    form one character.  Returns (text, ok); ok is False when a surrogate stays
    unpaired, and text is then the plain concatenation.
    """
    text = "".join(parts)
    if not _has_surrogate(text):
        return text, True
    try:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le"), True
    except UnicodeDecodeError:
        return text, False


# ---------------------------------------------------------------------------
# Wire toolkit: framing readers and writers, shared by the rooms, capture and serve
# ---------------------------------------------------------------------------

# Rules of this section:
#   * It knows framings (SSE, a JSON list, JSON Lines, the AWS event stream) and never a
#     provider: no profile name, no member of one provider's payloads.  A room reads and writes
#     its own body with these; a framing rule only one provider has stays in that room.
#   * A reader never drops or repairs: what it cannot read faithfully is a CaptureError, with
#     its line (or frame) where one is known.
#   * A writer frames payloads as a provider sends them: compact ASCII JSON (wire_json).
#   * Redaction here keeps the shape and drops the text (_neutral); masking credentials is capture's.
#   * SSE framing follows the WHATWG event-stream parser (lines end in CRLF, LF
#     or CR; a blank line dispatches; one space after the colon is removed;
#     data lines join with LF), with fail-closed changes, because a dropped
#     event could hide a tool fragment and the envelope must be the stream
#     every reader sees:
#       - a leading BOM is an error (WHATWG skips it; openai-python's and the
#         Anthropic SDK's decoders lose the first event behind it);
#       - an event still pending at end of input (no blank line after it) is an
#         error, where WHATWG and the SDKs silently discard it;
#       - an unknown field name, or an `event:` with no `data:`, is an error,
#         where WHATWG would ignore it;
#       - every data payload is one strict JSON object, `data: [DONE]` ends the
#         stream and only blank lines may follow it.


@functools.lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern:
    """re.compile, once per pattern of this section."""
    return re.compile(pattern)


class CaptureError(Exception):
    """Input that cannot become a faithful envelope; `line` is its 1-based line when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line


_SSE_LINE_END = r"\r\n|\r|\n"  # not str.splitlines: U+2028, \v, \f are not SSE line ends
_SSE_DONE = "[DONE]"
_SSE_IGNORED_FIELDS = frozenset({"id", "retry"})


class _SseEvent(_FrozenRecord):
    """One dispatched SSE event: its name (None when absent) and joined data.

    line: the event's first line; data_lines: the line of each data field, to
    place JSON errors.
    """

    __slots__ = ("line", "data_lines", "name", "data")

    def __init__(self, line: int, data_lines: tuple[int, ...], name: str | None, data: str) -> None:
        put = object.__setattr__   # _freeze, unrolled: one of these per event
        put(self, "line", line)
        put(self, "data_lines", data_lines)
        put(self, "name", name)
        put(self, "data", data)


# The plainest event of an LF body, read in one step: an optional `event:` line, one `data:` line, a
# blank line (a value keeps what follows its one optional space, as the line reader does).
_SSE_PLAIN_EVENT = r"(?:event: ?([^\n]*)\n)?data: ?([^\n]*)\n\n"


def _sse_decode(raw: bytes) -> str:
    """UTF-8 text; a leading byte order mark is refused.

    WHATWG parsers (and the Vercel AI SDK) skip one leading BOM, but the
    decoders of openai-python and the Anthropic SDK keep it, so the first field
    name no longer reads "data" or "event" and the first event is lost: the
    SDKs would read different streams from the same bytes.
    """
    if not isinstance(raw, (bytes, bytearray)):
        raise CaptureError(f"the SSE body must be bytes, got {type(raw).__name__}")
    text = _utf8_text(bytes(raw))
    _no_bom(text)
    return text


def _utf8_text(raw: bytes, first_byte: int = 0, first_line: int = 0) -> str:
    """raw as UTF-8 text, or CaptureError naming the first byte that is not (and its line); a piece of a
    body (StreamGate.feed_bytes: whole characters, not ending in CR) counts after the bytes and lines before it."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + len(_compiled(_SSE_LINE_END).split(raw[:exc.start].decode("utf-8")))
        raise CaptureError(f"the body is not UTF-8 (byte {first_byte + exc.start})", line) from None


def _no_bom(text: str) -> None:
    """The body's text must not start with a byte order mark (see _sse_decode)."""
    if text.startswith("\ufeff"):
        raise CaptureError("the body starts with a byte order mark: openai-python and the Anthropic SDK lose the "
                           "first event behind it while WHATWG parsers skip it; remove it only if your SDK does", 1)


class _SseState:
    """What reading an SSE body found besides its events: comment lines and the [DONE] sentinel."""

    __slots__ = ("comments", "done")

    def __init__(self) -> None:
        self.comments = 0
        self.done = False


def _sse_lines(text: str, state: _SseState | None = None,
               fast_run: Callable[[str, int, int], tuple[int, int]] | None = None,
               first_line: int = 0) -> Iterator[tuple[int, Any]]:
    """(number, line) of every line, read as they come (a final unterminated line still counts); the
    lines are numbered after first_line (a body read in pieces: the lines of those before).

    With state, in a body without CR: a plain event (_SSE_PLAIN_EVENT) that starts where no event
    is pending (after a blank line, or only comment lines since) comes whole, as (its first line's
    number, the _SseEvent the line reader would dispatch); data: [DONE] never does.  There, first,
    fast_run(text, pos, number) may write events itself and say where it stopped.
    """
    pos, number = 0, first_line
    size = len(text)
    find = text.find
    if "\r" not in text:   # the common body: LF only, found without a regex
        plain = _compiled(_SSE_PLAIN_EVENT).match if state is not None else None
        between = True
        while pos < size:
            if between and plain is not None and not state.done:
                if fast_run is not None:
                    pos, number = fast_run(text, pos, number)
                    if pos >= size:
                        break
                match = plain(text, pos)
                if match is not None and match.group(2) != _SSE_DONE:
                    named = match.start(1) >= 0
                    yield number + 1, _SseEvent(number + 1, (number + 1 + named,), match.group(1) or None,
                                                match.group(2))
                    number += 2 + named
                    pos = match.end()
                    continue
            end = find("\n", pos)
            if end < 0:
                end = size
            number += 1
            line = text[pos:end]
            yield number, line
            pos = end + 1
            if line == "":
                between = True
            elif line[:1] != ":":
                between = False
        return
    for match in _compiled(_SSE_LINE_END).finditer(text):
        number += 1
        yield number, text[pos:match.start()]
        pos = match.end()
    if pos < len(text):
        yield number + 1, text[pos:]


def _sse_events(text: str, state: _SseState,
                fast_run: Callable[[str, int, int], tuple[int, int]] | None = None,
                first_line: int = 0) -> Iterator[_SseEvent]:
    """The events of an SSE body, in order, as they are read; state collects the rest.  A body read in
    pieces (StreamGate.feed_bytes) comes a piece at a time, each ending where no event is pending, with
    the lines before it (first_line) and the same state.

    The [DONE] sentinel is not an event.  A framing error is raised where it is read.  The line
    loop stays here (a call per line would cost every body); each step that ends an event, or the
    stream, is its own function.
    """
    start: int | None = None
    name: str | None = None
    data: list[str] = []
    data_lines: list[int] = []
    for number, line in _sse_lines(text, state, fast_run, first_line):
        if line.__class__ is _SseEvent:   # a plain event, read whole
            yield line
            continue
        if state.done:
            _sse_after_done(line, number)
            continue
        if line == "":
            if len(data) == 1 and data[0] != _SSE_DONE:   # the common event: one data line
                yield _SseEvent(start or 0, tuple(data_lines), name or None, data[0])
            else:
                yield from _sse_dispatch(start, name, data, data_lines, state)
            start, name = None, None
            data = []
            data_lines = []
            continue
        if line[:1] == ":":
            state.comments += 1
            continue
        field_name, _, value = line.partition(":")
        if value[:1] == " ":   # (no colon: value is empty)
            value = value[1:]
        if start is None:
            start = number
        if field_name == "data":
            data.append(value)
            data_lines.append(number)
        elif field_name == "event":
            name = value
        elif field_name not in _SSE_IGNORED_FIELDS:
            _sse_unknown_field(field_name, number)
    _sse_end(start, data, state)


def _sse_after_done(line: str, number: int) -> None:
    """A line after the data: [DONE] sentinel: only a blank one may come."""
    if line.strip(" \t"):
        raise CaptureError("content after the data: [DONE] sentinel", number)


def _sse_dispatch(start: int | None, name: str | None, data: list[str], data_lines: list[int],
                  state: _SseState) -> tuple[_SseEvent, ...]:
    """What a blank line dispatches (_sse_events writes the common event, one data line, itself): the
    event its lines gave, or none (no data line: nothing pending, or the [DONE] sentinel, which state
    notes); an event: line without data is an error."""
    if data:
        joined = data[0] if len(data) == 1 else "\n".join(data)
        if joined != _SSE_DONE:
            return (_SseEvent(start or 0, tuple(data_lines), name or None, joined),)
        state.done = True
    elif name:
        raise CaptureError(f"event {_token(name)} has no data line", start)
    return ()


def _sse_unknown_field(field_name: str, number: int) -> None:
    """A line that is no SSE field nor a comment (a header or a log line pasted with the body)."""
    shown = _token(field_name) if _protocol_word(field_name) else "a line"
    raise CaptureError(f"{shown} is not an SSE field (data, event, id, retry) nor a comment; "
                       "capture the response body only", number)


def _sse_end(start: int | None, data: list[str], state: _SseState) -> None:
    """The end of the body: an event still pending is an error, unless it is the sentinel."""
    if start is not None:
        if data == [_SSE_DONE]:
            state.done = True  # a final sentinel without its blank line ends the stream all the same
        else:
            raise CaptureError("the body ends inside an event (no blank line after it): WHATWG parsers and the "
                               "SDKs discard such an event; capture the whole body", start)


def _sse_payload(event: _SseEvent, _: Any = None) -> dict:
    """The event's data as one strict JSON object (lone surrogate escapes allowed, as in fixtures);
    (a stage of _staged: its second argument, the event again, is not needed)."""
    data = event.data
    try:
        value = None
        if data[:1] == "{" and data[-1:] == "}":   # decode_document's work when no whitespace is around it
            try:
                value, end = _DEFAULT_DECODER.raw_decode(data, 0)
            except (ValueError, RecursionError, JsonProblem):
                value, end = None, -1
            if end != len(data):
                value = None
        if value is None:
            value = decode_document(data, what="event data")
    except JsonProblem as problem:
        line = event.data_lines[min(problem.line or 1, len(event.data_lines)) - 1]
        raise CaptureError(f"event data is not strict JSON: {problem.message}", line) from None
    if not isinstance(value, dict):
        raise CaptureError(f"event data must be a JSON object, got {_describe(value)}", event.data_lines[0])
    if event.name is not None and "type" in value and value["type"] != event.name:
        raise CaptureError(f"event: {_token(event.name)} does not match the data's type "
                           f"{_describe(value['type'])}", event.line)
    return value


def _json_list_payloads(text: str) -> tuple[list, list[int], str]:
    """The payloads of a body that is one JSON list."""
    try:
        value = decode_document(text, what="the body")
    except JsonProblem as problem:
        raise CaptureError(f"the body starts like a JSON list but is not strict JSON: {problem.message}",
                           problem.line) from None
    if not isinstance(value, list):
        raise CaptureError("the body must be a JSON list of payloads")
    return value, [1] * len(value), "JSON list"


def _json_lines_iter(text: str, first: tuple[Any, int, int] | None = None,
                     first_line: int = 0) -> Iterator[tuple[Any, int]]:
    """(payload, line number) of every non-blank line of a JSON Lines body, as they are read (first_line:
    the lines before text, when the body comes in pieces of whole lines).

    first: (value, start, end) of the value the body starts with, read already (_first_json_value):
    when the first non-blank line is that value alone, spaces and tabs aside, it is not parsed again,
    unless it is bracketed deeply enough that a parse here might run out of stack where that one did not.
    """
    for number, line in _sse_lines(text, first_line=first_line):   # not U+2028 & co: JSON text
        if not line.strip(" \t"):
            continue
        if first is not None and _is_first_value(line, first):
            value, first = first[0], None
            yield value, number
            continue
        first = None
        try:
            value = decode_document(line, what=f"line {number}")
        except JsonProblem as problem:
            hint = (" (a whole JSON document? give the payloads as a list, or one per line)"
                    if number == 1 else "")
            raise CaptureError(f"JSON Lines: line {number} is not one strict JSON value: {problem.message}{hint}",
                               number) from None
        yield value, number


# Brackets a line may hold for the value read with the whole body to stand for the line's own parse:
# far below the stack limit (an eighth of it at most), so both parses reach the same end although
# they run at different depths (a deeper line is parsed again, where the line reader parses).
_SHALLOW_LINE_BRACKETS = 64


def _is_first_value(line: str, first: tuple[Any, int, int]) -> bool:
    """Whether the body's first non-blank line is its first value alone (first: that value, where it
    starts and ends in the body; the line starts where the value does), and shallow."""
    return (len(line.strip(" \t")) == first[2] - first[1]
            and line.count("[") + line.count("{") <= min(_SHALLOW_LINE_BRACKETS, sys.getrecursionlimit() // 8))


def _first_json_value(text: str) -> tuple[Any, int, int] | None:
    """(value, start, end) of the strict JSON value a text starts with (after whitespace), read as
    decode_document reads a document but with anything allowed after it; None where decode_document
    would find no value there (an error, nesting too deep, only whitespace)."""
    start = _skip_ws(text, 0)
    try:
        value, end = _DEFAULT_DECODER.raw_decode(text, start)
    except (ValueError, RecursionError, JsonProblem):   # a JSONDecodeError is a ValueError
        return None
    return value, start, end


def _a2b_base64_strict_310(data: Any) -> bytes:
    """a2b_base64 in strict mode where Python has none (3.10): only base64 characters in whole quads, padding
    only to end the last one, else binascii.Error."""
    import binascii

    if isinstance(data, str):
        data = data.encode("ascii")   # a2b_base64 takes ASCII text too (other text: a ValueError)
    if _BASE64_TEXT.fullmatch(data) is None:
        raise binascii.Error("Non-base64 digit found")
    return binascii.a2b_base64(data)


_BASE64_TEXT = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")   # whole quads

# binascii.a2b_base64(data, strict_mode=True) from Python 3.11 on; the same check in Python for 3.10.
if sys.version_info >= (3, 11):
    import binascii as _binascii

    _a2b_base64_strict: Callable[[Any], bytes] = functools.partial(_binascii.a2b_base64, strict_mode=True)
else:   # pragma: no cover - Python 3.10
    _a2b_base64_strict = _a2b_base64_strict_310


# --- the AWS event stream (application/vnd.amazon.eventstream) ----------------------
#
# Each message: total length (4 bytes, big-endian), headers length (4), CRC32 of those
# 8 bytes (4), the headers, the payload, CRC32 of everything before it (4).  A header:
# name length (1), name, value type (1), value.  Amazon Bedrock sends ":message-type"
# "event" with ":event-type" naming the member, or "exception" with ":exception-type"; the
# payload is the member's JSON object.  Two rooms read it: bedrock (ConverseStream events)
# and anthropic (InvokeModelWithResponseStream chunks, each carrying one Anthropic event).

# Header value type -> fixed size in bytes (None: a 2-byte length comes first).
_EVENTSTREAM_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: None, 7: None, 8: 8, 9: 16}


def _eventstream_headers(data: bytes, frame: int) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    pos = 0
    while pos < len(data):
        size = data[pos]
        name = data[pos + 1:pos + 1 + size]
        pos += 1 + size
        if len(name) != size or pos >= len(data) or data[pos] not in _EVENTSTREAM_SIZES:
            raise CaptureError(f"frame {frame}: a malformed header")
        kind, pos = data[pos], pos + 1
        length = _EVENTSTREAM_SIZES[kind]
        if length is None:
            length, pos = int.from_bytes(data[pos:pos + 2], "big"), pos + 2
        value = data[pos:pos + length]
        if len(value) != length:
            raise CaptureError(f"frame {frame}: a header runs past its frame")
        pos += length
        try:
            headers[name.decode("utf-8")] = value.decode("utf-8") if kind == 7 else value
        except UnicodeDecodeError:
            raise CaptureError(f"frame {frame}: a header is not UTF-8") from None
    return headers


def _eventstream_member(headers: dict[str, Any], frame: int) -> str:
    """The envelope member a frame's headers name (an exception or error frame's always ends in Exception)."""
    kind = headers.get(":message-type")
    member = headers.get(":event-type" if kind == "event" else ":exception-type" if kind == "exception"
                         else ":error-code")
    if not isinstance(member, str) or not member:
        raise CaptureError(f"frame {frame}: no :event-type, :exception-type or :error-code header")
    if kind != "event" and not member.endswith("Exception"):
        # an exception or error frame is a stream error whatever its code says (botocore raises):
        # named so, it can never read as the data event its code may name (contentBlockDelta...)
        member += "Exception"
    return member


def is_eventstream(raw: bytes) -> bool:
    """Whether a body starts with an AWS event-stream prelude (its checksum holds)."""
    import zlib

    head = bytes(raw[:12])
    return len(head) == 12 and zlib.crc32(head[:8]) == int.from_bytes(head[8:], "big")


def eventstream_frame(event: Any) -> bytes:
    """One AWS event-stream frame for an event {member: payload}, checksums right: an exception member
    (a name ending in Exception) in an exception frame.  Anything else is framed as member "event"."""
    import struct
    import zlib

    member, payload = next(iter(event.items())) if isinstance(event, dict) and len(event) == 1 else ("event", event)
    member = member if isinstance(member, str) else "event"
    kind, type_header = ("exception", ":exception-type") if member.endswith("Exception") else ("event", ":event-type")
    headers = b""
    for name, value in ((":message-type", kind), (type_header, member), (":content-type", "application/json")):
        name_bytes, value_bytes = name.encode(), value.encode("utf-8", "surrogatepass")
        headers += bytes([len(name_bytes)]) + name_bytes + b"\x07" + struct.pack(">H", len(value_bytes)) + value_bytes
    body = wire_json(payload).encode("ascii")
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def eventstream_events(raw: bytes) -> list[dict]:
    """The ConverseStream events of a binary AWS event-stream body, as {member: payload}, in order.

    Both CRC32 checks must hold; a truncated or corrupt frame is an error, never
    a dropped event.
    """
    return [event for event, _, _ in _eventstream_frames(raw)]


def _eventstream_frames(raw: bytes, fast: Callable[[str, str], bool] | None = None,
                        parse: Callable[[str, str], Any] | None = None,
                        chunk: Callable[[bytes, int, bytes], tuple[int, int]] | None = None,
                        first_frame: int = 0, first_byte: int = 0) -> Iterator[tuple[Any, int, str]]:
    """(event, frame number, its payload's text) of eventstream_events, one frame at a time as it
    is read.  A frame whose checks hold and whose payload fast(member, text) writes (it says True)
    does not come.  At a "chunk" frame (its checks held), chunk(raw, pos, its header bytes) is asked
    first: (where it stopped, how many frames from pos it wrote, each checked as here); those do
    not come either.  parse(member, text): the payload read another way, exactly as the strict
    parser reads it, or None (then the parser reads it).  A frame whose header bytes are the
    previous frame's is not parsed again.  The frame loop stays here: a call more per frame would
    cost every body, and a payload parsed a frame deeper could nest one level less.  A body read in
    pieces of whole frames (StreamGate.feed_bytes) gives the frames and bytes before each piece."""
    import struct
    import zlib

    raw = _eventstream_bytes(raw)
    view = memoryview(raw)
    crc32, unpack = zlib.crc32, struct.Struct(">III").unpack_from
    tail = struct.Struct(">I").unpack_from
    members: dict[bytes, str] = {}   # header bytes -> member: a stream repeats a few header blocks
    last, last_size, member = b"", -1, ""   # the previous frame's header bytes, their size and member
    startswith = raw.startswith
    pos, frame = 0, first_frame
    size = len(raw)
    while pos < size:
        frame += 1
        if size - pos < 12:
            raise CaptureError(f"frame {frame}: the body ends inside a frame's prelude (byte {first_byte + pos})")
        total, header_size, prelude_crc = unpack(raw, pos)
        if crc32(view[pos:pos + 8]) != prelude_crc:
            raise CaptureError(f"frame {frame}: the prelude checksum does not match (byte {first_byte + pos}): not an "
                               "AWS event stream, or a corrupt one")
        if header_size > total - 16 or size - pos < total:   # (so a frame has its 16 bytes of prelude and CRC)
            raise CaptureError(f"frame {frame}: the frame length does not fit the body (byte {first_byte + pos})")
        end = pos + total
        if crc32(view[pos:end - 4]) != tail(raw, end - 4)[0]:
            raise CaptureError(f"frame {frame}: the message checksum does not match (byte {first_byte + pos})")
        start = pos + 12 + header_size
        if header_size != last_size or not startswith(last, pos + 12):
            last, last_size = raw[pos + 12:start], header_size
            member = _eventstream_known_member(members, last, frame)
        if chunk is not None and member == "chunk":
            stop, written = chunk(raw, pos, last)
            if written:
                pos, frame = stop, frame + written - 1
                continue
        try:
            text = str(view[start:end - 4], "utf-8")
            if fast is not None and fast(member, text):
                pos = end
                continue
            payload = None if parse is None else parse(member, text)
            if payload is None:
                payload = decode_document(text, what="the payload")
        except (UnicodeDecodeError, JsonProblem) as exc:
            raise CaptureError(f"frame {frame}: the payload is not strict JSON ({exc})") from None
        if not isinstance(payload, dict):
            raise CaptureError(f"frame {frame}: the payload must be a JSON object, got {_describe(payload)}")
        yield {member: payload}, frame, text
        pos = end


def _eventstream_bytes(raw: Any) -> bytes:
    """An event-stream body as bytes: it must be bytes, and not empty."""
    if not isinstance(raw, (bytes, bytearray)):
        raise CaptureError(f"the event stream must be bytes, got {type(raw).__name__}")
    if not raw:
        raise CaptureError("the body is empty: no AWS event stream to import")
    return bytes(raw)


def _eventstream_known_member(members: dict[bytes, str], head: bytes, frame: int) -> str:
    """The member a frame's header bytes name, read once per distinct header block (members: those read)."""
    member = members.get(head)
    if member is None:
        member = members[head] = _eventstream_member(_eventstream_headers(head, frame), frame)
    return member


class EventStreamRead(_FrozenRecord):
    """How a room's AWS event-stream body is read; capture reads it (frames_envelope).

    capture_point: the envelope's meta.capture_point; walk_all: every payload is searched for
    credentials (base64 payloads hide them from the body's quick look), else only a body that may
    hold one is; convert, unwrap, parse, chunk_match: the room's hooks, as frames_envelope takes them;
    unwrap_all(members, payloads): what unwrap reads from each frame of a run (their texts joined by
    commas) read at once, or None (StreamGate.feed_bytes then asks unwrap frame by frame).
    """

    __slots__ = ("capture_point", "walk_all", "convert", "unwrap", "parse", "chunk_match", "unwrap_all")

    def __init__(self, capture_point: str, *, walk_all: bool = False,
                 convert: Callable[[Any, int], tuple[Any, str | None]] | None = None,
                 unwrap: Callable[..., str | None] | None = None,
                 parse: Callable[[str, str], Any] | None = None,
                 chunk_match: tuple[bytes, Callable[..., Any]] | None = None,
                 unwrap_all: Callable[[list[str], list], str | None] | None = None) -> None:
        _freeze(self, locals())


# Characters besides LF and CR that Python's str.splitlines(), and so httpx's line reader, end a line at.
_SPLITLINES_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def wire_json(payload: Any) -> str:
    """One payload as the JSON text a provider sends: compact, ASCII (a lone surrogate stays an escape)."""
    return json.dumps(payload, ensure_ascii=True, separators=(",", ":"))


def sse_body(payloads: list, named: bool, done: bool, end: str = "\n") -> bytes:
    """Server-sent events: `event: <type>` before each payload when `named`, `data: [DONE]` last when `done`."""
    out = []
    for payload in payloads:
        name = _wire_str(payload.get("type")) if named and isinstance(payload, dict) else None
        if name and not any(mark in name for mark in ("\r", "\n") + _SPLITLINES_BREAKS):
            out.append(f"event: {name}{end}")
        out.append(f"data: {wire_json(payload)}{end}{end}")
    if done:
        out.append(f"data: [DONE]{end}{end}")
    return "".join(out).encode("ascii")


def ndjson_body(payloads: list) -> bytes:
    """Newline-delimited JSON: one payload per line."""
    return "".join(wire_json(payload) + "\n" for payload in payloads).encode("ascii")


# Legal framing variants (`serve --framing`): the same payloads, read identically by a reader that
# follows the SSE spec (crlf, comments, ids: SSE bodies only) and JSON's (utf8: any JSON text body).
# A room's HttpRules names the ones its providers' SDKs read so.
SSE_FRAMINGS = frozenset({"crlf", "comments", "ids"})
SERVE_FRAMINGS = SSE_FRAMINGS | {"utf8"}
SSE_RETRY_MS = 3000   # the retry: field the ids variant gives the first event
# U+2028 and U+2029: str.splitlines (and so httpx's iter_lines, which ollama-python and google-genai read
# through) ends a line at each, as at U+0085 (a C1 control); Go's encoding/json escapes the two as well.
_LINE_BREAKING = frozenset({0x2028, 0x2029})
_UNICODE_ESCAPE = re.compile(rb"\\\\|\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u([0-9a-f]{4})", re.I)


def _raw_character(match: Any) -> bytes:
    high, low, single = match.groups()
    if high:   # a surrogate pair in one string: one character
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00).encode("utf-8")
    point = int(single, 16) if single else 0
    if point < 0xA0 or 0xD800 <= point <= 0xDFFF or point in _LINE_BREAKING:   # kept escaped: a backslash, a
        return match.group(0)   # control (C0 or C1), a lone surrogate, a character a line reader breaks at
    return chr(point).encode("utf-8")


def json_raw_utf8(body: bytes) -> bytes:
    """A body of compact ASCII JSON texts (wire_json's) with each \\uXXXX escape of a character
    past ASCII written as that character in UTF-8, as most providers send it (the `utf8` framing
    variant); controls (C0 and C1), lone surrogates, U+2028 and U+2029 stay escaped, so the JSON reads as the
    same values and no line reader breaks a line inside it."""
    return _UNICODE_ESCAPE.sub(_raw_character, body)


def sse_reframed(body: bytes, framing: frozenset) -> bytes:
    """An SSE body as sse_body writes it (each event's lines, then a blank line), in the framing
    variants named: crlf (every line ended by CRLF), comments (a `: keep-alive` comment line opening
    each event after the first), ids (an `id: N` line per event, the first also `retry:`)."""
    if not framing or not body:
        return body
    eol = b"\r\n" if b"\r\n" in body else b"\n"
    end = b"\r\n" if "crlf" in framing else eol
    out = []
    for number, event in enumerate(body.split(eol + eol)[:-1]):   # no blank line inside an event: JSON is escaped
        lines = event.split(eol)
        if "ids" in framing:
            lines = [b"retry: %d" % SSE_RETRY_MS] * (number == 0) + [b"id: %d" % (number + 1)] + lines
        if "comments" in framing and number:   # opening the event, not a block of its own: after an id:, a
            lines = [b": keep-alive"] + lines   # blank line alone makes openai-python's decoder yield an empty event
        out.append(end.join(lines) + end + end)
    return b"".join(out)


def _ends_after(body: bytes, mark: bytes) -> list[int]:
    """The offsets just after each `mark` in body."""
    ends, at = [], body.find(mark)
    while at >= 0:
        ends.append(at + len(mark))
        at = body.find(mark, at + len(mark))
    return ends


def _sse_ends(body: bytes) -> list[int]:
    return _ends_after(body, b"\r\n\r\n" if b"\r\n" in body else b"\n\n")


_JSON_ARRAY_GAP = re.compile(r"[ \t\r\n,]*")


def _json_array_ends(body: bytes) -> list[int]:
    """After each element of a JSON array and the separator behind it.  Decoded as ASCII with each
    other byte one replacement character, so a character's index is its byte's."""
    decoder, text, ends = json.JSONDecoder(), body.decode("ascii", "replace"), []
    opening = text.find("[")
    if opening < 0:
        return []
    at = _JSON_ARRAY_GAP.match(text, opening + 1).end()
    try:
        while at < len(text) and text[at] != "]":
            _, at = decoder.raw_decode(text, at)
            at = _JSON_ARRAY_GAP.match(text, at).end()
            ends.append(at)
    except (ValueError, RecursionError):   # not an array of JSON values: the writes end where they may
        return ends
    return ends


def _eventstream_ends(body: bytes) -> list[int]:
    """After each AWS event-stream frame (its prelude's first four bytes: the frame's length)."""
    ends, at = [], 0
    while at + 4 <= len(body):
        at += max(16, int.from_bytes(body[at:at + 4], "big"))
        ends.append(min(at, len(body)))
    return ends


# A body's content type -> where its events end (serve's `event` chunking writes each alone).
EVENT_ENDS: Mapping[str, Callable[[bytes], list[int]]] = MappingProxyType({
    "text/event-stream": _sse_ends,
    "application/x-ndjson": lambda body: _ends_after(body, b"\n"),
    "application/json": _json_array_ends,
    "application/vnd.amazon.eventstream": _eventstream_ends,
})


# --- redaction: same structure, no text -------------------------------------------

REDACTED_TEXT = "[redacted]"
REDACTED_BASE64 = "cmVkYWN0ZWQ="   # "redacted" in base64: the stand-in of a value read as bytes

# Structure that survives neutralisation of a non-tool block (text, thinking, server tools).
_NEUTRAL_KEEP = frozenset({"type"})


def _neutral(value: Any, keep: frozenset = _NEUTRAL_KEEP) -> Any:
    """The same JSON shape without text: non-empty strings become REDACTED_TEXT.

    Why: the validator reads only structure and types outside call identity and
    arguments, so keeping every key, type and empty string keeps the verdict.
    String members named in `keep` (block and part types) stay; logprob `bytes`
    lists (text as numbers) are emptied.
    """
    if isinstance(value, str):
        return REDACTED_TEXT if value else ""
    if isinstance(value, list):
        return [_neutral(item, keep) for item in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in keep and isinstance(item, str):
                out[key] = item
            elif key == "bytes" and isinstance(item, list):
                out[key] = []
            else:
                out[key] = _neutral(item, keep)
        return out
    return value


# What a room's redactor of one member returns when that member keeps only its shape: the caller,
# the redactor of the whole payload, calls _neutral itself, so a deep member costs the frames it
# costs where no member redactor is involved (how deep a capture may nest stays the same).  A member
# redactor hands its own members to _neutral from a loop, not a comprehension, for the same reason.
_AS_SHAPE = object()


# ---------------------------------------------------------------------------
# Envelope loading: strict JSON for the fixture file itself
# ---------------------------------------------------------------------------


class EnvelopeError(Exception):
    """The fixture bytes are not one strict JSON document."""


def parse_envelope_bytes(data: bytes) -> Any:
    """Decode fixture bytes as one strict RFC 8259 document (EnvelopeError otherwise).

    Lone surrogate escapes are allowed here on purpose: a provider may split a
    UTF-16 pair across two fragments, and each fragment is a separate string.
    """
    return _parse_envelope_text(_envelope_text(data))


def _envelope_text(data: bytes) -> str:
    """The fixture bytes as text: UTF-8 without a byte order mark (EnvelopeError otherwise)."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise EnvelopeError("the file starts with a UTF-8 byte order mark")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EnvelopeError(f"the file is not UTF-8 (byte {exc.start})") from None


# validate_bytes reads a fixture's text a window at a time (_TextWindow): a window is slid on once fewer
# than _WINDOW_AHEAD characters are left ahead of the reader, and then holds about _WINDOW_BYTES bytes
# more, so a large file is never held as one string (at up to 4 bytes a character).
_WINDOW_BYTES = 1 << 16
_WINDOW_AHEAD = 40 << 10


class _TextWindow:
    """A file's bytes as text, decoded a window at a time: `text` holds data[first:done] decoded, from
    somewhat before the reader's position on; `eof` once the last byte is decoded.  A window is decoded
    from the bytes each time (nothing of the one before is kept while it is), and ends before a byte
    that starts a character (or before a fourth continuation byte in a row, where no character goes
    on), so the windows decode as the whole file does: a byte that is not UTF-8 gives _envelope_text's
    message with its offset in the file when the window holding it is decoded.  Whoever holds the old
    text (a reader's local) drops it before a slide, so that it is freed."""

    __slots__ = ("data", "first", "done", "text")

    def __init__(self, data: bytes, text: str = "") -> None:
        self.data, self.first, self.done, self.text = data, 0, 0, text
        if data.startswith(_UTF8_BOM_BYTES):
            raise EnvelopeError("the file starts with a UTF-8 byte order mark")

    @property
    def eof(self) -> bool:
        return self.done == len(self.data)

    def offset(self, pos: int) -> int:
        """The byte offset in the file of text[pos]."""
        text = self.text
        if text.isascii():
            return self.first + pos
        if 2 * pos < len(text):   # (the shorter side encoded: a slide's is the few characters left ahead)
            return self.first + len(text[:pos].encode("utf-8"))
        return self.done - len(text[pos:].encode("utf-8"))

    def slide(self, pos: int, size: int = 0) -> int:
        """The window from pos on, holding at least `size` more characters than are left (and about
        _WINDOW_BYTES more bytes; to the end of the file at most); returns pos's place in it (0)."""
        text, data = self.text, self.data
        start = self.offset(pos)
        ahead = len(text) - pos
        self.text = text = ""   # (freed here when no reader holds it)
        end = min(len(data), self.done + max(size, ahead, _WINDOW_BYTES))
        if end < len(data):   # back (or, in a window of a few bytes, on) to where a character starts
            back = end
            while back > max(end - 3, self.done + 1) and data[back] & 0xC0 == 0x80:
                back -= 1
            if data[back] & 0xC0 != 0x80:
                end = back
            else:
                back = end
                while back < min(end + 3, len(data)) and data[back] & 0xC0 == 0x80:
                    back += 1
                end = back   # (where a character starts, the end, or after three continuation bytes)
        try:
            self.text = str(memoryview(data)[start:end], "utf-8")
        except UnicodeDecodeError as exc:
            raise EnvelopeError(f"the file is not UTF-8 (byte {start + exc.start})") from None
        self.first, self.done = start, end
        return 0

    def ahead(self, pos: int, chars: int) -> int:
        """pos's place in the text once at least `chars` characters are held from it on (or the rest of
        the file): slides when fewer are."""
        if len(self.text) - pos < chars and not self.eof:
            pos = self.slide(pos)
        return pos

    def read(self, pos: int, reader: Callable[[str, int], tuple[Any, int]]) -> tuple[Any, int]:
        """reader(text, pos) for a value at pos, the window slid on and grown until the value ends
        inside it, short of its end (a value cut by the window's end may fail or read as less, as a
        number does); (value, its end in `text`).  What reader raises on the whole rest, it raises."""
        pos = self.ahead(pos, _WINDOW_AHEAD)
        while True:
            try:
                value, end = reader(self.text, pos)
            except (JsonProblem, ValueError, RecursionError, StopIteration):
                if self.eof:
                    raise
                pos = self.slide(pos, len(self.text) - pos)
                continue
            if self.eof or len(self.text) - end >= _WINDOW_SLACK:
                return value, end
            pos = self.slide(pos, len(self.text) - pos)


_UTF8_BOM_BYTES = b"\xef\xbb\xbf"
_WINDOW_SLACK = 1 << 10   # characters a value read in a window must end before the window's end


def _parse_envelope_text(text: str) -> Any:
    try:
        return decode_document(text, what="the envelope")
    except JsonProblem as problem:
        raise EnvelopeError(f"not strict JSON: {problem.message}{_raw_body_hint(text)}") from None


def _raw_body_hint(text: str) -> str:
    """A pointer to `capture` when the file looks like a raw stream rather than an envelope."""
    start = text.lstrip(" \t\r\n")[:200]
    if start.startswith(("data:", "event:", ": ", "id:", "retry:")):
        return " (this looks like a raw SSE body: turn it into an envelope with the capture subcommand)"
    if start.startswith("{") and "\n{" in text[:1 << 16]:
        return " (this looks like JSON Lines of stream payloads: turn them into an envelope with capture)"
    return ""



def _nesting_exceeds(value: Any, limit: int) -> bool:
    """True when containers nest deeper than limit (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > limit:
                return True
            stack.extend((item, depth + 1) for item in (node.values() if isinstance(node, dict) else node))
    return False


def _limits(limits: Any) -> Limits:
    """The caller's Limits, or the defaults; anything else is a programming error (TypeError)."""
    if limits is None:
        return Limits()
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits instance or None, not {type(limits).__name__}")
    return limits



# ---------------------------------------------------------------------------
# Request context: what the request allowed the model to call
# ---------------------------------------------------------------------------
#
# The optional envelope key "request" holds the request's tool controls, in the
# provider's own shape: tool_choice, parallel_tool_calls (OpenAI chat and
# Responses) and tools (the names of the client tools the request offered).
# One translator per request format turns them into a RequestContext, which
# the slot machine (the forced "stop" terminal) and the gate read.  A shape a
# translator does not know is a RequestError, hence invalid_fixture: a typo
# must not silently drop a constraint.

REQUEST_KEYS = ("tool_choice", "parallel_tool_calls", "tools")
class RequestError(ValueError):
    """The envelope's request block has a shape no translator knows."""


class RequestContext(_FrozenRecord):
    """The request's tool controls, provider-neutral.

    none: no call was allowed (tool_choice "none"); allowed: the only names a
    call may have (a forced or restricted tool_choice), None when any; forced:
    the one tool a named tool_choice forces, forced_kind its kind (function or
    custom); single: at most one call (parallel_tool_calls false, Anthropic's
    disable_parallel_tool_use); tools: the names the request offered, None
    when not given; choice_text: how messages describe the tool_choice.
    """

    __slots__ = ("none", "allowed", "forced", "forced_kind", "single", "tools", "choice_text")

    def __init__(self, none: bool = False, allowed: frozenset | None = None, forced: str | None = None,
                 forced_kind: str = FUNCTION, single: bool = False, tools: frozenset | None = None,
                 choice_text: str = "") -> None:
        _freeze(self, locals())


def _request_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise RequestError(f"{where} must be a non-empty string, got {_describe(value)}")
    return value


def _request_members(value: Any, where: str, allowed: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        raise RequestError(f"{where} must be an object, got {_describe(value)}")
    for key in value:
        if key not in allowed:
            raise RequestError(f"{where} has the member {_token(key)}, which is not one of {', '.join(allowed)}")
    return value


def _forced(name: str, kind: str = FUNCTION) -> dict:
    what = "the custom tool " if kind == CUSTOM else ""
    return {"allowed": frozenset({name}), "forced": name, "forced_kind": kind,
            "choice_text": f"tool_choice forces {what}{_quoted(name)}"}


_NAMES_SHOWN = 5   # names of an allowed list that a message writes out


def _restricted(names: list[str]) -> dict:
    """An allowed_tools restriction; its message names at most _NAMES_SHOWN tools, then how many more."""
    shown = ", ".join(_quoted(n) for n in sorted(names)[:_NAMES_SHOWN])
    more = f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
    return {"allowed": frozenset(names), "choice_text": "tool_choice allows only " + ((shown + more) or "hosted tools")}


# --- the request again, from the envelope: what `conform` hands an adapter (each room's HttpRules.request_body)

# The one user message of a request built from an envelope (the fixture holds no prompt; the server ignores it).
REQUEST_PROMPT = "Answer with the tool calls this turn needs."


def offered_schemas(tool_schemas: dict, request: Any) -> dict:
    """The tools a fixture's request offered, name -> schema: the names of request.tools in their order
    (a name without a schema gets {"type": "object"}), or every tool_schemas entry when the request does
    not list its tools (no request block, or one without "tools")."""
    names = request.get("tools") if isinstance(request, dict) else None
    if not isinstance(names, list):
        return dict(tool_schemas)
    return {name: tool_schemas.get(name, {"type": "object"}) for name in names}


def _request_controls(request: Any, keys: tuple[str, ...]) -> dict:
    """The members of a fixture's request block among keys that are given (not null), as they are."""
    request = request if isinstance(request, dict) else {}
    return {key: request[key] for key in keys if request.get(key) is not None}





def _listed_request_tools(body: dict) -> tuple[list, Any]:
    """(tools, tool_choice) of a request with a top-level tools list (chat, Responses, Messages)."""
    tools = body.get("tools")
    tools = [] if tools is None else tools
    if not isinstance(tools, list):
        raise CaptureError(f"the request's tools is {_describe(tools)}, not a list")
    return tools, body.get("tool_choice")


def _one_tool(where: str, tool: Any) -> list[tuple[str, Any, str]]:
    """A request tool entry as itself (no namespace)."""
    return [(where, tool, "")]


def _function_tool(where: str, tool: Any, api: str) -> list[tuple[str, Any, str]]:
    """A tools entry of an API whose only tools are functions: "type" may be left out, another is refused."""
    if not isinstance(tool, dict) or not isinstance(tool.get("function"), dict) \
            or tool.get("type") not in (None, "function"):
        raise CaptureError(f"{where} is not a {api} function tool ({{\"type\": \"function\", \"function\": "
                           "{\"name\", \"parameters\"}})")
    return [(where, dict(tool, type="function"), "")]


def _function_tools(schemas: dict) -> list:
    """tool_schemas as the tools of an API whose tools are {"type": "function", "function": {...}} (chat
    completions, Cohere v2, Ollama)."""
    return [{"type": "function", "function": {"name": name, "parameters": schema}} for name, schema in schemas.items()]


def _declared_tool(where: str, source: dict, schema_key: str) -> list[tuple[str, Any]]:
    """[(name, schema)] of a tool declared by its name and a schema member (a room's tools entry
    reader, at `where`); a "parameters" member that is absent or null declares no parameters."""
    name = source.get("name")
    if not isinstance(name, str) or not name:
        raise CaptureError(f"{where}.name must be a non-empty string, got {_describe(name)}")
    schema = source.get(schema_key)
    if schema_key == "parameters" and schema is None:  # absent (or null in the Responses API): no declared parameters
        schema = {"type": "object"}
    if not isinstance(schema, (dict, bool)):
        raise CaptureError(f"{where}.{schema_key} must be a JSON Schema object, got {_describe(schema)}")
    return [(name, schema)]


def _function_entry(where: str, tool: dict) -> list[tuple[str, Any]] | None:
    """A tools entry {"type": "function", "function": {"name", "parameters"}} (chat completions, Cohere v2,
    Ollama); None for any other entry."""
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        return _declared_tool(where + ".function", tool["function"], "parameters")
    return None


def _no_defined_tool(where: str, tool: dict) -> None:
    """For a provider without client tools of its own definition."""
    return None


def _no_tool_entry(where: str, tool: dict) -> None:
    """For a provider whose tools entries are read by another room's reader (or converted to one)."""
    return None


# ---------------------------------------------------------------------------
# Neutral events: what every normalizer emits and the slot machine consumes
# ---------------------------------------------------------------------------

SlotKey = tuple  # (choice or None, index)


class SlotOpen(_Record):
    """A slot announced explicitly, with its identity (anthropic tool_use start).

    namespace: the namespace the wire names the tool in (Responses), part of the
    call's identity: the tool is looked up as "namespace.name" (see tool_key).
    """

    __slots__ = ("position", "key", "id", "name", "initial_input", "kind", "namespace")

    def __init__(self, position: int, key: SlotKey, id: str | None, name: str | None, initial_input: Any,
                 kind: str = FUNCTION, namespace: str | None = None) -> None:
        self.position = position
        self.key = key
        self.id = id
        self.name = name
        self.initial_input = initial_input
        self.kind = kind
        self.namespace = namespace


class Fragment(_Record):
    """A piece of one slot: identity restatement and/or an argument fragment."""

    __slots__ = ("position", "key", "id", "name", "arguments", "kind")

    def __init__(self, position: int, key: SlotKey, id: str | None, name: str | None, arguments: str | None,
                 kind: str | None = None) -> None:
        self.position = position
        self.key = key
        self.id = id
        self.name = name
        self.arguments = arguments
        self.kind = kind  # None: the fragment does not say (a function call unless the slot says otherwise)


class SlotEnd(_Record):
    """The provider's terminal for one slot (anthropic content_block_stop).

    `restated` holds (where, text) for every place the protocol restated the
    whole argument string up to the terminal; each must equal the joined fragments.
    """

    __slots__ = ("position", "key", "restated")

    def __init__(self, position: int, key: SlotKey, restated: tuple = ()) -> None:
        self.position = position
        self.key = key
        self.restated = restated


class CallRestated(_Record):
    """A finished call restated later (a final snapshot of the turn); the arguments must agree."""

    __slots__ = ("position", "key", "where", "arguments")

    def __init__(self, position: int, key: SlotKey, where: str, arguments: str) -> None:
        self.position = position
        self.key = key
        self.where = where
        self.arguments = arguments


class ChoiceEnd(_Record):
    """A choice's finish_reason: the terminal of every slot in that choice.

    bare: the wire item carries this finish and nothing of the turn besides (no
    content, no tool data), and nothing of the choice came since its first
    finish; the machine reads a bare repetition of the same reason, once, as a
    restatement of that finish rather than a second terminal.
    """

    __slots__ = ("position", "choice", "reason", "bare")

    def __init__(self, position: int, choice: int, reason: str, bare: bool = False) -> None:
        self.position = position
        self.choice = choice
        self.reason = reason
        self.bare = bare


class TurnEnd(_Record):
    """The turn's stop reason (anthropic message_delta.stop_reason)."""

    __slots__ = ("position", "reason")

    def __init__(self, position: int, reason: str) -> None:
        self.position = position
        self.reason = reason


class TurnClose(_Record):
    """The stream's own closing event (anthropic message_stop)."""

    __slots__ = ("position",)

    def __init__(self, position: int) -> None:
        self.position = position


class SnapshotCall(_Record):
    """A tool call visible outside the deltas (a choice's `message` snapshot).

    Some gateways repeat such a snapshot next to the deltas; a call that is
    only there was never streamed, so it must not make the turn look empty.
    """

    __slots__ = ("position", "choice")

    def __init__(self, position: int, choice: int) -> None:
        self.position = position
        self.choice = choice


class HostedUse(_Record):
    """A tool the provider ran itself inside the turn (never a call); named by a reviewed constant.

    by_name: the wire tells this use from a client call by its name alone, so a reader
    that dispatches by name runs it as the client tool of that name, if one is declared.
    """

    __slots__ = ("position", "name", "by_name")

    def __init__(self, position: int, name: str, by_name: bool = False) -> None:
        self.position = position
        self.name = name
        self.by_name = by_name


class WireProblem(_Record):
    """Something the normalizer could not translate; always a finding."""

    __slots__ = ("position", "code", "message", "choice", "index")

    def __init__(self, position: int | None, code: str, message: str, choice: int | None = None,
                 index: int | None = None) -> None:
        self.position = position
        self.code = code
        self.message = message
        self.choice = choice
        self.index = index


class FragmentRun(_Record):
    """Consecutive wire items, each of which only adds text to slot `key`, read from text at once.

    A normalizer's fragment_run() recognises them in a capture's text (see
    _ArrayItems).  `pieces` holds each item's text in stream order, empty ones
    too (len(pieces) is the number of items), and item(piece) rebuilds the wire
    item, for the gate to translate one by one when the machine cannot take
    the pieces at once.  Not a neutral event: the gate handles it in their place.
    """

    __slots__ = ("key", "pieces", "item")

    def __init__(self, key: SlotKey, pieces: list[str], item: Callable[[str], Any]) -> None:
        self.key = key
        self.pieces = pieces
        self.item = item


NeutralEvent = Union[SlotOpen, Fragment, SlotEnd, CallRestated, ChoiceEnd, TurnEnd, TurnClose, SnapshotCall, HostedUse,
                     WireProblem]
NEUTRAL_EVENT_TYPES = (SlotOpen, Fragment, SlotEnd, CallRestated, ChoiceEnd, TurnEnd, TurnClose, SnapshotCall,
                       HostedUse,
                       WireProblem)


def _fragment_key_at(member: str) -> Callable[[dict, tuple], tuple | None]:
    """A fragment key read from one index member of the payload (Anthropic "index", Responses
    "output_index"): the slot (None, index), or None when the index is not usable."""
    def key(payload: dict, path: tuple) -> tuple | None:
        index = payload.get(member)
        return (None, index) if _is_index(index) else None
    return key


def _no_fragment_key(payload: dict, path: tuple) -> tuple | None:
    """For a profile whose protected paths hold no argument fragment."""
    return None


def _secure_parse_refuses(value: Any) -> bool:
    """Whether secure-json-parse (the Vercel AI SDK's event parser) refuses this parsed value: a
    __proto__ member, or a constructor member holding prototype, at any depth."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list = [value]      # only objects and arrays are ever pushed
    seen: set[int] = set()     # a value fed by a library caller may refer to itself
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            if "__proto__" in node or isinstance(node.get("constructor"), dict) and "prototype" in node["constructor"]:
                return True
            node = node.values()
        for item in node:
            if isinstance(item, (dict, list)):
                stack.append(item)
    return False


# The opening of a message stream (Anthropic message_start, Responses response.created, Bedrock
# messageStart) as a transition table: (phase, whether the event is the opening one) -> (next
# phase, what is wrong or None).  "early": an event came before the opening (said once).
_OPENING: Mapping[tuple[str, bool], tuple[str, str | None]] = MappingProxyType({
    ("new", True): ("open", None),
    ("new", False): ("early", "{event} before {start}"),
    ("early", True): ("open", "{start} is not the first event"),
    ("early", False): ("early", None),
    ("open", True): ("open", "a second {start}"),
    ("open", False): ("open", None),
})


def _opening(pos: int, phase: str, event: str, start: str) -> tuple[str, list[WireProblem]]:
    """The next opening phase after `event`, and the finding it makes (a list of none or one)."""
    phase, wrong = _OPENING[(phase, event == start)]
    return phase, [] if wrong is None else [WireProblem(pos, UNEXPECTED_EVENT, wrong.format(event=event, start=start))]


def _ending(pos: int, table: Mapping[tuple[str, str], tuple[str, str | None]], phase: str, step: str,
            event: str) -> tuple[str, list[WireProblem]]:
    """The next phase of a turn's end after an event of kind `step` (a row of a provider's ending
    table), and the finding it makes: an event that comes too late is delta_after_terminal."""
    phase, wrong = table[(phase, step)]
    return phase, ([] if wrong is None else
                   [WireProblem(pos, DELTA_AFTER_TERMINAL, wrong.format(event=event, token=_token(event)))])


def _untyped(pos: int, event: Any) -> WireProblem:
    """The finding for an event that is not an object with a string "type" (the room checks that inline)."""
    return WireProblem(pos, UNSUPPORTED_EVENT, f"event is {_describe(event)} without a string \"type\"")


class _EventRoom(_Record):
    """What a room of typed events (Anthropic, Responses, Bedrock, Cohere) reads the same way, as data.

    start: the event that opens the stream (see _OPENING); ending: the room's ending table
    (see _ending) with steps, {event type: its step}, and `other`, the step of any other type;
    handlers: {event type: handler(pos, event type, event, state)}, and `default`, the handler
    of any other type (None: nothing to read); screen: an optional check of every event between
    its opening and its ending (its finding, or None).  The room's state has the members `opening`
    and `ending`.
    """

    __slots__ = ("start", "ending", "steps", "other", "handlers", "default", "screen")

    def __init__(self, *, start: str, ending: Mapping[tuple[str, str], tuple[str, str | None]],
                 steps: Mapping[str, str], other: str,
                 handlers: Mapping[str, Callable[..., Iterator[NeutralEvent]] | None],
                 default: Callable[..., Iterator[NeutralEvent]] | None = None,
                 screen: Callable[[int, str, Any], WireProblem | None] | None = None) -> None:
        self.start, self.ending, self.steps, self.other = start, ending, steps, other
        self.handlers, self.default, self.screen = handlers, default, screen

    def opening(self, pos: int, kind: str, state: Any) -> Iterable[WireProblem]:
        """The opening after an event of this type: an event before the start is said once."""
        phase = state.opening
        state.opening, wrong = _OPENING[(phase, kind == self.start)]
        return () if wrong is None else _opening(pos, phase, kind, self.start)[1]

    def late(self, pos: int, kind: str, state: Any) -> Iterable[WireProblem]:
        """The ending after an event of this type: one after the turn's end is delta_after_terminal."""
        phase, step = state.ending, self.steps.get(kind, self.other)
        state.ending, late = self.ending[(phase, step)]
        return () if late is None else _ending(pos, self.ending, phase, step, kind)[1]

    def read(self, pos: int, kind: str, event: Any, state: Any) -> Iterable[NeutralEvent]:
        """The steps every such room takes with a known event: its opening, its screen, its ending,
        then its handler unless it came too late.  The usual event, which none of the first three
        finds wrong, costs this one call and its handler's (the tables are read here)."""
        opening, ending = state.opening, state.ending
        state.opening, wrong = _OPENING[(opening, kind == self.start)]
        screened = None if self.screen is None else self.screen(pos, kind, event)
        step = self.steps.get(kind, self.other)
        state.ending, late = self.ending[(ending, step)]
        handler = self.handlers.get(kind, self.default) if late is None else None
        handled = () if handler is None else handler(pos, kind, event, state)
        if wrong is None and screened is None and late is None:
            return handled
        return self._said(pos, kind, (opening, ending, step), screened, handled)

    def _said(self, pos: int, kind: str, phases: tuple[str, str, str], screened: WireProblem | None,
              handled: Iterable[NeutralEvent]) -> Iterator[NeutralEvent]:
        """What read() says of an event before its handler's events: the opening's, the screen's, the
        ending's finding (phases: the opening and ending phases it found, and the event's step)."""
        opening, ending, step = phases
        yield from _opening(pos, opening, kind, self.start)[1]
        if screened is not None:
            yield screened
        yield from _ending(pos, self.ending, ending, step, kind)[1]
        yield from handled


class TurnRules(_FrozenRecord):
    """How one profile delivers terminal evidence; data, not code paths.

    tool_reason: the only reason that may end a tool turn; per_choice_terminal:
    finish_reason ends the choice's slots (openai); contiguous_slots: slot
    indices of a choice run 0..n-1; implicit_open: a fragment may open a slot
    (openai) or not (anthropic); needs_close: a closing event must follow the
    stop reason; the *_name fields name the wire events in messages.
    forced_reason: the reason that ends a turn whose request forced one named tool
    (OpenAI chat ends such a turn "stop"); names_concatenate: the reference SDK joins
    name fragments (openai-python's accumulate_delta), so a name restated on a later
    fragment is read as another tool ("f" + "f" = "ff"); requires_id: a call must carry
    an id (Gemini's calls usually have none: the function response pairs by name and order).
    Each provider's rules are in its Profile row, given by keyword.
    """

    __slots__ = ("tool_reason", "per_choice_terminal", "contiguous_slots", "implicit_open", "needs_close",
                 "stop_name", "close_name", "slot_end_name", "forced_reason", "names_concatenate", "requires_id")

    def __init__(self, *, tool_reason: str, per_choice_terminal: bool = False, contiguous_slots: bool = False,
                 implicit_open: bool = False, needs_close: bool = True, stop_name: str = "stop_reason",
                 close_name: str = "message_stop", slot_end_name: str = "content_block_stop",
                 forced_reason: str | None = None, names_concatenate: bool = False, requires_id: bool = True) -> None:
        _freeze(self, locals())


# The schema a room gives a provider-defined tool type it has not reviewed: {UNREVIEWED_TOOL_KEYWORD:
# type}.  The schema compiler refuses it with that reason (unsupported_schema), so a call of such a
# tool is never checked against a guess.
UNREVIEWED_TOOL_KEYWORD = "unreviewedToolType"

# What capture says of a body of an API no profile reads (a room's foreign_shape ends with it).
_NO_PROFILE = "no profile reads it, so it cannot become an envelope"


def _adapter_call(where: str, call_id: Any, name: Any, arguments: Any) -> dict:
    """One normalised adapter call; an object argument is compared parsed."""
    for label, value in (("id", call_id), ("name", name)):
        if value is not None and not isinstance(value, str):
            raise CaptureError(f"{where}: {label} must be a string or null, got {_describe(value)}")
    if arguments is None or isinstance(arguments, str):
        return {"id": call_id, "name": name, "arguments": arguments, "compare_parsed": False}
    if isinstance(arguments, dict):
        text = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        return {"id": call_id, "name": name, "arguments": text, "compare_parsed": True, "input": arguments}
    raise CaptureError(f"{where}: arguments must be a string or an object, got {_describe(arguments)}")


def _no_final_reader(doc: dict) -> None:
    """For a provider whose final message the adapter differential does not read."""
    return None


def _no_shape(payload: dict) -> None:
    """For a provider without such a shape."""
    return None


def _error_member(payload: dict) -> bool:
    """An error payload with an "error" member."""
    return "error" in payload


def _sdk_dump(item: Any, mode: str = "python") -> Any:
    """The wire payload an SDK's stream item was built from, by duck typing (no SDK is imported).

    The generic reader of WireRules.sdk_item: a pydantic model (openai-python, the Anthropic SDK,
    cohere-python, ollama-python and mistralai build theirs from the wire JSON) gives
    model_dump(by_alias=True, exclude_unset=True): only the members the server sent (pydantic's
    fields_set; the Stainless SDKs' BaseModel.construct in openai/_models.py and anthropic/_models.py
    sets it to the keys present and keeps unknown members as extras), under their wire names, with the
    values the object holds.  Python mode, not JSON mode: JSON mode writes what a value becomes under its
    declared type (a choice index `true` held in an int field as 1, a non-finite float as null), which
    would judge a value the server never sent; python mode hands over the object's own values, which
    the room judges as it judges a dict's.  (A room whose SDK holds enums or bytes asks for mode "json".)
    Without model_dump, to_dict().  Anything else (a JSON value, an unknown object) is returned as it is,
    for the room to judge.
    """
    dump = getattr(item, "model_dump", None)
    serializer = getattr(type(item), "__pydantic_serializer__", None)
    if dump is not None and serializer is not None:
        # what model_dump does with these arguments in pydantic 2 (none of those SDKs overrides it there),
        # without its own checks of its arguments.  No serializer warnings: a member the SDK kept
        # unvalidated (an object where its model says string) is the room's to judge, not a line on the
        # application's stderr
        return serializer.to_python(item, mode=mode, by_alias=True, exclude_unset=True, warnings=False)
    if dump is not None:
        try:
            return dump(mode=mode, by_alias=True, exclude_unset=True, warnings=False)
        except TypeError:   # a model_dump without pydantic 2's warnings argument
            return dump(mode=mode, by_alias=True, exclude_unset=True)
    to_dict = getattr(item, "to_dict", None)
    return item if to_dict is None else to_dict()


def _sdk_payload(item: Any, normalizer: Any, pos: int) -> Any:
    """The generic reader of an SDK's stream item (WireRules.sdk_item): its wire payload (see _sdk_dump)."""
    return _sdk_dump(item)


def _plain_model_class(known: dict, cls: type, name: str, module: str) -> bool:
    """Whether cls is the SDK's pydantic model class `name`, of a module under `module`, whose dump is its own
    values (declared fields without alias or exclusion; no field or model serializer, no computed field), so that
    a room may read such an object from its attributes to the dict _sdk_dump gives.  Asked once per class and
    kept in known (one dict per name, bounded); a class that will not say is not one."""
    found = known.get(cls)
    if found is None:
        try:
            fields = getattr(cls, "model_fields", None)
            decorators = getattr(cls, "__pydantic_decorators__", None)
            found = bool(cls.__name__ == name and str(cls.__module__).startswith(module) and type(fields) is dict
                         and decorators is not None and not decorators.field_serializers
                         and not decorators.model_serializers and not decorators.computed_fields
                         and not getattr(cls, "__pydantic_computed_fields__", None)
                         and all(f.alias is None and f.serialization_alias is None and not f.exclude
                                 for f in fields.values()))
        except Exception:   # noqa: BLE001 - a class that will not say: not this one
            found = False
        if len(known) < 256:
            known[cls] = found
    return found


class WireRules(_FrozenRecord):
    """How a room reads its wire payloads; data, not code paths.

      normalizer       Limits -> a fresh normalizer for one turn
      fragment_key     (payload, fragment path) -> the slot a fragment belongs to, or None
      protected_paths  one payload -> {path: "warn" | "fragment"}, never masked (call identity, arguments);
                       "base64": a member whose base64 value the rules decode, masked whole to REDACTED_BASE64
      final_reader     a final (not streamed) message of its API, an adapter's output -> the function that
                       reads its calls (each from _adapter_call), or None when the document is not of that
                       shape (adapter_calls_from_doc calls it: a frame less above a deep argument object)
      sdk_item         (item that is not a dict, the turn's normalizer, its position) -> the wire payload an SDK's
                       stream object stands for (StreamGate.feed reads every non-dict item through it), a
                       WireProblem, or None (an item that restates what was read and adds nothing); a value it
                       does not know is returned as it is.  It may raise: feed() makes that a finding
    """

    __slots__ = ("normalizer", "fragment_key", "protected_paths", "final_reader", "sdk_item")

    def __init__(self, *, normalizer: Callable[[Limits], Any], protected_paths: Callable[[dict], dict],
                 fragment_key: Callable[[dict, tuple], Any] = _no_fragment_key,
                 final_reader: Callable[[dict], Callable[[dict], list] | None] = _no_final_reader,
                 sdk_item: Callable[[Any, Any, int], Any] = _sdk_payload) -> None:
        _freeze(self, locals())


class RequestRules(_FrozenRecord):
    """How a room reads the request that started a turn; data, not code paths.

      choice           a request's tool_choice -> RequestContext fields
      parallel_field   parallel_tool_calls is a field of its request; parallel_instead: else what to say
      tools            a recorded request body -> (tools list, tool_choice)
      expand_tool      (where, tool entry) -> [(where, entry, name prefix)] (a namespace stands for several)
      defined_tool     (where, tool entry) -> (name, schema) of a tool the provider defines, or None; one
                       of a type it has not reviewed has the schema {UNREVIEWED_TOOL_KEYWORD: type}
      tool_entry       (where, tool entry object) -> [(name, schema)] of a client tool in its API's shape, or
                       None when the entry is not of that shape (capture's --schemas and --request)
    """

    __slots__ = ("choice", "parallel_field", "parallel_instead", "tools", "expand_tool", "defined_tool",
                 "tool_entry")

    def __init__(self, *, choice: Callable[[Any], dict], parallel_field: bool = False, parallel_instead: str = "",
                 tools: Callable[[dict], tuple] = _listed_request_tools,
                 expand_tool: Callable[[str, Any], list] = _one_tool,
                 defined_tool: Callable[[str, dict], Any] = _no_defined_tool,
                 tool_entry: Callable[[str, dict], list | None] = _no_tool_entry) -> None:
        _freeze(self, locals())


class CaptureRules(_FrozenRecord):
    """How capture turns a room's raw body into a fixture; data, not code paths.

      family, claims     the shape family capture names, and whether one payload has that shape: the room's
                         own yes or no (rooms of one family share it; no payload is claimed by two families)
      redact             one payload -> the same structure without content
      binary_body        (raw, encode) -> how capture reads a body that is not SSE text (an EventStreamRead),
                         or None (it declines), decided from the body's first 12 bytes (StreamGate.feed_bytes
                         asks once those came); no binary_body: every body is text
      check_sse_text, check_sse_events   the framing rules of its SSE body (raise CaptureError): check_sse_text
                         a tuple of checks, each run over the whole text in turn (a later one's error stands
                         only where no earlier one fails anywhere), each check(text, first_line) reading line
                         by line: a body read in pieces of whole events (feed_bytes) is checked a piece at a
                         time, its lines numbered after first_line; check_sse_events(events), or None, checks
                         each event alone by its name (and names its line): feed_bytes asks it once per name
      check_lines_text   the same tuple for its JSON Lines body (an NDJSON API)
      warn_without_done  warn when its SSE body has no "data: [DONE]"
      stream_error       whether one payload is an error its stream may carry (kept: it becomes stream_error)
      foreign_shape      one payload of a neighbouring API of the provider that no profile reads (another
                         version, an endpoint without tool calls) -> what it looks like and what to capture
                         instead, or None
      whole_response     one JSON object of its non-streaming API -> how capture's refusal names it, or None
    """

    __slots__ = ("family", "claims", "redact", "binary_body", "check_sse_text", "check_sse_events",
                 "check_lines_text", "warn_without_done", "stream_error", "foreign_shape", "whole_response")

    def __init__(self, *, family: str, claims: Callable[[dict], bool], redact: Callable[[dict], dict],
                 binary_body: Callable[..., tuple] | None = None,
                 check_sse_text: tuple[Callable[[str, int], None], ...] = (),
                 check_sse_events: Callable[[list], None] | None = None,
                 check_lines_text: tuple[Callable[[str, int], None], ...] = (), warn_without_done: bool = False,
                 stream_error: Callable[[dict], bool] = _error_member,
                 foreign_shape: Callable[[dict], str | None] = _no_shape,
                 whole_response: Callable[[dict], str | None] = _no_shape) -> None:
        _freeze(self, locals())


class HttpError(_FrozenRecord):
    """One HTTP error a provider answers instead of a stream, as it sends it (a fixture's
    `"serve": {"error": {"status", "kind"}}` picks it by kind): status, content type, headers and body bytes."""

    __slots__ = ("kind", "status", "content_type", "headers", "body")

    def __init__(self, *, kind: str, status: int, content_type: str, headers: tuple, body: bytes) -> None:
        _freeze(self, locals())


def http_error(kind: str, status: int, body: Any, headers: tuple = (),
               content_type: str = "application/json") -> HttpError:
    """An HttpError whose body is `body` as compact JSON (headers: (name, value) pairs)."""
    return HttpError(kind=kind, status=status, content_type=content_type, headers=tuple(headers),
                     body=json.dumps(body, separators=(",", ":")).encode("ascii"))


class HttpRules(_FrozenRecord):
    """How `serve` answers as the provider's API and `conform` calls it; data, not code paths.

      api_path     a regular expression the path after a fixture's prefix must match
      frame        (stream, query) -> (content type, body bytes), framed as the provider frames it
      api_example  one path api_path matches (conform's VTS_API_URL)
      tools_shape  tool_schemas -> the tools of a request in the provider's shape (conform's tools file)
      request_body (offered tool schemas, the fixture's request block or {}) -> the body of a streaming request
                   in the provider's shape (conform's request file): the tools, the tool choice and, where the
                   API has it, parallel_tool_calls, as the room's RequestRules read them back (request_from_body)
      errors       the HttpErrors it answers before a stream, one per kind (a fault fixture's "serve" block)
      cut_frame    frame without the provider's terminal framing (a cut-off stream); None: frame has none
      framings     the framing variants (SERVE_FRAMINGS) its SDKs read as they read its own body:
                   `serve --framing` applies these (crlf, comments, ids to its text/event-stream answers), no others
    """

    __slots__ = ("api_path", "frame", "api_example", "tools_shape", "request_body", "errors", "cut_frame", "framings")

    def __init__(self, *, api_path: str, frame: Callable[..., tuple], api_example: str,
                 tools_shape: Callable[[dict], Any], request_body: Callable[[dict, dict], dict],
                 errors: tuple[HttpError, ...] = (), cut_frame: Callable[..., tuple] | None = None,
                 framings: frozenset = frozenset()) -> None:
        _freeze(self, locals())

    def error(self, kind: Any) -> HttpError | None:
        """The error of this kind the provider answers, or None."""
        return next((error for error in self.errors if error.kind == kind), None)


class Profile(_FrozenRecord):
    """One wire format, whole: the row through which every generic section reads a provider.

    Nothing outside a provider's own sub-section branches on its name; what differs is here,
    given by keyword, in one small record per door:
      name, stream_key   the envelope's "profile" value and its stream list ("chunks"/"events")
      rules              its TurnRules (the slot machine's terminal evidence)
      wire               its WireRules (normalizer, fragments, protected paths)
      request            its RequestRules (tool_choice, tools, parallel calls)
      capture            its CaptureRules (shape claims, redaction, framing rules of a raw body)
      http               its HttpRules (`serve` and `conform`), or None: the room is not served
    """

    __slots__ = ("name", "stream_key", "rules", "wire", "request", "capture", "http")

    def __init__(self, *, name: str, stream_key: str, rules: TurnRules, wire: WireRules, request: RequestRules,
                 capture: CaptureRules, http: HttpRules | None = None) -> None:
        _freeze(self, locals())


# ---------------------------------------------------------------------------
# Provider: OpenAI chat completions, and Mistral's (profiles openai and mistral)
# ---------------------------------------------------------------------------


def _optional_str(entry: dict, key: str) -> tuple[bool, str | None]:
    """(ok, value) for a member that must be a string, null or absent."""
    value = entry.get(key)
    if value is None or isinstance(value, str):
        return True, value
    return False, None


_CHUNK_OBJECT = "chat.completion.chunk"
_TOOL_FINISH_REASONS = frozenset({"tool_calls", "function_call"})
_UNTYPED_CHUNK = ("a chunk with tool-call data has no \"object\" while others are \"chat.completion.chunk\": "
                  "openai-python's stream helper drops it and would run the call without its fragments")


def _chat_tool_data(choices: list) -> bool:
    """True when some choice carries tool-call entries, a legacy call, or a tool finish reason."""
    for choice in choices:
        if isinstance(choice, dict):
            delta = choice.get("delta")
            if isinstance(delta, dict) and (delta.get("tool_calls") or delta.get("function_call") is not None):
                return True
            if _wire_str(choice.get("finish_reason")) in _TOOL_FINISH_REASONS:
                return True
    return False


def _chat_repeated_choices(pos: int, choices: list) -> Iterator[NeutralEvent]:
    """Two entries for one choice index in one chunk: readers disagree on which counts.

    openai-python merges both into its snapshot; the Vercel AI SDK reads only
    choices[0].  A turn whose calls depend on that must not pass.
    """
    seen: set[int] = set()
    for choice in choices:
        index = choice.get("index") if isinstance(choice, dict) else None
        if _is_index(index):
            if index in seen:
                yield WireProblem(pos, UNEXPECTED_EVENT, f"choice {index} appears twice in one chunk: SDKs read such a "
                                  "chunk differently (the Vercel AI SDK takes only the first entry)", index)
                return
            seen.add(index)

# Delta members that are tool-related and handled (or harmless when null); any other member
# whose name mentions a tool or function is a tool shape this tool cannot read.
_KNOWN_TOOL_KEYS = frozenset({"tool_calls", "function_call", "tool_call_id", "executed_tools"})
# A delta of only these members has nothing for ChatNormalizer._delta to report (its tool_calls are read apart).
# the members of a delta ChatNormalizer._delta has nothing to say about ("index": which message of the reply the
# delta is for, mistralai/client/models/deltamessage.py; some gateways behind the mistral API send it)
_PLAIN_DELTA_KEYS = frozenset({"role", "content", "refusal", "tool_calls", "index"})
# Groq's hosted tools (groq/compound): delta.executed_tools entries {index, type, arguments,
# output, search_results...}.  Groq ran them; each is sent twice with one index (when it starts,
# then with its output) and counted once.  Reviewed `type` -> hosted name; other types, which no
# recording shows yet, stay unsupported_event.
_GROQ_EXECUTED_TOOLS = MappingProxyType({"search": "web_search"})
_GROQ_EXECUTED_MEMBERS = MappingProxyType({"index": int, "type": str, "name": str, "arguments": str, "output": str,
                                           "search_results": dict, "code_results": list, "browser_results": list})
# A restated finish (OpenRouter, and resellers of its format, send the finish chunk again with
# usage and native_finish_reason): the choice members such a chunk may hold.  Its delta may hold
# a role and members that say nothing (null, "", [] or {}); logprobs must be null.
_RESTATED_FINISH_MEMBERS = frozenset({"index", "delta", "finish_reason", "native_finish_reason", "logprobs"})
_NOTHING = (None, "", [], {})


def _chat_choice_says_nothing(choice: dict) -> bool:
    """A choice entry that carries no content, no tool data and no snapshot: only its finish and metadata."""
    if not _RESTATED_FINISH_MEMBERS.issuperset(choice) or choice.get("logprobs") is not None:
        return False
    delta = choice.get("delta")
    if delta is None:
        return True
    return isinstance(delta, dict) and all(key == "role" or value in _NOTHING for key, value in delta.items())


def _groq_entry_problem(entry: Any) -> str | None:
    """Why an executed_tools entry is not a reviewed hosted tool use; None when it is one."""
    if not isinstance(entry, dict):
        return f"is {_describe(entry)}, not an object"
    unknown = [key for key in entry if key not in _GROQ_EXECUTED_MEMBERS]
    if unknown:
        return f"has the member {_token(unknown[0])}, which is not reviewed"
    for key, value in entry.items():
        kind = _GROQ_EXECUTED_MEMBERS[key]
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"has {key} {_describe(value)}, not {kind.__name__}"
    if not _is_index(entry.get("index")):
        return f"has index {_describe(entry.get('index'))}, not a non-negative integer"
    if entry.get("type") not in _GROQ_EXECUTED_TOOLS:
        return (f"has type {_token(entry.get('type'))}, which is not a reviewed hosted tool "
                f"(reviewed: {', '.join(_GROQ_EXECUTED_TOOLS)})")
    return None


def _chat_read_entry(entry: Any, mistral: bool) -> tuple[tuple[str, int | None] | None, tuple | None]:
    """One tool_calls entry on its own: ((what is wrong, its slot), None) for a shape that is not
    reviewed (unsupported_event), or (None, (index, slot, member, type, id, name, text))."""
    if not isinstance(entry, dict):
        return (f"tool_calls entry is {_describe(entry)}, not an object", None), None
    index = entry.get("index")
    slot = index if _is_index(index) else None
    kind = entry.get("type")
    # A custom tool (free-form text input: {"type": "custom", "custom": {"name", "input"}}) on the
    # openai profile; a function call everywhere else.  One entry never carries both shapes.
    member = "custom" if entry.get("custom") is not None or kind == "custom" else "function"
    if kind not in (None, member) or (member == "custom" and (mistral or entry.get("function") is not None)):
        return (f"tool call type {_token(kind)} with a {member} member is not a reviewed tool-call shape",
                slot), None
    function = entry.get(member)
    if function is not None and not isinstance(function, dict):
        return (f"tool call {member} is {_describe(function)}, not an object", slot), None
    function = function or {}
    text_key = "arguments" if member == "function" else "input"
    ok_id, call_id = _optional_str(entry, "id")
    ok_name, name = _optional_str(function, "name")
    ok_args, arguments = _optional_str(function, text_key)
    if not (ok_id and ok_name):
        return (f"tool call id and {member}.name must be strings or null", slot), None
    if not ok_args:
        return (f"{member}.{text_key} must be a string or null, got {_describe(function.get(text_key))}", slot), None
    return None, (index, slot, member, kind, call_id, name, arguments)


# mistralai's stream models (mistralai/client/models/: completionevent.py CompletionEvent, completionchunk.py
# CompletionChunk, completionresponsestreamchoice.py CompletionResponseStreamChoice, deltamessage.py DeltaMessage,
# toolcall.py ToolCall, functioncall.py FunctionCall) serialise through a Python model_serializer(mode="wrap") per
# model (serialize_model, about 18 us a chunk).  What it changes in the dump of the fields set (exclude_unset): the
# declared fields in their declared order, no alias; a set field whose value is None is left out where the model
# lists it optional and not nullable (the third entry below); a value equal to mistralai/client/types/basemodel.py's
# UNSET_SENTINEL is left out; an unset field that is not optional is written as null.  So a model of these classes
# that holds only strings, ints, None and such models (lists of them where the field is a list) is dumped here from
# its attributes, to the dict the serializer gives; anything else (another class, its fields otherwise declared, an
# alias, an excluded field, a field serializer, a model serializer other than that wrap one, an extra member, a
# required field unset, another value type, the sentinel) declines, and the object is dumped by pydantic (_sdk_dump).
_MISTRALAI_SENTINEL = "~?~unset~?~sentinel~?~"
_MISTRALAI_MODELS: dict[str, tuple[tuple[str, ...], frozenset, frozenset]] = {
    # class name: (declared fields in order, required fields, fields left out when None)
    "CompletionEvent": (("data",), frozenset({"data"}), frozenset()),
    "CompletionChunk": (("id", "model", "choices", "object", "created", "usage"), frozenset({"id", "model", "choices"}),
                        frozenset({"object", "created", "usage"})),
    "CompletionResponseStreamChoice": (("index", "delta", "finish_reason", "logprobs", "prompt_logprobs"),
                                       frozenset({"index", "delta", "finish_reason"}), frozenset()),
    "DeltaMessage": (("role", "content", "tool_calls", "tool_call_id", "index", "metadata"), frozenset(), frozenset()),
    "ToolCall": (("function", "id", "type", "index"), frozenset({"function"}), frozenset({"id", "type", "index"})),
    "FunctionCall": (("name", "arguments"), frozenset({"name", "arguments"}), frozenset()),
}
# models nested in those that are dumped by their own serializer (its wrap serializer, given the same arguments as the
# chunk's: what the chunk's dump writes for them; about 3 us instead of the chunk's 18)
_MISTRALAI_SERIALIZED = frozenset({"UsageInfo"})
_MISTRALAI_DUMPED = ((), frozenset(), frozenset(), frozenset())   # the entry of such a class
_MISTRALAI_CLASSES: dict[type, Any] = {}   # class -> its entry above, or None: asked once per class (bounded below)


def _mistralai_model(cls: type) -> tuple[tuple[str, ...], frozenset, frozenset, frozenset] | None:
    """(declared fields, the same as a set, required, left out when None): the entry of _MISTRALAI_MODELS for a
    class of mistralai's (its module, name and declared fields, none aliased, as that entry says);
    _MISTRALAI_DUMPED for one of _MISTRALAI_SERIALIZED; else None."""
    try:
        return _MISTRALAI_CLASSES[cls]
    except KeyError:
        pass
    name = getattr(cls, "__name__", None)
    entry = _MISTRALAI_MODELS.get(name)
    try:
        theirs = str(getattr(cls, "__module__", "")).startswith("mistralai.")
        fields = getattr(cls, "model_fields", None)
        if name in _MISTRALAI_SERIALIZED:
            serialized = theirs and getattr(cls, "__pydantic_serializer__", None) is not None
            entry = _MISTRALAI_DUMPED if serialized else None
        elif (entry is None or not theirs or type(fields) is not dict or tuple(fields) != entry[0]
                or any(f.alias is not None or f.serialization_alias is not None or f.exclude for f in fields.values())
                or cls.__pydantic_decorators__.field_serializers or cls.__pydantic_decorators__.computed_fields
                or any(d.info.mode != "wrap" for d in cls.__pydantic_decorators__.model_serializers.values())):
            entry = None
        else:
            entry = (entry[0], frozenset(entry[0])) + entry[1:]
    except Exception:   # noqa: BLE001 - a class that will not say: not one of these
        entry = None
    if len(_MISTRALAI_CLASSES) < 256:
        _MISTRALAI_CLASSES[cls] = entry
    return entry


class _NotPlain(Exception):
    """An SDK's model a room's reader of plain models does not read (_mistralai_dump, _cohere_dump): the SDK's
    dump is taken instead."""


def _mistralai_dump(model: Any) -> dict:
    """The dict mistralai's serializer gives for a model of _MISTRALAI_MODELS holding only plain members
    (model_dump(mode="json", by_alias=True, exclude_unset=True)), read from its attributes; _NotPlain else."""
    cls = type(model)
    entry = _MISTRALAI_CLASSES[cls] if cls in _MISTRALAI_CLASSES else _mistralai_model(cls)
    if entry is None:
        raise _NotPlain
    if entry is _MISTRALAI_DUMPED:
        dump = cls.__pydantic_serializer__.to_python(model, mode="json", by_alias=True, exclude_unset=True,
                                                     warnings=False)
        if type(dump) is not dict:
            raise _NotPlain
        return dump
    fields, known, required, dropped = entry
    sent = model.__pydantic_fields_set__
    if model.__pydantic_extra__ or not required <= sent or not sent <= known:
        raise _NotPlain
    values = model.__dict__
    out = {}
    for name in fields:
        if name in sent:
            value = values[name]
            kind = type(value)
            if kind is str:
                if value == _MISTRALAI_SENTINEL:
                    raise _NotPlain
            elif kind is list:
                value = [_mistralai_dump(item) for item in value]
            elif value is None:
                if name in dropped:
                    continue
            elif kind is not int:
                value = _mistralai_dump(value)
            out[name] = value
    return out


def _mistralai_event_data(item: Any) -> Any:
    """The chunk model a mistralai CompletionEvent holds (its only member, data), else the item itself."""
    entry = _mistralai_model(type(item))
    if (entry is not None and entry[0] == ("data",) and not item.__pydantic_extra__
            and "data" in item.__pydantic_fields_set__):
        return item.__dict__["data"]
    return item


def _sole_object(items: Any) -> dict | None:
    """The one object of a list holding one object and nothing else, else None."""
    return items[0] if type(items) is list and len(items) == 1 and type(items[0]) is dict else None


def _indexed(entry: Any, member: str) -> tuple[int, dict] | tuple[None, None]:
    """(entry["index"], entry[member]) when the index is a plain non-negative int and the member an
    object, else (None, None); KeyError when entry lacks either."""
    if entry is None:
        return None, None
    index, value = entry["index"], entry[member]
    return (index, value) if type(index) is int and index >= 0 and type(value) is dict else (None, None)


class ChatNormalizer:
    """Translate chat-completion chunks into neutral events, one chunk at a time.

    Works on the raw wire JSON: SDK objects fill in defaults that would hide
    exactly the quirks this tool exists to catch.
    """

    def __init__(self, mistral: bool) -> None:
        self.mistral = mistral
        self.next_free: dict[int, int] = {}  # mistral whole calls: next slot per choice
        self.whole: set[SlotKey] = set()     # slots that arrived as one complete call
        self.typed = False                   # a chunk said "object": "chat.completion.chunk"
        self.untyped: int | None = None      # first tool chunk without "object", while none was typed
        self.finished: set[int] = set()      # choices whose finish_reason arrived
        self.stirred: set[int] = set()       # ... and that carried something after it
        self.restated: set[int] = set()      # ... and whose finish a bare usage chunk restated
        self.restated_at = -1                # position of the latest such chunk
        self.executed: dict[SlotKey, str] = {}   # (choice, index) of a Groq executed tool -> its type

    def translate(self, pos: int, chunk: Any) -> Iterator[NeutralEvent]:
        if not isinstance(chunk, dict):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"chunk is {_describe(chunk)}, not an object")
            return
        if "error" in chunk or chunk.get("object") == "error":
            yield WireProblem(pos, STREAM_ERROR, "the provider sent an error object instead of a chunk")
            return
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"chunk has no \"choices\" list (got {_describe(choices)})")
            return
        kind = chunk.get("object")   # null reads as absent (openai-python's model_dump() writes it so)
        if kind != _CHUNK_OBJECT or not self.typed:  # the common chunk needs no look
            yield from self._object(pos, kind, choices)
        if len(choices) > 1:
            yield from _chat_repeated_choices(pos, choices)
        # a restated finish comes alone in its chunk, with the usage it adds
        restating = len(choices) == 1 and isinstance(chunk.get("usage"), dict)
        for choice in choices:
            yield from self._choice(pos, choice, restating)

    def plain_fragment(self, chunk: Any) -> tuple[SlotKey, str, str] | None:
        """(slot key, text, FUNCTION) when the chunk only adds arguments text to a call already
        begun: one choice, not finished, whose delta holds one tool_calls entry with no id and no
        name, of a chunk that says what every chunk before it said about "object".

        Such chunks are nearly every chunk of a long stream.  This answers the question
        without building events and changes no state; translate() would emit exactly
        Fragment(pos, key, None or "", None or "", text, FUNCTION) for it.  None is always a
        safe answer: the gate then takes the general path.
        """
        if type(chunk) is not dict or "error" in chunk:
            return None
        kind = chunk.get("object")
        if not (kind == _CHUNK_OBJECT if self.typed else kind is None and self.untyped is not None):
            return None   # _object would have something to say, or to note
        try:  # subscripts, not get(): this runs for nearly every chunk
            choice = _sole_object(chunk["choices"])
            cidx, delta = _indexed(choice, "delta")
            entry = _sole_object(delta["tool_calls"])
            index, function = _indexed(entry, "function")
            text = function["arguments"]
        except (KeyError, TypeError):   # TypeError: a member that is not there, as None, subscripted
            return None
        if (type(text) is not str or entry.get("id") not in (None, "") or function.get("name") not in (None, "")
                or entry.get("type") not in (None, FUNCTION) or entry.get("custom") is not None
                or not _PLAIN_DELTA_KEYS.issuperset(delta) or choice.get("finish_reason") not in (None, "")
                or "message" in choice or cidx in self.finished or (cidx, index) in self.whole
                or self.next_free.get(cidx, 0) <= index):
            return None
        return (cidx, index), text, FUNCTION

    def plain_object(self, chunk: Any, pos: int) -> tuple[SlotKey, str, str] | None:
        """plain_fragment() of an SDK's chunk object at position pos (openai-python's ChatCompletionChunk, built by
        construct_type: the wire's values, fields set to the members sent), read from its attributes instead of its
        dump: the answer the dump would get, or None (always safe: the gate then dumps it)."""
        try:
            return self._plain_object(_mistralai_event_data(chunk) if self.mistral else chunk)
        except Exception:   # noqa: BLE001 - not such a model, or a value that will not compare: the dump decides
            return None

    def _plain_object(self, chunk: Any) -> tuple[SlotKey, str, str] | None:
        # Each model's declared fields (its fields set and values; pydantic keeps other members apart, as extras):
        # a member the dict path looks at that is an extra of the chunk or choice, or any extra below, declines.  Fields
        # are named as on the wire in openai-python's and mistralai's chunk models (no alias), which this assumes.
        sent, values, extra = chunk.__pydantic_fields_set__, chunk.__dict__, chunk.__pydantic_extra__
        kind = values["object"] if "object" in sent else None
        if (extra and ("error" in extra or "object" in extra) or "error" in sent or "choices" not in sent
                or not (kind == _CHUNK_OBJECT if self.typed else kind is None and self.untyped is not None)):
            return None
        choices = values["choices"]
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        sent, values, extra = choice.__pydantic_fields_set__, choice.__dict__, choice.__pydantic_extra__
        if (extra and ("message" in extra or "finish_reason" in extra) or "message" in sent or "index" not in sent
                or "delta" not in sent
                or "finish_reason" in sent and values["finish_reason"] not in (None, "")):
            return None
        cidx, delta = values["index"], values["delta"]
        sent, values, extra = delta.__pydantic_fields_set__, delta.__dict__, delta.__pydantic_extra__
        if (type(cidx) is not int or cidx < 0 or extra or not _PLAIN_DELTA_KEYS.issuperset(sent)
                or "tool_calls" not in sent):
            return None
        calls = values["tool_calls"]
        if type(calls) is not list or len(calls) != 1:
            return None
        entry = calls[0]
        sent, values, extra = entry.__pydantic_fields_set__, entry.__dict__, entry.__pydantic_extra__
        if ("index" not in sent or "function" not in sent or extra or "custom" in sent
                or "id" in sent and values["id"] not in (None, "")
                or "type" in sent and values["type"] not in (None, FUNCTION)):
            return None
        index, function = values["index"], values["function"]
        sent, values = function.__pydantic_fields_set__, function.__dict__
        if (type(index) is not int or index < 0 or function.__pydantic_extra__ or "arguments" not in sent
                or type(values["arguments"]) is not str
                or "name" in sent and values["name"] not in (None, "")
                or cidx in self.finished or (cidx, index) in self.whole or self.next_free.get(cidx, 0) <= index):
            return None
        return (cidx, index), values["arguments"], FUNCTION

    def _object(self, pos: int, kind: Any, choices: list) -> Iterator[NeutralEvent]:
        """openai-python's stream helper drops every chunk whose object is not "chat.completion.chunk".

        A tool chunk it would drop while it keeps others means the application
        runs other fragments than the ones checked here.  A stream where no chunk
        says "object" at all loses every call in that helper, so nothing runs.
        """
        typed = kind == _CHUNK_OBJECT
        if typed and not self.typed:
            self.typed = True
            if self.untyped is not None:
                yield WireProblem(self.untyped, UNEXPECTED_EVENT, _UNTYPED_CHUNK)
        if typed or not _chat_tool_data(choices):
            return
        if kind is None:
            if self.typed:
                yield WireProblem(pos, UNEXPECTED_EVENT, _UNTYPED_CHUNK)
            elif self.untyped is None:
                self.untyped = pos
            return
        yield WireProblem(pos, UNEXPECTED_EVENT, f"a chunk with tool-call data has \"object\" {_token(kind)}, not "
                          "\"chat.completion.chunk\": openai-python's stream helper drops it and would run the call "
                          "without its fragments")

    def _choice(self, pos: int, choice: Any, restating: bool = False) -> Iterator[NeutralEvent]:
        if not isinstance(choice, dict):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"choice is {_describe(choice)}, not an object")
            return
        cidx = choice.get("index")
        if not _is_index(cidx):
            yield WireProblem(pos, MISSING_INDEX, f"choice index must be a non-negative integer, got {_describe(cidx)}")
            return
        delta = choice.get("delta")
        if delta is not None and not isinstance(delta, dict):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"delta is {_describe(delta)}, not an object", cidx)
        elif isinstance(delta, dict):
            if not _PLAIN_DELTA_KEYS.issuperset(delta):   # the usual delta has nothing for _delta to say
                yield from self._delta(pos, cidx, delta)
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for entry in calls:
                    yield from self._tool_entry(pos, cidx, entry)
            elif calls is not None:
                yield WireProblem(pos, UNSUPPORTED_EVENT, f"delta.tool_calls is {_describe(calls)}, not a list", cidx)
        message = choice.get("message")
        if isinstance(message, dict) and message.get("tool_calls"):
            yield SnapshotCall(pos, cidx)  # some gateways repeat a snapshot; a call only there is not streamed
        if cidx in self.finished or choice.get("finish_reason") not in (None, ""):
            yield from self._finish_reason(pos, cidx, choice, restating)

    def _delta(self, pos: int, cidx: int, delta: dict) -> Iterator[NeutralEvent]:
        """A choice's delta, but its tool_calls (_choice reads them after this): Groq's executed tools, and
        tool-like members it does not read."""
        if delta.get("function_call") is not None:
            yield WireProblem(pos, UNSUPPORTED_EVENT, "legacy delta.function_call is not supported; "
                              "use tool_calls", cidx)
        for key in delta:
            if key not in _KNOWN_TOOL_KEYS and ("tool" in key or "function" in key) and delta[key] is not None:
                yield WireProblem(pos, UNSUPPORTED_EVENT, f"delta member {_token(key)} looks like a tool call "
                                  "in a shape this tool does not translate", cidx)
        if delta.get("executed_tools") is not None:
            yield from self._executed_tools(pos, cidx, delta["executed_tools"])

    def _finish_reason(self, pos: int, cidx: int, choice: dict, restating: bool) -> Iterator[NeutralEvent]:
        """A choice's finish_reason ends it; what follows a finish is for _after_finish."""
        reason = choice.get("finish_reason")
        finished = reason is not None and reason != ""
        if cidx in self.finished:
            yield from self._after_finish(pos, cidx, choice, finished and restating)
        if not finished:
            return
        if not isinstance(reason, str):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"finish_reason is {_describe(reason)}, not a string", cidx)
            return
        bare = cidx in self.restated and pos == self.restated_at
        self.finished.add(cidx)
        yield ChoiceEnd(pos, cidx, reason, bare)

    def _after_finish(self, pos: int, cidx: int, choice: dict, restating: bool) -> Iterator[NeutralEvent]:
        """A choice entry after the choice's finish: nothing, a restated finish, or something late.

        A finish restated once by a chunk that only adds usage, with nothing of the
        choice between, is marked bare (the machine accepts it when the reason is the
        same).  Content after a restated finish is late; tool data after any finish is
        the machine's delta_after_terminal.
        """
        if _chat_choice_says_nothing(choice):
            if restating and cidx not in self.stirred and cidx not in self.restated:
                self.restated.add(cidx)
                self.restated_at = pos
            return
        self.stirred.add(cidx)
        delta = choice.get("delta")
        if cidx in self.restated and not (isinstance(delta, dict) and delta.get("tool_calls")):
            yield WireProblem(pos, DELTA_AFTER_TERMINAL, f"choice {cidx} carries content after it restated its "
                              "finish_reason (only usage chunks may follow)", cidx)

    def _executed_tools(self, pos: int, cidx: int, entries: Any) -> Iterator[NeutralEvent]:
        """Groq's executed_tools: hosted uses, counted once per index; never calls."""
        if not isinstance(entries, list):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"delta.executed_tools is {_describe(entries)}, not a list", cidx)
            return
        for entry in entries:
            problem = _groq_entry_problem(entry)
            if problem is not None:
                yield WireProblem(pos, UNSUPPORTED_EVENT, f"an executed_tools entry {problem}", cidx)
                continue
            kind = entry["type"]
            key = (cidx, entry["index"])
            seen = self.executed.get(key)
            if seen is None:
                self.executed[key] = kind
                yield HostedUse(pos, _GROQ_EXECUTED_TOOLS[kind])
            elif seen != kind:
                yield WireProblem(pos, UNEXPECTED_EVENT, f"executed tool {entry['index']} of choice {cidx} was a "
                                  f"{_token(seen)} and is now a {_token(kind)}", cidx)

    def _tool_entry(self, pos: int, cidx: int, entry: Any) -> Iterator[NeutralEvent]:
        wrong, read = _chat_read_entry(entry, self.mistral)
        if wrong is not None:
            yield WireProblem(pos, UNSUPPORTED_EVENT, wrong[0], cidx, wrong[1])
            return
        index, slot, member, kind, call_id, name, arguments = read
        whole = (slot is None and index is None and self.mistral and bool(call_id and name)
                 and isinstance(arguments, str))
        if whole:
            slot = self.next_free.get(cidx, 0)
        if slot is None:
            if index is None:
                why = "has no index" + (" and is not a whole call (id, name and arguments)" if self.mistral else "")
            else:
                why = f"has index {_describe(index)}, not a non-negative integer"
            yield WireProblem(pos, MISSING_INDEX, f"tool_calls entry {why}", cidx)
            return
        if (cidx, slot) in self.whole:
            yield WireProblem(pos, UNEXPECTED_EVENT, f"a fragment for slot {cidx}/{slot}, which arrived as one "
                              "complete call", cidx, slot)
            return
        if whole:
            self.whole.add((cidx, slot))
        self.next_free[cidx] = max(self.next_free.get(cidx, 0), slot + 1)
        stated = entry.get("function") is not None or kind == "function"
        yield Fragment(pos, (cidx, slot), call_id, name, arguments,
                       CUSTOM if member == "custom" else FUNCTION if stated else None)


# --- its request, redaction, capture rules and its Profile row ---------------


def _chat_tool_ref(entry: Any, where: str) -> tuple[str, str]:
    """(name, kind) of {"type": "function", "function": {"name"}} (or "custom")."""
    body = _request_members(entry, where, ("type", "function", "custom"))
    kind = body.get("type")
    if kind not in ("function", "custom") or not isinstance(body.get(kind), dict):
        raise RequestError(f"{where} must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}} "
                           "or the custom equivalent")
    return _request_name(body[kind].get("name"), f"{where}.{kind}.name"), kind


def _choice_chat(choice: Any, mistral: bool = False) -> dict:
    """OpenAI (and Mistral) chat completions tool_choice."""
    words = ("none", "auto", "required", "any") if mistral else ("none", "auto", "required")
    if isinstance(choice, str):
        if choice not in words:
            raise RequestError(f"tool_choice {_token(choice)} is not one of {', '.join(words)}")
        return {"none": choice == "none"}
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "allowed_tools":
        body = _request_members(choice, "tool_choice", ("type", "allowed_tools"))
        inner = _request_members(body.get("allowed_tools"), "tool_choice.allowed_tools", ("mode", "tools"))
        if inner.get("mode") not in ("auto", "required") or not isinstance(inner.get("tools"), list):
            raise RequestError("tool_choice.allowed_tools needs mode auto or required and a tools list")
        return _restricted([_chat_tool_ref(t, f"tool_choice.allowed_tools.tools[{n}]")[0]
                            for n, t in enumerate(inner["tools"])])
    return _forced(*_chat_tool_ref(choice, "tool_choice"))


# Chat deltas and messages: every member but these is text-like and neutralised.
_CHAT_DELTA_KEEP = frozenset({"role", "tool_calls", "function_call"})
# Members of a tool_calls entry kept byte for byte; others (Gemini's extra_content
# with its thought signature) are neutralised.
_CHAT_CALL_KEEP = frozenset({"index", "id", "type", "function", "custom"})
# Members of a chat chunk, and of its choices, kept as they are (numbers and protocol words); every
# other member keeps only its shape.
_CHAT_TOP_KEEP = frozenset({"id", "object", "created", "model", "service_tier"})
_CHAT_CHOICE_KEEP = frozenset({"index", "finish_reason", "native_finish_reason"})


def _redact_chat_body(body: Any) -> Any:
    """A delta or message: everything but role and tool calls is text-like."""
    if not isinstance(body, dict):
        return body
    out = {}
    for key, item in body.items():
        if key == "tool_calls" and isinstance(item, list):
            out[key] = [{k: (v if k in _CHAT_CALL_KEEP else _neutral(v)) for k, v in entry.items()}
                        if isinstance(entry, dict) else entry for entry in item]
        else:
            out[key] = item if key in _CHAT_DELTA_KEEP else _neutral(item)
    return out


def _redact_chat_chunk(chunk: dict) -> dict:
    """An allow-list: of a chat chunk the members the rules read, or that name the chunk, stay as they
    are (_CHAT_TOP_KEEP, _CHAT_CHOICE_KEEP); a delta or message keeps its role and calls; everything
    else (content, reasoning, refusal, logprobs, system_fingerprint, an error's text, members not
    reviewed) keeps only its shape (_neutral)."""
    out = {key: (item if key in _CHAT_TOP_KEEP else _neutral(item)) for key, item in chunk.items()}
    if isinstance(chunk.get("choices"), list):
        choices = []
        for choice in chunk["choices"]:
            if isinstance(choice, dict):
                choice = {key: (_redact_chat_body(item) if key in ("delta", "message")
                                else item if key in _CHAT_CHOICE_KEEP else _neutral(item))
                          for key, item in choice.items()}
            choices.append(choice)
        out["choices"] = choices
    return out


def _chat_protected(payload: dict) -> dict[tuple, str]:
    """Chat completions: a tool call entry's id and function are kept; its arguments are fragments."""
    paths: dict[tuple, str] = {}
    choices = payload.get("choices")
    for c, choice in enumerate(choices if isinstance(choices, list) else []):
        for body_key in ("delta", "message"):
            body = choice.get(body_key) if isinstance(choice, dict) else None
            if not isinstance(body, dict):
                continue
            calls = body.get("tool_calls")
            for n, entry in enumerate(calls if isinstance(calls, list) else []):
                where = ("choices", c, body_key, "tool_calls", n)
                paths[where + ("id",)] = "warn"
                paths[where + ("function",)] = "warn"
                paths[where + ("custom",)] = "warn"
                paths[where + ("function", "arguments")] = "fragment"
            paths[("choices", c, body_key, "function_call")] = "warn"
    return paths


def _chat_fragment_key(payload: dict, path: tuple) -> tuple | None:
    choice = payload["choices"][path[1]]
    entry = choice[path[2]]["tool_calls"][path[4]]
    if _is_index(choice.get("index")) and _is_index(entry.get("index")):
        return (choice["index"], entry["index"])
    return None


def _adapter_openai_calls(message: dict, where: str = "message") -> list[dict]:
    """tool_calls of one OpenAI assistant message."""
    if message.get("function_call") is not None:
        raise CaptureError(f"{where}.function_call: the legacy function_call is not compared; use tool_calls")
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise CaptureError(f"{where}.tool_calls is {_describe(calls)}, not a list")
    out = []
    for n, entry in enumerate(calls):
        at = f"{where}.tool_calls[{n}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("function"), dict):
            raise CaptureError(f"{at} is not a function tool call ({{id, function: {{name, arguments}}}})")
        if entry.get("type") not in (None, "function"):
            raise CaptureError(f"{at}: type {_describe(entry.get('type'))} is not compared; only function calls")
        function = entry["function"]
        out.append(_adapter_call(at, entry.get("id"), function.get("name"), function.get("arguments")))
    return out


def _adapter_completion(doc: dict) -> list[dict]:
    """The tool calls of a final chat completion: the one choice that carries any."""
    choices = doc["choices"]
    if not isinstance(choices, list):
        raise CaptureError(f"choices is {_describe(choices)}, not a list")
    found: list[list[dict]] = []
    for n, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise CaptureError(f"choices[{n}] has no message object")
        calls = _adapter_openai_calls(message, f"choices[{n}].message")
        if calls:
            found.append(calls)
    if len(found) > 1:
        raise CaptureError("tool calls in more than one choice; compare one choice at a time")
    return found[0] if found else []


def _chat_final_reader(doc: dict) -> Callable[[dict], list[dict]] | None:
    """The reader of a final chat completion or of one assistant message; None: neither."""
    if "choices" in doc:
        return _adapter_completion
    if "tool_calls" in doc or (doc.get("role") == "assistant" and not isinstance(doc.get("content"), list)):
        return _adapter_openai_calls
    return None


# SDK objects (WireRules.sdk_item).  openai-python's ChatCompletionChunk (openai/types/chat/
# chat_completion_chunk.py) is built by construct_type (openai/_models.py) without validation, but every member
# typed Optional is first tried through pydantic's lax validation (construct_type's union branch): a tool_calls
# entry's index "0", 0.0 or true becomes 0, so those three blocked wire streams pass when read from the objects
# (openai-python would run them so too).  Members it does not know are kept (extra="allow").
# mistralai's CompletionEvent (mistralai/client/models/completionevent.py) holds the chunk as `data`; its models
# are validated (pydantic's default extra="ignore": an unknown member is dropped) and their serializers
# (completionchunk.py, toolcall.py serialize_model) write the defaults they invent (a tool call's id "null",
# type "function", index 0) unless exclude_unset leaves them out, as the generic reader does.


def _mistral_sdk_item(item: Any, normalizer: Any, pos: int) -> Any:
    """A chunk object (openai-python, or mistralai's CompletionChunk), or mistralai's CompletionEvent: its data.
    mistralai's models holding only plain members are read from their attributes (_mistralai_dump)."""
    try:
        payload = _mistralai_dump(item)
    except Exception:   # noqa: BLE001 - _NotPlain, or an attribute that is not there: the serializer decides
        payload = _sdk_dump(item)
    if type(payload) is dict and len(payload) == 1 and type(payload.get("data")) is dict:
        return payload["data"]
    return payload


def _chat_claims(payload: dict) -> bool:
    return "choices" in payload


def _chat_stream_error(payload: dict) -> bool:
    return "error" in payload or payload.get("object") == "error"   # "object": "error": Mistral's


def _chat_whole_response(payload: dict) -> str | None:
    if payload.get("object") == "chat.completion":
        return "a non-streaming chat completion (\"object\": \"chat.completion\"); capture the stream=true response"
    return None


def _chat_custom_names(choice: Any) -> set:
    """The names a chat tool_choice forces or allows as custom tools (their tools are custom tools)."""
    if not isinstance(choice, dict):
        return set()
    refs = choice.get("allowed_tools", {}).get("tools", []) if choice.get("type") == "allowed_tools" else [choice]
    return {ref["custom"]["name"] for ref in refs if isinstance(ref, dict) and ref.get("type") == "custom"}


def _chat_request_body(model: str, schemas: dict, request: dict) -> dict:
    """A chat completions request: the offered tools (a tool the choice names as custom is a custom tool),
    tool_choice and parallel_tool_calls as the fixture's request gives them."""
    body: dict[str, Any] = {"model": model, "stream": True, "messages": [{"role": "user", "content": REQUEST_PROMPT}]}
    custom = _chat_custom_names(request.get("tool_choice"))
    tools = [{"type": "custom", "custom": {"name": name}} if name in custom else
             {"type": "function", "function": {"name": name, "parameters": schema}} for name, schema in schemas.items()]
    if tools:
        body["tools"] = tools
    return dict(body, **_request_controls(request, ("tool_choice", "parallel_tool_calls")))


def _chat_frame(stream: list, query: str) -> tuple[str, bytes]:
    """Chat completions streams: data lines, then data: [DONE]."""
    return "text/event-stream", sse_body(stream, named=False, done=True)


def _chat_cut_frame(stream: list, query: str) -> tuple[str, bytes]:
    """A chat stream cut off: its data lines without data: [DONE]."""
    return "text/event-stream", sse_body(stream, named=False, done=False)


# OpenAI's errors before a stream (Chat Completions and Responses alike): {"error": {"message", "type",
# "param", "code"}}, as https://platform.openai.com/docs/guides/error-codes lists them and openai-python's
# _exceptions.py reads them (RateLimitError on 429, InternalServerError on 500 and 503); a 429 carries
# the rate-limit headers, and retry-after, which openai-python's retry waits for.
_OPENAI_ERRORS = (
    http_error("rate_limit", 429, {"error": {
        "message": "Rate limit reached for gpt-4.1-mini in organization org-vts on requests per min (RPM): "
                   "Limit 3, Used 3, Requested 1. Please try again in 1s.",
        "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
        (("retry-after", "1"), ("x-ratelimit-limit-requests", "3"), ("x-ratelimit-remaining-requests", "0"),
         ("x-ratelimit-reset-requests", "1s"), ("x-request-id", "req_vts_rate_limit"))),
    http_error("server_error", 500, {"error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error", "param": None, "code": None}}, (("x-request-id", "req_vts_server_error"),)),
    http_error("overloaded", 503, {"error": {
        "message": "The engine is currently overloaded, please try again later",
        "type": "server_error", "param": None, "code": None}}, (("x-request-id", "req_vts_overloaded"),)),
)
# Mistral's 429, as recorded in cline/cline#9085 and raycast/extensions#31107 (the older gateway body,
# {"message": "Requests rate limit exceeded"}, is in pydantic/pydantic-ai#1885).
_MISTRAL_ERRORS = (
    http_error("rate_limit", 429, {"object": "error", "message": "Rate limit exceeded", "type": "rate_limited",
                                   "param": None, "code": "1300"}),
)


OPENAI = Profile(
    name="openai", stream_key="chunks",
    rules=TurnRules(tool_reason="tool_calls", per_choice_terminal=True, contiguous_slots=True, implicit_open=True,
                    stop_name="finish_reason", forced_reason="stop", names_concatenate=True),
    wire=WireRules(normalizer=lambda limits: ChatNormalizer(mistral=False), protected_paths=_chat_protected,
                   fragment_key=_chat_fragment_key, final_reader=_chat_final_reader),
    request=RequestRules(choice=_choice_chat, parallel_field=True, tool_entry=_function_entry),
    capture=CaptureRules(family="chat", claims=_chat_claims, redact=_redact_chat_chunk, warn_without_done=True,
                         stream_error=_chat_stream_error, whole_response=_chat_whole_response),
    http=HttpRules(api_path=r"/v1/chat/completions", frame=_chat_frame, api_example="/v1/chat/completions",
                   tools_shape=_function_tools, request_body=functools.partial(_chat_request_body, "gpt-4o"),
                   errors=_OPENAI_ERRORS, cut_frame=_chat_cut_frame, framings=SERVE_FRAMINGS))


MISTRAL = Profile(
    name="mistral", stream_key="chunks",
    rules=TurnRules(tool_reason="tool_calls", per_choice_terminal=True, contiguous_slots=True, implicit_open=True,
                    stop_name="finish_reason", names_concatenate=True),
    wire=WireRules(normalizer=lambda limits: ChatNormalizer(mistral=True), protected_paths=_chat_protected,
                   fragment_key=_chat_fragment_key, final_reader=_chat_final_reader, sdk_item=_mistral_sdk_item),
    request=RequestRules(choice=functools.partial(_choice_chat, mistral=True), parallel_field=True,
                         tool_entry=_function_entry),
    capture=CaptureRules(family="chat", claims=_chat_claims, redact=_redact_chat_chunk, warn_without_done=True,
                         stream_error=_chat_stream_error, whole_response=_chat_whole_response),
    http=HttpRules(api_path=r"/v1/chat/completions", frame=_chat_frame, api_example="/v1/chat/completions",
                   tools_shape=_function_tools,
                   request_body=functools.partial(_chat_request_body, "mistral-large-latest"),
                   errors=_MISTRAL_ERRORS, cut_frame=_chat_cut_frame, framings=SERVE_FRAMINGS))


# ---------------------------------------------------------------------------
# Provider: Anthropic Messages stream events (profile anthropic)
# ---------------------------------------------------------------------------

# Hosted (server-executed) tools, reviewed: the server runs them inside the turn and
# streams their use and result as blocks.  They are never slots and never calls.
# Server tool name -> the result block type that answers it.
_ANTHROPIC_SERVER_TOOLS = MappingProxyType({
    "web_search": "web_search_tool_result",
    "web_fetch": "web_fetch_tool_result",
    "code_execution": "code_execution_tool_result",
    "bash_code_execution": "bash_code_execution_tool_result",
    "text_editor_code_execution": "text_editor_code_execution_tool_result",
    "tool_search_tool_regex": "tool_search_tool_result",
    "tool_search_tool_bm25": "tool_search_tool_result",
    "advisor": "advisor_tool_result",
})
_ANTHROPIC_HOSTED_USES = frozenset({"server_tool_use", "mcp_tool_use"})  # input streams like tool_use
# Result block type -> the use block type whose id its tool_use_id names.  Results arrive
# whole in content_block_start and take no deltas.
_ANTHROPIC_RESULTS = MappingProxyType({
    **{result: "server_tool_use" for result in _ANTHROPIC_SERVER_TOOLS.values()},
    "mcp_tool_result": "mcp_tool_use",
})
# Stop reasons after which a hosted use may still lack its result: the server paused its
# loop and continues in the next request.
_ANTHROPIC_PAUSED = frozenset({"pause_turn"})

# Which delta types belong to which block type (every reviewed block type is a key).
_BLOCK_DELTAS = {
    "tool_use": frozenset({"input_json_delta"}),
    "text": frozenset({"text_delta", "citations_delta"}),
    "thinking": frozenset({"thinking_delta", "signature_delta"}),
    "redacted_thinking": frozenset(),
    **{use: frozenset({"input_json_delta"}) for use in _ANTHROPIC_HOSTED_USES},
    **{result: frozenset() for result in _ANTHROPIC_RESULTS},
}
_ANTHROPIC_EVENTS = frozenset({
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "ping", "error",
})


# The end of a turn as a transition table: (phase, step) -> (next phase, what is wrong or None).
# "stopped": the stop_reason came (message_delta, or a prefilled message_start); "closed":
# message_stop came, after which nothing is read ("any" event, "ping" included, is late).
_ANTHROPIC_ENDING: Mapping[tuple[str, str], tuple[str, str | None]] = MappingProxyType({
    ("running", "stop_reason"): ("stopped", None),
    ("stopped", "stop_reason"): ("stopped", None),    # a second one is the machine's duplicate_terminal
    ("running", "message_delta"): ("running", None),
    ("stopped", "message_delta"): ("stopped", None),
    ("running", "message_stop"): ("closed", None),
    ("stopped", "message_stop"): ("closed", None),
    ("running", "block"): ("running", None),
    ("stopped", "block"): ("stopped", "{event} after the turn's stop_reason"),
    ("running", "ping"): ("running", None),
    ("stopped", "ping"): ("stopped", None),
    ("closed", "ping"): ("closed", "ping after message_stop"),
    ("closed", "any"): ("closed", "{token} after message_stop"),
})


class _AnthropicState(_Record):
    """Translation state: which blocks exist, their types, whether stopped."""

    __slots__ = ("opening", "ending", "blocks", "reason", "hosted", "callers",
                 "leading_results", "ids")

    def __init__(self) -> None:
        self.opening = "new"      # see _OPENING
        self.ending = "running"   # see _ANTHROPIC_ENDING
        self.blocks: dict[int, list] = {}  # index -> [type, stopped]
        self.reason: str | None = None     # the turn's stop_reason
        self.hosted: dict[str, list] = {}  # hosted use id -> [block index, result type wanted, answered]
        self.callers: set[str] = set()     # hosted use ids that client tool_use blocks name as their caller
        self.leading_results = True        # every block so far is a result (a continued turn may open so)
        self.ids: dict[str, str] = {}      # every tool id of this turn -> what it names (a result pairs by it)


# An input_json_delta event: its tokens in the API's member order, the index and the string
# left open (None).  A run of them for one block is read at once (fragment_run), whatever
# JSON whitespace separates the tokens (capture writes the envelope indented).
_ANTHROPIC_DELTA_TOKENS = ("{", '"type"', ":", '"content_block_delta"', ",", '"index"', ":", None, ",", '"delta"', ":",
                           "{", '"type"', ":", '"input_json_delta"', ",", '"partial_json"', ":", None, "}", "}")
_RUN_ITEMS = 4096  # events read at once at most
_ANTHROPIC_SSE_DELTA = "event: content_block_delta\ndata: "   # an SSE body's delta event, up to its data


@functools.lru_cache(maxsize=1)
def _anthropic_delta_patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """Patterns of an input_json_delta event's text, any JSON whitespace between tokens:
    (from its start to its string's opening quote, with the index as group 1; from the
    string's closing quote to the event's end; a comma between two items).

    Compiled on first use: a short capture never needs them.
    """
    gap = r"[ \t\n\r]*"
    cut = _ANTHROPIC_DELTA_TOKENS.index(None, 8)
    head = gap.join(re.escape(token) if token is not None else "(0|[1-9][0-9]{0,17})"
                    for token in _ANTHROPIC_DELTA_TOKENS[:cut]) + gap + '"'
    tail = '"' + gap + gap.join(map(re.escape, _ANTHROPIC_DELTA_TOKENS[cut + 1:]))
    return re.compile(head), re.compile(tail), re.compile(gap + "," + gap)


_json_string = json.decoder.scanstring  # the strict parser's own string reader
_encode_ascii = json.encoder.encode_basestring_ascii   # what json.dumps(ensure_ascii=True) writes for a string


def _anthropic_delta_event(index: int) -> Callable[[str], dict[str, Any]]:
    """The event an input_json_delta of block index with that text parses to."""
    def event(partial: str) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": partial}}
    return event


# the members of the Anthropic SDK's delta event and its InputJSONDelta (see _anthropic_json_delta)
_ANTHROPIC_DELTA_EVENT_FIELDS = frozenset({"delta", "index", "type"})
_ANTHROPIC_JSON_DELTA_FIELDS = frozenset({"partial_json", "type"})


class AnthropicNormalizer:
    """Translate Messages-API stream events into neutral events, one at a time."""

    def __init__(self) -> None:
        self.state = _AnthropicState()
        # the last content_block_delta SDK object: (position, its delta dict, or the partial_json of plain_object's)
        self.noted: tuple[int, Any] = (-1, None)

    def restated(self, pos: int, said: Any, restating: tuple[str, str, str]) -> WireProblem | None:
        """A derived event of the Anthropic SDK's stream helper (see _anthropic_sdk_item) that says `said`
        (its member, read back to JSON): None when it restates exactly the delta fed just before it, once;
        else unexpected_event."""
        kind, delta_type, member = restating
        at, delta = self.noted
        self.noted = (-1, None)
        if type(delta) is str:   # noted by plain_object
            delta = {"type": "input_json_delta", "partial_json": delta}
        if (at == pos - 1 and isinstance(delta, dict) and delta.get("type") == delta_type and said is not None
                and delta.get(member) == said):
            return None
        return WireProblem(pos, UNEXPECTED_EVENT, f"a {kind} event of the Anthropic SDK's stream helper does not "
                           f"restate a {delta_type} fed just before it")

    def fragment_run(self, text: str, pos: int) -> tuple[FragmentRun, int, int] | None:
        """The input_json_delta events for one block that start at text[pos], read at once: (the run,
        its end, how many events).

        A long stream is nearly all such events, and each is a plain fragment
        (see plain_fragment).  Only what the strict parser reads as exactly those
        objects is recognised: the API's member order (so no member repeats), any
        JSON whitespace between tokens, an index in JSON's integer grammar, and
        strings read by the parser's own string reader.  The run goes on while
        the events are laid out exactly as its first, up to _RUN_ITEMS.  The
        block must be one plain_fragment() would answer for; the machine decides
        the rest (see StreamGate._feed_run).  None (anything else, even valid)
        leaves the text to the parser.
        """
        return self._delta_run(text, pos, None)

    sse_fragment_lead = _ANTHROPIC_SSE_DELTA   # how each event sse_fragment_run reads begins

    def sse_fragment_run(self, text: str, pos: int) -> tuple[FragmentRun, int, int] | None:
        """The input_json_delta events for one block that start at text[pos] in an SSE body's text, read
        at once: (the run, the end of its last event's data line, how many events).

        Each event is exactly the line "event: content_block_delta", one "data: "
        line holding the event as fragment_run() reads it (no line end inside),
        and a blank line, LF ends; the name is the data's type, so capture's
        checks of a named event pass (StreamGate.feed_bytes; see _BodyReader).
        None for anything else, which the caller reads the general way.
        """
        if not text.startswith(_ANTHROPIC_SSE_DELTA, pos):
            return None
        return self._delta_run(text, pos + len(_ANTHROPIC_SSE_DELTA), "\n\n" + _ANTHROPIC_SSE_DELTA)

    def _delta_run(self, text: str, pos: int, sse: str | None) -> tuple[FragmentRun, int, int] | None:
        """fragment_run() at pos; sse: the exact text between two events of an SSE body (then no
        JSON whitespace may hold a line end: the data is one line)."""
        if not text.startswith("{", pos):
            return None
        head, tail, comma = _anthropic_delta_patterns()
        comma_at = comma.match
        found = head.match(text, pos)
        if found is None:
            return None
        index, state = int(found.group(1)), self.state
        block = state.blocks.get(index)
        if block is None or block[0] != "tool_use" or state.opening != "open" or state.ending != "running":
            return None
        try:
            piece, closing = _json_string(text, found.end())
        except ValueError:  # not a strict JSON string: the parser says why
            return None
        closed = tail.match(text, closing - 1)
        if closed is None:
            return None
        # Every event of the run is laid out as this one: the same text before the string
        # (index included) and after it.  Only the strings and the commas between may differ.
        before, after, end = text[pos:found.end()], closed.group(), closed.end()
        skip, pieces, separator = len(before), [piece], "," if sse is None else sse
        if sse is not None and ("\n" in before or "\r" in before or "\n" in after or "\r" in after):
            return None
        append, starts = pieces.append, text.startswith
        while len(pieces) < _RUN_ITEMS:
            at = end + len(separator)
            if not (starts(separator, end) and starts(before, at)):
                if sse is not None:
                    break
                between = comma_at(text, end)
                if between is None or not starts(before, between.end()):
                    break
                separator, at = between.group(), between.end()
            try:
                piece, closing = _json_string(text, at + skip)
            except ValueError:
                break
            if not starts(after, closing - 1):
                break
            append(piece)
            end = closing - 1 + len(after)
        return FragmentRun((None, index), pieces, _anthropic_delta_event(index)), end, len(pieces)

    def plain_fragment(self, event: Any) -> tuple[SlotKey, str] | None:
        """(slot key, text) when event only adds partial_json to a started tool_use block.

        Such deltas are nearly every event of a long stream.  This answers the
        question without building events and changes no state; translate()
        would emit exactly Fragment(pos, key, None, None, text) for it.  None
        is always a safe answer: the gate then takes the general path.
        """
        if type(event) is not dict:
            return None
        try:  # subscripts, not get(): this runs for nearly every event
            if event["type"] != "content_block_delta":
                return None
            index, delta = event["index"], event["delta"]
            if type(index) is not int or type(delta) is not dict or delta["type"] != "input_json_delta":
                return None
            partial = delta["partial_json"]
        except KeyError:
            return None
        state = self.state   # as _plain, inline: this runs for nearly every event
        block = state.blocks.get(index)
        if (type(partial) is not str or block is None or block[0] != "tool_use" or state.opening != "open"
                or state.ending != "running"):
            return None
        return (None, index), partial

    def plain_object(self, event: Any, pos: int) -> tuple[SlotKey, str] | None:
        """plain_fragment() of an SDK event object at position pos (the Anthropic SDK's RawContentBlockDeltaEvent,
        built by construct_type as the wire has it), read from its attributes instead of its dump; None is always
        safe.  The delta is noted for the stream helper's restatement, as _anthropic_sdk_item notes it."""
        try:   # declared fields only (all set, values); anything else declines and the dump decides
            values = event.__dict__
            if (event.__pydantic_fields_set__ != _ANTHROPIC_DELTA_EVENT_FIELDS
                    or values["type"] != "content_block_delta"):
                return None
            index, delta = values["index"], values["delta"]
            values = delta.__dict__
            if (type(index) is not int or delta.__pydantic_fields_set__ != _ANTHROPIC_JSON_DELTA_FIELDS
                    or values["type"] != "input_json_delta"):
                return None
            partial = values["partial_json"]
        except Exception:   # noqa: BLE001 - not such a model, or a value that will not compare: the dump decides
            return None
        state = self.state   # as plain_fragment
        block = state.blocks.get(index)
        if (type(partial) is not str or block is None or block[0] != "tool_use" or state.opening != "open"
                or state.ending != "running"):
            return None
        self.noted = (pos, partial)   # the str of a delta {"type": "input_json_delta", "partial_json": partial}
        return (None, index), partial

    def finish(self) -> Iterator[NeutralEvent]:
        """End of stream: every hosted tool use has its result, every hosted block its stop.

        A use may lack its result when the turn paused (pause_turn), or when it is
        a code_execution use that a client tool_use of this turn names as its caller
        (programmatic tool calling: the server waits for the client's result).
        """
        state = self.state
        for use_id, (index, wanted, answered) in state.hosted.items():
            awaited = use_id in state.callers and wanted == _ANTHROPIC_SERVER_TOOLS["code_execution"]
            if not (answered or state.reason in _ANTHROPIC_PAUSED or awaited):
                yield WireProblem(None, MISSING_TERMINAL, f"hosted tool use in block {index} has no result block "
                                  f"(stop_reason {_token(state.reason)})", None, index)
        for index, (block_type, stopped) in sorted(state.blocks.items()):
            if not stopped and (block_type in _ANTHROPIC_HOSTED_USES or block_type in _ANTHROPIC_RESULTS):
                yield WireProblem(None, MISSING_TERMINAL, f"{block_type} block {index} has no content_block_stop",
                                  None, index)

    def translate(self, pos: int, event: Any) -> Iterator[NeutralEvent]:
        state = self.state
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            if not (isinstance(event, dict) and len(event) == 1 and _invoke_member(event)):
                yield _untyped(pos, event)
                return
            event = _anthropic_boto3_event(pos, event)   # boto3's invoke_model_with_response_stream item
            if type(event) is WireProblem:
                yield event
                return
        kind = event["type"]
        if kind == "ping":   # opens nothing; late only after message_stop
            yield from _ANTHROPIC_ROOM.late(pos, kind, state)
            return
        if kind not in _ANTHROPIC_EVENTS:
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"unknown event type {_token(kind)}")
        elif kind == "error":
            yield WireProblem(pos, STREAM_ERROR, "the provider sent an error event")
        if state.ending == "closed":   # nothing is read after message_stop
            state.ending, late = _ending(pos, _ANTHROPIC_ENDING, state.ending, "any", kind)
            yield from late
            return
        if kind not in _ANTHROPIC_EVENTS or kind == "error":
            return
        if kind == "message_start":
            yield from _anthropic_message_start(pos, event, state)
        else:   # an event before message_start: said once, then translated
            yield from _ANTHROPIC_ROOM.read(pos, kind, event, state)


def _anthropic_message_start(pos: int, event: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    """The opening; the first message_start's message may already hold whole blocks (see _anthropic_prefilled)."""
    message = event.get("message")
    if not isinstance(message, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT,
                          f"message_start.message is {_describe(message)}, not an object")
    again = state.opening == "open"
    yield from _ANTHROPIC_ROOM.opening(pos, "message_start", state)
    if isinstance(message, dict) and not again:
        yield from _anthropic_prefilled(pos, message, state)


def _anthropic_message_stop(pos: int, kind: str, event: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    yield TurnClose(pos)


def _anthropic_prefilled(pos: int, message: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    """A message_start that already holds whole blocks, and maybe its stop_reason.

    The responses that continue a programmatic tool call arrive so: message_start
    with content [tool_use {..., "caller": {...}}] and stop_reason "tool_use", then
    message_stop, and no block events.  The SDKs take that message as it stands,
    so each block is read as a start directly followed by its stop, in order.
    """
    content = message.get("content")
    if content is not None and not isinstance(content, list):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"message_start.message.content is {_describe(content)}, not a list")
        return
    for block in content or ():
        index = len(state.blocks)
        yield from _anthropic_block_start(pos, index, {"content_block": block}, state)
        yield from _anthropic_block_event(pos, "content_block_stop", {"index": index}, state)
    yield from _anthropic_stop_reason(pos, message, state)


def _anthropic_message_delta(pos: int, kind: str, event: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    delta = event.get("delta")
    if delta is None:
        return
    if not isinstance(delta, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"message_delta.delta is {_describe(delta)}, not an object")
        return
    yield from _anthropic_stop_reason(pos, delta, state)


def _anthropic_stop_reason(pos: int, holder: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    """The turn's stop_reason, from message_delta.delta or a prefilled message_start.message."""
    reason = holder.get("stop_reason")
    if reason is None or reason == "":
        return
    if not isinstance(reason, str):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"stop_reason is {_describe(reason)}, not a string")
        return
    state.ending, _ = _ending(pos, _ANTHROPIC_ENDING, state.ending, "stop_reason", "stop_reason")
    if state.reason is None:
        state.reason = reason
    yield TurnEnd(pos, reason)


def _anthropic_block_event(pos: int, kind: str, event: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    index = event.get("index")
    if not _is_index(index):
        yield WireProblem(pos, MISSING_INDEX, f"{kind} index must be a non-negative integer, got {_describe(index)}")
        return
    if kind == "content_block_start":
        yield from _anthropic_block_start(pos, index, event, state)
        return
    block = state.blocks.get(index)
    if block is None:
        yield WireProblem(pos, MISSING_SLOT, f"{kind} for block {index}, which was never started", None, index)
        return
    if kind == "content_block_stop":
        yield from _anthropic_block_stop(pos, index, block)
    elif block[0] in _BLOCK_DELTAS:   # an unsupported block was already reported at its start
        yield from _anthropic_block_delta(pos, index, event, block)


def _anthropic_block_stop(pos: int, index: int, block: list) -> Iterator[NeutralEvent]:
    block_type, stopped = block
    if block_type == "tool_use":
        yield SlotEnd(pos, (None, index))
    elif block_type in _BLOCK_DELTAS:
        if stopped:
            yield WireProblem(pos, DUPLICATE_TERMINAL, f"second content_block_stop for block {index}", None, index)
    block[1] = True


def _anthropic_block_delta(pos: int, index: int, event: dict, block: list) -> tuple[NeutralEvent, ...]:
    """A delta of a reviewed block: of its own type; a tool_use block's partial_json is a fragment.
    (The events as a tuple: one call per delta, no generator.)"""
    block_type, stopped = block
    delta = event.get("delta")
    delta_type = _wire_str(delta.get("type")) if isinstance(delta, dict) else None
    if delta_type not in _BLOCK_DELTAS[block_type]:
        return (WireProblem(pos, UNEXPECTED_EVENT, f"delta type {_token(delta_type)} does not belong to a "
                            f"{block_type} block ({index})", None, index),)
    if block_type != "tool_use":
        return ((WireProblem(pos, DELTA_AFTER_TERMINAL, f"{delta_type} after block {index} stopped", None, index),)
                if stopped else ())
    partial = delta.get("partial_json")
    if not isinstance(partial, str):
        return (WireProblem(pos, UNSUPPORTED_EVENT, f"partial_json is {_describe(partial)}, not a string", None,
                            index),)
    return (Fragment(pos, (None, index), None, None, partial),)


def _anthropic_block_start(pos: int, index: int, event: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    if index in state.blocks:
        yield WireProblem(pos, IDENTITY_COLLISION, f"block {index} was started twice", None, index)
        return
    if index != len(state.blocks):
        yield WireProblem(pos, MISSING_SLOT, f"block {index} started, but block {len(state.blocks)} comes next", None,
                          index)
    block = event.get("content_block")
    block_type = _wire_str(block.get("type")) if isinstance(block, dict) else None
    state.blocks[index] = [block_type, False]
    if block_type not in _BLOCK_DELTAS:
        yield WireProblem(pos, UNSUPPORTED_EVENT,
                          f"content block type {_token(block_type)} has no reviewed normalizer", None, index)
        return
    if block_type in _ANTHROPIC_RESULTS:
        yield from _anthropic_hosted_result(pos, index, block_type, block, state)
        return
    state.leading_results = False
    if block_type in _ANTHROPIC_HOSTED_USES:
        yield from _anthropic_hosted_use(pos, index, block_type, block, state)
        return
    if block_type != "tool_use":
        return
    ok_id, call_id = _optional_str(block, "id")
    ok_name, name = _optional_str(block, "name")
    initial = block.get("input")
    if not (ok_id and ok_name) or not isinstance(initial, dict):
        state.blocks[index][0] = None  # untranslatable; later deltas are not re-reported
        yield WireProblem(pos, UNSUPPORTED_EVENT, "tool_use id and name must be strings and input an object", None,
                          index)
        return
    caller = block.get("caller")
    if isinstance(caller, dict) and isinstance(caller.get("tool_id"), str):
        state.callers.add(caller["tool_id"])  # programmatic tool calling: code execution awaits this call
    yield from _anthropic_claim_id(pos, index, call_id, "a client tool_use", state)
    yield SlotOpen(pos, (None, index), call_id, name, initial)


def _anthropic_claim_id(pos: int, index: int, tool_id: str | None, what: str,
                        state: _AnthropicState) -> Iterator[NeutralEvent]:
    """Hosted uses, client calls and continued results share one id space: a tool result pairs by id."""
    if not tool_id:
        return
    other = state.ids.setdefault(tool_id, what)
    if other != what:  # the same kind twice is judged where that kind is (two slots, two hosted uses)
        yield WireProblem(pos, IDENTITY_COLLISION, f"{what} in block {index} has the id of {other}", None, index)


def _anthropic_hosted_use(pos: int, index: int, block_type: str, block: dict,
                          state: _AnthropicState) -> Iterator[NeutralEvent]:
    """A server_tool_use or mcp_tool_use block: counted, paired with its result later, never a call."""
    use_id, name = block.get("id"), block.get("name")
    wanted = _ANTHROPIC_SERVER_TOOLS.get(_wire_str(name)) if block_type == "server_tool_use" else "mcp_tool_result"
    if not isinstance(use_id, str) or not use_id or wanted is None or not isinstance(block.get("input", {}), dict):
        state.blocks[index][0] = None
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"{block_type} block {index} is not a reviewed hosted tool use "
                          f"(name {_token(name)}, a string id and an object input)", None, index)
        return
    if use_id in state.hosted:
        yield WireProblem(pos, IDENTITY_COLLISION, f"{block_type} block {index} reuses the id of block "
                          f"{state.hosted[use_id][0]}", None, index)
        return
    yield from _anthropic_claim_id(pos, index, use_id, "a hosted tool use", state)
    state.hosted[use_id] = [index, wanted, False]
    yield HostedUse(pos, name if block_type == "server_tool_use" else block_type)


def _anthropic_hosted_result(pos: int, index: int, block_type: str, block: dict,
                             state: _AnthropicState) -> Iterator[NeutralEvent]:
    """A result block: it must answer a hosted use of this turn, once and with the right type.

    The exception is a result at the very start of the message: a paused or
    programmatic turn continues with the result of a use sent in the previous one.
    """
    use_id = block.get("tool_use_id")
    use = state.hosted.get(use_id) if isinstance(use_id, str) else None
    if use is None:
        if not state.leading_results or not isinstance(use_id, str):
            yield WireProblem(pos, MISSING_SLOT, f"{block_type} block {index} answers no hosted tool use of this turn",
                              None, index)
        else:
            yield from _anthropic_claim_id(pos, index, use_id, "a hosted use of the previous response", state)
        return
    state.leading_results = False
    if use[1] != block_type:
        yield WireProblem(pos, UNEXPECTED_EVENT,
                          f"{block_type} block {index} answers the hosted use in block {use[0]}, "
                          f"which expects {use[1]}", None, index)
    elif use[2]:
        yield WireProblem(pos, DUPLICATE_TERMINAL, f"a second result for the hosted use in block {use[0]}", None, index)
    use[2] = True


# The lifecycle: message_start opens, message_delta and message_stop end (see _ANTHROPIC_ENDING), every
# other event is about a block.
_ANTHROPIC_ROOM = _EventRoom(
    start="message_start", ending=_ANTHROPIC_ENDING,
    steps={"message_stop": "message_stop", "message_delta": "message_delta", "ping": "ping"}, other="block",
    handlers={"message_stop": _anthropic_message_stop, "message_delta": _anthropic_message_delta},
    default=_anthropic_block_event)


# --- its request, redaction, capture rules and its Profile row ---------------


def _choice_anthropic(choice: Any) -> dict:
    """Anthropic Messages tool_choice: {"type": auto|any|tool|none, "name", "disable_parallel_tool_use"}."""
    body = _request_members(choice, "tool_choice", ("type", "name", "disable_parallel_tool_use"))
    kind, single = body.get("type"), body.get("disable_parallel_tool_use", False)
    if not isinstance(single, bool):
        raise RequestError(f"tool_choice.disable_parallel_tool_use must be a boolean, got {_describe(single)}")
    if kind == "tool":
        return dict(_forced(_request_name(body.get("name"), "tool_choice.name")), single=single)
    if kind not in ("auto", "any", "none") or "name" in body:
        raise RequestError(f"tool_choice type {_token(kind)} is not one of auto, any, tool, none (name only with tool)")
    return {"none": kind == "none", "single": single}


_ANTHROPIC_BLOCK_KEEP = frozenset({"type", "id", "name", "tool_use_id"})
_STOP_DETAILS_KEEP = frozenset({"type", "category"})


def _redact_anthropic_block(block: Any) -> Any:
    """A content block: tool_use untouched, any other block keeps only type and identity."""
    if not isinstance(block, dict) or block.get("type") == "tool_use":
        return block
    return _neutral(block, _ANTHROPIC_BLOCK_KEEP)


def _redact_anthropic_event(event: dict) -> dict:
    """An allow-list: of a reviewed event, the members the rules read stay (type, index, a tool_use
    block, an input_json_delta, the stop_reason, message identity); everything else, and the whole of
    an event of another or no type, keeps only its shape (_neutral): text, thinking, signatures,
    citations, redacted_thinking data, refusal details, error messages, unreviewed members."""
    kind = event.get("type")
    if kind not in _ANTHROPIC_EVENTS:
        return _neutral(event)   # still the same unknown type (or none) to the rules: unsupported_event
    out = {}
    for key, value in event.items():
        redact = _ANTHROPIC_REDACTED_MEMBERS.get((kind, key))
        # an index keeps its value (numbers are no text)
        kept = value if key == "type" else _AS_SHAPE if redact is None else redact(value)
        out[key] = _neutral(value) if kept is _AS_SHAPE else kept
    return out


def _redact_anthropic_message(message: Any) -> Any:
    """message_start's message: its identity stays, its blocks as blocks are, the rest as shapes."""
    if not isinstance(message, dict):
        return _AS_SHAPE
    out = {}
    for k, v in message.items():
        out[k] = ([_redact_anthropic_block(block) for block in v] if k == "content" and isinstance(v, list)
                  else v if k in _ANTHROPIC_MESSAGE_KEEP else _neutral(v))
    return out


def _redact_anthropic_json_delta(delta: Any) -> Any:
    """content_block_delta's delta: an input_json_delta stays whole (its text is a fragment)."""
    return delta if isinstance(delta, dict) and delta.get("type") == "input_json_delta" else _AS_SHAPE


def _redact_anthropic_stop(delta: Any) -> Any:
    """message_delta's delta: the stop_reason stays, stop_details keeps its type and category."""
    if not isinstance(delta, dict):
        return _AS_SHAPE
    out = {}
    for k, v in delta.items():
        out[k] = v if k == "stop_reason" else _neutral(v, _STOP_DETAILS_KEEP) if k == "stop_details" else _neutral(v)
    return out


# (event type, member) -> what redaction keeps of it; every other member keeps only its shape.
_ANTHROPIC_REDACTED_MEMBERS: Mapping[tuple[str, str], Callable[[Any], Any]] = MappingProxyType({
    ("message_start", "message"): _redact_anthropic_message,
    ("content_block_start", "content_block"): _redact_anthropic_block,
    ("content_block_delta", "delta"): _redact_anthropic_json_delta,
    ("message_delta", "delta"): _redact_anthropic_stop,
})


# Members of message_start's message kept as they are: its identity and a prefilled stop_reason.
_ANTHROPIC_MESSAGE_KEEP = frozenset({"id", "type", "role", "model", "stop_reason"})


def _anthropic_protected(payload: dict) -> dict[tuple, str]:
    """Anthropic: a tool_use block's id, name and input are kept, a hosted block's id and tool_use_id too;
    partial_json deltas are fragments."""
    paths: dict[tuple, str] = {}
    kind = payload.get("type")
    blocks: list[tuple[tuple, Any]] = []
    if kind == "content_block_start":
        blocks.append((("content_block",), payload.get("content_block")))
    message = payload.get("message")
    if kind == "message_start" and isinstance(message, dict) and isinstance(message.get("content"), list):
        blocks.extend((("message", "content", n), block) for n, block in enumerate(message["content"]))
    for where, block in blocks:
        if isinstance(block, dict):
            paths.update(_anthropic_block_paths(where, block))
    delta = payload.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict) and delta.get("type") == "input_json_delta":
        paths[("delta", "partial_json")] = "fragment"
    return paths


def _adapter_anthropic(doc: dict) -> list[dict]:
    """tool_use blocks of a final Anthropic message; input was kept only as an object."""
    out = []
    for n, block in enumerate(doc["content"]):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in ("text", "thinking", "redacted_thinking"):
            continue
        if kind != "tool_use":
            raise CaptureError(f"content[{n}] is a {_describe(kind)} block; only tool_use blocks are compared")
        if not isinstance(block.get("input"), dict):
            raise CaptureError(f"content[{n}].input is {_describe(block.get('input'))}, not an object")
        out.append(_adapter_call(f"content[{n}]", block.get("id"), block.get("name"), block["input"]))
    return out


def _anthropic_final_reader(doc: dict) -> Callable[[dict], list[dict]] | None:
    """The reader of a final Anthropic message (its content blocks); None: not one."""
    return _adapter_anthropic if isinstance(doc.get("content"), list) else None


def _anthropic_tool_entry(where: str, tool: dict) -> list[tuple[str, Any]] | None:
    """A tools entry with an input_schema, or an Anthropic-defined client tool; None for any other entry."""
    if "input_schema" in tool and tool.get("type") in (None, "custom"):
        return _declared_tool(where, tool, "input_schema")
    defined = _anthropic_defined_tool(where, tool)
    return None if defined is None else [defined]


def _anthropic_stream_error(payload: dict) -> bool:
    return "error" in payload or payload.get("type") == "error"


def _anthropic_foreign_shape(payload: dict) -> str | None:
    """Claude's legacy Text Completions stream, direct or through Bedrock."""
    if (isinstance(payload.get("completion"), str) and "stop_reason" in payload
            and payload.get("type", "completion") == "completion"):
        return ("a Claude Text Completions stream (the legacy /v1/complete API, also through Bedrock's "
                "InvokeModelWithResponseStream: completion and stop_reason events), which has no tool calls: capture "
                "a Messages API stream (/v1/messages, or a Bedrock invoke with a messages request) with --profile "
                "anthropic (" + _NO_PROFILE + ")")
    return None


def _anthropic_whole_response(payload: dict) -> str | None:
    if payload.get("type") == "message" and "content" in payload:
        return "a non-streaming Anthropic message (\"type\": \"message\"); capture the stream=true response"
    return None
def _anthropic_block_paths(where: tuple, block: dict) -> dict[tuple, str]:
    """A tool_use block's id, name and input; a hosted tool's use or result: its id and tool_use_id (the
    rules compare them with the calls')."""
    if block.get("type") == "tool_use":
        return {where + (key,): "warn" for key in ("id", "name", "input")}
    return {where + ("id",): "warn", where + ("tool_use_id",): "warn"}


def _anthropic_claims(payload: dict) -> bool:
    kind = payload.get("type")
    return isinstance(kind, str) and (kind.startswith(("message_", "content_block_")) or kind == "ping")


def _named_events_frame(stream: list, query: str) -> tuple[str, bytes]:
    """Typed event streams (Messages, Responses): an event: line named after each payload's type."""
    return "text/event-stream", sse_body(stream, named=True, done=False)


def _anthropic_check_sse(events: list) -> None:
    """Every Anthropic SSE event names itself (CaptureError otherwise)."""
    for event in events:
        if event.name is None:  # the Anthropic SDK dispatches on the event name alone
            raise CaptureError("an event without an \"event:\" line: the Anthropic SDK skips it while other "
                               "readers do not, so they would read different streams", event.line)


# --- Anthropic-defined client tools ----------------------------------------------------
#
# A request may offer tools whose schema Anthropic defines: the entry names a dated type
# (computer_20250124, bash_20250124, text_editor_20250728, memory_20250818...) and a fixed name
# instead of an input_schema.  The client runs them; the model calls them with ordinary tool_use
# blocks under that name.  Each reviewed version has the input schema below, written from
# Anthropic's tool reference pages, the SDKs' typed commands (anthropic-sdk-python
# BetaMemoryTool20250818*Command), the reference implementation (anthropics/claude-quickstarts
# computer-use-demo) and the Vercel AI SDK's input schemas (packages/anthropic/src/tool): what the
# documentation requires is required, members it does not name are tolerated.  A dated version of
# these families that is not reviewed keeps its name, with a schema that is always
# unsupported_schema and says so (UNREVIEWED_TOOL_KEYWORD).
_ANTHROPIC_CLIENT_TOOL_TYPE = re.compile(r"(computer|bash|text_editor|memory)_[0-9]{8}")


_XY = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}


def _by_value(member: str, free: list[str], needs: dict[str, list]) -> list[dict]:
    """anyOf branches: the values of `member` that need nothing more, then one branch per value with its needs.

    A need is a member name, or a list of names of which one is needed.
    """
    branches: list[dict] = [{"properties": {member: {"enum": free}}}] if free else []
    for value, wanted in needs.items():
        plain = [name for name in wanted if isinstance(name, str)]
        branch: dict[str, Any] = {"properties": {member: {"const": value}}, "required": plain}
        for choice in (name for name in wanted if isinstance(name, list)):
            branch["anyOf"] = [{"required": [name]} for name in choice]
        branches.append(branch)
    return branches


def _computer_schema(version: int) -> dict:
    needs: dict[str, list] = {"key": ["text"], "type": ["text"], "mouse_move": ["coordinate"],
                              "left_click_drag": ["coordinate"] if version == 1 else ["start_coordinate", "coordinate"]}
    free = ["left_click", "right_click", "middle_click", "double_click", "screenshot", "cursor_position"]
    properties: dict[str, Any] = {"coordinate": _XY, "text": {"type": "string"}}
    if version >= 2:
        needs.update({"hold_key": ["text", "duration"], "scroll": ["scroll_direction", "scroll_amount"]})
        free += ["triple_click", "left_mouse_down", "left_mouse_up", "wait"]
        properties.update({"start_coordinate": _XY,
                           "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
                           "scroll_amount": {"type": "integer", "minimum": 0},
                           "duration": {"type": "number", "minimum": 0}})
    if version >= 3:
        needs["zoom"] = ["region"]
        properties["region"] = {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4}
    actions = sorted(free + list(needs))
    return {"type": "object", "properties": {"action": {"type": "string", "enum": actions}, **properties},
            "required": ["action"], "anyOf": _by_value("action", sorted(free), needs)}


def _editor_schema(undo: bool, insert: list) -> dict:
    text = {"type": "string"}
    commands = ["view", "create", "str_replace", "insert"] + (["undo_edit"] if undo else [])
    return {"type": "object",
            "properties": {"command": {"type": "string", "enum": commands}, "path": text, "file_text": text,
                           "old_str": text, "new_str": text, "insert_text": text,
                           "insert_line": {"type": "integer", "minimum": 0},
                           "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2,
                                          "maxItems": 2}},
            "required": ["command", "path"],
            "anyOf": _by_value("command", ["view"] + (["undo_edit"] if undo else []),
                               {"create": ["file_text"], "str_replace": ["old_str"], "insert": ["insert_line",
                                                                                                insert]})}


def _memory_schema() -> dict:
    text = {"type": "string"}
    return {"type": "object",
            "properties": {"command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "delete",
                                                                  "rename"]},
                           "path": text, "file_text": text, "old_str": text, "new_str": text, "insert_text": text,
                           "insert_line": {"type": "integer", "minimum": 0}, "old_path": text, "new_path": text,
                           "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2,
                                          "maxItems": 2}},
            "required": ["command"],
            "anyOf": _by_value("command", [], {"view": ["path"], "create": ["path", "file_text"],
                                               "str_replace": ["path", "old_str", "new_str"],
                                               "insert": ["path", "insert_line", "insert_text"],
                                               "delete": ["path"], "rename": ["old_path", "new_path"]})}


_BASH_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}, "restart": {"type": "boolean"}},
                "anyOf": [{"required": ["command"]}, {"required": ["restart"],
                                                      "properties": {"restart": {"const": True}}}]}


# Reviewed type -> (the name the API requires, the input schema).
ANTHROPIC_CLIENT_TOOLS: Mapping[str, tuple[str, dict]] = MappingProxyType({
    "computer_20241022": ("computer", _computer_schema(1)),
    "computer_20250124": ("computer", _computer_schema(2)),
    "computer_20251124": ("computer", _computer_schema(3)),
    "bash_20241022": ("bash", _BASH_SCHEMA),
    "bash_20250124": ("bash", _BASH_SCHEMA),
    "text_editor_20241022": ("str_replace_editor", _editor_schema(True, ["new_str"])),
    "text_editor_20250124": ("str_replace_editor", _editor_schema(True, ["new_str"])),
    "text_editor_20250429": ("str_replace_based_edit_tool", _editor_schema(False, ["new_str", "insert_text"])),
    "text_editor_20250728": ("str_replace_based_edit_tool", _editor_schema(False, ["insert_text", "new_str"])),
    "memory_20250818": ("memory", _memory_schema()),
})


def _anthropic_defined_tool(where: str, tool: dict) -> tuple[str, Any] | None:
    """(name, schema) of an Anthropic-defined client tool entry; None for any other entry."""
    kind = tool.get("type")
    if not isinstance(kind, str) or not _ANTHROPIC_CLIENT_TOOL_TYPE.fullmatch(kind):
        return None
    name = tool.get("name")
    reviewed = ANTHROPIC_CLIENT_TOOLS.get(kind)
    if reviewed is not None and name != reviewed[0]:
        raise CaptureError(f"{where} is a {kind} tool, which the API requires to be named {json.dumps(reviewed[0])}, "
                           f"not {_token(name) if isinstance(name, str) else _describe(name)}")
    if not isinstance(name, str) or not name:
        raise CaptureError(f"{where}.name must be a non-empty string, got {_describe(name)}")
    return name, (reviewed[1] if reviewed is not None else {UNREVIEWED_TOOL_KEYWORD: kind})


# Claude on Amazon Bedrock through InvokeModelWithResponseStream (what the Anthropic SDK's Bedrock
# client, LangChain's ChatBedrock and LiteLLM call): an AWS event stream whose `chunk` frames each
# carry {"bytes": base64 of one Anthropic Messages event, "p": padding} ("p" is absent in older
# recordings).  The events are the ones above: no ping, and message_stop carries an
# "amazon-bedrock-invocationMetrics" member, which the normalizer reads as it reads any member
# it does not need.  An exception frame raises in botocore and in both Anthropic SDKs: it becomes
# an Anthropic error event, a stream_error.  Sources: AWS's InvokeModelWithResponseStream and
# Claude Messages references; recordings in Arize-ai/openinference (the Bedrock instrumentation's
# cassettes) and traceloop/openllmetry; anthropic-sdk-python src/anthropic/lib/bedrock.
_INVOKE_PAYLOAD_KEYS = frozenset({"bytes", "p"})


def _anthropic_invoke_body(raw: bytes, encode: bool = False) -> EventStreamRead | None:
    """How capture reads an InvokeModelWithResponseStream body; None when the body is not an
    AWS event stream (it is then read as SSE)."""
    if not is_eventstream(raw):
        return None
    # every event is walked for credentials: in base64 they are invisible to the body's quick look
    return EventStreamRead("AWS event stream (InvokeModelWithResponseStream)", walk_all=True,
                           convert=_anthropic_invoke_event, unwrap=_anthropic_invoke_text,
                           parse=_anthropic_invoke_chunk, chunk_match=_invoke_chunk_bytes() if encode else None,
                           unwrap_all=_anthropic_invoke_texts)


# A chunk payload that is plainly {"bytes": base64, "p": padding}: read without the JSON parser.
_INVOKE_PLAIN_CHUNK = r'\{"bytes":"([A-Za-z0-9+/]*={0,2})"(?:,"p":"([A-Za-z0-9]*)")?\}'


def _invoke_chunk_match(text: str) -> Any:
    """_INVOKE_PLAIN_CHUNK's full match of text (compiled on first use, then called directly)."""
    global _invoke_chunk_match
    _invoke_chunk_match = re.compile(_INVOKE_PLAIN_CHUNK).fullmatch
    return _invoke_chunk_match(text)


def _anthropic_invoke_chunk(member: str, text: str) -> dict | None:
    """A plain chunk frame's payload as the strict parser reads it (no escape, no space, two members at
    most, each once), else None."""
    match = _invoke_chunk_match(text) if member == "chunk" else None
    if match is None:
        return None
    payload = {"bytes": match.group(1)}
    if match.group(2) is not None:
        payload["p"] = match.group(2)
    return payload


def _invoke_chunk_bytes() -> tuple[bytes, Callable[..., Any]]:
    """_INVOKE_PLAIN_CHUNK over a payload's bytes, in two parts around its base64: the bytes it starts
    with, and the fullmatch (body, quote, stop) of what follows from the closing quote.  The base64
    in between is what a2b_base64 in strict mode takes, which takes no byte outside its group."""
    return b'{"bytes":"', re.compile(rb'"(?:,"p":"[A-Za-z0-9]*")?\}').fullmatch


def _anthropic_invoke_text(member: str, text: str, decoded: str | None = None) -> str | None:
    """The event text a plain chunk frame carries (what _anthropic_invoke_event reads from it), else None;
    decoded: that text when _anthropic_invoke_event read it from this frame already (not decoded again)."""
    import binascii

    match = _invoke_chunk_match(text) if member == "chunk" and text is not None else None
    if match is None:
        return None
    if decoded is not None:   # the frame's plain base64 (match.group(1)) was what it decoded
        return decoded
    try:   # base64.b64decode(..., validate=True) once the characters are known good
        return _a2b_base64_strict(match.group(1)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


_invoke_chunks_found: Callable[[bytes], list] | None = None   # _anthropic_invoke_texts's pattern, compiled on first use


def _anthropic_invoke_texts(members: list[str], payloads: list) -> str | None:
    """The event texts of a run of plain chunk frames (members, payload bytes), joined by commas, read at
    once: exactly what _anthropic_invoke_text reads from each in turn, else None.  The payloads are
    joined by LF, which _INVOKE_PLAIN_CHUNK never matches, so each line must be one whole match."""
    import binascii

    global _invoke_chunks_found
    if members.count("chunk") != len(members):
        return None
    joined = b"\n".join(payloads)
    if joined.count(b"\n") != len(payloads) - 1:
        return None
    if _invoke_chunks_found is None:
        plain = _INVOKE_PLAIN_CHUNK.replace(r'(?:,"p":"([A-Za-z0-9]*)")', r'(?:,"p":"[A-Za-z0-9]*")')
        _invoke_chunks_found = re.compile(("^" + plain + "$").encode(), re.MULTILINE).findall
    found = _invoke_chunks_found(joined)
    if len(found) != len(payloads):
        return None
    try:   # as _anthropic_invoke_text decodes one
        return b",".join(map(_a2b_base64_strict, found)).decode("utf-8")
    except (binascii.Error, ValueError, TypeError):
        return None


def _anthropic_invoke_event(frame: dict, number: int) -> tuple[Any, str | None]:
    """The Anthropic event one frame carries (an exception frame: an Anthropic error event), and the
    event's text the chunk's bytes decode to (None for an exception frame)."""
    (member, payload), = frame.items()
    try:
        return _invoke_frame_event(member, payload, False)
    except CaptureError as exc:
        raise CaptureError(f"frame {number}: {exc}") from None


def _invoke_frame_event(member: str, payload: Any, decoded: bool) -> tuple[Any, str | None]:
    """The Anthropic event of one InvokeModelWithResponseStream frame (member: its event type, payload: its
    JSON payload) and its text; CaptureError says what is wrong.  decoded: the chunk's bytes are the event's
    bytes already (botocore decodes the base64 of the wire: a boto3 event dict), not the wire's base64."""
    import base64
    import binascii

    if member.endswith("Exception"):   # botocore and the Anthropic SDKs raise on every one
        return {"type": "error", "error": {"type": member}}, None
    if member != "chunk":
        raise CaptureError(f"an event {_token(member)}, not a chunk of InvokeModelWithResponseStream "
                           "(a ConverseStream body is --profile bedrock)")
    kind = (bytes, bytearray) if decoded else str
    extra = sorted(key for key in payload if key not in _INVOKE_PAYLOAD_KEYS) if isinstance(payload, dict) else []
    if not isinstance(payload, dict) or extra or not isinstance(payload.get("bytes"), kind):
        raise CaptureError(f"a chunk is not {{\"bytes\": {'bytes' if decoded else 'base64'}, \"p\": padding}}"
                           + (f" (it has {_token(extra[0])})" if extra else ""))
    try:
        raw = payload["bytes"] if decoded else base64.b64decode(payload["bytes"], validate=True)
        text = bytes(raw).decode("utf-8")
        event = decode_document(text, what="the chunk's event")
    except (binascii.Error, ValueError):
        raise CaptureError(f"the chunk's bytes are not {'' if decoded else 'base64 of '}UTF-8 text") from None
    except JsonProblem as problem:
        raise CaptureError(f"the chunk's event is not strict JSON: {problem.message}") from None
    if not isinstance(event, dict):
        raise CaptureError(f"the chunk's event must be a JSON object, got {_describe(event)}")
    return event, text


def _invoke_member(item: dict) -> bool:
    """Whether the one member of item names an InvokeModelWithResponseStream event (a chunk, an exception)."""
    member = next(iter(item))
    return member == "chunk" or isinstance(member, str) and member.endswith("Exception")


def _anthropic_boto3_event(pos: int, item: dict) -> Any:
    """The Anthropic event a boto3 invoke_model_with_response_stream item carries ({"chunk": {"bytes": the
    event's bytes}}: botocore's EventStream parser has decoded the frame's base64), read by capture's rules for
    a frame (_invoke_frame_event); a WireProblem (unsupported_event) with capture's message when it is not one."""
    (member, payload), = item.items()
    try:
        return _invoke_frame_event(member, payload, True)[0]
    except CaptureError as exc:
        return WireProblem(pos, UNSUPPORTED_EVENT, f"a boto3 InvokeModelWithResponseStream item: {exc}")


# The Anthropic SDK's objects (WireRules.sdk_item).  messages.create(stream=True) yields the raw events
# (anthropic/_streaming.py Stream.__stream__; it skips `ping` and raises on `error`, so a position counts the
# items fed), built by construct_type (anthropic/_models.py) as openai-python builds its chunks: the generic
# dump gives the wire.  The stream helper, messages.stream() (anthropic/lib/streaming/_messages.py), yields the
# raw events too, but build_events adds after a content_block_delta a derived event restating it (text,
# input_json, citation, thinking, signature; each with an accumulated `snapshot`, except signature) and replaces
# content_block_stop and message_stop by events rebuilt from type and index alone, carrying a snapshot
# (content_block, message) that accumulate_event builds from the deltas.  Decision: a helper stream is read,
# not refused.  A derived event is read as a restatement: it must restate exactly the member of the raw delta
# fed just before it (else unexpected_event) and adds nothing; a snapshot is left out, never judged (it is the
# SDK's own accumulation, not the server's word; and a tool_use block's snapshot is partial JSON parsed
# leniently).  So a helper stream gives the raw stream's verdict and calls (positions count every item fed).
# Found by class name, never by type: a wire event of type "text" or "input_json" stays unsupported_event.
_ANTHROPIC_RESTATEMENTS: Mapping[str, tuple[str, str, str]] = MappingProxyType({
    # class name: (its type, the delta type it restates, the member both carry)
    "TextEvent": ("text", "text_delta", "text"),
    "InputJsonEvent": ("input_json", "input_json_delta", "partial_json"),
    "CitationEvent": ("citation", "citations_delta", "citation"),
    "ThinkingEvent": ("thinking", "thinking_delta", "thinking"),
    "SignatureEvent": ("signature", "signature_delta", "signature"),
})
_ANTHROPIC_SNAPSHOTS: Mapping[str, str] = MappingProxyType({
    "ParsedContentBlockStopEvent": "content_block", "ParsedMessageStopEvent": "message"})


# The Anthropic SDK's RawContentBlockDeltaEvent (anthropic/types/raw_content_block_delta_event.py: delta, index,
# type) and InputJSONDelta (anthropic/types/input_json_delta.py: partial_json, type) are built by construct_type
# (anthropic/_models.py: fields set = the members sent, unknown ones kept as extras) and have no alias or serializer.
# An input_json_delta that plain_object does not take (a hosted tool's input, server_tool_use) is read from its
# attributes to the dict the generic dump gives (declared order) when both models have all their members set, none
# extra, and hold a str type, an int index and a str partial_json; anything else is dumped (_sdk_dump).
_ANTHROPIC_DELTA_EVENT_CLASSES: dict[type, bool] = {}   # see _plain_model_class
_ANTHROPIC_JSON_DELTA_CLASSES: dict[type, bool] = {}
# The same for its stop events (anthropic/types/raw_content_block_stop_event.py: index, type;
# raw_message_stop_event.py: type): class name -> its members in declared order, their set, its classes seen.
_ANTHROPIC_FLAT_EVENTS: Mapping[str, tuple[tuple[str, ...], frozenset, dict]] = MappingProxyType({
    "RawContentBlockStopEvent": (("index", "type"), frozenset({"index", "type"}), {}),
    "RawMessageStopEvent": (("type",), frozenset({"type"}), {})})


def _anthropic_json_delta(event: Any) -> dict | None:
    """The dict the dump of an input_json_delta event gives, read from its attributes (see above), or None."""
    try:
        if (not _plain_model_class(_ANTHROPIC_DELTA_EVENT_CLASSES, type(event), "RawContentBlockDeltaEvent",
                                   "anthropic.")
                or event.__pydantic_extra__ or event.__pydantic_fields_set__ != _ANTHROPIC_DELTA_EVENT_FIELDS):
            return None
        values = event.__dict__
        delta, index, kind = values["delta"], values["index"], values["type"]
        if (type(index) is not int or type(kind) is not str
                or not _plain_model_class(_ANTHROPIC_JSON_DELTA_CLASSES, type(delta), "InputJSONDelta", "anthropic.")
                or delta.__pydantic_extra__ or delta.__pydantic_fields_set__ != _ANTHROPIC_JSON_DELTA_FIELDS):
            return None
        values = delta.__dict__
        partial, delta_type = values["partial_json"], values["type"]
        if type(partial) is not str or type(delta_type) is not str:
            return None
    except Exception:   # noqa: BLE001 - not such a model: the dump decides
        return None
    return {"delta": {"partial_json": partial, "type": delta_type}, "index": index, "type": kind}


def _anthropic_flat_event(event: Any, name: str) -> dict | None:
    """The dict the dump of a stop event gives (see _ANTHROPIC_FLAT_EVENTS), read from its attributes when it has
    all its members set, none extra, each a str or an int; else None."""
    members, sent, known = _ANTHROPIC_FLAT_EVENTS[name]
    try:
        if (not _plain_model_class(known, type(event), name, "anthropic.") or event.__pydantic_extra__
                or event.__pydantic_fields_set__ != sent):
            return None
        values = event.__dict__
        out = {member: values[member] for member in members}
    except Exception:   # noqa: BLE001 - not such a model: the dump decides
        return None
    for value in out.values():
        if type(value) is not str and type(value) is not int:
            return None
    return out


def _anthropic_sdk_item(item: Any, normalizer: "AnthropicNormalizer", pos: int) -> Any:
    """An Anthropic SDK event object: its wire event; a helper's derived event: None when it restates the raw
    delta fed just before it, else a WireProblem; a helper's rebuilt stop event: without its snapshot."""
    name = type(item).__name__
    restating = _ANTHROPIC_RESTATEMENTS.get(name)
    if restating is not None and getattr(item, "type", None) == restating[0]:
        # read by attribute, not dumped (half a helper stream's items): a string as it is, a citation dumped
        said = getattr(item, restating[2], None)
        return normalizer.restated(pos, said if type(said) is str else _sdk_dump(said), restating)
    payload = (_anthropic_json_delta(item) if name == "RawContentBlockDeltaEvent"
               else _anthropic_flat_event(item, name) if name in _ANTHROPIC_FLAT_EVENTS else None)
    if payload is None:
        payload = _sdk_dump(item)
    if type(payload) is not dict:
        return payload
    snapshot = _ANTHROPIC_SNAPSHOTS.get(name)
    if snapshot is not None:
        payload.pop(snapshot, None)
    elif payload.get("type") == "content_block_delta":   # a delta that is not an object restates nothing
        delta = payload.get("delta")
        normalizer.noted = (pos, delta if isinstance(delta, dict) else None)
    return payload


# Anthropic's errors before a stream: {"type": "error", "error": {"type", "message"}, "request_id"} with
# the status https://docs.anthropic.com/en/api/errors gives each type (429 rate_limit_error with
# retry-after, 500 api_error, 529 overloaded_error); the SDK's _client.py maps them to RateLimitError,
# InternalServerError and OverloadedError and retries 429 and 5xx.
_ANTHROPIC_ERRORS = (
    http_error("rate_limit", 429, {"type": "error", "error": {
        "type": "rate_limit_error",
        "message": "This request would exceed the rate limit for your organization of 5 requests per minute."},
        "request_id": "req_vts_rate_limit"}, (("retry-after", "1"), ("request-id", "req_vts_rate_limit"))),
    http_error("server_error", 500, {"type": "error", "error": {"type": "api_error",
                                                                "message": "Internal server error"},
                                     "request_id": "req_vts_server_error"}, (("request-id", "req_vts_server_error"),)),
    http_error("overloaded", 529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                                   "request_id": "req_vts_overloaded"}, (("request-id", "req_vts_overloaded"),)),
)
def _anthropic_tools(schemas: dict) -> list:
    """Messages tools: an Anthropic-defined client tool as its type names it (the schema of a reviewed type, or
    the unreviewed stand-in), every other tool with its input_schema."""
    tools = []
    for name, schema in schemas.items():
        kind = schema.get(UNREVIEWED_TOOL_KEYWORD) if isinstance(schema, dict) and len(schema) == 1 else None
        kind = kind if isinstance(kind, str) and _ANTHROPIC_CLIENT_TOOL_TYPE.fullmatch(kind) else next(
            (k for k, (n, reviewed) in ANTHROPIC_CLIENT_TOOLS.items() if n == name and reviewed == schema), None)
        tools.append({"type": kind, "name": name} if kind else {"name": name, "input_schema": schema})
    return tools


def _anthropic_request_body(schemas: dict, request: dict) -> dict:
    body: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True,
                            "messages": [{"role": "user", "content": REQUEST_PROMPT}]}
    if schemas:
        body["tools"] = _anthropic_tools(schemas)
    return dict(body, **_request_controls(request, ("tool_choice",)))


ANTHROPIC = Profile(
    name="anthropic", stream_key="events",
    rules=TurnRules(tool_reason="tool_use"),
    wire=WireRules(normalizer=lambda limits: AnthropicNormalizer(), protected_paths=_anthropic_protected,
                   fragment_key=_fragment_key_at("index"), final_reader=_anthropic_final_reader,
                   sdk_item=_anthropic_sdk_item),
    request=RequestRules(choice=_choice_anthropic, parallel_instead=" (use tool_choice.disable_parallel_tool_use)",
                         defined_tool=_anthropic_defined_tool, tool_entry=_anthropic_tool_entry),
    capture=CaptureRules(family="anthropic", claims=_anthropic_claims, redact=_redact_anthropic_event,
                         binary_body=_anthropic_invoke_body, check_sse_events=_anthropic_check_sse,
                         stream_error=_anthropic_stream_error, foreign_shape=_anthropic_foreign_shape,
                         whole_response=_anthropic_whole_response),
    http=HttpRules(api_path=r"/v1/messages", frame=_named_events_frame, api_example="/v1/messages",
                   tools_shape=_anthropic_tools, request_body=_anthropic_request_body, errors=_ANTHROPIC_ERRORS,
                   framings=SERVE_FRAMINGS))


# ---------------------------------------------------------------------------
# Provider: OpenAI Responses API stream events (profile openai-responses)
# ---------------------------------------------------------------------------
#
# A client call item (function_call, custom_tool_call...) is a slot keyed
# (None, output_index).  Its id is the item's call_id (what the tool result must
# echo), not item.id ("fc_..."), which only ties the argument events to their item.
# output_index counts every item, so the 0..n-1 check is done here, across item
# types, as the anthropic normalizer does for blocks.
#
# What the SDKs execute (read from their stream code): openai-python's
# get_final_response() and openai-agents take response.completed's output (the
# output_item.done items when that output is null, or for openai-agents empty); the
# Vercel AI SDK takes each output_item.done item.  So a call's terminal is its
# output_item.done, and every place that states its arguments (the added item, the
# deltas, the .done event, the done item, the final output) must agree.

# Client call item type -> (argument member of the item, delta event, done event).
_RESPONSES_ARGUMENT_ITEMS = MappingProxyType({
    "function_call": ("arguments", "response.function_call_arguments.delta", "response.function_call_arguments.done"),
    "custom_tool_call": ("input", "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"),
})
_RESPONSES_KIND = MappingProxyType({"function_call": FUNCTION, "custom_tool_call": CUSTOM})
# Items the client executes that this tool has no check for: reported as calls of their
# own kind (the member holding their input), and the turn is blocked.
_RESPONSES_UNCHECKED_CALLS = MappingProxyType({
    "computer_call": "action", "local_shell_call": "action", "shell_call": "action",
    "apply_patch_call": "operation", "mcp_approval_request": "arguments",
})
_RESPONSES_TEXT_ITEMS = frozenset({"message", "reasoning"})
# Hosted items: the provider runs the tool inside the turn.  Not slots, never calls.
_RESPONSES_HOSTED_ITEMS = frozenset({
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call",
    "mcp_list_tools", "tool_search_call", "tool_search_output",
})
# Reviewed events that carry no tool data and address no item.
_RESPONSES_LIFECYCLE = frozenset({"response.in_progress", "response.queued"})
# Reviewed events of items other than function calls -> the item types they may address.
_RESPONSES_CONTENT_EVENTS = {
    "response.output_text.delta": frozenset({"message"}),
    "response.output_text.done": frozenset({"message"}),
    "response.output_text.annotation.added": frozenset({"message"}),
    "response.refusal.delta": frozenset({"message"}),
    "response.refusal.done": frozenset({"message"}),
    "response.content_part.added": frozenset({"message", "reasoning"}),
    "response.content_part.done": frozenset({"message", "reasoning"}),
    "response.reasoning_summary_part.added": frozenset({"reasoning"}),
    "response.reasoning_summary_part.done": frozenset({"reasoning"}),
    "response.reasoning_summary_text.delta": frozenset({"reasoning"}),
    "response.reasoning_summary_text.done": frozenset({"reasoning"}),
    "response.reasoning_text.delta": frozenset({"reasoning"}),
    "response.reasoning_text.done": frozenset({"reasoning"}),
    **{f"response.web_search_call.{step}": frozenset({"web_search_call"})
       for step in ("in_progress", "searching", "completed")},
    **{f"response.file_search_call.{step}": frozenset({"file_search_call"})
       for step in ("in_progress", "searching", "completed")},
    **{f"response.code_interpreter_call.{step}": frozenset({"code_interpreter_call"})
       for step in ("in_progress", "interpreting", "completed")},
    "response.code_interpreter_call_code.delta": frozenset({"code_interpreter_call"}),
    "response.code_interpreter_call_code.done": frozenset({"code_interpreter_call"}),
    **{f"response.image_generation_call.{step}": frozenset({"image_generation_call"})
       for step in ("in_progress", "generating", "partial_image", "completed")},
    **{f"response.mcp_call.{step}": frozenset({"mcp_call"}) for step in ("in_progress", "completed", "failed")},
    "response.mcp_call_arguments.delta": frozenset({"mcp_call"}),
    "response.mcp_call_arguments.done": frozenset({"mcp_call"}),
    **{f"response.mcp_list_tools.{step}": frozenset({"mcp_list_tools"})
       for step in ("in_progress", "completed", "failed")},
    **{f"response.shell_call_command.{step}": frozenset({"shell_call"}) for step in ("added", "delta", "done")},
    "response.apply_patch_call_operation_diff.delta": frozenset({"apply_patch_call"}),
    "response.apply_patch_call_operation_diff.done": frozenset({"apply_patch_call"}),
}
_RESPONSES_ARGUMENT_EVENTS = MappingProxyType({
    event: (item_type, event == done) for item_type, (_, delta, done) in _RESPONSES_ARGUMENT_ITEMS.items()
    for event in (delta, done)})
# Turn terminals that become a TurnEnd; response.failed is a stream_error instead.
_RESPONSES_TURN_ENDS = {"response.completed": "completed", "response.incomplete": "incomplete"}
# Events whose `response` is a snapshot of the turn so far.  openai-python's stream state
# swaps a finished item for the snapshot's entry of the same identity, so a call there
# must be one that was streamed, stated the same way.
_RESPONSES_SNAPSHOTS = frozenset({"response.created"}) | _RESPONSES_LIFECYCLE
_RESPONSES_EVENTS = (frozenset({
    "response.created", "response.output_item.added", "response.output_item.done",
    "response.failed", "error",
}) | _RESPONSES_LIFECYCLE | frozenset(_RESPONSES_CONTENT_EVENTS) | frozenset(_RESPONSES_ARGUMENT_EVENTS)
    | frozenset(_RESPONSES_TURN_ENDS))


class _ResponsesItem(_Record):
    """One output item as announced by response.output_item.added."""

    __slots__ = ("kind", "client", "item_id", "call_id", "name", "added_arguments", "done_arguments", "streamed",
                 "arguments_done", "finished", "namespace")

    def __init__(self, kind: str | None) -> None:
        self.kind = kind                          # item type; None when untranslatable (already reported)
        self.client = False                       # the client executes it: a call (a slot)
        self.item_id: str | None = None           # item.id, which argument events name as item_id
        self.call_id: str | None = None
        self.name: str | None = None
        self.namespace: str | None = None         # absent and null both mean none
        self.added_arguments = ""                 # the arguments the added item already held
        self.done_arguments: str | None = None    # what the first arguments .done event restated
        self.streamed = False                     # an argument delta arrived
        self.arguments_done = False               # the arguments .done event arrived
        self.finished = False                     # response.output_item.done seen


# The end of a turn as a transition table: (phase, step) -> (next phase, what is wrong or None).
# "ended": the response's terminal event (completed, incomplete) or response.failed came; an
# error event is a stream error but ends nothing.
_RESPONSES_ENDING: Mapping[tuple[str, str], tuple[str, str | None]] = MappingProxyType({
    ("running", "terminal"): ("ended", None),
    ("ended", "terminal"): ("ended", None),           # a repeated terminal: the machine's duplicate_terminal
    ("running", "failed"): ("ended", None),
    ("ended", "failed"): ("ended", None),
    ("running", "error"): ("running", None),
    ("ended", "error"): ("ended", None),
    ("running", "other"): ("running", None),
    ("ended", "other"): ("ended", "{event} after the response's terminal event"),
})


class _ResponsesState(_Record):
    """Translation state: the items announced so far and where the turn stands."""

    __slots__ = ("opening", "ending", "items", "item_ids")

    def __init__(self) -> None:
        self.opening = "new"                      # see _OPENING
        self.ending = "running"                   # see _RESPONSES_ENDING
        self.items: dict[int, _ResponsesItem] = {}
        self.item_ids: dict[str, int] = {}        # item.id -> output_index


def _client_item(body: Any) -> bool:
    """An output item the client executes (a call), by its type and, for a tool search, its execution."""
    kind = _wire_str(body.get("type")) if isinstance(body, dict) else None
    if kind == "tool_search_call":
        return body.get("execution") == "client"
    return kind in _RESPONSES_ARGUMENT_ITEMS or kind in _RESPONSES_UNCHECKED_CALLS


# openai-python's ResponseFunctionCallArgumentsDeltaEvent (openai/types/responses/
# response_function_call_arguments_delta_event.py), nearly every event of a long stream, is built by construct_type
# (openai/_models.py: fields set = the members sent, unknown ones kept as extras) and has no alias, field or model
# serializer: one holding only strings, integers and nulls and no extra member is read from its attributes to the
# dict the generic dump gives (the fields set, in declared order).  Any other object is dumped (_sdk_dump).
_RESPONSES_FLAT_CLASSES: dict[type, Any] = {}   # class -> (declared fields, the same as a set), or None (bounded)
_RESPONSES_DELTA_FIELDS = frozenset({"type", "output_index", "item_id", "delta", "sequence_number"})


def _responses_flat_fields(cls: type) -> tuple[tuple[str, ...], frozenset] | None:
    if cls in _RESPONSES_FLAT_CLASSES:
        return _RESPONSES_FLAT_CLASSES[cls]
    found = None
    try:
        fields = getattr(cls, "model_fields", None)
        decorators = getattr(cls, "__pydantic_decorators__", None)
        if (getattr(cls, "__name__", None) == "ResponseFunctionCallArgumentsDeltaEvent"
                and str(getattr(cls, "__module__", "")).startswith("openai.") and type(fields) is dict
                and decorators is not None and not decorators.field_serializers and not decorators.model_serializers
                and not decorators.computed_fields and not getattr(cls, "__pydantic_computed_fields__", None)
                and all(f.alias is None and f.serialization_alias is None and not f.exclude for f in fields.values())):
            found = (tuple(fields), frozenset(fields))
    except Exception:   # noqa: BLE001 - a class that will not say: not this one
        found = None
    if len(_RESPONSES_FLAT_CLASSES) < 256:
        _RESPONSES_FLAT_CLASSES[cls] = found
    return found


class ResponsesNormalizer:
    """Translate Responses-API stream events into neutral events, one at a time.

    Works on the raw events: the SDK's accumulated `response.output` would hide
    a restatement that disagrees with the fragments.
    """

    def __init__(self) -> None:
        self.state = _ResponsesState()

    def plain_object(self, event: Any, pos: int) -> tuple[SlotKey, str] | None:
        """(slot key, text) when event is openai-python's arguments delta (see _responses_flat_fields) with all its
        members set, none extra, that only adds its text to a function call's slot: translate() of its dump would
        emit exactly Fragment(pos, key, None, None, delta) and change only item.streamed, set here (as translate()
        sets it when the machine does not take the fragment plain).  Read from its attributes, no dump; None is
        always safe."""
        try:   # the class's declared fields, all set, no extra member; anything else declines and the dump decides
            if (_responses_flat_fields(type(event)) is None or event.__pydantic_extra__
                    or event.__pydantic_fields_set__ != _RESPONSES_DELTA_FIELDS):
                return None
            values = event.__dict__
            kind, index, item_id, delta = values["type"], values["output_index"], values["item_id"], values["delta"]
            if (type(kind) is not str or kind != "response.function_call_arguments.delta" or type(index) is not int
                    or type(item_id) is not str or type(delta) is not str
                    or type(values["sequence_number"]) is not int):
                return None
        except Exception:   # noqa: BLE001 - not such a model: the dump decides
            return None
        state = self.state   # as translate() and _responses_arguments() read it for such an event
        item = state.items.get(index)
        if (item is None or item.kind != "function_call" or item.finished or item.arguments_done
                or item.item_id != item_id or state.opening != "open" or state.ending != "running"):
            return None
        item.streamed = True
        return (None, index), delta

    def translate(self, pos: int, event: Any) -> Iterator[NeutralEvent]:
        state = self.state
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            yield _untyped(pos, event)
            return
        kind = event["type"]
        if kind not in _RESPONSES_EVENTS:
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"event type {_token(kind)} has no reviewed normalizer")
            return
        was = state.ending
        late = _RESPONSES_ROOM.late(pos, kind, state)
        if kind in ("error", "response.failed"):
            yield WireProblem(pos, STREAM_ERROR, f"the provider sent {kind}")
            return
        if was == "ended":   # a repeated terminal goes to the machine (duplicate_terminal), all else is late
            yield from late
            if not late:
                yield from _responses_turn_end(pos, kind, state)
            return
        if kind in _RESPONSES_SNAPSHOTS:
            yield from _responses_snapshot(pos, kind, event, state)
        yield from _RESPONSES_ROOM.opening(pos, kind, state)   # an event before response.created: said once
        handler = _RESPONSES_ROOM.handlers.get(kind, _RESPONSES_ROOM.default)
        if handler is not None:
            yield from handler(pos, kind, event, state)


def _responses_terminal(pos: int, kind: str, event: dict, state: _ResponsesState) -> Iterator[NeutralEvent]:
    yield from _responses_final_output(pos, kind, event, state)
    yield from _responses_turn_end(pos, kind, state)


def _responses_turn_end(pos: int, kind: str, state: _ResponsesState) -> Iterator[NeutralEvent]:
    # There is no tool-specific reason: "completed" is the tool reason only when the turn
    # holds a client call; a completed turn of text and hosted tools must stay not_applicable.
    reason = _RESPONSES_TURN_ENDS[kind]
    if reason == "completed" and not any(item.client for item in state.items.values()):
        return
    yield TurnEnd(pos, reason)


def _responses_final_output(pos: int, kind: str, event: dict, state: _ResponsesState) -> Iterator[NeutralEvent]:
    """The terminal's response.output must hold exactly the streamed client calls.

    openai-python and openai-agents execute that final output; a call there that
    was never streamed, one missing there, or one restated with another id, name
    or arguments means they would run something else than what was checked.  A
    null or absent output is rebuilt from the done items by both, so it agrees.
    """
    response = event.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    if output is None:
        return
    if not isinstance(output, list):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"{kind} response.output is {_describe(output)}, not a list")
        return
    final = [entry for entry in output if _client_item(entry)]
    streamed = [(index, item) for index, item in sorted(state.items.items()) if item.client]
    if len(final) != len(streamed):
        yield WireProblem(pos, UNEXPECTED_EVENT, f"{kind} lists {len(final)} client call(s) in response.output, but "
                          f"{len(streamed)} were streamed: openai-python and openai-agents execute that final output")
        return
    for entry, (index, item) in zip(final, streamed):
        where = f"{kind} response.output"
        if entry.get("type") != item.kind:
            yield WireProblem(pos, UNEXPECTED_EVENT, f"{where} holds a {_token(entry.get('type'))} where output item "
                              f"{index} is a {item.kind}", None, index)
            continue
        yield from _responses_restated(pos, where, index, entry, item)


def _responses_snapshot(pos: int, kind: str, event: dict, state: _ResponsesState) -> Iterator[NeutralEvent]:
    """Client calls in a lifecycle event's response.output must be streamed ones, stated the same."""
    response = event.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    for entry in output if isinstance(output, list) else ():
        if not _client_item(entry):
            continue
        found = [(index, item) for index, item in sorted(state.items.items())
                 if item.client and item.kind == entry.get("type") and item.call_id == entry.get("call_id")]
        if not found:
            yield WireProblem(pos, UNEXPECTED_EVENT, f"{kind} response.output holds a client call that was not "
                              "streamed: openai-python's stream state would take it")
            continue
        index, item = found[0]
        yield from _responses_restated(pos, f"{kind} response.output", index, entry, item)


def _responses_restated(pos: int, where: str, index: int, entry: dict, item: _ResponsesItem) -> Iterator[NeutralEvent]:
    """A restated call item (a snapshot or the final output): its identity and its arguments."""
    yield from _responses_restated_identity(pos, where, index, entry, item)
    member = _RESPONSES_ARGUMENT_ITEMS.get(item.kind, (None,))[0]
    if member is not None:
        text = entry.get(member)
        if not isinstance(text, str):
            yield WireProblem(pos, UNEXPECTED_EVENT, f"{where} restates item {index} without string {member}",
                              None, index)
        else:
            yield CallRestated(pos, (None, index), where, text)


def _responses_restated_identity(pos: int, where: str, index: int, body: dict,
                                 item: _ResponsesItem) -> Iterator[NeutralEvent]:
    """call_id and name restated by a done item or the final output must be the announced ones.

    The SDKs run the restated item, so a missing, empty or null call_id or name
    there is a difference too; the item id only ties events to the item and may
    be left out.
    """
    for key, known, required in (("id", item.item_id, False), ("call_id", item.call_id, True),
                                 ("name", item.name, item.kind in _RESPONSES_ARGUMENT_ITEMS)):
        value = body.get(key)
        if (value != known) if required else (value is not None and value != "" and value != known):
            yield WireProblem(pos, IDENTITY_COLLISION, f"{where} restates {key} of item {index} as "
                              f"{_token(value) if value is not None else 'nothing'}, not {_token(known)}", None, index)
    if item.kind in _RESPONSES_ARGUMENT_ITEMS and body.get("namespace") != item.namespace:
        # openai-agents routes a call by (namespace, name): a restatement in another namespace is another tool
        said = body.get("namespace")
        yield WireProblem(pos, IDENTITY_COLLISION, f"{where} restates namespace of item {index} as "
                          f"{_token(said) if said is not None else 'none'}, not "
                          f"{_token(item.namespace) if item.namespace is not None else 'none'}", None, index)


def _responses_item_event(pos: int, kind: str, event: dict, state: _ResponsesState) -> Iterator[NeutralEvent]:
    index = event.get("output_index")
    if not _is_index(index):
        yield WireProblem(pos, MISSING_INDEX,
                          f"{kind} output_index must be a non-negative integer, got {_describe(index)}")
        return
    if kind == "response.output_item.added":
        yield from _responses_item_added(pos, index, event, state)
        return
    item = state.items.get(index)
    if item is None:
        yield WireProblem(pos, MISSING_SLOT, f"{kind} for output item {index}, which was never added", None, index)
        return
    if kind == "response.output_item.done":
        yield from _responses_item_done(pos, index, event, item)
    elif item.kind is None:
        return  # the untranslatable item was already reported when it was added
    elif kind in _RESPONSES_ARGUMENT_EVENTS:
        yield from _responses_arguments(pos, index, kind, event, item)
    elif item.kind not in _RESPONSES_CONTENT_EVENTS[kind]:
        yield WireProblem(pos, UNEXPECTED_EVENT, f"{kind} does not belong to a {item.kind} item ({index})", None, index)
    elif item.finished:
        yield WireProblem(pos, DELTA_AFTER_TERMINAL, f"{kind} after output item {index} was done", None, index)


def _responses_item_added(pos: int, index: int, event: dict, state: _ResponsesState) -> Iterator[NeutralEvent]:
    if index in state.items:
        yield WireProblem(pos, IDENTITY_COLLISION, f"output item {index} was added twice", None, index)
        return
    if index != len(state.items):
        yield WireProblem(pos, MISSING_SLOT, f"output item {index} added, but item {len(state.items)} comes next",
                          None, index)
    body = event.get("item")
    item_type = _wire_str(body.get("type")) if isinstance(body, dict) else None
    client = _client_item(body)
    state.items[index] = item = _ResponsesItem(None)
    if item_type in _RESPONSES_TEXT_ITEMS:
        item.kind = item_type
        return
    if item_type in _RESPONSES_HOSTED_ITEMS and not client:
        item.kind = item_type
        yield HostedUse(pos, item_type)
        return
    if client and item_type not in _RESPONSES_ARGUMENT_ITEMS:
        yield from _responses_unchecked_call(pos, index, body, item_type, item)
    elif item_type not in _RESPONSES_ARGUMENT_ITEMS:
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"output item type {_token(item_type)} has no reviewed normalizer",
                          None, index)
    else:
        yield from _responses_call_added(pos, index, body, item_type, item, state)


def _responses_unchecked_call(pos: int, index: int, body: dict, item_type: str,
                              item: _ResponsesItem) -> Iterator[NeutralEvent]:
    """A call the client executes whose input no reviewed check reads: opened, and the turn blocked."""
    item.kind, item.client = item_type, True
    item.item_id, item.call_id = _wire_str(body.get("id")), _wire_str(body.get("call_id"))
    item.name = _wire_str(body.get("name")) or item_type
    yield SlotOpen(pos, (None, index), item.call_id or item.item_id, item.name, None, item_type)
    yield WireProblem(pos, UNSUPPORTED_EVENT, f"a {item_type} item: the client executes it, but this tool has no "
                      "reviewed check for its input, so nothing in the turn may run", None, index)


def _responses_call_added(pos: int, index: int, body: dict, item_type: str, item: _ResponsesItem,
                          state: _ResponsesState) -> Iterator[NeutralEvent]:
    """A call item whose arguments stream (see _RESPONSES_ARGUMENT_ITEMS): its identity, and the slot it opens."""
    member = _RESPONSES_ARGUMENT_ITEMS[item_type][0]
    fields = [_optional_str(body, key) for key in ("id", "call_id", "name", member, "namespace")]
    if not all(ok for ok, _ in fields) or body.get("namespace") == "":
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"{item_type} id, call_id, name and {member} must be strings, "
                          "and namespace a non-empty string or null", None, index)
        return
    (_, item_id), (_, call_id), (_, name), (_, initial), (_, namespace) = fields
    item.kind, item.item_id, item.call_id, item.name = item_type, item_id, call_id, name
    item.namespace = namespace
    item.client = True
    item.added_arguments = initial or ""
    yield SlotOpen(pos, (None, index), call_id, name, None, _RESPONSES_KIND[item_type], namespace)
    if "." in (name or "") or "." in (namespace or ""):
        # the API's names hold letters, digits, _ and -: a "." would make the key namespace.name ambiguous
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"the {item_type} name or namespace of item {index} holds a \".\", "
                          "which the Responses API never sends: its tool could not be told apart", None, index)
    if item_id:
        other = state.item_ids.setdefault(item_id, index)
        if other != index:
            yield WireProblem(pos, IDENTITY_COLLISION, f"item id {json.dumps(item_id)} is also output item {other}",
                              None, index)


def _responses_arguments(pos: int, index: int, kind: str, event: dict, item: _ResponsesItem) -> Iterator[NeutralEvent]:
    item_type, is_done = _RESPONSES_ARGUMENT_EVENTS[kind]
    if item.kind != item_type:
        yield WireProblem(pos, UNEXPECTED_EVENT, f"{kind} for a {item.kind} item ({index})", None, index)
        return
    if item.finished or (item.arguments_done and not is_done):
        yield WireProblem(pos, DELTA_AFTER_TERMINAL, f"{kind} after the arguments of output item {index} were done",
                          None, index)
        return
    ok, item_id = _optional_str(event, "item_id")
    if not ok or item_id != item.item_id:
        yield WireProblem(pos, IDENTITY_COLLISION, f"{kind} names item {_token(event.get('item_id'))}, but output "
                          f"item {index} is {_token(item.item_id)}", None, index)
        return
    key = (None, index)
    if not is_done:
        delta = event.get("delta")
        if not isinstance(delta, str):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"delta is {_describe(delta)}, not a string", None, index)
            return
        item.streamed = True
        yield Fragment(pos, key, None, None, delta)
    else:
        yield from _responses_arguments_done(pos, index, kind, event, item)


def _responses_arguments_done(pos: int, index: int, kind: str, event: dict,
                              item: _ResponsesItem) -> Iterator[NeutralEvent]:
    """The arguments' done event: their whole text (restated at the item's end) and maybe the name."""
    member = _RESPONSES_ARGUMENT_ITEMS[item.kind][0]
    arguments = event.get(member)
    ok_name, name = _optional_str(event, "name")
    if not isinstance(arguments, str) or not ok_name:
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"{member} must be a string and name a string or null", None, index)
        return
    if item.arguments_done:
        yield WireProblem(pos, DUPLICATE_TERMINAL, f"a second {kind} for output item {index}", None, index)
        return
    item.arguments_done = True
    item.done_arguments = arguments
    if name and name != item.name:
        item.name = item.name or name
        yield Fragment(pos, (None, index), None, name, None)  # the machine judges the restated name


def _responses_item_done(pos: int, index: int, event: dict, item: _ResponsesItem) -> Iterator[NeutralEvent]:
    if item.finished:
        yield WireProblem(pos, DUPLICATE_TERMINAL, f"second response.output_item.done for item {index}", None, index)
        return
    item.finished = True
    if item.kind is None:
        return
    body = event.get("item")
    done_type = body.get("type") if isinstance(body, dict) else None
    if done_type != item.kind or _client_item(body) != item.client:
        yield WireProblem(pos, UNEXPECTED_EVENT,
                          f"output_item.done for item {index} does not restate a {item.kind} item",
                          None, index)
        return
    if item.client and item.kind not in _RESPONSES_ARGUMENT_ITEMS:
        member = _RESPONSES_UNCHECKED_CALLS.get(item.kind, "arguments")
        value = body.get(member)
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        yield Fragment(pos, (None, index), None, None, text)  # reported, never run
        yield SlotEnd(pos, (None, index))
    elif item.kind in _RESPONSES_ARGUMENT_ITEMS:
        yield from _responses_call_done(pos, index, body, item)


def _responses_call_done(pos: int, index: int, body: dict, item: _ResponsesItem) -> Iterator[NeutralEvent]:
    """The done item of a call whose arguments streamed: its identity and arguments as restated, then its end."""
    if body.get("status") == "incomplete":
        yield WireProblem(pos, WRONG_TERMINAL_REASON, f"{item.kind} item {index} is done with status \"incomplete\"",
                          None, index)
    yield from _responses_restated_identity(pos, "output_item.done", index, body, item)
    member, _, done_event = _RESPONSES_ARGUMENT_ITEMS[item.kind]
    restated = []
    if item.added_arguments:
        restated.append(("output_item.added", item.added_arguments))
    if item.done_arguments is not None:
        restated.append((done_event, item.done_arguments))
    final = body.get(member)
    if not isinstance(final, str):
        # the Vercel AI SDK runs the done item, openai-agents parses a missing one as {}
        yield WireProblem(pos, UNEXPECTED_EVENT, f"output_item.done states {member} of item {index} as "
                          f"{_describe(final) if final is not None else 'nothing'}, not a string: an SDK that runs "
                          "the done item would run other arguments", None, index)
    else:
        restated.append(("output_item.done", final))
    if not item.streamed and restated and restated[0][1]:
        # a whole call (xAI) or done-only arguments (LM Studio, Codex): the first statement is the text
        yield Fragment(pos, (None, index), None, None, restated[0][1])
    yield SlotEnd(pos, (None, index), tuple(restated))


# The lifecycle: response.created opens, a terminal, response.failed or error ends or breaks the turn
# (see _RESPONSES_ENDING); the terminal's output is checked, lifecycle events say nothing, the rest are
# about items.
_RESPONSES_ROOM = _EventRoom(
    start="response.created", ending=_RESPONSES_ENDING,
    steps={"response.failed": "failed", "error": "error", **dict.fromkeys(_RESPONSES_TURN_ENDS, "terminal")},
    other="other",
    handlers={"response.created": None, **dict.fromkeys(_RESPONSES_LIFECYCLE),
              **dict.fromkeys(_RESPONSES_TURN_ENDS, _responses_terminal)},
    default=_responses_item_event)


# --- its request, redaction, capture rules and its Profile row ---------------


# tool_choice types of the Responses API that force a hosted (server-side) tool.
_RESPONSES_HOSTED_CHOICES = frozenset({
    "file_search", "web_search", "web_search_preview", "web_search_preview_2025_03_11", "web_search_2025_08_26",
    "computer_use_preview", "computer_use", "code_interpreter", "image_generation", "mcp", "local_shell",
    "shell", "apply_patch",
})


def _responses_tool_ref(entry: Any, where: str) -> tuple[str, str] | None:
    """(name, kind) of a function or custom tool; None for a hosted tool type."""
    kind = _wire_str(entry.get("type")) if isinstance(entry, dict) else None
    if kind in ("function", "custom"):
        _request_members(entry, where, ("type", "name"))
        return _request_name(entry.get("name"), f"{where}.name"), kind
    if kind in _RESPONSES_HOSTED_CHOICES:
        return None
    raise RequestError(f"{where} has the type {_token(kind)}, which is not a reviewed tool type")


def _choice_responses(choice: Any) -> dict:
    """Responses API tool_choice."""
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise RequestError(f"tool_choice {_token(choice)} is not one of none, auto, required")
        return {"none": choice == "none"}
    kind = _wire_str(choice.get("type")) if isinstance(choice, dict) else None
    if kind == "allowed_tools":
        body = _request_members(choice, "tool_choice", ("type", "mode", "tools"))
        if body.get("mode") not in ("auto", "required") or not isinstance(body.get("tools"), list):
            raise RequestError("tool_choice of type allowed_tools needs mode auto or required and a tools list")
        refs = [_responses_tool_ref(t, f"tool_choice.tools[{n}]") for n, t in enumerate(body["tools"])]
        return _restricted([ref[0] for ref in refs if ref is not None])
    if kind in _RESPONSES_HOSTED_CHOICES:
        return {"allowed": frozenset(), "choice_text": f"tool_choice forces the hosted tool {json.dumps(kind)}"}
    return _forced(*_responses_tool_ref(choice, "tool_choice"))


# Responses events whose text is a client call's input, kept byte for byte: event type ->
# the member holding the fragment or the restated whole.
_RESPONSES_INPUT_EVENTS = MappingProxyType({
    "response.function_call_arguments.delta": "delta", "response.function_call_arguments.done": "arguments",
    "response.custom_tool_call_input.delta": "delta", "response.custom_tool_call_input.done": "input",
    "response.shell_call_command.added": "command", "response.shell_call_command.delta": "delta",
    "response.shell_call_command.done": "command",
    "response.apply_patch_call_operation_diff.delta": "delta", "response.apply_patch_call_operation_diff.done": "diff",
})


# Members of an event kept as they are (its type and the numbers and ids that address an item).
_RESPONSES_EVENT_KEEP = frozenset({"type", "item_id", "sequence_number", "output_index", "content_index",
                                   "summary_index", "annotation_index", "command_index", "partial_image_index"})
# ... and, of an event that carries a call's input, the call's identity it restates.
_RESPONSES_INPUT_KEEP = _RESPONSES_EVENT_KEEP | {"name", "call_id", "namespace"}
# Structure a non-call Responses item or event keeps through neutralisation.
_RESPONSES_KEEP = frozenset({"type", "id", "item_id", "status", "call_id", "execution", "object", "role"})


def _redact_responses_item(item: Any) -> Any:
    """A client call item untouched; any other item keeps only its type, ids and status."""
    if isinstance(item, dict) and _client_item(item):
        return item
    return _neutral(item, _RESPONSES_KEEP)


def _redact_responses_event(event: dict) -> dict:
    """Text, reasoning, hosted-tool queries and results, instructions: everything but calls and structure."""
    kind = _wire_str(event.get("type"))   # an object or a list there is no event type (the gate says so)
    if kind in _RESPONSES_INPUT_EVENTS:   # the call's input kept byte for byte, any other member its shape
        return {key: (value if key == _RESPONSES_INPUT_EVENTS[kind] or key in _RESPONSES_INPUT_KEEP
                      else _neutral(value, _RESPONSES_KEEP)) for key, value in event.items()}
    out = {}
    for key, value in event.items():
        if key == "item":
            out[key] = _redact_responses_item(value)
        elif key == "response":
            kept = _redact_responses_response(value)
            out[key] = _neutral(value, _RESPONSES_KEEP) if kept is _AS_SHAPE else kept
        elif key in _RESPONSES_EVENT_KEEP:
            out[key] = value
        else:
            out[key] = _neutral(value, _RESPONSES_KEEP)
    return out


def _redact_responses_response(response: Any) -> Any:
    """An event's response snapshot: its output items as items are, the rest as shapes."""
    if not isinstance(response, dict):
        return _AS_SHAPE
    out = {}
    for k, item in response.items():
        out[k] = ([_redact_responses_item(v) for v in item] if k == "output" and isinstance(item, list)
                  else _neutral(item, _RESPONSES_KEEP))
    return out


def _responses_protected(payload: dict) -> dict[tuple, str]:
    """Responses: argument deltas are fragments; a client call item is identity and arguments.

    The item id an event names, and the name, call_id and namespace an input event restates, are
    identity too: the rules compare them with the item's, so masking one copy would change a verdict."""
    paths: dict[tuple, str] = {("item_id",): "warn"}
    kind = _wire_str(payload.get("type"))
    if kind in _RESPONSES_INPUT_EVENTS:
        member = _RESPONSES_INPUT_EVENTS[kind]
        paths[(member,)] = "fragment" if member == "delta" else "warn"
        paths.update(dict.fromkeys([("name",), ("call_id",), ("namespace",)], "warn"))
    if _client_item(payload.get("item")):
        paths[("item",)] = "warn"
    response = payload.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    for number, entry in enumerate(output if isinstance(output, list) else []):
        if _client_item(entry):
            paths[("response", "output", number)] = "warn"
    return paths


def _responses_tool_entry(where: str, tool: dict) -> list[tuple[str, Any]] | None:
    """A flat function tools entry {"type": "function", "name", "parameters"}; None for any other entry."""
    if tool.get("type") == "function" and "function" not in tool:
        return _declared_tool(where, tool, "parameters")
    return None


def _responses_stream_error(payload: dict) -> bool:
    return "error" in payload or payload.get("type") == "error"


def _responses_whole_response(payload: dict) -> str | None:
    if payload.get("object") == "response" and "output" in payload:
        return "a non-streaming Responses API object (\"object\": \"response\"); capture the stream=true response"
    return None


def _responses_claims(payload: dict) -> bool:
    kind = payload.get("type")
    return isinstance(kind, str) and (kind.startswith("response.") or kind == "error" and "code" in payload)


def _responses_namespace(where: str, tool: dict) -> list[tuple[str, Any, str]]:
    """The functions of a Responses `namespace` tool, each named "namespace.name" in tool_schemas.

    That is the name openai-agents gives a namespaced tool (tool_choice included), and the
    key a namespaced call is looked up by (Slot.tool_key).  A function named like its own
    namespace would be read as a deferred top-level function (the API marks those calls
    with namespace == name), so it is refused.
    """
    name, inner = tool.get("name"), tool.get("tools")
    if not isinstance(name, str) or not name or "." in name:
        raise CaptureError(f"{where} is a namespace tool whose name is not a non-empty string without \".\"")
    if not isinstance(inner, list):
        raise CaptureError(f"{where}.tools is {_describe(inner)}, not a list")
    out = []
    for number, entry in enumerate(inner):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and "." in entry["name"]:
            raise CaptureError(f"{where}.tools[{number}] has a name with a \".\": {name}.<name> would be ambiguous")
        if isinstance(entry, dict) and entry.get("name") == name:
            raise CaptureError(f"{where}.tools[{number}] has the name of its namespace: the Responses API marks a "
                               "deferred top-level function's calls that way, so its calls could not be told apart")
        if not (isinstance(entry, dict) and entry.get("type") in ("function", "custom")):
            raise CaptureError(f"{where}.tools[{number}] is not a function or custom tool")
        out.append((f"{where}.tools[{number}]", entry, name + "."))
    return out


def _responses_expand_tool(where: str, tool: Any) -> list[tuple[str, Any, str]]:
    """A Responses tool entry: a namespace tool stands for its functions."""
    if isinstance(tool, dict) and tool.get("type") == "namespace":
        return _responses_namespace(where, tool)
    return [(where, tool, "")]



# The Responses API's errors before a stream: the OpenAI platform's {"error": {"message", "type", "param",
# "code"}} (https://platform.openai.com/docs/guides/error-codes), read by openai-python's _exceptions.py
# as the chat room's are; a 429 with retry-after, which its retry waits for.
_RESPONSES_ERRORS = (
    http_error("rate_limit", 429, {"error": {
        "message": "Rate limit reached for gpt-4.1 in organization org-vts on requests per min (RPM): Limit 3, "
                   "Used 3, Requested 1. Please try again in 1s.",
        "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
        (("retry-after", "1"), ("x-request-id", "req_vts_rate_limit"))),
    http_error("server_error", 500, {"error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error", "param": None, "code": None}}, (("x-request-id", "req_vts_server_error"),)),
    http_error("overloaded", 503, {"error": {
        "message": "The engine is currently overloaded, please try again later",
        "type": "server_error", "param": None, "code": None}}, (("x-request-id", "req_vts_overloaded"),)),
)
def _responses_tools(schemas: dict, custom: set | frozenset = frozenset()) -> list:
    """Responses tools: flat function tools (a name in `custom` a custom tool); the functions named
    "namespace.name" grouped into their namespace tools, as openai-agents sends them."""
    tools: list = []
    spaces: dict[str, list] = {}
    for name, schema in schemas.items():
        space, _, inner = name.partition(".")
        entry = {"type": "custom", "name": inner or name} if name in custom else \
            {"type": "function", "name": inner or name, "parameters": schema}
        if inner and space and "." not in inner and inner != space:
            if space not in spaces:
                spaces[space] = []
                tools.append({"type": "namespace", "name": space, "tools": spaces[space]})
            spaces[space].append(entry)
        else:
            tools.append(dict(entry, name=name))
    return tools


def _responses_request_body(schemas: dict, request: dict) -> dict:
    choice = request.get("tool_choice")
    refs = choice.get("tools", []) if isinstance(choice, dict) and choice.get("type") == "allowed_tools" else [choice]
    custom = {ref["name"] for ref in refs if isinstance(ref, dict) and ref.get("type") == "custom"}
    body: dict[str, Any] = {"model": "gpt-4.1", "stream": True, "input": REQUEST_PROMPT}
    if schemas:
        body["tools"] = _responses_tools(schemas, custom)
    return dict(body, **_request_controls(request, ("tool_choice", "parallel_tool_calls")))


def _responses_sdk_item(item: Any, normalizer: Any, pos: int) -> Any:
    """An openai-python Responses event: an arguments delta of plain members read from its attributes (see above),
    any other object dumped as the generic reader dumps it."""
    try:
        entry = _responses_flat_fields(type(item))
        if entry is not None and not item.__pydantic_extra__ and item.__pydantic_fields_set__ <= entry[1]:
            sent, values, out = item.__pydantic_fields_set__, item.__dict__, {}
            for name in entry[0]:
                if name in sent:
                    value = out[name] = values[name]
                    if value is not None and type(value) is not str and type(value) is not int:
                        break
            else:
                return out
    except Exception:   # noqa: BLE001 - an attribute that is not there: the dump decides
        pass
    return _sdk_dump(item)


OPENAI_RESPONSES = Profile(
    name="openai-responses", stream_key="events",
    rules=TurnRules(tool_reason="completed", needs_close=False, stop_name="response.completed",
                    slot_end_name="response.output_item.done"),
    wire=WireRules(normalizer=lambda limits: ResponsesNormalizer(), protected_paths=_responses_protected,
                   fragment_key=_fragment_key_at("output_index"), sdk_item=_responses_sdk_item),
    request=RequestRules(choice=_choice_responses, parallel_field=True, expand_tool=_responses_expand_tool,
                         tool_entry=_responses_tool_entry),
    capture=CaptureRules(family="openai-responses", claims=_responses_claims, redact=_redact_responses_event,
                         stream_error=_responses_stream_error, whole_response=_responses_whole_response),
    http=HttpRules(api_path=r"/v1/responses", frame=_named_events_frame, api_example="/v1/responses",
                   tools_shape=_responses_tools, request_body=_responses_request_body, errors=_RESPONSES_ERRORS,
                   framings=SERVE_FRAMINGS))


# ---------------------------------------------------------------------------
# Provider: AWS Bedrock ConverseStream events (profile bedrock)
# ---------------------------------------------------------------------------
#
# Each event is {"<member>": {...}} with exactly one member (the AWS event-stream
# :event-type).  Only toolUse blocks have a contentBlockStart; text and reasoning
# blocks begin with their first delta, so a non-tool delta for a new index opens
# that block implicitly, while a toolUse delta for a new index is missing_slot.

# Which block kinds a delta member belongs to.  "serverToolUse" and "toolResult" are the
# blocks of a hosted (system) tool: Bedrock runs it inside the turn; never a call.
_BEDROCK_DELTA_BLOCKS = {
    "toolUse": frozenset({"toolUse", "serverToolUse"}),
    "text": frozenset({"text"}),
    "citation": frozenset({"text"}),
    "reasoningContent": frozenset({"reasoningContent"}),
    "toolResult": frozenset({"toolResult"}),
}
# Reviewed system tools (toolUse.type "server_tool_use") -> the toolResult type that answers them.
_BEDROCK_SYSTEM_TOOLS = MappingProxyType({
    "nova_code_interpreter": "nova_code_interpreter_result",
    "nova_grounding": "nova_grounding_result",
})
# toolUse.type values of a client call: absent (the API reference) or "tool_use" (what Nova 2 sends).
_BEDROCK_CLIENT_TOOL_TYPES = (None, "tool_use")
_BEDROCK_EXCEPTIONS = frozenset({
    "internalServerException", "modelStreamErrorException", "validationException",
    "throttlingException", "serviceUnavailableException",
})
_BEDROCK_BLOCK_EVENTS = frozenset({"contentBlockStart", "contentBlockDelta", "contentBlockStop"})
_BEDROCK_MEMBERS = (frozenset({"messageStart", "messageStop", "metadata"}) | _BEDROCK_BLOCK_EVENTS
                    | _BEDROCK_EXCEPTIONS)


# The end of a turn as a transition table: (phase, step) -> (next phase, what is wrong or None).
# "stopped": a messageStop with a stopReason came; metadata may still follow (it is not a step).
_BEDROCK_ENDING: Mapping[tuple[str, str], tuple[str, str | None]] = MappingProxyType({
    ("running", "stopReason"): ("stopped", None),
    ("stopped", "stopReason"): ("stopped", None),     # a second one is the machine's duplicate_terminal
    ("running", "messageStop"): ("running", None),
    ("stopped", "messageStop"): ("stopped", None),
    ("running", "block"): ("running", None),
    ("stopped", "block"): ("stopped", "{event} after messageStop"),
    ("running", "quiet"): ("running", None),          # messageStart, metadata (usage and metrics)
    ("stopped", "quiet"): ("stopped", None),
})


class _BedrockState(_Record):
    """Translation state: which blocks exist, their kinds, whether stopped."""

    __slots__ = ("opening", "ending", "blocks", "hosted", "client_ids")

    def __init__(self) -> None:
        self.opening = "new"      # see _OPENING
        self.ending = "running"   # see _BEDROCK_ENDING
        self.blocks: dict[int, list] = {}  # index -> [kind or None, stopped]
        self.hosted: dict[str, list] = {}  # system tool use id -> [block index, result type wanted, answered]
        self.client_ids: set[str] = set()  # toolUseIds of client calls (a system tool may not share one)


class BedrockNormalizer:
    """Translate ConverseStream events into neutral events, one at a time."""

    def __init__(self) -> None:
        self.state = _BedrockState()

    def finish(self) -> Iterator[NeutralEvent]:
        """End of stream: every system tool use has its result, every hosted block its stop."""
        for index, _, answered in self.state.hosted.values():
            if not answered:
                yield WireProblem(None, MISSING_TERMINAL, f"system tool use in block {index} has no toolResult block",
                                  None, index)
        for index, (kind, stopped) in sorted(self.state.blocks.items()):
            if not stopped and kind in ("serverToolUse", "toolResult"):
                yield WireProblem(None, MISSING_TERMINAL, f"{kind} block {index} has no contentBlockStop", None, index)

    def translate(self, pos: int, event: Any) -> Iterator[NeutralEvent]:
        state = self.state
        if not isinstance(event, dict) or len(event) != 1:
            yield WireProblem(pos, UNSUPPORTED_EVENT,
                              f"event is {_describe(event)}, not an object with exactly one member")
            return
        (member, body), = event.items()
        if member in _BEDROCK_EXCEPTIONS or isinstance(member, str) and member.endswith("Exception"):
            # botocore and the JavaScript SDK raise on every exception frame, whatever it is called
            yield WireProblem(pos, STREAM_ERROR, f"the provider sent {_token(member)}")
            return
        if member not in _BEDROCK_MEMBERS:
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"event member {_token(member)} has no reviewed normalizer")
            return
        if not isinstance(body, dict):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"{member} is {_describe(body)}, not an object")
            return
        yield from _BEDROCK_ROOM.read(pos, member, body, state)


def _bedrock_message_stop(pos: int, member: str, body: dict, state: _BedrockState) -> Iterator[NeutralEvent]:
    reason = body.get("stopReason")
    if not isinstance(reason, str):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"stopReason is {_describe(reason)}, not a string")
        return
    state.ending, _ = _ending(pos, _BEDROCK_ENDING, state.ending, "stopReason", "stopReason")
    yield TurnEnd(pos, reason)  # a second one is the machine's duplicate_terminal


def _bedrock_block_event(pos: int, member: str, body: dict, state: _BedrockState) -> Iterator[NeutralEvent]:
    index = body.get("contentBlockIndex")
    if not _is_index(index):
        yield WireProblem(pos, MISSING_INDEX, f"{member} contentBlockIndex must be a non-negative integer, "
                          f"got {_describe(index)}")
        return
    if member == "contentBlockStart":
        yield from _bedrock_block_start(pos, index, body, state)
    elif member == "contentBlockDelta":
        yield from _bedrock_block_delta(pos, index, body, state)
    else:
        yield from _bedrock_block_stop(pos, index, state)


def _bedrock_new_block(pos: int, index: int, kind: str | None, state: _BedrockState) -> Iterator[NeutralEvent]:
    if index != len(state.blocks):
        yield WireProblem(pos, MISSING_SLOT, f"block {index} begins, but block {len(state.blocks)} comes next", None,
                          index)
    state.blocks[index] = [kind, False]


def _bedrock_block_start(pos: int, index: int, body: dict, state: _BedrockState) -> Iterator[NeutralEvent]:
    if index in state.blocks:
        yield WireProblem(pos, IDENTITY_COLLISION, f"block {index} was started twice", None, index)
        return
    yield from _bedrock_new_block(pos, index, None, state)
    start = body.get("start")
    member, value = next(iter(start.items())) if isinstance(start, dict) and len(start) == 1 else (None, None)
    if member == "toolResult" and isinstance(value, dict):
        yield from _bedrock_system_result(pos, index, value, state)
        return
    tool = value if member == "toolUse" else None
    if isinstance(tool, dict) and tool.get("type") == "server_tool_use":
        yield from _bedrock_system_use(pos, index, tool, state)
        return
    if not isinstance(tool, dict) or not any(tool.get("type") == kind for kind in _BEDROCK_CLIENT_TOOL_TYPES):
        # an image start, an unknown toolUse.type ... have no reviewed normalizer.
        yield WireProblem(pos, UNSUPPORTED_EVENT, "contentBlockStart is not a reviewed toolUse or toolResult start",
                          None, index)
        return
    yield from _bedrock_client_use(pos, index, tool, state)


def _bedrock_client_use(pos: int, index: int, tool: dict, state: _BedrockState) -> Iterator[NeutralEvent]:
    """A client call's toolUse start: its identity opens the slot (its input streams in deltas)."""
    ok_id, call_id = _optional_str(tool, "toolUseId")
    ok_name, name = _optional_str(tool, "name")
    if not (ok_id and ok_name) or tool.get("input") is not None:
        # a start that states input would be a second source of arguments (the reference has none)
        yield WireProblem(pos, UNSUPPORTED_EVENT, "toolUse start must carry string toolUseId and name, and no input",
                          None, index)
        return
    state.blocks[index][0] = "toolUse"
    if call_id in state.hosted:
        yield WireProblem(pos, IDENTITY_COLLISION, f"client toolUse in block {index} has the toolUseId of a system "
                          "tool use", None, index)
    elif call_id:
        state.client_ids.add(call_id)
    # A tool without arguments streams input "" (or nothing): the joined "" becomes {}.
    yield SlotOpen(pos, (None, index), call_id, name, {})


def _bedrock_system_use(pos: int, index: int, tool: dict, state: _BedrockState) -> Iterator[NeutralEvent]:
    """A system tool (toolUse.type server_tool_use): counted and paired with its toolResult, never a call."""
    use_id, name = tool.get("toolUseId"), tool.get("name")
    wanted = _BEDROCK_SYSTEM_TOOLS.get(name) if isinstance(name, str) else None
    if not isinstance(use_id, str) or not use_id or wanted is None:
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"system tool use in block {index} is not a reviewed system tool "
                          f"(name {_token(name)}) with a string toolUseId", None, index)
        return
    state.blocks[index][0] = "serverToolUse"
    if use_id in state.client_ids:
        yield WireProblem(pos, IDENTITY_COLLISION, f"system tool use in block {index} has the toolUseId of a client "
                          "call", None, index)
    if use_id in state.hosted:
        yield WireProblem(pos, IDENTITY_COLLISION, f"system tool use in block {index} reuses the toolUseId of block "
                          f"{state.hosted[use_id][0]}", None, index)
        return
    state.hosted[use_id] = [index, wanted, False]
    # only toolUse.type tells it from a client call: the Vercel AI SDK reads the name alone
    yield HostedUse(pos, name, by_name=True)


def _bedrock_system_result(pos: int, index: int, result: dict, state: _BedrockState) -> Iterator[NeutralEvent]:
    """A toolResult start: it answers a system tool use of this turn, once and with the right type."""
    state.blocks[index][0] = "toolResult"
    use_id = result.get("toolUseId")
    use = state.hosted.get(use_id) if isinstance(use_id, str) else None
    if use is None:
        yield WireProblem(pos, MISSING_SLOT, f"toolResult block {index} answers no system tool use of this turn",
                          None, index)
    elif use[1] != result.get("type"):
        yield WireProblem(pos, UNEXPECTED_EVENT, f"toolResult block {index} has type {_token(result.get('type'))}, "
                          f"but the system tool use in block {use[0]} expects {use[1]}", None, index)
    elif use[2]:
        yield WireProblem(pos, DUPLICATE_TERMINAL, f"a second toolResult for the system tool use in block {use[0]}",
                          None, index)
    if use is not None:
        use[2] = True


def _bedrock_block_delta(pos: int, index: int, body: dict, state: _BedrockState) -> Iterator[NeutralEvent]:
    delta = body.get("delta")
    member = next(iter(delta)) if isinstance(delta, dict) and len(delta) == 1 else None
    if member not in _BEDROCK_DELTA_BLOCKS:
        yield WireProblem(pos, UNSUPPORTED_EVENT, "contentBlockDelta.delta is not one reviewed member "
                          f"(got {_token(member)})", None, index)
        return
    wanted = _BEDROCK_DELTA_BLOCKS[member]
    block = state.blocks.get(index)
    if block is None:
        if member in ("toolUse", "toolResult"):
            yield WireProblem(pos, MISSING_SLOT, f"{member} delta for block {index}, which was never started", None,
                              index)
            return
        yield from _bedrock_new_block(pos, index, member if member != "citation" else "text", state)  # begin implicitly
        block = state.blocks[index]
    kind, stopped = block
    if kind is None:
        return  # the unsupported block was already reported at its start
    if kind not in wanted:
        yield WireProblem(pos, UNEXPECTED_EVENT, f"{member} delta does not belong to a {kind} block ({index})", None,
                          index)
        return
    if kind != "toolUse":
        if stopped:
            yield WireProblem(pos, DELTA_AFTER_TERMINAL, f"{member} delta after block {index} stopped", None, index)
        return
    tool = delta["toolUse"]
    text = tool.get("input") if isinstance(tool, dict) else None
    if not isinstance(text, str):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"toolUse.input is {_describe(text)}, not a string", None, index)
        return
    yield Fragment(pos, (None, index), None, None, text)


def _bedrock_block_stop(pos: int, index: int, state: _BedrockState) -> Iterator[NeutralEvent]:
    block = state.blocks.get(index)
    if block is None:
        yield WireProblem(pos, MISSING_SLOT, f"contentBlockStop for block {index}, which never began", None, index)
        return
    kind, stopped = block
    if kind == "toolUse":
        yield SlotEnd(pos, (None, index))
    elif kind is not None and stopped:
        yield WireProblem(pos, DUPLICATE_TERMINAL, f"second contentBlockStop for block {index}", None, index)
    block[1] = True


# The lifecycle: messageStart opens, messageStop ends (see _BEDROCK_ENDING), and what each member says.
_BEDROCK_ROOM = _EventRoom(
    start="messageStart", ending=_BEDROCK_ENDING,
    steps={"messageStop": "messageStop", "messageStart": "quiet", "metadata": "quiet"}, other="block",
    handlers={"messageStop": _bedrock_message_stop, **dict.fromkeys(_BEDROCK_BLOCK_EVENTS, _bedrock_block_event)})


# --- its request, redaction, capture rules and its Profile row ---------------


def _choice_bedrock(choice: Any) -> dict:
    """Bedrock Converse toolConfig.toolChoice: {"auto": {}} | {"any": {}} | {"tool": {"name"}}."""
    if not isinstance(choice, dict) or len(choice) != 1:
        raise RequestError("tool_choice must be one of {\"auto\": {}}, {\"any\": {}}, {\"tool\": {\"name\": ...}}")
    (kind, body), = choice.items()
    if kind == "tool":
        return _forced(_request_name(_request_members(body, "tool_choice.tool", ("name",)).get("name"),
                                     "tool_choice.tool.name"))
    if kind not in ("auto", "any") or body != {}:
        raise RequestError("tool_choice must be one of {\"auto\": {}}, {\"any\": {}}, {\"tool\": {\"name\": ...}}")
    return {}


def _redact_bedrock_event(event: dict) -> dict:
    """Text, reasoning, citations and system-tool results; client toolUse starts and inputs are kept."""
    if len(event) != 1:
        return _neutral(event)
    (member, body), = event.items()
    if not isinstance(body, dict):
        return {member: _neutral(body)}
    out = {}
    for key, value in body.items():
        if key in ("contentBlockIndex", "stopReason", "role"):
            out[key] = value
        elif key == "start" and isinstance(value, dict) and isinstance(value.get("toolUse"), dict):
            out[key] = value
        elif key == "delta" and isinstance(value, dict) and set(value) == {"toolUse"}:
            out[key] = value
        else:
            out[key] = _neutral(value, _BEDROCK_KEEP)
    return {member: out}


_BEDROCK_KEEP = frozenset({"toolUseId", "type", "status"})


def _bedrock_protected(payload: dict) -> dict[tuple, str]:
    """Bedrock: a toolUse start is call identity; its input deltas are argument fragments."""
    paths: dict[tuple, str] = {}
    start = payload.get("contentBlockStart")
    if isinstance(start, dict) and isinstance(start.get("start"), dict) and "toolUse" in start["start"]:
        paths[("contentBlockStart", "start", "toolUse")] = "warn"
    delta = payload.get("contentBlockDelta")
    if isinstance(delta, dict) and isinstance(delta.get("delta"), dict) and isinstance(
            delta["delta"].get("toolUse"), dict):
        paths[("contentBlockDelta", "delta", "toolUse", "input")] = "fragment"
    return paths


def _bedrock_fragment_key(payload: dict, path: tuple) -> tuple | None:
    index = payload["contentBlockDelta"].get("contentBlockIndex")
    return (None, index) if _is_index(index) else None


def _bedrock_stream_error(payload: dict) -> bool:
    """An exception event, one member of a reviewed exception name."""
    return len(payload) == 1 and next(iter(payload)) in _BEDROCK_EXCEPTIONS


def _bedrock_foreign_shape(payload: dict) -> str | None:
    """A frame of InvokeModelWithResponseStream (the other streaming API of Bedrock)."""
    if set(payload) == {"chunk"} and isinstance(payload["chunk"], dict) and "bytes" in payload["chunk"]:
        return ("a Bedrock InvokeModelWithResponseStream body (chunk frames carrying base64 model events), "
                "not ConverseStream: for a Claude model, capture the raw AWS event-stream body with --profile "
                "anthropic; no other model's events are read")
    return None


def _bedrock_whole_response(payload: dict) -> str | None:
    if isinstance(payload.get("output"), dict) and "stopReason" in payload:
        return "a non-streaming Bedrock Converse response; capture ConverseStream"
    return None


def _bedrock_claims(payload: dict) -> bool:
    return len(payload) == 1 and next(iter(payload)) in ("messageStart", "contentBlockStart", "contentBlockDelta",
                                                         "contentBlockStop", "messageStop", "metadata")


def _bedrock_request_tools(body: dict) -> tuple[list, Any]:
    """(tools, tool_choice) of a Converse request: toolConfig.tools' toolSpecs and toolChoice."""
    config = body.get("toolConfig") or {}
    if not isinstance(config, dict):
        raise CaptureError(f"toolConfig is {_describe(config)}, not an object")
    tools = config.get("tools") or []
    out = []
    for number, tool in enumerate(tools if isinstance(tools, list) else []):
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        if isinstance(spec, dict):
            schema = spec.get("inputSchema")
            out.append({"name": spec.get("name"), "input_schema": schema.get("json") if isinstance(schema, dict)
                        else None})
        elif not (isinstance(tool, dict) and "systemTool" in tool):
            raise CaptureError(f"toolConfig.tools[{number}] is neither a toolSpec nor a systemTool")
    return out, config.get("toolChoice")


def _bedrock_frame(stream: list, query: str) -> tuple[str, bytes]:
    """ConverseStream: one AWS event-stream frame per event, named by its member (an exception
    member in an exception frame)."""
    return "application/vnd.amazon.eventstream", b"".join(eventstream_frame(event) for event in stream)


# Bedrock's errors before a stream: the exception's name in the x-amzn-ErrorType header (botocore's
# rest-json parser reads the code from it, up to the first ":") and {"message"} as the body, as the
# ConverseStream API reference lists them (ThrottlingException 429, InternalServerException 500,
# ServiceUnavailableException 503); botocore's retry handler retries all three.
_BEDROCK_CORAL = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
_BEDROCK_ERRORS = (
    http_error("rate_limit", 429, {"message": "Too many requests, please wait before trying again."},
               (("x-amzn-ErrorType", "ThrottlingException" + _BEDROCK_CORAL),
                ("x-amzn-RequestId", "7c1a9d7e-0000-4000-8000-00000000a429"))),
    http_error("server_error", 500, {"message": "The system encountered an unexpected error during processing. "
                                                "Try your request again."},
               (("x-amzn-ErrorType", "InternalServerException" + _BEDROCK_CORAL),
                ("x-amzn-RequestId", "7c1a9d7e-0000-4000-8000-00000000a500"))),
    http_error("overloaded", 503, {"message": "Bedrock is unable to process your request."},
               (("x-amzn-ErrorType", "ServiceUnavailableException" + _BEDROCK_CORAL),
                ("x-amzn-RequestId", "7c1a9d7e-0000-4000-8000-00000000a503"))),
)


def _eventstream_envelope(raw: bytes, encode: bool = False) -> EventStreamRead:
    """The bedrock capture: a binary AWS event stream instead of SSE."""
    return EventStreamRead("AWS event stream")


def _bedrock_tools(schemas: dict) -> dict:
    """Converse toolConfig's tools: a toolSpec per tool."""
    return {"tools": [{"toolSpec": {"name": n, "inputSchema": {"json": s}}} for n, s in schemas.items()]}


def _bedrock_request_body(schemas: dict, request: dict) -> dict:
    """A ConverseStream request (the model is in its path; the endpoint streams): toolConfig holds the tools
    and toolChoice."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": [{"text": REQUEST_PROMPT}]}]}
    config = dict(_bedrock_tools(schemas) if schemas else {}, **{
        "toolChoice": value for value in _request_controls(request, ("tool_choice",)).values()})
    if config:
        body["toolConfig"] = config
    return body


BEDROCK = Profile(
    name="bedrock", stream_key="events",
    rules=TurnRules(tool_reason="tool_use", needs_close=False, stop_name="messageStop.stopReason",
                    slot_end_name="contentBlockStop"),
    wire=WireRules(normalizer=lambda limits: BedrockNormalizer(), protected_paths=_bedrock_protected,
                   fragment_key=_bedrock_fragment_key),
    request=RequestRules(choice=_choice_bedrock, tools=_bedrock_request_tools),
    capture=CaptureRules(family="bedrock", claims=_bedrock_claims, redact=_redact_bedrock_event,
                         binary_body=_eventstream_envelope, stream_error=_bedrock_stream_error,
                         foreign_shape=_bedrock_foreign_shape, whole_response=_bedrock_whole_response),
    http=HttpRules(api_path=r"/model/[^/]+/converse-stream", frame=_bedrock_frame,
                   api_example="/model/us.anthropic.claude-sonnet-4-20250514-v1:0/converse-stream",
                   tools_shape=_bedrock_tools, request_body=_bedrock_request_body, errors=_BEDROCK_ERRORS))


# ---------------------------------------------------------------------------
# Provider: Gemini streamGenerateContent, Gemini API and Vertex AI (profile gemini)
# ---------------------------------------------------------------------------
#
# Each chunk is one GenerateContentResponse.  A call is a functionCall part in a
# candidate's content; its slot is (candidate index, its ordinal among that
# candidate's calls), so the report's `choice` is the candidate and `index` the
# call's order.  Vertex omits `index` (proto3 JSON leaves out a zero), so an
# absent index is candidate 0.  A functionCall usually arrives whole, with an
# `args` object (absent args: no arguments, {}), and becomes a slot opened with
# that object as its start input: the report's arguments are its compact JSON
# serialisation (the same as for an Anthropic start input).  With Vertex's
# streamed arguments a call opens with {name, willContinue: true}, then parts
# carry partialArgs (one JSON path and one typed value each; string values for
# one path concatenate while willContinue says more follows), and the first
# functionCall part of that call without willContinue is its final part.  The
# pieces are put together here, by path, into one object whose serialisation
# is the call's single fragment; a path that cannot be placed is a finding and
# nothing is guessed.
#
# A whole call ends where it arrives; a streamed call at its final part.  Gemini
# has no tool-specific finish reason: a turn with calls ends "STOP", the same
# reason as a text turn, and a STOP may come before more parts of the same
# candidate (recorded with code execution).  So the finish of the candidate with
# calls is the turn's stop reason, emitted at the end of the stream: any other
# reason it gave (blocked), else its last STOP, which must come after its last
# call part.  A candidate without calls emits no finish: STOP there is a text turn.

_GEMINI_STOP = "STOP"
# Reasons that say the model tried to call a function and failed: a tool signal even with no call.
_GEMINI_TOOL_FAILURES = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS",
                                   "FINISH_REASON_9", "FINISH_REASON_10", "FINISH_REASON_12", "FINISH_REASON_13",
                                   "FINISH_REASON_14", "FINISH_REASON_15"})
# Enums as proto numbers: the GAPIC REST clients (python-aiplatform, google-ai-generativelanguage,
# the Node and Go REST transports) ask for "$alt=json;enum-encoding=int" and get every enum as its
# number.  FinishReason 0-5 are the same in the Gemini API and Vertex AI and read as their names.
# From 6 on the two APIs number differently (MALFORMED_FUNCTION_CALL is 10 in the Gemini API and
# 9 in Vertex AI, where 10 is MODEL_ARMOR) and a body does not say which API sent it, so such a
# number reads as FINISH_REASON_<n>: never STOP, and a tool failure when either API says so
# (above: the Gemini API's 10, 12, 13; Vertex AI's 9, and UNEXPECTED_TOOL_CALL, 15 in the
# current aiplatform protos and 14 in the older @google-cloud/vertexai enum).  Outcome and
# the enums only type-checked (language, modality, safety ratings, URL status, traffic type)
# number alike in both.
_GEMINI_FINISH_NUMBERS = MappingProxyType({0: "FINISH_REASON_UNSPECIFIED", 1: "STOP", 2: "MAX_TOKENS", 3: "SAFETY",
                                           4: "RECITATION", 5: "OTHER"})
_GEMINI_OUTCOME_NUMBERS = MappingProxyType({0: "OUTCOME_UNSPECIFIED", 1: "OUTCOME_OK", 2: "OUTCOME_FAILED",
                                            3: "OUTCOME_DEADLINE_EXCEEDED"})
_GEMINI_ENUM = "enum"   # a member type: an enum's name (a string) or its proto number (an integer)


def _gemini_enum_name(value: Any, numbers: Mapping[int, str], prefix: str) -> Any:
    """An enum member as its name: a string as it is, a proto number by the table (else PREFIX_<n>)."""
    if type(value) is not int:
        return value
    if value in numbers:
        return numbers[value]
    return f"{prefix}_{value}" if 0 <= value <= 2 ** 31 else f"{prefix}_OUT_OF_RANGE"
# A part holds exactly one of these data members, and any of the metadata members.
_GEMINI_PART_DATA = frozenset({"text", "inlineData", "fileData", "functionCall", "executableCode",
                               "codeExecutionResult", "toolCall", "toolResponse"})
_GEMINI_PART_META = frozenset({"thought", "thoughtSignature", "videoMetadata", "partMetadata", "mediaResolution"})
_GEMINI_CALL_KEYS = frozenset({"id", "name", "args", "partialArgs", "willContinue"})
# A chunk carries at least one of these; other members beside them (SDK additions) are ignored.
_GEMINI_CHUNK_KEYS = frozenset({"candidates", "usageMetadata", "promptFeedback", "modelVersion", "responseId",
                                "createTime", "modelStatus", "error"})
_GEMINI_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue")
_GEMINI_ARG_KEYS = frozenset(_GEMINI_VALUE_KEYS) | {"jsonPath", "willContinue"}
_GEMINI_CODE_OUTCOMES = frozenset({"OUTCOME_OK", "OUTCOME_FAILED", "OUTCOME_DEADLINE_EXCEEDED",
                                   "OUTCOME_UNSPECIFIED"})
# Server-side tool invocations (toolCall / toolResponse parts, "tool combination"): toolType -> hosted name.
_GEMINI_SERVER_TOOLS = MappingProxyType({
    "GOOGLE_SEARCH_WEB": "google_search", "GOOGLE_SEARCH_IMAGE": "google_search_image", "URL_CONTEXT": "url_context",
    "GOOGLE_MAPS": "google_maps", "FILE_SEARCH": "file_search",
})
# A finish reason that is not a finish: google-genai continues the turn in another request
# (continuationToken) and clears it; the turn's real finish comes later in the stitched stream.
_GEMINI_CONTINUATION = "CONTINUATION"
# The JSON type each reader-parsed member must have (google-genai validates every chunk with
# its models and raises mid-stream; the Vercel AI SDK drops a chunk its schema refuses).
# Absent or null is always fine.  Checked on every chunk; the presence rules of the Vercel
# schema (_gemini_dropped_by_vercel) only matter, and are only checked, on chunks with calls.
# (content, promptFeedback and the hosted metadata have checks of their own.)
_GEMINI_CHUNK_TYPES = MappingProxyType({"responseId": str, "modelVersion": str, "createTime": str,
                                        "usageMetadata": dict, "modelStatus": dict})
_GEMINI_CANDIDATE_TYPES = MappingProxyType({
    "finishMessage": str, "continuationToken": str, "avgLogprobs": float, "tokenCount": int,
    "safetyRatings": list, "citationMetadata": dict, "logprobsResult": dict,
})
_GEMINI_USAGE_TYPES = MappingProxyType({
    **dict.fromkeys(("cachedContentTokenCount", "thoughtsTokenCount", "promptTokenCount", "candidatesTokenCount",
                     "toolUsePromptTokenCount", "totalTokenCount"), int),
    **dict.fromkeys(("promptTokensDetails", "cacheTokensDetails", "candidatesTokensDetails",
                     "toolUsePromptTokensDetails"), list),
    "trafficType": _GEMINI_ENUM, "serviceTier": _GEMINI_ENUM,
})
# google-genai reads these as bytes: base64 in either alphabet, padding optional.
_GEMINI_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
_GEMINI_BASE64_DIGITS = MappingProxyType({ch: n for n, ch in enumerate(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")} | {"-": 62, "_": 63})
_GEMINI_PART_META_TYPES = MappingProxyType({"thought": bool, "thoughtSignature": str, "videoMetadata": dict,
                                            "partMetadata": dict, "mediaResolution": dict})
_GEMINI_RATING_TYPES = MappingProxyType({"category": _GEMINI_ENUM, "probability": _GEMINI_ENUM,
                                         "probabilityScore": float, "severity": _GEMINI_ENUM,
                                         "severityScore": float, "blocked": bool})
# Candidate members that report a hosted tool (the provider ran it): member -> hosted tool name.
_GEMINI_HOSTED_METADATA = MappingProxyType({"groundingMetadata": "grounding", "urlContextMetadata": "url_context"})
# One segment of a JSON path (RFC 9535): .name (member-name-shorthand), ['name'] or [index].
# A shorthand name starts with A-Z, a-z, _ or any non-ASCII character but a surrogate, and goes
# on with those and 0-9; the classes say so by what they exclude (a class listing the ranges up to
# U+10FFFF takes milliseconds to compile at every start).
_GEMINI_PATH_SEGMENT = re.compile(
    r"\.([^\x00-\x40\x5b-\x5e\x60\x7b-\x7f\ud800-\udfff][^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f\ud800-\udfff]*)"
    r"|\[(0|[1-9][0-9]{0,15})\]"
    r"|\['((?:[^'\\\x00-\x1f]|\\[bfnrt'\\/]|\\u[0-9a-fA-F]{4})*)'\]")
_GEMINI_PATH_ESCAPES = MappingProxyType({"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'",
                                         "\\": "\\", "/": "/"})


_GEMINI_TOO_DEEP = ()   # a path with more segments than asked for (see _gemini_path)


def _gemini_path(text: Any, max_segments: int = 1 << 62) -> tuple | None:
    """A jsonPath as a tuple of member names (str) and array indices (int); None when not one we read.

    _GEMINI_TOO_DEEP (the empty tuple) when it has more than max_segments segments: it
    is not read further, so its size costs no memory.
    """
    if not isinstance(text, str) or not text.startswith("$") or text == "$":
        return None
    segments: list = []
    pos = 1
    while pos < len(text):
        if len(segments) >= max_segments:
            return _GEMINI_TOO_DEEP
        match = _GEMINI_PATH_SEGMENT.match(text, pos)
        if match is None:
            return None
        name, index, quoted = match.groups()
        if name is not None:
            segments.append(name)
        elif index is not None:
            segments.append(int(index))
        else:
            segments.append(re.sub(r"\\(u[0-9a-fA-F]{4}|.)", lambda m: chr(int(m.group(1)[1:], 16))
                                   if len(m.group(1)) == 5 else _GEMINI_PATH_ESCAPES[m.group(1)], quoted))
        pos = match.end()
    return tuple(segments)


_GEMINI_PATH_SHOWN = 12   # segments of a path a message writes out


def _gemini_path_text(path: tuple) -> str:
    """A path as the report writes it ($.a[0]...), names quoted when they are not plain words.

    At most _GEMINI_PATH_SHOWN segments are written, then how many more there are.
    """
    out = ["$"]
    for segment in path[:_GEMINI_PATH_SHOWN]:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif _protocol_word(segment) == segment and segment[:1].isalpha():
            out.append("." + segment)
        else:
            out.append("[<member>]")
    if len(path) > _GEMINI_PATH_SHOWN:
        out.append(f"... ({len(path) - _GEMINI_PATH_SHOWN} more segments)")
    return "".join(out)


_GEMINI_NOTHING = object()   # a serialiser stack entry that only writes its text


class _GeminiString(_Record):
    """A string value still being assembled from pieces (joined once, when serialised)."""

    __slots__ = ("pieces", "open")

    def __init__(self, piece: str, more: bool) -> None:
        self.pieces = [piece]
        self.open = more


class _GeminiCall(_Record):
    """A call whose arguments stream as partialArgs: its key, id and the object assembled so far."""

    __slots__ = ("key", "id", "tree", "broken", "open_strings", "max_depth")

    def __init__(self, key: SlotKey, call_id: str | None, max_depth: int = 64) -> None:
        self.max_depth = max_depth
        self.key = key
        self.id = call_id
        self.tree: dict = {}
        self.broken = False   # a piece could not be placed: later problems of the call are not reported
        self.open_strings: dict[tuple, _GeminiString] = {}   # path -> a string whose last piece said willContinue


class _GeminiCandidate(_Record):
    """What one candidate has shown so far."""

    __slots__ = ("calls", "open", "last_key", "reason", "other_reason", "after_reason", "code", "hosted",
                 "server_calls", "max_depth")

    def __init__(self, max_depth: int = 64) -> None:
        self.max_depth = max_depth
        self.calls = 0                   # function calls opened (the next call's ordinal)
        self.open: _GeminiCall | None = None
        self.last_key: SlotKey | None = None
        self.reason: tuple | None = None          # (position, reason) of the last finishReason
        self.other_reason: tuple | None = None    # the first reason that is not STOP
        self.after_reason = False                 # a call part came after the last finishReason
        self.code = 0                             # executableCode parts awaiting their result
        self.hosted: set = set()                  # hosted tool names already counted for this candidate
        self.server_calls: dict = {}              # toolCall id -> [toolType, answered]


class GeminiNormalizer:
    """Translate GenerateContentResponse chunks into neutral events, one at a time.

    max_depth: a partialArgs path deeper than the arguments may nest is refused as it
    arrives, before anything of it is built (a path of a million segments costs nothing).
    """

    def __init__(self, max_depth: int = 64) -> None:
        self.candidates: dict[int, _GeminiCandidate] = {}
        self.max_depth = max_depth

    def finish(self) -> Iterator[NeutralEvent]:
        """End of stream: unfinished calls and code runs, then the finish of the candidate with calls.

        A call still streaming gets its object so far as its fragment but no end, so the
        machine reports it missing_terminal and never parses it.  The turn's stop reason is
        the finish of the first candidate with calls (a second one is ambiguous_choice).
        """
        stopped = False
        for index, cand in sorted(self.candidates.items()):
            yield from _gemini_unfinished(index, cand)
            if cand.calls == 0:
                yield from _gemini_failed_call(index, cand.other_reason)
            elif stopped:   # another candidate with calls: already ambiguous_choice
                yield from _gemini_other_stop(index, cand)
            else:
                stopped = True
                yield from _gemini_turn_end(index, cand)

    def translate(self, pos: int, chunk: Any) -> Iterator[NeutralEvent]:
        if not isinstance(chunk, dict) or not any(key in _GEMINI_CHUNK_KEYS for key in chunk):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"chunk is {_describe(chunk)}, not a GenerateContentResponse "
                              "(none of candidates, usageMetadata, promptFeedback, modelVersion, responseId)")
            return
        if "error" in chunk:
            yield WireProblem(pos, STREAM_ERROR, "the chunk is an error object: " + _gemini_error(chunk["error"]))
            return
        feedback = chunk.get("promptFeedback")
        if feedback is not None:
            yield from _gemini_prompt_feedback(pos, feedback)
        candidates = chunk.get("candidates")
        if candidates is None:
            return   # usage, prompt feedback or model version only
        if not isinstance(candidates, list):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"candidates is {_describe(candidates)}, not a list")
            return
        carries = any(_gemini_has_call(candidate) for candidate in candidates)
        problem = _gemini_shape_problem(chunk, carries)
        if problem is not None:
            yield WireProblem(pos, *problem)
        # the candidates, each read into the state of its index (calls only in the first)
        seen: set[int] = set()
        for position, candidate in enumerate(candidates):
            if not isinstance(candidate, dict):
                yield WireProblem(pos, UNSUPPORTED_EVENT, f"a candidate is {_describe(candidate)}, not an object")
                continue
            index = candidate.get("index", 0)
            if not _is_index(index):
                yield WireProblem(pos, MISSING_INDEX, f"candidate index must be a non-negative integer, got "
                                  f"{_describe(index)}")
                continue
            if index in seen:
                yield WireProblem(pos, UNEXPECTED_EVENT, f"candidate {index} appears twice in one chunk", index)
                continue
            seen.add(index)
            if position and _gemini_has_call(candidate):
                yield WireProblem(pos, UNEXPECTED_EVENT, f"a functionCall part in candidate {index}, which is not the "
                                  "first of its chunk: google-genai, js-genai, LangChain and the Vercel AI SDK read "
                                  "candidates[0] only", index)
            cand = self.candidates.get(index)
            if cand is None:
                cand = self.candidates[index] = _GeminiCandidate(self.max_depth)
            yield from _gemini_candidate(pos, index, candidate, cand)


def _gemini_prompt_feedback(pos: int, feedback: Any) -> Iterator[NeutralEvent]:
    if not isinstance(feedback, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"promptFeedback is {_describe(feedback)}, not an object")
    elif feedback.get("blockReason") is not None:
        yield WireProblem(pos, STREAM_ERROR, f"the prompt was blocked (promptFeedback.blockReason "
                          f"{_token(feedback['blockReason'])})")


def _gemini_unfinished(index: int, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """At the end: a call still streaming gives its object so far (no end); a toolCall lacks its answer."""
    if cand.open is not None:
        yield Fragment(None, cand.open.key, None, None, _gemini_serialise(cand.open.tree))
        cand.open = None
    for tool_type, answered in cand.server_calls.values():
        if not answered:
            yield WireProblem(None, MISSING_TERMINAL, f"candidate {index}: a {tool_type} toolCall without "
                              "its toolResponse", index)


def _gemini_failed_call(index: int, other: tuple[int, str] | None) -> Iterator[NeutralEvent]:
    """A candidate without calls that finished with a reason naming a failed function call."""
    if other is not None and other[1] in _GEMINI_TOOL_FAILURES:
        numbered = (" (an enum number that names a failed function call in the Gemini API or in "
                    "Vertex AI, which number their reasons differently)"
                    if other[1].startswith("FINISH_REASON_") else "")
        yield WireProblem(other[0], WRONG_TERMINAL_REASON, f"candidate {index} finished {other[1]}"
                          f"{numbered}: the model's function call failed and none was delivered", index)


def _gemini_other_stop(index: int, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """A second candidate with calls (ambiguous already): its own finish is still checked."""
    other = cand.other_reason
    if other is not None:
        yield WireProblem(other[0], WRONG_TERMINAL_REASON, f"candidate {index} has calls but finished "
                          f"{_token(other[1])}, not \"STOP\"", index)
    elif cand.reason is None or cand.after_reason:
        yield WireProblem(None, MISSING_TERMINAL, f"candidate {index} has calls but no finishReason "
                          "after its last one", index)


def _gemini_turn_end(index: int, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """The first candidate with calls: its finish is the turn's stop reason (any other than STOP first)."""
    other = cand.other_reason
    if other is not None:
        yield TurnEnd(other[0], other[1])
    elif cand.reason is not None:
        if cand.after_reason:
            yield WireProblem(None, MISSING_TERMINAL, f"candidate {index} has a functionCall part after its "
                              "last finishReason STOP, and no finishReason follows it", index)
        yield TurnEnd(cand.reason[0], cand.reason[1])


def _gemini_has_call(candidate: Any) -> bool:
    """Whether a candidate of a chunk holds a functionCall part."""
    content = candidate.get("content") if isinstance(candidate, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    return isinstance(parts, list) and any(isinstance(part, dict) and "functionCall" in part for part in parts)


def _gemini_typed(value: Any, kind: Any) -> bool:
    if kind is _GEMINI_ENUM:
        return isinstance(value, str) or type(value) is int
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _gemini_is_base64(text: str) -> bool:
    """Whether google-genai's bytes fields accept text: one base64 alphabet, "=" only where
    bits are missing (one or two after 2 spare characters, one after 3), the bits past the last whole
    byte zero."""
    if _GEMINI_BASE64_TEXT.fullmatch(text) is None or ("+" in text or "/" in text) and ("-" in text or "_" in text):
        return False   # one alphabet or the other, not both
    body = text.rstrip("=")
    pad = len(text) - len(body)
    if len(body) % 4 == 1 or pad and (len(body) % 4 not in (2, 3) or len(body) % 4 == 3 and pad > 1):
        return False
    spare = {0: 0, 2: 4, 3: 2}[len(body) % 4]   # bits of the last character past the last whole byte
    return not spare or _GEMINI_BASE64_DIGITS[body[-1]] % (1 << spare) == 0   # strict decoders want them zero


def _gemini_members(holder: Any, types: Mapping[str, type], where: str) -> str | None:
    """The first member of holder whose JSON type a reader refuses, as a message; None when all fit."""
    if not isinstance(holder, dict):
        return None
    for key, kind in types.items():
        value = holder.get(key)
        if value is not None and not _gemini_typed(value, kind):
            return f"{where}{key} is {_describe(value)}"
    return None


_GEMINI_GROUNDING_LISTS = ("webSearchQueries", "imageSearchQueries", "retrievalQueries", "groundingChunks",
                           "groundingSupports")


def _gemini_type_problem(chunk: dict) -> str | None:
    """The first question google-genai's types ask of a chunk (in order) whose answer it refuses, or None."""
    problem = (_gemini_members(chunk, _GEMINI_CHUNK_TYPES, "")
               or _gemini_members(chunk.get("usageMetadata"), _GEMINI_USAGE_TYPES, "usageMetadata."))
    candidates = chunk.get("candidates")
    feedback = chunk.get("promptFeedback")
    holders = list(candidates) if isinstance(candidates, list) else []
    if isinstance(feedback, dict):
        holders.append(feedback)
        problem = problem or (None if isinstance(feedback.get("safetyRatings"), (list, type(None))) else
                              "promptFeedback.safetyRatings is not a list")
    for holder in holders:
        if problem is not None:
            return problem
        if holder is not feedback:
            problem = _gemini_candidate_type_problem(holder)
        problem = problem or _gemini_holder_type_problem(holder if isinstance(holder, dict) else {})
    return problem


def _gemini_candidate_type_problem(candidate: Any) -> str | None:
    problem = _gemini_members(candidate, _GEMINI_CANDIDATE_TYPES, "a candidate's ")
    token = candidate.get("continuationToken") if isinstance(candidate, dict) else None
    if problem is None and isinstance(token, str) and not _gemini_is_base64(token):
        return "a candidate's continuationToken is not base64"
    return problem


def _gemini_holder_type_problem(holder: dict) -> str | None:
    """A candidate's or the prompt feedback's grounding lists and safety ratings: the first refused, or None."""
    grounding = holder.get("groundingMetadata")
    for key in _GEMINI_GROUNDING_LISTS if isinstance(grounding, dict) else ():
        if grounding.get(key) is not None and not isinstance(grounding[key], list):
            return f"groundingMetadata.{key} is {_describe(grounding[key])}"
    ratings = holder.get("safetyRatings")
    for rating in ratings if isinstance(ratings, list) else ():
        problem = (_gemini_members(rating, _GEMINI_RATING_TYPES, "a safety rating's ")
                   if isinstance(rating, dict) else f"a safety rating is {_describe(rating)}")
        if problem is not None:
            return problem
    return None


def _gemini_shape_problem(chunk: dict, carries: bool) -> tuple[str, str] | None:
    """(code, message) when a reader would refuse this chunk or (with calls in it) drop it; else None."""
    problem = _gemini_type_problem(chunk)
    if problem is not None:
        return UNSUPPORTED_EVENT, f"{problem}, a type google-genai refuses (it raises on the chunk)"
    if carries:
        dropped = _gemini_dropped_by_vercel(chunk)
        if dropped is not None:
            return UNEXPECTED_EVENT, (f"a chunk with a functionCall part that the Vercel AI SDK drops ({dropped}), "
                                      "so it would run other calls")
    return None


# Where the Vercel AI SDK's chunk schema is stricter than google-genai's types above: it drops a
# chunk that breaks one of these whole, calls included.  One row each, checked in this order:
# (from the chunk or each candidate, the path to the value, how it is read, the members it needs
# and their types, what the message says is missing).  How a value is read:
#   "entries"  a list of objects with those members (a value that is not a list: the types above decide)
#   "list"     the same, and a value that is not a list is refused too
#   "object"   one object with those members, when present
#   "sources"  a list of objects whose members, when present, are objects with the members given per member
_VERCEL_GEMINI_NEEDS: tuple[tuple[str, tuple[str, ...], str, Mapping, str], ...] = (
    *(("chunk", ("usageMetadata", key), "entries", {"modality": _GEMINI_ENUM, "tokenCount": float},
       f"a usageMetadata.{key} entry without modality and tokenCount")
      for key in ("promptTokensDetails", "cacheTokensDetails", "candidatesTokensDetails",
                  "toolUsePromptTokensDetails")),
    ("candidate", ("urlContextMetadata", "urlMetadata"), "list",
     {"retrievedUrl": str, "urlRetrievalStatus": _GEMINI_ENUM},
     "a urlContextMetadata.urlMetadata entry without retrievedUrl and urlRetrievalStatus"),
    ("candidate", ("groundingMetadata", "searchEntryPoint"), "object", {"renderedContent": str},
     "groundingMetadata.searchEntryPoint without renderedContent"),
    ("candidate", ("groundingMetadata", "groundingChunks"), "sources",
     {"web": {"uri": str}, "image": {"sourceUri": str, "imageUri": str}},
     "a groundingMetadata.groundingChunks entry without the uri its source needs"),
)


def _gemini_member_at(value: Any, path: tuple[str, ...]) -> Any:
    """The value at a path of member names, None where an object is missing on the way."""
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _gemini_has(entry: Any, needs: Mapping) -> bool:
    return isinstance(entry, dict) and all(_gemini_typed(entry.get(key), kind) for key, kind in needs.items())


def _vercel_entries(value: Any, path: tuple[str, ...], needs: Mapping, lacks: str) -> str | None:
    for entry in value if isinstance(value, list) else ():
        if not _gemini_has(entry, needs):
            return lacks
    return None


def _vercel_list(value: Any, path: tuple[str, ...], needs: Mapping, lacks: str) -> str | None:
    if value is not None and not isinstance(value, list):
        return f"{'.'.join(path)} that is not a list"
    return _vercel_entries(value, path, needs, lacks)


def _vercel_object(value: Any, path: tuple[str, ...], needs: Mapping, lacks: str) -> str | None:
    return None if value is None or _gemini_has(value, needs) else lacks


def _vercel_sources(value: Any, path: tuple[str, ...], needs: Mapping, lacks: str) -> str | None:
    for source in value or ():
        if not isinstance(source, dict) or any(source.get(key) is not None and not _gemini_has(source[key], inner)
                                                for key, inner in needs.items()):
            return lacks
    return None


# How a row of _VERCEL_GEMINI_NEEDS reads its value (see there) -> the reader (see _VERCEL_ROWS).
_VERCEL_READS: Mapping[str, Callable[[Any, tuple[str, ...], Mapping, str], str | None]] = MappingProxyType({
    "entries": _vercel_entries, "list": _vercel_list, "object": _vercel_object, "sources": _vercel_sources,
})


# The rows of _VERCEL_GEMINI_NEEDS by where they read from, each with its reader looked up once:
# where -> ((path, reader, needs, lacks), ...); a reader takes (value at the path, path, needs, lacks).
_VERCEL_ROWS: Mapping[str, tuple[tuple[tuple[str, ...], Callable[..., str | None], Mapping, str], ...]] = \
    MappingProxyType({side: tuple((path, _VERCEL_READS[how], needs, lacks)
                                  for where, path, how, needs, lacks in _VERCEL_GEMINI_NEEDS if where == side)
                      for side in ("chunk", "candidate")})


def _gemini_dropped_by_vercel(chunk: dict) -> str | None:
    """Why the Vercel AI SDK's chunk schema (or its secure JSON parse) refuses a chunk, or None."""
    for path, read, needs, lacks in _VERCEL_ROWS["chunk"]:
        refused = read(_gemini_member_at(chunk, path), path, needs, lacks)
        if refused is not None:
            return refused
    rows = _VERCEL_ROWS["candidate"]
    for candidate in chunk.get("candidates") or ():
        for path, read, needs, lacks in rows:
            refused = read(_gemini_member_at(candidate, path), path, needs, lacks)
            if refused is not None:
                return refused
    if _secure_parse_refuses(chunk):
        return "a __proto__ or constructor.prototype member"
    return None


def _gemini_error(error: Any) -> str:
    """The error's status or code, as protocol words only (its message is never echoed)."""
    if not isinstance(error, dict):
        return _describe(error)
    status, code = error.get("status"), error.get("code")
    return f"status {_token(status)}, code {_token(code)}"


def _gemini_candidate(pos: int, index: int, candidate: dict, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """A candidate: its content (the model's, and its parts in order), the metadata that says a hosted
    tool was used (once per tool and candidate), its finishReason."""
    content = candidate.get("content")
    if content is not None and not isinstance(content, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"candidate {index} content is {_describe(content)}, "
                          "not an object", index)
    elif content is not None:
        role = content.get("role")
        parts = content.get("parts")
        if role is not None and role != "model":
            yield WireProblem(pos, UNEXPECTED_EVENT, f"candidate {index} content has role {_token(role)}, "
                              "not model", index)
        elif parts is not None and not isinstance(parts, list):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"candidate {index} parts is {_describe(parts)}, "
                              "not a list", index)
        else:
            for part in parts or ():
                yield from _gemini_part(pos, index, part, cand)
    for member, hosted in _GEMINI_HOSTED_METADATA.items():
        value = candidate.get(member)
        if value is None:
            continue
        if not isinstance(value, dict):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"candidate {index} {member} is {_describe(value)}, "
                              "not an object", index)
        elif value and hosted not in cand.hosted:
            cand.hosted.add(hosted)
            yield HostedUse(pos, hosted)
    if candidate.get("finishReason") is not None:
        yield from _gemini_finish_reason(pos, index, candidate, cand)


def _gemini_finish_reason(pos: int, index: int, candidate: dict, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """A candidate's finishReason, kept for the end (a continuation is no finish)."""
    reason = _gemini_enum_name(candidate.get("finishReason"), _GEMINI_FINISH_NUMBERS, "FINISH_REASON")
    if reason is not None:
        if not isinstance(reason, str):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"candidate {index} finishReason is {_describe(reason)}, "
                              "not a string or an enum number", index)
            return
        if reason == _GEMINI_CONTINUATION:
            return   # the turn goes on in the next hop of a stitched stream; not a finish
        cand.reason = (pos, reason)
        cand.after_reason = False
        if reason != _GEMINI_STOP and cand.other_reason is None:
            cand.other_reason = (pos, reason)


def _gemini_part(pos: int, index: int, part: Any, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    if not isinstance(part, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"a part of candidate {index} is {_describe(part)}, "
                          "not an object", index)
        return
    data = [key for key in part if key in _GEMINI_PART_DATA]
    # a part of its data member alone (the usual one) has nothing more to check
    problem = None if len(part) == 1 and data else _gemini_part_shape(part, index, data)
    if problem is not None:
        yield WireProblem(pos, UNSUPPORTED_EVENT, problem, index)
    elif data:
        yield from _GEMINI_PART_READERS[data[0]](pos, index, data[0], part[data[0]], cand)


def _gemini_part_shape(part: dict, index: int, data: list[str]) -> str | None:
    """What is wrong with a part's members (data: those that hold its data), or None: only reviewed
    members, one data member at most, and metadata google-genai reads."""
    unknown = [key for key in part if key not in _GEMINI_PART_DATA and key not in _GEMINI_PART_META]
    if unknown:
        return f"a part of candidate {index} has the member {_token(unknown[0])}, which has no reviewed normalizer"
    if len(data) > 1:
        return f"a part of candidate {index} holds both {data[0]} and {data[1]}"
    problem = _gemini_members(part, _GEMINI_PART_META_TYPES, f"a part of candidate {index}: ")
    signature = part.get("thoughtSignature")
    if problem is None and isinstance(signature, str) and not _gemini_is_base64(signature):
        problem = f"a part of candidate {index}: thoughtSignature is not base64"
    return None if problem is None else f"{problem} (google-genai refuses the chunk)"


def _gemini_text(pos: int, index: int, kind: str, text: Any, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    if not isinstance(text, str):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"text of candidate {index} is {_describe(text)}, "
                          "not a string", index)


def _gemini_media(pos: int, index: int, kind: str, body: Any, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """inlineData or fileData: an object (what it holds is not read)."""
    if not isinstance(body, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"{kind} of candidate {index} is {_describe(body)}, "
                          "not an object", index)


def _gemini_code(pos: int, index: int, kind: str, code: Any, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """executableCode: a hosted use of code execution, which a codeExecutionResult answers."""
    if not isinstance(code, dict) or not isinstance(code.get("code"), str) \
            or not _gemini_typed(code.get("language"), _GEMINI_ENUM):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"executableCode of candidate {index} needs code and language "
                          "strings", index)
        return
    cand.code += 1
    yield HostedUse(pos, "code_execution")


def _gemini_code_result(pos: int, index: int, kind: str, result: Any,
                        cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    outcome = _gemini_enum_name(result.get("outcome"), _GEMINI_OUTCOME_NUMBERS, "OUTCOME") \
        if isinstance(result, dict) else None
    if _wire_str(outcome) not in _GEMINI_CODE_OUTCOMES:
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"codeExecutionResult of candidate {index} has no reviewed "
                          "outcome", index)
    elif cand.code == 0:
        yield WireProblem(pos, MISSING_SLOT, f"codeExecutionResult of candidate {index} answers no "
                          "executableCode", index)
    else:
        cand.code -= 1


def _gemini_server_tool(pos: int, index: int, kind: str, body: Any, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """A server-side tool invocation (toolCall) or its result (toolResponse): hosted, paired by id."""
    tool_type = _wire_str(body.get("toolType")) if isinstance(body, dict) else None
    tool_id = _wire_str(body.get("id")) if isinstance(body, dict) else None
    if tool_type not in _GEMINI_SERVER_TOOLS or not tool_id:
        said = body.get("toolType") if isinstance(body, dict) else None
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"{kind} of candidate {index} is not a reviewed server-side tool "
                          f"(toolType {_token(said)}) with a string id", index)
        return
    if kind == "toolCall":
        if tool_id in cand.server_calls:
            yield WireProblem(pos, IDENTITY_COLLISION, f"two toolCall parts of candidate {index} share an id", index)
            return
        cand.server_calls[tool_id] = [tool_type, False]
        yield HostedUse(pos, _GEMINI_SERVER_TOOLS[tool_type])
        return
    call = cand.server_calls.get(tool_id)
    if call is None:
        yield WireProblem(pos, MISSING_SLOT, f"toolResponse of candidate {index} answers no toolCall of this turn",
                          index)
    elif call[0] != tool_type:
        yield WireProblem(pos, UNEXPECTED_EVENT, f"toolResponse of candidate {index} has toolType {tool_type}, but "
                          f"its toolCall is {call[0]}", index)
    elif call[1]:
        yield WireProblem(pos, DUPLICATE_TERMINAL, f"a second toolResponse for one toolCall of candidate {index}",
                          index)
    if call is not None:
        call[1] = True


def _gemini_function_call(pos: int, index: int, kind: str, call: Any, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    where = f"candidate {index}"
    wrong = _gemini_call_shape(call, where)
    if wrong is not None:
        yield WireProblem(pos, UNSUPPORTED_EVENT, wrong, index)
        return
    _, call_id = _optional_str(call, "id")
    _, name = _optional_str(call, "name")
    more, partial = call.get("willContinue"), call.get("partialArgs")
    if more is False:
        # proto3 JSON never writes false; the Vercel AI SDK ends a call only when willContinue is absent
        yield WireProblem(pos, UNEXPECTED_EVENT, f"functionCall of {where} says willContinue false: readers disagree "
                          "whether that part ends the call", index, cand.open.key[1] if cand.open else None)
        return
    more = bool(more)
    cand.after_reason = cand.reason is not None
    if cand.open is not None and name is None:
        yield from _gemini_continue(pos, index, call, call_id, partial, more, cand)
        return
    if cand.open is not None:   # a new call while the previous one still streams: that one never ends
        previous = cand.open
        cand.open = None
        yield Fragment(pos, previous.key, None, None, _gemini_serialise(previous.tree))
    elif name is None and "args" not in call and not call_id:
        # only partialArgs / willContinue: a continuation, but no call is streaming
        if cand.last_key is not None:
            yield WireProblem(pos, DELTA_AFTER_TERMINAL, f"functionCall piece after the final part of call "
                              f"{cand.last_key[1]} of {where}", index, cand.last_key[1])
        else:
            yield WireProblem(pos, MISSING_SLOT, f"functionCall piece of {where}, but no call was started", index)
        return
    yield from _gemini_new_call(pos, index, call, call_id, name, partial, more, cand)


# A part's data member -> its reader: reader(pos, candidate index, member, value, candidate state).
_GEMINI_PART_READERS: Mapping[str, Callable[..., Iterator[NeutralEvent]]] = MappingProxyType({
    "functionCall": _gemini_function_call, "text": _gemini_text, "inlineData": _gemini_media,
    "fileData": _gemini_media, "executableCode": _gemini_code, "codeExecutionResult": _gemini_code_result,
    "toolCall": _gemini_server_tool, "toolResponse": _gemini_server_tool,
})


def _gemini_call_shape(call: Any, where: str) -> str | None:
    """What is wrong with a functionCall's shape on its own, or None."""
    if not isinstance(call, dict):
        return f"functionCall of {where} is {_describe(call)}, not an object"
    unknown = [key for key in call if key not in _GEMINI_CALL_KEYS]
    ok_id, _ = _optional_str(call, "id")
    ok_name, _ = _optional_str(call, "name")
    more, partial = call.get("willContinue"), call.get("partialArgs")
    if unknown or not (ok_id and ok_name) or more is not None and not isinstance(more, bool) \
            or partial is not None and not isinstance(partial, list):
        return (f"functionCall of {where} is not a reviewed shape (id and name strings, args an object, "
                "partialArgs a list, willContinue a boolean"
                + (f"; unknown member {_token(unknown[0])})" if unknown else ")"))
    return None


def _gemini_new_call(pos: int, index: int, call: dict, call_id: str | None, name: str | None,
                     partial: list | None, more: bool, cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """A functionCall that starts a call: whole (args), or the first part of a streamed one."""
    where = f"candidate {index}"
    key = (index, cand.calls)
    cand.calls += 1
    cand.last_key = key
    args = call.get("args")
    if "args" in call and args is None:
        yield SlotOpen(pos, key, call_id or None, name or None, {})
        yield WireProblem(pos, UNEXPECTED_EVENT, f"call {key[1]} of {where} says args null: LiteLLM and js-genai hand "
                          "over null where others run {}", index, key[1])
        yield SlotEnd(pos, key)
        return
    if partial is None and not more:
        yield SlotOpen(pos, key, call_id or None, name or None, {} if args is None else args)
        yield SlotEnd(pos, key)   # an unsafe integer in args is found where every profile's are (parse_strict_json)
        return
    yield from _gemini_first_part(pos, index, key, call_id, name, partial, more, cand, args is not None)


def _gemini_first_part(pos: int, index: int, key: SlotKey, call_id: str | None, name: str | None,
                       partial: list | None, more: bool, cand: _GeminiCandidate, args: bool) -> Iterator[NeutralEvent]:
    """The first part of a call whose arguments stream (partialArgs, willContinue): the call it opens."""
    yield SlotOpen(pos, key, call_id or None, name or None, None)
    if args:
        yield WireProblem(pos, UNEXPECTED_EVENT, f"call {key[1]} of candidate {index} gives args and also streams "
                          "partialArgs or willContinue", index, key[1])
    streaming = cand.open = _GeminiCall(key, call_id or None, cand.max_depth)
    yield from _gemini_pieces(pos, index, partial or (), streaming)
    if not more:
        cand.open = None
        yield from _gemini_close(pos, index, streaming)


def _gemini_continue(pos: int, index: int, call: dict, call_id: str | None, partial: list | None, more: bool,
                     cand: _GeminiCandidate) -> Iterator[NeutralEvent]:
    """A later part of the call that is streaming (no name): pieces, and maybe its final part."""
    streaming = cand.open
    if call_id and call_id != streaming.id:
        yield WireProblem(pos, IDENTITY_COLLISION, f"call {streaming.key[1]} of candidate {index} "
                          + ("changed its id between parts" if streaming.id else "gets an id only on a later part "
                             "(readers take the id of the first part)"), index, streaming.key[1])
    if "args" in call:
        yield WireProblem(pos, UNEXPECTED_EVENT, f"call {streaming.key[1]} of candidate {index} streams "
                          "partialArgs but a later part gives args", index, streaming.key[1])
    yield from _gemini_pieces(pos, index, partial or (), streaming)
    if not more:
        cand.open = None
        yield from _gemini_close(pos, index, streaming)


def _gemini_close(pos: int, index: int, call: _GeminiCall) -> Iterator[NeutralEvent]:
    """The call's final part: strings still continuing are cut short; the object becomes the fragment."""
    for path, leaf in call.open_strings.items():
        leaf.open = False
        if not call.broken:
            call.broken = True   # one finding per broken call
            yield WireProblem(pos, MISSING_TERMINAL, f"call {call.key[1]} of candidate {index} ended while the "
                              f"string at {_gemini_path_text(path)} still said willContinue", index, call.key[1])
    call.open_strings.clear()
    yield Fragment(pos, call.key, None, None, _gemini_serialise(call.tree))
    yield SlotEnd(pos, call.key)


def _gemini_pieces(pos: int, index: int, pieces: Iterable, call: _GeminiCall) -> Iterator[NeutralEvent]:
    where = f"call {call.key[1]} of candidate {index}"
    for piece in pieces:
        problem = _gemini_place(piece, call)
        if problem is not None and not call.broken:
            code, text = problem
            call.broken = call.broken or code != UNSUPPORTED_EVENT
            yield WireProblem(pos, code, f"{where}: {text}", index, call.key[1])


# What each value member of a partialArgs entry may hold (nullValue: null, its enum name or its
# proto number 0; it stands for null).
_GEMINI_VALUE_OK: Mapping[str, Callable[[Any], bool]] = MappingProxyType({
    "stringValue": lambda value: isinstance(value, str),
    "numberValue": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "boolValue": lambda value: isinstance(value, bool),
    "nullValue": lambda value: value is None or value == "NULL_VALUE" or (type(value) is int and value == 0),
})


def _gemini_place(piece: Any, call: _GeminiCall) -> tuple[str, str] | None:
    """Put one partialArgs entry into the object; (code, message) when it cannot be placed (checked on
    its own first: where it goes, then what it holds, as (path, kind, value, willContinue))."""
    problem, path = _gemini_piece_path(piece, call.max_depth)
    if problem is None:
        problem, read = _gemini_piece_value(piece, path)
    return problem if problem is not None else _gemini_insert(call, *read)


def _gemini_piece_path(piece: Any, max_depth: int) -> tuple[tuple[str, str] | None, tuple | None]:
    """Where a partialArgs entry goes: (None, its path), or ((code, message), None)."""
    if not isinstance(piece, dict) or any(key not in _GEMINI_ARG_KEYS for key in piece):
        return (UNSUPPORTED_EVENT, "a partialArgs entry is not an object of jsonPath, one value and "
                "willContinue"), None
    path = _gemini_path(piece.get("jsonPath"), max_depth)
    if path is _GEMINI_TOO_DEEP:   # each segment is a level of nesting of the arguments
        return (LIMIT_EXCEEDED, f"a partialArgs jsonPath nests deeper than the limit of {max_depth}"), None
    if path is None:
        return (MALFORMED_JSON, "a partialArgs jsonPath is not a normalized JSON path of member names and "
                "indices"), None
    if "__proto__" in path or any(a == "constructor" and b == "prototype" for a, b in zip(path, path[1:])):
        return (UNEXPECTED_EVENT, ("a jsonPath through __proto__ or constructor.prototype: the Vercel AI SDK builds "
                                   "an object it then refuses")), None
    if "['" in piece["jsonPath"]:
        # RFC 9535 allows it, but the Vercel AI SDK splits a path on "." and "[n]" only, and would
        # build another object from it: a pass must mean every reader runs the same call.
        return (UNEXPECTED_EVENT, (f"the jsonPath for {_gemini_path_text(path)} quotes a member name (['...']), "
                                   "which the Vercel AI SDK's reader does not understand")), None
    return None, path


def _gemini_piece_value(piece: dict, path: tuple) -> tuple[tuple[str, str] | None, tuple | None]:
    """What a partialArgs entry at path holds: (None, (path, kind, value, willContinue)), or ((code, message), None)."""
    kinds = [key for key in _GEMINI_VALUE_KEYS if key in piece]
    more = piece.get("willContinue", False)
    if len(kinds) != 1 or not isinstance(more, bool):
        return (UNSUPPORTED_EVENT, f"the partialArgs entry for {_gemini_path_text(path)} must hold exactly "
                "one value"), None
    kind = kinds[0]
    value = piece[kind]
    ok = _GEMINI_VALUE_OK[kind](value)
    if ok and kind == "numberValue" and _unsafe_integer(value):
        # refused here, before the tree holds a number its serialisation might not even write
        return (LIMIT_EXCEEDED, f"the numberValue for {_gemini_path_text(path)} is {UNSAFE_INTEGER_MESSAGE}"), None
    if not ok:
        return (UNSUPPORTED_EVENT, f"the {kind} for {_gemini_path_text(path)} is {_describe(value)}"), None
    if more and kind != "stringValue":
        return (UNEXPECTED_EVENT, f"the {kind} for {_gemini_path_text(path)} says willContinue "
                "(only strings continue)"), None
    if isinstance(path[0], int):
        return (MALFORMED_JSON, f"{_gemini_path_text(path)} indexes the arguments as an array "
                "(they are an object)"), None
    return None, (path, kind, None if kind == "nullValue" else value, more)


def _gemini_insert(call: _GeminiCall, path: tuple, kind: str, value: Any, more: bool) -> tuple[str, str] | None:
    """Put a checked piece into the call's object; (code, message) when the object refuses it."""
    # Walk what exists first, then check the rest, so a refused path leaves the object unchanged.
    problem, parent, depth, present = _gemini_walk(call.tree, path)
    if problem is not None:
        return problem
    last = len(path) - 1
    if depth == last and present:
        return _gemini_extend(call, path, parent[path[last]], kind, value, more)
    for later in range(depth + 1, len(path)):   # containers created below are new: their first element is 0
        if isinstance(path[later], int) and path[later] != 0:
            return MALFORMED_JSON, (f"{_gemini_path_text(path)} skips array element "
                                    f"{_gemini_path_text(path[:later] + (0,))}")
    _gemini_grow(call, parent, path, depth, kind, value, more)
    return None


def _gemini_walk(tree: dict, path: tuple) -> tuple[tuple[str, str] | None, Any, int, bool]:
    """Follow path through what the object already holds: (a problem or None, the deepest container
    reached, the depth of the segment in it, whether that segment is present there)."""
    parent: Any = tree
    depth, last = 0, len(path) - 1
    while True:
        segment = path[depth]
        problem: tuple[str, str] | None = None
        if isinstance(segment, int) != isinstance(parent, list):
            problem = DUPLICATE_KEY, (f"{_gemini_path_text(path)} treats {_gemini_path_text(path[:depth])} as "
                                      f"{'an array' if isinstance(segment, int) else 'an object'}, but it is not one")
        elif isinstance(parent, list) and segment > len(parent):
            problem = MALFORMED_JSON, (f"{_gemini_path_text(path)} skips array element "
                                       f"{_gemini_path_text(path[:depth] + (len(parent),))}")
        else:
            present = segment < len(parent) if isinstance(parent, list) else segment in parent
            if depth == last or not present:
                return None, parent, depth, present
            if not isinstance(parent[segment], (dict, list)):
                problem = DUPLICATE_KEY, (f"{_gemini_path_text(path)} conflicts with the value already at "
                                          f"{_gemini_path_text(path[:depth + 1])}")
        if problem is not None:
            return problem, parent, depth, False
        parent, depth = parent[segment], depth + 1


def _gemini_extend(call: _GeminiCall, path: tuple, current: Any, kind: str, value: Any,
                   more: bool) -> tuple[str, str] | None:
    """A piece for a path that holds a value already: only a string that said willContinue takes more."""
    if isinstance(current, _GeminiString) and current.open and kind == "stringValue":
        current.pieces.append(value)
        current.open = more
        if not more:
            call.open_strings.pop(path, None)
        return None
    what = ("a value of another type for" if isinstance(current, _GeminiString) and current.open
            else "a second value for")
    return DUPLICATE_KEY, f"{what} {_gemini_path_text(path)}"


def _gemini_grow(call: _GeminiCall, parent: Any, path: tuple, depth: int, kind: str, value: Any, more: bool) -> None:
    """Create the containers path needs below depth, then its leaf (a string that may continue)."""
    last = len(path) - 1
    for later in range(depth, last):
        child = [] if isinstance(path[later + 1], int) else {}
        if isinstance(parent, list):
            parent.append(child)
        else:
            parent[path[later]] = child
        parent = child
    leaf = _GeminiString(value, more) if kind == "stringValue" else value
    if isinstance(parent, list):
        parent.append(leaf)
    else:
        parent[path[last]] = leaf
    if more:
        call.open_strings[path] = leaf


def _gemini_serialise(tree: dict) -> str:
    """Compact JSON of an assembled object, without recursion (a path may be long).

    The same form as a whole call's args: separators "," and ":", characters as
    they are, numbers as Python writes them; a UTF-16 pair split between two
    string pieces is one character again.
    """
    out: list[str] = []
    stack: list = [(None, tree)]   # (text written before the value, value); value None with text: text only
    while stack:
        before, item = stack.pop()
        if before is not None:
            out.append(before)
        if isinstance(item, dict):
            out.append("{")
            stack.append(("}", _GEMINI_NOTHING))
            members = list(item.items())
            for number in range(len(members) - 1, -1, -1):
                name = json.dumps(members[number][0], ensure_ascii=False) + ":"
                stack.append(("," + name if number else name, members[number][1]))
        elif isinstance(item, list):
            out.append("[")
            stack.append(("]", _GEMINI_NOTHING))
            for number in range(len(item) - 1, -1, -1):
                stack.append(("," if number else None, item[number]))
        elif isinstance(item, _GeminiString):
            text = "".join(item.pieces)
            if any("\ud800" <= ch <= "\udfff" for ch in text):
                try:
                    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
                except UnicodeDecodeError:
                    pass   # an unpaired half stays, and the arguments are invalid_unicode
            out.append(json.dumps(text, ensure_ascii=False))
        elif item is not _GEMINI_NOTHING:
            out.append(json.dumps(item))
    return "".join(out)


# --- its request, redaction, capture rules and its Profile row ---------------


_GEMINI_MODES = ("AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED")


def _choice_gemini(choice: Any) -> dict:
    """Gemini toolConfig.functionCallingConfig: {"mode", "allowedFunctionNames", "streamFunctionCallArguments"}."""
    body = _request_members(choice, "tool_choice", ("mode", "allowedFunctionNames", "streamFunctionCallArguments"))
    mode = body.get("mode", "AUTO")
    if mode not in _GEMINI_MODES:
        raise RequestError(f"tool_choice.mode {_token(mode)} is not one of {', '.join(_GEMINI_MODES)}")
    if not isinstance(body.get("streamFunctionCallArguments", False), bool):
        raise RequestError("tool_choice.streamFunctionCallArguments must be a boolean")
    names = body.get("allowedFunctionNames")
    if names is not None and not isinstance(names, list):
        raise RequestError("tool_choice.allowedFunctionNames must be a list of names")
    allowed = [_request_name(n, f"tool_choice.allowedFunctionNames[{k}]") for k, n in enumerate(names or ())]
    if mode not in ("ANY", "VALIDATED") or names is None:
        # the reference applies the names with ANY and VALIDATED only; the API accepts them
        # beside AUTO (a recorded request does), where they restrict nothing here
        return {"none": mode == "NONE"}
    return _restricted(allowed)


# Gemini members whose string values are protocol words the validator reads.
_GEMINI_KEEP = frozenset({"role", "finishReason", "outcome", "blockReason", "createTime", "modelVersion"})


# Base64 members (google-genai refuses a payload whose thoughtSignature is not base64): a base64 stand-in.
_GEMINI_BASE64 = frozenset({"thoughtSignature", "data"})


def _redact_gemini_chunk(chunk: dict) -> dict:
    """Text, thoughts, code, grounding and feedback of a Gemini chunk; functionCall parts are kept whole."""
    out = {}
    for key, value in chunk.items():
        if key == "candidates" and isinstance(value, list):
            out[key] = [_redact_gemini_candidate(candidate) for candidate in value]
        else:
            out[key] = _neutral({key: value}, _GEMINI_KEEP)[key]
    return out


def _redact_gemini_candidate(candidate: Any) -> Any:
    if not isinstance(candidate, dict):
        return _neutral(candidate, _GEMINI_KEEP)
    out = {}
    for key, value in candidate.items():
        parts = value.get("parts") if key == "content" and isinstance(value, dict) else None
        if isinstance(parts, list):
            out[key] = {k: (v if k == "role" else [_redact_gemini_part(part) for part in parts] if k == "parts"
                            else _neutral(v, _GEMINI_KEEP)) for k, v in value.items()}
        elif key == "continuationToken" and isinstance(value, str) and value:
            out[key] = _gemini_base64_stand_in(value)   # google-genai reads it as bytes
        else:
            out[key] = _neutral({key: value}, _GEMINI_KEEP)[key]   # finishReason is kept
    return out


def _gemini_base64_stand_in(value: str) -> str:
    """Base64 stays base64 (google-genai reads it as bytes) and anything else stays refused: the verdict holds."""
    return REDACTED_BASE64 if _gemini_is_base64(value) else REDACTED_TEXT


def _redact_gemini_part(part: Any) -> Any:
    """A part: functionCall kept whole; base64 members get a base64 stand-in; other strings neutralised."""
    if not isinstance(part, dict):
        return _neutral(part, _GEMINI_KEEP)
    out = {}
    for key, value in part.items():
        redact = _GEMINI_REDACTED_MEMBERS.get(key)
        kept = _AS_SHAPE if redact is None else redact(value)
        out[key] = _neutral(value, _GEMINI_KEEP) if kept is _AS_SHAPE else kept
    return out


def _redact_gemini_server_tool(value: Any) -> Any:
    """A hosted tool's use and result: the rules read its type and its id (a result answers the use
    of the same id); its query and its results are content."""
    if not isinstance(value, dict):
        return _AS_SHAPE
    out = {}
    for k, v in value.items():
        out[k] = v if k in ("toolType", "id") else _neutral(v, _GEMINI_KEEP)
    return out


def _redact_gemini_signature(value: Any) -> Any:
    return _gemini_base64_stand_in(value) if isinstance(value, str) and value else _AS_SHAPE


def _redact_gemini_inline_data(value: Any) -> Any:
    """inlineData: its base64 data masked to the base64 stand-in, its mimeType kept."""
    if not isinstance(value, dict):
        return _AS_SHAPE
    out = {}
    for k, v in value.items():
        out[k] = (REDACTED_BASE64 if k in _GEMINI_BASE64 and isinstance(v, str) and v
                  else v if k == "mimeType" else _neutral(v, _GEMINI_KEEP))
    return out


def _kept_whole(value: Any) -> Any:
    return value


# A part's member -> what redaction keeps of it; every other member keeps only its shape.
_GEMINI_REDACTED_MEMBERS: Mapping[str, Callable[[Any], Any]] = MappingProxyType({
    "functionCall": _kept_whole, "toolCall": _redact_gemini_server_tool, "toolResponse": _redact_gemini_server_tool,
    "thoughtSignature": _redact_gemini_signature, "inlineData": _redact_gemini_inline_data,
})


def _gemini_protected(payload: dict) -> dict[tuple, str]:
    """Gemini: a functionCall part is call identity and arguments, a hosted toolCall's or toolResponse's
    id identity (kept, scanned)."""
    paths: dict[tuple, str] = {}
    candidates = payload.get("candidates")
    for c, candidate in enumerate(candidates if isinstance(candidates, list) else []):
        content = candidate.get("content") if isinstance(candidate, dict) else None
        parts = content.get("parts") if isinstance(content, dict) else None
        # google-genai reads these as bytes: one that is base64 is masked whole to a base64 stand-in
        # ("[masked]" inside would make it refused); one that is not stays refused masked as text
        token = candidate.get("continuationToken") if isinstance(candidate, dict) else None
        if isinstance(token, str) and _gemini_is_base64(token):
            paths[("candidates", c, "continuationToken")] = "base64"
        for n, part in enumerate(parts if isinstance(parts, list) else []):
            if isinstance(part, dict):
                _gemini_part_protected(part, ("candidates", c, "content", "parts", n), paths)
    return paths


def _gemini_tool_entry(where: str, tool: dict) -> list[tuple[str, Any]] | None:
    """The functions of a Gemini Tool object (or a bare FunctionDeclaration); None for any other entry."""
    return _gemini_tool(tool, where) if _is_gemini_tool(tool) else None
def _gemini_part_protected(part: dict, where: tuple, paths: dict[tuple, str]) -> None:
    """A part's protected paths, added to paths: a base64 thoughtSignature, a functionCall, a hosted tool's id."""
    signature = part.get("thoughtSignature")
    if isinstance(signature, str) and _gemini_is_base64(signature):
        paths[where + ("thoughtSignature",)] = "base64"
    if "functionCall" in part:
        paths[where + ("functionCall",)] = "warn"
    for hosted in ("toolCall", "toolResponse"):   # a result answers the use of the same id
        if isinstance(part.get(hosted), dict):
            paths[where + (hosted, "id")] = "warn"


def _gemini_claims(payload: dict) -> bool:
    return "candidates" in payload or "promptFeedback" in payload


# google-genai's GenerateContentResponse (google/genai/types.py; built in models.py generate_content_stream by
# _GenerateContentResponse_from_mldev, then _common.py BaseModel._from_response): _remove_extra_fields drops every
# member its models lack (finishMessage, continuationToken, a Vertex payload's createTime through the Gemini API
# client), then model_validate validates (extra="forbid"): a candidate index "0" becomes 0 (a blocked wire stream
# passes, as google-genai would run it), a partialArgs numberValue 2 becomes 2.0 (the call's arguments say 2.0).
# Its members are snake_case with camelCase aliases (alias_generator=to_camel), bytes fields serialise as base64
# (ser_json_bytes), so model_dump(mode="json", by_alias=True, exclude_unset=True) gives the wire names and values
# it kept; exclude_unset, not exclude_none, so that "args": null stays null (unexpected_event, as on the wire).  The
# SDK sets members of its own, which no wire chunk has: these are dropped from the dump.
_GENAI_OWN_MEMBERS = ("sdkHttpResponse", "automaticFunctionCallingHistory", "parsed")


def _gemini_sdk_item(item: Any, normalizer: Any, pos: int) -> Any:
    """A GenerateContentResponse: its wire chunk (the JSON-mode dump without the SDK's own members, its
    enums as their names and its bytes as base64, with each call's own argument values put back)."""
    payload = _sdk_dump(item, "json")
    if type(payload) is dict:
        for member in _GENAI_OWN_MEMBERS:
            payload.pop(member, None)
        _genai_call_values(item, payload)
    return payload


def _genai_call_values(item: Any, payload: dict) -> None:
    """Put back into a JSON-mode dump each function call's `args` and each partialArgs `numberValue` as the
    object holds them: google-genai parses `1e400` into a float infinity, which JSON mode writes as null (a
    value the server never sent, which a schema may accept); held as it is, it is non_finite_number, as on
    the wire."""
    for candidate, dumped in zip(getattr(item, "candidates", None) or (), payload.get("candidates") or ()):
        parts = getattr(getattr(candidate, "content", None), "parts", None) or ()
        dumped_parts = (dumped.get("content") or {}).get("parts") if type(dumped) is dict else None
        if type(dumped_parts) is not list:
            continue
        for part, dumped_part in zip(parts, dumped_parts):
            call = getattr(part, "function_call", None)
            dumped_call = dumped_part.get("functionCall") if type(dumped_part) is dict else None
            if call is None or type(dumped_call) is not dict:
                continue
            if "args" in dumped_call:
                dumped_call["args"] = getattr(call, "args", None)
            pieces = dumped_call.get("partialArgs")
            for piece, dumped_piece in zip(getattr(call, "partial_args", None) or (),
                                           pieces if type(pieces) is list else ()):
                if type(dumped_piece) is dict and "numberValue" in dumped_piece:
                    dumped_piece["numberValue"] = getattr(piece, "number_value", None)


def _gemini_frame(stream: list, query: str) -> tuple[str, bytes]:
    """alt=sse: data lines ended by CRLF CRLF; without it, one JSON array of the same objects."""
    from urllib.parse import parse_qs

    if parse_qs(query).get("alt") == ["sse"]:
        return "text/event-stream", sse_body(stream, named=False, done=False, end="\r\n")
    return "application/json", ("[" + ",\r\n".join(wire_json(chunk) for chunk in stream) + "]").encode("ascii")


def _gemini_cut_frame(stream: list, query: str) -> tuple[str, bytes]:
    """A cut-off stream: the SSE body as it is (it has no terminal), the JSON array without its "]"."""
    kind, body = _gemini_frame(stream, query)
    return kind, body[:-1] if kind == "application/json" else body


# Gemini's errors before a stream: Google's {"error": {"code", "message", "status"}} (google-genai's
# errors.py reads code, message and status from it), with the statuses of
# https://ai.google.dev/gemini-api/docs/troubleshooting: 429 RESOURCE_EXHAUSTED (with its RetryInfo),
# 500 INTERNAL, 503 UNAVAILABLE.
_GEMINI_JSON = "application/json; charset=UTF-8"
_GEMINI_ERRORS = (
    http_error("rate_limit", 429, {"error": {
        "code": 429, "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}},
        content_type=_GEMINI_JSON),
    http_error("server_error", 500, {"error": {
        "code": 500, "message": "An internal error has occurred. Please retry or report in "
                                "https://developers.generativeai.google/guide/troubleshooting",
        "status": "INTERNAL"}}, content_type=_GEMINI_JSON),
    http_error("overloaded", 503, {"error": {"code": 503, "message": "The model is overloaded. Please try again later.",
                                             "status": "UNAVAILABLE"}}, content_type=_GEMINI_JSON),
)

# google-genai reads each non-empty line not starting "data: " as part of a JSON error body
# (googleapis/python-genai, google/genai/_api_client.py, _iter_response_stream): a comment, id: or
# retry: line would fail it, so of the SSE framing variants only crlf is served (alt=sse ends lines
# in CRLF already); raw UTF-8 it decodes as JSON does (also in the JSON array of a request without alt=sse).
_GEMINI_FRAMINGS = frozenset({"crlf", "utf8"})

# Gemini API (v1, v1beta, v1alpha) and Vertex AI model paths.
_GEMINI_API_PATH = (r"/v1(?:beta|alpha)?/models/[^/]+:streamGenerateContent"
                    r"|/v1(?:beta1)?/projects/[^/]+/locations/[^/]+/publishers/google/models/[^/]+"
                    r":streamGenerateContent")


def _gemini_plain_sse(text: str) -> bool:
    """Whether text is "data: " events each of one line ended by LF LF, or each by CRLF CRLF (so
    _GEMINI_SSE_EVENT matches all of it), told by counting: every line end (each CR one of a CRLF) is one
    of a separator (two line ends and "data: ") or of the last two."""
    end = "\r\n" if "\r" in text else "\n"
    return (text.startswith("data: ") and text.endswith(end + end)
            and text.count("\n") == 2 * text.count(end + end + "data: ") + 2
            and (end == "\n" or text.count("\r") == text.count("\r\n") == text.count("\n")))


def _gemini_check_lines(text: str, first_line: int = 0) -> None:
    """Gemini SSE lines that every reader reads alike (CaptureError otherwise); lines numbered after
    first_line (see CaptureRules).

    google-genai reads "data: " lines and blank lines as SSE and pushes every other line into
    a raw-JSON buffer (its error path), so a comment, event:, id: or "data:" without a space
    breaks its stream while WHATWG readers skip or read it: refused, like a BOM.
    """
    if _gemini_plain_sse(text) or _GEMINI_SSE_EVENT.match(text).end() == len(text):
        return   # (every line a "data: " line or blank)
    for number, line in enumerate(re.split(_SSE_LINE_END, text), first_line + 1):
        if line and not line.startswith("data: "):
            raise CaptureError("a gemini SSE line other than \"data: ...\" or a blank line (a comment, event:, "
                               "id:, or data: without a space): google-genai reads it as raw JSON and fails, "
                               "other readers skip it", number)


def _gemini_check_events(text: str, first_line: int = 0) -> None:
    """Gemini SSE events that every reader splits alike (CaptureError otherwise), once every line is one
    _gemini_check_lines passes: js-genai splits events only on "\n\n", "\r\r" or "\r\n\r\n" and strips
    one "data: ", so each event must be one data line ended by one of those."""
    if _gemini_plain_sse(text):
        return
    framing = _GEMINI_SSE_EVENT.match(text)
    if framing.end() != len(text):
        raise CaptureError("a gemini SSE event of more than one data line, or not ended by \\n\\n, \\r\\r or "
                           "\\r\\n\\r\\n: js-genai splits the stream only there and would read other events",
                           first_line + len(re.split(_SSE_LINE_END, text[:framing.end()])))


# The events of a gemini body as every reader splits them (see sse_to_envelope).
_GEMINI_SSE_EVENT = re.compile(r"(?:data: [^\r\n]*(?:\r\n\r\n|\n\n|\r\r))*")


# --- Gemini function declarations -----------------------------------------------------
#
# A Gemini request's tools are Tool objects: functionDeclarations (client
# functions) and hosted tools the provider runs (googleSearch, codeExecution...).
# A declaration's parametersJsonSchema is JSON Schema, used as it is.  Its
# `parameters` is Gemini's Schema object, an OpenAPI 3.0 subset, converted here:
# type names are lower-cased (STRING -> string), `nullable: true` adds "null" to
# the type (to anyOf when there is no type, and null to an enum), int64 counts
# sent as strings ("minItems": "1") become numbers, and every other member is
# kept as it is for the validator to judge (format, propertyOrdering and example
# are annotations there; anything outside the subset is unsupported_schema).  A
# declaration with neither takes no arguments but any object: {"type": "object"}.
# The SDKs accept snake_case spellings (function_declarations...), so both are read.
_GEMINI_SCHEMA_TYPES = MappingProxyType({"STRING": "string", "NUMBER": "number", "INTEGER": "integer",
                                         "BOOLEAN": "boolean", "ARRAY": "array", "OBJECT": "object",
                                         "NULL": "null"})


_GEMINI_SCHEMA_COUNTS = frozenset({"minItems", "maxItems", "minLength", "maxLength", "minProperties",
                                   "maxProperties"})


_GEMINI_HOSTED_TOOLS = frozenset({
    "googleSearch", "googleSearchRetrieval", "codeExecution", "urlContext", "googleMaps", "enterpriseWebSearch",
    "fileSearch", "computerUse", "retrieval", "mcpServers", "google_search", "google_search_retrieval",
    "code_execution", "url_context", "google_maps", "enterprise_web_search", "file_search", "computer_use",
    "mcp_servers",
})


_GEMINI_DECLARATIONS = ("functionDeclarations", "function_declarations")


def _is_gemini_tool(tool: Any) -> bool:
    """A Gemini Tool object (or a bare FunctionDeclaration), not an OpenAI or Anthropic tool."""
    if not isinstance(tool, dict) or "type" in tool or "input_schema" in tool or "function" in tool:
        return False
    return (any(key in tool for key in _GEMINI_DECLARATIONS) or any(key in _GEMINI_HOSTED_TOOLS for key in tool)
            or "name" in tool and any(k in tool for k in ("parameters", "parametersJsonSchema",
                                                          "parameters_json_schema")))


def _gemini_tool(tool: dict, where: str) -> list[tuple[str, Any]]:
    """(name, JSON Schema) of each function a Gemini Tool declares; hosted tools declare none."""
    if "name" in tool and not any(key in tool for key in _GEMINI_DECLARATIONS):
        return [_gemini_declaration(tool, where)]   # a bare FunctionDeclaration
    declarations: Any = []
    for key, value in tool.items():
        if key in _GEMINI_DECLARATIONS:
            declarations = value
        elif key not in _GEMINI_HOSTED_TOOLS:
            raise CaptureError(f"{where} has the member {_token(key)}, which is neither functionDeclarations nor "
                               "a reviewed hosted tool")
    if not isinstance(declarations, list):
        raise CaptureError(f"{where}.functionDeclarations is {_describe(declarations)}, not a list")
    return [_gemini_declaration(d, f"{where}.functionDeclarations[{n}]") for n, d in enumerate(declarations)]


def _gemini_declaration(declaration: Any, where: str) -> tuple[str, Any]:
    if not isinstance(declaration, dict):
        raise CaptureError(f"{where} is {_describe(declaration)}, not a function declaration")
    name = declaration.get("name")
    if not isinstance(name, str) or not name:
        raise CaptureError(f"{where}.name must be a non-empty string, got {_describe(name)}")
    plain = declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))
    openapi = declaration.get("parameters")
    if plain is not None and openapi is not None:
        raise CaptureError(f"{where} gives both parameters and parametersJsonSchema (Gemini takes one)")
    if plain is not None:
        if not isinstance(plain, (dict, bool)):
            raise CaptureError(f"{where}.parametersJsonSchema must be a JSON Schema, got {_describe(plain)}")
        return name, plain
    if openapi is None:
        return name, {"type": "object"}
    try:
        return name, gemini_schema(openapi, where + ".parameters")
    except RecursionError:
        raise CaptureError(f"{where}.parameters nests too deeply to convert") from None


_GEMINI_UNWRITTEN = object()   # a keyword's conversion that writes nothing in its place


def _gemini_schema_type(value: Any, where: str, key: str) -> str:
    kind = _GEMINI_SCHEMA_TYPES.get(value.upper()) if isinstance(value, str) else None
    if kind is None:
        raise CaptureError(f"{where}.type {_token(value)} is not one of "
                           f"{', '.join(_GEMINI_SCHEMA_TYPES)}")
    return kind


def _gemini_schema_nullable(value: Any, where: str, key: str) -> object:
    """Checked here, written by gemini_schema as a type, an anyOf branch or an enum member."""
    if not isinstance(value, bool):
        raise CaptureError(f"{where}.nullable must be a boolean, got {_describe(value)}")
    return _GEMINI_UNWRITTEN


def _gemini_schema_count(value: Any, where: str, key: str) -> Any:
    """A count is an int64, which proto3 JSON writes as a string of digits; any other value stays."""
    if not (isinstance(value, str) and value.isascii() and value.isdigit()):
        return value
    if len(value) > 19:   # an int64 has at most 19 digits (and Python refuses to read 4,300)
        raise CaptureError(f"{where}.{key} is a count of {len(value)} digits, more than an int64 holds")
    return int(value)


# A Schema keyword -> its conversion(value, where, keyword); any other keyword is copied as it is, but
# properties, items and anyOf, whose Schemas gemini_schema converts itself.
_GEMINI_SCHEMA_KEYWORDS: Mapping[str, Callable[[Any, str, str], Any]] = MappingProxyType({
    "type": _gemini_schema_type, "nullable": _gemini_schema_nullable,
    **dict.fromkeys(_GEMINI_SCHEMA_COUNTS, _gemini_schema_count),
})


def gemini_schema(schema: Any, where: str = "parameters") -> dict:
    """Gemini's OpenAPI-style Schema object as JSON Schema (the rules above); CaptureError when it cannot be."""
    if not isinstance(schema, dict):
        raise CaptureError(f"{where} is {_describe(schema)}, not a Schema object")
    out: dict[str, Any] = {}
    for key, value in schema.items():
        # a Schema's Schemas are converted here, not in a helper: a frame more per level would lower
        # how deep a Schema may nest before it "nests too deeply to convert"
        if key == "properties":
            if not isinstance(value, dict):
                raise CaptureError(f"{where}.properties is {_describe(value)}, not an object")
            value = {name: gemini_schema(sub, f"{where}.properties.<member>") for name, sub in value.items()}
        elif key == "items":
            value = gemini_schema(value, where + ".items")
        elif key == "anyOf":
            if not isinstance(value, list):
                raise CaptureError(f"{where}.anyOf is {_describe(value)}, not a list")
            value = [gemini_schema(sub, f"{where}.anyOf[{n}]") for n, sub in enumerate(value)]
        elif key in _GEMINI_SCHEMA_KEYWORDS:
            value = _GEMINI_SCHEMA_KEYWORDS[key](value, where, key)
        if value is not _GEMINI_UNWRITTEN:
            out[key] = value
    if schema.get("nullable") is True:
        if "type" in out:
            out["type"] = [out["type"], "null"]
        elif "anyOf" in out:
            out["anyOf"] = out["anyOf"] + [{"type": "null"}]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = out["enum"] + [None]
    return out


def _gemini_request_tools(body: dict) -> tuple[list, Any]:
    """(tools, tool_choice) of a generateContent request: functionDeclarations and toolConfig."""
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise CaptureError(f"the request's tools is {_describe(tools)}, not a list")
    out = []
    for number, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise CaptureError(f"tools[{number}] is {_describe(tool)}, not a Tool object")
        out.extend({"name": name, "input_schema": schema} for name, schema in _gemini_tool(tool, f"tools[{number}]"))
    config = body.get("toolConfig", body.get("tool_config")) or {}
    if not isinstance(config, dict):
        raise CaptureError(f"toolConfig is {_describe(config)}, not an object")
    choice = config.get("functionCallingConfig", config.get("function_calling_config"))
    if isinstance(choice, dict):
        snake = {"allowed_function_names": "allowedFunctionNames",
                 "stream_function_call_arguments": "streamFunctionCallArguments"}
        choice = {snake.get(key, key): value for key, value in choice.items()}
    return out, choice


def _gemini_tools(schemas: dict) -> list:
    """One Tool of function declarations, each with its JSON Schema (parametersJsonSchema)."""
    return [{"functionDeclarations": [{"name": n, "parametersJsonSchema": s} for n, s in schemas.items()]}]


def _gemini_request_body(schemas: dict, request: dict) -> dict:
    """A streamGenerateContent request (the model is in its path; the endpoint streams): the tools and
    toolConfig.functionCallingConfig."""
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": REQUEST_PROMPT}]}]}
    if schemas:
        body["tools"] = _gemini_tools(schemas)
    for choice in _request_controls(request, ("tool_choice",)).values():
        body["toolConfig"] = {"functionCallingConfig": choice}
    return body


# The normalizer ends each call at its final part and emits the finish of the candidate
# with calls as the turn's stop reason, at the end of the stream, so "STOP" is the tool
# reason here; a text turn's STOP never reaches the machine.
GEMINI = Profile(
    name="gemini", stream_key="chunks",
    rules=TurnRules(tool_reason="STOP", needs_close=False, stop_name="finishReason",
                    slot_end_name="its final functionCall part", requires_id=False),
    wire=WireRules(normalizer=lambda limits: GeminiNormalizer(limits.max_depth), protected_paths=_gemini_protected,
                   sdk_item=_gemini_sdk_item),
    request=RequestRules(choice=_choice_gemini, tools=_gemini_request_tools, tool_entry=_gemini_tool_entry),
    capture=CaptureRules(family="gemini", claims=_gemini_claims, redact=_redact_gemini_chunk,
                         check_sse_text=(_gemini_check_lines, _gemini_check_events)),
    http=HttpRules(api_path=_GEMINI_API_PATH, frame=_gemini_frame,
                   api_example="/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                   tools_shape=_gemini_tools, request_body=_gemini_request_body, errors=_GEMINI_ERRORS,
                   cut_frame=_gemini_cut_frame, framings=_GEMINI_FRAMINGS))


# ---------------------------------------------------------------------------
# Provider: Cohere v2 Chat stream events (profile cohere)
# ---------------------------------------------------------------------------
#
# POST /v2/chat with "stream": true.  Each SSE event's "event:" name equals its payload's
# "type"; "data: [DONE]", with no event line, follows the last one and is not an event.
# A call is three kinds of event, with the call's index at the top of each:
# tool-call-start (delta.message.tool_calls is one object, not a list: id, type "function",
# function.name and function.arguments, "" in every recording), tool-call-delta (only
# function.arguments, a fragment) and tool-call-end.  Calls come one after another, never
# interleaved: the Vercel AI SDK keeps one pending call and ignores the index.
# message-end ends the turn: delta.finish_reason TOOL_CALL on a calling turn; ERROR (with an
# error string, over HTTP 200) when generation failed, which the SDK yields as an ordinary event.

# Event types that carry no tool call (text, tool plan, citations, the SDK's debug event).
_COHERE_QUIET = frozenset({"content-start", "content-delta", "content-end", "tool-plan-delta",
                           "citation-start", "citation-end", "debug"})
_COHERE_CALL_EVENTS = frozenset({"tool-call-start", "tool-call-delta", "tool-call-end"})
_COHERE_EVENTS = _COHERE_QUIET | _COHERE_CALL_EVENTS | {"message-start", "message-end"}
_COHERE_START_KEYS = frozenset({"id", "type", "function"})
_COHERE_FUNCTION_KEYS = frozenset({"name", "arguments"})

# The end of a turn as a transition table: (phase, step) -> (next phase, what is wrong or None).
# "ended": message-end came; nothing of the turn may follow it.
_COHERE_ENDING: Mapping[tuple[str, str], tuple[str, str | None]] = MappingProxyType({
    ("running", "end"): ("ended", None),
    ("ended", "end"): ("ended", None),        # a second one is the machine's duplicate_terminal
    ("running", "event"): ("running", None),
    ("ended", "event"): ("ended", "{event} after message-end"),
})


class _CohereState(_Record):
    """Translation state: the calls begun (in order), the one streaming now."""

    __slots__ = ("opening", "ending", "started", "open")

    def __init__(self) -> None:
        self.opening = "new"        # see _OPENING
        self.ending = "running"     # see _COHERE_ENDING
        self.started: set[int] = set()
        self.open: int | None = None   # index of the call between its start and its end


class CohereNormalizer:
    """Translate Cohere v2 chat stream events into neutral events, one at a time."""

    def __init__(self) -> None:
        self.state = _CohereState()

    def translate(self, pos: int, event: Any) -> Iterator[NeutralEvent]:
        state = self.state
        kind = _wire_str(event.get("type")) if isinstance(event, dict) else None
        if kind not in _COHERE_EVENTS:
            what = f"type {_token(kind)}" if isinstance(event, dict) else _describe(event)
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"event {what} has no reviewed normalizer")
            return
        yield from _COHERE_ROOM.read(pos, kind, event, state)


def _cohere_refused(pos: int, kind: str, event: dict) -> WireProblem | None:
    """An event the Vercel AI SDK's parser refuses: it goes on without it."""
    if not _secure_parse_refuses(event):
        return None
    # then read as the other readers read it (as on gemini): the report shows what was sent
    return WireProblem(pos, UNEXPECTED_EVENT, f"{kind} has a __proto__ or constructor.prototype member: the "
                       "Vercel AI SDK drops such an event and reads the turn without it")


def _cohere_tool_calls(event: dict) -> Any:
    """delta.message.tool_calls of an event (None when any level is absent)."""
    delta = event.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    return message.get("tool_calls") if isinstance(message, dict) else None


def _cohere_message_start(pos: int, kind: str, event: dict, state: _CohereState) -> Iterator[NeutralEvent]:
    if _cohere_tool_calls(event) not in (None, []):
        yield WireProblem(pos, UNSUPPORTED_EVENT, "message-start carries tool calls (every recording has an empty "
                          "list there): no reviewed reader takes calls from it")


def _cohere_message_end(pos: int, kind: str, event: dict, state: _CohereState) -> Iterator[NeutralEvent]:
    delta = event.get("delta")
    reason = delta.get("finish_reason") if isinstance(delta, dict) else None
    if not isinstance(reason, str):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"message-end delta.finish_reason is {_describe(reason)}, "
                          "not a string")
        return
    error = delta.get("error")
    if reason == "ERROR" or error is not None:
        error_type = delta.get("error_type")
        named = f" ({_token(error_type)})" if isinstance(error_type, str) and error_type else ""
        yield WireProblem(pos, STREAM_ERROR, f"message-end reports an error{named} with finish_reason "
                          f"{_token(reason)}: the generation failed (the Cohere SDK yields this as an ordinary "
                          "event over HTTP 200)")
    yield TurnEnd(pos, reason)


def _cohere_call_event(pos: int, kind: str, event: dict, state: _CohereState) -> Iterator[NeutralEvent]:
    index = event.get("index")
    if not _is_index(index):
        yield WireProblem(pos, MISSING_INDEX, f"{kind} index must be a non-negative integer, got {_describe(index)}")
        return
    if kind == "tool-call-end":
        yield from _cohere_call_end(pos, index, event, state)
        return
    call = _cohere_tool_calls(event)
    if not isinstance(call, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"{kind} delta.message.tool_calls is {_describe(call)}, not one "
                          "call object", None, index)
    elif kind == "tool-call-start":
        yield from _cohere_start(pos, index, call, state)
    else:
        yield from _cohere_call_delta(pos, index, call, state)


def _cohere_call_end(pos: int, index: int, event: dict, state: _CohereState) -> Iterator[NeutralEvent]:
    if event.get("delta") is not None:
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"tool-call-end of call {index} carries a delta (the wire "
                          "sends only type and index)", None, index)
        return
    if state.open == index:
        state.open = None
    yield SlotEnd(pos, (None, index))


def _cohere_call_delta(pos: int, index: int, call: dict, state: _CohereState) -> tuple[NeutralEvent, ...]:
    """A tool-call-delta: only a piece of function.arguments, for the call that is streaming.
    (The events as a tuple: one call per delta, no generator.)"""
    function = call.get("function")
    text = function.get("arguments") if isinstance(function, dict) else None
    if _stated(call) != {"function"} or not isinstance(function, dict) or _stated(function) != {"arguments"} \
            or not isinstance(text, str):
        return (WireProblem(pos, UNSUPPORTED_EVENT, f"tool-call-delta of call {index} must carry only "
                            "function.arguments, a string (an id or name there is not reviewed)", None, index),)
    fragment = Fragment(pos, (None, index), None, None, text)
    if index in state.started and state.open not in (None, index):
        return (WireProblem(pos, UNEXPECTED_EVENT, f"tool-call-delta for call {index} while call {state.open} is "
                            "streaming: the Vercel AI SDK appends it to the pending call", None, index), fragment)
    return (fragment,)


def _stated(members: dict) -> set:
    """The members a value states: null is absent (an SDK's model_dump_json() writes its unset fields so)."""
    return {key for key, value in members.items() if value is not None}


def _cohere_start(pos: int, index: int, call: dict, state: _CohereState) -> Iterator[NeutralEvent]:
    function = call.get("function")
    if not isinstance(function, dict):
        function = {None: None}   # not a reviewed shape: refused below
    ok_id, call_id = _optional_str(call, "id")
    ok_name, name = _optional_str(function, "name")
    text = function.get("arguments")
    # the Vercel AI SDK's schema wants type "function" and string arguments: it drops another start, and
    # with it the whole call
    if not (_COHERE_START_KEYS.issuperset(call) and _COHERE_FUNCTION_KEYS.issuperset(function)
            and call.get("type") == "function" and ok_id and ok_name and isinstance(text, str)):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"tool-call-start of call {index} is not a reviewed shape (id, "
                          "type \"function\", function.name, and function.arguments a string)", None, index)
        return
    if index in state.started:
        yield WireProblem(pos, IDENTITY_COLLISION, f"call {index} was started twice", None, index)
        return
    if state.open is not None:
        yield WireProblem(pos, UNEXPECTED_EVENT, f"call {index} starts while call {state.open} is streaming: calls "
                          "come one after another, and the Vercel AI SDK keeps one pending call", None, index)
    elif index != len(state.started):
        yield WireProblem(pos, MISSING_SLOT, f"call {index} starts, but call {len(state.started)} comes next",
                          None, index)
    state.started.add(index)
    state.open = index
    # A call without arguments starts with "" and ends at once: the joined "" becomes {}.
    yield SlotOpen(pos, (None, index), call_id, name, {})
    if text:
        yield Fragment(pos, (None, index), None, None, text)


# The lifecycle: message-start opens, message-end ends (see _COHERE_ENDING), and what each event type says.
_COHERE_ROOM = _EventRoom(
    start="message-start", ending=_COHERE_ENDING, steps={"message-end": "end"}, other="event",
    handlers={"message-start": _cohere_message_start, "message-end": _cohere_message_end,
              **dict.fromkeys(_COHERE_CALL_EVENTS, _cohere_call_event)},
    screen=_cohere_refused)


# --- its request, redaction, capture rules and its Profile row ---------------


def _choice_cohere(choice: Any) -> dict:
    """Cohere v2 tool_choice: "REQUIRED" or "NONE"; absent means the model decides (no named tool)."""
    if choice not in ("REQUIRED", "NONE"):
        raise RequestError(f"tool_choice {_describe(choice)} is not \"REQUIRED\" or \"NONE\" (Cohere has no named "
                           "tool choice)")
    return {"none": choice == "NONE"}


def _cohere_tool(where: str, tool: Any) -> list[tuple[str, Any, str]]:
    """A /v2/chat tools entry: {"type": "function", "function": {...}}; cohere-python's type is optional."""
    if isinstance(tool, dict) and "parameter_definitions" in tool:
        raise CaptureError(f"{where} is a Cohere v1 tool (parameter_definitions): v1 chat is not read; "
                           "record a /v2/chat request")
    return _function_tool(where, tool, "Cohere v2")


def _cohere_check_sse(text: str, first_line: int = 0) -> None:
    """Framing cohere-python reads otherwise: its sync reader ends a line only at LF (and strips every
    CR before it), its async reader (httpx aiter_lines) at every line break str.splitlines() knows.
    Lines numbered after first_line (see CaptureRules)."""
    if "\r" not in text and not any(mark in text for mark in _SPLITLINES_BREAKS):
        return   # (no line can fail)
    for number, line in enumerate(text.split("\n"), first_line + 1):
        if "\r" in (line[:-1] if line.endswith("\r") else line):
            raise CaptureError("a line ends in a bare CR: cohere-python's sync reader splits lines only at LF "
                               "and would join or lose events there", number)
        for mark in _SPLITLINES_BREAKS:
            if mark in line:
                raise CaptureError(f"a raw U+{ord(mark):04X} in a line: cohere-python's async reader ends the line "
                                   "there and reads another stream", number)


def _redact_cohere_event(event: dict) -> dict:
    """Text, tool plan, citations and error messages; call identity and arguments are kept."""
    out = {}
    for key, value in event.items():
        if key in ("type", "index", "id"):
            out[key] = value
        elif key == "delta" and _wire_str(event.get("type")) in _COHERE_CALL_EVENTS and isinstance(value, dict):
            out[key] = {k: (_redact_cohere_call_message(v) if k == "message" else _neutral(v, _COHERE_KEEP))
                        for k, v in value.items()}
        elif key == "delta" and isinstance(value, dict):
            out[key] = {k: (v if k in ("finish_reason", "usage", "error_type") else _neutral(v, _COHERE_KEEP))
                        for k, v in value.items()}
        else:
            out[key] = _neutral(value, _COHERE_KEEP)
    return out


def _redact_cohere_call_message(message: Any) -> Any:
    """A call event's delta.message: its tool_calls kept, anything beside them neutralised."""
    if not isinstance(message, dict):
        return _neutral(message, _COHERE_KEEP)
    return {k: (v if k == "tool_calls" else _neutral(v, _COHERE_KEEP)) for k, v in message.items()}


_COHERE_KEEP = frozenset({"type", "role"})


def _cohere_protected(payload: dict) -> dict[tuple, str]:
    """Cohere: a tool-call-start's call is identity; a tool-call-delta's arguments are a fragment."""
    kind = payload.get("type")
    if kind == "tool-call-start":
        return {("delta", "message", "tool_calls"): "warn"}
    if kind == "tool-call-delta":
        return {("delta", "message", "tool_calls", "function", "arguments"): "fragment"}
    return {}


_COHERE_V1_EVENTS = frozenset({
    "stream-start", "text-generation", "tool-calls-generation", "tool-calls-chunk", "stream-end",
    "search-queries-generation", "search-results", "citation-generation",
})


def _cohere_foreign_shape(payload: dict) -> str | None:
    """An event of Cohere's v1 chat stream."""
    if _wire_str(payload.get("event_type")) in _COHERE_V1_EVENTS:
        return f"a Cohere v1 chat stream (stream-start, text-generation... events): {_NO_PROFILE}"
    return None


# cohere-python's ClientV2.chat_stream (cohere/v2/raw_client.py) builds each event with construct_type
# (cohere/core/unchecked_base_model.py: no validation, fields_set = the members sent, extra="allow"; an event its
# union refuses, or a type it does not know, is logged and skipped, never handed over).  Its JSON-mode dump goes
# through UniversalBaseModel.serialize_model (cohere/core/pydantic_utilities.py), which calls dict(): two dumps
# deep-merged, about 190 us an event.  The python-mode dump of pydantic's serializer with by_alias and
# exclude_unset gives the same dict for every served fixture in 2 us (no stream event holds a datetime or bytes),
# so the room reads it so, and checks that it is JSON (fail closed) in 3 us more.


# That python-mode dump is pydantic's own model serializer (UniversalBaseModel's serialize_model is when_used="json"):
# the declared fields in the fields set, in declared order, by alias, then the extras.  So a model of a cohere.* class
# without aliases, field serializers, computed fields or other model serializers, holding no extra member and only
# str, int, bool, None, such models and lists of them, is read from its attributes to that dict (about 4 us less
# an event); anything else (an excluded field too) declines (_NotPlain) to the dump.
_COHERE_CLASSES: dict[type, Any] = {}   # class -> its declared fields, or None (asked once per class, bounded)


def _cohere_fields(cls: type) -> tuple[tuple[str, ...], frozenset] | None:
    """(declared fields, the same as a set) of a cohere-python model whose python-mode dump is pydantic's own
    (see above), else None."""
    if cls in _COHERE_CLASSES:
        return _COHERE_CLASSES[cls]
    found = None
    try:
        fields = getattr(cls, "model_fields", None)
        decorators = getattr(cls, "__pydantic_decorators__", None)
        if (str(getattr(cls, "__module__", "")).startswith("cohere.") and type(fields) is dict
                and decorators is not None and not decorators.field_serializers and not decorators.computed_fields
                and all(d.info.when_used == "json" for d in decorators.model_serializers.values())
                and not getattr(cls, "__pydantic_computed_fields__", None)
                and all(f.alias is None and f.serialization_alias is None and not f.exclude for f in fields.values())):
            found = (tuple(fields), frozenset(fields))
    except Exception:   # noqa: BLE001 - a class that will not say: not one of these
        found = None
    if len(_COHERE_CLASSES) < 256:
        _COHERE_CLASSES[cls] = found
    return found


def _cohere_dump(model: Any) -> dict:
    """pydantic's python-mode dump (by_alias, exclude_unset) of a cohere-python model holding only plain members,
    read from its attributes; _NotPlain for anything else."""
    cls = type(model)
    entry = _COHERE_CLASSES[cls] if cls in _COHERE_CLASSES else _cohere_fields(cls)
    if entry is None or model.__pydantic_extra__:
        raise _NotPlain
    fields, known = entry
    sent = model.__pydantic_fields_set__
    if not sent <= known:
        raise _NotPlain
    values = model.__dict__
    out = {}
    for name in fields:
        if name in sent:
            value = values[name]
            kind = type(value)
            if kind is list:
                value = [item if type(item) in (str, int, bool) or item is None else _cohere_dump(item)
                         for item in value]
            elif kind is not str and kind is not int and kind is not bool and value is not None:
                value = _cohere_dump(value)
            out[name] = value
    return out


def _cohere_sdk_item(item: Any, normalizer: Any, pos: int) -> Any:
    """A cohere-python event object: its wire event (see above); anything else as the generic reader reads it."""
    try:
        return _cohere_dump(item)
    except Exception:   # noqa: BLE001 - _NotPlain, or an attribute that is not there: the dump decides
        pass
    serializer = getattr(type(item), "__pydantic_serializer__", None)
    if serializer is None or getattr(item, "model_dump", None) is None:
        return _sdk_dump(item)
    payload = serializer.to_python(item, by_alias=True, exclude_unset=True, warnings=False)
    if not _is_json(payload):
        raise TypeError("its dump holds values that are not JSON")
    return payload


def _cohere_claims(payload: dict) -> bool:
    return _wire_str(payload.get("type")) in _COHERE_EVENTS


def _cohere_frame(stream: list, query: str) -> tuple[str, bytes]:
    """An event: line named after each type, then data: [DONE] without one."""
    return "text/event-stream", sse_body(stream, named=True, done=True)


def _cohere_cut_frame(stream: list, query: str) -> tuple[str, bytes]:
    return "text/event-stream", sse_body(stream, named=True, done=False)


# Cohere's 429 before a stream: {"id", "message"}, the body cohere-python's TooManyRequestsError carries
# (https://docs.cohere.com/reference/errors; its trial-key wording as recorded in public test suites).
_COHERE_ERRORS = (
    http_error("rate_limit", 429, {"id": "5f0c3a4e-0000-4000-8000-00000000c429",
                                   "message": "You are using a Trial key, which is limited to 10 API calls / minute."}),
)
def _cohere_request_body(schemas: dict, request: dict) -> dict:
    body: dict[str, Any] = {"model": "command-a-03-2025", "stream": True,
                            "messages": [{"role": "user", "content": REQUEST_PROMPT}]}
    if schemas:
        body["tools"] = _function_tools(schemas)
    return dict(body, **_request_controls(request, ("tool_choice",)))


COHERE = Profile(
    name="cohere", stream_key="events",
    rules=TurnRules(tool_reason="TOOL_CALL", needs_close=False, stop_name="message-end finish_reason",
                    slot_end_name="tool-call-end"),
    wire=WireRules(normalizer=lambda limits: CohereNormalizer(), protected_paths=_cohere_protected,
                   fragment_key=_fragment_key_at("index"), sdk_item=_cohere_sdk_item),
    request=RequestRules(choice=_choice_cohere, parallel_instead=" (Cohere's API has no such control)",
                         expand_tool=_cohere_tool, tool_entry=_function_entry),
    capture=CaptureRules(family="cohere", claims=_cohere_claims, redact=_redact_cohere_event,
                         check_sse_text=(_cohere_check_sse,), warn_without_done=True,
                         foreign_shape=_cohere_foreign_shape),
    http=HttpRules(api_path=r"/v2/chat", frame=_cohere_frame, api_example="/v2/chat", tools_shape=_function_tools,
                   request_body=_cohere_request_body, errors=_COHERE_ERRORS, cut_frame=_cohere_cut_frame,
                   framings=SERVE_FRAMINGS))


# ---------------------------------------------------------------------------
# Provider: Ollama's native /api/chat stream (profile ollama)
# ---------------------------------------------------------------------------
#
# NDJSON: one JSON object per line (a chunk), the last with "done": true and a done_reason.
# There are no argument fragments: the server parses the model's output and sends each call
# whole, as an entry of message.tool_calls with function.name and function.arguments, an
# object.  Servers from v0.12.10 add an "id" ("call_" and 8 random characters), servers from
# v0.12.6 always send function.index, the call's place among the turn's calls (older ones
# from v0.4.7 leave out an index of 0).  Calls may arrive in a line of their own or in the
# done line itself.  done_reason is "stop" on a calling turn too: there is no tool reason.
# An error during the stream is a line {"error": "..."} over HTTP 200.

_OLLAMA_CALL_KEYS = frozenset({"id", "function"})
_OLLAMA_FUNCTION_KEYS = frozenset({"index", "name", "arguments"})
# Members ollama-python's ChatResponse declares, with their JSON type (null is always allowed there):
# it validates every line and raises at one it cannot read, after handing over the calls before it.
_OLLAMA_LINE_TYPES = MappingProxyType({
    "model": str, "created_at": str, "done_reason": str, "total_duration": int, "load_duration": int,
    "prompt_eval_count": int, "prompt_eval_duration": int, "eval_count": int, "eval_duration": int,
    "logprobs": list,
})
_OLLAMA_MESSAGE_TYPES = MappingProxyType({
    "role": str, "content": str, "thinking": str, "images": list, "tool_name": str, "tool_calls": list,
})
# Message members of an assistant line; another member naming a tool is a shape not reviewed.
_OLLAMA_MESSAGE_KEYS = frozenset({"role", "content", "thinking", "images", "tool_calls"})
# Characters Python's str.splitlines() ends a line at that Ollama's server writes unescaped inside a
# string (Go's encoder escapes U+2028 and U+2029, not U+0085): httpx's iter_lines, which ollama-python,
# LangChain and LiteLLM read the body with, cuts the line there and the JSON of both halves fails.
_OLLAMA_LINE_BREAKS = ("\x85",)


def _ollama_wrong_type(holder: dict, types: Mapping[str, type], where: str) -> str | None:
    """The first member of `holder` whose value is not null and not of its declared type, described."""
    for key, kind in types.items():
        value = holder.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"{where}{key} is {_describe(value)}, not {'an integer' if kind is int else kind.__name__}"
    return None


def _ollama_wrong_entry(chunk: dict, message: dict) -> str | None:
    """An entry of a list ollama-python validates that it would refuse, described (None: none)."""
    if message.get("images"):
        return "message.images is not empty (an assistant line has none; ollama-python refuses its entries)"
    for entry in chunk.get("logprobs") or ():
        top = entry.get("top_logprobs") if isinstance(entry, dict) else None
        if top and isinstance(top, (int, float)):   # a number has no entries to read (a bool is an int)
            return "a logprobs entry's top_logprobs is not a list"
        for item in [entry] + list(top or ()):
            if not (isinstance(item, dict) and isinstance(item.get("token"), str)
                    and isinstance(item.get("logprob"), (int, float)) and not isinstance(item.get("logprob"), bool)):
                return "a logprobs entry is not {\"token\": string, \"logprob\": number}"
        if isinstance(top, (str, dict, int, float, bool)):
            return "a logprobs entry's top_logprobs is not a list"
    return None


def _ollama_breaks_lines(value: Any) -> bool:
    """Whether a string anywhere in the parsed line holds a character httpx ends a line at."""
    stack: list = [value]
    seen: set[int] = set()   # a value fed by a library caller may refer to itself
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, str):
            if any(mark in item for mark in _OLLAMA_LINE_BREAKS):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


# Bounds of the langchain-ollama check (README "Limits"): Python's ast.literal_eval costs about 500
# bytes of memory per character it parses, so it runs only on strings this check can afford and
# whose outcome no interpreter setting changes; a string past a bound that could still be a Python
# literal blocks (limit_exceeded) instead.
_LANGCHAIN_EVAL_CHARS = 65_536   # characters (about 35 MB of parse at most)
_LANGCHAIN_EVAL_DEPTH = 100      # brackets nested (the tokenizer refuses 201; parsing stays far from the stack's end)
_LANGCHAIN_EVAL_DIGITS = 640     # digits in a run: the lowest integer-string limit an interpreter can be set to


@functools.lru_cache(maxsize=1)
def _python_literal_tokens() -> re.Pattern:
    """Text literal_eval could read as an object or a list, token by token: whitespace, line joins,
    brackets, the signs and points of numbers, numbers, True/False/None/set, string prefixes,
    strings and comments.  A string it does not match whole is no Python literal.  Each alternative
    starts with its own characters and each token is taken atomically (a lookahead captures it, a
    back-reference consumes it: Python 3.10 has no possessive quantifier), so a failed match gives
    back only whole tokens: linear time.  Compiled on first use.
    """
    names = iter(range(1 << 30))

    def atomic(expression: str) -> str:
        name = f"t{next(names)}"
        return f"(?=(?P<{name}>{expression}))(?P={name})"

    quoted = [f"{q}{q}{q}" + atomic(f"(?:[^{q}\\\\]|\\\\.|{q}(?!{q}{q}))*") + f"{q}{q}{q}" for q in ("'", '"')]
    quoted += [f"{q}" + atomic(f"(?:[^{q}\\\\\\r\\n]|\\\\(?:\\r\\n|.))*") + f"{q}" for q in ("'", '"')]
    # A word holding a non-ASCII character outside strings may be an identifier that Python reads
    # NFKC-normalised (PEP 3131): a full-width "ｓｅｔ" is set.  Any such word is taken as a token,
    # so literal_eval decides what it is (strings open and close with ASCII quotes only).
    tokens = [r"[ \t\n\r\x0b\x0c\\\[\](){},:+\-.]+", r"[0-9][0-9A-Za-z_]*(?:\.[0-9A-Za-z_]*)?",
              r"(?:True|False|None|set)(?![0-9A-Za-z_])", r"[rRbBuUfF]{1,2}(?=['\"])", *quoted, r"#[^\r\n]*",
              r"[0-9A-Za-z_]*[^\x00-\x7f][0-9A-Za-z_\x80-\U0010ffff]*"]
    return re.compile("(?s:(?:" + atomic("|".join(tokens)) + ")*)")


def _bracket_depth(text: str) -> int:
    """The most brackets open at once (every bracket counts, those inside strings too)."""
    depth = deepest = 0
    for mark in re.findall(r"[\[\](){}]", text):
        if mark in "[({":
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


def _langchain_reading(value: str) -> tuple[str, str]:
    """What langchain-ollama (1.1.0) makes of an argument string: (outcome, detail).

    Its _parse_json_string runs json.loads and, on json.JSONDecodeError only, ast.literal_eval,
    whose SyntaxError and ValueError alone it takes as "keep the string"; any other exception
    leaves it.  Outcomes: "keep"; "object" or "list" (it runs that instead of the string);
    "raises" (an exception it lets through: the turn fails there); "limit" (past a bound of this
    check, or this machine ran out of memory or stack: it may run an object or a list).
    """
    if re.match(r"[ \t\n\r]*-?[0-9]{%d}" % (_LANGCHAIN_EVAL_DIGITS + 1), value):
        return "limit", f"a number of more than {_LANGCHAIN_EVAL_DIGITS} digits"   # json.loads's integer limit
    if "{" not in value and "[" not in value:
        return "keep", ""   # neither parser can make an object or a list of it
    json_could = value.lstrip(" \t\n\r")[:1] in ("{", "[")
    python_could = (value.lstrip(" \t\n\r\x0c\\")[:1] in ("{", "[", "(", "#")
                    and _python_literal_tokens().fullmatch(value) is not None)
    # json.loads is linear, and its depth is bounded by the interpreter's recursion limit: it is called from
    # here, not from a helper, since each frame more above it lowers that bound
    if json_could:
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            pass   # literal_eval's turn
        except (MemoryError, RecursionError) as exc:
            return "limit", f"json.loads ran out of {'memory' if isinstance(exc, MemoryError) else 'stack'} here"
        except Exception as exc:   # noqa: BLE001  (a ValueError past the integer limit...)
            return "raises", f"json.loads raises {type(exc).__name__}"
        else:
            return ("object" if isinstance(parsed, dict) else "list"), ""
    return _langchain_eval_reading(value) if python_could else ("keep", "")


def _langchain_eval_reading(value: str) -> tuple[str, str]:
    """What ast.literal_eval makes of an argument string made of Python literal tokens, within this check's bounds."""
    import ast

    if len(value) > _LANGCHAIN_EVAL_CHARS:
        return "limit", f"{len(value)} characters (at most {_LANGCHAIN_EVAL_CHARS} are read)"
    depth = _bracket_depth(value)
    if depth > _LANGCHAIN_EVAL_DEPTH:
        return "limit", f"brackets nested {depth} deep (at most {_LANGCHAIN_EVAL_DEPTH} are read)"
    longest = max(map(len, re.findall(r"[0-9_]+", value)), default=0)
    if longest > _LANGCHAIN_EVAL_DIGITS:
        return "limit", f"a run of {longest} digits (at most {_LANGCHAIN_EVAL_DIGITS} are read)"
    try:
        parsed = ast.literal_eval(value)
    except (SyntaxError, ValueError):
        return "keep", ""   # the two it catches: it keeps the string
    except (MemoryError, RecursionError) as exc:
        return "limit", f"literal_eval ran out of {'memory' if isinstance(exc, MemoryError) else 'stack'} here"
    except Exception as exc:   # noqa: BLE001  (a TypeError for an unhashable key...)
        return "raises", f"literal_eval raises {type(exc).__name__}"
    if isinstance(parsed, (dict, list)):
        return ("object" if isinstance(parsed, dict) else "list"), ""
    return "keep", ""


def _langchain_rewrites(name: Any, args: dict) -> tuple[str, str] | None:
    """(code, why) when langchain-ollama would not run these arguments as they are (None: it would).

    Its _parse_arguments_from_tool_call drops a "functionName" member equal to the call's name and
    replaces each top-level string that json.loads or ast.literal_eval reads as an object or a list
    by that value (a band-aid for ollama#6155); _langchain_reading says what it makes of a string.
    """
    for key, value in args.items():
        if key == "functionName" and value == name:
            return UNEXPECTED_EVENT, "has a \"functionName\" member equal to its name, which langchain-ollama drops"
        if not isinstance(value, str):
            continue
        outcome, detail = _langchain_reading(value)
        if outcome in ("object", "list"):
            return UNEXPECTED_EVENT, (f"has the string member {_token(key)} that langchain-ollama replaces by the "
                                      f"{outcome} it parses to")
        if outcome == "raises":
            return UNEXPECTED_EVENT, (f"has the string member {_token(key)} at which langchain-ollama fails "
                                      f"({detail}, which it does not catch)")
        if outcome == "limit":
            return LIMIT_EXCEEDED, (f"has the string member {_token(key)} that langchain-ollama may replace by an "
                                    f"object or a list, beyond what this check reads: {detail}")
    return None


class OllamaNormalizer:
    """Translate /api/chat lines into neutral events, one at a time: each call opens and ends its slot."""

    def __init__(self) -> None:
        self.calls = 0          # calls so far: the next call's slot
        self.opened = False     # a call opened a slot
        self.done = False       # a line said "done": true

    def translate(self, pos: int, chunk: Any) -> Iterator[NeutralEvent]:
        if not isinstance(chunk, dict):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"line is {_describe(chunk)}, not an object")
            return
        if "error" in chunk:
            yield WireProblem(pos, STREAM_ERROR, "the server sent an error line instead of a chunk")
            return
        done = chunk.get("done")
        if not isinstance(done, bool):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"line has done {_describe(done)}, not a boolean (not an "
                              "/api/chat chunk)")
            return
        if self.done:
            if done:
                yield WireProblem(pos, DUPLICATE_TERMINAL, "a second line with \"done\": true")
            else:
                yield WireProblem(pos, DELTA_AFTER_TERMINAL, "a line after the line with \"done\": true")
            return
        # the line's message is read from here, not from a helper below: each frame more lowers how deep an
        # argument string may nest before langchain's json.loads runs out of stack here and not there
        wrong = self._line_problem(pos, chunk)
        if wrong is not None:
            yield wrong
        else:
            yield from self._message(pos, chunk["message"])
        if done:
            self.done = True
            reason = chunk.get("done_reason")
            if self.opened and isinstance(reason, (str, type(None))):   # "stop" ends text turns too
                # the server leaves done_reason out when it is "" (its connection to the model closed)
                yield TurnEnd(pos, "" if reason is None else reason)

    @staticmethod
    def _line_problem(pos: int, chunk: dict) -> WireProblem | None:
        """What stops a reader from reading the line's message as it stands; None: nothing."""
        message = chunk.get("message")
        wrong = (f"message is {_describe(message)}, not an object" if not isinstance(message, dict)
                 else _ollama_wrong_type(chunk, _OLLAMA_LINE_TYPES, "")
                 or _ollama_wrong_type(message, _OLLAMA_MESSAGE_TYPES, "message.")
                 or ("message has no role" if message.get("role") is None else None)
                 or _ollama_wrong_entry(chunk, message))
        if wrong is not None:
            # ollama-python raises at such a line, after handing over the calls before it
            return WireProblem(pos, UNSUPPORTED_EVENT, f"{wrong}: ollama-python cannot read this line")
        if message.get("role") != "assistant":
            return WireProblem(pos, UNEXPECTED_EVENT, f"message.role is {_token(message.get('role'))}, not "
                               "\"assistant\"")
        if _ollama_breaks_lines(chunk):
            return WireProblem(pos, UNEXPECTED_EVENT, "a string in this line holds U+0085 (NEL), which the server "
                               "writes unescaped: ollama-python, LangChain and LiteLLM split the line there and "
                               "cannot read it")
        return None

    def _message(self, pos: int, message: dict) -> Iterator[NeutralEvent]:
        for key, value in message.items():
            if key not in _OLLAMA_MESSAGE_KEYS and ("tool" in key or "function" in key) and value not in _NOTHING:
                yield WireProblem(pos, UNSUPPORTED_EVENT, f"message member {_token(key)} names a tool in a shape this "
                                  "tool does not translate")
        for entry in message.get("tool_calls") or ():
            yield from self._call(pos, entry)

    def _call(self, pos: int, entry: Any) -> Iterator[NeutralEvent]:
        number = self.calls
        self.calls += 1
        key = (None, number)
        function = entry.get("function") if isinstance(entry, dict) else None
        if not (isinstance(function, dict) and _OLLAMA_CALL_KEYS.issuperset(entry)
                and _OLLAMA_FUNCTION_KEYS.issuperset(function) and _optional_str(entry, "id")[0]
                and _optional_str(function, "name")[0]):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"tool_calls entry for call {number} is not a reviewed shape "
                              "(id, function.index, function.name and function.arguments)", None, number)
            return
        index = function.get("index")
        if index is not None and not _is_index(index):
            yield WireProblem(pos, MISSING_INDEX, f"call {number} has function.index {_describe(index)}, not a "
                              "non-negative integer", None, number)
            return
        # Its value is not checked: the built-in model parsers of servers v0.12.6 to v0.17.3 send 0 for
        # every call, and no reader uses it (ollama-python drops it).  Calls are numbered in order.
        name = function.get("name") or None
        args = function.get("arguments")
        self.opened = True
        yield SlotOpen(pos, key, entry.get("id") or None, name, args if isinstance(args, dict) else {})
        if not isinstance(args, dict):
            yield _ollama_not_an_object(pos, number, function)
        else:   # what langchain-ollama rewrites, read from here (a frame more would lower how deep it may nest)
            rewrite = _langchain_rewrites(name, args)
            if rewrite is not None:
                yield WireProblem(pos, rewrite[0], f"call {number} {rewrite[1]}", None, number)
        yield SlotEnd(pos, key)


def _ollama_not_an_object(pos: int, number: int, function: dict) -> WireProblem:
    """A call whose arguments are not an object (every reader runs an object as it stands)."""
    args = function.get("arguments")
    what = _describe(args) if "arguments" in function else "no arguments"
    return WireProblem(pos, UNSUPPORTED_EVENT, f"call {number} has {what}, not an arguments object: "
                       "ollama-python refuses that, LangChain parses a string and a community Vercel provider "
                       "skips the call", None, number)


# --- its request, redaction, capture rules and its Profile row ---------------


# A line of spaces and tabs at most, ended (it follows the body's start or a line end): what
# _ollama_check_lines refuses, looked for at once.
_OLLAMA_BLANK = re.compile(r"(?:\A|\n|\r(?!\n))[ \t]*[\r\n]")


def _ollama_check_lines(text: str, first_line: int = 0) -> None:
    """Framing ollama-python reads otherwise: it reads the body with httpx's iter_lines, which ends a
    line at every break str.splitlines() knows, and parses every line, a blank one too.  Lines numbered
    after first_line (see CaptureRules)."""
    if not any(mark in text for mark in _SPLITLINES_BREAKS) and (
            ("\r" not in text and not text.startswith((" ", "\t", "\n")) and "\n\n" not in text
             and "\n " not in text and "\n\t" not in text) or _OLLAMA_BLANK.search(text) is None):
        return   # (no line can fail; without CR, a blank line starts the text or follows an LF: looked for at once)
    lines = re.split(r"\r\n|\r|\n", text)
    last = first_line + len(lines)
    for number, line in enumerate(lines, first_line + 1):
        for mark in _SPLITLINES_BREAKS:
            if mark in line:
                raise CaptureError(f"a raw U+{ord(mark):04X} in a line: ollama-python's line reader ends the line "
                                   "there and cannot parse either half", number)
        if not line.strip(" \t") and number < last:
            raise CaptureError("a blank line: ollama-python parses every line as JSON and fails there", number)


def _choice_ollama(choice: Any) -> dict:
    raise RequestError("tool_choice is not a field of an Ollama /api/chat request (the server ignores it)")


def _ollama_request_tools(body: dict) -> tuple[list, Any]:
    """(tools, None) of an /api/chat request: tools in OpenAI's function shape; the API has no tool_choice,
    and the server ignores one sent anyway, so it constrains nothing."""
    tools, _ = _listed_request_tools(body)
    return tools, None


def _redact_ollama_chunk(chunk: dict) -> dict:
    """Everything but the model, the counters, done and its reason, the role and the tool calls."""
    out = {}
    for key, value in chunk.items():
        if key == "message" and isinstance(value, dict):
            out[key] = {k: (v if k in ("role", "tool_calls") else _ollama_neutral(v)) for k, v in value.items()}
        elif key in _OLLAMA_KEPT or key in _OLLAMA_LINE_TYPES and _OLLAMA_LINE_TYPES[key] is int:
            out[key] = value
        else:
            out[key] = _ollama_neutral(value)   # error text, log probabilities, remote_host, members not reviewed
    return out


def _ollama_neutral(value: Any) -> Any:
    """_neutral(value), except that a string keeps each line break the ollama rules block on.

    A text with a raw U+0085 blocks the turn (_ollama_breaks_lines), so its redacted text is
    REDACTED_TEXT followed by those characters: the redacted capture blocks as the body does.
    """
    if isinstance(value, str):
        return REDACTED_TEXT + "".join(mark for mark in _OLLAMA_LINE_BREAKS if mark in value) if value else ""
    if isinstance(value, list):
        return [_ollama_neutral(item) for item in value]
    if isinstance(value, dict):
        return {key: (item if key in _NEUTRAL_KEEP and isinstance(item, str)
                      else [] if key == "bytes" and isinstance(item, list) else _ollama_neutral(item))
                for key, item in value.items()}
    return value


_OLLAMA_KEPT = frozenset({"model", "created_at", "done", "done_reason"})


def _ollama_protected(payload: dict) -> dict[tuple, str]:
    """Ollama: each whole call (identity and arguments) is kept."""
    message = payload.get("message")
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    return {("message", "tool_calls", n): "warn" for n in range(len(calls) if isinstance(calls, list) else 0)}


def _ollama_frame(stream: list, query: str) -> tuple[str, bytes]:
    return "application/x-ndjson", ndjson_body(stream)


# Ollama's errors before a stream: {"error": "<text>"} (server/routes.go answers gin.H{"error": ...}); 503
# with the scheduler's ErrMaxQueue text when OLLAMA_MAX_QUEUE requests wait (server/sched.go), 500 when
# the model runner fails.  ollama-python raises ResponseError with the text and the status.
_OLLAMA_ERRORS = (
    http_error("overloaded", 503, {"error": "server busy, please try again.  maximum pending requests exceeded"}),
    http_error("server_error", 500, {"error": "model runner has unexpectedly stopped, this may be due to "
                                              "resource limitations or an internal error, check ollama server "
                                              "logs for details"}),
)


def _ollama_foreign_shape(payload: dict) -> str | None:
    """A line of Ollama's /api/generate stream."""
    if "done" in payload and "model" in payload and "response" in payload and "message" not in payload:
        return ("an Ollama /api/generate stream, which has no tool calls: capture /api/chat with --profile ollama "
                "(" + _NO_PROFILE + ")")
    return None


def _ollama_claims(payload: dict) -> bool:
    return "done" in payload and "model" in payload and "message" in payload


def _ollama_request_body(schemas: dict, request: dict) -> dict:
    """An /api/chat request: the tools (the API has no tool choice, no parallel control)."""
    body: dict[str, Any] = {"model": "llama3.1", "stream": True,
                            "messages": [{"role": "user", "content": REQUEST_PROMPT}]}
    if schemas:
        body["tools"] = _function_tools(schemas)
    return body


OLLAMA = Profile(
    name="ollama", stream_key="chunks",
    rules=TurnRules(tool_reason="stop", needs_close=False, stop_name="line with \"done\": true",
                    slot_end_name="its tool_calls entry", requires_id=False),
    wire=WireRules(normalizer=lambda limits: OllamaNormalizer(), protected_paths=_ollama_protected),
    request=RequestRules(choice=_choice_ollama, parallel_instead=" (Ollama's API has no such control)",
                         tools=_ollama_request_tools,
                         expand_tool=lambda where, tool: _function_tool(where, tool, "Ollama"),
                         tool_entry=_function_entry),
    capture=CaptureRules(family="ollama", claims=_ollama_claims, redact=_redact_ollama_chunk,
                         check_lines_text=(_ollama_check_lines,), foreign_shape=_ollama_foreign_shape),
    http=HttpRules(api_path=r"/api/chat", frame=_ollama_frame, api_example="/api/chat", tools_shape=_function_tools,
                   request_body=_ollama_request_body, errors=_OLLAMA_ERRORS,
                   framings=frozenset({"utf8"})))   # Go's encoding/json writes UTF-8 as it is


# ---------------------------------------------------------------------------
# Profiles: the rows, one per wire format
# ---------------------------------------------------------------------------

# Every profile, in the order the documentation lists them: name -> its row.  A new provider
# is a sub-section like those above (normalizer, tables, request, redaction, capture rules,
# its Profile row) and one name in this list.
PROFILES: Mapping[str, Profile] = MappingProxyType({row.name: row for row in (
    OPENAI, MISTRAL, ANTHROPIC, OPENAI_RESPONSES, BEDROCK, GEMINI, COHERE, OLLAMA)})


# profile -> its stream list's key (a view of the rows, for library callers)
STREAM_KEY: Mapping[str, str] = MappingProxyType({name: row.stream_key for name, row in PROFILES.items()})


# --- what a body's payloads look like: read by capture and by StreamGate.feed_bytes ----------

_JSON_HEAD_BYTES = 4096   # a JSON body starts with [ or { within its first bytes, whitespace aside


def _json_body(raw: bytes) -> bool:
    """Whether a captured body holds its payloads as JSON (a list, or lines): it starts with [ or {
    (whitespace aside).  It must be bytes, and not empty."""
    if not isinstance(raw, (bytes, bytearray)):
        raise CaptureError(f"the body must be bytes, got {type(raw).__name__}")
    head = bytes(raw[:_JSON_HEAD_BYTES]).lstrip(b" \t\r\n")
    if not head and not raw.strip(b" \t\r\n"):
        raise CaptureError("the body is empty: nothing was captured")
    return head[:1] in (b"[", b"{")


def _profile_of(payload: Any) -> str | None:
    """The profile family a payload's shape belongs to: the one family whose rooms claim it (None:
    no room claims it, or rooms of two families do, and then it cannot tell).  A claim is a room's
    own yes or no; the tests keep the claims of different families exclusive."""
    if not isinstance(payload, dict):
        return None
    families = _families_of(payload)
    return families[0] if len(families) == 1 else None


def _families_of(payload: Any) -> list[str]:
    """Every profile family whose rooms claim a payload's shape, in PROFILES order (none, one, or -- for
    a payload that mixes two APIs' shapes -- more)."""
    if not isinstance(payload, dict):
        return []
    return list(dict.fromkeys(row.capture.family for row in PROFILES.values() if row.capture.claims(payload)))


# Bodies of APIs no profile reads, by what their payloads look like (each room's foreign_shape):
# refused by capture with that name, instead of becoming an envelope that can only block with
# unsupported_event.
def _foreign_shape(payload: Any) -> str | None:
    """What a payload no profile reads as it is looks like, and what to do (None: not one of those)."""
    if not isinstance(payload, dict):
        return None
    for row in PROFILES.values():
        found = row.capture.foreign_shape(payload)
        if found is not None:
            return found
    return None


def _error_payload(payload: dict) -> bool:
    """An error a stream may carry as its payload (kept: it becomes stream_error, as in a stream)."""
    return any(row.capture.stream_error(payload) for row in PROFILES.values())


def _whole_response(payload: dict, rows: Iterable[Profile]) -> str | None:
    """How capture names one whole JSON object of a non-streaming API of these rows (None: of none)."""
    for row in rows:
        found = row.capture.whole_response(payload)
        if found is not None:
            return found
    return None


def _no_stream_payload(whole: dict) -> bool:
    """Whether one whole JSON object is no stream payload: no family claims it, or it is a whole response
    of the family that claims it (a chat completion has choices, as a chunk has)."""
    seen = _profile_of(whole)
    return seen is None or _whole_response(whole, [row for row in PROFILES.values()
                                                    if row.capture.family == seen]) is not None


def _non_stream_shape(payload: dict) -> str:
    """What one whole JSON object that is no stream payload looks like, for capture's refusal."""
    found = _whole_response(payload, PROFILES.values())
    if found is not None:
        return found
    members = ", ".join(_token(key) if _protocol_word(key) else "a member" for key in list(payload)[:6])
    return f"one JSON object of no streaming API this tool reads (members: {members or 'none'})"


def _check_profile_shape(row: Profile, payloads: list, lines: list[int | None]) -> bool:
    """Refuse a body of another provider's shape with a hint, instead of a report of identical findings.

    True once a payload of the profile's own shape came (what follows it is not looked at)."""
    want = row.capture.family
    for payload, line in zip(payloads, lines):
        foreign = _foreign_shape(payload)
        if foreign is not None:
            raise CaptureError(f"this body looks like {foreign}", line)
        seen = _families_of(payload)   # a payload two families claim is refused unless one is the profile's
        if seen and want not in seen:
            use = " or ".join(f"--profile {other.name}" for other in PROFILES.values() if other.capture.family in seen)
            raise CaptureError(f"this body looks like {' or '.join(seen)} payloads, not {row.name}: use {use}", line)
        if want in seen:
            return True
    return False


class _shape_stage:
    """_check_profile_shape one payload at a time: once a payload of the profile came (settled), the rest pass."""

    __slots__ = ("row", "settled")

    def __init__(self, row: Profile) -> None:
        self.row = row
        self.settled = False

    def __call__(self, payload: Any, line: int | None) -> Any:
        if not self.settled:
            self.settled = _check_profile_shape(self.row, [payload], [line])
        return payload


def _refuse_whole_document(text: str, row: Profile) -> tuple[Any, int, int] | None:
    """A body that is one JSON object but no stream payload: a HAR, an envelope, a non-streaming
    response or another API's object is refused with what it looks like.  Returns the value the body
    starts with (_first_json_value), for the line reader not to parse it again."""
    first = _first_json_value(text)   # where decode_document read the whole body: as deep a value passes
    if first is None or _skip_ws(text, first[2]) != len(text):
        return first   # no value, or several documents: JSON Lines
    whole = first[0]
    if not isinstance(whole, dict):
        return first
    if isinstance(whole.get("log"), dict):
        raise CaptureError("this is an HTTP Archive (HAR): pick the request with --entry (an index or URL text)")
    if "profile" in whole and ("chunks" in whole or "events" in whole):
        raise CaptureError("this is already a fixture envelope: validate it directly, without capture")
    if set(whole) == {"data"} and isinstance(whole["data"], dict):
        whole = whole["data"]   # one wrapped payload (mistralai's CompletionEvent): judged unwrapped
    if (isinstance(whole, dict) and _foreign_shape(whole) is None and not _error_payload(whole)
            and _no_stream_payload(whole)):
        raise CaptureError(f"the body is {_non_stream_shape(whole)}, not a stream of {row.name} payloads")
    return first


def _unwrapped(payload: Any, context: tuple[int, int]) -> dict:
    """A payload of a JSON body, out of its {"data": {...}} wrapper; it must be an object."""
    if isinstance(payload, dict) and set(payload) == {"data"} and isinstance(payload["data"], dict):
        payload = payload["data"]   # mistralai's CompletionEvent, and other {"data": ...} wrappers
    if not isinstance(payload, dict):
        raise CaptureError(f"payload {context[0]} is {_describe(payload)}, not a JSON object", context[1])
    return payload


def _not_an_envelope(payload: dict, context: tuple[int, int]) -> dict:
    if context[0] == 0 and "profile" in payload and ("chunks" in payload or "events" in payload):
        raise CaptureError("this is already a fixture envelope: validate it directly, without capture")
    return payload


# The checking stages of each framing (see _staged): what every payload passes before capture's
# scrubber writes it, or before StreamGate.feed_bytes feeds it; (payload, context) -> payload.

def _sse_checks(row: Profile, check_shape: _shape_stage) -> list[Callable[[Any, Any], Any]]:
    """An SSE event's (its context is the event): strict JSON, the profile's shape, the room's event checks."""
    stages: list[Callable[[Any, Any], Any]] = [_sse_payload, lambda payload, event: check_shape(payload, event.line)]
    if row.capture.check_sse_events is not None:
        stages.append(lambda payload, event: row.capture.check_sse_events([event]) or payload)
    return stages


def _json_checks(check_shape: _shape_stage) -> list[Callable[[Any, Any], Any]]:
    """A payload of a JSON list or JSON Lines (its context: (its number, its line)): an object, out of a
    {"data": ...} wrapper, no envelope, the profile's shape."""
    return [_unwrapped, _not_an_envelope, lambda payload, context: check_shape(payload, context[1])]


def _frame_checks(convert: Callable[[Any, int], tuple[Any, str | None]] | None,
                  check_shape: _shape_stage) -> list[Callable[[Any, Any], Any]]:
    """An AWS event-stream frame's event (its context: (frame number, payload text)): the profile's shape;
    with convert (a room's), first the payload convert makes of it, which goes on as (payload, its text)."""
    if convert is None:
        return [lambda event, _: check_shape(event, None)]

    def check_converted(converted: tuple[Any, str | None], _: Any) -> tuple[Any, str | None]:
        check_shape(converted[0], None)
        return converted

    return [lambda event, context: convert(event, context[0]), check_converted]


class _Written:
    """A payload a template wrote (its capture_text line): it needs no stage."""

    __slots__ = ("line",)

    def __init__(self, line: str) -> None:
        self.line = line


class _Holding:
    """Whether _staged holds an error (then nothing more is written)."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = False


def _staged(items: Iterable[tuple[Any, Any]], stages: list[Callable[[Any, Any], Any]],
            sink: Callable[[Any], Any], deep: str, fast: Callable[[Any, Any], str | None] | None = None,
            holding: _Holding | None = None, until: int | None = None) -> int:
    """Runs every item through the stages (functions (value, context) -> value) and hands the result to
    sink; returns how many items came.  Errors come out as when each stage ran over the whole body in
    turn: an error of stage k is held while later items still go through the stages before k (an earlier
    stage's error wins, at any item; within a stage the first item's), and items' own errors (framing,
    raised by the iterator) win over all.  A RecursionError is CaptureError(deep).  Nothing is sunk
    once an error is held, so a body is read once, without keeping its payloads.  An item that is
    _Written already (or that fast(value, context) writes) passes every stage by construction.
    until: an error of that stage is held already (a body read in pieces, StreamGate.feed_bytes): only
    the stages before it run.  The error raised for a stage's carries its number (stage); a framing
    error none.
    """
    held_at, held = len(stages) if until is None else until, None
    count = 0
    for value, context in items:
        count += 1
        line = value.line if value.__class__ is _Written else None if fast is None else fast(value, context)
        if line is not None:
            if held is None:
                sink(line)
            continue
        for phase in range(held_at):   # not in a helper: a frame more would lower how deep a payload may nest
            try:
                value = stages[phase](value, context)
            except CaptureError as exc:
                held_at, held = phase, exc
                break
            except RecursionError:
                held_at, held = phase, CaptureError(deep)
                break
        else:
            if held is None:
                sink(value)
            continue
        if holding is not None:
            holding.held = True
    if held is not None:
        held.stage = held_at
        raise held
    return count


# ---------------------------------------------------------------------------
# Slot state machine: provider-neutral reassembly
# ---------------------------------------------------------------------------
#
# Rules:
#   * Everything that affects a slot's phase lives in _PHASES; an event the
#     table does not allow is a finding from _REFUSED, nothing is guessed.
#   * The machine does not know which provider it serves; a small TurnRules
#     value says how terminal evidence arrives (per choice or per block).
#   * A finding marks a slot blocked but never stops recording the wire: the
#     report shows what a naive adapter would have merged.

UNSEEN, ACCUMULATING, TERMINAL = "unseen", "accumulating", "terminal"
VALIDATED, BLOCKED = "validated", "blocked"

_LEGACY_TOOL_REASONS = frozenset({"function_call"})  # a tool signal that carries no readable slot

_PHASES: dict[str, dict[str, str]] = {
    UNSEEN: {"open": ACCUMULATING, "fragment": ACCUMULATING},
    ACCUMULATING: {"fragment": ACCUMULATING, "end": TERMINAL},
    TERMINAL: {},
}
_REFUSED: dict[tuple[str, str], str] = {
    (ACCUMULATING, "open"): IDENTITY_COLLISION,
    (TERMINAL, "open"): IDENTITY_COLLISION,
    (TERMINAL, "fragment"): DELTA_AFTER_TERMINAL,
    (TERMINAL, "end"): DUPLICATE_TERMINAL,
    (UNSEEN, "end"): MISSING_SLOT,
}


_SHOWN_NESTING = 500   # an input object nested deeper is not written into the report (json.dumps recurses)


def _input_snapshot(value: Any, max_depth: int) -> tuple[bool, str, tuple[str, str] | None]:
    """A start input (Anthropic) or a whole args object (Gemini, Ollama) as the slot keeps it, taken when the
    slot opens: (whether it is non-empty, its compact serialisation, why it cannot be checked or None).

    Taken then, not when the turn ends: the caller still holds the object (gate_stream hands every item on),
    and what it does to it afterwards must not change the verdict.  StreamGate may be fed objects JSON cannot
    hold: refused, never raised."""
    unreadable, text = None, ""
    if _nesting_exceeds(value, max_depth):
        unreadable = (LIMIT_EXCEEDED, f"the input object nests deeper than the limit of {max_depth}")
    if not _nesting_exceeds(value, _SHOWN_NESTING):   # shown even when too deep to check
        try:
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            unreadable = unreadable or ((LIMIT_EXCEEDED, "the input object holds a number with too many digits")
                                        if isinstance(exc, ValueError) and "digits" in str(exc) else
                                        (MALFORMED_JSON, "the input object holds a value JSON cannot hold (a Python "
                                         "object of another type)"))
        except RecursionError:
            text = ""
    try:
        nonempty = bool(value)
    except Exception:   # noqa: BLE001 - an object of the caller's own class: it is not empty
        nonempty = True
    return nonempty, text, unreadable


# A slot's fragments are packed (_pack_parts) once this many are held: a long call's text is then held as UTF-8
# bytes, not as a str object per fragment (each with its header, at up to 4 bytes a character).
_PACK_PARTS = 16


def _pack_parts(parts: list) -> None:
    """parts (str fragments, after a bytearray of those packed before, if any) as one bytearray: their UTF-8,
    lone surrogates written as they are ("surrogatepass"), so that decoding gives back the same code points."""
    blob = parts[0] if type(parts[0]) is bytearray else None
    text = "".join(parts[1:] if blob is not None else parts).encode("utf-8", "surrogatepass")
    if blob is None:
        blob = bytearray(text)
    else:
        blob += text
    parts[:] = [blob]


def _joined_parts(parts: list) -> tuple[str, bool]:
    """join_fragments() of a slot's parts, some of them packed (see _pack_parts) or not."""
    if parts and (len(parts) > 1 or type(parts[0]) is bytearray):
        _pack_parts(parts)   # (one decode, into one string, rather than a copy of each piece)
        return join_fragments([parts[0].decode("utf-8", "surrogatepass")])
    return join_fragments(parts)


class Slot(_Record):
    """One tool call being reassembled."""

    __slots__ = ("key", "phase", "id", "name", "parts", "initial_input", "terminal_position", "findings",
                 "arguments", "state", "name_restated", "kind", "omitted", "namespace")

    def __init__(self, key: SlotKey) -> None:
        self.key = key
        self.phase = UNSEEN
        self.id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.initial_input: Any = None
        self.terminal_position: int | None = None
        self.findings: list[Finding] = []
        self.arguments = ""
        self.state = BLOCKED
        self.name_restated = False
        self.kind = FUNCTION
        self.omitted = 0            # findings of this call counted but not kept (see TurnMachine._find)
        self.namespace: str | None = None   # set once, by the slot's SlotOpen

    @property
    def tool_key(self) -> str | None:
        """The name tool_schemas and request.tools know this call's tool by.

        A namespaced call is "namespace.name" (openai-agents' qualified name); a
        namespace equal to the name is the Responses API's mark of a deferred
        top-level function, which is the plain name.
        """
        if self.name is None or self.namespace is None or self.namespace == self.name:
            return self.name
        return f"{self.namespace}.{self.name}"


class TurnMachine:
    """Consumes neutral events for one turn; records slots and findings."""

    def __init__(self, rules: TurnRules, limits: Limits, forced: tuple[str, str] | None = None) -> None:
        self.rules = rules
        self.limits = limits
        self.forced = forced          # (name, kind) of the tool a forcing request named, if any
        self.slots: dict[SlotKey, Slot] = {}
        self.findings: list[Finding] = []
        self.choice_findings: dict[int, list[Finding]] = {}
        self.by_choice: dict[Any, dict[int, Slot]] = {}  # choice (None: anthropic) -> index -> slot
        self.untracked: set[SlotKey] = set()  # keys past --max-calls: the turn is blocked already
        self.snapshots: dict[int, int] = {}   # choice -> first position of a message snapshot with calls
        # One handler per neutral event type, bound once: feed() is called per event.
        self.handlers: dict[type, Callable[[Any], None]] = {
            kind: getattr(self, "_on_" + kind.__name__) for kind in NEUTRAL_EVENT_TYPES}
        self.ids: dict[str, SlotKey] = {}
        self.choice_ends: dict[int, str] = {}
        self.restated_finishes: dict[int, int] = {}  # choice -> position of its one accepted restatement
        self.tool_signal = False      # a tool finish/stop reason was seen
        self.turn_reason: str | None = None
        self.closed = False
        self.first_choice: int | None = None
        self.calls_limit_reported = False
        self.ambiguity_reported = False
        self.hosted: dict[str, int] = {}  # hosted tool name -> uses in this turn (never calls)
        self.hosted_by_name: dict[str, int] = {}  # name -> first position of a use told apart by name alone
        self.keep = 2 * limits.max_findings  # findings kept in full before only new codes are
        self.codes: set[str] = set()
        self.omitted = 0
        self.choice_omitted: dict[int, int] = {}
        self.saturated = False        # past 4x --max-findings: the gate stops examining the stream

    # -- recording -----------------------------------------------------------

    def _find(self, code: str, message: str, position: int | None, key: SlotKey | None = None,
              choice: int | None = None, pointer: str | None = None) -> None:
        """Record a finding on a slot (key), on a whole choice, or on the turn.

        Past twice --max-findings, a finding of a code already recorded is only
        counted, so a hostile stream of millions of findings costs no memory per
        finding; the report lists at most --max-findings anyway.  Once as many
        again have been counted, `saturated` tells the gate to stop examining:
        the turn is blocked whatever follows, and the rest costs no time either.
        """
        slot_choice, index = (key if key is not None else (choice, None))
        finding = Finding(code, message, position, slot_choice, index, pointer)
        kept = len(self.findings) < self.keep or code not in self.codes
        if kept:
            self.codes.add(code)
            self.findings.append(finding)
        else:
            self.omitted += 1
            if self.omitted > self.keep:
                self.saturated = True
        if key is not None:
            slot = self.slots.get(key)
            if slot is not None:
                if kept or len(slot.findings) < self.keep:
                    slot.findings.append(finding)
                else:
                    slot.omitted += 1
        elif choice is not None:
            shared = self.choice_findings.setdefault(choice, [])
            if kept or len(shared) < self.keep:
                shared.append(finding)
            else:
                self.choice_omitted[choice] = self.choice_omitted.get(choice, 0) + 1

    def findings_for(self, slot: Slot) -> list[Finding]:
        """A call's own findings plus those of its choice (finish reason, bad entries...)."""
        shared = self.choice_findings.get(slot.key[0], []) if slot.key[0] is not None else []
        return slot.findings + shared if shared else slot.findings

    def omitted_for(self, slot: Slot) -> int:
        """How many findings of a call (and its choice) were counted but not kept."""
        return slot.omitted + (self.choice_omitted.get(slot.key[0], 0) if slot.key[0] is not None else 0)

    def _slot(self, key: SlotKey, position: int) -> Slot | None:
        """The slot for key, created on first sight; None past the call limit."""
        slot = self.slots.get(key)
        if slot is None:
            if len(self.slots) >= self.limits.max_calls:
                self.untracked.add(key)
                if not self.calls_limit_reported:
                    self.calls_limit_reported = True
                    self._find(LIMIT_EXCEEDED, f"more than {self.limits.max_calls} tool calls in one turn; "
                               "further calls are not tracked", position)
                return None
            slot = self.slots[key] = Slot(key)
            self.by_choice.setdefault(key[0], {})[key[1]] = slot
            choice = key[0]
            if choice is not None:
                if self.first_choice is None:
                    self.first_choice = choice
                elif choice != self.first_choice and not self.ambiguity_reported:
                    self.ambiguity_reported = True
                    self._find(AMBIGUOUS_CHOICE, f"tool calls in choice {self.first_choice} and choice {choice}",
                               position, key)
        return slot

    def _step(self, slot: Slot, action: str, position: int) -> bool:
        """Apply one phase transition; False (with a finding) when refused."""
        new_phase = _PHASES[slot.phase].get(action)
        if new_phase is None:
            code = _REFUSED[(slot.phase, action)]
            self._find(code, _refusal_message(code, action, slot), position, slot.key)
            return False
        slot.phase = new_phase
        return True

    def _set_identity(self, slot: Slot, field_name: str, value: str | None, position: int) -> None:
        if not value:
            return
        current = getattr(slot, field_name)
        if current is None:
            setattr(slot, field_name, value)
            if field_name == "id":
                other = self.ids.get(value)
                if other is not None and other != slot.key:
                    self._find(IDENTITY_COLLISION, f"id {_quoted(value)} is also used by slot {_slot_label(other)}",
                               position, slot.key)
                else:
                    self.ids[value] = slot.key
        elif current != value:
            self._find(IDENTITY_COLLISION,
                       f"{field_name} changed from {_quoted(current)} to {_quoted(value)} (names are not concatenated)"
                       if field_name == "name" else
                       f"id changed from {_quoted(current)} to {_quoted(value)}",
                       position, slot.key)
        elif field_name == "name" and self.rules.names_concatenate and not slot.name_restated:
            slot.name_restated = True  # once per slot: every later restatement reads the same way
            self._find(IDENTITY_COLLISION, f"name {_quoted(value)} restated on a later fragment: an SDK that joins "
                       f"name fragments (openai-python) would call {_quoted(current + value)}", position, slot.key)

    # -- neutral events ------------------------------------------------------

    def feed(self, event: NeutralEvent) -> None:
        """Consume one neutral event (dispatch by its type)."""
        self.handlers[type(event)](event)

    def _on_WireProblem(self, event: WireProblem) -> None:
        key = (event.choice, event.index) if event.index is not None else None
        self._find(event.code, event.message, event.position, key, event.choice)

    def _on_SlotOpen(self, event: SlotOpen) -> None:
        slot = self._slot(event.key, event.position)
        if slot is None or not self._step(slot, "open", event.position):
            return
        if event.initial_input is not None:
            slot.initial_input = _input_snapshot(event.initial_input, self.limits.max_depth)
        slot.kind = event.kind
        slot.namespace = event.namespace
        self._set_identity(slot, "id", event.id, event.position)
        self._set_identity(slot, "name", event.name, event.position)

    def append_plain(self, key: SlotKey, text: str, kind: str | None = None) -> bool:
        """Add text to slot key when the general Fragment path would do only that.

        That is: the slot is tracked, accepts fragments, its choice has not
        finished, and the fragment is of the slot's kind (or does not say).
        False changes nothing and leaves the event to _on_Fragment.
        """
        slot = self.slots.get(key)
        if (slot is None or slot.phase != ACCUMULATING or key[0] in self.choice_ends
                or (kind is not None and kind != slot.kind)):
            return False
        if text:
            parts = slot.parts
            parts.append(text)
            if len(parts) > _PACK_PARTS:
                _pack_parts(parts)
        return True

    def append_run(self, key: SlotKey, texts: list[str]) -> bool:
        """append_plain() for several texts at once: all are added, or none (False)."""
        slot = self.slots.get(key)
        if slot is None or slot.phase != ACCUMULATING or key[0] in self.choice_ends:
            return False
        parts = slot.parts
        parts.extend(filter(None, texts))
        if len(parts) > _PACK_PARTS:
            _pack_parts(parts)
        return True

    def _on_Fragment(self, event: Fragment) -> None:
        if not event.id and not event.name and self.append_plain(event.key, event.arguments or "", event.kind):
            return  # the common case: no identity to check, a slot that accepts text
        if event.key in self.untracked:
            return
        if event.key[0] in self.choice_ends:
            self._fragment_after_finish(event)
            return
        if not self.rules.implicit_open and event.key not in self.slots:
            self._find(MISSING_SLOT, f"fragment for slot {_slot_label(event.key)}, which was never opened",
                       event.position)
            return
        slot = self._slot(event.key, event.position)
        if slot is None:
            return
        opened = slot.phase == UNSEEN
        if not self._step(slot, "fragment", event.position):
            return
        if event.kind is not None and event.kind != slot.kind:
            self._set_kind(slot, event.kind, opened, event.position)
        self._set_identity(slot, "id", event.id, event.position)
        self._set_identity(slot, "name", event.name, event.position)
        if event.arguments:
            slot.parts.append(event.arguments)
            if len(slot.parts) > _PACK_PARTS:
                _pack_parts(slot.parts)

    def _fragment_after_finish(self, event: Fragment) -> None:
        """A fragment of a choice that finished: late; a slot it opens still gets its identity."""
        choice = event.key[0]
        slot = self._slot(event.key, event.position)
        if slot is None:
            return
        if slot.phase == UNSEEN:
            self._set_identity(slot, "id", event.id, event.position)
            self._set_identity(slot, "name", event.name, event.position)
        self._find(DELTA_AFTER_TERMINAL, f"tool-call fragment after choice {choice} finished "
                   f"({_token(self.choice_ends[choice])})", event.position, event.key)

    def _set_kind(self, slot: Slot, kind: str, opened: bool, position: int) -> None:
        """The kind of call a slot is: said by the fragment that opens it, never changed after."""
        if opened:
            slot.kind = kind
        else:
            self._find(IDENTITY_COLLISION, f"slot {_slot_label(slot.key)} changed from a {slot.kind} call to a "
                       f"{kind} call", position, slot.key)

    def _on_SlotEnd(self, event: SlotEnd) -> None:
        if event.key in self.untracked:
            return
        slot = self.slots.get(event.key)
        if slot is None:
            self._find(MISSING_SLOT, f"end of slot {_slot_label(event.key)}, which was never opened", event.position)
            return
        if self._end_slot(slot, event.position):
            for where, text in event.restated:
                self._compare_restated(slot, where, text, event.position)

    def _on_CallRestated(self, event: CallRestated) -> None:
        slot = self.slots.get(event.key)
        if slot is not None and slot.phase == TERMINAL:
            self._compare_restated(slot, event.where, event.arguments, event.position)

    def _compare_restated(self, slot: Slot, where: str, text: str, position: int) -> None:
        joined, _ = _joined_parts(slot.parts)
        if joined != text:
            self._find(UNEXPECTED_EVENT, f"slot {_slot_label(slot.key)}: {where} restates arguments that differ from "
                       "the joined fragments (an SDK that reads that restatement would run other arguments)",
                       position, slot.key)

    def _end_slot(self, slot: Slot, position: int) -> bool:
        if not self._step(slot, "end", position):
            return False
        slot.terminal_position = position
        if not slot.id and self.rules.requires_id:
            self._find(MISSING_ID, f"slot {_slot_label(slot.key)} reached its terminal without an id", position,
                       slot.key)
        if not slot.name:
            self._find(MISSING_NAME, f"slot {_slot_label(slot.key)} reached its terminal without a name", position,
                       slot.key)
        joined_empty = not slot.parts
        if slot.initial_input is not None and slot.initial_input[0] and not joined_empty:
            self._find(UNEXPECTED_EVENT, f"slot {_slot_label(slot.key)} has both a non-empty start input and "
                       "argument fragments", position, slot.key)
        return True

    def _second_finish(self, event: ChoiceEnd, has_calls: bool) -> None:
        """A finish_reason for a choice that finished: a bare restatement of the same reason is noted once;
        any other is a duplicate terminal (or a tool reason for a choice without calls)."""
        if (event.bare and event.reason == self.choice_ends[event.choice]
                and event.choice not in self.restated_finishes):
            self.restated_finishes[event.choice] = event.position   # reported, never a terminal
        elif has_calls:
            self._find(DUPLICATE_TERMINAL, f"second finish_reason {_token(event.reason)} for choice {event.choice}",
                       event.position, choice=event.choice)
        elif event.reason == self.rules.tool_reason:
            self._find(MISSING_SLOT, f"finish_reason {_token(event.reason)} but choice {event.choice} has no "
                       "tool call", event.position, choice=event.choice)

    def _on_ChoiceEnd(self, event: ChoiceEnd) -> None:
        choice_slots = list(self.by_choice.get(event.choice, {}).values())
        if event.reason == self.rules.tool_reason:
            self.tool_signal = True
        if event.choice in self.choice_ends:
            self._second_finish(event, bool(choice_slots))
            return
        self.choice_ends[event.choice] = event.reason
        if not choice_slots:
            if event.reason in _LEGACY_TOOL_REASONS:
                self.tool_signal = True
                self._find(UNSUPPORTED_EVENT, f"legacy finish_reason {_token(event.reason)}: a tool call in the "
                           "deprecated shape, which this tool does not read", event.position, choice=event.choice)
            elif event.reason == self.rules.tool_reason:
                self._find(MISSING_SLOT, f"finish_reason {_token(event.reason)} but choice {event.choice} has no "
                           "tool call", event.position, choice=event.choice)
            return
        if event.reason != self.rules.tool_reason and not self._forced_terminal(event.reason, choice_slots):
            hint = ""
            if event.reason == self.rules.forced_reason:
                hint = (" (a request that forces one named tool ends with it, for exactly one call of that tool; "
                        + ("no forcing request was given)" if self.forced is None else
                           f"the request forces {self.forced[1]} {json.dumps(self.forced[0])})"))
            self._find(WRONG_TERMINAL_REASON, f"choice {event.choice} has tool calls but finished with "
                       f"{_token(event.reason)}, not {json.dumps(self.rules.tool_reason)}{hint}",
                       event.position, choice=event.choice)
            return
        self.tool_signal = True
        for slot in sorted(choice_slots, key=lambda s: s.key[1]):
            self._end_slot(slot, event.position)

    def _forced_terminal(self, reason: str, choice_slots: list[Slot]) -> bool:
        """The reason a forcing request ends a turn with, for exactly one call of the forced tool."""
        return (reason == self.rules.forced_reason and self.forced is not None and len(choice_slots) == 1
                and (choice_slots[0].name, choice_slots[0].kind) == self.forced)

    def _on_TurnEnd(self, event: TurnEnd) -> None:
        if event.reason == self.rules.tool_reason:
            self.tool_signal = True
        if self.turn_reason is not None:
            self._find(DUPLICATE_TERMINAL, f"second stop_reason {_token(event.reason)}", event.position)
            return
        self.turn_reason = event.reason
        if self.slots and event.reason != self.rules.tool_reason:
            self._find(WRONG_TERMINAL_REASON, f"the turn has tool calls but stopped with {_token(event.reason)}, "
                       f"not {json.dumps(self.rules.tool_reason)}", event.position)
        elif not self.slots and event.reason == self.rules.tool_reason:
            self._find(MISSING_SLOT, f"stop_reason {_token(event.reason)} but the turn has no tool call",
                       event.position)

    def _on_TurnClose(self, event: TurnClose) -> None:
        self.closed = True

    def _on_HostedUse(self, event: HostedUse) -> None:
        self.hosted[event.name] = self.hosted.get(event.name, 0) + 1
        if event.by_name:
            self.hosted_by_name.setdefault(event.name, event.position)

    def record(self, code: str, message: str, position: int | None, key: SlotKey | None = None,
               pointer: str | None = None) -> None:
        """A finding from a later stage (validation, the request): the same door as the machine's own,
        so every bound on findings holds for every code."""
        self._find(code, message, position, key, None, pointer)

    def _on_SnapshotCall(self, event: SnapshotCall) -> None:
        self.snapshots.setdefault(event.choice, event.position)

    def outcome(self) -> dict[str, Any]:
        """The members of the turn's Outcome this machine owns, by keyword (the gate adds the
        profile, the meta, the limit and what it left unexamined): its findings, its calls in
        report order, whether the turn concerned tools at all, and each accepted restated finish."""
        return {
            "findings": self.findings, "slots": sorted(self.slots.values(), key=slot_order),
            "applicable": bool(self.slots) or self.tool_signal,
            "findings_for": self.findings_for, "omitted_for": self.omitted_for,
            "hosted": self.hosted, "omitted": self.omitted,
            "restated": [{"choice": choice, "reason": self.choice_ends[choice], "position": position}
                         for choice, position in sorted(self.restated_finishes.items())]}

    # -- end of stream -------------------------------------------------------

    def finish(self) -> None:
        """End-of-stream checks: every required terminal arrived, no gaps."""
        for choice, position in sorted(self.snapshots.items()):
            if choice not in self.by_choice:
                self.tool_signal = True
                self._find(UNSUPPORTED_EVENT, f"choice {choice} shows tool calls only in a message snapshot, "
                           "never in delta.tool_calls", position, choice=choice)
        if self.rules.per_choice_terminal:
            for choice in sorted(self.by_choice):
                if choice not in self.choice_ends:
                    self._find(MISSING_TERMINAL, f"choice {choice} has tool calls but the stream ended without a "
                               f"{self.rules.stop_name}", None, choice=choice)
        else:
            self._finish_turn()
        if self.rules.contiguous_slots:
            for choice in sorted(self.by_choice):
                self._finish_gaps(choice, self.by_choice[choice])

    def _finish_turn(self) -> None:
        """A turn whose terminal evidence is per slot and per turn: each slot ended, the turn stopped and closed."""
        for key in sorted(self.slots, key=lambda k: k[1]):
            if self.slots[key].phase != TERMINAL:
                self._find(MISSING_TERMINAL, f"slot {_slot_label(key)} has no terminal "
                           f"({self.rules.slot_end_name})", None, key)
        if self.slots and self.turn_reason is None:
            self._find(MISSING_TERMINAL, f"the turn has tool calls but no {self.rules.stop_name}", None)
        if self.slots and self.rules.needs_close and not self.closed:
            self._find(MISSING_TERMINAL, f"the turn has tool calls but no {self.rules.close_name}", None)

    def _finish_gaps(self, choice: int | None, present: dict[int, Slot]) -> None:
        """The slot indices a choice skipped: the first 16 by name, then how many more."""
        highest = max(present)
        missing_count = highest + 1 - len(present)  # arithmetic: indices may be huge
        listed = 0
        index = 0
        while listed < min(missing_count, 16):
            if index not in present:
                listed += 1
                self._find(MISSING_SLOT, f"choice {choice} has slot {highest} but no slot {index}",
                           None, choice=choice)
                self.findings[-1].index = index  # names the missing slot; still concerns the choice
            index += 1
        if missing_count > listed:
            self._find(MISSING_SLOT, f"choice {choice} misses {missing_count - listed} more slot indices",
                       None, choice=choice)


def slot_order(slot: Slot) -> tuple[int, int]:
    """Report order: by choice (None first), then by index."""
    return (-1 if slot.key[0] is None else slot.key[0], slot.key[1])


def _slot_label(key: SlotKey) -> str:
    choice, index = key
    return f"{index}" if choice is None else f"{choice}/{index}"


def _refusal_message(code: str, action: str, slot: Slot) -> str:
    label = _slot_label(slot.key)
    return {
        IDENTITY_COLLISION: f"slot {label} was opened twice",
        DELTA_AFTER_TERMINAL: f"fragment for slot {label} after its terminal",
        DUPLICATE_TERMINAL: f"second terminal for slot {label}",
        MISSING_SLOT: f"terminal for slot {label}, which was never opened",
    }.get(code, f"{action} not allowed for slot {label} in phase {slot.phase}")


# ---------------------------------------------------------------------------
# Strict JSON for arguments (RFC 8259, with the checks Python's json skips)
# ---------------------------------------------------------------------------


def parse_strict_json(text: str, limits: Limits) -> Any:
    """Parse text as exactly one strict JSON document or raise JsonProblem.

    Python's json accepts NaN and Infinity, turns 1e400 into inf, keeps the
    last duplicate key and accepts lone surrogate escapes; each is caught here,
    and so is an integer outside JavaScript's safe range (MAX_SAFE_INTEGER).
    """
    max_digits = limits.max_number_length

    def parse_float(token: str) -> float:
        if len(token) > max_digits:
            raise JsonProblem(LIMIT_EXCEEDED, f"a number is {len(token)} characters long (limit {max_digits})")
        return _finite_float(token)

    def parse_int(token: str) -> int:
        if len(token) > max_digits:
            raise JsonProblem(LIMIT_EXCEEDED, f"a number is {len(token)} characters long (limit {max_digits})")
        value = int(token)
        if len(token) > 15:   # 16 digits at least (2^53 - 1 has 16)
            if len(token) > 308:  # only such long integers can exceed the largest double
                try:
                    float(value)
                except OverflowError:
                    raise JsonProblem(NON_FINITE_NUMBER, f"integer of {len(token)} digits overflows a double") from None
            if abs(value) > MAX_SAFE_INTEGER:
                raise JsonProblem(LIMIT_EXCEEDED, UNSAFE_INTEGER_MESSAGE)
        return value

    try:
        value = decode_document(text, parse_float, parse_int, what="the arguments")
    except JsonProblem as problem:
        if problem.code == TRAILING_DATA:
            problem.message += " (two calls merged into one slot look like this)"
        elif problem.code == LIMIT_EXCEEDED and "nesting" in problem.message:
            problem.message = f"nesting deeper than the limit of {limits.max_depth}"
        raise
    # A parsed string can hold a lone surrogate only through a \uD800-\uDFFF escape
    # or a raw one in text; with neither, the strings need no look.
    strings = _SURROGATE_ESCAPE.search(text) is not None or _has_surrogate(text)
    if strings or text.count("{") + text.count("[") > limits.max_depth:
        _check_tree(value, limits.max_depth, strings)
    return value


# A \u escape of a UTF-16 surrogate (an escaped backslash before "u" only over-matches).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_tree(value: Any, max_depth: int, strings: bool = True) -> None:
    """Depth limit and (when strings) lone surrogate escapes, walked without recursion."""
    if not strings:
        _check_depth(value, max_depth)
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            if _has_surrogate(node):
                raise JsonProblem(INVALID_UNICODE, "a string holds an unpaired UTF-16 surrogate escape")
            continue
        if not isinstance(node, (dict, list)):
            continue
        if depth > max_depth:
            raise JsonProblem(LIMIT_EXCEEDED, f"nesting deeper than the limit of {max_depth}")
        if isinstance(node, dict):
            for key, item in node.items():
                if _has_surrogate(key):
                    raise JsonProblem(INVALID_UNICODE, "a key holds an unpaired UTF-16 surrogate escape")
                stack.append((item, depth + 1))
        else:
            stack.extend((item, depth + 1) for item in node)


def _check_depth(value: Any, max_depth: int) -> None:
    """The depth limit alone: containers visited level by level, leaves only to pass them by."""
    level, depth, containers = [value] if isinstance(value, (dict, list)) else [], 1, (dict, list)
    while level:
        if depth > max_depth:
            raise JsonProblem(LIMIT_EXCEEDED, f"nesting deeper than the limit of {max_depth}")
        deeper: list[Any] = []
        for node in level:
            deeper += [item for item in (node.values() if isinstance(node, dict) else node)
                       if isinstance(item, containers)]
        level, depth = deeper, depth + 1


# ---------------------------------------------------------------------------
# Schema subset
# ---------------------------------------------------------------------------

#
# Rules of this section:
#   * Every key of every schema object is in exactly one of three places:
#     the dialect's keyword table (_SCH_KEYWORDS_2020 / _SCH_KEYWORDS_07: it is
#     validated), _SCH_ANNOTATIONS (accepted, never enforced), or nowhere
#     (SchemaUnsupported).  Nothing is silently ignored.
#   * The whole schema is judged before any instance is seen: every subschema,
#     every $defs entry (referenced or not), every keyword value, every $ref
#     target and every regex.  A compiled schema is immutable and reusable.
#   * Evaluation is bounded: a nesting cap, an evaluation budget and a cap on
#     the length of strings handed to a regex.  Hitting one raises
#     SchemaLimitExceeded; a Python RecursionError never escapes.
#   * JSON semantics, not Python semantics: True is not 1, 1.0 is an integer,
#     numbers compare exactly, multipleOf uses exact decimal fractions, string
#     length is counted in code points, regexes are ECMA-262 (u flag).
#
# Theory of operation: compile_schema() walks the document once and turns each
# schema location into a _SchNode holding a tuple of closures, one per keyword
# (the "check").  $ref becomes a cell filled in after the walk, so recursive
# schemas compile to a finite graph; a $ref cycle that never moves along the
# instance is refused at compile time.  validate_instance() runs the closures;
# anyOf/oneOf/not branches run in "quick" mode, which stops at a branch's first
# error.  Instance locations travel as linked (parent, key) pairs and become
# RFC 6901 pointers only when an error is reported.


class SchemaUnsupported(Exception):
    """The schema uses something outside the subset, or is itself invalid."""

    def __init__(self, message: str, location: str) -> None:
        super().__init__(message)
        self.message = message
        self.location = location


class SchemaLimitExceeded(Exception):
    """Evaluation hit a configured limit (budget, depth, regex subject length)."""

    def __init__(self, message: str, pointer: str) -> None:
        super().__init__(message)
        self.message = message
        self.pointer = pointer


class _DeadlinePassed(Exception):
    """Schema work ran out of the opt-in wall-clock budget (--max-schema-seconds)."""


class _Deadline:
    """An opt-in wall-clock budget around a schema check (Limits.max_schema_seconds).

    Off by default (seconds is None): every piece of schema work is counted
    (max_evaluations, the schema and pattern size limits), so a verdict never
    depends on the machine.  Given, it runs under SIGALRM when that is available
    (the main thread on POSIX); elsewhere only the counted limits apply.  The
    Unicode tables built on first use are left outside it (outside()).

    The caller's own alarm is never disturbed: when an ITIMER_REAL timer is
    already running, or the SIGALRM handler was installed outside Python (so it
    could not be put back), no budget is armed; otherwise the caller's handler
    is restored exactly on the way out, whatever happens inside.
    """

    armed: "Optional[_Deadline]" = None   # the budget running on the main thread, if any

    def __init__(self, seconds: Optional[float]) -> None:
        self.seconds = seconds
        self.active = False
        self.done = False
        self.previous: Any = None

    def _expire(self, *_: Any) -> None:
        if not self.done:  # a late alarm while leaving must not escape
            raise _DeadlinePassed()

    def __enter__(self) -> "_Deadline":
        import signal
        import threading

        if not (self.seconds is not None and self.seconds > 0 and hasattr(signal, "setitimer")
                and threading.current_thread() is threading.main_thread()):
            return self
        previous = signal.getsignal(signal.SIGALRM)
        if previous is None or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
            return self  # a foreign handler, or the caller's own timer is running: leave both alone
        self.previous = previous
        signal.signal(signal.SIGALRM, self._expire)
        self.active = True
        _Deadline.armed = self
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *_: Any) -> None:
        self.done = True
        if self.active:
            import signal

            _Deadline.armed = None
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)

    @staticmethod
    def outside(build: Callable[[], Any]) -> Any:
        """build(), with the armed budget's clock stopped: work that is not the call's (a table built once)."""
        import signal
        import threading

        budget = _Deadline.armed
        if budget is None or budget.done or threading.current_thread() is not threading.main_thread():
            return build()
        left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
        try:
            return build()
        finally:
            if not budget.done:
                signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6))   # 0 would disarm it: expire at once


class SchemaLimits(_FrozenRecord):
    """Bounds that keep one validation call finite whatever the input."""

    __slots__ = ("max_schema_depth", "max_evaluations", "max_pattern_subject")

    def __init__(self, max_schema_depth: int = 64, max_evaluations: int = 1_000_000,
                 max_pattern_subject: int = 1_000) -> None:
        _freeze(self, locals())


# --- constant tables --------------------------------------------------------

_SCH_DIALECTS: Mapping[str, str] = MappingProxyType({
    "https://json-schema.org/draft/2020-12/schema": "2020-12",
    "https://json-schema.org/draft/2020-12/schema#": "2020-12",
    "http://json-schema.org/draft-07/schema": "draft-07",
    "http://json-schema.org/draft-07/schema#": "draft-07",
    "https://json-schema.org/draft-07/schema": "draft-07",
    "https://json-schema.org/draft-07/schema#": "draft-07",
})

# Keys that never change a verdict under the accepted dialects.
_SCH_ANNOTATIONS: frozenset[str] = frozenset({
    "title", "description", "$comment", "default", "examples", "example",
    "deprecated", "readOnly", "writeOnly", "format", "contentEncoding",
    "contentMediaType", "contentSchema", "discriminator", "propertyOrdering",
    "errorMessage", "markdownDescription",
})

# Why a well-known keyword is refused; anything else unknown gets a generic reason.
_SCH_REFUSAL_REASONS: Mapping[str, str] = MappingProxyType({
    **dict.fromkeys(("if", "then", "else"), "conditional schemas are outside the subset"),
    **dict.fromkeys(("dependentRequired", "dependentSchemas", "dependencies"),
                    "dependency keywords are outside the subset"),
    **dict.fromkeys(("contains", "minContains", "maxContains"),
                    "contains-style array keywords are outside the subset"),
    **dict.fromkeys(("unevaluatedProperties", "unevaluatedItems"),
                    "it needs annotation collection, which this checker does not do"),
    **dict.fromkeys(("$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor"),
                    "dynamic references are outside the subset"),
    "$anchor": "anchors are outside the subset; use a \"#/...\" JSON Pointer $ref",
    "$vocabulary": "custom vocabularies are outside the subset",
    "nullable": "it is OpenAPI, not JSON Schema, and would change meaning; "
                "use a type array with \"null\" or anyOf instead",
    "$schema": "$schema is only allowed at the root",
    "$id": "$id below the root changes the base URI, which is outside the subset",
})

_SCH_TYPE_NAMES: frozenset[str] = frozenset(
    {"null", "boolean", "object", "array", "number", "string", "integer"})

SCHEMA_MAX_SUBSCHEMAS = 50_000        # subschemas in one tool's schema
SCHEMA_MAX_TURN_SIZE = 200_000        # subschemas + pattern sizes (_RxMatcher.states) + enum/const values, a turn
_SCH_BRANCH_HINTS = 3          # anyOf/oneOf branch failures quoted in a message
_SCH_HINT_CHARS = 300          # characters of each quoted branch failure
_SCH_MAX_ERRORS = 1000         # violations one validate_instance call collects; then it stops


# --- JSON value helpers -----------------------------------------------------

def _sch_is_number(value: object) -> bool:
    """JSON numbers; bool is excluded because Python makes it an int."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _sch_type_of(value: object) -> str:
    """The narrowest JSON type name; whole floats are integers, as the spec says."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "non-JSON value"


def _sch_type_label(value: object) -> str:
    """The type name as a reader expects it in a message (1.0 reads as number)."""
    return "number" if isinstance(value, float) else _sch_type_of(value)


_SCH_CANONICAL_DEPTH = 10_000  # deeper values are refused (parsed JSON never gets near it)


class _SchNotJson(ValueError):
    """A schema value that is not a JSON value (wrong Python type, NaN, inf)."""


def _sch_canonical(value: object, tally: Optional[list] = None, lengths: bool = True) -> object:
    """A form in which equal JSON values are equal and unequal ones differ.

    Why: Python says 1 == 1.0 == True and {'a': 0} == {'a': False}; JSON says
    only the first equality holds.  And the form is a str because a str's hash
    is keyed per process, while an int's is its value modulo 2**61-1 and a
    tuple's is built from its items' hashes: input could pick values whose
    forms all collide (k*(2**61-1)+5 for every k), and then each enum or
    uniqueItems lookup would compare against all of them.  Encoding: null n,
    true t, false f, an integer-valued number "i" and its hex digits (1 and 1.0
    alike), any other number "d" and its repr, a string JSON-quoted; every
    value is followed by ","; arrays are [...], objects {key:value,...} with
    keys sorted.  A string on its own is not copied: its form is ("s", it),
    whose hash is made from the string's.  Iterative so that a deep value cannot exhaust the Python
    stack.  When tally is given, tally[0] grows by the number of values
    visited, plus (if lengths) one per 4,096 characters of each string, key or
    number's digits (the work done).
    """
    quote = json.encoder.encode_basestring
    if not isinstance(value, (list, dict)):
        if tally is not None:
            tally[0] += 1
        if isinstance(value, str):
            if tally is not None and lengths:
                tally[0] += len(value) >> 12
            return ("s", value)
        return _sch_scalar_form(value, tally, lengths)
    parts: list[str] = []
    # One iterator of (key or None, child) pairs per open container, and its closing text.
    stack: list[Iterator[tuple[Optional[str], object]]] = [iter(((None, value),))]
    closers: list[str] = [""]
    while stack:
        pair = next(stack[-1], None)
        if pair is None:
            stack.pop()
            parts.append(closers.pop())
            continue
        key, item = pair
        if key is not None:
            parts.append(quote(key) + ":")
            if tally is not None and lengths:
                tally[0] += len(key) >> 12
        if isinstance(item, (list, dict)):
            if len(stack) > _SCH_CANONICAL_DEPTH:   # also stops a self-referencing Python list
                raise _SchNotJson(f"a value nests deeper than {_SCH_CANONICAL_DEPTH} levels")
            if isinstance(item, dict):
                for name in item:
                    if not isinstance(name, str):
                        raise _SchNotJson("object keys must be strings")
                stack.append(iter([(name, item[name]) for name in sorted(item)]))
                parts.append("{")
                closers.append("},")
            else:
                stack.append(iter([(None, child) for child in item]))
                parts.append("[")
                closers.append("],")
            if tally is not None:
                tally[0] += 1 + len(item)
        else:
            parts.append(_sch_scalar_form(item, tally, lengths))
    return "".join(parts)


def _sch_scalar_form(item: object, tally: Optional[list], lengths: bool) -> str:
    """The form of a value that is not a container (see _sch_canonical), charged to tally when given."""
    if item is None:
        return "n,"
    if isinstance(item, bool):
        return "t," if item else "f,"
    if isinstance(item, float):
        if not math.isfinite(item):
            raise _SchNotJson("non-finite number")
        if not item.is_integer():
            return "d" + repr(item) + ","
        item = int(item)
    if isinstance(item, int):
        text = "i" + format(item, "x") + ","   # hex: linear time, no digit limit
    elif isinstance(item, str):
        text = json.encoder.encode_basestring(item) + ","
    else:
        raise _SchNotJson(f"a {type(item).__name__} is not a JSON value")
    if tally is not None and lengths:
        tally[0] += len(text) >> 12   # comparing or hashing a long form reads all of it
    return text


def _sch_pointer(path: object) -> str:
    """Render a linked (parent, key) path as an RFC 6901 pointer ('' is the root)."""
    keys: list[str] = []
    while path is not None:
        path, key = path  # type: ignore[misc]
        keys.append(str(key) if isinstance(key, int)
                    else key.replace("~", "~0").replace("/", "~1"))
    keys.reverse()
    return "".join("/" + key for key in keys)


def _sch_location(loc: tuple[str, ...]) -> str:
    """Render a schema location as '#/a/b' for SchemaUnsupported.location."""
    return "#" + "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in loc)


def _sch_fraction(number: object) -> "Fraction":
    """Exact value of a JSON number as written: floats go through their decimal repr.

    Why: 19.99 % 0.01 is not 0 in binary floating point, but 1999/100 is an
    exact multiple of 1/100.  (fractions is imported here: only multipleOf needs it.)
    """
    from fractions import Fraction

    if isinstance(number, int):
        return Fraction(number)
    return Fraction(repr(number))


# --- ECMA-262 (u flag) regular expressions ----------------------------------
#
# A pattern is parsed with the ECMA grammar into a small tuple tree, then
# either emitted as a Python pattern that means the same (when a proof bounds
# re's work) or compiled for the simulator below:
#   ("lit", cp) | ("set", ranges, negated) | ("assert", "^" | "$" | "b" | "B")
#   ("look", negated, alt) | ("group", alt) | ("alt", (seq, ...))
#   ("rep", atom, min, max_or_None, lazy)          seq = tuple of terms
# Character sets are explicit code point ranges, so \d, \w, \s, \p{..} and
# their negations mean exactly the ECMA sets, inside classes as well.

_RX_MAX_CP = 0x10FFFF
_RX_MAX_NESTING = 50           # group nesting in one pattern
_RX_MAX_COUNT = 100_000        # largest {n,m} bound accepted
_RX_MAX_CLASS_READS = 50_000   # range operations the parser may spend on one pattern's classes
_RX_SYNTAX = frozenset("^$\\.*+?()[]{}|")
_RX_CONTROL = MappingProxyType({"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B})
_RX_DIGIT: tuple[tuple[int, int], ...] = ((0x30, 0x39),)
_RX_WORD: tuple[tuple[int, int], ...] = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_RX_SPACE: tuple[tuple[int, int], ...] = (
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
    (0xFEFF, 0xFEFF))
_RX_LINE_TERMINATORS: tuple[tuple[int, int], ...] = (
    (0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_RX_WORD_CLASS = "[0-9A-Z_a-z]"
_RX_BOUNDARY = (f"(?:(?<={_RX_WORD_CLASS})(?!{_RX_WORD_CLASS})"
                f"|(?<!{_RX_WORD_CLASS})(?={_RX_WORD_CLASS}))")
_RX_NOT_BOUNDARY = (f"(?:(?<={_RX_WORD_CLASS})(?={_RX_WORD_CLASS})"
                    f"|(?<!{_RX_WORD_CLASS})(?!{_RX_WORD_CLASS}))")
_RX_CLASS_ESCAPES: Mapping[str, tuple[tuple[tuple[int, int], ...], bool]] = MappingProxyType({
    "d": (_RX_DIGIT, False), "D": (_RX_DIGIT, True),
    "w": (_RX_WORD, False), "W": (_RX_WORD, True),
    "s": (_RX_SPACE, False), "S": (_RX_SPACE, True),
})


def _rx_gc_alias_table() -> Mapping[str, tuple[str, ...]]:
    """Every ECMA spelling of a General_Category value -> its two-letter members."""
    groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
        (("C", "Other"), ("Cc", "Cf", "Cs", "Co", "Cn")),
        (("Cc", "Control", "cntrl"), ("Cc",)), (("Cf", "Format"), ("Cf",)),
        (("Cn", "Unassigned"), ("Cn",)), (("Co", "Private_Use"), ("Co",)),
        (("Cs", "Surrogate"), ("Cs",)),
        (("L", "Letter"), ("Lu", "Ll", "Lt", "Lm", "Lo")),
        (("LC", "Cased_Letter"), ("Lu", "Ll", "Lt")),
        (("Ll", "Lowercase_Letter"), ("Ll",)), (("Lm", "Modifier_Letter"), ("Lm",)),
        (("Lo", "Other_Letter"), ("Lo",)), (("Lt", "Titlecase_Letter"), ("Lt",)),
        (("Lu", "Uppercase_Letter"), ("Lu",)),
        (("M", "Mark", "Combining_Mark"), ("Mn", "Mc", "Me")),
        (("Mc", "Spacing_Mark"), ("Mc",)), (("Me", "Enclosing_Mark"), ("Me",)),
        (("Mn", "Nonspacing_Mark"), ("Mn",)),
        (("N", "Number"), ("Nd", "Nl", "No")),
        (("Nd", "Decimal_Number", "digit"), ("Nd",)), (("Nl", "Letter_Number"), ("Nl",)),
        (("No", "Other_Number"), ("No",)),
        (("P", "Punctuation", "punct"), ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po")),
        (("Pc", "Connector_Punctuation"), ("Pc",)), (("Pd", "Dash_Punctuation"), ("Pd",)),
        (("Pe", "Close_Punctuation"), ("Pe",)), (("Pf", "Final_Punctuation"), ("Pf",)),
        (("Pi", "Initial_Punctuation"), ("Pi",)), (("Po", "Other_Punctuation"), ("Po",)),
        (("Ps", "Open_Punctuation"), ("Ps",)),
        (("S", "Symbol"), ("Sm", "Sc", "Sk", "So")),
        (("Sc", "Currency_Symbol"), ("Sc",)), (("Sk", "Modifier_Symbol"), ("Sk",)),
        (("Sm", "Math_Symbol"), ("Sm",)), (("So", "Other_Symbol"), ("So",)),
        (("Z", "Separator"), ("Zs", "Zl", "Zp")),
        (("Zl", "Line_Separator"), ("Zl",)), (("Zp", "Paragraph_Separator"), ("Zp",)),
        (("Zs", "Space_Separator"), ("Zs",)),
    )
    return MappingProxyType({name: members for names, members in groups for name in names})


_RX_GC_ALIASES: Mapping[str, tuple[str, ...]] = _rx_gc_alias_table()
_RX_SCRIPT_KEYS = frozenset({"Script", "sc", "Script_Extensions", "scx"})


@functools.lru_cache(maxsize=1)
def _rx_category_runs() -> Mapping[str, tuple[tuple[int, int], ...]]:
    """Two-letter General_Category -> code point ranges, from this Python's unicodedata.

    Built once per process on first use (about 0.15 s of CPU: one lookup per code
    point) and cached: a pure function of the interpreter's Unicode tables, so the
    running Python's unicodedata.unidata_version decides what \\p{..} means.  It is
    outside every budget: no counted unit, and an opt-in wall clock is stopped meanwhile.
    Not shipped precomputed: its 3,968 runs (Unicode 14) would have to follow each Python's version.
    """
    return _Deadline.outside(_rx_build_category_runs)


def _rx_build_category_runs() -> Mapping[str, tuple[tuple[int, int], ...]]:
    """The table of _rx_category_runs, built by asking unicodedata about every code point."""
    import unicodedata

    runs: dict[str, list[tuple[int, int]]] = {}
    category = unicodedata.category
    start, current = 0, category(chr(0))
    for cp in range(1, _RX_MAX_CP + 1):
        cat = category(chr(cp))
        if cat != current:
            runs.setdefault(current, []).append((start, cp - 1))
            start, current = cp, cat
    runs.setdefault(current, []).append((start, _RX_MAX_CP))
    return MappingProxyType({cat: tuple(ranges) for cat, ranges in runs.items()})


@functools.lru_cache(maxsize=64)
def _rx_category_ranges(members: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """Merged ranges of a union of General_Category values."""
    table = _rx_category_runs()
    return _rx_normalize([r for cat in members for r in table.get(cat, ())])


def _rx_normalize(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Sort and merge overlapping or adjacent ranges."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return tuple(merged)


def _rx_complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """All code points not in the (normalized) ranges."""
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _RX_MAX_CP:
        out.append((nxt, _RX_MAX_CP))
    return tuple(out)


class _RxError(ValueError):
    """The pattern is outside the ECMA-262 (u flag) subset this checker runs."""


# The quantifiers that are one character -> (low, high; None: no bound).
_RX_SHORT_COUNTS = MappingProxyType({"*": (0, None), "+": (1, None), "?": (0, 1)})


# Escapes refused by what they are, whatever follows them -> the message ({char}: the escaped character).
_RX_REFUSED_ESCAPES = MappingProxyType({
    **dict.fromkeys("123456789", "backreferences are not supported"),
    "k": "named backreferences are not supported",
    **dict.fromkeys("AZ", "\"\\{char}\" is Python-only syntax, not ECMA-262"),
})


class _RxParser:
    """Recursive-descent parser for ECMA-262 patterns with the u flag (subset).

    Why a parser and not re.compile: Python and ECMA disagree on \\d, \\w, \\s,
    '.', '$', \\p{..} and on what is a syntax error, and those differences
    decide verdicts.
    """

    def __init__(self, source: str) -> None:
        self.src = source
        self.pos = 0
        self.nesting = 0
        self.reads = 0      # set nodes made, and the ranges a [...] class takes in, complements or merges

    def read(self, count: int) -> None:
        """Count range work before doing it: a class's cost is its ranges, not its text
        (`[\\P{L}\\P{L}...]` is short to write and large to build).  A set outside [...] is
        one shared table (\\p{..}, \\d, '.'): the matchers count its ranges where they use them."""
        self.reads += count
        if self.reads > _RX_MAX_CLASS_READS:
            raise _RxTooBig(f"its character classes need more than {_RX_MAX_CLASS_READS} range operations")

    def peek(self) -> str:
        return self.src[self.pos] if self.pos < len(self.src) else ""

    def parse(self) -> tuple:
        tree = self.disjunction()
        if self.pos < len(self.src):
            raise _RxError("unmatched \")\"")
        return tree

    def disjunction(self) -> tuple:
        seqs = [self.alternative()]
        while self.peek() == "|":
            self.pos += 1
            seqs.append(self.alternative())
        return ("alt", tuple(seqs))

    def alternative(self) -> tuple:
        terms = []
        while self.pos < len(self.src) and self.src[self.pos] not in "|)":
            terms.append(self.term())
        return tuple(terms)

    def nested(self) -> tuple:
        self.nesting += 1
        if self.nesting > _RX_MAX_NESTING:
            raise _RxError(f"groups are nested more than {_RX_MAX_NESTING} deep")
        body = self.disjunction()
        if self.peek() != ")":
            raise _RxError("a group is not closed")
        self.pos += 1
        self.nesting -= 1
        return body

    def no_quantifier(self, what: str) -> None:
        if self.peek() and self.peek() in "*+?{":
            raise _RxError(f"a quantifier cannot follow {what} (u flag)")

    def term(self) -> tuple:
        src, pos = self.src, self.pos
        char = src[pos]
        if char == "^":
            self.pos += 1
            self.no_quantifier("'^'")
            return ("assert", "^")
        if char == "$":
            self.pos += 1
            self.no_quantifier("'$'")
            return ("assert", "$")
        if src.startswith("\\b", pos) or src.startswith("\\B", pos):
            self.pos += 2
            self.no_quantifier("a word boundary")
            return ("assert", src[pos + 1])
        if char == "(":
            return self.group()
        return self.quantified(self.atom())

    def group(self) -> tuple:
        src, pos = self.src, self.pos
        if src.startswith("(?=", pos) or src.startswith("(?!", pos):
            self.pos += 3
            body = self.nested()
            self.no_quantifier("a lookahead")
            return ("look", src[pos + 2] == "!", body)
        if src.startswith("(?<=", pos) or src.startswith("(?<!", pos):
            raise _RxError("lookbehind is not supported")
        if src.startswith("(?<", pos):
            raise _RxError("named groups are not supported")
        if src.startswith("(?P", pos) or src.startswith("(?#", pos):
            raise _RxError("Python-only group syntax is not ECMA-262")
        if src.startswith("(?:", pos):
            self.pos += 3
            return self.quantified(("group", self.nested()))
        if src.startswith("(?", pos):
            raise _RxError("inline flags and modifiers are not supported")
        self.pos += 1
        return self.quantified(("group", self.nested()))

    def atom(self) -> tuple:
        char = self.src[self.pos]
        if char == ".":
            self.pos += 1
            self.read(1)
            return ("set", _RX_LINE_TERMINATORS, True)
        if char == "[":
            return self.char_class()
        if char == "\\":
            return self.atom_escape()
        if char in "*+?":
            raise _RxError(f"\"{char}\" has nothing to repeat")
        if char in "{}]":
            raise _RxError(f"a lone \"{char}\" is a syntax error with the u flag")
        self.pos += 1
        return ("lit", ord(char))

    def quantified(self, atom: tuple) -> tuple:
        char = self.peek()
        if char in _RX_SHORT_COUNTS:
            low, high = _RX_SHORT_COUNTS[char]
            self.pos += 1
        elif char == "{":
            low, high = self.counts()
        else:
            return atom
        lazy = self.peek() == "?"
        if lazy:
            self.pos += 1
        if self.peek() and self.peek() in "*+?{":
            raise _RxError("a quantifier cannot follow a quantifier")
        return ("rep", atom, low, high, lazy)

    def counts(self) -> tuple[int, int | None]:
        """A "{n}", "{n,}" or "{n,m}" quantifier at self.pos: (low, high; None: no bound)."""
        found = re.compile(r"\{([0-9]+)(,([0-9]*))?\}").match(self.src, self.pos)
        if found is None:
            if self.src.startswith("{,", self.pos):
                raise _RxError("\"{,m}\" is not a quantifier in ECMA-262")
            raise _RxError("a malformed \"{...}\" quantifier (u flag)")
        if len(found.group(1)) > 9 or len(found.group(3) or "") > 9:  # int() refuses > 4300 digits
            raise _RxTooBig(f"a repeat count is above {_RX_MAX_COUNT}")
        low = int(found.group(1))
        high = low if found.group(2) is None else (
            int(found.group(3)) if found.group(3) else None)
        if low > _RX_MAX_COUNT or (high is not None and high > _RX_MAX_COUNT):
            raise _RxTooBig(f"a repeat count is above {_RX_MAX_COUNT}")
        if high is not None and low > high:
            raise _RxError("numbers out of order in a \"{n,m}\" quantifier")
        self.pos = found.end()
        return low, high

    def atom_escape(self) -> tuple:
        nxt = self.src[self.pos + 1] if self.pos + 1 < len(self.src) else ""
        if nxt in _RX_CLASS_ESCAPES and nxt:
            self.pos += 2
            ranges, negated = _RX_CLASS_ESCAPES[nxt]
            self.read(1)
            return ("set", ranges, negated)
        if nxt and nxt in "pP":
            return ("set", self.property_escape(), nxt == "P")
        return ("lit", self.character_escape(in_class=False))

    def character_escape(self, in_class: bool) -> int:
        """One escaped code point; self.pos is at the backslash."""
        src = self.src
        self.pos += 1
        if self.pos >= len(src):
            raise _RxError("the pattern ends with a lone backslash")
        char = src[self.pos]
        self.pos += 1
        if char in _RX_CONTROL:
            return _RX_CONTROL[char]
        if char in _RX_REFUSED_ESCAPES:
            raise _RxError(_RX_REFUSED_ESCAPES[char].format(char=char))
        if char == "c":
            return self.control_letter()
        if char == "0":
            if self.peek().isdigit():
                raise _RxError("\"\\0\" followed by a digit (octal) is not allowed")
            return 0
        if char == "x":
            return self.hex_escape()
        if char == "u":
            return self.unicode_escape()
        if char in _RX_SYNTAX or char == "/" or (in_class and char == "-"):
            return ord(char)
        raise _RxError(f"\"\\{char}\" is not a valid escape with the u flag")

    def control_letter(self) -> int:
        """\\c and an ASCII letter: the letter's code modulo 32."""
        letter = self.peek()
        if not ("a" <= letter <= "z" or "A" <= letter <= "Z"):
            raise _RxError("\"\\c\" must be followed by an ASCII letter")
        self.pos += 1
        return ord(letter) % 32

    def hex_escape(self) -> int:
        """\\xHH."""
        digits = self.src[self.pos:self.pos + 2]
        if not re.fullmatch(r"[0-9A-Fa-f]{2}", digits):
            raise _RxError("\"\\x\" must be followed by two hex digits")
        self.pos += 2
        return int(digits, 16)

    def unicode_escape(self) -> int:
        """\\uXXXX, joining an escaped surrogate pair into one code point."""
        src = self.src
        if self.peek() == "{":
            raise _RxError("\"\\u{...}\" escapes are not supported")
        digits = src[self.pos:self.pos + 4]
        if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
            raise _RxError("\"\\u\" must be followed by four hex digits")
        self.pos += 4
        value = int(digits, 16)
        if 0xD800 <= value <= 0xDBFF and src.startswith("\\u", self.pos):
            trail = src[self.pos + 2:self.pos + 6]
            if re.fullmatch(r"[0-9A-Fa-f]{4}", trail) and 0xDC00 <= int(trail, 16) <= 0xDFFF:
                self.pos += 6
                return 0x10000 + ((value - 0xD800) << 10) + (int(trail, 16) - 0xDC00)
        return value

    def property_escape(self) -> tuple[tuple[int, int], ...]:
        """\\p{..}/\\P{..}: General_Category only; self.pos is at the backslash."""
        src = self.src
        if not src.startswith("{", self.pos + 2):
            raise _RxError("\"\\p\" must be followed by \"{...}\"")
        end = src.find("}", self.pos + 3)
        if end < 0:
            raise _RxError("\"\\p{\" is not closed")
        name = src[self.pos + 3:end]
        self.pos = end + 1
        key, sep, value = name.partition("=")
        if sep:
            if key in _RX_SCRIPT_KEYS:
                raise _RxError(f"script properties such as \\p{{{name}}} are not supported")
            if key not in ("General_Category", "gc") or value not in _RX_GC_ALIASES:
                raise _RxError(f"\\p{{{name}}} is not a supported General_Category property")
            members = _RX_GC_ALIASES[value]
        elif name in _RX_GC_ALIASES:
            members = _RX_GC_ALIASES[name]
        else:
            raise _RxError(f"\\p{{{name}}} is a binary or unknown property; "
                           "only General_Category values are supported")
        self.read(1)
        return _rx_category_ranges(members)

    def class_atom(self) -> object:
        """A code point (int) or a set of ranges (tuple) inside [...]."""
        char = self.src[self.pos]
        if char != "\\":
            self.pos += 1
            return ord(char)
        nxt = self.src[self.pos + 1] if self.pos + 1 < len(self.src) else ""
        if nxt and nxt in _RX_CLASS_ESCAPES:
            self.pos += 2
            ranges, negated = _RX_CLASS_ESCAPES[nxt]
            self.read(len(ranges) * (2 if negated else 1))     # taken in, and complemented first
            return _rx_complement(ranges) if negated else ranges
        if nxt and nxt in "pP":
            ranges = self.property_escape()
            self.read(len(ranges) * (2 if nxt == "P" else 1))
            return _rx_complement(ranges) if nxt == "P" else ranges
        if nxt == "b":
            self.pos += 2
            return 0x08
        if nxt == "B":
            raise _RxError("\"\\B\" is not allowed in a character class")
        return self.character_escape(in_class=True)

    def char_class(self) -> tuple:
        src = self.src
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        if self.peek() == "]":             # ECMA: [] matches nothing, [^] any code point
            self.pos += 1
            return ("set", (), negated)
        parts: list[tuple[int, int]] = []
        while True:
            if self.pos >= len(src):
                raise _RxError("a character class is not closed")
            if src[self.pos] == "]":
                self.pos += 1
                break
            first = self.class_atom()
            if self.peek() == "-" and self.pos + 1 < len(src) and src[self.pos + 1] != "]":
                self.pos += 1
                if self.pos >= len(src):
                    raise _RxError("a character class is not closed")
                last = self.class_atom()
                if not isinstance(first, int) or not isinstance(last, int):
                    raise _RxError("a class escape cannot bound a range (u flag)")
                if first > last:
                    raise _RxError("a character class range is out of order")
                parts.append((first, last))
            elif isinstance(first, int):
                parts.append((first, first))
            else:
                parts.extend(first)  # type: ignore[arg-type]
        self.read(1 + len(parts))
        return ("set", _rx_normalize(parts), negated)


def _rx_positive(node: tuple) -> tuple[tuple[int, int], ...]:
    """The code points a "set" node matches, as normalized ranges."""
    return _rx_complement(node[1]) if node[2] else node[1]


_RX_ASSERT_TEXT: Mapping[str, str] = MappingProxyType({
    "^": "^",
    "$": r"\Z",                      # Python's '$' also matches before a final newline
    "b": _RX_BOUNDARY,               # spelled out: Python's \B never matches in an
    "B": _RX_NOT_BOUNDARY,           # empty string, ECMA's does
})


def _rx_emit(node: tuple) -> str:
    """Python re text with the same meaning (compile it with re.ASCII)."""
    kind = node[0]
    if kind == "lit":
        char = chr(node[1])
        return char if char.isascii() and char.isalnum() else f"\\U{node[1]:08x}"
    if kind == "set":
        return _rx_emit_set(node[1], node[2])
    if kind == "assert":
        return _RX_ASSERT_TEXT[node[1]]
    if kind == "look":
        return ("(?!" if node[1] else "(?=") + _rx_emit(node[2]) + ")"
    if kind == "group":
        return "(?:" + _rx_emit(node[1]) + ")"
    if kind == "rep":
        _, atom, low, high, lazy = node
        return _rx_emit(atom) + _rx_quantifier(low, high) + ("?" if lazy else "")
    return "|".join("".join(_rx_emit(term) for term in seq) for seq in node[1])


def _rx_emit_set(ranges: tuple, negated: bool) -> str:
    """A class as re text: its ranges as code points (an empty class matches nothing, or anything)."""
    if not ranges:
        return "[\\U00000000-\\U0010ffff]" if negated else "(?!)"
    body = "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"
                   for lo, hi in ranges)
    return ("[^" if negated else "[") + body + "]"


_RX_QUANTIFIERS = MappingProxyType({(0, None): "*", (1, None): "+", (0, 1): "?"})


def _rx_quantifier(low: int, high: int | None) -> str:
    """{low,high} as re writes it, in its short form where it has one."""
    if (low, high) in _RX_QUANTIFIERS:
        return _RX_QUANTIFIERS[(low, high)]
    if high is None:
        return f"{{{low},}}"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


# --- choosing the matcher: a proof for re, or the simulator -----------------
#
# Python's re backtracks, cannot be interrupted and holds the interpreter lock
# for a whole search, in every thread.  So a pattern goes to re only with a
# proof that its work is small: the pattern is LL(1) -- at every choice (which
# alternative; one more iteration or stop) the next code point decides, and
# nothing nullable is repeated or offered twice, so the empty string matches
# each part one way only.  A backtracking search then follows one viable path
# and every wrong turn fails on its first code point: its work is at most
# about starts x subject x pattern size (starts is 1 when the pattern opens
# with '^', which re tries only at 0).  That product must stay under
# _RX_FAST_COST for the longest subject allowed (max_pattern_subject).
#
# Every other pattern (lookahead, ambiguous repetition such as (a|aa)+ or
# a*a*b, or too big for the bound) runs on _rx_vm_search: a breadth-first
# simulation of the pattern's automaton, subject x states steps at most, each
# charged to the call's evaluation budget.  No pattern is refused for its
# shape; a simulator automaton above _RX_MAX_STATES is limit_exceeded.

_RX_MAX_LENGTH = 10_000            # code points in one pattern
_RX_MAX_STATES = 20_000            # simulator states of one pattern
_RX_FAST_COST = 20_000_000         # re's work bound (_RxMatcher.work) at the longest subject
_RX_PROOF_WORK = 50_000            # range operations the LL(1) proof may spend (counted in the pattern's size)
_RX_RE_RANGES = 20_000             # class ranges in a pattern handed to re (its compile grows with them)
_RX_RE_STEPS_PER_UNIT = 256        # estimated re steps charged as one evaluation unit
_RX_RE_CELLS = 1_000_000           # BMP code points re's compiler walks one by one for a pattern's classes
_RX_RE_CELLS_PER_SIZE = 64         # of those, counted as one unit of the pattern's size
_RX_BMP_END = 0xFFFF
_RX_RE_BOUNDARY_STEPS = 32         # steps \b or \B weighs on re: four lookarounds (_RX_BOUNDARY), ~25 char tests


def _rx_re_class_cost(ranges: tuple[tuple[int, int], ...]) -> tuple[int, int]:
    """(extra per-character scan, compile walk) of one class occurrence compiled by re.

    re's compiler walks every BMP code point of each range in Python (into a bitmap,
    tested in one step), then keeps every range that reaches above U+FFFF as an item of
    its own, and the compiled class tests a character against those items one after the
    other.  So a class costs, per character it tests, one step more per range above
    U+FFFF; and, once per occurrence when it is compiled, the BMP code points of its
    ranges (plus the 256 walked again when the map grows past Latin-1).
    """
    scan = cells = 0
    for lo, hi in ranges:
        if hi > _RX_BMP_END:
            scan += 1
        if lo <= _RX_BMP_END:
            cells += min(hi, _RX_BMP_END) - lo + 1
    if ranges and ranges[-1][1] > 0xFF:
        cells += 256
    return scan, cells


class _RxNotLL1(Exception):
    """The pattern has a choice the next code point does not decide (or no proof in time)."""


class _RxTooBig(Exception):
    """A size limit: a repeat count above _RX_MAX_COUNT, or simulator code above _RX_MAX_STATES."""


class _RxProof:
    """The LL(1) check: FIRST sets bottom-up, then FOLLOW sets top-down.

    Sets are normalized code point ranges; alternatives are compared with one
    sort-and-sweep (n log n), never pairwise.
    """

    def __init__(self) -> None:
        self.facts: dict[int, tuple[tuple[tuple[int, int], ...], bool]] = {}
        self.work = 0
        self.nodes = 0
        self.ranges = 0
        self.scan = 0       # re's per-character class items above U+FFFF, summed over class occurrences
        self.cells = 0      # BMP code points re's compiler walks for the classes (_rx_re_class_cost)

    def spend(self, amount: int) -> None:
        self.work += amount
        if self.work > _RX_PROOF_WORK:
            raise _RxNotLL1()

    def union(self, a: tuple, b: tuple) -> tuple:
        if not a:
            return b
        if not b:
            return a
        self.spend(len(a) + len(b))
        return _rx_normalize(list(a) + list(b))

    def disjoint(self, sets: list[tuple]) -> bool:
        """No code point is in two of the sets."""
        items = [(lo, hi, index) for index, ranges in enumerate(sets) for lo, hi in ranges]
        self.spend(len(items))
        items.sort()
        end, owner = -1, -1
        for lo, hi, index in items:
            if lo <= end and index != owner:
                return False
            if hi > end:
                end, owner = hi, index
        return True

    def first(self, node: tuple) -> tuple[tuple[tuple[int, int], ...], bool]:
        """(code points a match can start with, whether it can match empty)."""
        known = self.facts.get(id(node))
        if known is not None:
            return known
        self.nodes += 1
        self.spend(1)
        kind = node[0]
        if kind == "lit":
            out: tuple[tuple[tuple[int, int], ...], bool] = (((node[1], node[1]),), False)
        elif kind == "set":
            out = self.first_set(node)
        elif kind == "assert":
            if node[1] in "bB":
                self.scan += _RX_RE_BOUNDARY_STEPS
            out = ((), True)
        elif kind == "look":
            raise _RxNotLL1()
        elif kind == "group":
            out = self.first(node[1])
        elif kind == "rep":
            if node[3] == 0:
                self.first(node[1])
                out = ((), True)
            else:
                ranges, nullable = self.first(node[1])
                out = (ranges, nullable or node[2] == 0)
        else:
            out = self.first_alt(node)
        self.facts[id(node)] = out
        return out

    def first_set(self, node: tuple) -> tuple[tuple[tuple[int, int], ...], bool]:
        """A class: its code points, charged with what re would spend compiling and scanning it."""
        self.ranges += len(node[1])
        if self.ranges > _RX_RE_RANGES:
            raise _RxNotLL1()  # a huge re to compile: the simulator shares each class instead
        self.spend(len(node[1]))
        written = node[1] or (((0, _RX_MAX_CP),) if node[2] else ())   # [^] as _rx_emit writes it
        scan, cells = _rx_re_class_cost(written)
        self.scan += scan
        self.cells += cells
        if self.cells > _RX_RE_CELLS:
            raise _RxNotLL1()  # re would walk too many code points compiling it: the simulator does not
        return (_rx_positive(node), False)

    def first_alt(self, node: tuple) -> tuple[tuple[tuple[int, int], ...], bool]:
        """An alternation: what any branch starts with; empty when any branch can be."""
        parts: list = []
        nullable = False
        for seq in node[1]:
            seq_ranges, seq_nullable = self.first_seq(seq, 0)
            parts.extend(seq_ranges)
            nullable = nullable or seq_nullable
        self.spend(len(parts))               # one merge, not one per alternative
        return (_rx_normalize(parts), nullable)

    def first_seq(self, seq: tuple, start: int) -> tuple[tuple[tuple[int, int], ...], bool]:
        ranges: tuple = ()
        for term in seq[start:]:
            term_ranges, nullable = self.first(term)
            ranges = self.union(ranges, term_ranges)
            if not nullable:
                return ranges, False
        return ranges, True

    def check(self, node: tuple, follow: tuple) -> None:
        """Raise _RxNotLL1 unless every choice in node is decided by one code point."""
        kind = node[0]
        if kind == "group":
            self.check(node[1], follow)
        elif kind == "rep":
            self.check_rep(node, follow)
        elif kind == "alt":
            self.check_alt(node, follow)

    def check_rep(self, node: tuple, follow: tuple) -> None:
        """A repeat: whether to iterate again is decided by the next code point."""
        _, body, low, high, _lazy = node
        ranges, nullable = self.first(body)
        if nullable and (high is None or high > 1):
            raise _RxNotLL1()  # iterations that consume nothing: re would try them all
        if (high is None or high > low) and (nullable or not self.disjoint([ranges, follow])):
            raise _RxNotLL1()
        inner = self.union(ranges, follow) if high is None or high > 1 else follow
        self.check(body, inner)

    def check_alt(self, node: tuple, follow: tuple) -> None:
        """An alternation: at most one branch may match nothing, and the branches start apart."""
        options = []
        nullable_count = 0
        for seq in node[1]:
            ranges, nullable = self.first_seq(seq, 0)
            if nullable:
                nullable_count += 1
                ranges = self.union(ranges, follow)
            options.append(ranges)
        if nullable_count > 1 or (len(options) > 1 and not self.disjoint(options)):
            raise _RxNotLL1()
        for seq in node[1]:
            after = follow
            for term in reversed(seq):
                self.check(term, after)
                ranges, nullable = self.first(term)
                after = self.union(ranges, after) if nullable else ranges


_VM_CHAR, _VM_SPLIT, _VM_JUMP, _VM_ASSERT, _VM_LOOK, _VM_MATCH = range(6)
_RX_WORD_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")


class _RxBuilder:
    """Turns a pattern tree into simulator code (a Thompson automaton).

    Instructions are tuples: (CHAR, starts, ends) consumes one code point in
    the ranges; (SPLIT, a, b) and (JUMP, a) move without consuming;
    (ASSERT, kind) tests ^ $ \\b \\B; (LOOK, negated, code) runs a lookahead's
    own code from the current position; (MATCH,) ends the pattern.  {n,m}
    repeats are unrolled, so the size is checked as the code grows.
    """

    def __init__(self) -> None:
        self.states = 0
        self.ranges = 0     # code point ranges copied into the automaton, once per distinct class
        self.sets: dict[tuple, tuple] = {}

    def program(self, node: tuple) -> list:
        code: list = []
        self.emit(node, code)
        code.append((_VM_MATCH,))
        self.grow(1)
        return code

    def grow(self, count: int) -> None:
        self.states += count
        if self.states > _RX_MAX_STATES:
            raise _RxTooBig(f"it needs more than {_RX_MAX_STATES} matcher states")

    def emit(self, node: tuple, code: list) -> None:
        kind = node[0]
        if kind == "lit":
            self.grow(1)
            code.append((_VM_CHAR, (node[1],), (node[1],)))
        elif kind == "set":
            self.grow(1)
            code.append(self.class_op(node))
        elif kind == "assert":
            self.grow(1)
            code.append((_VM_ASSERT, node[1]))
        elif kind == "look":
            self.grow(1)
            code.append((_VM_LOOK, node[1], self.program(node[2])))
        elif kind == "group":
            self.emit(node[1], code)
        elif kind == "rep":
            self.repeat(node, code)
        else:
            self.alternation(node[1], code)

    def class_op(self, node: tuple) -> tuple:
        """The CHAR instruction of a class, made once per class (\\p{..} tables are shared objects)."""
        key = (id(node[1]), node[2])
        op = self.sets.get(key)
        if op is not None:
            return op[0]
        self.ranges += len(node[1]) + 1
        ranges = _rx_positive(node)
        op = (_VM_CHAR, tuple(lo for lo, _ in ranges), tuple(hi for _, hi in ranges))
        self.sets[key] = (op, node)  # node kept alive, so its id is not reused
        return op

    def alternation(self, seqs: tuple, code: list) -> None:
        """Each branch but the last behind a SPLIT to the next, each jumping past the last when done."""
        exits = []
        for index, seq in enumerate(seqs):
            last = index == len(seqs) - 1
            split = len(code)
            if not last:
                self.grow(2)
                code.append(None)
            for term in seq:
                self.emit(term, code)
            if not last:
                exits.append(len(code))
                code.append(None)
                code[split] = (_VM_SPLIT, split + 1, len(code))
        for at in exits:
            code[at] = (_VM_JUMP, len(code))

    def repeat(self, node: tuple, code: list) -> None:
        _, body, low, high, _lazy = node
        if high == 0 or _rx_silent(body):   # (?:){10000} adds nothing, however often
            return
        for _ in range(low):
            self.emit(body, code)
        if high is None:
            self.grow(2)
            loop = len(code)
            code.append(None)
            self.emit(body, code)
            code.append((_VM_JUMP, loop))
            code[loop] = (_VM_SPLIT, loop + 1, len(code))
            return
        splits = []
        for _ in range(high - low):
            self.grow(1)
            splits.append(len(code))
            code.append(None)
            self.emit(body, code)
        for at in splits:
            code[at] = (_VM_SPLIT, at + 1, len(code))


def _rx_silent(node: tuple) -> bool:
    """Whether node compiles to no simulator code at all (empty groups, {0} repeats)."""
    kind = node[0]
    if kind == "group":
        return _rx_silent(node[1])
    if kind == "rep":
        return node[3] == 0 or _rx_silent(node[1])
    if kind == "alt":
        return len(node[1]) == 1 and all(_rx_silent(term) for term in node[1][0])
    return False


class _RxOverBudget(Exception):
    """The simulator spent the call's evaluation budget."""


def _rx_vm_search(code: list, text: str, begin: int, anchored: bool, run: "_SchRun",
                  looks: dict) -> bool:
    """Whether the automaton matches text at some position >= begin (only begin if anchored).

    Breadth-first: the set of live states advances one code point at a time,
    so the work is at most (len(text) - begin + 1) x len(code) steps, charged
    to run.count.  A lookahead's answer at a position is computed once (looks).
    """
    seen = [-1] * len(code)
    end = len(text)
    current: list[int] = []
    run.count += 1 + len(code) // 64
    for at in range(begin, end + 1):
        if at == begin or not anchored:
            current.append(0)
        elif not current:
            break
        live = _rx_vm_closure(code, text, at, current, seen, run, looks)
        if live is None:
            return True
        if run.count > run.max_evaluations:
            raise _RxOverBudget()
        if at == end:
            break
        point = ord(text[at])
        current = []
        for index in range(0, len(live), 2):
            op = live[index]
            slot = bisect.bisect_right(op[1], point) - 1
            if slot >= 0 and point <= op[2][slot]:
                current.append(live[index + 1])
    return False


def _rx_vm_closure(code: list, text: str, at: int, stack: list[int], seen: list[int], run: "_SchRun",
                   looks: dict) -> list | None:
    """The states reached at position at from those on stack without consuming: the CHAR states, as
    pairs (instruction, next pc) in one flat list; None when MATCH is reached.  Each state reached is
    one step charged to run.count (seen[pc] == at: reached already)."""
    live: list = []
    spent = 0
    while stack:
        pc = stack.pop()
        if seen[pc] == at:
            continue
        seen[pc] = at
        spent += 1
        op = code[pc]
        kind = op[0]
        if kind == _VM_CHAR:
            live.append(op)
            live.append(pc + 1)
        elif kind == _VM_SPLIT:
            stack.append(op[2])
            stack.append(op[1])
        elif kind == _VM_JUMP:
            stack.append(op[1])
        elif kind == _VM_MATCH:
            run.count += spent
            return None
        elif kind == _VM_ASSERT:
            if _rx_assertion_holds(op[1], text, at):
                stack.append(pc + 1)
        else:
            key = (id(op[2]), at)
            found = looks.get(key)
            if found is None:
                run.count += spent
                spent = 0
                found = looks[key] = _rx_vm_search(op[2], text, at, True, run, looks)
            if found != op[1]:
                stack.append(pc + 1)
    run.count += spent
    return live


def _rx_assertion_holds(which: str, text: str, at: int) -> bool:
    """^ $ \\b \\B at a position of text (no multiline: ^ and $ are its ends)."""
    if which == "^":
        return at == 0
    if which == "$":
        return at == len(text)
    before = at > 0 and text[at - 1] in _RX_WORD_CHARS
    after = at < len(text) and text[at] in _RX_WORD_CHARS
    return (before != after) == (which == "b")


class _RxMatcher:
    """One compiled pattern: a proven-safe re, or simulator code.

    For re: nodes (pattern size, each class weighing one more per range re scans
    linearly, see _rx_re_class_cost), width (longest match in code points, None
    when unbounded) and anchored give the work bound of one search, see work().
    For the simulator: code.  states is the pattern's size for the schema size
    limits, which counts every step of compiling it: for the simulator, its code's
    length plus the ranges of its distinct classes (_RxBuilder.ranges); for re, its
    compile weight (nodes + the ranges of every class occurrence); for both, plus the
    parser's range operations (_RxParser.reads) and the LL(1) check's (_RxProof.work).
    """

    __slots__ = ("regex", "code", "states", "nodes", "width", "anchored")

    def __init__(self, regex: "Optional[re.Pattern[str]]", code: Optional[list], states: int,
                 nodes: int = 0, width: Optional[int] = None, anchored: bool = False) -> None:
        self.regex = regex
        self.code = code
        self.states = states
        self.nodes = nodes
        self.width = width
        self.anchored = anchored

    def work(self, length: int) -> int:
        """Bound on re's steps for a subject of `length` code points (an LL(1) pattern).

        Each start follows one viable path of at most min(length, width) + 1 code
        points, at most `nodes` steps per code point; '^' leaves one start.
        """
        reach = length + 1 if self.width is None else min(length, self.width) + 1
        return (1 if self.anchored else length + 1) * reach * self.nodes


def _rx_width(node: tuple) -> Optional[int]:
    """The longest string the pattern can match, in code points (None: unbounded)."""
    kind = node[0]
    if kind in ("lit", "set"):
        return 1
    if kind in ("assert", "look"):
        return 0
    if kind == "group":
        return _rx_width(node[1])
    if kind == "rep":
        if node[3] == 0:
            return 0
        body = _rx_width(node[1])
        return None if body is None or node[3] is None else body * node[3]
    widest = 0
    for seq in node[1]:
        total = 0
        for term in seq:
            width = _rx_width(term)
            if width is None:
                return None
            total += width
        widest = max(widest, total)
    return widest


def _rx_compile(source: str, max_subject: int) -> _RxMatcher:
    """ECMA-262 (u flag) pattern -> matcher; raises _RxError (unsupported) or _RxTooBig."""
    if len(source) > _RX_MAX_LENGTH:
        raise _RxTooBig(f"it is longer than {_RX_MAX_LENGTH} code points")
    parser = _RxParser(source)
    tree = parser.parse()
    proof = _RxProof()
    try:
        proof.check(tree, ())
    except _RxNotLL1:
        pass
    else:
        seqs = tree[1]
        anchored = len(seqs) == 1 and bool(seqs[0]) and seqs[0][0] == ("assert", "^")
        # a class whose ranges reach above U+FFFF weighs one step more per such range (_rx_re_class_cost)
        matcher = _RxMatcher(None, None, 0, max(proof.nodes + proof.scan, 1), _rx_width(tree), anchored)
        if matcher.work(max_subject) <= _RX_FAST_COST:
            matcher.regex = re.compile(_rx_emit(tree), re.ASCII)
            # its compile weight, for the schema size limits
            matcher.states = (proof.nodes + proof.ranges + parser.reads + proof.work
                              + proof.cells // _RX_RE_CELLS_PER_SIZE)
            return matcher
    builder = _RxBuilder()
    code = builder.program(tree)
    return _RxMatcher(None, code, builder.states + builder.ranges + parser.reads + proof.work)


# --- compiled form ----------------------------------------------------------

# A check runs one keyword: (instance, path, run, level, errors, quick) -> None.
_SchCheck = Callable[[object, object, "_SchRun", int, list, bool], None]


class _SchNode:
    """One schema location: a boolean verdict, or the checks of its keywords."""

    __slots__ = ("verdict", "checks", "location", "inplace")

    def __init__(self, verdict: Optional[bool], location: tuple[str, ...]) -> None:
        self.verdict = verdict
        self.checks: tuple[_SchCheck, ...] = ()
        self.location = location
        # Subschemas applied to the same instance location (compile-time only):
        # the edges of the no-progress cycle check.
        self.inplace: list[object] = []

    def trivial(self) -> bool:
        """Accepts everything, so callers may skip it ({} or true)."""
        return self.verdict is True or (self.verdict is None and not self.checks)


class _SchRefCell:
    """A $ref target, filled in once the whole document has been walked."""

    __slots__ = ("node",)

    def __init__(self) -> None:
        self.node: Optional[_SchNode] = None


class CompiledSchema:
    """A checked schema, ready for many instances; holds no per-call state."""

    __slots__ = ("dialect", "_root", "size")

    def __init__(self, dialect: str, root: _SchNode, size: int) -> None:
        self.dialect = dialect
        self._root = root
        self.size = size            # subschemas + pattern sizes (_RxMatcher.states) + enum/const values


class _SchRun:
    """Counters of one validate_instance call."""

    __slots__ = ("count", "max_evaluations", "max_depth", "max_subject")

    def __init__(self, limits: SchemaLimits) -> None:
        self.count = 0
        self.max_evaluations = limits.max_evaluations
        self.max_depth = limits.max_schema_depth
        self.max_subject = limits.max_pattern_subject


class _SchErrorsFull(Exception):
    """_SCH_MAX_ERRORS violations are collected: the verdict is known, the rest is not looked at."""


def _sch_evaluate(node: _SchNode, inst: object, path: object, run: _SchRun,
                  level: int, errs: list, quick: bool) -> None:
    """Apply one subschema, appending (path, message) pairs to errs."""
    if len(errs) >= _SCH_MAX_ERRORS:
        raise _SchErrorsFull()
    run.count += 1
    if run.count > run.max_evaluations:
        raise SchemaLimitExceeded(
            f"validation needed more than max_evaluations ({run.max_evaluations}) "
            "units of work", _sch_pointer(path))
    if level > run.max_depth:
        raise SchemaLimitExceeded(
            f"evaluation nested deeper than max_schema_depth ({run.max_depth})",
            _sch_pointer(path))
    if node.verdict is not None:
        if not node.verdict:
            errs.append((path, "no value is allowed here (the schema is false)"))
        return
    for check in node.checks:
        check(inst, path, run, level, errs, quick)
        if quick and errs:
            return


def _sch_charge(run: _SchRun, units: int, path: object) -> None:
    """Count work that is not a subschema visit (see _RX_RE_STEPS_PER_UNIT, _sch_canonical)."""
    run.count += units
    if run.count > run.max_evaluations:
        raise SchemaLimitExceeded(
            f"validation needed more than max_evaluations ({run.max_evaluations}) "
            "units of work", _sch_pointer(path))


def _sch_search(rx: _RxMatcher, text: str, path: object, run: _SchRun) -> bool:
    """A pattern search with the subject-length cap, its work charged to the budget."""
    if len(text) > run.max_subject:
        raise SchemaLimitExceeded(
            f"a string of {len(text)} code points is longer than max_pattern_subject "
            f"({run.max_subject}), so the pattern was not run", _sch_pointer(path))
    if rx.regex is not None:
        _sch_charge(run, 1 + rx.work(len(text)) // _RX_RE_STEPS_PER_UNIT, path)
        return rx.regex.search(text) is not None
    try:
        return _rx_vm_search(rx.code, text, 0, False, run, {})  # type: ignore[arg-type]
    except _RxOverBudget:
        raise SchemaLimitExceeded(
            f"matching a pattern needed more than max_evaluations ({run.max_evaluations}) "
            "units of work", _sch_pointer(path)) from None


def _sch_branch_hints(failures: list[tuple[int, object, str]]) -> str:
    """' (branch 0: ...; branch 1: ...)' from each failed branch's first error.

    Each quoted error is cut at _SCH_HINT_CHARS: it may quote hints of its own, and
    anyOf nested ten deep once built a message of 4 million characters (3 per level).
    """
    parts = []
    for index, path, message in failures[:_SCH_BRANCH_HINTS]:
        if len(message) > _SCH_HINT_CHARS:
            message = message[:_SCH_HINT_CHARS] + "..."
        where = _sch_pointer(path)
        parts.append(f"branch {index}: {message}" + (f" at {json.dumps(where)}" if where else ""))
    more = "; ..." if len(failures) > _SCH_BRANCH_HINTS else ""
    return " (" + "; ".join(parts) + more + ")" if parts else ""


# --- the compiler -------------------------------------------------------------

class _SchCompiler:
    """Walks one schema document once; holds only per-compile state."""

    def __init__(self, root: object, dialect: str, limits: SchemaLimits) -> None:
        self.root = root
        self.dialect = dialect
        self.keywords = _SCH_KEYWORDS_2020 if dialect == "2020-12" else _SCH_KEYWORDS_07
        self.max_depth = limits.max_schema_depth
        self.nodes: dict[tuple[str, ...], _SchNode] = {}
        self.refs: list[tuple[tuple[str, ...], _SchRefCell, tuple[str, ...]]] = []
        self.max_subject = limits.max_pattern_subject
        self.regexes: dict[str, _RxMatcher] = {}
        self.subschemas = 0
        self.states = 0
        self.values = 0   # the values of enum and const, as _sch_canonical tallies them
        self.size_budget = SCHEMA_MAX_TURN_SIZE   # subschemas + pattern sizes + values this compile may add

    def refuse(self, loc: tuple[str, ...], text: str) -> SchemaUnsupported:
        """Build the exception; the message names the location."""
        where = _sch_location(loc)
        return SchemaUnsupported(f"{text} (at {where})", where)

    def exceed(self, loc: tuple[str, ...], text: str) -> SchemaLimitExceeded:
        """A compile-time limit: the message names the schema location."""
        return SchemaLimitExceeded(f"{text} (at {_sch_location(loc)})", "")

    def subschema(self, value: object, loc: tuple[str, ...], depth: int) -> _SchNode:
        if depth > self.max_depth:
            raise self.exceed(loc, f"the schema nests deeper than max_schema_depth "
                                   f"({self.max_depth})")
        self.subschemas += 1
        if self.subschemas > SCHEMA_MAX_SUBSCHEMAS:
            raise self.exceed(loc, f"the schema has more than {SCHEMA_MAX_SUBSCHEMAS} subschemas")
        self.check_size(loc)
        if isinstance(value, bool):
            node = _SchNode(value, loc)
        elif isinstance(value, dict):
            node = self.object_schema(value, loc, depth)
        else:
            raise self.refuse(loc, f"A schema must be an object or a boolean, "
                                   f"not {_sch_type_label(value)}")
        self.nodes[loc] = node
        return node

    def object_schema(self, schema: dict, loc: tuple[str, ...], depth: int) -> _SchNode:
        self.check_keys(schema, loc)
        if self.dialect == "draft-07" and "$ref" in schema:
            siblings = [k for k in schema
                        if k in self.keywords and k not in ("$ref", "$defs", "definitions")]
            if siblings:
                raise self.refuse(loc, f"under draft-07, \"$ref\" ignores its sibling "
                                       f"validation keywords ({', '.join(siblings)}), so "
                                       "the schema is ambiguous and refused")
        node = _SchNode(None, loc)
        checks = []
        for keyword, build in self.keywords.items():
            if keyword in schema:
                check = build(schema[keyword], schema, loc + (keyword,), depth, self, node)
                if check is not None:
                    checks.append(check)
        node.checks = tuple(checks)
        return node

    def check_keys(self, schema: dict, loc: tuple[str, ...]) -> None:
        """Every key of a schema object is a keyword of the subset or an annotation; else SchemaUnsupported."""
        for key in schema:
            if not isinstance(key, str):
                raise self.refuse(loc, "schema object keys must be strings")
            if key == UNREVIEWED_TOOL_KEYWORD:
                raise self.refuse(loc, f"the provider-defined tool type {_token(schema[key])} is not a version this "
                                       "tool has reviewed, so it has no input schema to check the call against")
            if key in self.keywords or key in _SCH_ANNOTATIONS or key.startswith("x-"):
                continue
            if key in ("$schema", "$id") and not loc:
                if not isinstance(schema[key], str):
                    raise self.refuse(loc + (key,), f"\"{key}\" must be a string")
                continue
            raise self.refuse(loc + (key,), f"keyword \"{key}\" is refused: {self.refusal_reason(key)}")

    def refusal_reason(self, key: str) -> str:
        """Why a keyword outside the subset is refused: the other dialect's, a known reason, or unknown."""
        other = _SCH_KEYWORDS_07 if self.dialect == "2020-12" else _SCH_KEYWORDS_2020
        if key in other:
            return f"it belongs to the other dialect, not {self.dialect}"
        return _SCH_REFUSAL_REASONS.get(key, "it is not in the supported subset (a typo, or a keyword this "
                                             "checker does not implement)")

    def schema_map(self, value: object, loc: tuple[str, ...], depth: int) -> dict:
        """An object whose values are schemas (properties, $defs, ...)."""
        if not isinstance(value, dict):
            raise self.refuse(loc, f"\"{loc[-1]}\" must be an object of schemas")
        return {name: self.subschema(sub, loc + (name,), depth + 1)
                for name, sub in value.items()}

    def schema_list(self, value: object, loc: tuple[str, ...], depth: int) -> list:
        """A non-empty array of schemas (allOf, prefixItems, ...)."""
        if not isinstance(value, list) or not value:
            raise self.refuse(loc, f"\"{loc[-1]}\" must be a non-empty array of schemas")
        return [self.subschema(sub, loc + (str(i),), depth + 1) for i, sub in enumerate(value)]

    def count(self, value: object, loc: tuple[str, ...]) -> int:
        """A non-negative integer; 5.0 is accepted as 5, true is not a number."""
        if _sch_is_number(value) and (isinstance(value, int) or (
                math.isfinite(value) and value.is_integer())) and value >= 0:  # type: ignore
            return int(value)  # type: ignore[arg-type]
        raise self.refuse(loc, f"\"{loc[-1]}\" must be a non-negative integer, "
                               f"not {_sch_brief(value)}")

    def number(self, value: object, loc: tuple[str, ...]) -> object:
        if isinstance(value, bool) and loc[-1].startswith("exclusive"):
            raise self.refuse(loc, f"\"{loc[-1]}\" must be a number; the draft-04 boolean "
                                   "form is not supported")
        if not _sch_is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
            raise self.refuse(loc, f"\"{loc[-1]}\" must be a finite number, "
                                   f"not {_sch_brief(value)}")
        return value

    def pattern(self, source: object, loc: tuple[str, ...]) -> _RxMatcher:
        if not isinstance(source, str):
            raise self.refuse(loc, "A pattern must be a string")
        if source not in self.regexes:
            try:
                matcher = _rx_compile(source, self.max_subject)
            except _RxTooBig as exc:
                raise self.exceed(loc, f"A pattern of {len(source)} code points is too large: "
                                       f"{exc}") from None
            except _RxError as exc:
                raise self.refuse(loc, f"pattern {_sch_brief(source)} is outside the "
                                       f"supported ECMA-262 regex subset: {exc}") from None
            except (re.error, OverflowError, RecursionError) as exc:
                raise self.refuse(loc, f"pattern {_sch_brief(source)} could not be "
                                       f"compiled: {exc}") from None
            self.states += matcher.states
            self.check_size(loc)
            self.regexes[source] = matcher
        return self.regexes[source]

    def check_size(self, loc: tuple[str, ...]) -> None:
        if self.subschemas + self.states + self.values > self.size_budget:
            raise self.exceed(loc, f"the subschemas, pattern sizes and enum/const values of this turn's "
                                   f"schemas add up to more than {SCHEMA_MAX_TURN_SIZE}")

    def canonical(self, value: object, loc: tuple[str, ...]) -> object:
        """The form of one enum item or const value; its values are counted before the next is read."""
        tally = [0]
        try:
            form = _sch_canonical(value, tally, lengths=False)
        except _SchNotJson as exc:
            raise self.refuse(loc, f"\"{loc[-1]}\" holds a value that is not JSON: {exc}") from None
        self.values += tally[0]
        self.check_size(loc)
        return form

    def link_refs(self) -> None:
        """Fill every $ref cell; a target must be a schema location of this document."""
        for loc, cell, tokens in self.refs:
            target = self.nodes.get(tokens)
            if target is None:
                found, doc = True, self.root
                for token in tokens:
                    if isinstance(doc, dict) and token in doc:
                        doc = doc[token]
                    elif (isinstance(doc, list) and re.fullmatch(r"0|[1-9][0-9]{0,17}", token)
                          and int(token) < len(doc)):
                        doc = doc[int(token)]
                    else:
                        found = False
                        break
                why = ("points to a value that is not a schema position" if found
                       else "points to nothing in this document")
                if tokens == ("",):
                    why += " ('#/' names the member \"\" per RFC 6901; '#' is the root)"
                raise self.refuse(loc, f"\"$ref\" {json.dumps(_sch_location(tokens))} {why}")
            cell.node = target

    def refuse_stalled_cycles(self) -> None:
        """Refuse a $ref cycle along which the instance location never changes.

        Why: such a cycle recurses forever on some instance; refusing it at
        compile time keeps evaluation total and the verdict independent of input.
        """
        state: dict[int, int] = {}   # id(node) -> 1 on the DFS path, 2 finished
        for start in list(self.nodes.values()):
            if state.get(id(start)):
                continue
            stack: list[tuple[_SchNode, int]] = [(start, 0)]
            state[id(start)] = 1
            while stack:
                node, index = stack[-1]
                if index < len(node.inplace):
                    stack[-1] = (node, index + 1)
                    edge = node.inplace[index]
                    child = edge.node if isinstance(edge, _SchRefCell) else edge
                    mark = state.get(id(child))
                    if mark == 1:
                        raise self.refuse(child.location,  # type: ignore[union-attr]
                                          "$ref cycle makes no progress: this schema reaches "
                                          "itself without moving into the instance")
                    if not mark:
                        state[id(child)] = 1
                        stack.append((child, 0))  # type: ignore[arg-type]
                else:
                    state[id(node)] = 2
                    stack.pop()


def _sch_parse_ref(value: object, loc: tuple[str, ...], comp: _SchCompiler) -> tuple[str, ...]:
    """'#' or '#/...' -> pointer tokens; everything else is refused."""
    if not isinstance(value, str):
        raise comp.refuse(loc, "\"$ref\" must be a string")
    if not value.startswith("#"):
        raise comp.refuse(loc, f"\"$ref\" {_sch_brief(value)} is not a same-document fragment; "
                               "remote and relative references are not supported")
    fragment = value[1:]
    if re.search(r"%(?![0-9A-Fa-f]{2})", fragment):
        raise comp.refuse(loc, f"\"$ref\" {_sch_brief(value)} has a malformed percent-escape")
    from urllib.parse import unquote  # only $ref needs it; kept off the start-up path

    try:
        pointer = unquote(fragment, errors="strict")
    except UnicodeDecodeError:
        raise comp.refuse(loc, f"\"$ref\" {_sch_brief(value)} percent-decodes to invalid "
                               "UTF-8") from None
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise comp.refuse(loc, f"\"$ref\" {_sch_brief(value)} is an anchor or relative pointer; "
                               "only \"#\" and \"#/...\" JSON Pointers are supported")
    tokens = []
    for raw in pointer[1:].split("/"):
        if re.search(r"~(?![01])", raw):
            raise comp.refuse(loc, f"\"$ref\" {_sch_brief(value)} has an invalid \"~\" escape")
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    return tuple(tokens)


# --- keywords: one builder per keyword ---------------------------------------
# Each builder checks the keyword's value and returns the runtime check, or
# None when the keyword needs no run-time work.  Signature:
#   (value, schema, loc, depth, compiler, node) -> _SchCheck | None

def _kw_ref(value: object, schema: dict, loc: tuple, depth: int,
            comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    cell = _SchRefCell()
    comp.refs.append((loc, cell, _sch_parse_ref(value, loc, comp)))
    node.inplace.append(cell)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        _sch_evaluate(cell.node, inst, path, run, level + 1, errs, quick)  # type: ignore
    return check


def _kw_defs(value: object, schema: dict, loc: tuple, depth: int,
             comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    comp.schema_map(value, loc, depth)   # compiled for checking and as $ref targets
    return None


def _kw_type(value: object, schema: dict, loc: tuple, depth: int,
             comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    names = [value] if isinstance(value, str) else value
    if (not isinstance(names, list) or not names
            or any(not isinstance(n, str) or n not in _SCH_TYPE_NAMES for n in names)
            or len(set(names)) != len(names)):
        upper = isinstance(names, list) and any(isinstance(n, str) and n.lower() in _SCH_TYPE_NAMES for n in names)
        raise comp.refuse(loc, "\"type\" must be a type name or a non-empty array of unique "
                               "names among " + ", ".join(sorted(_SCH_TYPE_NAMES))
                          + (" (upper-case names are Gemini's OpenAPI-style Schema: `capture --request` "
                             "converts a declaration's parameters)" if upper else ""))
    allowed = set(names)
    if "number" in allowed:
        allowed.add("integer")
    accepted = frozenset(allowed)
    label = " or ".join(names)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if _sch_type_of(inst) not in accepted:
            errs.append((path, f"expected {label}, got {_sch_type_label(inst)}"))
    return check


def _kw_enum(value: object, schema: dict, loc: tuple, depth: int,
             comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    if not isinstance(value, list):
        raise comp.refuse(loc, "\"enum\" must be an array")
    allowed = frozenset(comp.canonical(item, loc) for item in value)
    shown = ", ".join(_sch_brief(item) for item in value[:5]) + (", ..." if len(value) > 5 else "")

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        tally = [0]
        form = _sch_canonical(inst, tally)
        _sch_charge(run, tally[0], path)
        if form not in allowed:
            errs.append((path, f"{_sch_brief(inst)} is not one of the allowed values [{shown}]"))
    return check


def _kw_const(value: object, schema: dict, loc: tuple, depth: int,
              comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    expected = comp.canonical(value, loc)
    shown = _sch_brief(value)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        tally = [0]
        form = _sch_canonical(inst, tally)
        _sch_charge(run, tally[0], path)
        if form != expected:
            errs.append((path, f"{_sch_brief(inst)} is not the required constant {shown}"))
    return check


def _kw_properties(value: object, schema: dict, loc: tuple, depth: int,
                   comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    children = tuple((name, sub) for name, sub in comp.schema_map(value, loc, depth).items()
                     if not sub.trivial())

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not isinstance(inst, dict):
            return
        _sch_charge(run, len(children), path)   # each name is looked up, present or not
        for name, sub in children:
            if name in inst:
                _sch_evaluate(sub, inst[name], (path, name), run, level + 1, errs, quick)
                if quick and errs:
                    return
    return check if children else None


def _kw_pattern_properties(value: object, schema: dict, loc: tuple, depth: int,
                           comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    subs = comp.schema_map(value, loc, depth)
    rules = tuple((comp.pattern(src, loc + (src,)), sub) for src, sub in subs.items())

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not isinstance(inst, dict):
            return
        _sch_charge(run, len(inst), path)
        for key, item in inst.items():
            for rx, sub in rules:
                if _sch_search(rx, key, (path, key), run):
                    _sch_evaluate(sub, item, (path, key), run, level + 1, errs, quick)
                    if quick and errs:
                        return
    return check


def _kw_additional_properties(value: object, schema: dict, loc: tuple, depth: int,
                              comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    sub = comp.subschema(value, loc, depth + 1)
    props = schema.get("properties")
    names = frozenset(props) if isinstance(props, dict) else frozenset()
    pats = schema.get("patternProperties")
    regexes = tuple(comp.pattern(src, loc[:-1] + ("patternProperties", src))
                    for src in (pats if isinstance(pats, dict) else ()))
    if sub.trivial():
        return None

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not isinstance(inst, dict):
            return
        _sch_charge(run, len(inst), path)
        for key, item in inst.items():
            if key in names or any(_sch_search(rx, key, (path, key), run) for rx in regexes):
                continue
            if sub.verdict is False:
                errs.append(((path, key), f"property {_sch_brief(key)} is not allowed "
                                          "(additionalProperties is false)"))
            else:
                _sch_evaluate(sub, item, (path, key), run, level + 1, errs, quick)
            if errs and (quick or len(errs) >= _SCH_MAX_ERRORS):
                return
    return check


def _kw_property_names(value: object, schema: dict, loc: tuple, depth: int,
                       comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    sub = comp.subschema(value, loc, depth + 1)
    if sub.trivial():
        return None

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not isinstance(inst, dict):
            return
        for key in inst:
            found: list = []
            _sch_evaluate(sub, key, (path, key), run, level + 1, found, True)
            if found:
                errs.append(((path, key), f"property name {_sch_brief(key)} is not allowed "
                                          f"by propertyNames: {found[0][1]}"))
                if quick or len(errs) >= _SCH_MAX_ERRORS:
                    return
    return check


def _kw_required(value: object, schema: dict, loc: tuple, depth: int,
                 comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    if (not isinstance(value, list) or any(not isinstance(n, str) for n in value)
            or len(set(value)) != len(value)):
        raise comp.refuse(loc, "\"required\" must be an array of unique strings")
    names = tuple(value)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not isinstance(inst, dict):
            return
        _sch_charge(run, len(names), path)
        for name in names:
            if name not in inst:
                errs.append((path, f"required property {_sch_brief(name)} is missing"))
                if quick or len(errs) >= _SCH_MAX_ERRORS:
                    return
    return check if names else None


def _sch_items_from(sub: _SchNode, start: int) -> Optional[_SchCheck]:
    """A check applying one schema to every array item from index start on."""
    if sub.trivial():
        return None

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not isinstance(inst, list) or len(inst) <= start:
            return
        if sub.verdict is False:
            errs.append(((path, start), f"array has {len(inst)} items; only {start} "
                                        "are allowed here"))
            return
        for index in range(start, len(inst)):
            _sch_evaluate(sub, inst[index], (path, index), run, level + 1, errs, quick)
            if quick and errs:
                return
    return check


def _sch_items_tuple(subs: list) -> Optional[_SchCheck]:
    """A check applying schema i to array item i (prefixItems, draft-07 tuple items)."""
    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not isinstance(inst, list):
            return
        for index, sub in enumerate(subs[:len(inst)]):
            _sch_evaluate(sub, inst[index], (path, index), run, level + 1, errs, quick)
            if quick and errs:
                return
    return check


def _kw_prefix_items(value: object, schema: dict, loc: tuple, depth: int,
                     comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    return _sch_items_tuple(comp.schema_list(value, loc, depth))


def _kw_items_2020(value: object, schema: dict, loc: tuple, depth: int,
                   comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    if isinstance(value, list):
        raise comp.refuse(loc, "in 2020-12 \"items\" must be one schema; use \"prefixItems\" "
                               "for tuples")
    prefix = schema.get("prefixItems")
    start = len(prefix) if isinstance(prefix, list) else 0
    return _sch_items_from(comp.subschema(value, loc, depth + 1), start)


def _kw_items_07(value: object, schema: dict, loc: tuple, depth: int,
                 comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    if isinstance(value, list):
        return _sch_items_tuple(comp.schema_list(value, loc, depth))
    return _sch_items_from(comp.subschema(value, loc, depth + 1), 0)


def _kw_additional_items(value: object, schema: dict, loc: tuple, depth: int,
                         comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    sub = comp.subschema(value, loc, depth + 1)
    items = schema.get("items")
    if not isinstance(items, list):
        return None   # the spec ignores additionalItems unless items is an array
    return _sch_items_from(sub, len(items))


def _kw_unique_items(value: object, schema: dict, loc: tuple, depth: int,
                     comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    if not isinstance(value, bool):
        raise comp.refuse(loc, f"\"uniqueItems\" must be a boolean, not {_sch_brief(value)}")
    if not value:
        return None

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not isinstance(inst, list):
            return
        seen: dict[object, int] = {}
        tally = [0]
        for index, item in enumerate(inst):
            form = _sch_canonical(item, tally)
            if tally[0] >= 4096:
                _sch_charge(run, tally[0], path)
                tally[0] = 0
            if form in seen:
                errs.append(((path, index), f"item {index} equals item {seen[form]}; "
                                            "uniqueItems requires distinct items"))
                if quick or len(errs) >= _SCH_MAX_ERRORS:
                    return
            else:
                seen[form] = index
        _sch_charge(run, tally[0], path)
    return check


def _kw_pattern(value: object, schema: dict, loc: tuple, depth: int,
                comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    rx = comp.pattern(value, loc)
    shown = _sch_brief(value)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if isinstance(inst, str) and not _sch_search(rx, inst, path, run):
            errs.append((path, f"string does not match pattern {shown}"))
    return check


def _sch_count(name: str, kind: type, noun: str, unit: str, at_least: bool) -> Callable[..., Optional[_SchCheck]]:
    """Builder for the six count keywords (min/max Properties, Items, Length).

    len() counts members, items, or code points: the JSON Schema measure for
    objects, arrays and strings alike.
    """
    relation = "fewer than" if at_least else "more than"

    def build(value: object, schema: dict, loc: tuple, depth: int,
              comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
        bound = comp.count(value, loc)

        def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
                  quick: bool) -> None:
            if isinstance(inst, kind) and (len(inst) < bound if at_least else len(inst) > bound):
                errs.append((path, f"{noun} has {len(inst)} {unit}, {relation} {name} {bound}"))
        return check
    return build


_kw_min_properties = _sch_count("minProperties", dict, "object", "properties", True)
_kw_max_properties = _sch_count("maxProperties", dict, "object", "properties", False)
_kw_min_items = _sch_count("minItems", list, "array", "items", True)
_kw_max_items = _sch_count("maxItems", list, "array", "items", False)
_kw_min_length = _sch_count("minLength", str, "string", "characters", True)
_kw_max_length = _sch_count("maxLength", str, "string", "characters", False)


def _sch_bound(name: str, holds: Callable[[object, object], bool],
               relation: str) -> Callable[..., Optional[_SchCheck]]:
    """Builder for the four numeric bounds; Python compares int and float exactly."""
    def build(value: object, schema: dict, loc: tuple, depth: int,
              comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
        bound = comp.number(value, loc)

        def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
                  quick: bool) -> None:
            if _sch_is_number(inst) and not holds(inst, bound):
                errs.append((path, f"{_sch_brief(inst)} is not {relation} {bound!r} ({name})"))
        return check
    build.__name__ = f"_kw_{name}"
    build.__doc__ = f"Builder for '{name}'."
    return build


_kw_minimum = _sch_bound("minimum", lambda x, b: x >= b, "greater than or equal to")
_kw_maximum = _sch_bound("maximum", lambda x, b: x <= b, "less than or equal to")
_kw_exclusive_minimum = _sch_bound("exclusiveMinimum", lambda x, b: x > b, "greater than")
_kw_exclusive_maximum = _sch_bound("exclusiveMaximum", lambda x, b: x < b, "less than")


def _kw_multiple_of(value: object, schema: dict, loc: tuple, depth: int,
                    comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    comp.number(value, loc)
    if value <= 0:  # type: ignore[operator]
        raise comp.refuse(loc, "\"multipleOf\" must be greater than 0")
    divisor = _sch_fraction(value)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        if not _sch_is_number(inst):
            return
        if isinstance(inst, float) and not math.isfinite(inst):
            errs.append((path, "a non-finite number cannot be checked against multipleOf"))
        elif _sch_fraction(inst) % divisor != 0:
            errs.append((path, f"{_sch_brief(inst)} is not a multiple of {value!r}"))
    return check


def _kw_all_of(value: object, schema: dict, loc: tuple, depth: int,
               comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    subs = comp.schema_list(value, loc, depth)
    node.inplace.extend(subs)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        for sub in subs:
            _sch_evaluate(sub, inst, path, run, level + 1, errs, quick)
            if quick and errs:
                return
    return check


def _kw_any_of(value: object, schema: dict, loc: tuple, depth: int,
               comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    subs = comp.schema_list(value, loc, depth)
    node.inplace.extend(subs)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        failures = []
        for index, sub in enumerate(subs):
            found: list = []
            _sch_evaluate(sub, inst, path, run, level + 1, found, True)
            if not found:
                return
            failures.append((index, found[0][0], found[0][1]))
        errs.append((path, f"value matches none of the {len(subs)} anyOf branches"
                           + _sch_branch_hints(failures)))
    return check


def _kw_one_of(value: object, schema: dict, loc: tuple, depth: int,
               comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    subs = comp.schema_list(value, loc, depth)
    node.inplace.extend(subs)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        matched = []
        failures = []
        for index, sub in enumerate(subs):
            found: list = []
            _sch_evaluate(sub, inst, path, run, level + 1, found, True)
            if found:
                failures.append((index, found[0][0], found[0][1]))
            else:
                matched.append(index)
        if not matched:
            errs.append((path, f"oneOf matched 0 of {len(subs)} branches; exactly one must "
                               "match" + _sch_branch_hints(failures)))
        elif len(matched) > 1:
            errs.append((path, f"oneOf matched {len(matched)} branches "
                               f"({', '.join(map(str, matched))}); exactly one must match"))
    return check


def _kw_not(value: object, schema: dict, loc: tuple, depth: int,
            comp: _SchCompiler, node: _SchNode) -> Optional[_SchCheck]:
    sub = comp.subschema(value, loc, depth + 1)
    node.inplace.append(sub)

    def check(inst: object, path: object, run: _SchRun, level: int, errs: list,
              quick: bool) -> None:
        found: list = []
        _sch_evaluate(sub, inst, path, run, level + 1, found, True)
        if not found:
            errs.append((path, "value matches the schema under 'not'"))
    return check


# The dispatch tables.  Order is evaluation order, hence the order of errors;
# properties/patternProperties come before additionalProperties and
# prefixItems/items before additionalItems only for readability (each builder
# reads its siblings directly).
_SCH_KEYWORDS_COMMON: Mapping[str, Callable[..., Optional[_SchCheck]]] = MappingProxyType({
    "$ref": _kw_ref,
    "$defs": _kw_defs,
    "definitions": _kw_defs,
    "type": _kw_type,
    "enum": _kw_enum,
    "const": _kw_const,
    "required": _kw_required,
    "properties": _kw_properties,
    "patternProperties": _kw_pattern_properties,
    "additionalProperties": _kw_additional_properties,
    "propertyNames": _kw_property_names,
    "minProperties": _kw_min_properties,
    "maxProperties": _kw_max_properties,
    "minItems": _kw_min_items,
    "maxItems": _kw_max_items,
    "uniqueItems": _kw_unique_items,
    "minLength": _kw_min_length,
    "maxLength": _kw_max_length,
    "pattern": _kw_pattern,
    "minimum": _kw_minimum,
    "maximum": _kw_maximum,
    "exclusiveMinimum": _kw_exclusive_minimum,
    "exclusiveMaximum": _kw_exclusive_maximum,
    "multipleOf": _kw_multiple_of,
    "allOf": _kw_all_of,
    "anyOf": _kw_any_of,
    "oneOf": _kw_one_of,
    "not": _kw_not,
})
_SCH_KEYWORDS_2020: Mapping[str, Callable[..., Optional[_SchCheck]]] = MappingProxyType({
    **_SCH_KEYWORDS_COMMON, "prefixItems": _kw_prefix_items, "items": _kw_items_2020})
_SCH_KEYWORDS_07: Mapping[str, Callable[..., Optional[_SchCheck]]] = MappingProxyType({
    **_SCH_KEYWORDS_COMMON, "items": _kw_items_07, "additionalItems": _kw_additional_items})


# --- public entry points ------------------------------------------------------

def _sch_check_limits(limits: SchemaLimits) -> None:
    """Limits are programmer input; a nonsense value is a bug, not a schema problem."""
    for name in ("max_schema_depth", "max_evaluations", "max_pattern_subject"):
        value = getattr(limits, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"SchemaLimits.{name} must be a non-negative integer")


def compile_schema(schema: object, limits: SchemaLimits, size_budget: int = SCHEMA_MAX_TURN_SIZE) -> CompiledSchema:
    """Judge the whole schema once and return a reusable checker.

    Raises SchemaUnsupported for anything outside the subset or invalid, so a
    schema is either fully understood or not used at all, and
    SchemaLimitExceeded (pointer "") for a schema too large or too deep to
    judge within the documented limits.
    """
    _sch_check_limits(limits)
    dialect = "2020-12"
    if isinstance(schema, dict) and "$schema" in schema:
        uri = schema["$schema"]
        if not isinstance(uri, str) or uri not in _SCH_DIALECTS:
            raise SchemaUnsupported(
                f"\"$schema\" {_sch_brief(uri)} is not a supported dialect; use 2020-12 "
                "or draft-07 (at #/$schema)", "#/$schema")
        dialect = _SCH_DIALECTS[uri]
    comp = _SchCompiler(schema, dialect, limits)
    comp.size_budget = size_budget
    try:
        root = comp.subschema(schema, (), 0)
        comp.link_refs()
        comp.refuse_stalled_cycles()
    except RecursionError:
        raise SchemaLimitExceeded("the schema is nested too deeply for this interpreter "
                                  "(at #)", "") from None
    return CompiledSchema(dialect, root, comp.subschemas + comp.states + comp.values)


def validate_instance(compiled: CompiledSchema, instance: object,
                      limits: SchemaLimits) -> list[tuple[str, str]]:
    """Validate one JSON value; [] when valid, else (instance pointer, message) pairs.

    At most _SCH_MAX_ERRORS pairs: evaluation stops once that many are collected.

    May raise SchemaLimitExceeded; the caller must treat that as a failure.
    """
    _sch_check_limits(limits)
    return _sch_validate(compiled, instance, _SchRun(limits))


def _sch_validate(compiled: CompiledSchema, instance: object, run: _SchRun) -> list[tuple[str, str]]:
    """validate_instance with the caller's counters (run.count: the units it spent)."""
    errs: list = []
    try:
        _sch_evaluate(compiled._root, instance, None, run, 0, errs, False)
    except _SchErrorsFull:
        pass
    except RecursionError:
        raise SchemaLimitExceeded("evaluation nested too deeply for this interpreter",
                                  "") from None
    except _SchNotJson as exc:  # a library caller's instance that is not JSON (a cycle, a set...)
        raise SchemaLimitExceeded(f"the instance cannot be compared as JSON: {exc}", "") from None
    return [(_sch_pointer(path), message) for path, message in errs]


# ---------------------------------------------------------------------------
# Validation: once per call, only after terminal
# ---------------------------------------------------------------------------


def _text_problems(text: str, limits: Limits, what: str) -> list[tuple[str, str]]:
    """A call's joined text must be valid Unicode and within the size limit."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return [(INVALID_UNICODE, f"the joined {what} hold an unpaired UTF-16 surrogate")]
    if size > limits.max_argument_bytes:
        return [(LIMIT_EXCEEDED, f"the {what} exceed {limits.max_argument_bytes} bytes")]
    return []


def check_arguments(text: str, limits: Limits) -> tuple[Any, list[tuple[str, str]]]:
    """Strict-JSON checks of one call's joined arguments: (object or None, problems)."""
    problems = _text_problems(text, limits, "arguments")
    if problems:
        return None, problems
    try:
        value = parse_strict_json(text, limits)
    except JsonProblem as problem:
        return None, [(problem.code, problem.message)]
    if not isinstance(value, dict):
        return None, [(NON_OBJECT_ARGUMENTS, f"the arguments are {_describe(value)}, not a JSON object")]
    return value, []


def check_custom_input(text: str, limits: Limits) -> tuple[Any, list[tuple[str, str]]]:
    """A custom tool's free-form input is the instance itself (a string), within the size limit."""
    problems = _text_problems(text, limits, "input characters")
    return (None, problems) if problems else (text, [])


def _string_schema(schema: Any) -> bool:
    """A schema a free-form text input can be checked against: its root type is "string"."""
    return isinstance(schema, dict) and schema.get("type") == "string"


class _TurnWork:
    """Units of schema work a turn's calls have left (Limits.max_turn_evaluations), spent in call order."""

    __slots__ = ("left",)

    def __init__(self, limits: Limits) -> None:
        self.left = limits.max_turn_evaluations


def check_against_schema(compiled: Any, value: Any, limits: Limits,
                         turn: _TurnWork | None = None) -> list[tuple[str, str, str | None]]:
    """Schema problems of parsed arguments: [(code, message, pointer)], bounded by counted work.

    With turn, the call may spend at most what the turn has left (and at most max_evaluations),
    and what it spent is taken from the turn: a count, so the same turn stops at the same call
    on any machine.
    """
    turn_text = (f"this turn's schema checks needed more than max_turn_evaluations "
                 f"({limits.max_turn_evaluations}) units of work")
    budget = limits.max_evaluations
    if turn is not None:
        if turn.left <= 0:
            return [(LIMIT_EXCEEDED, turn_text + ", so this call was not checked", None)]
        budget = min(budget, turn.left)
    run = _SchRun(SchemaLimits(limits.max_schema_depth, budget, limits.max_pattern_subject))
    try:
        with _Deadline(limits.max_schema_seconds):
            errors = _sch_validate(compiled, value, run)
    except _DeadlinePassed:
        return [(LIMIT_EXCEEDED, f"schema evaluation took longer than {limits.max_schema_seconds} s "
                 "(the opt-in --max-schema-seconds)", None)]
    except SchemaLimitExceeded as exc:
        if run.count > budget and budget < limits.max_evaluations:   # the turn's budget, not the call's, ran out
            return [(LIMIT_EXCEEDED, turn_text + ", and this call's check was cut short", exc.pointer)]
        return [(LIMIT_EXCEEDED, exc.message, exc.pointer)]
    except SchemaUnsupported as exc:
        return [(UNSUPPORTED_SCHEMA, exc.message, None)]   # the message names its location
    finally:
        if turn is not None:
            turn.left -= min(run.count, budget)
    return [(SCHEMA_VIOLATION, f"{message} (at {pointer or '/'})", pointer) for pointer, message in errors[:20]]


# Schemas compiled in this process, for the turns that come after: (the limits, the schema as exact JSON
# text) -> CompiledSchema, which holds no per-call state.  Most turns of a run (a fixture folder, an
# application's StreamGate) call the same few tools.  Only small schemas made of JSON's own types are
# kept, so many and so large in all (the oldest goes first); a schema that a turn must refuse is
# compiled, and refused, every time.
_COMPILED: dict[tuple, CompiledSchema] = {}
_COMPILED_KEPT = 256        # schemas kept, at most
_COMPILED_UNITS = 65_536    # their CompiledSchema.size added up, at most
_COMPILED_SIZE = 4_096      # the size of one, at most
_COMPILED_TEXT = 16_384     # characters of one schema's JSON text, at most
_EXACT_JSON = frozenset({dict, list, str, int, float, bool, type(None)})


def _schema_key(schema: Any, slimits: SchemaLimits) -> tuple | None:
    """The key of a schema in _COMPILED, or None when it is not kept: a value of a type that is not
    JSON's own (a tuple, a subclass: its JSON text could stand for another schema), a member name
    that is not a string, or a text too long.  Exact: 1, 1.0 and true, and the order of members,
    each give their own text."""
    stack = [schema]
    count = 0
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind not in _EXACT_JSON:
            return None
        if kind is dict:
            for key in node:
                if type(key) is not str:
                    return None
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        count += 1
        if count > _COMPILED_TEXT:
            return None
    try:
        text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        return None
    if len(text) > _COMPILED_TEXT:
        return None
    return (slimits.max_schema_depth, slimits.max_evaluations, slimits.max_pattern_subject), text


def _keep_compiled(key: tuple, compiled: CompiledSchema) -> None:
    """Keep a small compiled schema in _COMPILED, the oldest going first while it is full."""
    if compiled.size > _COMPILED_SIZE:
        return
    held = sum(item.size for item in list(_COMPILED.values()))
    while _COMPILED and (len(_COMPILED) >= _COMPILED_KEPT or held + compiled.size > _COMPILED_UNITS):
        try:
            held -= _COMPILED.pop(next(iter(_COMPILED))).size
        except (KeyError, RuntimeError, StopIteration):   # another thread took it away first
            break
    _COMPILED[key] = compiled


def _compile_for_turn(schema: Any, limits: Limits, cache: dict) -> Any:
    """Compile one called tool's schema: CompiledSchema, or the exception that refused it.

    The sizes of every schema compiled for the turn (cache) add up to at most
    SCHEMA_MAX_TURN_SIZE, so work and memory stay bounded however many tools are
    called; the opt-in wall-clock budget, when given, covers compiling too (and then
    every schema is compiled anew, as its budget is the machine's time).
    """
    slimits = SchemaLimits(limits.max_schema_depth, limits.max_evaluations, limits.max_pattern_subject)
    try:
        if _nesting_exceeds(schema, 4 * limits.max_schema_depth):  # enum/const data nest too
            raise SchemaLimitExceeded(f"the schema document nests deeper than {4 * limits.max_schema_depth} "
                                      "levels (at #)", "")
        used = sum(item.size for item in cache.values() if isinstance(item, CompiledSchema))
        # kept from an earlier turn (none with the wall-clock budget), unless larger than what is left: a
        # first compile gives the refusal; compiled here and not in a helper, at the depth it always had
        key = _schema_key(schema, slimits) if limits.max_schema_seconds is None else None
        kept = None if key is None else _COMPILED.get(key)
        if kept is not None and kept.size <= SCHEMA_MAX_TURN_SIZE - used:
            compiled = kept
        else:
            with _Deadline(limits.max_schema_seconds):
                compiled = compile_schema(schema, slimits, SCHEMA_MAX_TURN_SIZE - used)
            if key is not None:
                _keep_compiled(key, compiled)
    except _DeadlinePassed:
        return SchemaLimitExceeded(f"compiling the schema took longer than {limits.max_schema_seconds} s "
                                   "(the opt-in --max-schema-seconds) (at #)", "")
    except (SchemaUnsupported, SchemaLimitExceeded) as exc:
        return exc
    if compiled.size > SCHEMA_MAX_TURN_SIZE - used:
        return SchemaLimitExceeded(f"the subschemas, pattern sizes and enum/const values of this turn's schemas "
                                   f"add up to more than {SCHEMA_MAX_TURN_SIZE} (at #)", "")
    return compiled


def validate_slots(machine: TurnMachine, tool_schemas: dict, limits: Limits) -> None:
    """Validate, once, every slot that reached its terminal; set call states.

    A slot with stream findings is still validated when it reached its
    terminal: findings only add (a reused index shows trailing_data too).
    A slot that never reached its terminal is never parsed.
    """
    schema_cache: dict[str, Any] = {}
    turn = _TurnWork(limits)   # slots in the order they opened: the same turn spends it the same way
    for slot in machine.slots.values():
        slot.arguments, unreadable = _slot_text(slot, limits)
        if slot.phase != TERMINAL:
            slot.state = BLOCKED
            continue
        # the arguments are parsed, and the schema compiled and checked, from here and not from a helper:
        # each frame more would lower how deep they may nest before the interpreter's limit (raised limits)
        found: list[tuple[str, str, str | None]] = []
        if any(_has_surrogate(part) for part in (slot.id or "", slot.name or "", slot.namespace or "")):
            found.append((INVALID_UNICODE, "the call's id, name or namespace holds an unpaired UTF-16 surrogate", None))
        value = tool = None
        if slot.kind in (FUNCTION, CUSTOM):   # other kinds: reported with their kind; the normalizer blocked them
            read = check_custom_input if slot.kind == CUSTOM else check_arguments
            value, problems = (None, [unreadable]) if unreadable is not None else read(slot.arguments, limits)
            found.extend((code, message, None) for code, message in problems)
            tool = _tool_problems(slot, tool_schemas, found)
        for code, message, pointer in found:
            machine.record(code, message, slot.terminal_position, slot.key, pointer)
        for code, message, pointer in () if tool is None else _schema_problems(tool, value, tool_schemas, limits,
                                                                                 schema_cache, turn):
            machine.record(code, message, slot.terminal_position, slot.key, pointer)
        slot.state = BLOCKED if machine.findings_for(slot) else VALIDATED


def _slot_text(slot: Slot, limits: Limits) -> tuple[str, tuple[str, str] | None]:
    """(the call's arguments as reported, why they cannot be checked or None).

    Joined fragments; or a start input (Anthropic) or a whole args object (Gemini) as its compact
    serialisation.  StreamGate may be fed objects JSON cannot hold: refused, never raised.
    """
    text, _ = _joined_parts(slot.parts)
    slot.parts = []   # (held as the text from here on)
    if text != "" or slot.initial_input is None:
        return text, None
    return slot.initial_input[1], slot.initial_input[2]   # taken when the slot opened (_input_snapshot)


def _tool_problems(slot: Slot, tool_schemas: dict, out: list[tuple[str, str, str | None]]) -> str | None:
    """The call against its tool, known and of the right kind (problems added to out); the tool whose
    schema then applies, or None."""
    tool = slot.tool_key
    if tool != slot.name and slot.kind == CUSTOM and slot.name in tool_schemas:
        # openai-agents finds a custom tool by its name alone: it would run the bare tool
        out.append((IDENTITY_COLLISION, f"custom call {_quoted(slot.name)} in namespace {_quoted(slot.namespace)}: "
                    "a bare tool of that name is declared too, and openai-agents looks custom tools up by name "
                    "alone", None))
    if tool is None:
        return None   # missing_name already says why no schema applies
    if slot.kind == CUSTOM and not _string_schema(tool_schemas.get(tool)):
        out.append((UNSUPPORTED_SCHEMA if tool in tool_schemas else UNKNOWN_TOOL,
                    f"custom tool {_quoted(tool)} takes free-form text: its input is checked only against a "
                    "schema whose root says \"type\": \"string\"" + ("" if tool in tool_schemas else
                                                                         ", and tool_schemas has none"), None))
        return None
    if tool not in tool_schemas:
        out.append((UNKNOWN_TOOL, f"tool {_quoted(tool)} is not in tool_schemas", None))
        return None
    return tool


def _schema_problems(tool: str, value: Any, tool_schemas: dict, limits: Limits, schema_cache: dict,
                     turn: _TurnWork | None) -> Iterator[tuple[str, str, str | None]]:
    """The tool's schema, compiled once per turn: usable, and satisfied by the parsed arguments (when parsed)."""
    if tool not in schema_cache:
        schema_cache[tool] = _compile_for_turn(tool_schemas[tool], limits, schema_cache)
    compiled = schema_cache[tool]
    if isinstance(compiled, SchemaUnsupported):
        yield UNSUPPORTED_SCHEMA, f"schema of {_quoted(tool)}: {compiled.message}", None   # it names its location
    elif isinstance(compiled, SchemaLimitExceeded):
        yield LIMIT_EXCEEDED, f"schema of {_quoted(tool)}: {compiled.message}", None
    elif value is not None:
        yield from check_against_schema(compiled, value, limits, turn)


def check_hosted_names(machine: TurnMachine, tool_schemas: dict, request: RequestContext | None) -> None:
    """A hosted use told apart from a client call by its name alone must not share a declared tool's name.

    A reader that dispatches by name (the Vercel AI SDK on Bedrock) would run the
    provider's own tool use as the application's tool of that name.
    """
    declared = set(tool_schemas) | (set(request.tools) if request is not None and request.tools else set())
    for name, position in sorted(machine.hosted_by_name.items(), key=lambda item: item[1]):
        if name in declared:
            machine.record(IDENTITY_COLLISION, f"the provider's own tool use {_quoted(name)} has the name of a "
                           "client tool this turn declares: a reader that dispatches by name (the Vercel AI SDK) "
                           "would run it as that client tool", position)


def check_request(machine: TurnMachine, request: RequestContext) -> None:
    """Each call the request's tool controls did not allow is a request_violation.

    Runs after validation, on every slot with a name (a slot without one has
    missing_name already).  The finding sits at the call's terminal, or at the
    end of the stream for a call that never reached one.
    """
    for count, slot in enumerate(sorted(machine.slots.values(), key=slot_order), 1):
        for text in _request_problems(request, slot, count, len(machine.slots)):
            machine.record(REQUEST_VIOLATION, text, slot.terminal_position, slot.key)
            slot.state = BLOCKED


def _request_problems(request: RequestContext, slot: Slot, count: int, calls: int) -> Iterator[str]:
    """What the request's tool controls say of the count-th call of a turn of that many calls."""
    tool = slot.tool_key
    if request.none:
        yield "tool_choice is \"none\", yet the turn calls a tool"
    elif request.allowed is not None and tool is not None and tool not in request.allowed:
        yield f"{request.choice_text}, not {_quoted(tool)}"
    elif request.forced is not None and tool == request.forced and slot.kind != request.forced_kind:
        yield f"{request.choice_text}, not a {slot.kind} call"
    if request.tools is not None and tool is not None and tool not in request.tools:
        yield f"tool {_quoted(tool)} is not in the request's tool list"
    if request.single and count == 2:
        yield f"the request allows one call (no parallel tool calls), but the turn has {calls}"


# ---------------------------------------------------------------------------
# Gate and report
# ---------------------------------------------------------------------------


# --- the streaming reader: a stream list validated while it is read (StreamGate.feed_text) ----

_ITEM_END = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")
# Where one object item of a list may end and the next begin.  Only a candidate: the
# same characters occur inside strings and nested lists.
_ITEM_BOUNDARY = re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{")


# The same for a list of other items (a hostile stream of numbers or strings): a comma
# after a character that can end a value (not after an escaped quote).
_ANY_BOUNDARY = re.compile(r'(?<=[0-9el\]}"])(?<!\\")[ \t\n\r]*,[ \t\n\r]*')


_LIST_BOUNDARY = re.compile(r"(?<=\])[ \t\n\r]*,[ \t\n\r]*(?=\[)")


_BATCH_CHARS = 1 << 15


# See _ArrayItems: a recognised run of fewer than _SHORT_RUN_ITEMS items turns runs off for a
# batch; where no run starts, batches start at _RUN_BATCH_CHARS, so that one is looked for again soon.
_SHORT_RUN_ITEMS = 16


_RUN_BATCH_CHARS = 1 << 10


_RUNS_MIN_CHARS = 1 << 15  # runs are looked for only in more text than this


_NEVER = 1 << 62   # a position no text reaches


class _ArrayItems:
    """The items of the JSON array at text[start] (a "["), parsed a batch at a time.

    Iterating yields each item once; afterwards `end` is the position after
    the closing "]".  Anything unexpected raises _NotStreamable.

    Why batches: one parser call per item costs about a fifth of the parse
    itself when items are small.  A batch is the text up to a candidate
    boundary "}, {" some 32 KiB on (any comma when the batch does not start
    with an object), parsed as one list "[...]" (inside the pad, see _PAD).  A candidate
    inside a string leaves that string open, and one inside a nested value
    leaves a bracket open, so the batch is then not one complete list and
    fails to parse; only then are those items read one at a time.  A batch
    that parses is exactly the items the whole list holds there.

    runs(text, pos), when given and more than _RUNS_MIN_CHARS of text are
    left (runs_min: a caller's own bound), is asked first wherever a batch or an item would start.  It may
    answer (run, end, count): one object standing for the count items of
    text[pos:end] (the caller knows what it stands for; see FragmentRun),
    which is yielded in their place.  Where runs declines, the batch is
    short (_RUN_BATCH_CHARS), so that a run starting soon is not parsed item
    by item; each further decline doubles that length, up to a full batch,
    and a run brings it back.  The item after a run is where the run
    stopped, so it is not asked about: it starts a short batch.  A run of
    fewer than _SHORT_RUN_ITEMS items (interleaved blocks) costs more than
    it saves, so after one, runs rest for a full batch.

    closed: the list's "]" ends text (StreamGate.feed_bytes's pieces), so a
    batch that finds no candidate boundary left runs to it, rather than the
    items after its start going one by one.

    window: text is that _TextWindow's (validate_bytes), slid on whenever less
    than _WINDOW_AHEAD characters are left ahead (then text, and `end`, are
    the new window's).  Batches, runs and items are read in the window as
    they are in a whole text: a run stops at the window's end (its last event
    cut there is not read); an item that ends near the window's end (or fails
    to parse there) is read again once the window is grown from it, so an
    item larger than a window is read whole.
    """

    def __init__(self, text: str, start: int, scan: Callable[[str, int], tuple[Any, int]],
                 runs: Callable[[str, int], tuple[Any, int, int] | None] | None = None,
                 runs_min: int | None = None, closed: bool = False, window: _TextWindow | None = None) -> None:
        self.text, self.start, self.scan, self.runs, self.runs_min = text, start, scan, runs, runs_min
        self.closed, self.window = closed, window
        self.end = -1

    def __iter__(self) -> Iterator[Any]:
        text, scan, runs, window = self.text, self.scan, self.runs, self.window
        pos = _WS_RUN.match(text, self.start + 1).end()
        if text.startswith("]", pos):
            self.end = pos + 1
            return
        batch_from = pos  # after a failed candidate, items go one by one up to it
        # Where runs(text, pos) is next asked; past the end: never (a short stream is a batch or two).
        runs_min = _RUNS_MIN_CHARS if self.runs_min is None else self.runs_min
        left = len(text) - pos + (0 if window is None else len(window.data) - window.done)
        runs_from = pos if runs is not None and left > runs_min else _NEVER
        short_batch = min(_RUN_BATCH_CHARS, _BATCH_CHARS)
        run_batch = short_batch  # the length of the batch after the next decline
        length = _BATCH_CHARS    # the length of the next batch
        while True:
            if window is not None and len(text) - pos < _WINDOW_AHEAD and not window.eof:
                text, shift = "", pos   # (the old window is freed as it slides)
                pos = self._slide(pos, 0)
                text = self.text
                batch_from, runs_from = batch_from - shift, runs_from - shift
            count = 0  # the items of a run read at pos, if any
            if pos >= runs_from:
                hit = runs(text, pos)
                if hit is None:
                    length, run_batch = run_batch, min(2 * run_batch, _BATCH_CHARS)
                else:
                    run, pos, count = hit
                    yield run
            if not count:
                if pos >= batch_from:
                    batch, reach = self._batch(pos, length)
                    length = _BATCH_CHARS
                    if batch is not None:
                        yield from batch
                        if reach < 0:   # (closed: the batch ran to the "]" that ends text)
                            self.end = len(text)
                            return
                        pos = reach  # the first character of the next item
                        continue
                    batch_from = reach
                try:
                    item, end = _scan_padded(text, pos, scan)
                except (JsonProblem, ValueError, RecursionError, StopIteration):
                    if window is None or window.eof:
                        raise _NotStreamable from None
                    end = len(text)
                if window is not None and len(text) - end < _WINDOW_SLACK and not window.eof:
                    # cut by the window's end, or too close to it: read again in a grown window
                    size, text, shift = len(text) - pos, "", pos
                    pos = self._slide(pos, size)
                    text = self.text
                    batch_from, runs_from = batch_from - shift, runs_from - shift
                    continue
                if window is not None and len(text) > 4 * (_WINDOW_BYTES + _WINDOW_AHEAD):
                    text, shift = "", end   # a window grown for a large item: slid past it (and freed)
                    pos = self._slide(end, 0)
                    text = self.text
                    batch_from, runs_from = batch_from - shift, runs_from - shift
                else:
                    pos = end
                yield item
            elif window is not None and len(text) - pos < _WINDOW_SLACK and not window.eof:
                # a run that stopped near the window's end: its separator is read in the next
                text, shift = "", pos
                pos = self._slide(pos, 0)
                text = self.text
                batch_from, runs_from = batch_from - shift, runs_from - shift
            pos = self._next_item(pos)
            if pos < 0:
                return
            if count:
                # The item after a run is where the run stopped: not asked again.  After a
                # short run (it did not pay), runs rest for a full batch; else that item
                # starts a short batch.
                run_batch = short_batch
                if count < _SHORT_RUN_ITEMS:
                    runs_from, length = pos + _BATCH_CHARS, _BATCH_CHARS
                else:
                    runs_from, length = pos + 1, short_batch


    def _slide(self, pos: int, size: int) -> int:
        """The window slid on from pos (see _TextWindow.slide), its text now self.text; pos's place in it."""
        self.text = ""
        pos = self.window.slide(pos, size)
        self.text = self.window.text
        return pos

    def _batch(self, pos: int, length: int) -> tuple[list | None, int]:
        """The items from pos to a candidate boundary some length on, parsed as one list: (the items,
        the first character of the next item, -1 after the list's end), or (None, the position up to which
        items go one by one)."""
        text = self.text
        is_object = text.startswith("{", pos)
        search = (_ITEM_BOUNDARY if is_object else _LIST_BOUNDARY if text.startswith("[", pos)
                  else _ANY_BOUNDARY).search
        cut = search(text, pos + length)
        if cut is not None:
            piece_end, next_pos = (cut.start() + 1, cut.end() - 1) if is_object else (cut.start(), cut.end())
        elif self.closed:
            piece_end, next_pos = len(text) - 1, -1
        else:
            return None, len(text)
        wrapped = _PAD_OPEN + "[" + text[pos:piece_end] + "]" + _PAD_CLOSE
        try:
            batch, end = self.scan(wrapped, 0)
            batch = _unpad(batch) if end == len(wrapped) else None
        except (_NotStreamable, JsonProblem, ValueError, RecursionError, StopIteration):
            batch = None
        return (batch, next_pos) if batch is not None else (None, len(text) if cut is None else cut.end())

    def _next_item(self, pos: int) -> int:
        """The first character of the item after the one that ends at pos; -1 after the closing "]"
        (then `end` is set)."""
        text = self.text
        if text.startswith(",", pos) and not text.startswith(_JSON_WS_CHARS, pos + 1):
            return pos + 1  # compact JSON: the next item starts right after the comma
        sep = _ITEM_END.match(text, pos)
        if sep is None:
            raise _NotStreamable
        if sep.group(1) == "]":
            self.end = sep.end()
            return -1
        return sep.end()


def _no_plain_fragment(item: Any) -> None:
    """For normalizers without a plain_fragment() fast path."""
    return None


def _no_plain_object(item: Any, pos: int) -> None:
    """For normalizers without a plain_object() fast path (an SDK object's plain fragment read from its attributes)."""
    return None


def _no_events() -> tuple:
    """For normalizers without end-of-stream rules of their own."""
    return ()


# --- a raw body read as it arrives (StreamGate.feed_bytes) -------------------------------------
#
# The body is read as capture reads it (_capture_body), by the same code, in pieces that end where
# no unit is pending: an SSE piece after a blank line (at its LF), a JSON Lines piece after an LF, an
# event-stream piece after a whole frame, a JSON list piece after a whole character.  Each piece goes
# through capture's readers (_sse_events, _json_lines_iter, _eventstream_frames, the room's line
# checks, its framing's checking stages), its lines, frames and bytes numbered after the pieces
# before it, and the payloads that pass are fed at once.  A CaptureError is held by rank, as capture
# would raise it: the body's decoding, its byte order mark, a whole-document refusal, the room's
# line checks, the framing, then the stages in order (see _staged); the first of a rank wins.  Once
# one is held nothing more is fed (the turn is blocked), and later pieces are read only as far as an
# error of a better rank could still come from them.

_RANK_DECODE, _RANK_BOM, _RANK_WHOLE, _RANK_CHECK = range(4)   # a room's check i ranks _RANK_CHECK + i
_RANK_FRAMING, _RANK_STAGE, _RANK_NONE = 16, 17, 1 << 30       # stage k ranks _RANK_STAGE + k

_BODY_UNDECIDED, _BODY_SSE, _BODY_LINES, _BODY_LIST, _BODY_FRAMES = range(5)
_UTF8_BOM = b"\xef\xbb\xbf"
_BODY_UNITS = {_BODY_UNDECIDED: "body head", _BODY_SSE: "SSE event", _BODY_LINES: "line",
               _BODY_LIST: "JSON list item", _BODY_FRAMES: "event-stream frame"}

# A piece of SSE events that are all plain (_SSE_PLAIN_EVENT), read at once by StreamGate.feed_bytes; one
# way to match a line, so a piece that fails to match fails in linear time.
_SSE_PLAIN_RUN = r"(?:(?:event:[^\n]*\n)?data:[^\n]*\n\n)*"

# Where an SSE blank line ends at an LF: its two line ends are LF LF, LF CRLF or CR CRLF.
_SSE_BLANK_ENDS = (b"\n\n", b"\n\r\n", b"\r\r\n")

# The JSON list's state before what is left to read -> the text that puts Python's parser in it.
_LIST_PREFIX = {"first": "[", "item": "[0,", "sep": "[0"}


def _line_ends(text: str) -> int:
    """How many lines text ends (LF, CRLF or CR)."""
    return text.count("\n") + (text.count("\r") - text.count("\r\n") if "\r" in text else 0)


def _sse_named(text: str) -> tuple[str, int, set[str]] | None:
    """A piece of SSE events each of exactly two lines, "event: NAME" and "data: {"type":"NAME"..." (LF
    ends, the name without quote or backslash, so the data's type is the event's name once it parses
    as an object), read with one str.split per name: (their data joined by commas, how many events,
    their names), or None for anything else (StreamGate.feed_bytes then checks event by event)."""
    if len(text) < 4 or not text.startswith("event: ") or not text.endswith("\n\n"):
        return None
    rest, count, names = "\n\n" + text[:-2], 0, set()
    while "\n" in rest:
        at = rest.find("\n\nevent: ")
        end = rest.find("\n", at + 9) if at >= 0 else -1
        name = rest[at + 9:end]
        if end < 0 or not name or name in names or '"' in name or "\\" in name:
            return None
        names.add(name)
        parts = rest.split(f'\n\nevent: {name}\ndata: {{"type":"{name}"')   # (one pass, where replace takes two)
        count += len(parts) - 1
        rest = f',{{"type":"{name}"'.join(parts)
    return (rest[1:], count, names) if count >= 2 else None


def _sse_unnamed(text: str) -> tuple[str, int, set[str]] | None:
    """A piece of SSE events each of exactly one line "data: ..." (LF ends), read with one str.split: as
    _sse_named answers (the names: {""}, none), or None for anything else."""
    if not text.startswith("data: ") or not text.endswith("\n\n"):
        return None
    parts = text[6:-2].split("\n\ndata: ")
    joined = ",".join(parts)
    if "\n" in joined:
        return None
    return (joined, len(parts), {""}) if len(parts) >= 2 else None


def _list_item_pending(exc: BaseException, size: int) -> bool:
    """Whether an item that failed to parse in size characters may still parse once more come: the
    error is an unterminated string, or lies near the end (a literal, a number or an escape cut short)."""
    return isinstance(exc, json.JSONDecodeError) and (exc.msg.startswith("Unterminated string")
                                                      or exc.pos >= size - 10)


def _longest_unit(data: bytes, events: bool) -> int:
    """The size in bytes of the longest unit data holds: an SSE event (events: its lines up to a blank line) or
    a line; line ends at a unit's ends are not counted, and one inside an event counts one byte.  So a unit
    has one size however the body is cut (max_frame_bytes)."""
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    units = re.split(rb"\n\n+", text) if events else text.split(b"\n")
    return max(len(unit.strip(b"\n")) for unit in units)


class _BodyReader:
    """One raw HTTP body of a profile read as it arrives (StreamGate.feed_bytes): push() each piece of
    bytes, end() at the end of the body; feed(payloads) gets the payloads that pass, a piece's at once.
    What capture would refuse the body for is end()'s Finding (unsupported_event, capture's message);
    a body or a pending unit beyond its limit is limit_exceeded, its buffers dropped."""

    def __init__(self, row: Profile, limits: Limits, feed: Callable[[list], None],
                 runs: Callable[[str, int], tuple[Any, int, int] | None] | None = None,
                 sse_runs: Callable[[str, int], tuple[Any, int, int] | None] | None = None,
                 sse_lead: str = "") -> None:
        self.row, self.limits, self.feed, self.runs = row, limits, feed, runs
        self.sse_runs = sse_runs     # the room's reader of runs of fragments in SSE text (see _sse_runs)
        self.sse_lead = sse_lead     # how an event that may start one begins (see _sse_around_runs)
        self.scan = _strict_decoder().scan_once
        self.kind = _BODY_UNDECIDED
        self.buf = bytearray()       # bytes not in a piece yet
        self.scanned = 0             # of buf, searched for an SSE cut already
        self.size = self.offset = 0  # bytes pushed; bytes in pieces read
        self.lines = self.frames = 0  # line ends, frames in pieces read
        self.whole = 0               # whole frames in the piece being cut
        self.plain: tuple[list[str], list[bytearray]] | None = None   # their members and payloads (_frames_cut)
        self.preludes: set[tuple[int, int, int]] = set()   # frame preludes checked already (at most 256 held)
        self.read_lines = 0          # SSE: the lines of the piece being read, when its plain way knows them
        self.content = False         # a byte other than JSON whitespace came
        self.rank, self.error = _RANK_NONE, None
        self.limit: Finding | None = None
        self.count = 0               # units read: events, payloads, frames
        self.check_shape = _shape_stage(row)
        self.stages: list[Callable[[Any, Any], Any]] = []
        self.deep = "an event nests too deeply to process"
        self.state = _SseState()
        self.convert = False         # frames: a stage converts each event into (payload, text)
        self.parse: Callable[[str, str], Any] | None = None
        self.unwrap: Callable[..., str | None] | None = None
        self.unwrap_all: Callable[[list[str], list], str | None] | None = None
        self.head: str | None = ""   # JSON Lines: the text held while the body may be one document
        self.first: tuple[Any, int, int] | None = None
        self.doubt = False           # JSON Lines: the first value runs past its line (an error is certain)
        self.parts: list[str] = []   # JSON list: the text after its last state change, in pieces
        self.held = 0                # their length
        self.retry_at = 0            # held text an item that did not parse yet waits for
        self.list_state, self.base, self.lf, self.last_lf = "open", 0, 0, -1
        self.list_end: tuple[int, int] | None = None   # after its "]": (character, its line)

    @property
    def blocked(self) -> bool:
        return self.rank < _RANK_NONE or self.limit is not None or self.doubt

    def push(self, data: bytes | bytearray | memoryview) -> None:
        if isinstance(data, memoryview):
            data = data.tobytes()   # (any shape or format: its bytes)
        self.size += len(data)
        if self.limit is not None or self.rank == _RANK_DECODE:
            return   # only counted
        if self.size > self.limits.max_input_bytes:
            self._over(f"the body is larger than {self.limits.max_input_bytes} bytes (max_input_bytes)")
            return
        self.buf += data
        if not self.content:
            self.content = bool(bytes(data).strip(b" \t\r\n"))
        if self.kind == _BODY_UNDECIDED and not self._decide(False):
            return
        self._read(False)
        if self.limit is None and len(self.buf) + self.held + len(self.head or "") > self.limits.max_frame_bytes:
            self._pending_over()

    def _pending_over(self) -> None:
        """A unit still pending is limit_exceeded when it is larger than max_frame_bytes, measured as a whole
        unit is (_longest_unit; a JSON list item: its UTF-8 bytes, separators before it not counted)."""
        most = self.limits.max_frame_bytes
        if self.kind == _BODY_LIST:
            if self.retry_at:   # items that came whole since the last try are read (and measured) first
                self.retry_at = 0
                self._list_piece("", False)
                if self.limit is not None:
                    return
            size = len("".join(self.parts).lstrip(" \t\r\n,[").encode("utf-8", "surrogatepass")) + len(self.buf)
        elif self.kind == _BODY_FRAMES:
            size = len(self.buf) + self.held
        else:
            size = _longest_unit((self.head or "").encode("utf-8", "surrogatepass") + bytes(self.buf),
                                 self.kind == _BODY_SSE)
        if size > most:
            self._over(f"one {_BODY_UNITS[self.kind]} of the body is larger than {most} bytes (max_frame_bytes)")

    def _unit_over(self, size: int) -> bool:
        """Whether a whole unit of size bytes is beyond max_frame_bytes (then limit_exceeded, as when it came
        in pieces and was held pending)."""
        most = self.limits.max_frame_bytes
        if size <= most:
            return False
        self._over(f"one {_BODY_UNITS[self.kind]} of the body is larger than {most} bytes (max_frame_bytes)")
        return True

    def end(self) -> Finding | None:
        """The end of the body: what is left is read; the Finding capture's refusal (or a limit) makes, or None."""
        if self.limit is not None:
            return self.limit
        if not self.content:
            return Finding(UNSUPPORTED_EVENT, "the body is empty: nothing was captured")
        if self.kind == _BODY_UNDECIDED:
            self._decide(True)
        self._read(True)
        if self.rank == _RANK_NONE and not self.count and self.kind != _BODY_FRAMES:
            if self.kind != _BODY_SSE:
                self._hold(_RANK_STAGE, CaptureError("the body holds no payloads"))
            elif not self.state.done:
                self._hold(_RANK_STAGE, CaptureError("the body holds no data events (an SSE body has \"data:\" lines)"))
        return None if self.error is None else Finding(UNSUPPORTED_EVENT, str(self.error))

    def _over(self, message: str) -> None:
        self.limit = Finding(LIMIT_EXCEEDED, message)
        self._drop()

    def _drop(self) -> None:
        self.buf, self.parts, self.held, self.head = bytearray(), [], 0, None

    def _hold(self, rank: int, error: CaptureError) -> None:
        if rank < self.rank:
            self.rank, self.error = rank, error
            if rank == _RANK_DECODE:
                self._drop()

    def _decide(self, final: bool) -> bool:
        """The body's kind, as _capture_body chooses it, once enough came (or at its end); False: not yet."""
        head = bytes(self.buf[:_JSON_HEAD_BYTES]).lstrip(b" \t\r\n")
        if head[:1] in (b"[", b"{"):
            self.kind = _BODY_LIST if head[:1] == b"[" else _BODY_LINES
            self.stages, self.deep = _json_checks(self.check_shape), "a payload nests too deeply to process"
            return True
        if not final and not head and len(self.buf) < _JSON_HEAD_BYTES:
            return False
        binary = self.row.capture.binary_body
        if binary is not None:
            if not final and len(self.buf) < 12:
                return False
            read = binary(bytes(self.buf[:12]), False)
            if read is not None:
                self.kind, self.convert, self.parse = _BODY_FRAMES, read.convert is not None, read.parse
                self.unwrap, self.unwrap_all = read.unwrap, read.unwrap_all
                self.stages = _frame_checks(read.convert, self.check_shape)
                return True
        self.kind, self.stages = _BODY_SSE, _sse_checks(self.row, self.check_shape)
        if self.buf.startswith(_UTF8_BOM):   # held before the first event is whole
            try:
                _no_bom(_UTF8_BOM.decode("utf-8"))
            except CaptureError as exc:
                self._hold(_RANK_BOM, exc)
        return True

    def _read(self, final: bool) -> None:
        """Read the pieces that came whole (at the end, all that is left)."""
        if self.rank == _RANK_DECODE or (self.kind == _BODY_FRAMES and self.rank <= _RANK_FRAMING):
            self.buf = bytearray()   # nothing later can outrank what is held
            return
        buf = self.buf
        if final:
            cut, self.plain = len(buf), None
        elif self.kind == _BODY_SSE:
            start, cut = max(0, self.scanned - 2), -1
            # (one that ends later starts at or after the last LF LF; the others hold a CR: none, none of them)
            for mark in _SSE_BLANK_ENDS if buf.find(b"\r", start) >= 0 else _SSE_BLANK_ENDS[:1]:
                at = buf.rfind(mark, start)
                if at >= 0:
                    cut, start = max(cut, at + len(mark)), max(start, at)
            self.scanned = len(buf)
        elif self.kind == _BODY_LINES:
            cut = buf.rfind(b"\n", self.scanned) + 1
            self.scanned = len(buf)
        elif self.kind == _BODY_LIST:
            cut = _whole_characters(buf)
        else:
            cut = self._frames_cut()
        if cut <= 0 and not (final and self.kind in (_BODY_LINES, _BODY_LIST)):
            return   # (at the end, a JSON body's rules still apply to what was read)
        piece = bytes(buf[:cut])
        del buf[:cut]
        self.scanned = max(0, self.scanned - cut)
        if self.kind == _BODY_FRAMES:
            self._frames_piece(piece)
            return
        if (self.kind in (_BODY_SSE, _BODY_LINES) and len(piece) > self.limits.max_frame_bytes
                and self._unit_over(_longest_unit(piece, self.kind == _BODY_SSE))):
            return   # units that came whole are measured as pending ones are: the verdict is the split's
        first_line = self.lines
        text = self._text(piece, self.kind != _BODY_SSE)
        if text is None:
            return
        if self.kind == _BODY_SSE:
            self._sse_piece(text, first_line)
        elif self.kind == _BODY_LINES:
            self._lines_text(text, first_line, final)
        else:
            self._list_piece(text, final)

    def _text(self, piece: bytes, count: bool = True) -> str | None:
        """The piece's text, its lines counted unless count is False (SSE: _sse_piece counts them)."""
        first_byte, first_line = self.offset, self.lines
        self.offset += len(piece)
        try:
            text = _utf8_text(piece, first_byte, first_line)
        except CaptureError as exc:
            self._hold(_RANK_DECODE, exc)
            return None
        if count:
            self.lines += _line_ends(text)
        if not first_byte:
            try:
                _no_bom(text)
            except CaptureError as exc:
                self._hold(_RANK_BOM, exc)
        return text

    def _run(self, items: Iterable[tuple[Any, Any]]) -> None:
        """_staged over a piece's items, the stages after an error held already left out; the payloads
        that pass fed."""
        passed: list = []

        def counted() -> Iterator[tuple[Any, Any]]:
            for item in items:
                self.count += 1
                yield item

        try:
            _staged(counted(), self.stages, passed.append, self.deep,
                    until=min(len(self.stages), self.rank - _RANK_STAGE))
        except CaptureError as exc:
            stage = getattr(exc, "stage", None)
            self._hold(_RANK_FRAMING if stage is None else _RANK_STAGE + stage, exc)
        if passed and self.rank == _RANK_NONE:
            self.feed([value[0] for value in passed] if self.convert else passed)

    def _checked(self, checks: tuple[Callable[[str, int], None], ...], text: str, first_line: int) -> bool:
        """The room's line checks of a piece, each at its rank (an error held when one fails); whether the
        piece's framing is still to read."""
        for number, check in enumerate(checks):
            if _RANK_CHECK + number >= self.rank:
                break
            try:
                check(text, first_line)
            except CaptureError as exc:
                self._hold(_RANK_CHECK + number, exc)
        return self.rank > _RANK_FRAMING

    def _sse_piece(self, text: str, first_line: int) -> None:
        self.read_lines = 0   # (set by _sse_plain when it knows them)
        if not self._checked(self.row.capture.check_sse_text, text, first_line):
            self.lines += _line_ends(text)
            return
        if self.sse_runs is not None and "\r" not in text:
            text = self._sse_around_runs(text)
            if not text:
                return
            first_line, self.read_lines = self.lines, 0
        if not self._sse_plain(text):
            self._run((event, event) for event in _sse_events(text, self.state, None, first_line))
        self.lines += self.read_lines or _line_ends(text)

    def _sse_around_runs(self, text: str) -> str:
        """A piece (LF ends) whose events start with the room's runs of fragments (see _sse_runs), or come to
        them: the events before an event that may start a run (sse_lead) read as a piece of their own (as if
        the body had been cut there), the runs from there fed, and the rest returned, to read as a piece of
        its own.  A piece that starts with such an event that starts no run is returned whole; in one that
        does not, a few more are tried, each after the next event of another kind."""
        lead, tries, skip = self.sse_lead, 4, False
        while tries and text and self.rank == _RANK_NONE and not self.state.done and lead:
            tries -= 1
            if not text.startswith(lead):
                skip, at = True, text.find("\n\n" + lead)
                if at < 0:
                    break
                self._sse_part(text[:at + 2])
                text = text[at + 2:]
                continue
            end, count = self._sse_runs_read(text, False)
            if count:
                self.lines += 3 * count   # (each event its two lines and a blank one)
                text = text[end:]
                continue
            other = _compiled("\n\n(?!" + re.escape(lead) + ")").search(text) if skip else None
            if other is None or other.end() == len(text):
                break
            self._sse_part(text[:other.end()])
            text = text[other.end():]
        return text

    def _sse_part(self, text: str) -> None:
        """Events at the start of a piece, read as a piece of their own (their checks were made with the piece's)."""
        first_line, self.read_lines = self.lines, 0
        if not self._sse_plain(text):
            self._run((event, event) for event in _sse_events(text, self.state, None, first_line))
        self.lines += self.read_lines or _line_ends(text)

    def _sse_plain(self, text: str) -> bool:
        """A piece of plain events only (lines end in LF or CRLF; no comment, id or sentinel): their data read
        as one JSON list, as validate_bytes reads a stream list, and fed when each passes what _sse_checks
        asks (an object whose type is the event's name, the profile's shape, the room's event checks);
        False (nothing done) for anything else, which goes the exact way."""
        if self.rank != _RANK_NONE or self.state.done:
            return False
        if "\r" in text:
            text = text.replace("\r\n", "\n")   # CRLF lines are the same lines
            if "\r" in text:
                return False
            if self.sse_runs is not None and self._sse_runs(text):   # (LF ones: see _sse_around_runs)
                return True
        named = _sse_named(text) if text.startswith("e") else _sse_unnamed(text)
        if named is not None:
            joined, count, kinds = named
            values, whole = self._plain_values(joined)
            if values is None or not whole or (len(values) != count or set(map(type, values)) != {dict}) and (
                    _items_stood_for(values) != count):
                return False
            if not self._plain_fed(kinds, values, count):
                return False
            self.read_lines = (2 if "" in kinds else 3) * count   # (each event its lines and a blank one)
            return True
        if _compiled(_SSE_PLAIN_RUN).fullmatch(text) is None:
            return False
        pairs = _compiled(_SSE_PLAIN_EVENT).findall(text)
        names = [name for name, _ in pairs]
        datas = [data for _, data in pairs]
        if len(pairs) < 2 or _SSE_DONE in datas:
            return False
        values, whole = self._plain_values(",".join(datas))
        if values is None or not whole:
            return False
        if len(values) == len(pairs) and set(map(type, values)) == {dict}:   # no run: each value is its event's
            if any(names) and ("" in names or [value.get("type", name) for value, name in zip(values, names)] != names):
                return False   # (a named event whose data has another type, or unnamed ones among named)
            return self._plain_fed(names, values, len(pairs))
        at = 0
        for value in values:
            if value.__class__ is FragmentRun:
                size, sample = len(value.pieces), value.item(value.pieces[0])
            elif value.__class__ is dict:
                size, sample = 1, value
            else:
                return False
            if at + size > len(pairs):
                return False
            kinds = {names[at]} if size == 1 else set(names[at:at + size])
            kinds.discard("")
            if kinds and "type" in sample and kinds != {sample["type"]}:
                return False
            at += size
        return at == len(pairs) and self._plain_fed(names, values, at)

    def _sse_runs(self, text: str) -> bool:
        """A piece (LF ends) that is nothing but runs of fragments the room reads straight from the SSE
        text: fed (see _sse_runs_read); False (nothing done) for anything else."""
        end, count = self._sse_runs_read(text, True)
        if not count:
            return False
        self.read_lines = 3 * count   # (each event its two lines and a blank one)
        return True

    def _sse_runs_read(self, text: str, whole: bool) -> tuple[int, int]:
        """The runs of fragments the room reads straight from the SSE text (sse_runs: answers as _ArrayItems's
        runs, the end after a run's last data line, each event named by its data's type) from the piece's
        start, fed as _sse_plain feeds its values: (where they end, after a blank line; how many events).
        (0, 0), nothing done, for fewer than two events, for a run of fewer than _SHORT_RUN_ITEMS events
        before the piece's end (interleaved blocks: they cost more than they save), and, when whole, unless
        they are all of the piece."""
        runs, size = self.sse_runs, len(text)
        values, names, pos, count, end = [], set(), 0, 0, 0
        while pos < size:
            hit = runs(text, pos)
            if hit is None:
                break
            run, at, items = hit
            if not text.startswith("\n\n", at) or items < _SHORT_RUN_ITEMS and at + 2 < size:
                break   # (short runs, interleaved blocks, cost more than they save)
            pos = at + 2
            values.append(run)
            names.add(run.item(run.pieces[0]).get("type", ""))
            count += items
        if count < 2 or whole and pos < size or not self._plain_fed(list(names), values, count):
            return 0, 0
        return pos, count

    def _plain_fed(self, names: list[str], values: list, count: int) -> bool:
        """Feed the values of a piece's plain events once the profile's shape and the room's event checks
        pass them."""
        if not self._shapes_pass(values):
            return False
        check = self.row.capture.check_sse_events
        if check is not None:
            try:
                check([_SseEvent(0, (0,), name or None, "") for name in set(names)])   # (see CaptureRules)
            except CaptureError:
                return False
        self.count += count
        self.feed(values)
        return True

    def _shapes_pass(self, values: list) -> bool:
        """Whether the profile's shape stage passes each of values (objects, until one of the profile's own
        shape settles it); a payload it refuses goes the exact way, which says why and where."""
        check = self.check_shape
        try:
            for value in values:
                if check.settled:
                    return True
                if value.__class__ is not dict:
                    return False
                check(value, None)
        except CaptureError:
            return False
        return True

    def _plain_values(self, joined: str) -> tuple[list | None, bool]:
        """(the values of the JSON list "[joined]" or None, whether they are all of it): parsed at once inside
        the pad (see _PAD), or, where the room reads runs of fragments, by _ArrayItems with those runs."""
        if self.runs is None:
            padded = _PAD_OPEN + "[" + joined + "]" + _PAD_CLOSE
            try:
                value, end = self.scan(padded, 0)
                return (_unpad(value) if end == len(padded) else None), True
            except (_NotStreamable, JsonProblem, ValueError, RecursionError, StopIteration):
                return None, False
        items = _ArrayItems("[" + joined + "]", 0, self.scan, self.runs, 0, closed=True)
        try:
            values = list(items)
        except _NotStreamable:
            return None, False
        return values, items.end == len(joined) + 2

    def _lines_text(self, text: str, first_line: int, final: bool) -> None:
        """JSON Lines: held while the body may still be one JSON document (refused whole by capture)."""
        if self.head is None:
            self._lines_piece(text, first_line, self.first)
            return
        if self.head.strip(" \t\r\n") and not self.doubt and _skip_ws(text, 0) < len(text):
            text, first_line, self.head = self.head + text, 0, None   # a second value: not one document
            self._lines_piece(text, first_line, self.first)
            return
        self.head += text
        if final:
            text, self.head = self.head, None
            try:
                first = _refuse_whole_document(text, self.row)
            except CaptureError as exc:
                self._hold(_RANK_WHOLE, exc)
                return
            self._lines_piece(text, 0, first)
            return
        if self.first is None and not self.doubt and self.head.strip(" \t\r\n"):
            self.first = _first_json_value(self.head)
            self.doubt = self.first is None
            if self.first is not None and _skip_ws(self.head, self.first[2]) < len(self.head):
                text, self.head = self.head, None
                self._lines_piece(text, 0, self.first)

    def _lines_piece(self, text: str, first_line: int, first: tuple[Any, int, int] | None) -> None:
        self.first = None
        if self._checked(self.row.capture.check_lines_text, text, first_line) and not self._lines_plain(text):
            self._run((payload, (number, line)) for number, (payload, line)
                      in enumerate(_json_lines_iter(text, first, first_line), self.count))

    def _lines_plain(self, text: str) -> bool:
        """A piece of JSON Lines, each line one JSON object (LF ends, no blank line): read at once as
        _sse_plain reads events; False for anything else."""
        if self.rank != _RANK_NONE or "\r" in text:
            return False
        lines = text.count("\n")
        if lines < 2 or not text.endswith("\n"):
            return False
        values, whole = self._plain_values(text[:-1].replace("\n", ","))
        if values is None or not whole or len(values) != lines or set(map(type, values)) != {dict}:
            return False
        if any(len(value) == 1 and "data" in value for value in values) or not self._shapes_pass(values) or (
                not self.count and "profile" in values[0] and ("chunks" in values[0] or "events" in values[0])):
            return False   # (a {"data": ...} wrapper: _unwrapped's; an envelope: _not_an_envelope's)
        self.count += lines
        self.feed(values)
        return True

    def _frames_plain(self, plain: tuple[list[str], list[bytearray]]) -> bool:
        """A piece of whole frames, each a JSON object (or, in a room that unwraps them, a plain chunk carrying
        one), their checksums and headers checked as the piece was cut (plain: their members and payloads, see
        _frames_cut): their payloads read at once as _sse_plain reads events; False for anything else."""
        if self.rank != _RANK_NONE or (self.convert and self.unwrap is None) or len(plain[0]) < 2:
            return False
        members, payloads = plain
        unwrap = self.unwrap
        try:
            if unwrap is None:
                texts = [b",".join(payloads).decode("utf-8")]   # (valid as a whole only if each is)
            else:
                texts = [self.unwrap_all(members, payloads)] if self.unwrap_all is not None else [None]
                if texts[0] is None:
                    texts = [unwrap(member, payload.decode("utf-8")) for member, payload in zip(members, payloads)]
                if None in texts:
                    return False
        except UnicodeDecodeError:
            return False
        values, whole = self._plain_values(",".join(texts))
        if values is None or not whole:
            return False
        if len(values) == len(members) and set(map(type, values)) == {dict}:
            payloads = values if unwrap is not None else [{member: value} for member, value in zip(members, values)]
        elif unwrap is not None and _items_stood_for(values) == len(members):
            payloads = values   # runs of the room's fragments among the events
        else:
            return False
        if not self._shapes_pass(payloads):
            return False
        self.count += len(members)
        self.feed(payloads)
        return True

    def _list_piece(self, text: str, final: bool) -> None:
        """A JSON list's items, each fed once whole; an error as decode_document gives it for the whole body."""
        if self.rank <= _RANK_FRAMING:
            return
        self.parts.append(text)
        self.held += len(text)
        if not final and self.held < self.retry_at:
            return   # an item is still cut short: it is looked for again once the text held doubled
        text = "".join(self.parts)
        size, pos, items, batched = len(text), 0, [], False
        while True:
            at = _skip_ws(text, pos)
            if at == size:
                break
            state = self.list_state
            if state == "open" or (state == "first" and text[at] == "]") or (state == "sep" and text[at] in ",]"):
                pos, self.list_state = at + 1, ("first" if state == "open" else "item" if text[at] == "," else "after")
                if self.list_state == "after":
                    end = self.base + pos
                    self.list_end = (end, self.lf + text.count("\n", 0, pos) + 1)
                continue
            if state == "after":
                self._list_trailing()
                break
            if state == "sep":
                self._list_error(text, pos)
                break
            if not batched and size - at > _RUN_BATCH_CHARS:   # (once a piece: the items up to its last boundary)
                batched, batch = True, _list_batch(text, at)
                if batch is not None and 4 * (batch[1] - at) > self.limits.max_frame_bytes:
                    batch = None   # it may hold an item beyond max_frame_bytes: items one by one, each measured
                if batch is not None:
                    items += batch[0]
                    pos, self.list_state, self.retry_at = batch[1], "sep", 0
                    continue
            try:
                value, end = _DEFAULT_DECODER.raw_decode(text, at)
            except (ValueError, JsonProblem, RecursionError) as exc:
                if final or not _list_item_pending(exc, size):
                    self._list_error(text, pos)
                self.retry_at = 2 * (size - pos)
                break
            if end == size and not final and text[end - 1] not in "\"}]":
                break   # a number or a literal may go on
            if 4 * (end - at) > self.limits.max_frame_bytes and self._unit_over(
                    len(text[at:end].encode("utf-8", "surrogatepass"))):
                return
            items.append(value)
            pos, self.list_state, self.retry_at = end, "sep", 0
        if final and self.list_state != "after" and self.rank > _RANK_FRAMING:
            self._list_error(text, pos)
        self.lf += text.count("\n", 0, pos)
        last = text.rfind("\n", 0, pos)
        self.last_lf = self.base + last if last >= 0 else self.last_lf
        self.base += pos
        self.parts, self.held = [text[pos:]], size - pos
        self._run((value, (number, 1)) for number, value in enumerate(items, self.count))

    def _list_error(self, text: str, mark: int) -> None:
        """Hold the error decode_document gives the whole body, the list's state being the one at mark."""
        prefix = _LIST_PREFIX[self.list_state]
        try:
            _DEFAULT_DECODER.raw_decode(prefix + text[mark:], 0)
            return
        except json.JSONDecodeError as exc:
            at = mark + exc.pos - len(prefix)
            last = text.rfind("\n", 0, at)
            column = at - last if last >= 0 else self.base + at - self.last_lf
            problem = _decode_problem(exc, self.lf + text.count("\n", 0, at) + 1, column)
        except RecursionError:
            problem = JsonProblem(LIMIT_EXCEEDED, "the body: nesting too deep to parse")
        except JsonProblem as exc:
            problem = exc
        except ValueError as exc:  # integers beyond CPython's digit limit
            problem = JsonProblem(LIMIT_EXCEEDED, f"a number cannot be read: {str(exc)[:80]}")
        self._hold(_RANK_FRAMING, CaptureError(f"the body starts like a JSON list but is not strict JSON: "
                                               f"{problem.message}", problem.line))

    def _list_trailing(self) -> None:
        end, line = self.list_end
        self._hold(_RANK_FRAMING, CaptureError(f"the body starts like a JSON list but is not strict JSON: data after "
                                               f"the JSON document at character {end}", line))

    def _frames_cut(self) -> int:
        """Where the whole frames that came end (after a prelude that fails: the reader says how).  On the
        way each whole frame is checked as _eventstream_frames checks it (both checksums, the lengths, its
        header block naming a member) and its member and payload kept in `plain`, for _frames_plain to read
        the piece at once; None once one fails (the exact way then says how)."""
        import struct
        import zlib

        buf, pos, size = self.buf, 0, len(self.buf)
        unpack, crc32, view = struct.Struct(">III").unpack_from, zlib.crc32, memoryview(buf)
        tail, startswith = struct.Struct(">I").unpack_from, buf.startswith
        members: list[str] = []
        payloads: list[bytearray] = []
        add_member, add_payload = members.append, payloads.append
        known: dict[bytes, str] = {}
        good = self.preludes   # each distinct prelude (lengths and checksum) is checked once
        plain, last, last_size, member = True, b"", -1, ""
        most, whole = self.limits.max_frame_bytes, self.whole
        try:
            while size - pos >= 12:
                prelude = unpack(buf, pos)
                total, header_size, prelude_crc = prelude
                if prelude not in good:
                    if crc32(view[pos:pos + 8]) != prelude_crc or header_size > total - 16:
                        plain = False
                        return pos + 12
                    if total > most:
                        view.release()
                        self._over(f"one {_BODY_UNITS[self.kind]} of the body is larger than "
                                   f"{most} bytes (max_frame_bytes)")
                        return 0
                    if len(good) >= 256:
                        good.clear()
                    good.add(prelude)
                if size - pos < total:
                    break
                end = pos + total
                whole += 1
                if plain:
                    start = pos + 12 + header_size
                    if crc32(view[pos + 8:end - 4], prelude_crc) != tail(buf, end - 4)[0]:
                        plain = False   # (the message checksum, the prelude's carried on)
                    elif header_size != last_size or not startswith(last, pos + 12):
                        last, last_size = bytes(buf[pos + 12:start]), header_size
                        try:
                            member = _eventstream_known_member(known, last, self.frames + whole)
                        except CaptureError:
                            plain = False
                    add_member(member)
                    add_payload(buf[start:end - 4])
                pos = end
        finally:
            view.release()   # (the buffer is cut next)
            self.plain, self.whole = ((members, payloads) if plain else None), whole
        return pos

    def _frames_piece(self, piece: bytes) -> None:
        first_frame, first_byte = self.frames, self.offset
        self.offset += len(piece)
        plain, self.plain = self.plain, None
        if self.rank <= _RANK_FRAMING:
            return
        if plain is None or not self._frames_plain(plain):
            frames = _eventstream_frames(piece, None, self.parse, None, first_frame, first_byte)
            self._run((event, (number, text)) for event, number, text in frames)
        self.frames, self.whole = self.frames + self.whole, 0   # (a frame cut short comes last, and once)


def _list_batch(text: str, at: int) -> tuple[list, int] | None:
    """The items of a JSON list from text[at] (where one starts) to the last candidate boundary "}, {" of text,
    parsed as one list by the parser that reads them one by one: (the items, the position after the last
    one's "}"), or None (a candidate inside a string, or anything the parser refuses: read one by one)."""
    window, last = 1 << 12, None
    while last is None:
        start = max(at, len(text) - window)
        for last in _ITEM_BOUNDARY.finditer(text, start):
            pass
        if start == at:
            break
        window *= 4
    if last is None:
        return None
    end = last.start() + 1
    wrapped = "[" + text[at:end] + "]"
    try:
        batch, stop = _DEFAULT_DECODER.raw_decode(wrapped)
    except (ValueError, JsonProblem, RecursionError):
        return None
    return (batch, end) if stop == len(wrapped) else None


def _items_stood_for(values: list) -> int:
    """How many items values stand for: a FragmentRun its pieces, an object one (anything else: too many)."""
    count = 0
    for value in values:
        count += len(value.pieces) if value.__class__ is FragmentRun else 1 if value.__class__ is dict else 1 << 62
    return count


def _whole_characters(buf: bytearray) -> int:
    """How much of buf is whole UTF-8 characters (a sequence cut short at its end is left, and a CR, which
    may be half of a CRLF)."""
    end = len(buf)
    back = end
    while back > 0 and end - back < 3 and 0x80 <= buf[back - 1] < 0xC0:
        back -= 1
    if back > 0 and buf[back - 1] >= 0xC0:
        lead = buf[back - 1]
        need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if end - (back - 1) < need:
            end = back - 1
    if end > 0 and buf[end - 1] == 0x0D:
        end -= 1
    return end


class StreamGate:
    """The runtime gate for one turn: feed raw chunks/events as they arrive, then finish().

    This is the library API an adapter calls, and what the CLI uses.  feed()
    takes one parsed wire object (a chunk or an event of the profile's
    stream), or feed_bytes() the raw HTTP body in pieces (one or the other
    in a turn); finish() runs every end-of-stream rule and the validation, and
    returns the report dict.  `blocked` turns true as soon as any finding has
    arisen, so an adapter may stop early; it never turns a turn into a pass.
    """

    def __init__(self, profile: str, tool_schemas: dict, limits: Limits | None = None,
                 meta: dict | None = None, request: dict | None = None) -> None:
        row = PROFILES.get(profile) if isinstance(profile, str) else None   # the library's one look-up
        if row is None:
            raise ValueError(f"unknown profile {_token(profile)}; expected one of {', '.join(PROFILES)}")
        if not isinstance(tool_schemas, dict):
            raise TypeError("tool_schemas must be a dict: tool name -> JSON Schema")
        if meta is not None and not (isinstance(meta, dict) and _is_json(meta)):
            raise ValueError("meta must be a JSON object (it is echoed in the report)")
        limits = _limits(limits)
        self._start(row, tool_schemas, limits, meta, _request_context(row, request))  # RequestError when malformed

    @classmethod
    def _of_row(cls, row: Profile, tool_schemas: dict, limits: Limits, meta: dict | None,
               request: RequestContext | None) -> "StreamGate":
        """The gate of an envelope already checked: its profile's row and its request's context (read
        once, by the envelope's checks), no name looked up again."""
        gate = cls.__new__(cls)
        gate._start(row, tool_schemas, limits, meta, request)
        return gate

    def _start(self, row: Profile, tool_schemas: dict, limits: Limits, meta: dict | None,
               request: RequestContext | None) -> None:
        self.profile = row.name
        self._row = row
        self.tool_schemas = tool_schemas
        self.limits = limits
        self.meta = meta
        self.request = request
        self._normalizer = row.wire.normalizer(self.limits)
        self._sdk_item = row.wire.sdk_item   # how feed() reads an item that is not a dict (an SDK's object)
        forced = (self.request.forced, self.request.forced_kind) if self.request and self.request.forced else None
        self._machine = TurnMachine(row.rules, self.limits, forced)
        # what the feed loop looks up, bound once (feed() runs the loop for every item)
        self._loop = (self._machine, self._normalizer.translate, self._machine.handlers,
                      getattr(self._normalizer, "plain_fragment", _no_plain_fragment), self._machine.append_plain)
        # the normalizer's reader of a plain fragment from an SDK object's attributes (see _feed_object)
        self._plain_object = getattr(self._normalizer, "plain_object", _no_plain_object)
        # The normalizer's reader of runs of plain fragments in capture text, or None (see _ArrayItems).
        self._fragment_runs = getattr(self._normalizer, "fragment_run", None)
        self._sse_runs = getattr(self._normalizer, "sse_fragment_run", None)   # the same in SSE text (_BodyReader)
        self._sse_lead = getattr(self._normalizer, "sse_fragment_lead", "")   # how an event of one begins
        self._unexamined = 0   # items fed after the machine saturated (see TurnMachine._find)
        self._position = 0     # of the next item in the stream
        self._report: dict[str, Any] | None = None
        self._reader: _BodyReader | None = None   # the raw body's, once feed_bytes() was called
        self._closed: str | None = None           # why feed() takes no item (finished, or read from bytes)

    @property
    def blocked(self) -> bool:
        return bool(self._machine.findings) or (self._reader is not None and self._reader.blocked)

    def feed(self, item: Any) -> None:
        """Consume the next chunk (openai, mistral, gemini) or event (the other profiles).

        The only place an item is read (feed_all and the streaming reader come here for each).
        An item the normalizer calls a plain fragment, and the machine can take as one, skips
        building neutral events; the answer is the same either way.  The item's position is
        taken before it is read, so an exception from one item shifts no later position.  Once
        the machine is saturated (see TurnMachine._find) the rest is only counted.
        """
        if self._closed is not None:
            raise RuntimeError(self._closed)
        machine, translate, handlers, plain, append = self._loop
        at = self._position
        if machine.saturated:   # counted, never examined
            count = len(item.pieces) if type(item) is FragmentRun else 1
            self._position = at + count
            self._unexamined += count
            return
        self._position = at + 1   # taken first: an exception from the item shifts no later position
        hit = plain(item)
        if hit is None or not append(*hit):
            if type(item) is FragmentRun:
                self._position = self._feed_run(item, at)
            elif type(item) is not dict and item is not None:   # an SDK's object (or no object at all)
                hit = self._plain_object(item, at)   # a plain fragment read from its attributes, no dump
                if hit is None or not append(*hit):
                    self._feed_object(item, at)
            else:
                for event in translate(at, item):
                    handlers[type(event)](event)

    def _feed_object(self, item: Any, at: int) -> None:
        """feed() of an item that is not a dict and that the normalizer's plain_object (called by feed(), inline)
        did not take: its wire payload (_read_object) fed as a dict is."""
        machine, translate, handlers, plain, append = self._loop
        item = self._read_object(item, at)
        if item is None:
            return
        hit = plain(item)
        if hit is None or not append(*hit):
            for event in translate(at, item):
                handlers[type(event)](event)

    def _read_object(self, item: Any, at: int) -> Any:
        """The wire payload of an item that is not a dict, read by the room's WireRules.sdk_item: a dict to
        translate, the item itself (a value no SDK made: the room judges it), or None (nothing more to read,
        a finding recorded here).  What the SDK object raises, or a dump that is not a JSON object, is a
        finding, never an exception out of feed()."""
        try:
            read = self._sdk_item(item, self._normalizer, at)
        except Exception as exc:   # noqa: BLE001 - the SDK's own code: any exception is a finding
            read = WireProblem(at, UNSUPPORTED_EVENT, f"the SDK object {_token(type(item).__name__)} could not be "
                               f"read ({_token(type(exc).__name__)})")
        if read is item or type(read) is dict or read is None:
            return read
        if type(read) is not WireProblem:
            read = WireProblem(at, UNSUPPORTED_EVENT, f"the SDK object {_token(type(item).__name__)} reads as "
                               f"{_describe(read)}, not a JSON object")
        self._machine.handlers[WireProblem](read)
        return None

    def feed_all(self, items: Iterable[Any]) -> None:
        """Consume each item in turn: feed() for each."""
        if self._closed is not None:   # also for an empty list: a finished turn takes nothing more
            raise RuntimeError(self._closed)
        feed = self.feed
        for item in items:
            feed(item)

    def feed_bytes(self, data: bytes | bytearray | memoryview) -> None:
        """Consume the next piece of the raw HTTP response body, split anywhere; finish() ends the body.

        The body is read as capture reads it (see _BodyReader): each payload is fed as soon as its unit
        (SSE event, line, JSON-list item, frame) is whole, and the report is validate_envelope's of the
        envelope capture makes of the same bytes, or, for a body capture refuses, one unsupported_event
        finding with capture's message.  A gate fed items takes no bytes, and one fed bytes no items.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed_bytes takes bytes, bytearray or memoryview, not {type(data).__name__}")
        if self._report is not None:
            raise RuntimeError("finish() was already called for this turn")
        if self._reader is None:
            if self._position:
                raise RuntimeError("this turn is read from items (feed): feed_bytes() takes no bytes")
            self._reader = _BodyReader(self._row, self.limits, self._feed_read, self._fragment_runs,
                                       self._sse_runs, self._sse_lead)
            self._closed = "this turn is read from bytes (feed_bytes): feed() takes no items"
        self._reader.push(data)

    def _feed_read(self, payloads: list) -> None:
        """feed_all() of the payloads the body's reader read."""
        closed, self._closed = self._closed, None
        try:
            self.feed_all(payloads)
        finally:
            self._closed = closed

    def feed_text(self, text: str, start: int, scan: Callable[[str, int], tuple[Any, int]],
                  window: _TextWindow | None = None) -> int:
        """Consume the JSON list at text[start] (a "[") item by item as it is read; returns the
        position after its "]".  _NotStreamable when the text is not read here (the caller then
        parses the whole document).  The normalizer may read runs of plain fragments at once.
        window: text is that window's, slid on while the list is read (the position returned is
        in its text then)."""
        items = _ArrayItems(text if window is None else window.text, start, scan, self._fragment_runs, window=window)
        self.feed_all(items)
        return items.end

    def _feed_run(self, run: FragmentRun, position: int) -> int:
        """Consume the items a FragmentRun stands for; returns the position after them.

        At once when the machine takes every piece as a plain fragment, which is
        what it would do with each item in turn; otherwise the rebuilt items go
        through the feed loop, one by one.
        """
        if self._machine.append_run(run.key, run.pieces):
            return position + len(run.pieces)
        self._position = position
        self.feed_all(map(run.item, run.pieces))
        return self._position

    def finish(self) -> dict[str, Any]:
        """End of stream (and of the body fed as bytes): terminal checks, validation, the gate. Returns the report."""
        refused = None if self._reader is None or self._report is not None else self._reader.end()
        if refused is not None:   # a body capture refuses, or one beyond a limit: its one finding
            self._report = _report(Outcome([refused], self.profile, self.meta))
        if self._report is None:
            machine = self._machine
            for event in getattr(self._normalizer, "finish", _no_events)():
                machine.feed(event)
            machine.finish()
            validate_slots(machine, self.tool_schemas, self.limits)
            check_hosted_names(machine, self.tool_schemas, self.request)
            if self.request is not None:
                check_request(machine, self.request)
            self._report = _report(Outcome(profile=self.profile, meta=self.meta, max_findings=self.limits.max_findings,
                                           unexamined=self._unexamined, **machine.outcome()))
        self._closed = "finish() was already called for this turn"
        return self._report


def validate_envelope(doc: Any, limits: Limits | None = None) -> dict[str, Any]:
    """Validate a parsed envelope in memory and return the report as a dict."""
    limits = _limits(limits)
    try:
        return _finish_envelope(doc, limits, None)
    except RecursionError:
        return _out_of_stack_report()


def _out_of_stack_report() -> dict[str, Any]:
    """Blocked: the interpreter's stack ran out (a caller already deep in recursion)."""
    return _report(Outcome([Finding(LIMIT_EXCEEDED, "the interpreter's stack ran out while validating; "
                                            "call from a shallower stack or raise the recursion limit")]))


def request_context(profile: str, request: Any) -> RequestContext | None:
    """The envelope's request block as a RequestContext (None when absent); RequestError if malformed."""
    row = PROFILES.get(profile) if isinstance(profile, str) else None
    if row is None and request is not None:
        _request_members(request, "\"request\"", REQUEST_KEYS)   # a malformed block is said first
        raise KeyError(profile)
    return None if row is None else _request_context(row, request)


def _request_context(row: Profile, request: Any) -> RequestContext | None:
    """request_context, read by the profile's row (the envelope's checks and the gate have it)."""
    if request is None:
        return None
    body = _request_members(request, "\"request\"", REQUEST_KEYS)
    fields: dict[str, Any] = {}
    if body.get("tool_choice") is not None:
        fields.update(row.request.choice(body["tool_choice"]))
    parallel = body.get("parallel_tool_calls")
    if parallel is not None:
        if not row.request.parallel_field:
            raise RequestError(f"parallel_tool_calls is not a field of a {row.name} request"
                               f"{row.request.parallel_instead}")
        if not isinstance(parallel, bool):
            raise RequestError(f"parallel_tool_calls must be a boolean, got {_describe(parallel)}")
        fields["single"] = fields.get("single", False) or not parallel
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
            raise RequestError("\"request\".tools must be a list of tool names (non-empty strings)")
        if len(set(tools)) != len(tools):
            raise RequestError("\"request\".tools names a tool twice")
        fields["tools"] = frozenset(tools)
    return RequestContext(**fields)


def check_envelope(doc: Any, limits: Limits | None = None) -> list[Finding]:
    """Every way the parsed envelope breaks the contract (SPEC section 1)."""
    return _envelope_problems(doc, _limits(limits), None)[0]


def _envelope_problems(doc: Any, limits: Limits, gate: StreamGate | None
                       ) -> tuple[list[Finding], Profile | None, RequestContext | None]:
    """check_envelope, and what it read on the way: the profile's row (None when it names none) and the
    request's context.  A gate fed already was built from this envelope's request: its context is
    taken, not read again."""
    if not isinstance(doc, dict):
        return [Finding(INVALID_FIXTURE, f"the envelope must be a JSON object, got {_describe(doc)}")], None, None
    profile = doc.get("profile")
    row = PROFILES.get(profile) if isinstance(profile, str) else None   # the envelope's one look-up
    problems = list(_envelope_key_problems(doc, row))
    meta = doc.get("meta")
    if isinstance(meta, dict) and _nesting_exceeds(meta, limits.max_depth):
        problems.append(Finding(INVALID_FIXTURE, f"\"meta\" nests deeper than {limits.max_depth} levels"))
    elif isinstance(meta, dict) and not _is_json(meta):
        problems.append(Finding(INVALID_FIXTURE, "\"meta\" holds a value that is not JSON (NaN, infinity, or "
                                                 "a Python object of another type)"))
    context = None
    if row is not None:
        context = _envelope_row_problems(doc, row, gate, problems)
    return problems, row, context


def _envelope_key_problems(doc: dict, row: Profile | None) -> Iterator[Finding]:
    """The envelope's top-level keys: none unknown, profile and tool_schemas present, each of the right type."""
    for key in doc:
        if key not in ENVELOPE_KEYS:
            yield Finding(INVALID_FIXTURE, f"unknown top-level key {_token(key)}")
    profile = doc.get("profile")
    if "profile" not in doc:
        yield Finding(INVALID_FIXTURE, "missing required key \"profile\"")
    elif not isinstance(profile, str):
        yield Finding(INVALID_FIXTURE, f"\"profile\" must be a string, got {_describe(profile)}")
    elif row is None:
        yield Finding(UNKNOWN_PROFILE, f"profile {_token(profile)} is not one of {', '.join(PROFILES)}")
    if "tool_schemas" not in doc:
        yield Finding(INVALID_FIXTURE, "missing required key \"tool_schemas\"")
    elif not isinstance(doc["tool_schemas"], dict):
        yield Finding(INVALID_FIXTURE, f"\"tool_schemas\" must be an object, got {_describe(doc['tool_schemas'])}")
    for key in ("meta", "expect", "request", "serve"):
        if key in doc and not isinstance(doc[key], dict):
            yield Finding(INVALID_FIXTURE, f"\"{key}\" must be an object, got {_describe(doc[key])}")


def _envelope_row_problems(doc: dict, row: Profile, gate: StreamGate | None,
                           problems: list[Finding]) -> RequestContext | None:
    """What a known profile asks of the envelope, appended to problems: a request it can read (its
    context is returned) and its stream under its own key."""
    context = None
    try:
        context = gate.request if gate is not None else _request_context(
            row, doc["request"] if isinstance(doc.get("request"), dict) else None)
    except RequestError as exc:
        problems.append(Finding(INVALID_FIXTURE, f"\"request\": {exc}"))
    wanted, profile = row.stream_key, row.name
    other = "events" if wanted == "chunks" else "chunks"
    if other in doc:
        problems.append(Finding(INVALID_FIXTURE,
                                f"\"{other}\" does not belong to profile {profile}; it uses \"{wanted}\""))
    if wanted not in doc:
        problems.append(Finding(INVALID_FIXTURE, f"missing required key \"{wanted}\" for profile {profile}"))
    elif not isinstance(doc[wanted], list):
        problems.append(Finding(INVALID_FIXTURE, f"\"{wanted}\" must be a list, got {_describe(doc[wanted])}"))
    if isinstance(doc.get("serve"), dict):   # a gate fed already holds the stream (the envelope keeps [])
        items = gate._position if gate is not None else len(doc[wanted]) if isinstance(doc.get(wanted), list) else 0
        problems.extend(Finding(INVALID_FIXTURE, f"\"serve\": {problem}")
                        for problem in _serve_block_problems(doc["serve"], row, items))
    return context


SERVE_MEMBERS = ("cut", "error", "times")   # a fixture's "serve" block: how `serve` answers it (README)


def _serve_block_problems(block: dict, row: Profile, items: int) -> Iterator[str]:
    """What is wrong with a fixture's "serve" block (the transport fault `serve` plays): known members
    only; "cut" true; "error" {"status", "kind"} naming one of the room's HttpErrors with its status;
    "times" a count of requests >= 1, with an error; an error on every request (no "times") serves
    no stream, so the fixture's stream (of `items` payloads) must be empty: what is judged is what is served."""
    for key in block:
        if key not in SERVE_MEMBERS:
            yield f"unknown member {_token(key)} (members: {', '.join(SERVE_MEMBERS)})"
    if not block:
        yield "names no fault (members: " + ", ".join(SERVE_MEMBERS) + ")"
    if "cut" in block and block["cut"] is not True:
        yield f"\"cut\" must be true, got {_describe(block['cut'])}"
    error, times = block.get("error"), block.get("times")
    if "times" in block and (type(times) is not int or times < 1):
        yield f"\"times\" must be an integer of at least 1, got {_describe(times)}"
    if "error" not in block:
        if "times" in block:
            yield "\"times\" counts the requests answered with \"error\", and there is none"
        return
    yield from _serve_error_problems(error, row)
    if "times" not in block and items:
        yield ("an error on every request serves no stream, so the stream must be empty (give \"times\" for "
               "the requests answered with it before the stream)")
    if "times" not in block and "cut" in block:
        yield "\"cut\" cuts a stream, and an error on every request serves none"


def _serve_error_problems(error: Any, row: Profile) -> Iterator[str]:
    """What is wrong with a "serve" block's "error": {"status", "kind"}, the kind one of the room's errors."""
    if not isinstance(error, dict) or set(error) != {"status", "kind"}:
        yield f"\"error\" must be an object with exactly \"status\" and \"kind\", got {_describe(error)}"
        return
    kinds = [known.kind for known in row.http.errors] if row.http is not None else []
    known = row.http.error(error["kind"]) if row.http is not None else None
    if known is None:
        yield (f"\"error\" kind {_token(error['kind'])} is not one profile {row.name} answers (kinds: "
               f"{', '.join(kinds) or 'none'})")
    elif error["status"] != known.status or type(error["status"]) is not int:
        yield (f"\"error\" kind {_token(error['kind'])} is answered with status {known.status} on profile "
               f"{row.name}, not {_describe(error['status'])}")


_MEMBER_END = re.compile(r"[ \t\n\r]*([,}])[ \t\n\r]*")


class _NotStreamable(Exception):
    """The streaming reader met something it leaves to the whole-document parse."""


# Python's parser stops at a nesting depth set by the interpreter's recursion limit, not
# by the text.  Read piece by piece, a value sits shallower than in the whole document,
# so it could parse here and not there.  Pieces are therefore parsed inside _PAD extra
# levels of list ("[[...]]" around them): deeper than in the whole document, never
# shallower.  Where the pad makes a parse fail, the whole-document parse decides.
_PAD = 32
_PAD_OPEN, _PAD_CLOSE = "[" * _PAD, "]" * _PAD
# A value whose text holds fewer brackets than this nests too shallowly for the
# interpreter's limit to matter (unless called within that many frames of it).
_SHALLOW_BRACKETS = 64


def _unpad(value: Any) -> Any:
    """The value inside the _PAD lists a padded parse put around it.

    Each pad level must hold exactly one element: stray "]]" and "[[" in the
    piece could otherwise pair up with pad brackets and parse as another shape.
    """
    for _ in range(_PAD):
        if type(value) is not list or len(value) != 1:
            raise _NotStreamable
        value = value[0]
    return value


def _scan_padded(text: str, pos: int, scan: Callable[[str, int], tuple[Any, int]]) -> tuple[Any, int]:
    """scan(text, pos), but a value with many brackets is parsed again inside the pad."""
    value, end = scan(text, pos)
    if end - pos >= _SHALLOW_BRACKETS and text.count("[", pos, end) + text.count("{", pos, end) >= _SHALLOW_BRACKETS:
        value = None   # (parsed again, and held once: a value may be as large as the file)
        padded = "".join((_PAD_OPEN, text[pos:end], _PAD_CLOSE))
        value, padded_end = scan(padded, 0)
        if padded_end != len(padded):
            raise _NotStreamable
        value = _unpad(value)
    return value, end


def _stream_envelope(source: str | _TextWindow, limits: Limits) -> tuple[dict[str, Any], Any] | None:
    """(report, envelope) validated while reading, or None to take the canonical path.

    A large capture is mostly its stream list.  When "profile" and "tool_schemas"
    come before that list (the usual layout), each chunk is parsed, fed to the
    gate and dropped, so memory stays flat and each chunk is handled while it is
    still in the CPU cache; the envelope returned then holds an empty list in
    place of the stream.  A stream list before them (or a "request" after it,
    which shapes the gate) is read through and fed again from where it starts
    once the envelope's end is reached (_stream_again).  Anything else returns
    None: the caller then parses the whole document, so verdicts and messages
    are those of the canonical path.

    source: the text, or a _TextWindow over the file's bytes (validate_bytes): the text
    is then read a window at a time and never held whole; a byte that is not UTF-8
    raises its EnvelopeError when its window is decoded.
    """
    window = source if isinstance(source, _TextWindow) else _TextWindow(b"", source)
    scan = _strict_decoder().scan_once
    ws, member_end = _WS_RUN.match, _MEMBER_END.match
    pos = window.ahead(0, _WINDOW_AHEAD)
    text = window.text
    pos = ws(text, pos).end()
    if not text.startswith("{", pos):
        return None
    pos = ws(text, pos + 1).end()
    doc: dict[str, Any] = {}
    gate: StreamGate | None = None
    row: Profile | None = None   # the profile member's row, once it was read
    read = window.read
    skipped: tuple[str, int] | None = None   # a stream list met before the gate could be made: (key, where)
    fed = skipped   # the stream list fed to the gate: (key, where)
    try:
        while True:
            if not text.startswith('"', pos):
                return None
            key, pos = read(pos, scan)
            text = window.text
            pos = ws(text, pos).end()
            if key in doc or not text.startswith(":", pos):
                return None
            pos = ws(text, pos + 1).end()
            schemas = doc.get("tool_schemas")
            if gate is not None and key == "request":
                # the request shapes the gate: the stream is fed again, to a gate made with it, at the end
                gate, skipped = None, fed
            pos = window.ahead(pos, _WINDOW_AHEAD)
            text = window.text
            if (gate is None and row is not None and row.stream_key == key
                    and isinstance(schemas, dict) and text.startswith("[", pos)):
                gate = StreamGate._of_row(row, schemas, limits, None, _request_context(row, doc.get("request")))
                fed, text = (key, window.offset(pos) if window.data else pos), ""   # (the window's text alone,
                # freed as it slides)
                value, pos = [], gate.feed_text(text, pos, scan, window)
            elif gate is None and skipped is None and key in _STREAM_KEYS and text.startswith("[", pos):
                # before "profile" or "tool_schemas": read here (and dropped), then fed from the same place
                # once the envelope's end is reached (_stream_again)
                skipped, text = (key, window.offset(pos) if window.data else pos), ""
                items = _ArrayItems(window.text, pos, scan, window=window)
                for _ in items:
                    pass
                value, pos = [], items.end
            else:
                value, pos = read(pos, functools.partial(_scan_padded, scan=scan))
            text = window.text
            doc[key] = value
            if key == "profile" and isinstance(value, str):
                row = PROFILES.get(value)
            pos = window.ahead(pos, _WINDOW_SLACK)
            text = window.text
            sep = member_end(text, pos)
            if sep is None:
                return None
            pos, sep = sep.end(), sep.group(1)   # (a match would hold the window's text)
            if sep == "}":
                break
            pos = window.ahead(pos, _WINDOW_AHEAD)
            text = window.text
    except (_NotStreamable, JsonProblem, ValueError, RecursionError, StopIteration):
        return None
    while pos == len(window.text) and not window.eof:   # whitespace after the "}" to the end of the file
        pos = window.slide(pos)
        pos = ws(window.text, pos).end()
    if pos != len(window.text) or not window.eof:
        return None
    if skipped is not None:
        gate = _stream_again(window, doc, skipped, limits, scan)
        if gate is None:
            return None
    window.text = text = ""   # (validating the calls needs no more of it)
    return _finish_envelope(doc, limits, gate), doc


_STREAM_KEYS = frozenset(row.stream_key for row in PROFILES.values())


def _stream_again(window: _TextWindow, doc: dict, skipped: tuple[str, int], limits: Limits,
                  scan: Callable[[str, int], tuple[Any, int]]) -> StreamGate | None:
    """The gate fed the stream list _stream_envelope read before the gate could be made, read again from
    where it starts (skipped: its key, and its byte offset, or its position in a text held whole); None when
    the envelope makes no gate for it (the whole-document parse decides)."""
    key, at = skipped
    value = doc.get("profile")
    row = PROFILES.get(value) if isinstance(value, str) else None
    schemas = doc.get("tool_schemas")
    if row is None or row.stream_key != key or not isinstance(schemas, dict):
        return None
    try:
        gate = StreamGate._of_row(row, schemas, limits, None, _request_context(row, doc.get("request")))
        if not window.data:
            gate.feed_text(window.text, at, scan)
            return gate
        again = _TextWindow(window.data)
        again.first = again.done = at
        again.slide(0)
        gate.feed_text("", 0, scan, again)
    except (_NotStreamable, JsonProblem, ValueError, RecursionError, StopIteration):
        return None
    return gate


def _finish_envelope(doc: Any, limits: Limits, gate: StreamGate | None) -> dict[str, Any]:
    """The envelope checks, then the gate's report; gate is given when the stream was fed already."""
    problems, row, context = _envelope_problems(doc, limits, gate)
    meta = doc.get("meta") if isinstance(doc, dict) and isinstance(doc.get("meta"), dict) else None
    if meta is not None and (_nesting_exceeds(meta, limits.max_depth) or not _is_json(meta)):
        meta = None  # already an invalid_fixture finding; too deep or not printable
    if problems:  # the report names a profile only when it is one (never echoes an unknown string)
        return _report(Outcome(problems, None if row is None else row.name, meta))
    if gate is None:
        gate = StreamGate._of_row(row, doc["tool_schemas"], limits, meta, context)
        gate.feed_all(doc[row.stream_key])
    else:
        gate.meta = meta
    return gate.finish()


def validate_bytes(data: bytes, limits: Limits | None = None, pause_gc: bool = False) -> dict[str, Any]:
    """Validate fixture bytes (strictly parsed) and return the report as a dict.

    pause_gc=True pauses the cyclic garbage collector of the whole process while
    validating (what the CLI does): parsed JSON holds no reference cycles, and
    rescanning a growing envelope made the cost per chunk grow with the stream
    (about 3x at 100k chunks).  It is process-wide state, so a library caller
    with other threads that rely on the collector should leave it off.
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"validate_bytes takes the bytes of a file, not {type(data).__name__}; "
                        "validate_envelope takes a parsed envelope")
    return _validate_bytes_keeping_doc(data, _limits(limits), pause_gc)[0]


def _validate_bytes_keeping_doc(data: bytes, limits: Limits, pause_gc: bool) -> tuple[dict[str, Any], Any]:
    """The report, plus the parsed envelope (None when unreadable) for --expect."""
    import gc

    was_enabled = pause_gc and gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        return _validate_bytes_uncollected(data, limits)
    except RecursionError:
        return _out_of_stack_report(), None
    finally:
        if was_enabled:
            gc.enable()


def _validate_bytes_uncollected(data: bytes, limits: Limits) -> tuple[dict[str, Any], Any]:
    if len(data) > limits.max_input_bytes:
        finding = Finding(LIMIT_EXCEEDED, f"the fixture is larger than {limits.max_input_bytes} bytes")
        return _report(Outcome([finding])), None
    try:
        streamed = _stream_envelope(_TextWindow(data), limits)
        if streamed is not None:
            return streamed
        doc = _parse_envelope_text(_envelope_text(data))
    except EnvelopeError as exc:
        return _report(Outcome([Finding(INVALID_FIXTURE, str(exc))])), None
    return validate_envelope(doc, limits), doc


# Codes whose messages may quote argument content (keys, values); --redact-arguments
# replaces their messages with the code's generic meaning.
_ARGUMENT_CODES = frozenset({MALFORMED_JSON, TRAILING_DATA, NON_FINITE_NUMBER, DUPLICATE_KEY, INVALID_UNICODE,
                             NON_OBJECT_ARGUMENTS, SCHEMA_VIOLATION, LIMIT_EXCEEDED})


def redact_arguments(report: dict[str, Any]) -> dict[str, Any]:
    """A copy of the report safe for logs: arguments become their size and SHA-256.

    Messages of argument-level findings are replaced by the code's meaning, since
    they may quote keys or values; JSON pointers (structure only) are kept.
    """
    import hashlib

    def finding(item: dict[str, Any]) -> dict[str, Any]:
        if (item["code"] in _ARGUMENT_CODES and item["position"] is not None) or item["code"] == ADAPTER_MISMATCH:
            return dict(item, message=FINDING_CODES[item["code"]])  # adapter_mismatch may quote both arguments
        return item

    calls = []
    for call in report["calls"]:
        raw = call["arguments"].encode("utf-8", "surrogatepass")
        calls.append(dict(call, arguments={"utf8_bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()},
                          findings=[finding(f) for f in call["findings"]]))
    return dict(report, calls=calls, findings=[finding(f) for f in report["findings"]], arguments_redacted=True)


def redact_differences(differences: list[str]) -> list[str]:
    """--expect differences safe for logs: an arguments difference says only that they differ."""
    out = []
    for text in differences:
        found = re.match(r"calls\[\d+\]\.arguments: ", text)
        out.append(found.group(0) + "the expected and the reported arguments differ (redacted)" if found else text)
    return out


def _finding_order(finding: Finding) -> tuple:
    return (finding.position is None, finding.position or 0)


def _bounded(findings: list[Finding], limit: int, uncounted: int = 0, unexamined: int = 0) -> list[Finding]:
    """Stream-ordered findings, at most `limit` listed in full.

    Past the limit only the first finding of each code not yet listed is kept,
    so every code that arose still appears; a last limit_exceeded entry says
    how many were left out (uncounted: those the machine counted without
    keeping).  Keeps a hostile stream from producing a report of gigabytes.
    """
    ordered = sorted(findings, key=_finding_order)  # stable: stream order within a position
    if len(ordered) <= limit and not uncounted:
        return ordered
    kept = ordered[:limit]
    seen = {f.code for f in kept}
    for finding in ordered[limit:]:
        if finding.code not in seen:
            seen.add(finding.code)
            kept.append(finding)
    omitted = len(ordered) - len(kept) + uncounted
    skipped = (f"; the last {unexamined} stream items were not examined (the turn was already blocked "
               f"with more than {4 * limit} findings)") if unexamined else ""
    kept.append(Finding(LIMIT_EXCEEDED, f"{omitted} more findings not listed (limit {limit}){skipped}"))
    return kept


PER_CALL_FINDINGS = 50  # a call's own list is a convenience; the top-level list is the record


class Outcome(_Record):
    """What one turn came to: everything its report is written from (see _report).

    A turn the gate judged fills every member from its TurnMachine (StreamGate.finish);
    an envelope that was never judged has only findings, and the profile and meta when known.
    findings_for and omitted_for give a call's own findings (with its choice's) and how many
    of them were counted without being kept.
    """

    __slots__ = ("findings", "profile", "meta", "slots", "applicable", "findings_for", "omitted_for",
                 "max_findings", "hosted", "omitted", "unexamined", "restated")

    def __init__(self, findings: list[Finding], profile: str | None = None, meta: dict | None = None,
                 slots: list[Slot] | None = None, applicable: bool = False,
                 findings_for: Callable[[Slot], list[Finding]] | None = None,
                 omitted_for: Callable[[Slot], int] | None = None, max_findings: int = 1000,
                 hosted: dict[str, int] | None = None, omitted: int = 0, unexamined: int = 0,
                 restated: list[dict] | None = None) -> None:
        self.findings, self.profile, self.meta = findings, profile, meta
        self.slots, self.applicable = slots or [], applicable
        self.findings_for = findings_for or _no_shared
        self.omitted_for = omitted_for or _none_omitted
        self.max_findings, self.hosted, self.omitted = max_findings, hosted or {}, omitted
        self.unexamined, self.restated = unexamined, restated


def _no_shared(slot: Slot) -> list[Finding]:
    return slot.findings


def _none_omitted(slot: Slot) -> int:
    return 0


def _report(outcome: Outcome) -> dict[str, Any]:
    """The report (SPEC section 5) of one outcome: the gate's decision, with bounded finding lists."""
    findings, max_findings, slots = outcome.findings, outcome.max_findings, outcome.slots
    findings_for, omitted_for, applicable = outcome.findings_for, outcome.omitted_for, outcome.applicable
    ordered = _bounded(findings, max_findings, outcome.omitted, outcome.unexamined)
    if ordered:
        status = "blocked"
    elif not applicable:
        status = "not_applicable"
    else:
        status = "pass"
    calls = []
    for slot in slots:
        calls.append({
            "choice": slot.key[0],
            "index": slot.key[1],
            "id": slot.id,
            "name": slot.name,
            "kind": slot.kind,
            "arguments": slot.arguments,
            "state": slot.state,
            "findings": [f.as_dict() for f in _bounded(findings_for(slot), min(max_findings, PER_CALL_FINDINGS),
                                                       omitted_for(slot))],
        })
        if slot.namespace is not None:   # only where the wire names one, so other reports keep their shape
            calls[-1]["namespace"] = slot.namespace
    report = {
        "tool": TOOL,
        "version": VERSION,
        "profile": outcome.profile,
        "status": status,
        "applicable": status != "not_applicable",
        "executable": status == "pass",
        "calls": calls,
        "hosted_tools": dict(sorted(outcome.hosted.items())),
        "findings": [f.as_dict() for f in ordered],
        "meta": outcome.meta,
    }
    if outcome.restated:   # only when a turn has one, so every other report keeps its shape
        report["restated_finishes"] = outcome.restated
    return report


def check_expect(report: dict[str, Any], expect: Any) -> list[str]:
    """Differences between a report and a pinned `expect` block (SPEC section 6): the block's
    own shape first, then the status and codes, then the calls."""
    if not isinstance(expect, dict):
        return ["the fixture has no usable \"expect\" object"]
    return _expect_shape(expect) + _expect_outcome(report, expect) + _expect_calls(report, expect)


_EXPECT_KEYS = ("status", "codes", "calls")


def _expect_shape(expect: dict) -> list[str]:
    """What is wrong with the expect block itself (a near-miss key, a value of the wrong type)."""
    differences = _expect_near_misses(expect)
    if "status" in expect and not (isinstance(expect["status"], str) and expect["status"] in EXIT_BY_STATUS):
        differences.append(f"expect status {_describe(expect['status'])} is not pass, blocked or not_applicable")
    codes = expect.get("codes")
    if "codes" in expect and not (isinstance(codes, list) and all(isinstance(c, str) for c in codes)):
        differences.append("expect codes must be a list of finding codes")
    elif "codes" in expect:
        differences.extend(f"expect code {_token(c)} is not a finding code" for c in codes if c not in FINDING_CODES)
    if "calls" in expect and not isinstance(expect["calls"], list):
        differences.append("expect calls must be a list")
    return differences


def _expect_near_misses(expect: dict) -> list[str]:
    """Each key of the expect block that is not one but looks like one."""
    import difflib

    differences = []
    for key in expect:
        near = difflib.get_close_matches(key, _EXPECT_KEYS, n=1, cutoff=0.7)
        if key not in _EXPECT_KEYS and near:
            differences.append(f"expect key {_token(key)} is not known; did you mean {json.dumps(near[0])}?")
    return differences


def _expect_outcome(report: dict[str, Any], expect: dict) -> list[str]:
    """The status and every pinned code; a turn never judged matches only when pinned by name."""
    differences = []
    if "status" in expect and expect["status"] != report["status"]:
        differences.append(f"status: expected {json.dumps(expect['status'])}, got {json.dumps(report['status'])}")
    named = expect["codes"] if isinstance(expect.get("codes"), list) else []
    for code in (INVALID_FIXTURE, UNKNOWN_PROFILE):
        if code not in named and any(f["code"] == code for f in report["findings"]):
            differences.append(f"the envelope is {code}, so the turn was never judged: an expect block "
                               f"matches it only when its codes name {json.dumps(code)}")
    found = {f["code"] for f in report["findings"]}
    differences.extend(f"codes: expected {json.dumps(code)}, not reported" for code in named
                       if isinstance(code, str) and code not in found)
    return differences


def _expect_calls(report: dict[str, Any], expect: dict) -> list[str]:
    """Each pinned call against the reported one: count, id, name, arguments and namespace."""
    if "calls" not in expect:
        return []
    differences = []
    wanted_calls = expect["calls"] if isinstance(expect["calls"], list) else []
    if len(wanted_calls) != len(report["calls"]):
        differences.append(f"calls: expected {len(wanted_calls)}, got {len(report['calls'])}")
    for number, (want, got) in enumerate(zip(wanted_calls, report["calls"])):
        if not isinstance(want, dict):
            differences.append(f"calls[{number}]: expected entry is not an object")
            continue
        for key in ("id", "name", "arguments"):
            if key in want and want[key] != got[key]:
                differences.append(f"calls[{number}].{key}: expected {json.dumps(want[key])}, "
                                   f"got {json.dumps(got[key])}")
        if want.get("namespace") != got.get("namespace") and ("namespace" in want or "name" in want):
            # part of the call's identity: a pinned call without one must have none
            differences.append(f"calls[{number}].namespace: expected {json.dumps(want.get('namespace'))}, "
                               f"got {json.dumps(got.get('namespace'))}")
    return differences


# --- the common loop: a gate in front of a stream the caller reads (gate_stream, agate_stream) ----

_BYTES_LIKE = (bytes, bytearray, memoryview)   # what gate_stream hands to feed_bytes; anything else goes to feed


class gate_stream:   # noqa: N801 - used as a function: `for item in (stream := vts.gate_stream(items, ...)):`
    """Iterate `items` through a StreamGate: every item comes back unchanged (text can be shown as it
    arrives) after it is fed, bytes-like items to gate.feed_bytes and the rest to gate.feed.

    `report` is None until the source is exhausted; then finish() has run and it is the report.  It
    stays None when the consumer stops early (the turn was not read to its end) and when the source
    (or feeding) raises: the exception propagates unchanged and the stream is over.  Calls are handed
    on only from a report.  `gate` is the StreamGate (its `blocked` is current for each item yielded).
    The arguments are checked before any item is read: the StreamGate's errors, and TypeError when
    items is not iterable.  One pass only: the object is its own iterator.  body=True: the items are the
    pieces of the raw HTTP body, so that a source that yields none is an empty body (blocked, as capture
    refuses it), not a turn without items (not_applicable); an item that is not bytes-like then raises.
    """

    def __init__(self, items: Iterable[Any], profile: str, tool_schemas: dict, request: dict | None = None,
                 limits: Limits | None = None, meta: dict | None = None, *, body: bool = False) -> None:
        self.gate = StreamGate(profile, tool_schemas, limits, meta, request)
        self.report: dict[str, Any] | None = None
        self._source: Iterator[Any] | None = iter(items)
        if body:   # the items are the raw body's pieces: none at all is an empty body (capture's refusal)
            self.gate.feed_bytes(b"")

    def __iter__(self) -> "gate_stream":
        return self

    def __next__(self) -> Any:
        source = self._source
        if source is None:   # exhausted, or ended by an exception
            raise StopIteration
        try:
            item = next(source)
        except StopIteration:
            self._source = None
            self.report = self.gate.finish()
            raise
        except BaseException:
            self._source = None   # never a report after a source that failed
            raise
        try:   # apart from next(): a StopIteration out of feed() (an item's own __eq__) is no end of the source
            if isinstance(item, _BYTES_LIKE):
                self.gate.feed_bytes(item)
            else:
                self.gate.feed(item)
        except BaseException as exc:
            self._source = None   # never a report after feeding failed
            if isinstance(exc, StopIteration):
                raise RuntimeError("feeding an item raised StopIteration") from exc
            raise
        return item


class agate_stream:   # noqa: N801 - used as a function: `async for item in vts.agate_stream(aitems, ...):`
    """gate_stream over an async iterable, for `async for`: the same items, `gate` and `report`."""

    def __init__(self, items: Any, profile: str, tool_schemas: dict, request: dict | None = None,
                 limits: Limits | None = None, meta: dict | None = None, *, body: bool = False) -> None:
        self.gate = StreamGate(profile, tool_schemas, limits, meta, request)
        self.report: dict[str, Any] | None = None
        self._source: Any = aiter(items)   # TypeError when items is not an async iterable
        if body:
            self.gate.feed_bytes(b"")

    def __aiter__(self) -> "agate_stream":
        return self

    async def __anext__(self) -> Any:
        source = self._source
        if source is None:
            raise StopAsyncIteration
        try:
            item = await source.__anext__()
        except StopAsyncIteration:
            self._source = None
            self.report = self.gate.finish()
            raise
        except BaseException:
            self._source = None
            raise
        try:   # as gate_stream: what feeding raises never ends the source with a report
            if isinstance(item, _BYTES_LIKE):
                self.gate.feed_bytes(item)
            else:
                self.gate.feed(item)
        except BaseException as exc:
            self._source = None
            if isinstance(exc, (StopIteration, StopAsyncIteration)):
                raise RuntimeError(f"feeding an item raised {type(exc).__name__}") from exc
            raise
        return item


# ---------------------------------------------------------------------------
# Output: the one door to standard output and standard error, and the report formats
# ---------------------------------------------------------------------------
#
# Every byte the tool prints goes through _out or _err, and every value from the input
# (a path, an id, a message quoting an argument) is passed through _printable where it is
# put into a line.  One rule for every mode:
#   * a character that can act on a terminal or a log reader — C0 and C1 controls, DEL, the
#     line and paragraph separators, bidirectional marks and overrides, a lone surrogate — is written
#     as \uXXXX (JSON writes its own \u escapes; JUnit keeps its \uXXXX text);
#   * "##[", the GitHub Actions runner's legacy command prefix (recognised anywhere in a
#     line), is written "#\u0023[" (JUnit: "#&#35;[");
#   * no line starts with "::" (the runner's workflow commands) unless it is one of the
#     tool's own annotations in --report github.

_ACTING = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNPRINTABLE_IN_LINE = re.compile(f"[\t\n{_ACTING}]")   # inside one value: line ends and tabs too
_UNPRINTABLE = re.compile(f"[\t{_ACTING}]")              # in a whole output text: all but its own LF
_OWN_COMMANDS = ("::error file=", "::warning file=", "::notice file=")


def _escape_char(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def _printable(value: Any) -> str:
    """A value from the input as it may stand inside one output line (see the rule above)."""
    return _UNPRINTABLE_IN_LINE.sub(_escape_char, value if isinstance(value, str) else str(value))


def _guarded(text: str, commands: tuple[str, ...] = ()) -> str:
    """A whole output text under the rule above; `commands` are the line starts the caller means."""
    text = _UNPRINTABLE.sub(_escape_char, text).replace("##[", "#\\u0023[")
    if "::" in text:
        lines = text.split("\n")
        for number, line in enumerate(lines):
            if line.lstrip().startswith("::") and not (commands and line.startswith(commands)):
                lines[number] = line.replace("::", ":\\u003a", 1)
        text = "\n".join(lines)
    return text


class OutputError(Exception):
    """Standard output cannot be written (closed, a full disk); main says so and exits 3."""


def _out(text: str, commands: tuple[str, ...] = ()) -> None:
    """Print text (one or more lines) on standard output, then a line end."""
    if sys.stdout is None:
        raise OutputError("it is closed")
    try:
        sys.stdout.write(_guarded(text, commands) + "\n")
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:   # ValueError: a closed file object
        raise OutputError(getattr(exc, "strerror", None) or str(exc)) from None


def _err(text: str) -> None:
    """Print text (one or more lines) on standard error, then a line end (dropped if it cannot be)."""
    if sys.stderr is None:
        return
    try:
        sys.stderr.write(_guarded(text) + "\n")
    except (OSError, ValueError):
        pass


def render_json(report: dict[str, Any]) -> str:
    """Deterministic, ASCII-only JSON (safe for any terminal or log encoding)."""
    return json.dumps(report, indent=2, ensure_ascii=True)


_TEXT_ARGUMENT_WIDTH = 200   # characters of a call's arguments shown by --report text
_TEXT_ID_WIDTH = 100         # ... of an id or a name


def _text_value(value: Any, width: int) -> str:
    """A JSON-quoted value for the text report: characters as they are (escapes only for
    control characters), elided past `width` with its UTF-8 size and SHA-256 prefix."""
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)   # null, or the redacted {utf8_bytes, sha256}
    if len(value) <= width:
        return _printable(json.dumps(value, ensure_ascii=False))
    import hashlib

    raw = value.encode("utf-8", "surrogatepass")
    head = _printable(json.dumps(value[:width], ensure_ascii=False))[:-1]
    return f"{head}...\" ({len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()[:12]})"


def render_text(report: dict[str, Any]) -> str:
    """A short verdict for people: status first, then one line per call and finding."""
    calls, findings = report["calls"], report["findings"]
    verdict = {"pass": "PASS: the calls may be handed to execution",
               "blocked": "BLOCKED: nothing in this turn may execute",
               "not_applicable": "NOT APPLICABLE: the turn carries no tool call"}[report["status"]]
    profile = report["profile"] if report["profile"] in PROFILES else "unknown"  # never echo an unknown string
    lines = [f"{verdict} (profile {profile}, {len(calls)} call(s), {len(findings)} finding(s))"]
    for call in calls:
        where = f"slot {call['index']}" if call["choice"] is None else f"choice {call['choice']} slot {call['index']}"
        namespace = (f"namespace={_text_value(call['namespace'], _TEXT_ID_WIDTH)} " if "namespace" in call else "")
        lines.append(f"  call {where}: {call['state']} id={_text_value(call['id'], _TEXT_ID_WIDTH)} "
                     f"{namespace}name={_text_value(call['name'], _TEXT_ID_WIDTH)} "
                     f"arguments={_text_value(call['arguments'], _TEXT_ARGUMENT_WIDTH)}")
    lines += [_text_finding(item, report.get("arguments_redacted")) for item in findings]
    for item in report.get("restated_finishes", ()):
        lines.append(f"  note: choice {item['choice']} restated its finish_reason {_token(item['reason'])} at position "
                     f"{item['position']} on a usage chunk; read once, as the SDKs read it")
    return "\n".join(lines)


def _text_finding(item: dict[str, Any], redacted: Any) -> str:
    """One finding's line in the text report: its code, where it arose (the stream position or the end,
    the choice and slot), its message, and the pointer when the arguments it points into are redacted."""
    if item["position"] is not None:
        at = f"position {item['position']}"
    else:
        at = "the envelope" if item["code"] in (INVALID_FIXTURE, UNKNOWN_PROFILE) else "end of stream"
    parts = ([] if item["choice"] is None else [f"choice {item['choice']}"]) + (
        [] if item["index"] is None else [f"slot {item['index']}"])
    where = ", " + " ".join(parts) if parts else ""
    pointer = f" (at {_printable(item['pointer'])})" if "pointer" in item and redacted else ""
    return f"  {item['code']} at {at}{where}: {_printable(item['message'])}{pointer}"


# --- CI report formats -----------------------------------------------------------

def envelope_spans(text: str) -> dict[str, Any]:
    """Where the top-level members of an envelope start in its text (character offsets).

    Returns {key: offset of the key's opening quote}, plus "<stream>": the offsets of
    the elements of the chunks/events list, "<values>": {key: (start, end) of its value}
    and "<end>": the offset of the closing brace.  Best effort: text that is not one JSON
    object gives what was found before the problem (an annotation then points higher up).
    """
    decoder = json.JSONDecoder()
    values: dict[str, tuple[int, int]] = {}
    out: dict[str, Any] = {"<values>": values}
    ws = _WS_RUN.match
    try:
        pos = ws(text, 0).end()
        if not text.startswith("{", pos):
            return out
        pos = ws(text, pos + 1).end()
        while text.startswith('"', pos):
            key, after = decoder.raw_decode(text, pos)
            out.setdefault(key, pos)
            pos = ws(text, after).end()
            if not text.startswith(":", pos):
                return out
            pos = ws(text, pos + 1).end()
            value_start = pos
            if key in ("chunks", "events") and text.startswith("[", pos) and "<stream>" not in out:
                out["<stream>"] = []
                pos = _element_starts(text, pos, decoder, out["<stream>"])
                if pos is None:
                    return out
            else:
                _, pos = decoder.raw_decode(text, pos)
            values.setdefault(key, (value_start, pos))
            pos = ws(text, pos).end()
            if text.startswith("}", pos):
                out["<end>"] = pos
                return out
            if not text.startswith(",", pos):
                return out
            pos = ws(text, pos + 1).end()
        if text.startswith("}", pos):
            out["<end>"] = pos
    except (ValueError, RecursionError):
        pass
    return out


def _element_starts(text: str, pos: int, decoder: json.JSONDecoder, starts: list[int]) -> int | None:
    """From a list's opening bracket at pos: each element's start appended to `starts`, and the offset
    after its closing bracket (None: the list breaks off; a value that is no JSON raises ValueError)."""
    ws = _WS_RUN.match
    pos = ws(text, pos + 1).end()
    while not text.startswith("]", pos):
        starts.append(pos)
        _, pos = decoder.raw_decode(text, pos)
        pos = ws(text, pos).end()
        if text.startswith(",", pos):
            pos = ws(text, pos + 1).end()
        elif not text.startswith("]", pos):
            return None
    return pos + 1


_LINE_END = re.compile(r"\r\n?|\n")


class _Lines:
    """1-based line and column of character offsets in one text (lines end at LF, CRLF or CR).

    The line starts are found once, so each lookup is a binary search: a report with
    a thousand annotations on a large file costs one pass over it, not one per annotation.
    """

    def __init__(self, text: str) -> None:
        self.starts = [0] + [match.end() for match in _LINE_END.finditer(text)]

    def at(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1


def _github_escape(text: str, property_value: bool = False) -> str:
    """Escape a workflow-command value (GitHub's rules: % CR LF, and : , in properties)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_value else text


_JSON_ERROR_AT = re.compile(r"at line ([0-9]{1,9}) column ([0-9]{1,9})")   # where the strict parser stopped


def _annotation_offset(finding: dict, spans: dict, starts: list[int], stream_key: int | None) -> int | None:
    """Where in the file a finding points: its stream element, the profile key, the envelope key
    its message names first, else the stream key (None: nowhere, line 1)."""
    if finding["position"] is not None and finding["position"] < len(starts):
        return starts[finding["position"]]
    if finding["code"] == UNKNOWN_PROFILE:
        return spans.get("profile")
    if finding["code"] == INVALID_FIXTURE:   # the key the message names first
        named = sorted((finding["message"].find(f'"{key}"'), key) for key in spans
                       if not key.startswith("<") and f'"{key}"' in finding["message"])
        return spans[named[0][1]] if named else None
    return stream_key


def _finding_place(finding: dict, spans: dict, starts: list[int], stream_key: int | None,
                   where: _Lines) -> tuple[int, int]:
    """(line, column) of a finding's annotation: where _annotation_offset points, else, for a syntax
    error, where the parser stopped, else line 1."""
    offset = _annotation_offset(finding, spans, starts, stream_key)
    if offset is not None:
        return where.at(offset)
    at = _JSON_ERROR_AT.search(finding["message"]) if finding["code"] == INVALID_FIXTURE else None
    return (int(at.group(1)), int(at.group(2))) if at is not None else (1, 1)


def _difference_annotations(name: str, differences: list[str], spans: dict, where: _Lines | None) -> list[str]:
    """One annotation per expect difference, at the expect key (a file that is not strict JSON: where
    the parser stopped; else line 1)."""
    lines = []
    line, col = where.at(spans["expect"]) if where is not None and "expect" in spans else (1, 1)
    for difference in differences:
        at = _JSON_ERROR_AT.search(difference) if "expect" not in spans else None
        if at is not None:   # an unreadable file: the annotation goes where the parser stopped
            line, col = int(at.group(1)), int(at.group(2))
        message = _github_escape("expect: " + _printable(difference))
        lines.append(f"::error file={name},line={line},col={col}::{message}\n")
    return lines


def render_github(path: str, report: dict[str, Any], differences: list[str] | None, data: bytes,
                  allow_not_applicable: bool = False) -> str:
    """GitHub Actions annotations: one ::error per finding, at the line of its chunk or event.

    A finding with a stream position points at that element of chunks/events; one
    at the end of the stream at the stream key; an envelope finding at the key it
    names (else line 1).  Expect differences are one annotation each, at the expect key (a file
    that is not strict JSON: where the parser stopped; else line 1).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    spans = envelope_spans(text) if text else {}
    starts = spans.get("<stream>", [])
    stream_key = spans.get("chunks", spans.get("events"))
    name = _github_escape(_printable(path), True)
    lines = []
    findings = report["findings"] if differences is None else []
    where = _Lines(text) if findings or differences else None
    for finding in findings:
        line, col = _finding_place(finding, spans, starts, stream_key, where)
        message = _github_escape(f"{finding['code']}: {_printable(finding['message'])}")
        lines.append(f"::error file={name},line={line},col={col}::{message}\n")
    lines += _difference_annotations(name, differences or [], spans, where)
    if differences is None and report["status"] == "not_applicable" and not allow_not_applicable:
        # it fails the step (exit 2), so it is an error, and says how to let it pass
        lines.append(f"::error file={name},line=1,col=1::not_applicable: the turn carries no tool call, so the step "
                     "fails (exit 2); --allow-not-applicable lets such a turn pass\n")
    return "".join(lines)


# What XML 1.0 cannot carry: controls but tab, LF and CR; surrogates; U+FFFE and U+FFFF.
_XML_UNSAFE = re.compile(f"[\t\n\r{_ACTING}\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    """Characters XML 1.0 cannot carry (controls, lone surrogates) as \\uXXXX escapes."""
    return _XML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _junit_failure(report: dict[str, Any], differences: list[str] | None) -> tuple[str, str, list[str]]:
    """(type, message, lines) of a failing case: its expect differences, else its status and codes."""
    if differences:
        return "expect_mismatch", f"expect mismatch: {differences[0]}", differences
    codes = sorted({f["code"] for f in report["findings"]})
    headline = f"{report['status']}: " + (", ".join(codes) or "the turn carries no tool call")
    return report["status"], headline, [f"{f['code']}: {f['message']}" for f in report["findings"]]


def render_junit(cases: list[tuple[str, dict[str, Any], int, list[str] | None]], allow_not_applicable: bool) -> str:
    """One JUnit XML document: a test case per fixture (the schema GitHub, GitLab and Jenkins read).

    Only elements and attributes of the common schema (Jenkins' junit-10.xsd) are used.

    A case fails when the fixture does not succeed: blocked, or an expect mismatch
    under --expect; not_applicable is skipped with --allow-not-applicable, else a failure.
    """
    import xml.etree.ElementTree as ET

    failures = sum(1 for _, _, code, _ in cases if code != EXIT_PASS)
    skipped = sum(1 for _, report, code, differences in cases
                  if code == EXIT_PASS and differences is None and report["status"] == "not_applicable")
    suites = ET.Element("testsuites", name=TOOL, tests=str(len(cases)), failures=str(failures), errors="0")
    suite = ET.SubElement(suites, "testsuite", name=TOOL, tests=str(len(cases)), failures=str(failures),
                          errors="0", skipped=str(skipped))
    for path, report, code, differences in cases:
        case = ET.SubElement(suite, "testcase", classname=TOOL, name=_xml_safe(path))
        if code != EXIT_PASS:
            kind, headline, body = _junit_failure(report, differences)
            failure = ET.SubElement(case, "failure", type=kind, message=_xml_safe(headline[:1000]))
            failure.text = "\n".join(_xml_safe(line) for line in body)
        elif differences is None and report["status"] == "not_applicable" and allow_not_applicable:
            ET.SubElement(case, "skipped", message="not applicable: the turn carries no tool call")
        out = ET.SubElement(case, "system-out")
        out.text = _xml_safe(f"status {report['status']}, {len(report['calls'])} call(s), "
                             f"{len(report['findings'])} finding(s)")
    document = ET.tostring(suites, encoding="unicode")
    # ASCII with character references: well-formed whatever encoding stdout writes
    document = document.encode("ascii", "xmlcharrefreplace").decode().replace("##[", "#&#35;[")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + document + "\n"


# ---------------------------------------------------------------------------
# Capture import: a raw Server-Sent-Events body becomes a fixture envelope
# ---------------------------------------------------------------------------

# Rules of this section (it uses only json and re from the imports above):
#   * Nothing is dropped or reordered: payload N is chunks[N] / events[N].
#   * Redaction keeps every key, every type and every empty string, so the
#     verdict cannot change; call ids, names and argument fragments are never
#     modified.  Credentials are masked everywhere else, with or without
#     redaction, and are only warned about inside call identity and arguments.


MASKED_SECRET = "[masked]"

# The largest body (and --request / --schemas file) capture reads, in bytes: the default
# --max-input-bytes, since the envelope must be validated in turn.  A larger one is an error
# (capture never writes an envelope of the first 256 MiB of a longer stream).
CAPTURE_MAX_BYTES = 256 * 1024 * 1024



# (what it looks like, pattern); group 1 is the secret itself.  Patterns of this section
# are compiled on first use (_compiled): only `capture` needs them, and every start pays
# for a compile at import.
_SECRET_PATTERNS = (
    ("an Anthropic API key", r"(?<![A-Za-z0-9_-])(sk-ant-[A-Za-z0-9_-]{10,})"),
    ("an API key (sk-...)", r"(?<![A-Za-z0-9_-])(sk-(?!ant-)[A-Za-z0-9_-]{20,})"),
    ("a bearer token", r"(?i)(?<![A-Za-z0-9])bearer\s+([A-Za-z0-9._~+/-]{16,}=*)"),
    ("an AWS access key id", r"(?<![A-Z0-9])(AKIA[0-9A-Z]{16})(?![0-9A-Z])"),
    ("a GitHub token", r"(?<![A-Za-z0-9_])((?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,})"),
    ("a Slack token", r"(?<![A-Za-z0-9-])(xox[abposr]-[A-Za-z0-9-]{10,})"),
    ("a JSON Web Token", r"(?<![A-Za-z0-9_-])(eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)"),
    ("an API key", r"(?i)api[_-]?key[\"'=:\s]+([A-Za-z0-9._~+/-]{20,})"),
    ("a Google OAuth token", r"(?<![A-Za-z0-9_.-])(ya29\.[A-Za-z0-9_.-]{20,})"),
    ("a Google API key", r"(?<![A-Za-z0-9_-])(AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])"),
    # scheme://user:password@ : the password (the pattern starts at "://", so a search is linear)
    ("a password in a URL", r"://[^/?#\s:@\"'<>\\]*:([^/?#\s@\"'<>\\]+)@"),
    # name: value / name=value, the name maybe quoted (or JSON-escaped), a scheme word maybe before
    # the value, which may be on the next line; the value is 8 characters at least, up to its
    # closing quote when it has an opening one, else up to a space, quote or separator (& , ;).
    # A quoted value runs to the same quote, backslash escapes skipped (a JSON-escaped \" opening:
    # to the \" that closes it, an escaped inner \\\" skipped); each run is taken atomically (a
    # lookahead captures it, a back-reference consumes it: Python 3.10 has no possessive repeat) and
    # its steps start differently, so a failed search costs one pass to the line's end.  The name is kept.
    ("a credential-named value",
     r"(?ai)(?:authori[sz]ation|api[-_]?key|secret(?:[-_]?access)?(?:[-_]?key)?|token|passw(?:or)?d|pwd)"
     r"\\?[\"']?[ \t]*[:=]\s*(?:\\?[\"'])?(?:(?:basic|bearer|token|digest|negotiate)\s+)?(?!\[masked\])"
     r"((?<=(?<!\\)\")(?=(?P<dq>(?:[^\"\\\r\n]|\\[^\r\n]){8,}))(?P=dq)(?=\")"
     r"|(?<=(?<!\\)')(?=(?P<sq>(?:[^'\\\r\n]|\\[^\r\n]){8,}))(?P=sq)(?=')"
     r"|(?<=\\\")(?=(?P<jdq>(?:[^\"\\\r\n]|\\\\(?:\\[^\r\n]|[^\\\r\n])|\\[^\"\\\r\n]){8,}))(?P=jdq)(?=\\\")"
     r"|(?<=\\')(?=(?P<jsq>(?:[^'\\\r\n]|\\\\(?:\\[^\r\n]|[^\\\r\n])|\\[^'\\\r\n]){8,}))(?P=jsq)(?=\\')"
     r"|[^\s\"'<>,;&\\]{8,})"),
)
# An object member named like a credential holds one when its value is a long string.
_SECRET_KEY = r"(?i)(?:x-)?api[_-]?key|authorization|access[_-]?token"
_SECRET_KEY_MIN = 20


# --- credentials ----------------------------------------------------------------

# Every match of a pattern above holds one of these, and none is shorter than 6 characters
# ("://:x@"): a string without any of them needs no look by the patterns.
_SECRET_HINT = (r"sk-|AKIA|gh[pousr]_|github_pat_|xox[abposr]-|eyJ|ya29\.|AIza|://|(?i:bearer|api[_-]?key)"
                r"|(?ai:authori[sz]ation|secret|token|passw|pwd)")
_SECRET_SHORTEST = 6
# The hint literals and those of _SECRET_KEY, lower-cased, and the \u that could spell any of them
# ("://" also as JSON may write it, ":\/"; "token" and "pwd" only as a credential-named value's name
# can end: before a backslash, a quote, a space or tab, ":" or "=", so "input_tokens" or an id with
# "pwd" inside is not one).
# (the escape first: a body with non-ASCII text, most bodies, has one early, and any() stops there)
_SECRET_LITERALS = (b"\\u", b"sk-", b"akia", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", b"xox",
                    b"eyj", b"bearer", b"api", b"authorization", b"access", b"ya29.", b"aiza", b"://", b":\\/",
                    b":/\\/", b"authorisation", b"secret", b"passw", b"token\\", b"token'", b"token ", b"token\t",
                    b"token:", b"token=", b"pwd\\", b"pwd'", b"pwd ", b"pwd\t", b"pwd:", b"pwd=",
                    # the four non-ASCII letters (?i) folds to i, s and k, as UTF-8 (lower() leaves them)
                    b"\xc4\xb0", b"\xc4\xb1", b"\xc5\xbf", b"\xe2\x84\xaa")


def _secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, what) of every credential-looking run in text, sorted."""
    if len(text) < _SECRET_SHORTEST or _compiled(_SECRET_HINT).search(text) is None:
        return []
    spans = []
    for label, pattern in _SECRET_PATTERNS:
        for match in _compiled(pattern).finditer(text):
            spans.append((match.start(1), match.end(1), label))
    return sorted(spans)


def _mask_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """text with every (possibly overlapping) span replaced by MASKED_SECRET."""
    merged: list[list[int]] = []
    for start, end, _ in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        text = text[:start] + MASKED_SECRET + text[end:]
    return text


def _labels(spans: list[tuple[int, int, str]]) -> str:
    return " and ".join(dict.fromkeys(label for _, _, label in spans))


def _render_path(prefix: str, path: tuple) -> str:
    """chunks[3].choices[0].delta.content, for warnings (never the value; a member name
    that is not a protocol word is shown as <member>, since names are wire content too)."""
    out = prefix
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (("." if out else "") + (_protocol_word(key) or "<member>"))
    return out


def _mask_secrets(value: Any, path: tuple, protected: dict[tuple, str], keep: bool,
                  prefix: str, line: str, warnings: list[str]) -> Any:
    """value with credentials masked (unless keep or a protected path); one warning per field.
    A "base64" path is masked whole, to a base64 stand-in: "[masked]" inside would make it refused.
    It alone recurses: a helper between two levels would lower how deep a payload may nest."""
    base64 = not keep and protected.get(path) == "base64"
    keep = keep or path in protected and not base64
    if isinstance(value, str):
        spans = _secret_spans(value)
        if not spans:
            return value
        return _masked_string(value, spans, base64, keep, _render_path(prefix, path), line, warnings)
    if isinstance(value, list):
        return [_mask_secrets(item, path + (n,), protected, keep, prefix, line, warnings)
                for n, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if _credential_named(key, item):
            member = path + (key,)
            out[key] = _credential_member(item, keep or member in protected, _render_path(prefix, member), line,
                                          warnings)
            continue
        masked = _mask_secrets(item, path + (key,), protected, keep, prefix, line, warnings)
        spans = _secret_spans(key) if isinstance(key, str) else []
        if spans and not keep:   # a credential used as a member name: the name is masked too
            warnings.append(f"{_render_path(prefix, path + (key,))} ({line}): a member name holding "
                            f"{_labels(spans)} masked")
            key = _unused_name(_mask_spans(key, spans), out, value)
        out[key] = masked
    return out


def _masked_string(value: str, spans: list[tuple[int, int, str]], base64: bool, keep: bool, where: str, line: str,
                   warnings: list[str]) -> str:
    """A string of _mask_secrets in which spans were found (where: its path, rendered)."""
    if base64:
        warnings.append(f"{where} ({line}): {_labels(spans)} masked (the whole base64 value)")
        return REDACTED_BASE64
    if keep:
        warnings.append(f"{where} ({line}): looks like it holds {_labels(spans)}; left unchanged "
                        "because call identity and arguments are kept byte for byte")
        return value
    warnings.append(f"{where} ({line}): {_labels(spans)} masked")
    return _mask_spans(value, spans)


def _credential_named(key: Any, item: Any) -> bool:
    """Whether a member holds a credential by its name alone: a long string no secret pattern finds
    under a credential's name (what a pattern finds is masked wherever it is)."""
    return (isinstance(item, str) and len(item) >= _SECRET_KEY_MIN and _compiled(_SECRET_KEY).fullmatch(key)
            and not _secret_spans(item))


def _credential_member(item: str, keep: bool, where: str, line: str, warnings: list[str]) -> str:
    """A credential-named member's value: masked whole, or kept (call identity and arguments)."""
    if keep:
        warnings.append(f"{where} ({line}): a credential-named member; left unchanged "
                        "because call identity and arguments are kept byte for byte")
        return item
    warnings.append(f"{where} ({line}): a credential-named member masked")
    return MASKED_SECRET


def _unused_name(name: str, out: dict, value: dict) -> str:
    """name, with "*" added until no member of out or value has it."""
    while name in out or name in value:
        name += "*"
    return name


def _value_at(value: Any, path: tuple) -> Any:
    """The member at path, or None when any step is missing."""
    for key in path:
        if isinstance(key, int) and isinstance(value, list) and key < len(value):
            value = value[key]
        elif isinstance(key, str) and isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


class _FragmentGroup:
    """The argument fragments of one slot, for credentials split across them: their text joined in
    blocks and where each ends (a string object per fragment would cost ~60 bytes of its own)."""

    __slots__ = ("first", "pieces", "ends", "length")

    def __init__(self, first: str) -> None:
        import array

        self.first = first          # where the first fragment is, for the warning
        self.pieces: list[str] = []
        self.ends = array.array("q")
        self.length = 0

    def add(self, text: str) -> None:
        self.length += len(text)
        self.ends.append(self.length)
        self.pieces.append(text)
        if len(self.pieces) >= 4096:
            self.pieces[:] = ["".join(self.pieces)]

    def extend(self, texts: list[str]) -> None:
        """add() of each text."""
        import itertools

        if not texts:
            return
        ends = itertools.accumulate(map(len, texts), initial=self.length)
        next(ends)   # the initial value
        self.ends.extend(ends)
        self.length = self.ends[-1]
        self.pieces += texts
        if len(self.pieces) >= 4096:
            self.pieces[:] = ["".join(self.pieces)]


def _split_secret_warnings(groups: dict[tuple, _FragmentGroup]) -> list[str]:
    """Credentials that only appear once a slot's fragments are joined."""
    warnings = []
    for key, group in groups.items():
        if len(group.ends) < 2:
            continue
        ends = group.ends
        # a span lies inside one fragment when it ends by the end of the fragment its start is in
        split = [span for span in _secret_spans("".join(group.pieces))
                 if span[1] > ends[bisect.bisect_right(ends, span[0])]]
        if split:
            slot = f"slot {key[1]}" if key[0] is None else f"choice {key[0]} slot {key[1]}"
            warnings.append(f"arguments of {slot} (from {group.first}): {_labels(split)} split across "
                            "fragments; left unchanged because arguments are kept byte for byte")
    return warnings


def _may_hold_secrets(raw: bytes) -> bool:
    """Whether a body can hold a credential a payload walk would find (False: the walk is skipped).

    Every secret pattern starts with a literal of _SECRET_HINT, and a credential-named member
    matches _SECRET_KEY; a \\u escape could spell either, so a body with one is always walked.
    The scan of a slot's joined fragments runs whatever this says.
    """
    lowered = raw.lower()   # every literal below, lower-cased: a few scans in C instead of a regex
    return any(hint in lowered for hint in _SECRET_LITERALS)


# What a payload's capture_text line (ASCII JSON, lower-cased) holds when the walk of _mask_secrets could
# find anything in it: every literal a match of _SECRET_HINT or _SECRET_KEY starts with or holds, and
# the escapes of the four non-ASCII letters their case-insensitive parts match (U+0130 and U+0131 as
# "i", U+017F as "s", U+212A as "k").  No literal holds a character JSON escapes, so a match inside a
# string or a member name is still there in the line ("token\\" and "pwd\\" stand for a name followed
# by a quote, a backslash or a tab, which the line writes escaped); a line without any of them is left
# as it is.
_LINE_SECRET_LITERALS = ("sk-", "akia", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "eyj",
                         "bearer", "api", "authorization", "access", "ya29.", "aiza", "://", "authorisation",
                         "secret", "passw", "token\\", "token'", "token ", "token:", "token=", "pwd\\", "pwd'",
                         "pwd ", "pwd:", "pwd=",
                         "\\u0130", "\\u0131", "\\u017f", "\\u212a")


def _line_may_hold_secrets(line: str) -> bool:
    lowered = line.lower()
    for literal in _LINE_SECRET_LITERALS:
        if literal in lowered:
            return True
    return False


# A JSON string token (in text already parsed as strict JSON), and what follows a member name.
_JSON_STRING_TOKEN = r'"(?:[^"\\\x00-\x1f]|\\.)*"'
_JSON_NAME_COLON = r"[ \t\n\r]*:"
# Stands in for a fragment while a template is checked (two private-use characters).
_TEMPLATE_HOLE = "\ue000\ue001"


class _Template:
    """Payload texts that differ from an earlier one only in its argument fragment and its integers
    that are written back as they are (a sequence number): the text's pieces around those tokens
    ("s" the fragment's string, "i" an integer), and the capture_text line's pieces around them."""

    __slots__ = ("pieces", "kinds", "out", "order", "group", "event_pieces", "lines")

    def __init__(self, pieces: list[str], kinds: str, out: list[str], order: list[int],
                 group: _FragmentGroup | None, name: Any) -> None:
        self.pieces, self.kinds, self.out, self.order, self.group = pieces, kinds, out, order, group
        # the whole SSE event around the tokens, when the event is a plain one (see _SSE_PLAIN_EVENT)
        self.event_pieces: list[str] | None = None
        self.lines = 2 if name is None else 3
        if (name is None or isinstance(name, str)) and not any("\n" in part or "\r" in part
                                                              for part in [*pieces, name or ""]):
            self.event_pieces = [("" if name is None else f"event: {name}\n") + "data: " + pieces[0],
                                 *pieces[1:-1], pieces[-1] + "\n\n"]

    def fit(self, pieces: list[str], text: str, pos: int) -> tuple[int, list[str]] | None:
        """(the end, the tokens' values as text: the fragment decoded, an integer as written) of
        pieces fitted at pos, or None."""
        if not text.startswith(pieces[0], pos):
            return None
        pos += len(pieces[0])
        values = []
        for number, kind in enumerate(self.kinds, 1):
            if kind == "s":
                if text[pos:pos + 1] != '"':
                    return None
                try:
                    value, pos = _json_string(text, pos + 1, True)
                except ValueError:
                    return None
            else:
                match = _compiled(_TEMPLATE_INTEGER).match(text, pos)
                if match is None:
                    return None
                value, pos = match.group(), match.end()
            if not text.startswith(pieces[number], pos):
                return None
            values.append(value)
            pos += len(pieces[number])
        return pos, values

    def line(self, values: list[str], encoded: str) -> str:
        """The capture_text line of the fitted values (encoded: the fragment's JSON)."""
        out = self.out
        parts = [out[0]]
        for slot, hole in enumerate(self.order):
            parts.append(encoded if self.kinds[hole] == "s" else values[hole])
            parts.append(out[slot + 1])
        return "".join(parts)


# An integer token a template takes: written back by json.dumps exactly as it is (not -0, a few digits).
_TEMPLATE_INTEGER = r"-?(?:0|[1-9][0-9]{0,15})(?![0-9.eE])"
_TEMPLATE_PROBE = 904_857_316_000_000   # + hole number: the stand-in for an integer while a template is checked


_LINE_ENCODER: list = []   # the C encoder of _line, made on first use


def _line(payload: Any) -> str:
    """json.dumps(payload, ensure_ascii=True), with the C encoder json.dumps makes at every call made
    once (no cycle check: a parsed payload has none; a nesting too deep is a RecursionError all the same)."""
    make = json.encoder.c_make_encoder
    if make is None:
        return json.dumps(payload, ensure_ascii=True)
    if not _LINE_ENCODER:
        _LINE_ENCODER.append(make(None, json.JSONEncoder().default, _encode_ascii, None, ": ", ", ", False, False,
                                  True))
    return "".join(_LINE_ENCODER[0](payload, 0))


def _where(where: str | tuple[str, int]) -> str:
    """A payload's place as warnings name it ("line 3"), from scrub's where."""
    return where if isinstance(where, str) else f"{where[0]} {where[1]}"


_NO_FIT = object()   # _string_between: the text is not that shape


def _string_between(text: str, before: str, after: str) -> Any:
    """The value of the one JSON string token that text holds between before and after; _NO_FIT when
    text is not before + a string token + after; None when the token does not decode."""
    start = len(before) + 1
    if not (text.startswith(before) and text.endswith(after) and text[start - 1:start] == '"'):
        return _NO_FIT
    try:
        value, end = _json_string(text, start, True)
    except ValueError:
        return None
    return value if end == len(text) - len(after) else _NO_FIT


def _template_tokens(text: str, value: str) -> list[tuple[int, int, str]] | None:
    """(start, end, kind) of every string token of text whose value is value ("s": the fragment's, when
    it is) and of every integer token ("i"); None when text's layout is not for templates."""
    tokens = []
    for match in _compiled(_JSON_STRING_TOKEN + "|" + _TEMPLATE_INTEGER).finditer(text):
        if text[match.start()] != '"':
            if text[match.start() - 1:match.start()] not in (":", ",", "[", " ", "\t", "\n", "\r") \
                    or match.group() == "-0":
                return None   # a number token seen from its middle: this layout is not for templates
            tokens.append((match.start(), match.end(), "i"))
            continue
        if _compiled(_JSON_NAME_COLON).match(text, match.end()):
            continue   # a member name
        try:
            if _json_string(text, match.start() + 1, True)[0] == value:
                tokens.append((match.start(), match.end(), "s"))
        except ValueError:
            return None
    return tokens


def _template_pieces(text: str, tokens: list[tuple[int, int, str]]) -> tuple[list[str], list[str]]:
    """(the pieces of text around the tokens, the stand-in of each token: the hole's string, or an
    integer of its own)."""
    pieces, marks, at = [], [], 0
    for number, (start, end, kind) in enumerate(tokens):
        pieces.append(text[at:start])
        marks.append('"' + _TEMPLATE_HOLE + '"' if kind == "s" else str(_TEMPLATE_PROBE + number))
        at = end
    pieces.append(text[at:])
    return pieces, marks


def _around_holes(line: str, written: list[str]) -> tuple[list[int], list[str]] | None:
    """(the holes in the order line holds them, the pieces of line around them) when line holds each
    written stand-in once; else None."""
    if any(line.count(mark) != 1 for mark in written):
        return None
    order = sorted(range(len(written)), key=lambda hole: line.index(written[hole]))
    out, at = [], 0
    for hole in order:
        start = line.index(written[hole])
        out.append(line[at:start])
        at = start + len(written[hole])
    out.append(line[at:])
    return order, out


class _ChunkFrames:
    """The frames of one AWS event-stream body as _Scrubber.fast_chunks reads them: the readers it
    needs, made once per body, and the prelude checksums already checked, by header size then length."""

    __slots__ = ("raw", "view", "crc32", "unpack", "tail", "a2b", "error", "checked")

    def __init__(self, raw: bytes) -> None:
        import binascii
        import struct
        import zlib

        self.raw, self.view, self.crc32 = raw, memoryview(raw), zlib.crc32
        self.unpack, self.tail = struct.Struct(">III").unpack_from, struct.Struct(">I").unpack_from
        self.a2b, self.error = _a2b_base64_strict, binascii.Error
        self.checked: dict[int, dict[int, int]] = {}

    def events(self, pos: int, limit: int, head: bytes, chunk: tuple[bytes, Callable[..., Any]]) -> tuple[list, int]:
        """(the event texts the base64 of up to limit frames from pos on carries, where they end): frames
        read while each is whole, both its checksums hold and it is plainly a chunk (see fast_chunks)."""
        raw, view, crc32, unpack, tail, a2b, error = (self.raw, self.view, self.crc32, self.unpack, self.tail,
                                                      self.a2b, self.error)
        size, hlen, startswith, find = len(raw), len(head), raw.startswith, raw.find
        opening, closing = chunk
        head += opening   # the header bytes, then the payload's start
        skip = 12 + len(head)
        preludes = self.checked.get(hlen)   # a frame's length -> its prelude's checksum (its header size is hlen)
        if preludes is None:
            preludes = self.checked[hlen] = {}
        events: list[bytes] = []
        at = pos
        while size - at >= 16 and limit:
            total, header_size, prelude_crc = unpack(raw, at)
            end = at + total
            if header_size != hlen or total < skip + 4 or end > size or not startswith(head, at + 12):
                break
            if preludes.get(total) != prelude_crc:
                if crc32(view[at:at + 8]) != prelude_crc:
                    break
                preludes[total] = prelude_crc
            if crc32(view[at:end - 4]) != tail(raw, end - 4)[0]:
                break
            quote = find(b'"', at + skip, end - 4)
            if quote < 0 or closing(raw, quote, end - 4) is None:
                break
            try:   # strict: only base64 characters, padding only at the end (what the chunk pattern takes)
                events.append(a2b(view[at + skip:quote]))
            except error:
                break
            at, limit = end, limit - 1
        return events, at

    def past(self, pos: int, count: int) -> int:
        """Where the count frames from pos on end."""
        for _ in range(count):
            pos += self.unpack(self.raw, pos)[0]
        return pos


class _Scrubber:
    """Redacts (if asked) and masks credentials in one payload at a time, in stream order.

    scrub(payload, where) returns the payload, or with encode its capture_text line (ASCII JSON);
    warnings() once every payload went through.  walk: look for credentials (a payload whose line
    holds none of their literals is left as it is: the walk would change nothing).

    Templates (encode only): most of a tool call's payloads are one layout with another argument
    fragment.  After a payload with one fragment was written the long way, its text is taken as a
    template when the payload made from the same text with a stand-in for the fragment gives the
    same line around the stand-in (and that line holds no credential literal).  A later text that
    is the template's text around another strict JSON string token then parses to the same payload
    with that fragment, which redaction keeps byte for byte: its line is the template's line around
    the fragment's JSON, written without parsing (unless the fragment holds a credential literal:
    then the long way, for the warning).  make(text, key) is the reader's own text -> payload.

    Blank templates (encode and blank only; the invoke body): a payload without fragments whose line
    stays the same when one of its strings is replaced by either of two stand-ins (redaction empties
    that string whatever it says, and no fragment appears) is taken as a template with that string as
    its hole.  A later text that is the template's text around another non-empty strict JSON string
    token has that line (a text delta: the same event with [redacted] for its text).
    """

    _MAX_TEMPLATES = 4      # per key (event name, frame member)
    _MAX_MISSES = 16        # payloads that gave no template, per key, before none is looked for
    _BLANK_STAND_INS = ('"' + _TEMPLATE_HOLE + '"', '"x"')   # the JSON tokens a blank template's hole is tried with

    def __init__(self, row: Profile, redact: bool, walk: bool, encode: bool,
                 make: Callable[[str, Any], Any] | None = None, blank: bool = False) -> None:
        self.row = row
        self.redact, self.walk, self.encode = redact, walk, encode
        self.count = 0
        self.found: list[str] = []
        self.groups: dict[tuple, _FragmentGroup] = {}
        self.make = make if encode else None
        # without redaction text stays, and a credential may be split across its pieces: each
        # payload's text strings by group (_text_pieces), masked by finish() once all came
        self.texts: dict[tuple, tuple[Any, list[str]]] | None = None if redact else {}
        self.wheres: list[str] = []
        if not redact and encode:
            raise ValueError("a capture without redaction is not encoded as it is read (see _capture)")
        self.templates: dict[Any, list[_Template]] = {}
        self.misses: dict[Any, int] = {}
        self.clean: dict[str, bool] = {}
        # blank templates, per key: (text before the hole's token, text after it, the line)
        self.blanks: dict[Any, list[tuple[str, str, str]]] | None = {} if blank and self.make is not None else None
        self.blank_misses: dict[Any, int] = {}
        self.bulk: dict[tuple, Any] = {}   # _bulk's patterns
        self.chunk_tools: _ChunkFrames | None = None   # fast_chunks' reader of the body

    def scrub(self, payload: Any, where: str | tuple[str, int], text: str | Callable[[], str | None] | None = None,
              key: Any = None) -> Any:
        """where: "line 3", or ("line", 3), written so only when a warning or a slot needs it."""
        result = self._scrub_one(payload, where, text, key)
        if self.texts is not None:   # its place in the stream is the number of payloads before it
            # the pieces as they came (without redaction the payload is the raw one), and where each
            # is in the result (its member names masked too)
            if result is payload:
                _text_pieces(payload, (), self.row.wire.protected_paths(payload), (), len(self.wheres), self.texts)
            else:
                _text_pieces_masked(payload, (), self.row.wire.protected_paths(payload), (), len(self.wheres),
                                    self.texts, result)
            self.wheres.append(_where(where))
        return result

    def finish(self, out: list) -> None:
        """Once every payload went through (out: them, in order): without redaction, mask the
        credentials that only appear once a group's text pieces are joined (_mask_split_text)."""
        if self.texts is not None:
            _mask_split_text(self.row, out, self.texts, self.wheres, self.row.stream_key, self.found)
            self.texts = None

    def _scrub_one(self, payload: Any, where: str | tuple[str, int], text: str | Callable[[], str | None] | None,
                   key: Any) -> Any:
        row = self.row
        if self.redact:
            payload = row.capture.redact(payload)
        protected = row.wire.protected_paths(payload)
        fragments = self._fragments(payload, protected, where)
        pos = self.count
        self.count += 1
        line = None
        if self.walk:
            line = _line(payload)
            if not self._clean(line):
                payload = _mask_secrets(payload, (), protected, False, f"{row.stream_key}[{pos}]", _where(where),
                                        self.found)
                return _line(payload) if self.encode else payload
        if not self.encode:
            return payload
        if line is None:
            line = _line(payload)
        if text is not None:
            self._look_for_template(text, key, payload, fragments, line)
        return line

    def _fragments(self, payload: Any, protected: dict[tuple, str], where: str | tuple[str, int]) -> list[tuple]:
        """The paths of payload's argument fragments (strings), each added to its slot's group."""
        fragments = []
        for path, kind in protected.items():
            value = _value_at(payload, path) if kind == "fragment" else None
            if isinstance(value, str):
                fragments.append(path)
                group = self.row.wire.fragment_key(payload, path)
                if group is not None:
                    slot = self.groups.get(group)
                    if slot is None:
                        slot = self.groups[group] = _FragmentGroup(_where(where))
                    slot.add(value)
        return fragments

    def _look_for_template(self, text: str | Callable[[], str | None], key: Any, payload: Any,
                           fragments: list[tuple], line: str) -> None:
        """A payload with one fragment, or (blank) with none, whose text may become a template of key:
        tried, and a miss counted (text: the payload's text, or what decodes it: the invoke body's)."""
        if len(fragments) == 1 and self.learning(key):
            if callable(text):
                text = text()
            if text is not None and not self._learn(text, key, payload, fragments[0], line):
                self.misses[key] = self.misses.get(key, 0) + 1
        elif not fragments and self.learning_blank(key):
            if callable(text):
                text = text()
            if text is not None and not self._learn_blank(text, key, line):
                self.blank_misses[key] = self.blank_misses.get(key, 0) + 1

    def learning_blank(self, key: Any) -> bool:
        """Whether a payload of key without fragments may still become a blank template."""
        return (self.blanks is not None and len(self.blanks.get(key, ())) < self._MAX_TEMPLATES
                and self.blank_misses.get(key, 0) < self._MAX_MISSES)

    def _learn_blank(self, text: str, key: Any, line: str) -> bool:
        """Whether text (of a payload without fragments, whose line is line) became a blank template."""
        if not self._clean(line):
            return False
        tokens = [match for match in _compiled(_JSON_STRING_TOKEN).finditer(text)
                  if not _compiled(_JSON_NAME_COLON).match(text, match.end())]
        for match in reversed(tokens[-8:]):   # the last strings first: an event's text comes after its type
            try:
                value = _json_string(text, match.start() + 1, True)[0]
            except ValueError:
                return False
            if not value:
                continue
            before, after = text[:match.start()], text[match.end():]
            if all(self._blank_probe(before + mark + after, key, line) for mark in self._BLANK_STAND_INS):
                self.blanks.setdefault(key, []).append((before, after, line))
                return True
        return False

    def _blank_probe(self, text: str, key: Any, line: str) -> bool:
        """Whether the payload of text (a stand-in in the hole) has no fragment and the same line."""
        row = self.row
        try:
            probe = self.make(text, key)
            if self.redact:
                probe = row.capture.redact(probe)
            if any(kind == "fragment" and isinstance(_value_at(probe, path), str)
                   for path, kind in row.wire.protected_paths(probe).items()):
                return False
            return _line(probe) == line
        except (CaptureError, JsonProblem, RecursionError):
            return False

    def learning(self, key: Any) -> bool:
        """Whether a payload of key may still become a template."""
        return (self.make is not None and len(self.templates.get(key, ())) < self._MAX_TEMPLATES
                and self.misses.get(key, 0) < self._MAX_MISSES)

    def _learn(self, text: str, key: Any, payload: Any, path: tuple, line: str) -> bool:
        """Whether text became a template (payload: its redacted payload, line: its line)."""
        value = _value_at(payload, path)
        tokens = _template_tokens(text, value)
        if tokens is None or sum(kind == "s" for _, _, kind in tokens) != 1:
            return False
        group = self.row.wire.fragment_key(payload, path)
        fragment = [token for token in tokens if token[2] == "s"]
        holes = self._integer_holes(text, key, tokens, fragment, path, group)
        template = self._probe(text, key, sorted(fragment + holes), path, group)
        if template is None and holes:
            template = self._probe(text, key, fragment, path, group)
        if template is None:
            return False
        fitted = template.fit(template.pieces, text, 0)
        if fitted is None or fitted[0] != len(text) or template.line(fitted[1], _encode_ascii(value)) != line:
            return False
        self.templates.setdefault(key, []).append(template)
        return True

    def _integer_holes(self, text: str, key: Any, tokens: list, fragment: list, path: tuple,
                       group: Any) -> list[tuple[int, int, str]]:
        """The integer tokens of text that are holes, 8 at most: one is when a stand-in in it changes
        nothing but itself in the line (a sequence number; not an index that names the slot)."""
        return [token for token in tokens if token[2] == "i"
                and self._probe(text, key, sorted(fragment + [token]), path, group) is not None][:8]

    def _probe(self, text: str, key: Any, tokens: list, path: tuple, group: Any) -> _Template | None:
        """The template of text with these tokens as holes, when the payload made with stand-ins in
        them has the same fragment and slot and its line holds each stand-in once (and nothing else
        that looks like a credential); else None."""
        pieces, marks = _template_pieces(text, tokens)
        probe_line = self._probe_line("".join(piece + mark for piece, mark in zip(pieces, marks)) + pieces[-1],
                                      key, path, group)
        if probe_line is None:
            return None
        written = [_encode_ascii(_TEMPLATE_HOLE) if kind == "s" else mark
                   for (_, _, kind), mark in zip(tokens, marks)]
        around = _around_holes(probe_line, written)
        if around is None or any(not self._clean(part) for part in around[1]):
            return None
        order, out = around
        return _Template(pieces, "".join(kind for _, _, kind in tokens), out, order,
                         None if group is None else self.groups[group], key)

    def _probe_line(self, probe_text: str, key: Any, path: tuple, group: Any) -> str | None:
        """The line of the payload of probe_text (stand-ins in its holes) when its one fragment is the
        stand-in, at path, of the same slot (group); else None."""
        row = self.row
        try:
            probe = self.make(probe_text, key)
            if self.redact:
                probe = row.capture.redact(probe)
            probe_paths = [p for p, kind in row.wire.protected_paths(probe).items()
                           if kind == "fragment" and isinstance(_value_at(probe, p), str)]
            if (probe_paths != [path] or _value_at(probe, path) != _TEMPLATE_HOLE
                    or row.wire.fragment_key(probe, path) != group):
                return None
            return _line(probe)
        except (CaptureError, JsonProblem, RecursionError):
            return None

    def _written(self, template: _Template, values: list[str]) -> str | None:
        """The line of fitted values, or None when the fragment may hold a credential (the long way)."""
        encoded = _encode_ascii(values[template.kinds.index("s")])
        if not self._clean(encoded):
            return None
        if template.group is not None:
            template.group.add(values[template.kinds.index("s")])
        self.count += 1
        return template.line(values, encoded)

    def fast(self, text: str, key: Any) -> str | None:
        """The line of a payload text one of key's templates fits, or None (then the long way)."""
        for template in self.templates.get(key, ()):
            if template.kinds == "s":
                line = self._fast_fragment(template, text)
                if line is not _NO_FIT:
                    return line
                continue
            fitted = template.fit(template.pieces, text, 0)
            if fitted is not None and fitted[0] == len(text):
                return self._written(template, fitted[1])
        return self._fast_blank(text, key) if self.blanks else None

    def _fast_fragment(self, template: _Template, text: str) -> Any:
        """fast() with a template that holds the fragment alone, fit() and _written() in one step: the
        line; None when the fragment does not decode or may hold a credential; _NO_FIT."""
        value = _string_between(text, *template.pieces)
        if value is _NO_FIT or value is None:
            return value
        encoded = _encode_ascii(value)
        clean = self.clean.get(encoded)
        if clean is None:
            clean = self._clean(encoded)
        if not clean:
            return None
        if template.group is not None:
            template.group.add(value)
        self.count += 1
        return template.out[0] + encoded + template.out[1]

    def _fast_blank(self, text: str, key: Any) -> str | None:
        """fast() with key's blank templates: the line of the first that fits, or None."""
        for before, after, line in self.blanks.get(key, ()):
            value = _string_between(text, before, after)
            if value is _NO_FIT or value == "":
                continue
            if value is None:
                return None
            self.count += 1
            return line
        return None

    def _clean(self, encoded: str) -> bool:
        """not _line_may_hold_secrets(encoded), remembered for short texts (fragments and redacted
        lines repeat): at most 1024 of 160 characters at most."""
        clean = self.clean.get(encoded)
        if clean is None:
            clean = not _line_may_hold_secrets(encoded)
            if len(encoded) <= 160:
                if len(self.clean) >= 1024:
                    self.clean.clear()
                self.clean[encoded] = clean
        return clean

    def fast_chunks(self, raw: bytes, pos: int, head: bytes, chunk: tuple[bytes, Callable[..., Any]],
                    out: _EncodedPayloads) -> tuple[int, int]:
        """Writes to out the frames of an AWS event stream from pos on (raw: bytes) while each is whole,
        both its checksums hold, its header bytes are head (a chunk's), its payload is plainly a chunk
        (chunk: the bytes it starts with, then base64 up to a quote, then what chunk[1](raw, quote,
        stop) fully matches) and a template (key None) fits the event text the base64 carries; returns
        where it stopped and how many frames it wrote.  The frame it stopped at is left as it is, for
        the long way.  Frames are read in batches, their events decoded together and tried against each
        template at once (_fit_chunks): one frame at a time until 16 were written, then up to 4 times as
        many as were written (at most 1024), so the frames read past the one it stops at are never more
        than 4 times those written."""
        if not (self.templates.get(None) or self.blanks and self.blanks.get(None)):
            return pos, 0
        frames = self.chunk_tools
        if frames is None or frames.raw is not raw:   # made once per body
            frames = self.chunk_tools = _ChunkFrames(raw)
        written, batch = 0, 1
        while True:
            events, at = frames.events(pos, batch, head, chunk)
            done = self._fit_chunks(events, out) if events else 0
            written += done
            pos = at if done == len(events) else frames.past(pos, done)
            if done < batch:
                return pos, written
            batch = 1 if written < 16 else min(4 * written, 1024)

    def _fit_chunks(self, events: list[bytes], out: _EncodedPayloads) -> int:
        """Writes the lines of the event texts (UTF-8) from the first on, while a template fits; returns
        how many.  All at once when one template fits every one and no fragment may hold a credential;
        else one by one, as fast() would."""
        done = self._fit_chunks_at_once(events, out) if len(events) >= 16 else None
        if done is not None:
            return done
        lines = []
        for event in events:
            try:
                line = self.fast(event.decode("utf-8"), None)
            except UnicodeDecodeError:
                break
            if line is None:
                break
            lines.append(line)
        out.extend(lines)
        return len(lines)

    def _fit_chunks_at_once(self, events: list[bytes], out: _EncodedPayloads) -> int | None:
        """_fit_chunks of 16 events or more when one template (key None, the fragment alone, or blank)
        fits every one and no fragment may hold a credential: how many; else None (one by one)."""
        count = len(events)
        try:
            text = b"\x00".join(events).decode("utf-8")   # NUL: in no strict JSON text
        except UnicodeDecodeError:
            return None
        if text.count("\x00") != count - 1:
            return None
        text = "\x00" + text + "\x00"
        fits = [(template.pieces[0], template.pieces[1], template) for template in self.templates.get(None, ())
                if template.kinds == "s"]
        fits += [(before, after, line) for before, after, line in (self.blanks or {}).get(None, ())]
        for before, after, template in fits:
            blank = template.__class__ is str
            if "\x00" in before + after:
                continue
            found = self._bulk(before, after, blank).findall(text)
            if not found:
                continue
            if len(found) != count:
                return None   # another template for some: one by one
            if blank:
                self.count += count
                out.add_block(out._JOIN.join([template] * count), count)
                return count
            values = json.loads("[" + ",".join(found) + "]")   # each a strict JSON string token
            encoded = list(map(_encode_ascii, values))
            if _line_may_hold_secrets("\x00".join(encoded)):
                return None   # one by one: a credential's fragment goes the long way
            if template.group is not None:
                template.group.extend(values)
            self.count += count
            before, after = template.out
            out.add_block(before + (after + out._JOIN + before).join(encoded) + after, count)
            return count
        return None

    def _bulk(self, before: str, after: str, blank: bool) -> Any:
        """The pattern of a text between NULs that is before, a strict JSON string token (non-empty when
        blank; a group when not), then after: what fast() fits with that template."""
        key = (before, after, blank)
        pattern = self.bulk.get(key)
        if pattern is None:
            token = ('"' + ("(?!\")" if blank else "")   # a run of plain characters between escapes: one step each
                     + r'[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
            pattern = self.bulk[key] = re.compile("\x00" + re.escape(before) + (token if blank else f"({token})")
                                                  + re.escape(after) + "(?=\x00)")
        return pattern

    def fast_sse(self, text: str, pos: int, number: int, sink: Callable[[str], Any]) -> tuple[int, int]:
        """Writes the plain SSE events from pos on that a template fits whole (the event around its
        tokens, line ends included), until one does not; returns the new (pos, line number)."""
        templates = [template for group in self.templates.values() for template in group
                     if template.event_pieces is not None]
        if not templates:
            return pos, number
        template = templates[0]
        if template.kinds == "s":   # the common case, one step per event
            pos, number = self._fast_sse_fragments(template, text, pos, number, sink)
        while True:
            fitted = template.fit(template.event_pieces, text, pos)
            if fitted is None:
                for template in templates:
                    fitted = template.fit(template.event_pieces, text, pos)
                    if fitted is not None:
                        break
                else:
                    return pos, number
            line = self._written(template, fitted[1])
            if line is None:
                return pos, number
            sink(line)
            pos = fitted[0]
            number += template.lines

    def _fast_sse_fragments(self, template: _Template, text: str, pos: int, number: int,
                            sink: Callable[[str], Any]) -> tuple[int, int]:
        """fast_sse with one template that holds the fragment alone: fit() and _written() unrolled."""
        startswith, json_string, encode, known = text.startswith, _json_string, _encode_ascii, self.clean
        before, after = template.event_pieces
        lines: list[str] = []
        try:
            while startswith(before, pos):
                start = pos + len(before) + 1
                if text[start - 1:start] != '"':
                    break
                try:
                    value, end = json_string(text, start, True)
                except ValueError:
                    break
                if not startswith(after, end):
                    break
                encoded = encode(value)
                clean = known.get(encoded)
                if not (clean or clean is None and self._clean(encoded)):
                    break
                if template.group is not None:
                    template.group.add(value)
                self.count += 1
                lines.append(template.out[0] + encoded + template.out[1])
                pos = end + len(after)
                number += template.lines
        finally:
            for line in lines:
                sink(line)
        return pos, number

    def warnings(self) -> list[str]:
        return self.found + _split_secret_warnings(self.groups)


class _EncodedPayloads:
    """A stream's payloads already written as capture_text writes them (one ASCII JSON line each),
    kept in blocks of lines joined as capture_text joins them."""

    __slots__ = ("blocks", "lines", "count")
    _JOIN = ",\n    "

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.lines: list[str] = []
        self.count = 0

    def append(self, line: str) -> None:
        self.lines.append(line)
        self.count += 1
        if len(self.lines) >= 1024:
            self.blocks.append(self._JOIN.join(self.lines))
            self.lines = []

    def extend(self, lines: list[str]) -> None:
        """append() of each line, in one block (the text is the same wherever blocks end)."""
        if lines:
            self.add_block(self._JOIN.join(lines), len(lines))

    def add_block(self, block: str, count: int) -> None:
        """count lines already joined as capture_text joins them."""
        if self.lines:
            self.blocks.append(self._JOIN.join(self.lines))
            self.lines = []
        self.blocks.append(block)
        self.count += count

    def __len__(self) -> int:
        return self.count

    def pieces(self) -> list[str]:
        """The stream member's value as capture_text writes it, in pieces to be joined."""
        if self.lines:
            self.blocks.append(self._JOIN.join(self.lines))
            self.lines = []
        out = ["[\n    "]
        for block in self.blocks:
            out += (block, self._JOIN)
        out[-1] = "\n  ]"
        return out


# Members that tell apart the choices, blocks, items or candidates whose text arrives in pieces: a
# group of text fragments is one string's path plus the values of these members on the way to it.
_TEXT_GROUP_KEYS = ("index", "contentBlockIndex", "output_index", "content_index", "summary_index", "item_id")
_TEXT_GROUP_KEYSET = frozenset(_TEXT_GROUP_KEYS)


def _text_pieces(value: Any, path: tuple, protected: dict[tuple, str], marks: tuple, pos: int,
                 texts: dict[tuple, tuple[Any, list[str]]]) -> None:
    """Add every non-empty string under value outside protected paths to its group in texts:
    (path, marks) -> (the payload numbers, the strings), 16 bytes a piece.  value is the payload as it
    came, and as it stays (_text_pieces_masked: once masking changed it)."""
    items, marks = _text_items(value, len(path), marks)
    for key, item in items:
        if isinstance(item, str):
            if item and path + (key,) not in protected:
                _text_piece(texts, (path + (key,), marks), pos, item)
        elif isinstance(item, (dict, list)) and path + (key,) not in protected:
            _text_pieces(item, path + (key,), protected, marks, pos, texts)   # call identity and arguments
            # (protected) are left out: their split credentials are only reported


def _text_pieces_masked(value: Any, path: tuple, protected: dict[tuple, str], marks: tuple, pos: int,
                        texts: dict[tuple, tuple[Any, list[str]]], masked: Any, at: tuple = ()) -> None:
    """_text_pieces of a payload that masking changed: masked is the same payload once masked string
    by string, whose member names may differ (a credential used as a name): the group's path is then
    the path in masked (at: that of path), where finish() writes, and the strings recorded are still
    value's, unmasked, so that they are searched joined as they came."""
    items, marks = _text_items(value, len(path), marks)
    for (key, item), name in zip(items, masked if isinstance(masked, dict) else range(len(masked))):
        if path + (key,) in protected:
            continue   # call identity and arguments: their split credentials are only reported
        if isinstance(item, str):
            if item:
                _text_piece(texts, (at + (name,), marks), pos, item)
        elif isinstance(item, (dict, list)):
            _text_pieces_masked(item, path + (key,), protected, marks, pos, texts, masked[name], at + (name,))


def _text_items(value: Any, depth: int, marks: tuple) -> tuple[Iterable, tuple]:
    """(the items of an object or a list, marks with (depth, member, value) of each of the object's
    members that tell its text groups apart: an integer or a string of _TEXT_GROUP_KEYS)."""
    if isinstance(value, dict):
        if not _TEXT_GROUP_KEYSET.isdisjoint(value):
            for key in _TEXT_GROUP_KEYS:   # a loop, not a generator: no frame below this one
                member = value.get(key)
                if isinstance(member, (int, str)) and not isinstance(member, bool):
                    marks += ((depth, key, member),)
        return value.items(), marks
    if isinstance(value, list):
        return enumerate(value), marks
    return (), marks


def _text_piece(texts: dict[tuple, tuple[Any, list[str]]], group_key: tuple, pos: int, item: str) -> None:
    group = texts.get(group_key)
    if group is None:
        import array
        group = texts[group_key] = (array.array("q"), [])
    group[0].append(pos)
    group[1].append(item)


def _covered(spans: list[tuple[int, int, str]], start: int, end: int) -> bool:
    """Whether [start, end) lies within the union of spans (sorted), as _mask_spans merges them."""
    lo = hi = -1
    for first, last, _ in spans:
        if first <= hi:
            hi = max(hi, last)
        else:
            lo, hi = first, last
        if lo <= start and end <= hi:
            return True
    return False


def _mask_split_text(row: Profile, out: list[dict], texts: dict[tuple, tuple[Any, list[str]]],
                     lines: list[str], stream_key: str, warnings: list[str]) -> None:
    """Mask credentials that only appear once a group's text fragments are joined (without redaction).

    The joined text is the fragments as they came.  A credential found there that masking each
    fragment alone did not cover whole (one split across fragments, or one inside a fragment whose
    context, "Bearer " or "api_key=", is in another) is masked in every fragment that holds part
    of it, on top of what that fragment's own masking did: each part becomes MASKED_SECRET, so no
    piece becomes empty.  Only text the profile's redaction would neutralise is changed: a string
    the rules read (a type, an id) is left as it is, and the warning says so.
    """
    for (path, _), (positions, strings) in texts.items():
        if len(strings) < 2:
            continue
        found = _secret_spans("".join(strings))
        if not found:
            continue
        own, touched, missed = _uncovered_spans(found, strings)
        if not touched:
            continue
        first = positions[min(touched)]
        where = f"{_render_path(f'{stream_key}[{first}]', path)} ({lines[first]})"
        how = _split_how(len(touched) - 1, " and ".join(dict.fromkeys(missed)))
        kept = False
        for n, spans in touched.items():   # not in a helper: redact() walks the payload, one frame a level
            pos = positions[n]
            parent = _value_at(out[pos], path[:-1])
            if _value_at(row.capture.redact(out[pos]), path) == parent[path[-1]]:
                kept = True   # no text to the redaction: the rules read it
                continue
            mine = own[n]
            if parent[path[-1]] != _mask_spans(strings[n], mine):
                continue   # masked whole already (a credential-named member)
            parent[path[-1]] = _mask_spans(strings[n], sorted(mine + spans))
        warnings.append(where + how + (" masked" if not kept else " masked where it is text, left unchanged "
                                       "where the rules read it"))


def _split_how(later: int, labels: str) -> str:
    """How a credential found in a group's joined text fragments is spread over later fragments."""
    if later:
        return f" and {later} later fragment{'s' if later > 1 else ''}: {labels} split across text fragments"
    return f": {labels} recognisable only with the text fragments around it"


def _uncovered_spans(found: list[tuple[int, int, str]], strings: list[str]) -> tuple[dict, dict, list[str]]:
    """The spans found in strings joined that masking each string alone does not cover whole: (each
    string's own spans, by number, as far as they were needed; each string's parts of those spans,
    by number; their labels)."""
    ends, offset = [], 0
    for text in strings:
        offset += len(text)
        ends.append(offset)
    own: dict[int, list[tuple[int, int, str]]] = {}   # a fragment's own spans, found when needed
    touched: dict[int, list[tuple[int, int, str]]] = {}
    missed = []
    for start, end, label in found:
        parts = []
        n = bisect.bisect_right(ends, start)   # the fragment the span starts in
        while n < len(ends) and ends[n] - len(strings[n]) < end:
            lo = ends[n] - len(strings[n])
            parts.append((n, max(start, lo) - lo, min(end, ends[n]) - lo))
            n += 1
        for n, _, _ in parts:
            if n not in own:
                own[n] = _secret_spans(strings[n])
        if all(_covered(own[n], first, last) for n, first, last in parts):
            continue   # each fragment's own masking hid it already
        missed.append(label)
        for n, first, last in parts:
            touched.setdefault(n, []).append((first, last, label))
    return own, touched, missed


def har_entry(har: Any, selector: str) -> tuple[Any, bytes, str | None]:
    """(request body as JSON or None, response body bytes, why the request body is unusable) of one HAR entry.

    selector: a 0-based index, or text that the URL of exactly one entry contains.
    A base64 response body (content.encoding) is decoded, so a binary Bedrock
    event stream survives the archive.
    """
    entry = _har_pick(har, selector)
    request = entry.get("request") if isinstance(entry, dict) else None
    response = entry.get("response") if isinstance(entry, dict) else None
    body = _har_response_body(response.get("content") if isinstance(response, dict) else None)
    post = request.get("postData") if isinstance(request, dict) else None
    request_body, problem = None, None
    if isinstance(post, dict) and isinstance(post.get("text"), str) and post["text"].strip():
        try:
            request_body = decode_document(post["text"], what="the request body")
        except JsonProblem as exc:
            problem = f"the entry's request body is not strict JSON ({exc.message})"
    return request_body, body, problem


def _har_pick(har: Any, selector: str) -> Any:
    """The entry of an HTTP Archive that selector names (har_entry)."""
    entries = har.get("log", {}).get("entries") if isinstance(har, dict) and isinstance(har.get("log"), dict) else None
    if not isinstance(entries, list):
        raise CaptureError("--entry needs an HTTP Archive: a JSON object with log.entries")
    if selector.isascii() and selector.isdigit():
        if len(selector) > 18 or int(selector) >= len(entries):
            raise CaptureError(f"--entry {selector[:20]}: the archive has {len(entries)} entries (0-based)")
        return entries[int(selector)]
    found = [entry for entry in entries if _har_url_holds(entry, selector)]
    if len(found) != 1:
        raise CaptureError(f"--entry: {len(found)} entries have a URL containing that text; "
                           "give a longer text or the entry's index")
    return found[0]


def _har_url_holds(entry: Any, text: str) -> bool:
    """Whether a HAR entry's request URL contains text."""
    request = entry.get("request") if isinstance(entry, dict) else None
    return isinstance(request, dict) and isinstance(request.get("url"), str) and text in request["url"]


def _har_response_body(content: Any) -> bytes:
    """The bytes of a HAR entry's response content (base64 when its encoding says so)."""
    import base64

    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        raise CaptureError("the entry has no response body (export the HAR with content)")
    if content.get("encoding") != "base64":
        return content["text"].encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(content["text"], validate=True)
    except ValueError:
        raise CaptureError("the entry's base64 response body does not decode") from None


def sse_to_envelope(raw: bytes, profile: str, schemas: object | None,
                    redact: bool = True) -> tuple[dict, list[str]]:
    """Turn one captured body into a fixture envelope: (envelope, warnings for stderr).

    The body is a raw SSE stream (bedrock: the binary AWS event stream), or, for
    every profile, the payloads as JSON: a JSON list of chunks/events, or JSON
    Lines (one per line, as SDK `model_dump_json()` or boto3 dumps write them; a
    `{"data": {...}}` wrapper such as mistralai's CompletionEvent is unwrapped).
    Why: hand-copying payloads is where captures lose events or keep secrets.
    Every payload is kept, in order; `schemas` goes through schemas_from_doc
    (None gives an empty tool_schemas, so every call is unknown_tool).  Raises
    CaptureError, with a line number where one applies.
    """
    return _capture(raw, profile, schemas, redact, False)


def _capture(raw: bytes, profile: str, schemas: object | None, redact: bool,
             encode: bool) -> tuple[dict, list[str]]:
    """sse_to_envelope; with encode the stream member is an _EncodedPayloads (what `capture` writes):
    the body is read once, each payload written as it is read, none kept.  With encode (the command
    line) the cyclic garbage collector is paused meanwhile, as for validation: payloads hold no cycles."""
    import gc

    encode = encode and redact   # without redaction text pieces are masked once all came: kept, then written
    paused = encode and gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _capture_body(raw, profile, schemas, redact, encode)
    finally:
        if paused:
            gc.enable()


def _capture_body(raw: bytes, profile: str, schemas: object | None, redact: bool,
                  encode: bool) -> tuple[dict, list[str]]:
    """_capture's work: the body read by its framing (a JSON body, a room's binary body, else SSE).
    Each envelope builder, and _staged for SSE, is called from here, where it always was: a call
    more on the way would lower how deep a payload may nest."""
    row = _capture_row(profile)
    tool_schemas = {} if schemas is None else schemas_from_doc(schemas)
    if _json_body(raw):
        return _json_payloads_envelope(raw, row, tool_schemas, schemas is None, redact, encode)
    read = None if row.capture.binary_body is None else row.capture.binary_body(raw, encode)
    if read is not None:   # a body that is no SSE text (the AWS event stream); None: the room declines
        return frames_envelope(row, raw, tool_schemas, schemas is None, redact,
                               read.walk_all or _may_hold_secrets(bytes(raw)), read.capture_point, read.convert,
                               read.unwrap, encode, read.parse, read.chunk_match)
    sse = _SseCapture(raw, row, redact, encode)
    count = _staged(sse.items(), sse.stages, sse.payloads.append, "an event nests too deeply to process", sse.fast,
                    sse.holding)
    return sse.envelope(count, tool_schemas, schemas is None)


def _capture_row(profile: str) -> Profile:
    """The row of the profile capture is asked for (capture's one look-up)."""
    row = PROFILES.get(profile) if isinstance(profile, str) else None
    if row is None:
        raise CaptureError(f"profile {_token(profile)} "
                           f"is not one of {', '.join(PROFILES)} (the profiles with a reviewed SSE import)")
    return row


class _SseCapture:
    """One SSE body read for capture: its events go through the stages (strict JSON, the profile's
    shape, the room's event checks, the scrubber) into payloads, written as they are read with encode;
    state collects its comment lines and sentinel.  _capture_body runs the stages (_staged)."""

    def __init__(self, raw: bytes, row: Profile, redact: bool, encode: bool) -> None:
        walk = _may_hold_secrets(bytes(raw))   # first: its lower-cased copy of the body is gone before the text comes
        self.text: str | None = _sse_decode(raw)
        for check in row.capture.check_sse_text:
            check(self.text)
        self.row, self.redact = row, redact
        self.state = _SseState()
        self.scrubber = scrubber = _Scrubber(row, redact, walk, encode,
                                             lambda data, name: _sse_payload(_SseEvent(0, (0,), name, data)))
        self.check_shape = check_shape = _shape_stage(row)
        self.stages = _sse_checks(row, check_shape)
        self.stages.append(lambda payload, event: scrubber.scrub(payload, ("line", event.line), event.data,
                                                                 event.name))
        payloads: Any = _EncodedPayloads() if encode else []
        self.payloads = payloads
        self.holding = holding = _Holding()

        def fast_run(text: str, pos: int, number: int) -> tuple[int, int]:   # a closure: it runs per event
            if not check_shape.settled or holding.held or not scrubber.templates:
                return pos, number
            return scrubber.fast_sse(text, pos, number, payloads.append)

        self.fast_run = fast_run if encode else None
        # in a body without CR, fast_run has tried every plain event before it comes; the others are rare
        self.fast = (None if not encode or "\r" not in self.text
                     else lambda event, _: scrubber.fast(event.data, event.name) if check_shape.settled else None)

    def items(self) -> Iterator[tuple[_SseEvent, _SseEvent]]:
        """(event, event) of every event as it is read (the event is its own context); the text is
        held by the reader only, then gone."""
        text, self.text = self.text, None
        return ((event, event) for event in _sse_events(text, self.state, self.fast_run))

    def envelope(self, count: int, tool_schemas: dict, no_schemas: bool) -> tuple[dict, list[str]]:
        """(the envelope, warnings) once count events were read."""
        state, row = self.state, self.row
        if not count and not state.done:
            raise CaptureError("the body holds no data events (an SSE body has \"data:\" lines)")
        self.scrubber.finish(self.payloads)
        warnings = self.scrubber.warnings()
        if no_schemas:
            warnings.insert(0, "no tool schemas given: tool_schemas is empty, so every call will be unknown_tool")
        if not state.done and row.capture.warn_without_done:
            warnings.append("no data: [DONE] sentinel: the capture may be cut short")
        envelope = {
            "profile": row.name,
            "tool_schemas": tool_schemas,
            row.stream_key: self.payloads,
            "meta": {"capture_point": "raw SSE", "done_sentinel": state.done, "sse_comment_lines": state.comments,
                     "redacted": bool(self.redact)},
        }
        return envelope, warnings


def frames_envelope(row: Profile, raw: bytes, tool_schemas: dict, no_schemas: bool, redact: bool, walk: bool,
                    capture_point: str, convert: Callable[[Any, int], tuple[Any, str | None]] | None = None,
                    unwrap: Callable[..., str | None] | None = None,
                    encode: bool = False, parse: Callable[[str, str], Any] | None = None,
                    chunk_match: tuple[bytes, Callable[..., Any]] | None = None) -> tuple[dict, list[str]]:
    """The envelope of the events of an AWS event stream's frames (bedrock, and anthropic's
    Bedrock invoke body): checked for another provider's shape, redacted, searched for
    credentials when `walk`, and warnings named by frame.  convert(event, frame number) turns a
    frame's event into the payload (the invoke body's chunk into its Anthropic event), after every
    frame was read, and says the text it read that payload from (None: it read none); unwrap(member,
    payload text, that text) is the text of the payload when the frame is plainly one (else None),
    for templates, taken from convert's when it read one, so a frame is decoded once; parse: see
    _eventstream_frames; encode: see _capture.
    chunk_match: how a chunk frame's payload bytes plainly carry the base64 of the event text unwrap
    gives (see _Scrubber.fast_chunks); with encode, runs of chunk frames are then written from their
    bytes, and a text delta, whose line redaction makes the same for every non-empty text, is a
    blank template (see _Scrubber)."""
    check_shape = _shape_stage(row)
    holding = _Holding()

    def make(text: str, key: Any) -> Any:
        value = decode_document(text, what="the payload")
        if not isinstance(value, dict):
            raise CaptureError("not an object")
        return value if unwrap is not None else {key: value}

    scrubber = _Scrubber(row, redact, walk, encode, make, chunk_match is not None)

    payloads: Any = _EncodedPayloads() if encode else []

    def fast_frame(member: str, text: str) -> bool:
        if not check_shape.settled or holding.held or not scrubber.templates:
            return False
        if unwrap is not None:
            text = unwrap(member, text)
            if text is None:
                return False
        line = scrubber.fast(text, None if unwrap is not None else member)
        if line is None:
            return False
        payloads.append(line)
        return True

    def fast_chunks(body: bytes, pos: int, head: bytes) -> tuple[int, int]:
        if not check_shape.settled or holding.held:
            return pos, 0
        return scrubber.fast_chunks(body, pos, head, chunk_match, payloads)

    def scrub(payload: Any, context: tuple[int, str]) -> Any:
        number, text = context
        decoded = None
        if convert is not None:
            payload, decoded = payload
        if unwrap is not None:
            return scrubber.scrub(payload, ("frame", number), lambda: unwrap("chunk", text, decoded), None)
        return scrubber.scrub(payload, ("frame", number), text, next(iter(payload)))

    # with convert, (payload, the text convert read it from) go on together, for scrub's templates
    stages = _frame_checks(convert, check_shape) + [scrub]
    chunk = fast_chunks if encode and chunk_match is not None else None
    fast = fast_frame if encode and chunk is None else None
    _staged(((event, (number, text)) for event, number, text in _eventstream_frames(raw, fast, parse, chunk)),
            stages, payloads.append, "an event nests too deeply to process", None, holding)
    scrubber.finish(payloads)
    warnings = scrubber.warnings()
    if no_schemas:
        warnings.insert(0, "no tool schemas given: tool_schemas is empty, so every call will be unknown_tool")
    envelope = {"profile": row.name, "tool_schemas": tool_schemas, row.stream_key: payloads,
                "meta": {"capture_point": capture_point, "redacted": bool(redact)}}
    return envelope, warnings


def _json_payloads_envelope(raw: bytes, row: Profile, tool_schemas: dict, no_schemas: bool,
                            redact: bool, encode: bool = False) -> tuple[dict, list[str]]:
    """A JSON list of payloads, or JSON Lines of them (SDK dumps), as an envelope."""
    walk = _may_hold_secrets(bytes(raw))
    text = _sse_decode(raw)
    if text.lstrip(" \t\r\n").startswith("["):
        payloads, _, point = _json_list_payloads(text)
        read: Iterable[tuple[Any, int]] = ((payload, 1) for payload in payloads)
        del payloads
    else:
        first = _refuse_whole_document(text, row)
        for check in row.capture.check_lines_text:
            check(text)
        point = "JSON Lines"
        read = _json_lines_iter(text, first)
        del first
    check_shape = _shape_stage(row)
    scrubber = _Scrubber(row, redact, walk, encode)
    stages = _json_checks(check_shape) + [
        lambda payload, context: scrubber.scrub(payload, f"line {context[1]}" if point == "JSON Lines"
                                                else f"item {context[0]}")]
    out: Any = _EncodedPayloads() if encode else []
    count = _staged((((payload, (number, line))) for number, (payload, line) in enumerate(read)), stages,
                    out.append, "a payload nests too deeply to process")
    if not count:
        raise CaptureError("the body holds no payloads")
    scrubber.finish(out)
    warnings = scrubber.warnings()
    if no_schemas:
        warnings.insert(0, "no tool schemas given: tool_schemas is empty, so every call will be unknown_tool")
    envelope = {"profile": row.name, "tool_schemas": tool_schemas, row.stream_key: out,
                "meta": {"capture_point": point, "redacted": bool(redact)}}
    return envelope, warnings


# --- tool schemas from the request's tools -----------------------------------------

def _tool_schema(where: str, tool: Any) -> list[tuple[str, Any]]:
    """[(name, schema)] of one entry (at `where`) of a provider's `tools` array: the room whose
    tool_entry reads it says (a Gemini Tool object declares several)."""
    if not isinstance(tool, dict):
        raise CaptureError(f"{where} is {_describe(tool)}, not a tool object")
    for row in PROFILES.values():
        pairs = row.request.tool_entry(where, tool)
        if pairs is not None:
            return pairs
    raise CaptureError(f"{where} is neither an OpenAI function tool nor an Anthropic tool with "
                       f"input_schema (type {_describe(tool.get('type'))})")


def schemas_from_doc(doc: object) -> dict:
    """tool name -> schema, from an object of that shape or a provider `tools` array.

    Why: the schemas the application validates against are usually kept as the
    request's tools array.  An OpenAI function without `parameters` takes no
    arguments but any object; its schema is {"type": "object"}.
    """
    if isinstance(doc, dict):
        for name, schema in doc.items():
            if not isinstance(schema, (dict, bool)):
                raise CaptureError(f"tool {json.dumps(name[:60])}: a schema must be an object or boolean, got "
                                   f"{_describe(schema)} (give name -> schema, or the tools array itself)")
        return dict(doc)
    if not isinstance(doc, list):
        raise CaptureError(f"tool schemas must be an object (name -> schema) or a tools array, got {_describe(doc)}")
    schemas: dict[str, Any] = {}
    for number, tool in enumerate(doc):
        for name, schema in _tool_schema(f"tools[{number}]", tool):
            if name in schemas:
                raise CaptureError(f"tools[{number}]: duplicate tool name {json.dumps(name[:60])}")
            schemas[name] = schema
    return schemas


# --- the request: tool schemas and tool controls from a recorded request body ----


def _request_entry(where: str, tool: Any, prefix: str, row: Profile, schemas: dict, warnings: list[str]) -> None:
    """One client tool of a request into schemas (hosted tools are left out; grammar tools warned)."""
    if not isinstance(tool, dict):
        raise CaptureError(f"{where} is {_describe(tool)}, not a tool object")
    kind = tool.get("type")
    if kind == "custom" and "input_schema" not in tool:
        _custom_tool_entry(where, tool.get("custom") if isinstance(tool.get("custom"), dict) else tool, prefix,
                           schemas, warnings)
        return
    defined = row.request.defined_tool(where, tool)
    if defined is not None:
        if defined[0] in schemas:
            raise CaptureError(f"{where}: duplicate tool name {json.dumps(defined[0][:60])}")
        schemas[defined[0]] = defined[1]
        return
    if kind not in (None, "function", "custom") or (kind is None and "input_schema" not in tool):
        return  # a hosted tool (web search, code execution, MCP...): the provider runs it
    for name, schema in _tool_schema(where, tool):
        if prefix + name in schemas:
            raise CaptureError(f"{where}: duplicate tool name {json.dumps((prefix + name)[:60])}")
        schemas[prefix + name] = schema


def _custom_tool_entry(where: str, custom: dict, prefix: str, schemas: dict, warnings: list[str]) -> None:
    """One custom tool (custom: its members) into schemas: a free-text one takes a string; one with a
    grammar is left out, with a warning."""
    name = custom.get("name")
    fmt = custom.get("format") or {"type": "text"}
    if not isinstance(name, str) or not name:
        raise CaptureError(f"{where} is a custom tool without a name")
    if isinstance(fmt, dict) and fmt.get("type") == "text":
        schemas[prefix + name] = {"type": "string"}
    else:
        warnings.append(f"{where}: custom tool {json.dumps(name[:60])} takes grammar-constrained "
                        "input this tool cannot check; it is left out, so its calls are unknown_tool")


def request_from_body(profile: str, body: object) -> tuple[dict, dict, list[str]]:
    """(tool_schemas, request block, warnings) from a recorded request body; prompts are dropped.

    Reads the tools (client tools only: hosted tools are run by the provider),
    tool_choice and parallel_tool_calls of an OpenAI chat, Responses, Anthropic
    Messages or Bedrock Converse request.  A custom tool with a free-text
    format becomes {"type": "string"}; one with a grammar cannot be checked here
    and is left out, with a warning (its calls are then unknown_tool).
    """
    if not isinstance(body, dict):
        raise CaptureError(f"the request body must be a JSON object, got {_describe(body)}")
    row = PROFILES[profile]
    tools, choice = row.request.tools(body)
    schemas: dict[str, Any] = {}
    warnings: list[str] = []
    entries: list[tuple[str, Any, str]] = []   # (where, tool entry, the namespace prefix of its name)
    for number, tool in enumerate(tools):
        entries.extend(row.request.expand_tool(f"tools[{number}]", tool))
    for where, tool, prefix in entries:
        _request_entry(where, tool, prefix, row, schemas, warnings)
    request: dict[str, Any] = {"tools": sorted(schemas)}
    if choice is not None:
        request["tool_choice"] = choice
    if body.get("parallel_tool_calls") is not None and row.request.parallel_field:
        request["parallel_tool_calls"] = body["parallel_tool_calls"]
    try:
        _request_context(row, request)
    except RequestError as exc:
        raise CaptureError(f"the request's tool controls: {exc}") from None
    return schemas, request, warnings


# ---------------------------------------------------------------------------
# Adapter differential: what an adapter made of the same turn
# ---------------------------------------------------------------------------

_CLIP = 200                     # characters of a value quoted in a difference
_CLIP_CONTEXT = 40              # characters shown before the first differing one


def _listed_call_members(n: int, item: Any) -> None:
    """Entry n of an adapter's list of calls has exactly {id, name, arguments}, and optionally namespace."""
    if not isinstance(item, dict):
        raise CaptureError(f"calls[{n}] is {_describe(item)}, not an object")
    extra = sorted(set(item) - {"id", "name", "arguments", "namespace"})
    missing = [key for key in ("id", "name", "arguments") if key not in item]
    if extra or missing:
        raise CaptureError(f"calls[{n}] must have exactly id, name and arguments (and optionally namespace)"
                           + (f"; unknown {', '.join(map(json.dumps, extra))}" if extra else "")
                           + (f"; missing {', '.join(missing)}" if missing else ""))


def _listed_namespace(n: int, item: dict, call: dict) -> dict:
    """call, with entry n's namespace when it gives one (compared only then; null: the call has none)."""
    if "namespace" in item:
        if item["namespace"] is not None and not isinstance(item["namespace"], str):
            raise CaptureError(f"calls[{n}]: namespace must be a string or null, got "
                               f"{_describe(item['namespace'])}")
        call["namespace"] = item["namespace"]
    return call


def adapter_calls_from_doc(doc: object) -> list[dict]:
    """An adapter's final calls as [{id, name, arguments, compare_parsed[, input]}].

    Accepts a list of {id, name, arguments} (arguments a string, or an object
    when the adapter kept only the parsed value), an OpenAI chat completion or
    assistant message, or an Anthropic message.  `compare_parsed` entries hold
    the adapter's object in `input`; their `arguments` is its compact form,
    for display only.
    """
    # _adapter_call (which writes an object's compact form) is called from here or from a room's reader called
    # from here, in a loop: each frame more above it would lower how deep an adapter's argument object may nest
    if isinstance(doc, list):
        calls = []
        for n, item in enumerate(doc):
            _listed_call_members(n, item)
            calls.append(_listed_namespace(n, item, _adapter_call(f"calls[{n}]", item["id"], item["name"],
                                                                  item["arguments"])))
        return calls
    if not isinstance(doc, dict):
        raise CaptureError(f"adapter output must be a list of calls or a message object, got {_describe(doc)}")
    for row in PROFILES.values():   # the room whose final message it is reads it
        read = row.wire.final_reader(doc)
        if read is not None:
            return read(doc)
    raise CaptureError("adapter output is neither a list of calls, an OpenAI completion or assistant message, "
                       "nor an Anthropic message")


def _clip(text: str, start: int = 0) -> str:
    """At most about _CLIP characters of text, from a little before `start`."""
    begin = max(0, start - _CLIP_CONTEXT)
    head = "..." if begin else ""
    body = text[begin:]
    return head + (body if len(body) <= _CLIP else body[:_CLIP] + "...")


def _shown(value: Any, start: int = 0) -> str:
    """A JSON-quoted, clipped value for a one-line message."""
    if isinstance(value, str):
        return json.dumps(_clip(value, start), ensure_ascii=False)
    return "null" if value is None else _describe(value)


def _first_difference(a: str, b: str) -> int:
    for n, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return n
    return min(len(a), len(b))


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return _describe(value)


def _parsed_difference(ours: Any, theirs: Any) -> str | None:
    """Our argument string, parsed, against the adapter's object (JSON equality)."""
    value, parsed = None, False
    if isinstance(ours, str):
        try:
            value, parsed = json.loads(ours, object_pairs_hook=dict), True  # order kept, last duplicate wins
        except (ValueError, RecursionError):
            pass
    if not parsed:
        return (f"arguments are not JSON here ({_shown(ours)}) but the adapter holds the object "
                f"{_clip(_compact(theirs))}")
    try:
        if _sch_canonical(value) == _sch_canonical(theirs):
            return None
    except (_SchNotJson, RecursionError):
        pass
    a, b = _compact(value), _compact(theirs)
    at = _first_difference(a, b)
    return f"arguments differ as JSON: this tool has {_clip(a, at)}, the adapter has {_clip(b, at)}"


def compare_calls(report_calls: list[dict], adapter_calls: list[dict],
                  ids_optional: bool = False) -> list[tuple[int | None, str]]:
    """Every way the adapter's calls differ from ours: (call number or None, message).

    Why: an adapter that merged, split, renamed or re-serialised a call runs
    something other than what the provider sent.  Calls pair by position
    (ours sorted by choice and slot, theirs in message order); arguments must
    match byte for byte, except where the adapter kept only the parsed object.
    ids_optional (gemini): a call the wire gave no id may carry the adapter's own.
    """
    differences: list[tuple[int | None, str]] = []
    if len(report_calls) != len(adapter_calls):
        ours = _clip(", ".join(_shown(call.get("id")) for call in report_calls))
        theirs = _clip(", ".join(_shown(call.get("id")) for call in adapter_calls))
        differences.append((None, f"this tool reassembled {len(report_calls)} call(s) (ids {ours}) but the "
                                  f"adapter produced {len(adapter_calls)} (ids {theirs})"))
    for number, (ours, theirs) in enumerate(zip(report_calls, adapter_calls)):
        problems = _identity_differences(ours, theirs, ids_optional)
        # the arguments are compared from here: _parsed_difference parses ours and compares the values
        # in C, as deep as the stack allows, so a helper between would lower how deep they may nest
        problems.append(_parsed_difference(ours.get("arguments"), theirs.get("input")) if theirs.get("compare_parsed")
                        else _text_difference(ours.get("arguments"), theirs.get("arguments")))
        differences.extend((number, f"call {number}: {problem}") for problem in problems if problem)
    return differences


def _identity_differences(ours: dict, theirs: dict, ids_optional: bool) -> list[str]:
    """How one adapter call's id, name and namespace differ from the call of ours at its position."""
    differences = []
    for key in ("id", "name", "namespace"):
        if key == "id" and ours.get("id") is None and ids_optional:
            continue   # the wire had no id (gemini): adapters make up their own
        if key == "namespace" and "namespace" not in theirs:
            continue   # only a list of calls can say it; a message shape has no namespace
        if ours.get(key) != theirs.get(key):
            differences.append(f"{key} differs: this tool has {_shown(ours.get(key))}, "
                               f"the adapter has {_shown(theirs.get(key))}")
    return differences


def _text_difference(a: Any, b: Any) -> str | None:
    """Where an adapter's argument string differs from ours (byte for byte); None: it does not."""
    if a == b:
        return None
    at = _first_difference(a, b) if isinstance(a, str) and isinstance(b, str) else 0
    return f"arguments differ from character {at}: this tool has {_shown(a, at)}, the adapter has {_shown(b, at)}"


def adapter_findings(report_calls: list[dict], differences: list[tuple[int | None, str]]) -> list[Finding]:
    """compare_calls output as blocking adapter_mismatch findings, tied to our call's slot."""
    findings = []
    for number, message in differences:
        call = report_calls[number] if number is not None else None
        findings.append(Finding(ADAPTER_MISMATCH, message, None,
                                call["choice"] if call else None, call["index"] if call else None))
    return findings


def apply_adapter_differences(report: dict[str, Any], differences: list[tuple[int | None, str]]) -> dict[str, Any]:
    """The report with each adapter difference added as a blocking adapter_mismatch finding."""
    if not differences:
        return report
    extra = [f.as_dict() for f in adapter_findings(report["calls"], differences)]
    return dict(report, status="blocked", applicable=True, executable=False, findings=report["findings"] + extra)


# --- verdicts of an adapter against ours (the adapter harness and `conform`) ----------
#
# compare_calls above explains each difference byte for byte (--adapter-output); the verdict
# below judges what an adapter would execute, comparing arguments as JSON values (an adapter may
# re-serialise them) and ids only where both sides have one (adapters invent ids the wire lacks).

ADAPTER_VERDICTS = ("agree", "differs-on-pass", "executes-blocked", "refuses", "refuses-pass", "not-applicable",
                    "unreadable", "not-requested")
# Findings about the fixture file rather than the stream: an adapter never sees the envelope.
_ENVELOPE_CODES = frozenset({INVALID_FIXTURE, UNKNOWN_PROFILE})


def adapter_json(text: str, what: str = "the text") -> Any:
    """One JSON document read in the dialect adapters print, or JsonProblem.

    Python's json.dumps writes NaN, Infinity and -Infinity, and any integer; other writers keep a
    number such as 1e400 as it came.  Each is read as the value it names (a number too large for a
    double, or an integer past Python's digit limit, as a Decimal), so an adapter that runs such a
    turn is still seen running it.  A key twice in one object is refused (JsonProblem), as in
    strict JSON: which of the two values an executor would use is not knowable here."""
    from decimal import Decimal

    def number(token: str) -> Any:
        value = float(token)
        if math.isinf(value):
            try:
                return Decimal(token)
            except ArithmeticError:   # an exponent past even a Decimal's range: infinite as a double
                return value
        return value

    def integer(token: str) -> Any:
        return int(token) if len(token) <= 19 else Decimal(token)   # exact either way, and linear in the length

    decoder = json.JSONDecoder(object_pairs_hook=_strict_pairs, parse_float=number, parse_int=integer,
                               parse_constant=float)
    start = _skip_ws(text, 0)
    if start == len(text):
        raise JsonProblem(MALFORMED_JSON, f"{what}: empty")
    try:
        value, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:   # worded as decode_document words it
        reason = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg
        reason = (reason[:1].lower() + reason[1:]).replace("'", '"')
        raise JsonProblem(MALFORMED_JSON, f"{reason} at line {exc.lineno} column {exc.colno}", exc.lineno) from None
    except RecursionError:
        raise JsonProblem(LIMIT_EXCEEDED, f"{what}: nesting too deep to parse") from None
    except (ArithmeticError, ValueError):   # no number token reaches here; a safety net all the same
        raise JsonProblem(LIMIT_EXCEEDED, "a number cannot be read") from None
    if _skip_ws(text, end) != len(text):
        raise JsonProblem(TRAILING_DATA, f"data after the JSON document at character {end}",
                          text.count("\n", 0, end) + 1)
    return value


def utf16(text: Any) -> Any:
    """A string as UTF-16 code units (a surrogate pair and its two halves are the same text)."""
    return text.encode("utf-16-le", "surrogatepass") if isinstance(text, str) else text


def typed_json(value: Any) -> Any:
    """A JSON value for comparison: bool kept apart from numbers (Python has True == 1), strings as UTF-16."""
    import decimal

    def typed(item: Any) -> Any:
        if isinstance(item, str):
            return ("str", utf16(item))
        if isinstance(item, bool) or item is None:
            return (type(item).__name__, item)
        if isinstance(item, (int, float, decimal.Decimal)):
            return ("number", item)
        if isinstance(item, list):
            return ("array", [typed(x) for x in item])
        if isinstance(item, dict):
            return ("object", {key: typed(x) for key, x in item.items()})
        return ("other", repr(item))
    return typed(value)


# a number token longer than our calls' can be (Limits' max_number_length), outside strings
_LONG_NUMBER = re.compile(r"[-+.0-9eE]{%d}" % (Limits().max_number_length + 1))


# A JSON text without its strings, in two linear passes that keep no backtracking record: first every
# escape (a backslash and the character after it) goes, then every string, now free of escapes, from
# its opening quote to its closing one (one left open runs to the end: the text is then no JSON
# anyway).  Memory stays bounded by the text whatever its strings hold: a single pattern for both,
# (?:[^"\\]|\\.)*, would keep a backtracking record per character (gigabytes for an argument string
# of 30 million characters in an adapter's output).
_JSON_ESCAPES = re.compile(r"\\.", re.S)
_JSON_PLAIN_STRINGS = re.compile(r'"[^"]*(?:"|\Z)')


def _without_strings(text: str) -> str:
    """text with its JSON strings (escapes included) taken out."""
    return _JSON_PLAIN_STRINGS.sub("", _JSON_ESCAPES.sub("", text)) if '"' in text else text


def _json_values_at_most(text: str) -> int:
    """An upper bound of the values in a JSON text, without parsing it: every value but the first of
    a list or object follows a comma, so the commas, brackets and braces outside strings, plus one."""
    bare = _without_strings(text)
    return bare.count(",") + bare.count("[") + bare.count("{") + 1


def _could_be_ours(theirs: str, ours: str) -> bool:
    """Whether an adapter's argument string could read as the same JSON value as our text, decided
    without parsing it, in one linear pass and bounded memory (its values were not counted with the
    adapter's output: a 10 MB "[[[[..." or a 30-million-digit number inside it cost gigabytes).

    Two texts that read as equal values have the same commas, brackets and braces outside their
    strings, so the same _json_values_at_most count (and a text that is no JSON is compared as text,
    equal only when that count is equal too): a different count is a different value, however deep
    or long.  A number token longer than Limits().max_number_length is never ours: the turn it would
    be compared with passed validation."""
    return _argument_shape(theirs) == _json_values_at_most(ours)


def _argument_shape(text: str) -> int | None:
    """_json_values_at_most of an adapter's argument string, or None when it holds a number token
    longer than Limits().max_number_length; one linear pass."""
    bare = _without_strings(text)
    if _LONG_NUMBER.search(bare):
        return None
    return bare.count(",") + bare.count("[") + bare.count("{") + 1


def same_arguments(theirs: Any, ours: Any, custom: bool = False) -> bool:
    """Equal as JSON values; as text (UTF-16 code units) when either side is not JSON.

    Both sides are read as adapter_json reads them, so a key twice in one object makes the
    arguments differ from any others: an executor may take either value.
    custom: our call is a free-text custom tool call; an adapter that hands its input over as a
    parsed value (a JSON string literal in its arguments) has the same text.

    An adapter's argument string is parsed only when it could hold our value (_could_be_ours):
    whatever is inside it was not counted with the rest of the adapter's output."""
    if not isinstance(theirs, str):   # an adapter that kept the parsed value
        try:
            return isinstance(ours, str) and typed_json(adapter_json(ours)) == typed_json(theirs)
        except (JsonProblem, RecursionError):
            return False
    if custom and isinstance(ours, str):
        return _same_custom_text(theirs, ours)
    if isinstance(ours, str):
        if utf16(theirs) != utf16(ours) and not _could_be_ours(theirs, ours):
            return False
        try:
            return typed_json(adapter_json(theirs)) == typed_json(adapter_json(ours))
        except RecursionError:   # nested past what Python can walk: compared as text below
            pass
        except JsonProblem as problem:
            if problem.code == DUPLICATE_KEY:
                return False
    return utf16(theirs) == utf16(ours)


def _same_custom_text(theirs: str, ours: str) -> bool:
    """A custom tool call's free text: the adapter's string is that text, or a JSON string literal of it."""
    if utf16(theirs) == utf16(ours):
        return True
    if not _could_be_ours(theirs, '""'):   # our text, as a JSON value, is one string
        return False
    try:
        value = adapter_json(theirs)
    except JsonProblem:
        return False
    return isinstance(value, str) and utf16(value) == utf16(ours)


def _call_problems(position: int, got: dict, want: dict) -> list[str]:
    problems = []
    if got.get("name") != want.get("name"):
        problems.append(f"call {position}: name")
    if got.get("namespace") != want.get("namespace"):   # part of a Responses call's identity
        problems.append(f"call {position}: namespace")
    if not same_arguments(got.get("arguments"), want.get("arguments"), custom=want.get("kind") == "custom"):
        problems.append(f"call {position}: arguments")
    theirs, ours = got.get("id"), want.get("id")
    if theirs and ours and theirs != ours:
        problems.append(f"call {position}: {_id_problem(theirs, ours)}")
    return problems


def _id_problem(theirs: Any, ours: Any) -> str:
    """How an adapter's id differs from ours: said apart when it is ours repeated (an adapter that
    appended the id again from every chunk that repeats it)."""
    times, rest = divmod(len(theirs), len(ours)) if isinstance(theirs, str) and isinstance(ours, str) else (0, 1)
    if not rest and times > 1 and theirs == ours * times:
        return f"id (ours repeated {times} times)"
    return "id"


def _coarse(value: Any) -> Any:
    """A hashable form of a JSON value, equal whenever same_arguments could find two values equal
    (and sometimes when it would not: numbers by their nearest double, text by its UTF-16 code
    units, a member name the same way); every match it suggests is confirmed by _call_problems.
    A value of a type it does not know raises TypeError: that call is tried against every call."""
    if isinstance(value, str):
        return ("s", utf16(value))
    if value is None or isinstance(value, bool):
        return ("c", value)
    if isinstance(value, (list, tuple)):
        return ("a", tuple(_coarse(item) for item in value))
    if isinstance(value, dict):
        return ("o", frozenset((utf16(key) if isinstance(key, str) else _coarse(key), _coarse(item))
                               for key, item in value.items()))
    import numbers

    if not isinstance(value, numbers.Number):   # int, float, and a Decimal or Fraction a reader may make
        raise TypeError(type(value).__name__)
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return ("n",)
    return ("n", "nan") if number != number else ("n", number)


def _text_key(text: str) -> Any:
    """The key of a string argument: its JSON value (read as leniently as Python's json reads it,
    so any stricter reading finds no value equal that this one keeps apart), or its text."""
    try:
        return _coarse(json.loads(text))
    except ValueError:
        return ("text", utf16(text))


def _want_keys(want: dict) -> list | None:
    """Index keys of one of our calls: an adapter call can match it (_call_problems) only if one of
    its _got_keys is among these.  None: no key (it is tried for every adapter call)."""
    ours = want.get("arguments")
    if not isinstance(ours, str):
        return None
    # beside an adapter's string: its text (a custom call), or what it reads as; beside a value: the value
    keys = [("custom", utf16(ours)) if want.get("kind") == "custom" else ("plain", _text_key(ours)),
            ("value", _text_key(ours))]
    return [(want.get("name"), want.get("namespace"), key) for key in keys]


def _got_keys(got: dict) -> list:
    """Index keys of one adapter call (see _want_keys)."""
    theirs = got.get("arguments")
    if not isinstance(theirs, str):
        keys = [("value", _coarse(theirs))]
    else:
        keys = [("plain", _text_key(theirs)), ("custom", utf16(theirs))]
        try:
            value = json.loads(theirs)
        except ValueError:
            value = None
        if isinstance(value, str):   # a custom call's text handed over as a JSON string literal
            keys.append(("custom", utf16(value)))
    return [(got.get("name"), got.get("namespace"), key) for key in keys]


class _CallIndex:
    """Our calls filed for _same_calls_reordered: by name, namespace and argument keys (a necessary
    condition of a match, see _want_keys), and within that by id.  candidates() gives the few calls of
    ours an adapter call could match, in our order; a call whose keys cannot be built (arguments nested
    past what Python can walk, a value or member of a type it does not know) is tried against every call."""

    def __init__(self, ours: list) -> None:
        self.ours = ours
        self.taken = [False] * len(ours)
        self.index: dict[Any, dict[Any, list[int]]] = {}
        self.everywhere: list[int] = []   # ours without keys: a candidate for every adapter call
        self.start: dict[int, int] = {}   # id of a list of positions -> where its untaken ones start
        for position, want in enumerate(ours):
            if not self._file(position, want):
                self.everywhere.append(position)

    def _file(self, position: int, want: dict) -> bool:
        """File one call of ours under each of its keys; False when it has none."""
        try:
            keys = _want_keys(want)
            if keys is None:
                return False
            own = want.get("id") or None
            for key in dict.fromkeys(keys):
                shelf = self.index.setdefault(key, {})
                shelf.setdefault(("id", own), []).append(position)
                shelf.setdefault("any", []).append(position)
            return True
        except (TypeError, RecursionError):
            return False

    def _live(self, positions: list[int]) -> Iterator[int]:
        at = self.start.get(id(positions), 0)
        while at < len(positions) and self.taken[positions[at]]:
            at += 1
        self.start[id(positions)] = at   # the taken ones at the front are never looked at again
        return (positions[n] for n in range(at, len(positions)))

    def candidates(self, got: dict) -> Iterable[int]:
        """The positions of ours that could match an adapter call, in our order."""
        import heapq

        try:
            keys = _got_keys(got)
            own = got.get("id") or None
            lists = []
            for key in dict.fromkeys(keys):
                shelf = self.index.get(key)
                if shelf:   # an id matches the same id, or a call of ours without one; no id matches any
                    lists += [shelf.get("any")] if own is None else [shelf.get(("id", own)), shelf.get(("id", None))]
            return heapq.merge(*(self._live(found) for found in lists + [self.everywhere] if found))
        except (TypeError, RecursionError):
            return range(len(self.ours))


def _some_call_matches_none(theirs: list, ours: list) -> bool:
    """Whether an adapter call's argument string has a shape (see _could_be_ours) that none of ours
    has, so that no call of ours can match it: decided before any argument is parsed."""
    shapes, texts = set(), set()
    for want in ours:
        if isinstance(want.get("arguments"), str):
            texts.add(want["arguments"])
            shapes.update((_json_values_at_most(want["arguments"]), 1) if want.get("kind") == "custom"
                          else (_json_values_at_most(want["arguments"]),))
    return any(isinstance(text, str) and text not in texts and _argument_shape(text) not in shapes
               for text in (got.get("arguments") for got in theirs))


def _same_calls_reordered(theirs: list, ours: list) -> bool:
    """Whether each adapter call, in its order, takes the first call of ours not yet taken that it
    matches (_call_problems), and every one finds one.

    The outcome of trying every remaining call of ours for each of theirs, found through an index
    (_CallIndex), so each adapter call looks at the few calls that could match it, in our order:
    about one _call_problems per call, where trying every remaining one would make about n*n/2
    (2,000 calls: 2,003,000)."""
    if _some_call_matches_none(theirs, ours):
        return False
    index = _CallIndex(ours)
    for got in theirs:   # _call_problems from here: a frame more above it lowers how deep arguments compare as JSON
        for position in index.candidates(got):
            if not index.taken[position] and not _call_problems(0, got, ours[position]):
                index.taken[position] = True
                break
        else:
            return False
    return True


def call_differences(theirs: list, ours: list) -> list[str]:
    """What differs between the adapter's calls and ours (empty: the same calls)."""
    problems = [] if len(theirs) == len(ours) else [f"{len(theirs)} calls, ours {len(ours)}"]
    for position, (got, want) in enumerate(zip(theirs, ours)):
        problems.extend(_call_problems(position, got, want))
    if problems and len(theirs) == len(ours) and _same_calls_reordered(theirs, ours):
        problems = ["same calls in another order"]   # worth saying
    return problems


def adapter_verdict(status: str, calls: Any, refused: bool, unsupported: bool, ours: list,
                    codes: Iterable[str] = (), *, unreadable: bool = False,
                    requested: bool = True) -> tuple[str, list[str]]:
    """(verdict, differences) for one adapter on one fixture: one of ADAPTER_VERDICTS.

    agree: we pass and it executes exactly our calls; differs-on-pass: we pass and it executes
    something else; executes-blocked: we block (or find no call) and it would execute a call;
    refuses: it raises, or executes nothing, on a turn with calls we block; refuses-pass: the same on a
    turn we pass (a failure only where the caller says so: conform --strict); not-applicable: it does not read
    this profile, or the envelope is not a stream.  Two more come from `conform` only:
    not-requested: it never asked for this fixture's stream, so nothing it did is about the stream;
    unreadable: what it says it would execute cannot be read (calls is then None).  Both are
    failures: neither is evidence that it left a blocked turn alone.
    """
    if not requested:
        return "not-requested", []
    if unsupported or _ENVELOPE_CODES.intersection(codes):
        return "not-applicable", []
    if unreadable:
        return "unreadable", []
    if status == "pass":
        if refused or not calls:
            return "refuses-pass", []
        problems = call_differences(calls, ours)
        return ("differs-on-pass", problems) if problems else ("agree", [])
    if calls:  # blocked, or no call found by us: anything it runs was not checked
        return "executes-blocked", []
    if status == "not_applicable" and not refused:
        return "not-applicable", []
    return "refuses", []


# ---------------------------------------------------------------------------
# Command-line toolkit: usage errors, option parsing and input files, shared by every subcommand
# ---------------------------------------------------------------------------

# Rules of this section:
#   * Whatever the user got wrong (an option, a path, an unreadable input) is a UsageError: exit 3,
#     one line on stderr, never a report.  argparse never exits here and never abbreviates.
#   * Only standard output is flushed here, so a failed write is an OutputError, not lost at exit.


class UsageError(Exception):
    """Bad usage or unreadable input: exit 3, a message on stderr, no report."""


def _strict_parse(parser: Any, argv: list[str]) -> Any:
    """parser.parse_args, but an unknown --option is named first, before any other complaint
    (argparse would report a missing FIXTURE for `--hel`, and never abbreviates here)."""
    for token in argv:
        if token == "--":
            break
        name = token.split("=", 1)[0]
        if name.startswith("--") and name not in parser.known_options:
            raise UsageError(f"unknown option {name[:60]} (see --help; options are never abbreviated)")
    return parser.parse_args(argv)


def _new_parser(prog: str, description: str, **extra: Any) -> Any:
    """An argparse parser whose errors are UsageError (argparse's own exit 2 means
    not_applicable here) and which never accepts an abbreviated option."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def __init__(self, **options: Any) -> None:
            self.known_options: set[str] = set()   # every option string, for _strict_parse
            super().__init__(**options)

        def add_argument(self, *names: str, **options: Any) -> Any:
            self.known_options.update(name for name in names if name.startswith("-"))
            return super().add_argument(*names, **options)

        def error(self, message: str) -> Any:
            raise UsageError(f"{message} (see --help)")

    return Parser(prog=prog, description=description, allow_abbrev=False, **extra)


def _read_input(path: str, limit: int) -> bytes:
    try:
        if path == "-":
            if sys.stdin is None:
                raise UsageError("cannot read standard input: it is closed")
            return _read_limited(sys.stdin.buffer, limit)
        with open(path, "rb") as handle:
            return _read_limited(handle, limit)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _read_limited(handle: Any, limit: int) -> bytes:
    """handle's bytes up to limit + 1 (one more says the input is over the limit).  read(limit + 1) would
    allocate limit + 1 bytes first whatever the size: a regular file is read at its size (and on, should
    it have grown), anything else in pieces of at most 1 MiB."""
    import os
    import stat

    try:
        status = os.fstat(handle.fileno())
        size = status.st_size if stat.S_ISREG(status.st_mode) else -1
    except (OSError, ValueError, AttributeError):   # (no file descriptor: an in-memory stream)
        size = -1
    data = handle.read(min(limit + 1, size + 1)) if size >= 0 else b""
    if size >= 0 and len(data) <= size:
        return data   # (the whole file: it ended before size + 1)
    pieces = [data]
    got = len(data)
    while got <= limit:
        piece = handle.read(min(1 << 20, limit + 1 - got))
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
    return b"".join(pieces)


def _walk_json(top: str) -> list[str]:
    """Every *.json file under top, following folder links once each; an unreadable folder
    is a usage error (skipping it would let CI pass without checking what it holds)."""
    import os

    def refuse(exc: OSError) -> None:
        raise UsageError(f"cannot read folder {exc.filename}: {exc.strerror or exc}")

    found, seen = [], set()
    for folder, folders, names in os.walk(top, onerror=refuse, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:             # a link back up the tree: each folder once
            folders[:] = []
            continue
        seen.add(real)
        for name in names:
            if name.endswith(".json"):
                path = os.path.join(folder, name)
                if _special_file(path):   # a pipe or a device would block or never end
                    raise UsageError(f"{path} is not a regular file (a fixture folder holds files)")
                found.append(path)
    return found


def _special_file(path: str) -> bool:
    """The path exists and is neither a regular file nor a folder (a pipe, a device, a socket)."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _prog() -> str:
    """The command's name as the user ran it: the installed command, or the script."""
    import os

    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "validate-tool-stream" if name.startswith("validate-tool-stream") else "validate_tool_stream.py"


def _flush_stdout() -> None:
    """Flush standard output now, so a write that fails is reported, not lost at exit."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        raise OutputError(getattr(exc, "strerror", None) or str(exc)) from None


_TEMPORARY_PREFIX_BYTES = 100   # of the file's name kept in its temporary file's name (NAME_MAX is 255)


def _temporary_name(name: str) -> str:
    """A fresh hidden name ending in .tmp beside `name` (never read as a fixture), within NAME_MAX."""
    import os
    import secrets

    prefix = name
    while len(os.fsencode(prefix)) > _TEMPORARY_PREFIX_BYTES:
        prefix = prefix[:-1]
    return f".{prefix}.{secrets.token_hex(6)}.tmp"


def _by_descriptor() -> bool:
    """Can files be reached through folder descriptors here (POSIX), or only by path (Windows)?"""
    import os

    return hasattr(os, "O_DIRECTORY") and hasattr(os, "O_NOFOLLOW") and os.open in os.supports_dir_fd


def _read_regular(name: str, folder_fd: int, limit: int) -> tuple[bytes, int]:
    """(up to limit + 1 bytes, permission bits) of the regular file `name` in an open folder;
    never through a link, never blocking on a pipe."""
    import os
    import stat

    handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=folder_fd)
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(0, "not a regular file")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(handle, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), stat.S_IMODE(status.st_mode)
    finally:
        os.close(handle)


class _ChangedMeanwhile(Exception):
    """write_atomically(read=...): the file no longer holds the bytes that were read (another
    writer saved it meanwhile), so it was not replaced.  `holds_new` says that it already holds
    exactly the bytes that were to be written (another pin got there first)."""

    def __init__(self, holds_new: bool) -> None:
        super().__init__("the file changed after it was read")
        self.holds_new = holds_new


def write_atomically(path: str, data: bytes, folder_fd: int | None = None, read: bytes | None = None) -> None:
    """Replace the file at path with data so that it always holds its old or its new bytes.

    The bytes go to a temporary file in the same folder (hidden, ending in .tmp, so never
    read as a fixture), flushed and synced to disk, given the file's permission bits,
    then renamed over it.  With `folder_fd` (an open descriptor of the file's folder; path
    is then its name in it) every step goes through that descriptor, so a folder swapped
    for a link meanwhile is never followed; the file itself is replaced, never written
    through.  With `read` (the bytes the caller read from the file) the file is read again
    just before the rename, without following a link, and replaced only if it still holds
    exactly those bytes: else _ChangedMeanwhile is raised and the file is left as it is.
    (A write by someone else in the short time between that last read and the rename is
    still replaced: POSIX has no rename that compares first.)  A failure (a full disk, a
    file-size limit, an interruption) removes the temporary file and leaves the original
    untouched; OSError reaches the caller.  A file that does not exist yet (and no `read`) is
    made: its temporary file is created with the permission bits the umask gives a new file.
    """
    import os

    if folder_fd is None and _by_descriptor():
        folder, name = os.path.split(os.path.abspath(path))
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return write_atomically(name, data, handle, read)
        finally:
            os.close(handle)
    at = {} if folder_fd is None else {"dir_fd": folder_fd}
    folder, name = (os.path.split(os.path.abspath(path)) if folder_fd is None else ("", path))
    try:
        mode: int | None = os.stat(name if folder_fd is not None else path, follow_symlinks=folder_fd is None,
                                   **at).st_mode & 0o7777
    except FileNotFoundError:
        if read is not None:
            raise
        mode = None   # a new file: the bits the umask leaves of 0o666, given at creation
    temporary = _temporary_name(name)
    target = os.path.join(folder, temporary)
    handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_BINARY", 0), 0o600 if mode is not None else 0o666, **at)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
            if hasattr(os, "fchmod") and mode is not None:
                os.fchmod(out.fileno(), mode)
        if not hasattr(os, "fchmod") and mode is not None:
            os.chmod(target, mode)
        if read is not None:
            longest = max(len(read), len(data))
            if folder_fd is None:
                with open(path, "rb") as current:
                    now = current.read(longest + 1)
            else:
                now, _ = _read_regular(name, folder_fd, longest)
            if now != read:
                raise _ChangedMeanwhile(now == data)
        if folder_fd is None:
            os.replace(target, path)
        else:
            os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            os.fsync(folder_fd)   # the rename itself reaches the disk
    except BaseException:
        try:
            os.unlink(target, **at)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------------------
# Serve: the fixtures as a local provider
# ---------------------------------------------------------------------------
#
# `serve` answers each fixture's provider API path with the fixture's stream, every payload in
# order, framed as its provider frames it (each room's Profile row gives the path and the
# framing), so an adapter can be tested through its own HTTP client.  Nothing is repaired: a
# blocked turn is served as it is.  No URL reaches a file: the served set is read before the
# server starts, and a request only picks one of its entries.

SERVE_MAX_REQUEST_BYTES = 1 << 20   # a request body over this is answered 413
SERVE_MAX_CONNECTIONS = 64          # connections answered at once; one more is answered 503 and closed
SERVE_REQUEST_SECONDS = 30.0        # a whole request (line, headers, body) must arrive within this, from when it
                                    # is awaited: a slower one is answered 408 (or, if none of it came, closed)
SERVE_STALL_SECONDS = 30.0          # an answer's slice (_SERVE_SLICE bytes) not taken by the client within this
                                    # ends the connection
SERVE_LOG_LINES = 1024              # request log lines waiting for their sink; one more is dropped and counted
SERVE_MAX_DELAY_MS = 10_000         # --delay-ms: the longest pause between two writes of a stream
SERVE_MAX_FIRST_BYTE_MS = 60_000    # --first-byte-ms: the longest pause before an answer's first byte
SERVE_MAX_PAUSED_MS = 300_000       # --delay-ms pauses of one answer in all: the writes after go unpaused
SERVE_RANDOM_MOST = 16              # random:SEED chunking: each write is 1 to this many bytes
_SERVE_SLICE = 1 << 16              # bytes of an answer handed to the socket at once (at most, in every chunking)
SERVE_CHUNKINGS = ("whole", "event", "byte", "random:SEED")


class ServeTransport(_Record):
    """How `serve` writes a stream's body (never what it writes: the bytes are the same in every
    chunking).  chunking: (mode, seed) with mode one of whole, event, byte, random; framing: the
    SSE framing variants asked for (each room applies those its HttpRules names); delay_ms: the
    pause between two writes; first_byte_ms: the pause before the answer's first byte."""

    __slots__ = ("chunking", "framing", "delay_ms", "first_byte_ms")

    def __init__(self, chunking: tuple[str, int | None] = ("whole", None), framing: frozenset = frozenset(),
                 delay_ms: int = 0, first_byte_ms: int = 0) -> None:
        self.chunking = chunking
        self.framing = framing
        self.delay_ms = delay_ms
        self.first_byte_ms = first_byte_ms

    @property
    def name(self) -> str:
        mode, seed = self.chunking
        return mode if seed is None else f"{mode}:{seed}"


def serve_chunking(text: str) -> tuple[str, int | None]:
    """(mode, seed) for a chunking as written: whole, event, byte or random:SEED (SEED a whole
    number of at most 20 digits); ValueError for anything else."""
    mode, colon, seed = text.partition(":")
    if mode in ("whole", "event", "byte") and not colon:
        return mode, None
    if mode == "random" and seed.isascii() and seed.isdigit() and len(seed) <= 20:
        return mode, int(seed)
    raise ValueError(f"--chunking {_clip(text)!r}: give one of {', '.join(SERVE_CHUNKINGS)}")


def serve_transport(chunking: str = "whole", framing: Iterable[str] = (), delay_ms: int = 0,
                    first_byte_ms: int = 0) -> ServeTransport:
    """A ServeTransport from the options as written (framing: names, or one comma-separated
    string); ValueError for an unknown chunking or framing, or a pause out of its bounds."""
    names = [name.strip() for name in (framing.split(",") if isinstance(framing, str) else framing)]
    unknown = sorted(name for name in names if name not in SERVE_FRAMINGS)
    if unknown:
        raise ValueError(f"--framing {_clip(unknown[0])!r}: give {', '.join(sorted(SERVE_FRAMINGS))} "
                         "(comma-separated)")
    for option, value, most in (("delay-ms", delay_ms, SERVE_MAX_DELAY_MS),
                                ("first-byte-ms", first_byte_ms, SERVE_MAX_FIRST_BYTE_MS)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
            raise ValueError(f"--{option} must be a whole number of milliseconds from 0 to {most}")
    return ServeTransport(serve_chunking(chunking), frozenset(names), delay_ms, first_byte_ms)


def _whole_writes(size: int, seed: Any, ends: Callable[[], list[int]]) -> Iterator[tuple[int, int]]:
    yield from _cut_writes(0, size)


def _cut_writes(start: int, end: int) -> Iterator[tuple[int, int]]:
    """start..end in writes of at most _SERVE_SLICE bytes."""
    while start < end:
        yield start, min(end, start + _SERVE_SLICE)
        start += _SERVE_SLICE


def _event_writes(size: int, seed: Any, ends: Callable[[], list[int]]) -> Iterator[tuple[int, int]]:
    start = 0
    for end in [*ends(), size]:
        yield from _cut_writes(start, min(max(end, start), size))
        start = max(end, start)


def _byte_writes(size: int, seed: Any, ends: Callable[[], list[int]]) -> Iterator[tuple[int, int]]:
    return ((start, start + 1) for start in range(size))


def _random_writes(size: int, seed: Any, ends: Callable[[], list[int]]) -> Iterator[tuple[int, int]]:
    import random

    chooser, start = random.Random(seed), 0   # a new one per answer: the same seed, the same writes
    while start < size:
        end = min(size, start + chooser.randint(1, SERVE_RANDOM_MOST))
        yield start, end
        start = end


# chunking mode -> (body size, seed, where its events end) -> the (start, end) of each write
_SERVE_WRITES: Mapping[str, Callable[..., Iterator[tuple[int, int]]]] = MappingProxyType({
    "whole": _whole_writes, "event": _event_writes, "byte": _byte_writes, "random": _random_writes})


def serve_writes(body: bytes, kind: str, chunking: tuple[str, int | None],
                 ends: Callable[[], list[int]] | None = None) -> Iterator[tuple[int, int]]:
    """The (start, end) of each write of a stream's body of content type `kind` under a chunking
    (as serve_chunking gives it), one at a time: they cover the body once, in order.  ends: where
    its events end, when known (else found from `kind`, by EVENT_ENDS, if the chunking asks)."""
    mode, seed = chunking
    return _SERVE_WRITES[mode](len(body), seed, ends or (lambda: EVENT_ENDS.get(kind, lambda _: [])(body)))


class _Served(_Record):
    """One fixture as served: its URL prefix, file, profile's row and stream (and, for `conform`, the
    bytes read, which are what it judges: the file may change after it was read), and its "serve"
    block (the transport fault it is served with; {} for none)."""

    __slots__ = ("prefix", "path", "row", "stream", "data", "fault")

    def __init__(self, prefix: str, path: str, row: Profile, stream: list, data: bytes | None = None,
                 fault: Mapping[str, Any] | None = None) -> None:
        self.prefix = prefix
        self.path = path
        self.row = row
        self.stream = stream
        self.data = data
        self.fault = fault or {}

    @property
    def profile(self) -> str:
        return self.row.name


def serve_plan(paths: list[str], collisions_fail: bool = False, keep_bytes: bool = False,
               pinned: set[str] | None = None) -> tuple[dict[str, _Served], list[tuple[str, str]]]:
    """(URL prefix -> served fixture, [(file, why it is not served)]) for the files and folders given.

    A fixture's prefix is its path relative to the folder given, without ".json" (a file given by
    itself: its name); one already taken by a fixture of an earlier path given gets the number of its
    own path given in front ("2/<prefix>" for the second).  A fixture that is not a valid envelope, or
    whose prefix is taken even so, is left out.  collisions_fail is accepted and unused (prefixes of
    several folders no longer collide).
    keep_bytes: each served fixture keeps the bytes its stream was read from (each file is read once).
    pinned: gets each file left out as no valid envelope whose own expect block pins exactly that
    (`--expect` matches it: a deliberate invalid_fixture or unknown_profile), from the bytes read.
    """
    import os

    served: dict[str, _Served] = {}
    refused: list[tuple[str, str]] = []
    limits = Limits()
    for number, given in enumerate(paths, 1):
        for path, relative in _given_files(given):
            prefix = relative[:-5] if relative.endswith(".json") else relative
            prefix = prefix.replace(os.sep, "/")
            if prefix in served and served[prefix].path != path:   # an earlier path given has it (not this file)
                prefix = f"{number}/{prefix}"
            try:
                data = _read_input(path, limits.max_input_bytes)
                doc = parse_envelope_bytes(data)
            except (UsageError, EnvelopeError) as exc:
                refused.append((path, str(exc)))
                continue
            problems, row, _ = _envelope_problems(doc, limits, None)   # the fixture's one look-up
            if problems:
                refused.append((path, f"not a valid envelope ({problems[0].code}: {problems[0].message})"))
                if pinned is not None and isinstance(doc, dict) and not check_expect(validate_bytes(data),
                                                                                     doc.get("expect")):
                    pinned.add(path)
            elif PROFILES[doc["profile"]].http is None:
                refused.append((path, f"its profile {doc['profile']} is not served (its row has no http rules)"))
            elif prefix in served:
                refused.append((path, f"its URL prefix {prefix!r} is taken by {served[prefix].path}"))
            else:
                served[prefix] = _Served(prefix, path, row, doc[row.stream_key], data if keep_bytes else None,
                                         doc.get("serve"))
    return served, refused


def _given_files(given: str) -> list[tuple[str, str]]:
    """(file, its path relative to the folder given) for each fixture a path given to serve names:
    a folder's *.json files, recursively and sorted, or a file by itself (under its name)."""
    import os

    if os.path.isdir(given):
        return [(path, os.path.relpath(path, given)) for path in sorted(_walk_json(given))]
    if os.path.isfile(given):
        return [(given, os.path.basename(given))]
    raise UsageError(f"cannot read {given}: no such file or folder")


_SERVE_MAX_PATH = 4096   # characters of a request path; a longer one names no fixture


def _serve_route(served: Mapping[str, _Served], raw_path: str) -> tuple[_Served | None, list[str], str]:
    """(the fixture a request path names or None, the API path after its prefix as sent and decoded,
    the query).  Segments are decoded one by one, so an encoded "/" inside one (a Bedrock model ARN)
    stays inside it."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(raw_path)
    if len(parts.path) > _SERVE_MAX_PATH:
        return None, [], parts.query
    raw = parts.path.split("/")
    decoded = [unquote(segment, errors="surrogateescape") for segment in raw]   # a name that is not UTF-8
    prefixes = ["/".join(decoded[1:cut]) for cut in range(len(decoded))]   # the path is bounded above
    found: tuple[_Served | None, list[str], str] = (None, [], parts.query)
    for cut in range(len(raw) - 1, 0, -1):   # the longest prefix first: folders may nest ...
        fixture = served.get(prefixes[cut])
        if fixture is not None:
            rest = "/" + "/".join(raw[cut:])
            http = fixture.row.http
            if http is not None and any(re.fullmatch(http.api_path, path) for path in (rest, unquote(rest))):
                return fixture, [rest, unquote(rest)], parts.query
            if found[0] is None:   # ... and the one whose API path follows it wins (a.json beside a/v1.json)
                found = (fixture, [rest, unquote(rest)], parts.query)
    return found


def _serve_answer(served: Mapping[str, _Served], method: str, raw_path: str, length: str | None,
                  bodies: _ServeBodies | None = None,
                  on_stream: Callable[[str], None] | None = None) -> tuple[int, str, bytes, dict[str, str]]:
    """(status, content type, body, extra headers) for one request; the body is read by the caller
    only when the status is 200 (its length is checked here).  With `bodies`, a fixture's body is
    the one built at its first request (the same bytes object for every answer), else built now.

    A fixture's "serve" block is played here: its error answers the first "times" requests (every
    request without it; without `bodies`, which counts them, this one), as the room's HttpError of
    that kind; "cut" answers the stream without its terminal framing and a Connection: close header,
    which makes the caller send it without a length, ended by closing.  on_stream gets the request
    path of each request answered with the fixture's stream or its error, before it is sent."""
    fixture, api_paths, query = _serve_route(served, raw_path)
    row = fixture.row if fixture is not None else None
    if row is None or row.http is None or not any(re.fullmatch(row.http.api_path, path) for path in api_paths):
        return _serve_error(404, "not_found", "no served fixture answers this path")
    if method != "POST":
        status, kind, body, headers = _serve_error(405, "method_not_allowed", "the API path takes POST only")
        return status, kind, body, dict(headers, Allow="POST")
    if length is None:
        return _serve_error(411, "length_required", "a request body needs a Content-Length")
    if not length.isascii() or not length.isdigit() or len(length) > 18:
        return _serve_error(400, "bad_request", "Content-Length is not a number")
    if int(length) > SERVE_MAX_REQUEST_BYTES:
        return _serve_error(413, "request_too_large",
                            f"a request body may hold at most {SERVE_MAX_REQUEST_BYTES} bytes")
    if on_stream is not None:
        on_stream(raw_path)
    fault = fixture.fault
    if "error" in fault and ("times" not in fault or (bodies.asked(fixture) if bodies is not None else 1)
                             <= fault["times"]):
        error = row.http.error(fault["error"]["kind"])
        return error.status, error.content_type, error.body, dict(error.headers)
    if bodies is not None:
        kind, body = bodies.get(fixture, query)
    else:
        kind, body = (row.http.cut_frame or row.http.frame if fault.get("cut") else row.http.frame)(fixture.stream,
                                                                                                  query)
    return 200, kind, body, {"Connection": "close"} if fault.get("cut") else {}


def _serve_error(status: int, kind: str, message: str) -> tuple[int, str, bytes, dict[str, str]]:
    body = json.dumps({"error": {"type": kind, "message": message}}).encode("ascii")
    return status, "application/json", body, {}


class _ServeBodies:
    """Each fixture's framed body, built once (at its first request) and then shared: every answer
    writes the same bytes object, in memoryview slices, so no answer holds a copy of its own.

    A room's framing depends on the query alone (Gemini's alt=sse picks SSE or a JSON array), so
    the framing of an empty stream under the request's query names the variant: a fixture has as
    many bodies as its room has framings (one, or two on gemini), whatever queries are sent."""

    def __init__(self, transport: ServeTransport | None = None) -> None:
        import threading

        self._bodies: dict[tuple, tuple[str, bytes]] = {}
        self._ends: dict[int, list[int]] = {}   # id of a body kept in _bodies -> where its events end
        self._lock = threading.Lock()
        self.builds = 0   # bodies built (a test reads it: one per fixture and framing)
        self.requests: dict[str, int] = {}   # prefix -> requests answered with its stream
        self.errors: dict[str, int] = {}     # prefix -> requests of a fixture with an error to answer
        self.transport = transport or ServeTransport()   # its framing applies to the bodies built after
        self.sent: dict[str, bytes] = {}     # prefix -> the body of the last request answered with its stream
                                             # (make_server's keep_requests; each at most SERVE_MAX_REQUEST_BYTES)

    def asked(self, fixture: _Served) -> int:
        """Count one more request of a fixture whose "serve" block has an error: its number, from 1."""
        with self._lock:
            number = self.errors[fixture.prefix] = self.errors.get(fixture.prefix, 0) + 1
        return number

    def keep(self, prefix: str, body: bytes) -> None:
        with self._lock:
            self.sent[prefix] = body

    def get(self, fixture: _Served, query: str) -> tuple[str, bytes]:
        http, framing = fixture.row.http, self.transport.framing
        frame = (http.cut_frame or http.frame) if fixture.fault.get("cut") else http.frame
        key = (fixture.prefix, framing, *frame([], query))
        with self._lock:
            self.requests[fixture.prefix] = self.requests.get(fixture.prefix, 0) + 1
        found = self._bodies.get(key)
        if found is None:
            with self._lock:   # two first requests at once build it once
                found = self._bodies.get(key)
                if found is None:
                    kind, body = frame(fixture.stream, query)
                    applied = framing & http.framings   # the variants its room's SDKs read alike, no others
                    if kind == "text/event-stream":
                        body = sse_reframed(body, applied & SSE_FRAMINGS)
                    if "utf8" in applied:
                        body = json_raw_utf8(body)
                    found = self._bodies[key] = (kind, body)
                    self.builds += 1
        return found

    def ends(self, kind: str, body: bytes) -> list[int]:
        """Where the events of a body `get` gave end, found once per body (`event` chunking)."""
        found = self._ends.get(id(body))
        if found is None:
            found = EVENT_ENDS.get(kind, lambda _: [])(body)
            with self._lock:
                found = self._ends.setdefault(id(body), found)
        return found


_SERVE_LINGER = 64                   # turned-away connections kept open (reading) until they can close cleanly
_SERVE_LINGER_SECONDS = 1.0          # ... for at most this long
_SERVE_ACCEPT_PAUSE = (0.05, 1.0)    # seconds accepting pauses when no descriptor is left: first, most (doubling)
_SERVE_LOG_CLOSE_SECONDS = 1.0       # closing the server waits this long for queued log lines to be written


class _ServeLog:
    """Request log lines on their way to a sink (standard output, a list): a queue of at most `size`
    lines drained by one writer thread, so a sink that blocks (a pipe nobody reads) holds that
    thread, never an answer.  A line that finds the queue full is dropped and counted; the count
    is written, as a line of its own, before the next line that gets through."""

    def __init__(self, sink: Callable[[str], None], size: int) -> None:
        import queue
        import threading

        self._sink = sink
        self._queue: Any = queue.Queue(size)
        self._full = queue.Full
        self._count = threading.Lock()
        self.dropped = 0   # lines refused by a full queue (or sent after close)
        self._said = 0     # ... of which the log has been told
        self._closing = False
        self._thread = threading.Thread(target=self._drain, name="serve-log", daemon=True)
        self._thread.start()

    def __call__(self, line: str) -> None:
        """Queue one line; never waits."""
        try:
            if self._closing:
                raise self._full
            self._queue.put_nowait(line)
        except self._full:
            with self._count:
                self.dropped += 1

    def _drain(self) -> None:
        while True:
            line = self._queue.get()
            if line is None:
                return
            unsaid = self.dropped - self._said
            if unsaid:
                self._said += unsaid
                self._write(f"{unsaid} request log lines dropped: the log was not read fast enough")
            self._write(line)

    def _write(self, line: str) -> None:
        try:
            self._sink(line)
        except Exception:   # noqa: BLE001 - a sink that fails loses its line, never the server
            pass

    def close(self, wait: float) -> int:
        """Take no more lines, give the writer up to `wait` seconds to write the queued ones, and
        return how many lines were not written (dropped and not yet told, or still queued)."""
        import time

        self._closing = True
        until = time.monotonic() + wait
        try:
            self._queue.put(None, timeout=wait)
            stop = 1
        except self._full:
            stop = 0
        self._thread.join(max(0.0, until - time.monotonic()))
        queued = 0 if not self._thread.is_alive() else max(0, self._queue.qsize() - stop)
        return self.dropped - self._said + queued


def _serve_turn_away(sock: Any, most: int) -> None:
    """Answer a connection over the cap 503 at once (a small answer: it fits the socket's buffer,
    the send never waits) and send its end; it is closed later, once what the client sent is read."""
    _, kind, body, _ = _serve_error(503, "overloaded", f"the server is answering {most} connections, its most "
                                    "at once; try again")
    head = (f"HTTP/1.1 503 Service Unavailable\r\nServer: {TOOL}/{VERSION}\r\nContent-Type: {kind}\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode("ascii")
    try:
        sock.setblocking(False)
        sock.send(head + body)
        sock.shutdown(1)   # SHUT_WR: the answer is whole
    except OSError:
        pass


def _serve_unread(sock: Any) -> bool:
    """Read (and discard) what a turned-away client sent so far; True once it has closed or failed."""
    for _ in range(16):   # at most 1 MiB a turn: the accept loop must not be held
        try:
            if not sock.recv(65536):
                return True
        except BlockingIOError:
            return False
        except OSError:
            return True
    return False


def make_server(served: Mapping[str, _Served], host: str = "127.0.0.1", port: int = 0,
                log: Callable[[str], None] | None = None, *, max_connections: int = SERVE_MAX_CONNECTIONS,
                request_seconds: float = SERVE_REQUEST_SECONDS, stall_seconds: float = SERVE_STALL_SECONDS,
                log_lines: int = SERVE_LOG_LINES, on_stream: Callable[[str], None] | None = None,
                on_answer: Callable[[str, str, int], None] | None = None,
                transport: ServeTransport | None = None,
                on_write: Callable[[Any, int, int], None] | None = None, keep_requests: bool = False) -> Any:
    """A threading HTTP server answering the served fixtures (call serve_forever(); shutdown() stops it).

    At most `max_connections` connections are answered at once (one more is answered 503 and
    closed); a request must arrive whole within `request_seconds`; `log` gets one line per
    request through a queue of `log_lines` lines (see _ServeLog), never holding an answer.
    server_close() closes the socket and waits a moment for the queued log lines; the server's
    `unlogged` then says how many were not written.  `server.bodies.requests` counts, per fixture
    prefix, the requests answered with its stream (counted before the answer is written).
    on_stream: called with the request path of each request answered with a fixture's stream
    (or the error its "serve" block answers instead; not a HEAD), before any of it is sent (`conform`
    learns from it which fixtures were asked for).  on_answer: called with (method, request path,
    status) of every answer, on the connection's thread, before any of the answer is sent (`conform`
    keeps them per fixture).
    transport: how a stream's body is written (ServeTransport: chunking, framing, pauses); the
    server's `transport` may be replaced between requests (`conform` does, per chunking).
    on_write: called with the connection's socket, start and end of each write of a stream's body,
    after it (a test records the write boundaries).  keep_requests: `server.bodies.sent` keeps, per
    fixture prefix, the body of the last request answered with its stream (whole bodies only, each at
    most SERVE_MAX_REQUEST_BYTES; take them out with pop() to keep it small: `conform` compares each
    with the fixture's request)."""
    import errno
    import io
    import socket
    import threading
    import time
    from collections import deque
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    logger = _ServeLog(log, log_lines) if log is not None else None
    bodies = _ServeBodies(transport)

    class Reader(io.RawIOBase):
        """The connection's bytes, read against the request's deadline: each read waits only for
        what is left of it, so a client that trickles a byte at a time cannot stretch it."""

        def __init__(self, handler: Handler) -> None:
            self.handler = handler

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            handler = self.handler
            left = handler.deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError("the request did not arrive in time")
                handler.connection.settimeout(left)
                count = handler.connection.recv_into(buffer)
            except TimeoutError:
                handler.timed_out = True
                raise
            handler.received += count
            return count

    class Handler(BaseHTTPRequestHandler):
        server_version = f"{TOOL}/{VERSION}"
        protocol_version = "HTTP/1.1"
        timeout = stall_seconds   # a write (one slice) that makes no progress this long ends the connection
        disable_nagle_algorithm = True   # the body follows its headers at once (else each answer on a kept-alive
                                         # connection waits for the client's delayed acknowledgement, ~40 ms)

        def version_string(self) -> str:
            return self.server_version

        def setup(self) -> None:
            super().setup()
            self.rfile.close()   # the library's reader: left open, it would keep the socket from closing
            self.rfile = io.BufferedReader(Reader(self))

        def handle_one_request(self) -> None:
            self.deadline = time.monotonic() + request_seconds
            self.received = 0
            self.command = self.path = None   # not the previous request's, should this one never be read
            self.timed_out = False
            super().handle_one_request()   # a read past the deadline: TimeoutError, caught there
            if self.timed_out:
                self.close_connection = True
                if self.received:   # part of a request came: say why it is not answered
                    self._refuse(408, "request_timeout",
                                 f"the whole request must arrive within {request_seconds:g} seconds")

        def _answer(self) -> None:
            lengths = self.headers.get_all("Content-Length") or []
            length = lengths[0] if lengths else None
            if len(lengths) > 1 or (lengths and self.headers.get("Transfer-Encoding") is not None):
                # two ways to find where the body ends: a request could hide another behind it
                status, kind, body, headers = _serve_error(400, "bad_request", "a request must give exactly one "
                                                           "Content-Length and no Transfer-Encoding beside it")
                self._send(status, kind, body, headers)
                return
            status, kind, body, headers = _serve_answer(served, self.command, self.path, length, bodies, on_stream)
            streams = status == 200 and self.command != "HEAD"
            kept = bytearray() if streams and keep_requests else None   # 200: the length is checked
            if length and length.isascii() and length.isdigit() and int(length) <= 16 * SERVE_MAX_REQUEST_BYTES:
                remaining = int(length)
                while remaining > 0:   # read the request body, so the connection stays usable
                    chunk = self.rfile.read(min(remaining, 65536))
                    if not chunk:
                        break
                    remaining -= len(chunk)
                    if kept is not None:
                        kept += chunk
                if kept is not None and not remaining:
                    fixture = _serve_route(served, self.path)[0]
                    if fixture is not None:
                        bodies.keep(fixture.prefix, bytes(kept))
            self._send(status, kind, body, headers)

        def _send(self, status: int, kind: str, body: bytes, headers: Mapping[str, str]) -> None:
            if on_answer is not None:
                on_answer(self.command, self.path, status)
            self.connection.settimeout(self.timeout)   # reads left the request's deadline on it
            cut = status == 200 and headers.get("Connection") == "close"   # a cut-off stream: the close ends it
            transport = bodies.transport   # read once: conform may change it for the next request
            if status == 200 and transport.first_byte_ms and self.server.pause(transport.first_byte_ms):
                self.close_connection = True   # the server is stopping
                return
            self.send_response(status)
            self.send_header("Content-Type", kind)
            if not cut:
                self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            if status != 200 or cut:
                if not cut:
                    self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":
                self._write(body, kind, transport if status == 200 else ServeTransport())
            if logger is not None:
                path = self.path if len(self.path) <= _SERVE_MAX_PATH else \
                    f"{self.path[:_SERVE_MAX_PATH]}... ({len(self.path)} characters)"
                logger(f"{self.command} {path} {status}")

        def _write(self, body: bytes, kind: str, transport: ServeTransport) -> None:
            """The body in the transport's writes (each straight to the socket: the writer is
            unbuffered, and Nagle's algorithm is off on every connection), paused between them."""
            writes = serve_writes(body, kind, transport.chunking, lambda: bodies.ends(kind, body))
            paused = 0   # ms; past SERVE_MAX_PAUSED_MS a long body's connection is not held any longer
            with memoryview(body) as view:   # slices of the shared body, never a copy
                for number, (start, end) in enumerate(writes):
                    if number and transport.delay_ms and paused < SERVE_MAX_PAUSED_MS:
                        paused += transport.delay_ms
                        if self.server.pause(transport.delay_ms):
                            self.close_connection = True   # the server is stopping
                            return
                    self.wfile.write(view[start:end])
                    if on_write is not None:
                        on_write(self.connection, start, end)

        def _refuse(self, code: int, kind: str, message: str) -> None:
            """A refusal outside _answer, as a JSON body like every other, on a connection then closed."""
            self.command = self.command if isinstance(getattr(self, "command", None), str) else "?"
            self.path = self.path if isinstance(getattr(self, "path", None), str) else "?"
            self.requestline = getattr(self, "requestline", "")   # read by the library's send_response
            if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":   # an unread request line
                self.request_version = "HTTP/1.0"   # still answered with a status line and headers
            _, kind, body, _ = _serve_error(code, kind, message)
            try:
                self._send(code, kind, body, {})
            except OSError:
                self.close_connection = True

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            """The library's own refusals (a malformed request line, headers too long, an unknown
            method, an HTTP version it does not speak) answered like every other: a JSON body."""
            self._refuse(code, "bad_request" if code < 500 else "not_supported", f"the request was refused ({code})")

        def __getattr__(self, name: str) -> Any:
            if name.startswith("do_"):   # any other method: 405 on a fixture's path, 404 elsewhere
                return self._answer
            raise AttributeError(name)

        do_POST = _answer

        def log_message(self, format: str, *args: Any) -> None:   # noqa: A002 - the library's name
            return None   # requests are logged once, through the tool's own output

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        block_on_close = False   # closing does not wait for connections still being answered
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        request_queue_size = 128   # the listen backlog: socketserver's 5 resets a burst of clients

        def __init__(self, address: Any, handler: Any) -> None:
            self.slots = threading.BoundedSemaphore(max_connections)
            self.connections = 0     # connections being answered now
            self._counting = threading.Lock()
            self.turned_away = 0     # connections answered 503 for being over the cap
            self.accept_pauses = 0   # times accepting paused for want of a descriptor
            self.bodies = bodies
            self.unlogged = 0        # after server_close: request log lines not written
            self._lingering: deque = deque()   # (until, socket) of turned-away connections
            self._pause = _SERVE_ACCEPT_PAUSE[0]
            self._stopping = threading.Event()
            super().__init__(address, handler)

        def get_request(self) -> Any:
            """accept(); when no descriptor is left, a pause before the next try (growing while it
            lasts), so the accept loop does not spin on a listening socket that stays readable."""
            try:
                pair = super().get_request()
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self.accept_pauses += 1
                    if logger is not None:
                        logger(f"cannot accept a connection ({errno.errorcode.get(exc.errno, 'error')}): "
                               f"accepting again in {self._pause:g} s")
                    self._stopping.wait(self._pause)
                    self._pause = min(self._pause * 2, _SERVE_ACCEPT_PAUSE[1])
                raise
            self._pause = _SERVE_ACCEPT_PAUSE[0]
            return pair

        def process_request(self, request: Any, client_address: Any) -> None:
            if not self.slots.acquire(blocking=False):
                self.turned_away += 1
                _serve_turn_away(request, max_connections)
                if len(self._lingering) >= _SERVE_LINGER:
                    self.shutdown_request(self._lingering.popleft()[1])
                self._lingering.append((time.monotonic() + _SERVE_LINGER_SECONDS, request))
                if logger is not None:
                    logger(f"connection from {client_address[0]} answered 503: {max_connections} connections "
                           "are open")
                return
            with self._counting:
                self.connections += 1
            held = [True]   # the slot: released once, by the thread or (if it never ran) here
            thread = threading.Thread(target=self._connection, args=(request, client_address, held), daemon=True)
            try:
                thread.start()
            except BaseException:   # no thread (RuntimeError), or a signal while it starts (KeyboardInterrupt)
                self._release(held)
                raise

        def _connection(self, request: Any, client_address: Any, held: list) -> None:
            """One connection, in a thread of its own (socketserver's process_request_thread, and the slot)."""
            try:
                self.finish_request(request, client_address)
            except Exception:   # noqa: BLE001 - said by handle_error, as socketserver does
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
                self._release(held)

        def _release(self, held: list) -> None:
            with self._counting:
                if not held:
                    return
                held.clear()
                self.connections -= 1
            self.slots.release()

        def service_actions(self) -> None:
            """Close the turned-away connections whose client has closed or whose time is up, each
            after reading what it sent (closing over unread bytes would reset the 503 away)."""
            now = time.monotonic()
            kept: deque = deque()
            while self._lingering:
                until, sock = self._lingering.popleft()
                if _serve_unread(sock) or now >= until:
                    self.shutdown_request(sock)
                else:
                    kept.append((until, sock))
            self._lingering = kept

        def _handle_request_noblock(self) -> None:
            super()._handle_request_noblock()
            self.service_actions()   # also between requests, not only at the loop's poll interval

        def handle_error(self, request: Any, client_address: Any) -> None:
            """A client that goes away mid-answer (a broken pipe, a reset, a stalled connection timed
            out) ends its connection only: never a traceback (socketserver's default prints one)."""
            if logger is not None:
                kind = sys.exc_info()[0]
                logger(f"connection from {client_address[0]} ended early ({kind.__name__ if kind else 'error'})")

        @property
        def transport(self) -> ServeTransport:
            return bodies.transport

        @transport.setter
        def transport(self, value: ServeTransport) -> None:
            bodies.transport = value

        def pause(self, milliseconds: int) -> bool:
            """Wait that long (a stream's pacing); True when the server began stopping meanwhile."""
            return self._stopping.wait(milliseconds / 1000)

        def shutdown(self) -> None:
            self._stopping.set()   # ends a pause in accepting, or in a stream's pacing, at once
            super().shutdown()

        def server_close(self) -> None:
            super().server_close()
            while self._lingering:
                self.shutdown_request(self._lingering.popleft()[1])
            if logger is not None:
                self.unlogged = logger.close(_SERVE_LOG_CLOSE_SECONDS)

    return Server((host, port), Handler)


class _StopOnSignals:
    """While in effect, the first of `signals` raises KeyboardInterrupt (the command's orderly stop)
    and every later one is ignored: a second signal (a runner that signals the process and its
    group, a repeated Ctrl-C) must not cut the closing short, nor turn exit 0 into 3.  On leaving,
    each signal's handler is the one it had before (one installed outside Python, which cannot be
    put back, is left as it is then)."""

    def __init__(self, signals: tuple[int, ...]) -> None:
        self.signals = signals
        self.previous: dict[int, Any] = {}

    def _stop(self, signum: int, frame: Any) -> None:
        import signal

        for number in self.signals:
            signal.signal(number, signal.SIG_IGN)
        raise KeyboardInterrupt

    def __enter__(self) -> "_StopOnSignals":
        import signal

        try:
            for number in self.signals:
                self.previous[number] = signal.signal(number, self._stop)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: Any) -> None:
        import signal

        for number, handler in self.previous.items():
            if handler is not None:   # None: not set from Python, so left as it is now
                signal.signal(number, handler)


def _loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _run_serve(argv: list[str]) -> int:
    """`serve`: the fixtures at their providers' API paths until interrupted."""
    import signal

    parser = _new_parser(f"{_prog()} serve",
                         "Serve fixtures as a local provider: each fixture's stream at "
                         "http://HOST:PORT/<prefix>/<its provider's API path>, where the prefix is its path "
                         "relative to the folder given, without .json.")
    parser.add_argument("fixtures", nargs="+", metavar="FIXTURE_OR_FOLDER")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="the port (default 0: any free port)")
    parser.add_argument("--quiet", action="store_true", help="do not print a line per request")
    _transport_options(parser)
    args = _strict_parse(parser, argv)
    transport = _transport_of(args, args.chunking)
    served, refused = serve_plan(args.fixtures)
    for path, why in refused:
        _err(f"{TOOL} serve: not served: {_printable(path)}: {_printable(why)}")
    if not served:
        raise UsageError("no fixture to serve")
    for name, why in _framing_notes(served, transport):
        _err(f"{TOOL} serve: --framing {name} is not applied to {why}")
    if not _loopback(args.host):
        _err(f"{TOOL} serve: listening on {_printable(args.host)}, not loopback: other machines can reach "
             "the fixtures")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: a port is 0 to 65535 (0: any free port)")
    try:
        server = make_server(served, args.host, args.port, None if args.quiet else _serve_log(), transport=transport)
    except (OSError, OverflowError) as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {getattr(exc, 'strerror', None) or exc}") from None
    host, port = server.server_address[:2]
    _out(f"serving {len(served)} fixtures at http://{_url_host(host)}:{port}/")
    _flush_stdout()
    with _StopOnSignals((signal.SIGTERM, signal.SIGINT)):   # the first SIGTERM or Ctrl-C stops it
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()   # waits a moment for the request lines still queued
        if server.unlogged:
            _err(f"{TOOL} serve: {server.unlogged} request log lines were not written: standard output was not read")
    return EXIT_PASS


def _transport_options(parser: Any, many: bool = False) -> None:
    """serve's and conform's options for how a stream is written (conform: several chunkings)."""
    modes = "MODE[,MODE...]" if many else "MODE"
    parser.add_argument("--chunking", default="whole", metavar=modes,
                        help="how each stream is written: whole (the body at once, the default), event (one write per "
                             "event, line, frame or array element), byte (one write per byte), random:SEED (writes "
                             f"of 1 to {SERVE_RANDOM_MOST} bytes, seeded)"
                             + ("; each fixture is run under each, and calls that differ are split-sensitive"
                                if many else ""))
    parser.add_argument("--framing", default="", metavar="VARIANT[,VARIANT...]",
                        help="legal framing variants, on the profiles whose SDKs read them alike: crlf (CRLF "
                             "line ends), comments (a keep-alive comment between events), ids (id: per event, "
                             "retry: first), utf8 (raw UTF-8 for JSON's \\u escapes)")
    parser.add_argument("--delay-ms", type=int, default=0, metavar="N",
                        help=f"pause N ms between two writes of a stream (at most {SERVE_MAX_DELAY_MS})")
    parser.add_argument("--first-byte-ms", type=int, default=0, metavar="N",
                        help=f"pause N ms before an answer's first byte (at most {SERVE_MAX_FIRST_BYTE_MS})")


def _framing_notes(served: Mapping[str, _Served], transport: ServeTransport) -> list[tuple[str, str]]:
    """(variant, the profiles it is not applied to) for each framing variant asked for that some
    served fixture's row does not take (its body is not SSE, or its SDKs do not read it alike)."""
    notes = []
    for name in sorted(transport.framing):
        left = sorted({fixture.profile for fixture in served.values() if name not in fixture.row.http.framings})
        if left:
            notes.append((name, f"{', '.join(left)} (its SDKs would not read it alike, or its body is not SSE)"))
    return notes


def _transport_of(args: Any, chunking: str) -> ServeTransport:
    """The ServeTransport the options give, for one chunking; a usage error for a bad one."""
    try:
        return serve_transport(chunking, [name for name in args.framing.split(",") if name.strip()],
                               args.delay_ms, args.first_byte_ms)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _serve_log() -> Callable[[str], None]:
    """The command's request log: each line through the output door, written straight to standard
    output's descriptor by the log's writer thread (see _ServeLog).  Not through sys.stdout: a write
    that blocks there would hold its lock, and with it the exit's own flush."""
    import os

    try:
        descriptor = sys.stdout.fileno()
        encoding = sys.stdout.encoding or "utf-8"
    except (AttributeError, OSError, ValueError):   # not a file (a caller's own stream): written as it is
        descriptor, encoding = -1, ""
    broken = []

    def write(line: str) -> None:
        if broken:   # the reader has gone: the later lines are dropped, as a closed pipe drops them
            return
        try:
            if descriptor < 0:
                _out(line)
                _flush_stdout()
                return
            data = memoryview((_guarded(line) + "\n").encode(encoding, "backslashreplace"))
            while data:
                data = data[os.write(descriptor, data):]
        except (OSError, OutputError):
            broken.append(True)

    return write


class serving:   # noqa: N801 - used as a function: `with vts.serving(paths) as server:`
    """The fixtures served on a thread, for an adapter's own test suite (no subprocess):

        with vts.serving(["fixtures/openai"], chunking="byte") as server:
            client = OpenAI(base_url=server.base_url("valid-fragmented-single-call") + "/v1", api_key="x")

    paths: fixture files and folders (a str, or a list or tuple of them), served as `serve` serves
    them, on `host` (loopback by default) and a free port; chunking, framing (names, or one
    comma-separated str), delay_ms and first_byte_ms as serve's options (serve_transport: ValueError
    for a bad one; ValueError too when no fixture can be served, TypeError for an argument of
    another type).
    Inside the block: `url` ("http://HOST:PORT/"), `base_url(prefix)`, `prefixes` (sorted),
    `refused` ([(file, why not served)]), `requests` (prefix -> streams answered) and `server`.
    On leaving, the server stops and its socket is closed (a stream being paced ends at once)."""

    def __init__(self, paths: str | Iterable[str], *, chunking: str = "whole", framing: Iterable[str] = (),
                 delay_ms: int = 0, first_byte_ms: int = 0, host: str = "127.0.0.1", port: int = 0) -> None:
        paths = [paths] if isinstance(paths, str) else list(paths) if isinstance(paths, (list, tuple)) else paths
        names = framing.split(",") if isinstance(framing, str) else framing
        for name, value, ok in (("paths", paths, isinstance(paths, list) and all(isinstance(p, str) for p in paths)),
                                ("chunking", chunking, isinstance(chunking, str)),
                                ("framing", framing, isinstance(names, (list, tuple, set, frozenset))
                                 and all(isinstance(n, str) for n in names)),
                                ("host", host, isinstance(host, str)),
                                ("port", port, isinstance(port, int) and not isinstance(port, bool))):
            if not ok:   # found by the issue-32 review: AttributeError, TypeError or OverflowError from inside
                raise TypeError(f"serving: {name} is {_describe(value)}, not what it takes")
        if not 0 <= port <= 65535:
            raise ValueError(f"serving: port {port} is not 0 to 65535")
        self._transport = serve_transport(chunking, names, delay_ms, first_byte_ms)
        try:
            self._served, self.refused = serve_plan(paths)
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        if not self._served:
            raise ValueError("no fixture to serve" + (f" ({self.refused[0][0]}: {self.refused[0][1]})"
                                                      if self.refused else ""))
        self._address = (host, port)
        self.prefixes = sorted(self._served)
        self.server: Any = None
        self.url = ""
        self._thread: Any = None

    def __enter__(self) -> "serving":
        import threading

        self.server = make_server(self._served, *self._address, transport=self._transport)
        host, port = self.server.server_address[:2]
        self.url = f"http://{_url_host(host)}:{port}/"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="vts-serving", daemon=True)
        self._thread.start()
        return self

    def base_url(self, prefix: str) -> str:
        """A fixture's base URL: the server's URL and its prefix, percent-encoded (KeyError for a
        prefix not served)."""
        from urllib.parse import quote

        if prefix not in self._served:
            raise KeyError(prefix)
        return self.url + quote(prefix, errors="surrogateescape")

    @property
    def requests(self) -> dict[str, int]:
        return dict(self.server.bodies.requests) if self.server is not None else {}

    def __exit__(self, *_: Any) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self._thread.join()


# ---------------------------------------------------------------------------
# Conform: an adapter command judged against the served fixtures
# ---------------------------------------------------------------------------
#
# For each served fixture, `conform` runs the user's adapter command with the fixture's base URL
# in its environment; the command drives the adapter against that URL (execution disabled) and
# prints the calls it would execute as JSON.  The verdict is the adapter harness's
# (adapter_verdict): what the adapter would run against what this tool decided.

CONFORM_FAILING = ("executes-blocked", "differs-on-pass", "unreadable", "not-requested", "split-sensitive",
                   "request-differs")
CONFORM_STRICT_FAILING = CONFORM_FAILING + ("refuses-pass",)   # what fails a run with --strict
# The adapter harness's verdicts, and conform's own: split-sensitive (its calls differ between chunkings) and
# request-differs (its request contradicts the fixture's).
CONFORM_VERDICTS = ADAPTER_VERDICTS + ("split-sensitive", "request-differs")
_CONFORM_MAX_CHUNKINGS = 16        # chunkings one conform run may try each fixture under
_CONFORM_OUTPUT_BYTES = 64 << 20   # an adapter command's standard output past this: it is stopped, and unreadable
_CONFORM_STDERR_BYTES = 64 << 10   # the end of its standard error kept, for the last line quoted
_CONFORM_KILL_ROUNDS = 50          # scans for what is left of an adapter run, each killing what it finds
CONFORM_RUN_VARIABLE = "VTS_CONFORM_RUN"   # in every adapter's environment: this run's mark
_CONFORM_OUTPUT_VALUES = 2_000_000  # JSON values read from an adapter's output (more: unreadable)
_CONFORM_MAX_TIMEOUT = 86_400       # seconds --timeout may give one fixture (a day)
_CONFORM_REQUESTS_KEPT = 20         # requests answered while one fixture's command ran, kept for its record
_CONFORM_NOT_FOUND_SHOWN = 5        # paths of 404 answers named per fixture
_CONFORM_QUOTED_SEARCH = 4096       # characters of a quoted text searched for credentials (more than is quoted)
CONFORM_BASELINE_VERSION = 1        # the "version" of a --write-baseline document
_CONFORM_BASELINE_BYTES = 64 << 20  # a --baseline file over this is a usage error
_CONFORM_MAX_JOBS = 32              # fixtures one conform run judges at once (--jobs), each job with a server


def adapter_calls_from(text: str) -> tuple[list[dict] | None, str]:
    """The calls an adapter command printed: a JSON list of {"id"?, "name", "arguments", "namespace"?}
    (arguments a string or a JSON value), or (None, why it is not one).  It is read as adapter_json
    reads: NaN, Infinity and numbers of any size are what Python's json.dumps prints for a turn
    that holds them.  At most _CONFORM_OUTPUT_VALUES values are read (counted before parsing, as the
    commas, brackets and braces outside its strings): parsed, 64 MiB of "{}," would take gigabytes."""
    values = _json_values_at_most(text)
    if values > _CONFORM_OUTPUT_VALUES:
        return None, (f"its standard output holds up to {values} JSON values, more than the "
                      f"{_CONFORM_OUTPUT_VALUES} read")
    try:
        value = adapter_json(text, what="the adapter's output")
    except JsonProblem as problem:
        return None, f"its standard output is not one JSON value ({problem.message})"
    return _calls_listed(value, "its standard output")


def _calls_listed(value: Any, where: str) -> tuple[list[dict] | None, str]:
    """The calls of an adapter's parsed output (`where` names it in the reason): see adapter_calls_from."""
    if not isinstance(value, list):
        return None, f"{where} is {_describe(value)}, not a JSON list of calls"
    calls = []
    for number, entry in enumerate(value):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or "arguments" not in entry \
                or not isinstance(entry.get("id"), (str, type(None))):
            return None, (f"call {number} is not {{\"id\": string or null, \"name\": string, \"arguments\": "
                          "string or JSON}")
        call = {"id": entry.get("id"), "name": entry["name"], "arguments": entry["arguments"]}
        if entry.get("namespace") is not None:
            call["namespace"] = entry["namespace"]
        calls.append(call)
    return calls, ""


class AdapterNotStarted(Exception):
    """The adapter command could not be started at all: no verdict is possible."""


def _marked_processes(mark: str) -> list[int]:
    """Process ids whose environment, as they were started, holds CONFORM_RUN_VARIABLE=mark, or
    mark followed by "." and more (a job's own mark under its run's: see _ConformJob).

    Found through /proc (Linux): every process started under an adapter inherits the mark unless
    it was started with an environment of its own; [] where there is no /proc to read."""
    import os

    entry = f"{CONFORM_RUN_VARIABLE}={mark}".encode("ascii")
    under = entry + b"."
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                # a zombie's is empty: it has ended
                if any(item == entry or item.startswith(under) for item in handle.read().split(b"\0")):
                    found.append(int(name))
        except OSError:   # gone meanwhile, or another user's
            continue
    return found


def _kill_marked(mark: str | None) -> None:
    """Kill every process carrying the run's mark (a `setsid` child, a daemon), scanning again
    until a scan finds none, at most _CONFORM_KILL_ROUNDS scans."""
    import os
    import signal
    import time

    for _ in range(_CONFORM_KILL_ROUNDS if mark else 0):
        found = _marked_processes(mark)
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.001)   # let the killed ones end before the next scan


def _end_adapter(process: Any, mark: str | None) -> None:
    """Kill what is left of one adapter run: its process group, then every process carrying the
    run's mark; then reap the command itself."""
    import os
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)   # it, and anything it left running in its group
    except OSError:
        pass
    _kill_marked(mark)
    process.wait()


def _pump_adapter(process: Any, timeout: float, out: bytearray, err: bytearray,
                  request: bytes | None = None) -> tuple[str, bool]:
    """Read the command's standard output and error while it runs: ("exited", "over" or "timeout",
    whether standard error was cut at its start).

    Standard output is kept whole up to _CONFORM_OUTPUT_BYTES: "over" as soon as it passes that
    (the caller stops the command there, by count, not time); of standard error only the last
    _CONFORM_STDERR_BYTES are kept.  Nothing is written to disk.  With `request` (conform
    --persistent), that line is written to its standard input meanwhile, and ("answered", cut) comes
    as soon as standard output holds a line end."""
    import os
    import selectors
    import time

    cut = False
    streams = {process.stdout.fileno(): out, process.stderr.fileno(): err}

    def read(fd: int) -> bool:
        nonlocal cut
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            return False
        kept = streams[fd]
        kept += chunk
        if kept is err and len(err) > _CONFORM_STDERR_BYTES:
            del err[:len(err) - _CONFORM_STDERR_BYTES]
            cut = True
        return True

    deadline = time.monotonic() + timeout
    ended = None
    try:
        ended = os.pidfd_open(process.pid)   # readable when the command ends (Linux 5.3 and later)
    except (AttributeError, OSError):
        pass
    stdin, written, searched = (process.stdin.fileno() if request is not None else None), 0, 0
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        if ended is not None:
            selector.register(ended, selectors.EVENT_READ)
        if stdin is not None:
            selector.register(stdin, selectors.EVENT_WRITE)
        try:
            while True:
                if request is not None:
                    if out.find(b"\n", searched) >= 0:
                        return "answered", cut
                    searched = len(out)
                if len(out) > _CONFORM_OUTPUT_BYTES:
                    return "over", cut
                if process.poll() is not None:
                    return "exited", cut
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timeout", cut
                for key, _ in selector.select(left if ended is not None else min(left, 0.05)):
                    if key.fd == stdin:
                        try:
                            written += os.write(stdin, request[written:])
                        except BlockingIOError:
                            continue
                        except OSError:   # it closed its input or ended: seen as it ends, or times out
                            written = len(request)
                        if written >= len(request):
                            selector.unregister(stdin)
                    elif key.fd != ended and not read(key.fd):
                        selector.unregister(key.fd)
        finally:
            if ended is not None:
                os.close(ended)


def _drain(fd: int, kept: bytearray, most: int, tail: bool = False) -> bool:
    """What is left in a pipe once its writers have been killed, into `kept`: until the pipe is
    empty, or `kept` passes `most` bytes (tail: keep only its last `most` bytes, reading at most
    _CONFORM_OUTPUT_BYTES more).  Whether bytes were dropped from the start of `kept`."""
    import os

    cut = False
    os.set_blocking(fd, False)
    for _ in range((_CONFORM_OUTPUT_BYTES >> 16) + 2):
        if len(kept) > most and not tail:
            break
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:   # empty for now (a writer that could not be killed), or closed
            break
        if not chunk:
            break
        kept += chunk
        if tail and len(kept) > most:
            del kept[:len(kept) - most]
            cut = True
    return cut


def _stderr_line(err: bytes, cut: bool) -> str:
    """": <the last line the command wrote on standard error>", credentials masked and clipped;
    "" when it wrote nothing; a note instead when that line began before the part kept (a
    credential cut in two is no longer recognisable, so it is not quoted)."""
    text = err.decode("utf-8", "replace").strip()
    if not text:
        return ""
    lines = text.splitlines()
    if cut and len(lines) == 1:
        return (f" (its last line of standard error is longer than the {_CONFORM_STDERR_BYTES} bytes kept; "
                "not quoted)")
    text = _mask_spans(text, _secret_spans(text))   # the whole end: a token's context may be a line above
    if "\\" in text and _secret_spans(_json_unescaped(text)):
        # a credential written JSON-escaped (https:\/\/, \u0070): not masked where it stands, so not quoted
        return " (its last line of standard error may hold a credential; not quoted)"
    return f": {_clip(text.splitlines()[-1])}"


_JSON_ESCAPE = r'\\(?:u([0-9A-Fa-f]{4})|(["\\/bfnrt]))'
_JSON_ESCAPED = MappingProxyType({'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
                                  "t": "\t"})


def _json_unescaped(text: str) -> str:
    """text with each valid JSON escape (\\uXXXX, \\/, \\" ...) replaced by what it stands for, once."""
    return re.sub(_JSON_ESCAPE, lambda m: chr(int(m.group(1), 16)) if m.group(1) else _JSON_ESCAPED[m.group(2)],
                  text)


def run_adapter(command: str | list[str], shell: bool, env: Mapping[str, str], timeout: float,
                folder: str = "", number: int = 0) -> tuple[Any, str, bool]:
    """Run the adapter command once: (its calls or None, why there are none, whether that is a refusal).

    A refusal is what the adapter says by its end: a non-zero exit status, no end within the
    timeout, or nothing printed; but a command that printed a readable list of calls before a
    non-zero exit or the timeout is taken at its word: those calls.  Anything else that is not a
    list of calls (over _CONFORM_OUTPUT_BYTES, not UTF-8, not JSON even in the adapter's dialect,
    another shape) is unreadable: (None, why, False).

    It runs in a process group of its own, which is killed when it ends, times out or prints more
    than _CONFORM_OUTPUT_BYTES, with every process that carries env's CONFORM_RUN_VARIABLE mark
    (see _end_adapter), so nothing it started outlives it or writes into the next fixture's output.
    Its output is read through pipes while it runs, bounded in memory and never on disk (folder
    and number are accepted and unused); only the last line of its standard error is quoted,
    credentials masked, through the one output door."""
    import subprocess

    try:
        process = subprocess.Popen(command, shell=shell, env=dict(env), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise AdapterNotStarted(f"the adapter command could not be started ({exc.strerror or exc})") from None
    out, err = bytearray(), bytearray()
    try:
        try:
            state, cut = _pump_adapter(process, timeout, out, err)
        finally:
            _end_adapter(process, env.get(CONFORM_RUN_VARIABLE))
        if state == "exited":   # what it wrote before it ended is still in the pipes
            _drain(process.stdout.fileno(), out, _CONFORM_OUTPUT_BYTES)
            cut = _drain(process.stderr.fileno(), err, _CONFORM_STDERR_BYTES, tail=True) or cut
    finally:
        process.stdout.close()
        process.stderr.close()
    # what it printed is read from here, not from a helper: each frame more above the parse would lower
    # how deep its output may nest before reading it runs out of stack
    step, said = _adapter_said(state, process.returncode, bytes(out), bytes(err), cut, timeout)
    if step == "printed":   # a refusal, unless it printed calls first: those it would run, however it ended
        printed = _printed_calls(bytes(out))
        return (printed, "", False) if printed else said
    if step == "read":
        try:
            calls, why = adapter_calls_from(said)
        except (MemoryError, RecursionError) as exc:   # fail closed: what cannot be read is never a verdict
            return None, f"reading its standard output ran out of {_what_ran_out(exc)}", False
        return calls, why, False
    return said


def _adapter_said(state: str, status: int, data: bytes, err: bytes, cut: bool,
                  timeout: float) -> tuple[str, Any]:
    """What run_adapter answers from how the command ended (_pump_adapter's state, its exit status) and
    what it wrote (standard output whole, the end of standard error, whether that was cut):
    ("said", the answer), ("printed", the refusal unless it printed calls) or ("read", the text to read)."""
    if state == "over" or len(data) > _CONFORM_OUTPUT_BYTES:
        return "said", (None, f"its standard output is over {_CONFORM_OUTPUT_BYTES} bytes (it was stopped there)",
                        False)
    if state == "timeout":
        return "printed", (None, f"it did not finish within {timeout:g} s", True)
    if status != 0:
        return "printed", (None, f"it exited with status {status}{_stderr_line(err, cut)}", True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "said", (None, "its standard output is not UTF-8", False)
    if not text.strip():
        return "said", (None, "it printed nothing", True)
    return "read", text


def _printed_calls(data: bytes) -> list[dict] | None:
    """The calls in what a command that refused (a non-zero exit, a timeout) printed before it ended:
    a readable list of at least one call as the first thing it printed, whatever came after it (an
    error line, a second list, half of one), else None (nothing, or nothing readable first: a refusal)."""
    try:
        text = data.decode("utf-8")
        start = len(text) - len(text.lstrip())
        _, end = json.JSONDecoder().raw_decode(text, start)   # where its first JSON value ends
        calls, _ = adapter_calls_from(text[:end])
    except (UnicodeDecodeError, ValueError, MemoryError, RecursionError):
        return None
    return calls or None


def _what_ran_out(exc: BaseException) -> str:
    return "memory" if isinstance(exc, MemoryError) else "stack"


class ConformCannotRun(Exception):
    """conform itself cannot go on (it cannot write a file it needs): no verdict, exit 3."""


def _context_choice(context: RequestContext) -> tuple:
    """What a request context's tool choice decides: no call, the allowed names, the forced tool and kind."""
    return context.none, context.allowed, context.forced, context.forced_kind if context.forced else None


def _choice_words(context: RequestContext) -> str:
    if context.none:
        return "no call allowed"
    return context.choice_text or "any tool offered"


def _names_listed(names: list[str]) -> str:
    more = f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
    return ", ".join(_quoted(name) for name in names[:_NAMES_SHOWN]) + more


def request_differences(row: Profile, doc: dict, sent: bytes) -> list[str]:
    """Where the body an adapter sent contradicts the fixture's request, read as the gate reads both (the
    room's request_from_body, then the request context): the tools offered (every tool_schemas entry
    when the fixture's request does not list them), what tool_choice allows (no call, a forced tool and
    its kind, an allowed list) and whether calls may be parallel.  A body that is not a JSON object of
    the provider's request shape contradicts it too.  [] when it does not."""
    request = doc.get("request") or {}
    want = _request_context(row, request) or RequestContext()
    offered = frozenset(offered_schemas(doc["tool_schemas"], request))
    try:
        body = adapter_json(sent.decode("utf-8"), what="the request body")
        _, theirs, _ = request_from_body(row.name, body)
        got = _request_context(row, theirs)
    except UnicodeDecodeError:
        return ["its request body is not UTF-8"]
    except JsonProblem as problem:
        return [f"its request body is not JSON ({problem.message})"]
    except (CaptureError, RequestError) as exc:
        return [f"its request body is not a request this tool reads ({_clip(str(exc))})"]
    except (MemoryError, RecursionError) as exc:
        return [f"reading its request body ran out of {'memory' if isinstance(exc, MemoryError) else 'stack'}"]
    problems = []
    if got.tools - offered:
        problems.append(f"its request offers {_names_listed(sorted(got.tools - offered))}, which the fixture's "
                        "does not")
    if offered - got.tools:
        problems.append(f"its request does not offer {_names_listed(sorted(offered - got.tools))}")
    if _context_choice(got) != _context_choice(want):
        problems.append(f"its tool choice: {_choice_words(got)}; the fixture's: {_choice_words(want)}")
    if got.single != want.single:
        problems.append("its request allows " + ("one call at most" if got.single else "parallel calls")
                        + "; the fixture's " + ("one call at most" if want.single else "parallel calls"))
    return problems


def _write_conform_file(path: str, value: Any, what: str, fixture: _Served) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(value, handle, ensure_ascii=True)
    except OSError as exc:   # a full disk (ENOSPC), a file size limit (EFBIG): no verdict, and said
        raise ConformCannotRun(f"cannot write the {what} file for {fixture.path}: {exc.strerror or exc}") from None


def conform_fixture(fixture: _Served, base_url: str, command: Any, shell: bool, timeout: float,
                    folder: str, number: int, requested: set[str] | None = None,
                    mark: str = "", sent: dict[str, bytes] | None = None, keep_calls: bool = False,
                    persistent: Any = None) -> dict[str, Any]:
    """One fixture through the adapter command: our report, its calls and the verdict, as one record.

    What is judged is the bytes the fixture was served from (fixture.data, read once by
    serve_plan), never the file as it is now.  requested: the prefixes whose stream the server has
    sent (make_server's on_stream); the fixture's own is dropped before the run and looked up after
    it, so only a request made while this fixture's command ran counts.  None: not tracked.  sent: the
    request bodies the server kept (make_server's keep_requests), looked up the same way: the last one
    for this fixture is compared with its request (request_differences).  The tools and request files
    written for it in `folder` are removed before this returns; `mark` is this run's
    CONFORM_RUN_VARIABLE value (see _end_adapter).  keep_calls: the record also holds the calls
    themselves, as "_calls" (None when there are none), for conform_across.  persistent: a PersistentAdapter
    (conform --persistent) asked instead of running the command for this fixture alone."""
    import os

    data = fixture.data
    if data is None:
        raise ValueError("conform_fixture judges the bytes served: make the plan with keep_bytes=True")
    row = fixture.row
    if row.http is None:
        raise ValueError(f"profile {row.name} is not served (its row has no http rules): conform cannot "
                         "judge a fixture of it")
    report = validate_bytes(data)
    doc = parse_envelope_bytes(data)
    tools_file = os.path.join(folder, f"tools-{number}.json")
    request_file = os.path.join(folder, f"request-{number}.json")
    offered = offered_schemas(doc["tool_schemas"], doc.get("request"))
    try:
        _write_conform_file(tools_file, row.http.tools_shape(offered), "tools", fixture)
        _write_conform_file(request_file, row.http.request_body(offered, doc.get("request") or {}), "request",
                            fixture)
    except ConformCannotRun:
        _remove_files(tools_file, request_file)
        raise
    from urllib.parse import quote

    # a name that is not UTF-8 is held with surrogate escapes: its URL carries the original bytes
    url = base_url + quote(fixture.prefix, safe="/", errors="surrogateescape")
    loopback = ",".join(filter(None, ("127.0.0.1", "localhost", "::1", os.environ.get("NO_PROXY"))))
    # NO_PROXY: a proxy set for the CI job must not carry loopback requests away
    env = dict(os.environ, VTS_BASE_URL=url, VTS_API_URL=url + row.http.api_example, VTS_PROFILE=fixture.profile,
               VTS_FIXTURE=os.path.abspath(fixture.path), VTS_TOOLS_FILE=tools_file, VTS_REQUEST_FILE=request_file,
               NO_PROXY=loopback, no_proxy=loopback, **{CONFORM_RUN_VARIABLE: mark})
    if requested is not None:
        requested.discard(fixture.prefix)
    if sent is not None:
        sent.pop(fixture.prefix, None)
    try:
        calls, why, refused = (persistent.ask(env, timeout) if persistent is not None
                               else run_adapter(command, shell, env, timeout, folder, number))
    finally:
        _remove_files(tools_file, request_file)   # nothing of a fixture is kept once it is judged
    asked = requested is None or fixture.prefix in requested
    body = sent.pop(fixture.prefix, None) if sent is not None else None
    contradicts = request_differences(row, doc, body) if body is not None and asked else []
    codes = sorted({finding["code"] for finding in report["findings"]})
    ours = [{key: call.get(key) for key in ("id", "name", "arguments", "kind", "namespace") if key in call}
            for call in report["calls"]]
    # its calls are compared with ours from here: each frame more above same_arguments would lower how deep
    # arguments compare as JSON before the stack runs out (then as text)
    try:
        verdict, problems = adapter_verdict(report["status"], calls, calls is None and refused, False, ours, codes,
                                            unreadable=calls is None and not refused, requested=asked)
    except (MemoryError, RecursionError) as exc:   # comparing its calls with ours: a failure, never a pass
        calls, refused, why = None, False, f"comparing its calls with ours ran out of {_what_ran_out(exc)}"
        verdict, problems = adapter_verdict(report["status"], None, False, False, ours, codes, unreadable=True,
                                            requested=asked)
    if contradicts:   # what it did with the stream answers another request: that is said first
        verdict, problems = "request-differs", contradicts + [f"on the stream alone: {verdict}"]
    record = _conform_record(fixture, report["status"], codes, (calls, why, refused), asked, (verdict, problems),
                             ours)
    if keep_calls:
        record["_calls"] = calls   # compared across chunkings by conform_across, which drops it
    return record


def _remove_files(*paths: str) -> None:
    import os

    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


def _conform_record(fixture: _Served, status: str, codes: list[str], said: tuple[Any, str, bool], asked: bool,
                    judged: tuple[str, list[str]], ours: list[dict] = ()) -> dict[str, Any]:
    """conform_fixture's record: our status and codes, what run_adapter said (calls, why, refused) and
    the verdict with its differences; a difference (differs-on-pass, executes-blocked) shows its calls
    beside ours, each list quoted as _conform_quoted quotes."""
    (calls, why, refused), (verdict, problems) = said, judged
    record = {"fixture": fixture.path, "profile": fixture.profile, "status": status, "codes": codes,
              "verdict": verdict, "calls": None if calls is None else len(calls), "requested": asked}
    if problems:
        record["differences"] = problems
    if calls is None:
        record["refused" if refused else "unreadable"] = why
    if verdict in ("differs-on-pass", "executes-blocked"):
        shown = [[{key: call.get(key) for key in ("id", "name", "arguments", "namespace") if key in call}
                  for call in listed] for listed in (calls or [], ours)]
        record["adapter_calls"], record["our_calls"] = (_conform_quoted(_compact(listed)) for listed in shown)
    return record


def _conform_quoted(text: str) -> str:
    """text as conform quotes what an adapter said or sent: credentials masked (searched over its first
    _CONFORM_QUOTED_SEARCH characters, far more than is quoted, and over those JSON-unescaped: a
    credential only that shows is not quoted at all), then clipped."""
    text = _mask_spans(text[:_CONFORM_QUOTED_SEARCH], _secret_spans(text[:_CONFORM_QUOTED_SEARCH]))
    if "\\" in text and _secret_spans(_json_unescaped(text)):
        return "(it may hold a credential; not quoted)"
    return _clip(text)


_PERSISTENT_MEMBERS = ("VTS_BASE_URL", "VTS_API_URL", "VTS_PROFILE", "VTS_FIXTURE", "VTS_TOOLS_FILE",
                       "VTS_REQUEST_FILE")   # a --persistent request's members: the variables a per-fixture run gets


PERSISTENT_REQUEST_ID = "VTS_REQUEST_ID"   # a --persistent request's id, which its answer names as "request"


def _persistent_answer(value: Any, request: str) -> tuple[list[dict] | None, str, bool]:
    """(calls or None, why none, whether a refusal) of a parsed --persistent answer to request `request`:
    {"request": id, "calls": [...]} or {"request": id, "refused": "why"}; anything else is unreadable, and
    an answer naming another request (a line left from an earlier one) too."""
    if not isinstance(value, dict) or set(value) not in ({"request", "calls"}, {"request", "refused"}):
        return None, (f"its answer is {_describe(value)}, not {{\"request\": id, \"calls\": [...]}} or "
                      "{\"request\": id, \"refused\": \"why\"}"), False
    if value["request"] != request:
        return None, f"its answer names request {_conform_quoted(json.dumps(value['request']))}, not {request}", False
    if "refused" in value:
        if not isinstance(value["refused"], str):
            return None, f"its refusal is {_describe(value['refused'])}, not a string", False
        return None, f"it refused: {_conform_quoted(value['refused'])}", True
    calls, why = _calls_listed(value["calls"], "its answer's calls")
    return calls, why, False


def _printed_answer(data: bytes, request: str) -> list[dict] | None:
    """The calls of a --persistent command that ended or ran out of time without ending its answer's line: its
    answer to this request with at least one call, when that came first, else None (a refusal)."""
    try:
        text = data.decode("utf-8")
        start = len(text) - len(text.lstrip())
        _, end = json.JSONDecoder().raw_decode(text, start)
        if _json_values_at_most(text[:end]) > _CONFORM_OUTPUT_VALUES:
            return None
        calls = _persistent_answer(adapter_json(text[:end], what="the adapter's answer"), request)[0]
    except (UnicodeDecodeError, ValueError, JsonProblem, MemoryError, RecursionError):
        return None
    return calls or None


class PersistentAdapter:
    """conform --persistent: the adapter command started once (per job) and asked per fixture over JSON Lines.

    Each request is one line on its standard input, a JSON object of the per-fixture environment variables
    (_PERSISTENT_MEMBERS, by name); its answer is one line on its standard output: a JSON list of calls, read
    as run_adapter reads a command's output, or {"refused": "why"}.  A command that ends, does not answer
    within the timeout or writes more than _CONFORM_OUTPUT_BYTES without ending its line is judged as
    run_adapter judges a command that did so (everything it wrote for this fixture, its exit status), and is
    killed (its group and every process carrying its mark: _end_adapter); the next fixture starts it again.
    What it writes after an answer line is dropped before the next request."""

    def __init__(self, command: str | list[str], shell: bool) -> None:
        self.command, self.shell = command, shell
        self.process: Any = None
        self.mark: str | None = None
        self.asked = 0   # requests written, all processes: each one's id, so an answer is matched to its request
        self._out, self._err, self._cut = bytearray(), bytearray(), False

    def _start(self, env: Mapping[str, str]) -> None:
        import os
        import subprocess

        base = {key: value for key, value in env.items() if key not in _PERSISTENT_MEMBERS}
        try:
            self.process = subprocess.Popen(self.command, shell=self.shell, env=base, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                                            start_new_session=True)
        except OSError as exc:
            raise AdapterNotStarted(f"the adapter command could not be started ({exc.strerror or exc})") from None
        self.mark = env.get(CONFORM_RUN_VARIABLE)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            os.set_blocking(stream.fileno(), False)
        self._out = bytearray()

    def close(self, drain: bool = False) -> None:
        """Kill it (its group, its mark) and reap it; started again by the next ask.  drain: what it wrote
        before it ended, still in its pipes, is read into self._out and self._err first."""
        process, self.process = self.process, None
        if process is None:
            return
        try:
            _end_adapter(process, self.mark)
            if drain:
                _drain(process.stdout.fileno(), self._out, _CONFORM_OUTPUT_BYTES)
                self._cut = _drain(process.stderr.fileno(), self._err, _CONFORM_STDERR_BYTES, tail=True) or self._cut
        finally:
            for stream in (process.stdin, process.stdout, process.stderr):
                try:
                    stream.close()
                except OSError:
                    pass

    def ask(self, env: Mapping[str, str], timeout: float) -> tuple[Any, str, bool]:
        """One fixture: (its calls or None, why there are none, whether that is a refusal), as run_adapter."""
        import os

        if self.process is not None and self.process.poll() is not None:
            self.close()   # it ended between two fixtures: neither's refusal
        if self.process is None:
            self._start(env)
        self.asked += 1
        request = str(self.asked)
        line = (json.dumps({**{key: env[key] for key in _PERSISTENT_MEMBERS}, PERSISTENT_REQUEST_ID: request},
                           ensure_ascii=True) + "\n").encode("ascii")
        for fd in (self.process.stdout.fileno(), self.process.stderr.fileno()):   # what it wrote past its last answer
            _drain(fd, bytearray(), 1 << 16, tail=True)
        self._out, self._err = bytearray(), bytearray()
        state, self._cut = _pump_adapter(self.process, timeout, self._out, self._err, line)
        status = 0
        if state == "answered":
            del self._out[self._out.find(b"\n"):]
            if len(self._out) > _CONFORM_OUTPUT_BYTES:
                state = "over"
        if state != "answered":
            process = self.process
            self.close(drain=state == "exited")
            status = process.returncode
        data, err = bytes(self._out), bytes(self._err)
        self._out, self._err = bytearray(), bytearray()
        # what it answered is read from here, not from a helper (as run_adapter reads): each frame more above the
        # parse would lower how deep its answer may nest before reading it runs out of stack
        step, said = _adapter_said("exited" if state == "answered" else state, status, data, err, self._cut, timeout)
        if step == "printed":   # a refusal, unless its answer with calls came first
            printed = _printed_answer(data, request)
            return (printed, "", False) if printed else said
        if step == "read":
            values = _json_values_at_most(said)
            if values > _CONFORM_OUTPUT_VALUES:
                return None, (f"its answer holds up to {values} JSON values, more than the "
                              f"{_CONFORM_OUTPUT_VALUES} read"), False
            try:
                value = adapter_json(said, what="the adapter's answer")
            except JsonProblem as problem:
                return None, f"its answer is not one JSON value ({problem.message})", False
            except (MemoryError, RecursionError) as exc:   # fail closed: what cannot be read is never a verdict
                return None, f"reading its answer ran out of {_what_ran_out(exc)}", False
            found = _persistent_answer(value, request)
            if found[0] is None and not found[2]:
                self.close()   # an answer it cannot read (another request's, say): nothing it writes next is trusted
            return found
        return said


# One fixture's verdict across chunkings: the worst of its verdicts under each, split-sensitive
# standing among them when its calls differ between chunkings.  Worst first.
_CONFORM_WORST = ("executes-blocked", "not-requested", "request-differs", "split-sensitive", "unreadable",
                  "differs-on-pass", "refuses-pass", "refuses", "not-applicable", "agree")
_CONFORM_NAMES_SHOWN = 8   # call names shown per chunking in a split-sensitive difference


def _calls_said(record: dict) -> str:
    """What one run would execute, briefly: "N calls: name, name" or "nothing (why)"."""
    calls = record.get("_calls") or []
    if not calls:
        return "nothing" + (f" ({_clip(record.get('refused') or record.get('unreadable') or '')})"
                            if record.get("refused") or record.get("unreadable") else "")
    names = ", ".join(_clip(call["name"], 40) for call in calls[:_CONFORM_NAMES_SHOWN])
    return f"{len(calls)} call{'s' * (len(calls) != 1)}: {names}" + (", ..." if len(calls) > _CONFORM_NAMES_SHOWN
                                                                   else "")


def conform_across(runs: list[tuple[str, dict]]) -> dict[str, Any]:
    """One record for a fixture run under several chunkings ([(chunking, its record with
    "_calls")]): the verdict is the worst of theirs (_CONFORM_WORST), or split-sensitive
    when what the adapter would execute differs between them (a refusal executes nothing) and no
    run executes a blocked turn's call or was never requested; "chunkings" gives each run's
    verdict and call count (and why it has none)."""
    keys = []
    for _, record in runs:
        try:
            keys.append(json.dumps(record.get("_calls") or [], sort_keys=True))
        except (ValueError, TypeError, RecursionError):   # cannot be compared: taken as different
            keys.append(object())
    verdicts = [record["verdict"] for _, record in runs]
    if any(key != keys[0] for key in keys):
        verdicts.append("split-sensitive")
    verdict = min(verdicts, key=_CONFORM_WORST.index)
    base = next((record for _, record in runs if record["verdict"] == verdict), runs[0][1])
    record = {key: value for key, value in base.items() if key != "_calls"}
    record["verdict"] = verdict
    record["requested"] = all(run["requested"] for _, run in runs)
    record["chunkings"] = {name: {key: run[key] for key in ("verdict", "calls", "refused", "unreadable")
                                  if key in run} for name, run in runs}
    if verdict == "split-sensitive":
        record["differences"] = ["its calls differ between chunkings: " + "; ".join(
            f"{name} {_calls_said(run)}" for name, run in runs)]
    return record


def conform_summary(records: list[dict]) -> dict[str, Any]:
    """Verdict counts, and for each finding code how the adapter handled the turns that raise it."""
    counts = {verdict: 0 for verdict in CONFORM_VERDICTS}
    by_code: dict[str, dict[str, int]] = {}
    for record in records:
        counts[record["verdict"]] += 1
        for code in record["codes"] or ["(none)"]:
            row = by_code.setdefault(code, {verdict: 0 for verdict in CONFORM_VERDICTS})
            row[record["verdict"]] += 1
    return {"fixtures": len(records), **counts, "by_code": dict(sorted(by_code.items()))}


class _ConformRules(_Record):
    """What fails this run: the failing verdicts (--strict adds refuses-pass) and, with --baseline, the
    verdict each fixture had (fixture path -> verdict): a failing verdict fails only when it is not
    the one recorded there (a fixture absent from it is judged as without a baseline)."""

    __slots__ = ("failing", "baseline", "verbose")

    def __init__(self, failing: tuple[str, ...], baseline: Mapping[str, str] | None, verbose: bool) -> None:
        self.failing = failing
        self.baseline = baseline
        self.verbose = verbose

    def fails(self, record: dict) -> bool:
        verdict = record["verdict"]
        return verdict in self.failing and (self.baseline is None or self.baseline.get(record["fixture"]) != verdict)

    def notable(self, record: dict) -> bool:
        """Reported even under --quiet (an error or a warning): a failing verdict, or a refused pass."""
        return record["verdict"] in CONFORM_STRICT_FAILING


def conform_against(records: list[dict], baseline: Mapping[str, str],
                    failing: tuple[str, ...] = CONFORM_FAILING) -> tuple[list[tuple[str, Any, str]],
                                                                        list[tuple[str, Any, str]]]:
    """([(fixture, verdict before or None, now)] that got worse, [...] that got fixed) against a baseline.

    Worse: a failing verdict now that differs from the one recorded (before it was agree,
    not-applicable, refuses, a refuses-pass that does not fail, another failing verdict, or the
    fixture was not recorded).  Fixed: a failing verdict recorded, none now."""
    worse, fixed = [], []
    for record in records:
        before, now = baseline.get(record["fixture"]), record["verdict"]
        if now in failing and now != before:
            worse.append((record["fixture"], before, now))
        elif before in failing and now not in failing:
            fixed.append((record["fixture"], before, now))
    return worse, fixed


def _conform_text(record: dict) -> str:
    line = f"{record['verdict']}: {_printable(record['fixture'])} ({record['status']}"
    line += (": " + ", ".join(record["codes"]) if record["codes"] else "") + ")"
    if not record.get("requested", True):
        line += "; it never requested this fixture's stream"
    for why in ("refused", "unreadable"):
        if record.get(why):
            line += f"; {record[why]}"
    if record.get("differences"):
        line += "; " + "; ".join(_printable(d) for d in record["differences"][:5])
    if "adapter_calls" in record:
        line += f"; its calls {_printable(record['adapter_calls'])}; ours {_printable(record['our_calls'])}"
    if record.get("not_found"):
        line += "; answered 404 for " + ", ".join(_printable(path) for path in record["not_found"])
    if "baseline" in record:
        line += f"; baseline {record['baseline'] or 'none'}"
    if record.get("chunkings") and record["verdict"] != "split-sensitive":
        runs = record["chunkings"].items()
        line += " [" + ", ".join(f"{_printable(name)} {run['verdict']}" for name, run in runs) + "]"
    return line


def _conform_table(summary: dict) -> str:
    header = ("finding code",) + CONFORM_VERDICTS
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for code, row in summary["by_code"].items():
        lines.append("| " + " | ".join((code,) + tuple(str(row[v]) for v in CONFORM_VERDICTS)) + " |")
    lines.append("summary: " + ", ".join(f"{v} {summary[v]}" for v in ("fixtures",) + CONFORM_VERDICTS)
                 + (f", not served {summary['not_served']}" if summary.get("not_served") else "")
                 + (f", worse than the baseline {summary['baseline']['worse']}, fixed since the baseline "
                    f"{summary['baseline']['fixed']}" if "baseline" in summary else ""))
    return "\n".join(lines)


def _conform_junit(records: list[dict], unjudged: list[tuple[str, str]] = (),
                   rules: _ConformRules | None = None) -> str:
    """One document: a case per fixture judged (a failure per verdict that fails the run, the text of
    one that is reported only, a refused pass, as its system-out), and an error case per fixture
    that could not be served (unjudged: (file, why))."""
    import xml.etree.ElementTree as ET

    rules = rules or _ConformRules(CONFORM_FAILING, None, False)
    failures = sum(1 for record in records if rules.fails(record))
    tests, errors = str(len(records) + len(unjudged)), str(len(unjudged))
    suites = ET.Element("testsuites", name=f"{TOOL} conform", tests=tests, failures=str(failures), errors=errors)
    suite = ET.SubElement(suites, "testsuite", name=f"{TOOL} conform", tests=tests, failures=str(failures),
                          errors=errors, skipped="0")
    for record in records:
        case = ET.SubElement(suite, "testcase", classname=f"{TOOL}.conform", name=_xml_safe(record["fixture"]))
        if rules.fails(record):
            failure = ET.SubElement(case, "failure", type=record["verdict"], message=_xml_safe(_conform_text(record)))
            failure.text = _xml_safe("\n".join(record.get("differences", [])))
        elif rules.notable(record):
            ET.SubElement(case, "system-out").text = _xml_safe(_conform_text(record))
    for path, why in unjudged:
        case = ET.SubElement(suite, "testcase", classname=f"{TOOL}.conform", name=_xml_safe(_printable(path)))
        ET.SubElement(case, "error", type="not-served", message=_xml_safe(f"not served: {_printable(why)}"))
    return ET.tostring(suites, encoding="unicode")


class _Answered:
    """The requests the server answers while one fixture's command runs (make_server's on_answer):
    the first _CONFORM_REQUESTS_KEPT as "METHOD PATH STATUS", a count of the rest, and the paths of
    the first _CONFORM_NOT_FOUND_SHOWN answered 404; taken (and emptied) once the command has ended."""

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._kept: list[str] = []
        self._more = 0
        self._not_found: list[str] = []

    def __call__(self, method: str, path: str, status: int) -> None:
        with self._lock:
            if len(self._kept) < _CONFORM_REQUESTS_KEPT:
                self._kept.append(f"{_conform_quoted(method)} {_conform_quoted(path)} {status}")
            else:
                self._more += 1
            if status == 404 and len(self._not_found) < _CONFORM_NOT_FOUND_SHOWN:
                self._not_found.append(_conform_quoted(path))

    def take(self) -> tuple[list[str], list[str]]:
        """(the requests answered, with a last line counting those not kept; the 404 paths), emptied."""
        with self._lock:
            kept = self._kept + ([f"({self._more} more requests)"] if self._more else [])
            found = (kept, self._not_found)
            self._kept, self._more, self._not_found = [], 0, []
        return found


class _ConformJob:
    """One job of a conform run: a server of its own on a free loopback port, answering on a thread of its
    own, and what one fixture's record is read from, kept for this server alone as a run of one job
    keeps it: the prefixes whose stream it sent (on_stream), the requests it answered (on_answer), the
    request bodies it kept (server.bodies.sent) and its "serve" blocks' error counts (server.bodies.errors).
    mark: the CONFORM_RUN_VARIABLE value of its adapters (the run's, or under --jobs the run's plus
    ".N": one job's clean-up never kills another's adapter, the run's kills them all)."""

    def __init__(self, served: Mapping[str, _Served], transport: ServeTransport, mark: str,
                 adapter: Any = None) -> None:
        import threading

        self.served, self.mark, self.adapter = served, mark, adapter
        self.requested: set[str] = set()
        self.answered = _Answered()
        try:
            self.server = make_server(served, on_stream=self._asked, on_answer=self.answered, transport=transport,
                                      keep_requests=True)
        except (OSError, OverflowError) as exc:   # no loopback port to listen on: no verdict, said
            raise UsageError(f"cannot listen on 127.0.0.1: {getattr(exc, 'strerror', None) or exc}") from None
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        host, port = self.server.server_address[:2]
        self.base_url = f"http://{_url_host(host)}:{port}/"

    def _asked(self, path: str) -> None:   # on the server's thread, before the stream is sent
        fixture = _serve_route(self.served, path)[0]
        if fixture is not None:
            self.requested.add(fixture.prefix)

    def use(self, prefix: str, transport: ServeTransport) -> None:
        """Before a fixture's command runs under a chunking: that chunking, and its "serve" block's error
        count started again."""
        self.server.transport = transport
        self.server.bodies.errors.pop(prefix, None)

    def close(self) -> None:
        if self.adapter is not None:
            self.adapter.close()
        self.server.shutdown()
        self.server.server_close()


class _ConformWork:
    """The fixtures of a --jobs run, handed to the jobs' threads in the order of their prefix, and what each
    came to, by number: (its record, what its server answered meanwhile), or the exception that ends the
    run there.  The main thread takes them in that order (wait), each once it and all before it are done.
    stop: set by such an exception: no job takes another fixture (those taken are finished: the run
    prints them first).  ending: set when the run ends (a signal, that exception): no command is started."""

    def __init__(self, order: list[str]) -> None:
        import threading

        self.order = order
        self._next = 0
        self._done: dict[int, Any] = {}
        self._ready = threading.Condition()
        self.stop = threading.Event()
        self.ending = threading.Event()

    def take(self) -> tuple[int, str] | None:
        """The next fixture to judge (number, prefix), or None: none left, or the run is stopping."""
        with self._ready:
            if self.stop.is_set() or self._next >= len(self.order):
                return None
            number = self._next
            self._next += 1
        return number, self.order[number]

    def done(self, number: int, outcome: Any) -> None:
        with self._ready:
            self._done[number] = outcome
            self._ready.notify_all()
        if isinstance(outcome, BaseException):
            self.stop.set()

    def wait(self, number: int) -> Any:
        """What fixture `number` came to, once it is done (waiting in short steps: a signal is handled at once)."""
        with self._ready:
            while number not in self._done:
                self._ready.wait(0.1)
            return self._done.pop(number)


def _conform_job(job: _ConformJob, work: _ConformWork, served: Mapping[str, _Served],
                 transports: list[ServeTransport], args: Any, command: Any, folder: str) -> None:
    """One job's thread under --jobs: the fixtures work hands it, each through the adapter command under each
    chunking on the job's own server, as a run of one job judges them; the outcome of each to work."""
    while True:
        taken = work.take()
        if taken is None:
            return
        number, prefix = taken
        try:
            job.answered.take()   # what came between two fixtures is neither's
            runs = []
            for transport in transports:
                if work.ending.is_set():
                    return   # the run is ending: no other command is started
                job.use(prefix, transport)
                try:
                    record = conform_fixture(served[prefix], job.base_url, command, args.shell, args.timeout, folder,
                                             number, job.requested, job.mark, job.server.bodies.sent,
                                             keep_calls=len(transports) > 1, persistent=job.adapter)
                except AdapterNotStarted as exc:
                    raise UsageError(str(exc)) from None
                except ConformCannotRun as exc:
                    raise UsageError(f"{exc}; no verdict") from None
                runs.append((transport.name, record))
            outcome: Any = (conform_across(runs) if len(runs) > 1 else runs[0][1], job.answered.take())
        except BaseException as exc:   # noqa: BLE001 - raised on the main thread, where its fixture's turn comes
            outcome = exc
        work.done(number, outcome)


def _conform_stop_jobs(threads: list[Any], work: _ConformWork, mark: str) -> None:
    """End a --jobs run's threads: no command started from now, every one running killed (by the run's
    mark, again until every thread has ended: one may have started a command just before)."""
    work.stop.set()
    work.ending.set()
    while any(thread.is_alive() for thread in threads):
        _kill_marked(mark)
        for thread in threads:
            thread.join(0.05)


def _run_conform(argv: list[str]) -> int:
    """`conform`: run an adapter command against every served fixture and judge what it would execute."""
    import secrets
    import tempfile
    import threading

    parser = _new_parser(f"{_prog()} conform",
                         "Serve the fixtures, run the adapter command once per fixture with VTS_BASE_URL, "
                         "VTS_API_URL, VTS_PROFILE, VTS_FIXTURE, VTS_TOOLS_FILE and VTS_REQUEST_FILE in its "
                         "environment, read the "
                         "calls it prints (a JSON list of {id, name, arguments}) and compare them with this "
                         "tool's verdict. Exit 1 when it would execute a call of a turn this tool blocks, or "
                         "other calls than a turn it passes, or prints what cannot be read, or never requests a "
                         "fixture's stream, or sends another request than the fixture's; exit 3 when it requests "
                         "none.")
    parser.add_argument("fixtures", nargs="+", metavar="FIXTURE_OR_FOLDER")
    parser.add_argument("--adapter-cmd", required=True, metavar="CMD",
                        help="the adapter command: split like a shell would (shlex) and run without a shell, "
                             "or run by /bin/sh with --shell")
    parser.add_argument("--shell", action="store_true", help="run CMD through the shell")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help=f"seconds per fixture (default 60, at most {_CONFORM_MAX_TIMEOUT})")
    parser.add_argument("--report", choices=("json", "text", "junit", "github"), default="text")
    parser.add_argument("--quiet", action="store_true", help="print only the fixtures that fail, and the summary")
    parser.add_argument("--strict", action="store_true", help="a passing turn the adapter refuses (refuses-pass) "
                                                              "fails the run too")
    parser.add_argument("--write-baseline", metavar="FILE", help="write every fixture's verdict to FILE (JSON)")
    parser.add_argument("--baseline", metavar="FILE", help="fail only on a verdict worse than the one FILE "
                                                           "records (see README: conform)")
    parser.add_argument("--verbose", action="store_true", help="add the requests served while each fixture's "
                                                               "command ran (method, path, status)")
    parser.add_argument("--profile", action="append", default=[], metavar="P",
                        help="judge only the fixtures of profile P (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help=f"judge N fixtures at once, each job with a server of its own (default 1, at most "
                             f"{_CONFORM_MAX_JOBS}); records come in the same order")
    parser.add_argument("--persistent", action="store_true",
                        help="start the adapter command once (per job) and ask it per fixture over JSON Lines "
                             "(see README: conform)")
    _transport_options(parser, many=True)
    args = _strict_parse(parser, argv)
    command = _conform_command(args)
    transports = _conform_transports(args)
    if not 1 <= args.jobs <= _CONFORM_MAX_JOBS:
        raise UsageError(f"--jobs must be a whole number from 1 to {_CONFORM_MAX_JOBS}")
    baseline = None if args.baseline is None else _conform_baseline(args.baseline)
    rules = _ConformRules(CONFORM_STRICT_FAILING if args.strict else CONFORM_FAILING, baseline, args.verbose)
    served, unjudged = _conform_plan(args.fixtures, args.profile)
    for name, why in _framing_notes(served, transports[0]):
        _err(f"{TOOL} conform: --framing {name} is not applied to {why}")
    # Every served fixture through the adapter command, in the order of its prefix, each record printed as
    # it is judged, the server on a thread of its own meanwhile.  conform_fixture is called from here, not
    # from a helper: each frame more above it would lower how deep arguments compare as JSON.  --jobs N:
    # N jobs, each with its server, on threads of their own (_conform_job); the records are printed here,
    # in the same order, each once it and every one before it are done
    mark = secrets.token_hex(16)   # in every adapter's environment: what it leaves running is found by it
    order = sorted(served)
    count = min(args.jobs, len(order))
    jobs: list[_ConformJob] = []
    records: list[dict] = []
    with _StopOnSignals(_conform_signals()):
        try:
            for index in range(count):
                adapter = PersistentAdapter(command, args.shell) if args.persistent else None
                jobs.append(_ConformJob(served, transports[0], mark if count == 1 else f"{mark}.{index}", adapter))
            try:
                temporary = tempfile.TemporaryDirectory(prefix="vts-conform-", ignore_cleanup_errors=True)
            except OSError as exc:
                raise UsageError(f"cannot make a temporary folder: {exc.strerror or exc}; no verdict") from None
            with temporary as folder:
                if count > 1:
                    work = _ConformWork(order)
                    threads = [threading.Thread(target=_conform_job, args=(job, work, served, transports, args,
                                                                           command, folder), daemon=True)
                               for job in jobs]
                    try:
                        for thread in threads:
                            thread.start()
                        for number in range(len(order)):
                            outcome = work.wait(number)
                            if isinstance(outcome, BaseException):
                                raise outcome
                            records.append(_conform_answered(outcome[0], outcome[1], rules))
                            _conform_each(outcome[0], args.report, args.quiet, rules)
                    finally:
                        _conform_stop_jobs(threads, work, mark)   # before the temporary folder goes
                for number, prefix in enumerate(order if count == 1 else ()):   # one job: on this thread
                    job = jobs[0]
                    job.answered.take()   # what came between two fixtures is neither's
                    runs = []
                    for transport in transports:   # each chunking in turn, the same server
                        job.use(prefix, transport)
                        try:
                            record = conform_fixture(served[prefix], job.base_url, command, args.shell, args.timeout,
                                                     folder, number, job.requested, job.mark, job.server.bodies.sent,
                                                     keep_calls=len(transports) > 1, persistent=job.adapter)
                        except AdapterNotStarted as exc:
                            raise UsageError(str(exc)) from None
                        except ConformCannotRun as exc:
                            raise UsageError(f"{exc}; no verdict") from None
                        runs.append((transport.name, record))
                    record = conform_across(runs) if len(runs) > 1 else runs[0][1]
                    records.append(_conform_answered(record, job.answered.take(), rules))
                    _conform_each(record, args.report, args.quiet, rules)
        finally:
            _kill_marked(mark)   # once more: a signal may have cut a fixture's own clean-up short
            for job in jobs:
                job.close()
    summary = conform_summary(records)
    summary["not_served"] = len(unjudged)
    worse, fixed = conform_against(records, baseline, rules.failing) if baseline is not None else ([], [])
    if baseline is not None:
        summary["baseline"] = {"worse": len(worse), "fixed": len(fixed)}
    _out(_CONFORM_END[args.report](records, summary, unjudged, rules))
    for what, listed in (("worse than the baseline", worse), ("fixed since the baseline", fixed)):
        for path, before, now in listed:
            _err(f"{TOOL} conform: {what}: {_printable(path)}: {before or '(not in the baseline)'} -> {now}")
    if args.write_baseline is not None:
        _conform_write_baseline(args.write_baseline, records)
    return _conform_exit(records, unjudged, rules)


def _conform_answered(record: dict, taken: tuple[list[str], list[str]], rules: _ConformRules) -> dict:
    """The record with what the server answered while its command ran: the 404 paths (and a line on
    stderr naming them), every request with --verbose; and with --baseline, the verdict recorded."""
    requests, not_found = taken
    if not_found:
        record["not_found"] = not_found
        _err(f"{TOOL} conform: {_printable(record['fixture'])}: the adapter's requests were answered 404 for "
             + ", ".join(_printable(path) for path in not_found) + " (is its base URL VTS_BASE_URL?)")
    if rules.verbose:
        record["served"] = requests
    if rules.baseline is not None:
        record["baseline"] = rules.baseline.get(record["fixture"])
    return record


def _conform_baseline(path: str) -> dict[str, str]:
    """The verdicts a --baseline file records, fixture path -> verdict: a JSON object {"version": 1,
    "fixtures": {path: verdict}} (and "tool"); a file unreadable or of another shape is a usage error."""
    where = f"--baseline {path}"
    try:
        data = _read_input(path, _CONFORM_BASELINE_BYTES)
    except UsageError as exc:
        raise UsageError(f"--baseline: {exc}") from None
    if len(data) > _CONFORM_BASELINE_BYTES:
        raise UsageError(f"{where}: over {_CONFORM_BASELINE_BYTES} bytes")
    try:
        doc = parse_envelope_bytes(data)
    except EnvelopeError as exc:
        raise UsageError(f"{where}: {exc}") from None
    fixtures = doc.get("fixtures") if isinstance(doc, dict) else None
    version = doc.get("version") if isinstance(doc, dict) else None
    if type(version) is not int or version != CONFORM_BASELINE_VERSION or not isinstance(fixtures, dict) \
            or set(doc) - {"tool", "version", "fixtures"} \
            or not all(isinstance(verdict, str) and verdict in CONFORM_VERDICTS for verdict in fixtures.values()):
        raise UsageError(f"{where}: not a conform baseline (a JSON object {{\"version\": {CONFORM_BASELINE_VERSION}, "
                         "\"fixtures\": {path: verdict}}, as --write-baseline writes it)")
    return fixtures


def _conform_write_baseline(path: str, records: list[dict]) -> None:
    """Write every judged fixture's verdict to path (replaced whole, through a temporary file renamed over)."""
    doc = {"tool": TOOL, "version": CONFORM_BASELINE_VERSION,
           "fixtures": {record["fixture"]: record["verdict"] for record in records}}
    try:
        write_atomically(path, (json.dumps(doc, ensure_ascii=True, indent=1, sort_keys=True) + "\n").encode("ascii"))
    except OSError as exc:
        raise UsageError(f"cannot write the baseline {path}: {exc.strerror or exc}") from None


def _conform_transports(args: Any) -> list[ServeTransport]:
    """One ServeTransport per chunking of --chunking (comma-separated, each once, in order)."""
    names = list(dict.fromkeys(name.strip() for name in args.chunking.split(",")))
    if len(names) > _CONFORM_MAX_CHUNKINGS:
        raise UsageError(f"--chunking names {len(names)} chunkings; at most {_CONFORM_MAX_CHUNKINGS}")
    return [_transport_of(args, name) for name in names]


def _conform_command(args: Any) -> Any:
    """The adapter command as it is run (a string for the shell, else its words), its options checked."""
    import shlex

    if not 0 < args.timeout <= _CONFORM_MAX_TIMEOUT:   # NaN and infinity included
        raise UsageError(f"--timeout must be a number of seconds above 0 and at most {_CONFORM_MAX_TIMEOUT}")
    try:
        command: Any = args.adapter_cmd if args.shell else shlex.split(args.adapter_cmd)
    except ValueError as exc:
        raise UsageError(f"--adapter-cmd cannot be split: {exc}") from None
    if not command:
        raise UsageError("--adapter-cmd is empty")
    unknown = [name for name in args.profile if name not in PROFILES]
    if unknown:
        raise UsageError(f"--profile {unknown[0]}: no such profile (one of {', '.join(PROFILES)})")
    return command


def _conform_plan(paths: list[str], profiles: list[str] = ()) -> tuple[dict[str, _Served], list[tuple[str, str]]]:
    """(the fixtures served, [(file, why) of those that could not be]); each left out is said on stderr.

    A file whose own expect block pins that it is no valid envelope is left out on purpose, so it is
    not counted among the fixtures the run has no verdict on.  profiles (--profile): only the
    fixtures of these are served (a file that is no valid envelope has none, and still counts)."""
    deliberate: set[str] = set()
    served, refused = serve_plan(paths, keep_bytes=True, pinned=deliberate)
    for path, why in refused:
        note = " (its expect block pins that: left out)" if path in deliberate else ""
        _err(f"{TOOL} conform: not served: {_printable(path)}: {_printable(why)}{note}")
    if profiles:
        served = {prefix: fixture for prefix, fixture in served.items() if fixture.profile in profiles}
    if not served:
        raise UsageError("no fixture to serve" + (f" of profile {', '.join(profiles)}" if profiles else ""))
    return served, [(path, why) for path, why in refused if path not in deliberate]


def _conform_signals() -> tuple[int, ...]:
    """The signals that stop conform in order: a cancelled CI job (SIGTERM) or a closed terminal
    (SIGHUP), so the adapter's processes are killed and the temporary folder removed on the way out."""
    import signal

    return (signal.SIGTERM, signal.SIGHUP) if hasattr(signal, "SIGHUP") else (signal.SIGTERM,)


def _conform_annotation(record: dict, rules: _ConformRules) -> str:
    """A workflow command: ::error for a verdict that fails the run, ::warning for one only reported."""
    level = "error" if rules.fails(record) else "warning"
    return (f"::{level} file={_github_escape(_printable(record['fixture']), True)},line=1::"
            f"{_github_escape(_conform_text(record), False)}")


def _conform_json(record: dict, rules: _ConformRules) -> str:
    return json.dumps(record, ensure_ascii=True)


def _conform_line(record: dict, rules: _ConformRules) -> str:
    """The text line of one judged fixture, with --verbose a line under it per request served."""
    return "\n".join([_conform_text(record)] + [f"  served: {_printable(line)}" for line in record.get("served", ())])


# --report -> (the line of one judged fixture, whether only a notable one (failing, or a refused pass) is
# printed whatever --quiet says, the line starts of its own workflow commands); junit prints nothing until
# the end.
_CONFORM_EACH: Mapping[str, tuple[Callable[[dict, _ConformRules], str], bool, tuple[str, ...]] | None] = \
    MappingProxyType({
        "json": (_conform_json, False, ()),
        "text": (_conform_line, False, ()),
        "github": (_conform_annotation, True, _OWN_COMMANDS),
        "junit": None,
    })


def _conform_each(record: dict, report: str, quiet: bool, rules: _ConformRules) -> None:
    """Print one judged fixture as its --report format does (--quiet: only a failing verdict or a refused pass)."""
    form = _CONFORM_EACH[report]
    if form is not None:
        line, notable_only, commands = form
        if rules.notable(record) or not (notable_only or quiet):
            _out(line(record, rules), commands)
    _flush_stdout()


def _conform_end_json(records: list[dict], summary: dict, unjudged: list[tuple[str, str]],
                      rules: _ConformRules) -> str:
    return json.dumps({"tool": TOOL, "version": VERSION, "summary": summary}, ensure_ascii=True)


def _conform_end_junit(records: list[dict], summary: dict, unjudged: list[tuple[str, str]],
                       rules: _ConformRules) -> str:
    return _conform_junit(records, unjudged, rules)


def _conform_end_table(records: list[dict], summary: dict, unjudged: list[tuple[str, str]],
                       rules: _ConformRules) -> str:
    return _conform_table(summary)


# --report -> what the run prints at its end, after every fixture.
_CONFORM_END: Mapping[str, Callable[[list[dict], dict, list[tuple[str, str]], _ConformRules], str]] = \
    MappingProxyType({
        "json": _conform_end_json,
        "text": _conform_end_table,
        "github": _conform_end_table,
        "junit": _conform_end_junit,
    })


def _conform_exit(records: list[dict], unjudged: list[tuple[str, str]], rules: _ConformRules) -> int:
    """The run's exit code, and on stderr why when it has no verdict."""
    if not any(record["requested"] for record in records):
        # it never asked for a stream: a command that ignores VTS_BASE_URL, a wrong path, a proxy
        first = records[0].get("refused") or records[0].get("unreadable") or f"it printed {records[0]['calls']} calls"
        missed = next((record["not_found"] for record in records if record.get("not_found")), None)
        asked = f"; answered 404 for {', '.join(missed)}" if missed else ""
        _err(f"{TOOL} conform: the adapter requested no fixture's stream (first: {_printable(first)}"
             f"{_printable(asked)}); no verdict")
        return EXIT_CANNOT_RUN
    if any(rules.fails(record) for record in records):
        return EXIT_BLOCKED
    if unjudged:
        # a fixture asked for and never put to the adapter: the run has no verdict on it
        _err(f"{TOOL} conform: {len(unjudged)} fixture(s) could not be served, so the adapter was not judged on "
             f"them (first: {_printable(unjudged[0][0])}); no verdict on the run")
        return EXIT_CANNOT_RUN
    if all(record["verdict"] in ("refuses", "refuses-pass") for record in records):
        # every turn refused: a broken command, a wrong URL or a proxy, not a verdict on the adapter
        _err(f"{TOOL} conform: the adapter refused every fixture (first: "
             f"{_printable(records[0].get('refused', 'it executed nothing'))}); no verdict")
        return EXIT_CANNOT_RUN
    return EXIT_PASS


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _parse_args(argv: list[str]) -> Any:
    import argparse

    parser = _new_parser(
        _prog(),
        "Decide whether the tool calls in one captured, streamed assistant turn may be "
        "handed to execution. Exit 0 pass, 1 blocked, 2 not applicable, 3 could not run.",
        epilog="subcommands (each has its own --help):\n" + "\n".join(
            f"  {name:<9} {summary}" for name, (_, summary) in _SUBCOMMANDS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("fixtures", nargs="+", metavar="FIXTURE",
                        help="fixture file (JSON envelope), a folder of them, or - for standard input")
    parser.add_argument("--report", choices=("json", "text", "junit", "github"), default="json",
                        help="report format: json (default), text, junit (JUnit XML, one test case per fixture) "
                             "or github (workflow-command annotations at the chunk's line in the file)")
    parser.add_argument("--quiet", action="store_true",
                        help="json/text/github: print only fixtures that fail, then the summary")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip fixtures whose path or file name matches GLOB (folder runs; repeatable)")
    parser.add_argument("--allow-not-applicable", action="store_true",
                        help="a turn without tool calls counts as success (exit 0, a skipped JUnit case)")
    parser.add_argument("--expect", action="store_true",
                        help="check the fixture's expect block: exit 0 if the outcome matches, 1 if not")
    parser.add_argument("--adapter-output", metavar="FILE",
                        help="calls your adapter reassembled from the same stream (JSON list of {id, name, arguments}, "
                             "or an OpenAI/Anthropic final message); any difference is adapter_mismatch")
    parser.add_argument("--redact-arguments", action="store_true",
                        help="replace each call's arguments with their UTF-8 size and SHA-256 (for logs)")
    installed = _prog() != "validate_tool_stream.py"
    parser.add_argument("--version", action="version", version=f"{_prog() if installed else TOOL} {VERSION}")
    defaults = Limits()
    for name, help_text in (
        ("max_input_bytes", "largest fixture file in bytes"),
        ("max_argument_bytes", "largest joined arguments of one call, in UTF-8 bytes"),
        ("max_depth", "deepest nesting of arrays/objects in arguments"),
        ("max_number_length", "longest number token in arguments, in characters"),
        ("max_calls", "most tool calls in one turn"),
        ("max_schema_depth", "deepest schema evaluation"),
        ("max_evaluations", "most units of schema work per call (subschema visits, values compared, "
                            "pattern matcher steps)"),
        ("max_turn_evaluations", "most units of schema work for all calls of one turn; past it, the "
                                 "remaining calls are limit_exceeded"),
        ("max_pattern_subject", "longest string a schema pattern is run on, in code points"),
        ("max_findings", "most findings listed in full; past it, only each new code's first"),
        ("max_schema_seconds", "opt-in wall-clock backstop for checking one call against its schema (main "
                               "thread); a verdict it gives depends on the machine's speed and load"),
    ):
        default = getattr(defaults, name)
        parser.add_argument("--" + name.replace("_", "-"), default=default, metavar="N",
                            type=_positive_number if name == "max_schema_seconds" else _positive_int,
                            help=f"{help_text} (default {'off' if default is None else default})")
    return _strict_parse(parser, argv)


def _positive_number(text: str) -> float:
    """argparse type; its error names the option ("argument --max-schema-seconds: ...")."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {json.dumps(text[:30])}") from None
    if not 0 < value <= MAX_SCHEMA_SECONDS:  # nan fails too
        raise argparse.ArgumentTypeError(f"expected a positive number up to {MAX_SCHEMA_SECONDS}, "
                                         f"got {json.dumps(text[:30])}")
    return value


def _positive_int(text: str) -> int:
    """argparse type; its error names the option ("argument --max-depth: ...")."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {json.dumps(text[:30])}") from None
    if not 0 < value <= 2 ** 53:
        raise argparse.ArgumentTypeError(f"expected a positive integer up to 2**53, got {json.dumps(text[:30])}")
    return value


def _excluded(path: str, exclude: list[str]) -> bool:
    """The path, or its file name, matches one of the --exclude globs."""
    import fnmatch
    import os

    return any(fnmatch.fnmatch(path, glob) or fnmatch.fnmatch(os.path.basename(path), glob) for glob in exclude)


def _expand(paths: list[str], exclude: list[str] = []) -> tuple[list[str], bool]:  # noqa: B006 - read only
    """Fixture paths in order (folders: their *.json files, recursively, sorted); many?

    Every file is opened once before anything is validated, so an unreadable one
    is a usage error with no report printed.
    """
    found: list[str] = []
    many = len(paths) > 1
    for path in paths:
        files, folder = _path_fixtures(path)
        found.extend(files)
        many = many or folder
    if exclude:
        for glob in exclude:   # a glob that excludes nothing is most likely mistyped
            if not any(path != "-" and _excluded(path, [glob]) for path in found):
                _err(f"{TOOL}: warning: --exclude {_printable(glob)} matches no fixture")
        found = [path for path in found if path == "-" or not _excluded(path, exclude)]
        if not found:
            raise UsageError("--exclude left no fixture to validate")
    if found.count("-") > 1 or ("-" in found and many):
        raise UsageError("standard input (-) can only be the single fixture")
    _open_each(found)
    return found, many


def _open_each(paths: list[str]) -> None:
    """Open (and close) each fixture file once: one that cannot be read is a usage error, before
    anything is validated.  A pipe given by name is left alone: it is read once, when validated."""
    for path in paths:
        if path != "-" and not _special_file(path):
            try:
                open(path, "rb").close()
            except OSError as exc:
                raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _path_fixtures(path: str) -> tuple[list[str], bool]:
    """(the fixtures one command-line path names, whether it is a folder): a folder's *.json files,
    recursively and sorted, else the path itself (a file, a pipe, or - for standard input)."""
    import os

    if path != "-" and os.path.isdir(path):
        inside = sorted(_walk_json(path))
        if not inside:
            raise UsageError(f"no *.json fixtures in folder {path}")
        return inside, True
    if path != "-" and not os.path.isfile(path) and not _special_file(path):
        raise UsageError(f"cannot read {path}: no such file")
    return [path], False


def _judge(path: str, args: Any, limits: Limits) -> tuple[dict[str, Any], int, list[str] | None, bytes]:
    """Validate one fixture: (report, exit code, expect differences or None, the file's bytes)."""
    data = _read_input(path, limits.max_input_bytes)
    report, doc = _validate_bytes_keeping_doc(data, limits, True)
    if args.adapter_output:
        row = PROFILES.get(report["profile"])   # the report's profile (None when it names none)
        ids_optional = row is not None and not row.rules.requires_id
        report = apply_adapter_differences(report, compare_calls(report["calls"], _adapter_doc(args.adapter_output,
                                                                                               limits),
                                                                 ids_optional))
    code = EXIT_BY_STATUS[report["status"]]
    if code == EXIT_NOT_APPLICABLE and args.allow_not_applicable:
        code = EXIT_PASS
    differences = None
    if args.expect:
        expect = doc.get("expect") if isinstance(doc, dict) else None
        differences = check_expect(report, expect) if doc is not None else _unread_expect(report)
        if args.redact_arguments:
            differences = redact_differences(differences)
        report["expectation"] = {"matched": not differences, "differences": differences}
        code = EXIT_PASS if not differences else EXIT_BLOCKED
    if args.redact_arguments:
        report = redact_arguments(report)
    return report, code, differences, data


def _unread_expect(report: dict[str, Any]) -> list[str]:
    """The expect difference of a file that could not be read as an envelope: why it could not
    (the syntax error and where it is, the size limit...), not only that no expect was found."""
    reasons = [f["message"] for f in report["findings"] if f["code"] in (INVALID_FIXTURE, LIMIT_EXCEEDED)]
    if not reasons:
        return check_expect(report, None)
    return [f"the fixture could not be read, so it has no \"expect\" block: {reasons[0]}"]


def _adapter_doc(path: str, limits: Limits) -> list[dict]:
    """The adapter's calls from --adapter-output (unreadable or malformed: usage error)."""
    try:
        return adapter_calls_from_doc(parse_envelope_bytes(_read_input(path, limits.max_input_bytes)))
    except (EnvelopeError, CaptureError) as exc:
        raise UsageError(f"--adapter-output {path}: {exc}") from None


def _capture_input(what: str, path: str) -> bytes:
    """The bytes of a file capture reads: one over CAPTURE_MAX_BYTES is an error, never cut short."""
    data = _read_input(path, CAPTURE_MAX_BYTES)
    if len(data) > CAPTURE_MAX_BYTES:
        raise UsageError(f"{what} is larger than {CAPTURE_MAX_BYTES} bytes, the most capture reads; "
                         "nothing was written")
    return data


def _json_file(option: str, path: str) -> Any:
    """The strict JSON in the file an option names; a parse error names the option and the file."""
    data = _capture_input(f"{option} {path}", path)
    try:
        return parse_envelope_bytes(data)
    except EnvelopeError as exc:
        raise CaptureError(f"{option} {_printable(path)}: {exc}") from None


def capture_text(envelope: dict) -> str:
    """An envelope as capture writes it: indented members, one stream payload per line (ASCII JSON).

    Each payload is written by the C encoder (json.dumps with an indent falls back to the
    pure-Python one, several times slower on a large capture).  The text is joined once, from
    its pieces: a large capture is then in memory twice at most (the pieces and the text).
    """
    stream_key = STREAM_KEY.get(envelope.get("profile"), "chunks")
    pieces = ["{\n"]
    for number, (key, value) in enumerate(envelope.items()):
        pieces.append(f"{',' if number else ''}\n  {json.dumps(key)}: " if number else f"  {json.dumps(key)}: ")
        if isinstance(value, _EncodedPayloads):   # capture's own envelope: its lines are written already
            pieces += value.pieces() if len(value) else ["[]"]
        elif key == stream_key and isinstance(value, list) and value:
            pieces += ["[\n    ", ",\n    ".join(json.dumps(item, ensure_ascii=True) for item in value), "\n  ]"]
        else:
            pieces.append(json.dumps(value, indent=2, ensure_ascii=True).replace("\n", "\n  "))
    pieces.append("\n}")
    return "".join(pieces)


def _run_capture(argv: list[str]) -> int:
    """`capture`: raw SSE body -> fixture envelope on stdout, warnings on stderr."""
    parser = _new_parser(f"{_prog()} capture",
                         "Turn a captured stream into a fixture envelope, redacted by default: a raw "
                         "server-sent-events body (bedrock: the binary AWS event stream), a JSON list of "
                         "payloads, JSON Lines of SDK dumps (model_dump_json() per line), or one entry of an "
                         "HTTP Archive (--entry).")
    parser.add_argument("sse", metavar="RAW", help="the body as captured, or a .har file with --entry "
                                                    "(- for standard input)")
    parser.add_argument("--profile", required=True, choices=tuple(PROFILES))
    parser.add_argument("--schemas", metavar="FILE",
                        help="tool schemas: a JSON object name -> schema, or an OpenAI, Anthropic or Gemini "
                             "tools array")
    parser.add_argument("--request", metavar="FILE",
                        help="the recorded request body: fills tool_schemas and the request block "
                             "(tool_choice, parallel_tool_calls, tool names); messages are dropped")
    parser.add_argument("--no-redact", action="store_true",
                        help="keep text, thinking and signatures (secrets are still masked)")
    parser.add_argument("--entry", metavar="N|TEXT",
                        help="RAW is an HTTP Archive (HAR): take entry N (0-based) or the one entry whose URL "
                             "contains TEXT; its request body fills tool_schemas and request, its response "
                             "body is the stream")
    args = _strict_parse(parser, argv)
    if args.schemas and args.request:
        raise UsageError("give --schemas or --request, not both (--request fills tool_schemas)")
    schemas = request = None
    request_warnings: list[str] = []
    try:
        raw = _capture_input("standard input" if args.sse == "-" else args.sse, args.sse)
        request_body = None
        if args.entry is not None:
            request_body, raw, problem = har_entry(parse_envelope_bytes(raw), args.entry)
            if problem and not args.schemas:
                raise CaptureError(problem)
            if problem:
                request_warnings.append(f"{problem}; tool_schemas come from --schemas and there is no request block")
        if args.request:
            request_body = _json_file("--request", args.request)
        if request_body is not None:
            schemas, request, request_warnings = request_from_body(args.profile, request_body)
        if args.schemas:   # overrides the request's tools; tool_choice and the rest stay
            schemas = _json_file("--schemas", args.schemas)
        envelope, warnings = _capture(raw, args.profile, schemas, not args.no_redact, True)
        del raw
    except (EnvelopeError, CaptureError) as exc:
        raise UsageError(str(exc)) from None
    if request is not None:
        envelope["request"] = request
    warnings = request_warnings + warnings
    _out(capture_text(envelope))
    for warning in warnings:
        _err(f"{TOOL} capture: warning: {_printable(warning)}")
    return EXIT_PASS


def pinned_expect(report: dict[str, Any], existing: Any) -> dict[str, Any]:
    """The expect block that pins a report exactly: status, the set of codes, the calls.

    Other members of an existing block (notes) are kept after the pinned ones.
    """
    expect: dict[str, Any] = {
        "status": report["status"],
        "codes": sorted({finding["code"] for finding in report["findings"]}),
        "calls": [{key: call[key] for key in ("id", "name", "namespace", "arguments") if key in call}
                  for call in report["calls"]],
    }
    if isinstance(existing, dict):
        expect.update((key, value) for key, value in existing.items() if key not in expect)
    return expect


def write_expect(text: str, expect: dict[str, Any]) -> str | None:
    """text with its top-level expect value replaced (or added last); None when it cannot be placed.

    Only the expect value changes: every other byte of the file stays as it was.  The
    block follows the file's style: one line for a one-line file, else the indentation
    (spaces or tabs) of the first member and the file's line ending.
    """
    spans = envelope_spans(text)
    if "<end>" not in spans:
        return None
    first = min((at for key, at in spans.items() if not key.startswith("<")), default=None)
    newline = "\r\n" if "\r\n" in text else ("\r" if "\r" in text and "\n" not in text else "\n")
    compact = "\n" not in text.strip() and "\r" not in text.strip()
    unit = _member_indent(text, first) if first is not None and not compact else "  "
    block = _expect_block(expect, compact, unit, newline)
    if "expect" in spans:
        start, end = spans["<values>"]["expect"]
        return text[:start] + block + text[end:]
    end = spans["<end>"]
    body_end = len(text[:end].rstrip(" \t\r\n"))
    member = '"expect":' + ("" if compact else " ") + block
    return (text[:body_end] + ("" if first is None else ",") + ("" if compact else newline + unit) + member
            + text[body_end:end] + text[end:])


def _member_indent(text: str, first: int) -> str:
    """The indentation before the envelope's first member (at `first`): spaces or tabs, else two spaces."""
    line_start = max(text.rfind("\n", 0, first), text.rfind("\r", 0, first)) + 1
    lead = text[line_start:first]
    return lead if lead and not lead.strip(" \t") else "  "


def _expect_block(expect: dict[str, Any], compact: bool, unit: str, newline: str) -> str:
    """The expect value as write_expect places it: on one line when `compact`, else indented by `unit`
    (one more level than the member) with the file's line ending; characters as they are, unless one
    cannot be written as UTF-8 (a lone surrogate in an argument: then every one stays escaped)."""
    layout: dict[str, Any] = {"separators": (",", ":")} if compact else {"indent": unit}
    block = json.dumps(expect, ensure_ascii=False, **layout)
    try:
        block.encode("utf-8")
    except UnicodeEncodeError:
        block = json.dumps(expect, ensure_ascii=True, **layout)
    return block if compact else block.replace("\n", newline + unit)


def _pinned_text(text: str, report: dict[str, Any], existing: Any,
                 limits: Limits) -> tuple[str | None, str, dict[str, Any]]:
    """(the file with its outcome pinned, "", its report) or (None, why, report): it must match itself.

    Writing the block can change the outcome (an expect that was not an object made
    the envelope invalid), so the outcome is taken again from the rewritten file, and
    the final file must pass --expect; notes that --expect rejects (a typo of a pinned
    key) refuse the pin instead of writing a fixture that would fail.
    """
    candidate = write_expect(text, pinned_expect(report, existing))
    for _ in range(2):
        if candidate is None:
            return None, "its top level could not be located to write the expect block", report
        again, doc = _validate_bytes_keeping_doc(candidate.encode("utf-8", "surrogatepass"), limits, True)
        differences = check_expect(again, doc.get("expect") if isinstance(doc, dict) else None)
        if not differences:
            return candidate, "", again
        candidate = write_expect(text, pinned_expect(again, existing))
    return None, f"the pinned block would not match: {differences[0]}", report


def _open_folder(real: str) -> int:
    """A descriptor of the folder at `real` (a resolved path, no link in it), opened once at the start.

    Where the system has O_PATH (Linux) the folder is reached from / one folder at a time, refusing
    a link, so a folder on the way swapped for a link after `real` was resolved raises OSError;
    elsewhere the folder itself is opened, refusing a link there.  Everything pin reads or
    renames below it is then reached through this descriptor, never by its path again.
    """
    import os

    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    parts = [part for part in real.split(os.sep) if part]
    if not hasattr(os, "O_PATH") or not parts:
        return os.open(real, flags)
    passing = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW   # the folders on the way are only passed through
    return _descend(os.open(os.sep, os.O_PATH | os.O_DIRECTORY), parts,
                    [passing] * (len(parts) - 1) + [flags])


def _descend(handle: int, parts: list[str], flags: list[int]) -> int:
    """From the open folder `handle` (taken over: closed on the way), each part in turn opened with its
    flags (O_NOFOLLOW among them: a link there raises OSError); the last one's descriptor."""
    import os

    try:
        for part, part_flags in zip(parts, flags):
            inner = os.open(part, part_flags, dir_fd=handle)
            os.close(handle)
            handle = inner
    except BaseException:
        os.close(handle)
        raise
    return handle


def _folder_descriptor(home_fd: int, relative: str) -> int:
    """A new descriptor of the folder `relative` ("." for itself) below the open folder home_fd,
    opened one folder at a time without following a link.

    `relative` was checked to hold no link; if one of its folders has been swapped for a link
    since (to lead the write elsewhere), this raises OSError instead of following it.
    """
    import os

    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    parts = [] if relative == os.curdir else relative.split(os.sep)
    return _descend(os.open(os.curdir, flags, dir_fd=home_fd), parts, [flags] * len(parts))


def _pin_home(top: str) -> str:
    """The real path of the folder pin must stay in for a path given on the command line: the
    folder itself, or a file's folder."""
    import os

    return os.path.realpath(top if os.path.isdir(top) else os.path.dirname(os.path.abspath(top)))


def _pin_targets(paths: list[str], exclude: list[str],
                 homes: Mapping[str, str] | None = None) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(fixture path, real file to rewrite, the folder it must stay in) triples, and messages
    for the paths skipped.

    pin never writes through a link out of the folder it was given (for a file given
    by name: out of that file's folder), nor into a read-only file or anything but a regular file.
    `homes` holds each given path's folder as resolved at the start (else it is resolved here).
    """
    import os
    import stat

    targets: list[tuple[str, str, str]] = []
    skipped: list[str] = []
    for top in paths:
        folder = os.path.isdir(top)
        home = homes[top] if homes is not None else _pin_home(top)
        files = sorted(_walk_json(top)) if folder else [top]
        for path in files:
            if _excluded(path, exclude):
                continue
            real = os.path.realpath(path)
            if os.path.commonpath([home, real]) != home:
                skipped.append(f"{_printable(path)}: skipped: a link out of {_printable(top)}")
            elif not stat.S_ISREG(os.stat(real).st_mode):
                skipped.append(f"{_printable(path)}: skipped: not a regular file")
            elif not os.access(real, os.W_OK) or not os.stat(real).st_mode & 0o222:
                skipped.append(f"{_printable(path)}: not written: the file is read-only")
            else:
                targets.append((path, real, home))
    return targets, skipped


def _pin_site(real: str, home: str, home_fd: int | None) -> tuple[int | None, str]:
    """(folder descriptor or None, the name to read and write through it) for one pin target,
    reached from its home folder's descriptor (None: by path, where there are no descriptors)."""
    import os

    if home_fd is None:
        return None, real
    return _folder_descriptor(home_fd, os.path.relpath(os.path.dirname(real), home)), os.path.basename(real)


def _run_pin(argv: list[str]) -> int:
    """`pin`: write each fixture's current outcome into its expect block (like a snapshot update)."""
    import os

    parser = _new_parser(f"{_prog()} pin",
                         "Validate each fixture and write its outcome — status, the exact set of finding "
                         "codes, the exact calls — into its expect block, leaving every other byte of the "
                         "file as it was; a fixture whose expect block already pins that outcome is not "
                         "written at all. Each file is replaced whole (a temporary file renamed over it), so it "
                         "always holds its old or its new bytes, and only if it still holds the bytes that were "
                         "read. Exit 0 when every fixture was pinned or already up to date, 3 when one was "
                         "refused, skipped or could not be written (the others are still pinned).")
    parser.add_argument("fixtures", nargs="+", metavar="FIXTURE", help="fixture files or folders")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip fixtures whose path or file name matches GLOB (repeatable)")
    parser.add_argument("--allow-invalid", action="store_true",
                        help="also pin envelopes that were never judged (invalid_fixture, unknown_profile)")
    args = _strict_parse(parser, argv)
    if "-" in args.fixtures:
        raise UsageError("pin rewrites files; standard input (-) cannot be pinned")
    _expand(args.fixtures, args.exclude)   # every path readable, else a usage error before anything is written
    homes = {top: _pin_home(top) for top in args.fixtures}
    held: dict[str, int] = {}   # each folder given (or holding a file given), opened once, now
    try:
        _open_homes(homes, held)
        targets, skipped = _pin_targets(args.fixtures, args.exclude, homes)
        for message in skipped:
            _err(f"pin: {message}")
        limits = Limits()
        done = {"written": 0, "current": 0, None: len(skipped)}   # None: not pinned
        for path, real, home in targets:
            done[_pin_target(path, real, home, held.get(home), limits, args.allow_invalid)] += 1
    finally:
        for handle in held.values():
            os.close(handle)
    _err(f"pin: {done['written']} written, {done['current']} already up to date, {done[None]} not pinned")
    return EXIT_CANNOT_RUN if done[None] else EXIT_PASS


def _open_homes(homes: Mapping[str, str], held: dict[str, int]) -> None:
    """Open each home folder once (where files are reached through descriptors) into `held`:
    home -> descriptor; one that cannot be opened is a usage error."""
    for top, home in homes.items():
        if _by_descriptor() and home not in held:
            try:
                held[home] = _open_folder(home)
            except OSError as exc:
                raise UsageError(f"cannot open folder {top}: {_moved(exc)}") from None


def _pin_target(path: str, real: str, home: str, home_fd: int | None, limits: Limits,
                allow_invalid: bool) -> str | None:
    """Read and pin one target (see _pin_one for what it returns); a file that cannot be reached or
    read is not pinned (None), said on stderr."""
    import os

    folder_fd = None
    try:
        folder_fd, name = _pin_site(real, home, home_fd)
        if folder_fd is None:
            data = _read_input(real, limits.max_input_bytes)
        else:
            data, _ = _read_regular(name, folder_fd, limits.max_input_bytes)
        return _pin_one(path, name, folder_fd, data, limits, allow_invalid)
    except (OSError, UsageError) as exc:
        why = _printable(exc) if isinstance(exc, UsageError) else _moved(exc)
        _err(f"pin: {_printable(path)}: not pinned: {why}; the file is unchanged")
        return None
    finally:
        if folder_fd is not None:
            os.close(folder_fd)


def _moved(exc: OSError) -> str:
    """Why a pin target could not be reached again: a link put in its way, or the OS's reason."""
    import errno

    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
        return "it or a folder on its path was moved or replaced by a link while pinning"
    return exc.strerror or type(exc).__name__


def _pins_exactly(report: dict[str, Any], existing: Any) -> bool:
    """Does the existing expect block already pin this report as pin would: it passes --expect, and
    its status, its set of codes and its calls are the ones pin writes (order of codes, order of
    keys, escapes and notes aside)?"""
    if not isinstance(existing, dict) or check_expect(report, existing):
        return False
    wanted = pinned_expect(report, None)
    codes = existing.get("codes")
    return (existing.get("status") == wanted["status"] and isinstance(codes, list) and sorted(codes) == wanted["codes"]
            and existing.get("calls") == wanted["calls"])


def _pin_one(path: str, name: str, folder_fd: int | None, data: bytes, limits: Limits,
             allow_invalid: bool) -> str | None:
    """Pin one fixture whose bytes were read: "written", "current" (its expect block already pinned
    its outcome; nothing written) or None (not pinned, said on stderr)."""
    report, doc = _validate_bytes_keeping_doc(data, limits, True)
    text = data.decode("utf-8") if isinstance(doc, dict) else None
    new_text, why, report = _pin_text(report, doc, text, limits, allow_invalid)
    if new_text is None:
        _err(f"pin: {_printable(path)}: not pinned: {_printable(why)}")
        return None
    written = new_text != text and _pin_write(path, name, folder_fd, new_text.encode("utf-8", "surrogatepass"), data)
    if written is None:
        return None
    codes = {finding["code"] for finding in report["findings"]}
    _out(f"{'pinned' if written else 'already pinned'} {_printable(path)}: {report['status']}"
         + (f" ({', '.join(sorted(codes))})" if codes else ""))
    return "written" if written else "current"


def _pin_text(report: dict[str, Any], doc: Any, text: str | None, limits: Limits,
              allow_invalid: bool) -> tuple[str | None, str, dict[str, Any]]:
    """(the fixture's text with its outcome pinned, "", its report), or (None, why it is not pinned,
    report); the text as it is when its expect block pins that outcome already."""
    codes = {finding["code"] for finding in report["findings"]}
    never_judged = sorted(codes & {INVALID_FIXTURE, UNKNOWN_PROFILE})
    if isinstance(doc, dict) and not ({"profile", "chunks", "events"} & set(doc)):
        return None, "it is not a fixture envelope (no profile, chunks or events member)", report
    if text is not None and _pins_exactly(report, doc.get("expect")):
        return text, "", report   # already pinned, also a turn never judged whose block names exactly that
    if never_judged and not allow_invalid:
        return None, f"it is {' and '.join(never_judged)} (pin it anyway with --allow-invalid)", report
    if text is not None:
        return _pinned_text(text, report, doc.get("expect"), limits)
    return None, "it is not a JSON object this tool can rewrite", report


def _pin_write(path: str, name: str, folder_fd: int | None, data: bytes, read: bytes) -> bool | None:
    """Write a pinned fixture over the bytes that were `read`: True, False (another pin wrote the same
    bytes first) or None (not written, said on stderr)."""
    try:
        write_atomically(name, data, folder_fd, read=read)
    except _ChangedMeanwhile as exc:
        if not exc.holds_new:
            _err(f"pin: {_printable(path)}: not written: it changed while pin was working on it "
                 "(another writer saved it); it keeps that writer's bytes, pin it again")
            return None
        return False   # another pin wrote the same bytes first
    except OSError as exc:
        _err(f"pin: {_printable(path)}: not written: {_moved(exc)}; the file is unchanged")
        return None
    return True


class _ReportFormat(_FrozenRecord):
    """One --report format: what it prints for each fixture, and once at the end of the run.

    each(path, report, differences, data, args, many) -> text or None; end(summary, cases,
    args, many) -> text or None; collects: the fixtures are kept as cases for end (JUnit writes
    one document); commands: the line starts of its own workflow commands (see _guarded).
    """

    __slots__ = ("each", "end", "collects", "commands")

    def __init__(self, each: Callable[..., str | None], end: Callable[..., str | None], collects: bool = False,
                 commands: tuple[str, ...] = ()) -> None:
        _freeze(self, locals())


def _each_json(path: str, report: dict, differences: Any, data: bytes, args: Any, many: bool) -> str:
    if many or args.quiet:   # JSON Lines, ended by the summary line
        return json.dumps({"fixture": path, **report}, ensure_ascii=True)
    return render_json({"fixture": path, **report})


def _each_text(path: str, report: dict, differences: Any, data: bytes, args: Any, many: bool) -> str:
    return f"== {_printable(path)}\n{render_text(report)}"


def _each_github(path: str, report: dict, differences: Any, data: bytes, args: Any, many: bool) -> str:
    return render_github(path, report, differences, data, args.allow_not_applicable).rstrip("\n")


def _each_none(path: str, report: dict, differences: Any, data: bytes, args: Any, many: bool) -> None:
    return None


def _end_json(summary: dict, cases: list, args: Any, many: bool) -> str | None:
    return json.dumps({"tool": TOOL, "version": VERSION, "summary": summary}) if many or args.quiet else None


def _end_summary_line(summary: dict, cases: list, args: Any, many: bool) -> str | None:
    return "summary: " + ", ".join(f"{k} {v}" for k, v in summary.items()) if many or args.quiet else None


def _end_junit(summary: dict, cases: list, args: Any, many: bool) -> str:
    return render_junit(cases, args.allow_not_applicable).rstrip("\n")


_REPORT_FORMATS: Mapping[str, _ReportFormat] = MappingProxyType({
    "json": _ReportFormat(_each_json, _end_json),
    "text": _ReportFormat(_each_text, _end_summary_line),
    "github": _ReportFormat(_each_github, _end_summary_line, commands=_OWN_COMMANDS),
    "junit": _ReportFormat(_each_none, _end_junit, collects=True),
})


# The subcommands: name -> (its entry point, the line --help gives it).  run() dispatches from
# this table and the main --help lists it, so neither can forget one.
_SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "capture": (_run_capture, "turn a raw SSE body (bedrock: AWS event stream) into a fixture envelope"),
    "pin": (_run_pin, "write each fixture's current outcome into its expect block"),
    "serve": (_run_serve, "serve fixtures as a local provider, each at its provider's API path"),
    "conform": (_run_conform, "run an adapter command against the served fixtures and judge the calls it prints"),
}


def run(argv: list[str]) -> int:
    """The CLI without process concerns: returns the exit code."""
    if argv[:1] and argv[0] in _SUBCOMMANDS:
        return _SUBCOMMANDS[argv[0]][0](argv[1:])
    args = _parse_args(argv)
    limits = Limits(**{name: getattr(args, name) for name in Limits.__slots__ if hasattr(args, name)})
    paths, many = _expand(args.fixtures, args.exclude)
    if many and args.adapter_output:
        raise UsageError("--adapter-output compares one fixture; give exactly one")
    form = _REPORT_FORMATS[args.report]
    counts = {"pass": 0, "blocked": 0, "not_applicable": 0}
    mismatched: list[str] = []
    cases: list[tuple[str, dict[str, Any], int, list[str] | None]] = []
    for path in paths:
        report, code, differences, data = _judge(path, args, limits)
        counts[report["status"]] += 1
        _say_expect(path, differences, many)
        if differences:
            mismatched.append(path)
        if form.collects:
            cases.append((path, report, code, differences))
        elif not (args.quiet and code == EXIT_PASS):
            text = form.each(path, report, differences, data, args, many)
            if text:
                _out(text, form.commands)
        del data
        _flush_stdout()
    summary: dict[str, Any] = {"fixtures": len(paths), **counts}
    if args.expect:
        summary["expect_mismatches"] = len(mismatched)
    text = form.end(summary, cases, args, many)
    if text:
        _out(text)
    return _run_exit(args, counts, mismatched)


def _say_expect(path: str, differences: list[str] | None, many: bool) -> None:
    """--expect's word on one fixture, on stderr: its differences, or "matched" when it is the only one."""
    if differences:
        _err(f"expect: MISMATCH {_printable(path)}\n" + "\n".join(f"  {_printable(d)}" for d in differences))
    elif differences is not None and not many:
        _err("expect: matched")


def _run_exit(args: Any, counts: Mapping[str, int], mismatched: list[str]) -> int:
    """The exit code of a validation run: --expect's (0 when every fixture matched its expect block),
    else 1 when a turn was blocked, 2 when one was not applicable (unless allowed), else 0."""
    if args.expect:
        return EXIT_PASS if not mismatched else EXIT_BLOCKED
    if counts["blocked"]:
        return EXIT_BLOCKED
    if counts["not_applicable"] and not args.allow_not_applicable:
        return EXIT_NOT_APPLICABLE
    return EXIT_PASS


def _silence_stdout() -> None:
    """After a failed write, point standard output at the null device so the interpreter's
    own flush at exit has nothing left to fail on (and prints nothing)."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (AttributeError, OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Entry point: exit codes 0-3 only, and never a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")  # a narrow terminal encoding never crashes the output
    try:
        code = run(sys.argv[1:] if argv is None else argv)
        _flush_stdout()
        return code
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) and exc.code == 0 else EXIT_CANNOT_RUN
    except UsageError as exc:
        _err(f"{TOOL}: {_printable(exc)}")
        return EXIT_CANNOT_RUN
    except OutputError as exc:
        _silence_stdout()
        _err(f"{TOOL}: cannot write standard output: {_printable(exc)}; no verdict")
        return EXIT_CANNOT_RUN
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_CANNOT_RUN
    except KeyboardInterrupt:
        _err(f"{TOOL}: interrupted; no verdict")
        return EXIT_CANNOT_RUN
    except (KeyboardInterrupt, MemoryError, RecursionError, Exception) as exc:  # noqa: BLE001 - last resort
        _err(f"{TOOL}: internal error ({type(exc).__name__}); no verdict")
        return EXIT_CANNOT_RUN


# The library's public names: what README's "As a library" and its provider notes name, and the
# doors of the sections listed in the module docstring that a caller can use on its own.  Every
# other name is the file's own and may change.
__all__ = [
    # the verdict
    "StreamGate", "validate_envelope", "validate_bytes", "check_expect", "Limits", "Finding", "FINDING_CODES",
    "gate_stream", "agate_stream",
    "PROFILES", "Profile", "TurnRules", "VERSION",
    # the schema subset and the request
    "compile_schema", "validate_instance", "gemini_schema", "request_from_body", "ANTHROPIC_CLIENT_TOOLS",
    # reports, capture, the adapter differential, serve and conform
    "render_json", "render_text", "render_github", "render_junit",
    "sse_to_envelope", "schemas_from_doc", "CaptureError",
    "compare_calls", "adapter_calls_from_doc", "adapter_verdict", "ADAPTER_VERDICTS",
    "serve_plan", "make_server", "conform_fixture", "conform_summary",
    "serving", "serve_transport", "ServeTransport", "serve_writes", "SERVE_FRAMINGS", "json_raw_utf8", "conform_across",
    "CONFORM_FAILING",
    # the command line
    "main",
]


if __name__ == "__main__":
    sys.exit(main())
