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

Standard library only; Python 3.10+.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Union

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
}

PROFILES = ("openai", "mistral", "anthropic")
STREAM_KEY = {"openai": "chunks", "mistral": "chunks", "anthropic": "events"}
ENVELOPE_KEYS = frozenset({"profile", "tool_schemas", "chunks", "events", "meta", "expect"})

EXIT_PASS, EXIT_BLOCKED, EXIT_NOT_APPLICABLE, EXIT_CANNOT_RUN = 0, 1, 2, 3
EXIT_BY_STATUS = {"pass": EXIT_PASS, "blocked": EXIT_BLOCKED, "not_applicable": EXIT_NOT_APPLICABLE}


@dataclass(frozen=True)
class Limits:
    """Bounds that turn pathological input into limit_exceeded, never a crash."""

    max_input_bytes: int = 256 * 1024 * 1024
    max_argument_bytes: int = 32 * 1024 * 1024
    max_depth: int = 64
    max_number_length: int = 1000
    max_calls: int = 256
    max_schema_depth: int = 64
    max_evaluations: int = 1_000_000
    max_pattern_subject: int = 10_000
    max_findings: int = 1000


@dataclass
class Finding:
    """One reason to block, tied to the stream position and slot where it arose."""

    code: str
    message: str
    position: int | None = None
    choice: int | None = None
    index: int | None = None
    pointer: str | None = None

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


def _describe(value: Any) -> str:
    """Short, content-free description of a wire value for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 24 else text[:21] + "..."
    if isinstance(value, str):
        return "a string" if len(value) > 40 else json.dumps(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is_index(value: Any) -> bool:
    """A slot or choice index is a non-negative JSON integer; true is not 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# ---------------------------------------------------------------------------
# Envelope loading: strict JSON for the fixture file itself
# ---------------------------------------------------------------------------


class EnvelopeError(Exception):
    """The fixture bytes are not one strict JSON document."""


def _envelope_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise EnvelopeError(f"duplicate key {json.dumps(key)} in the envelope")
            seen.add(key)
    return obj


def _envelope_constant(name: str) -> Any:
    raise EnvelopeError(f"{name} is not valid JSON")


def _envelope_float(token: str) -> float:
    value = float(token)
    if value in (float("inf"), float("-inf")):
        raise EnvelopeError(f"number {token[:24]} overflows a double")
    return value


def parse_envelope_bytes(data: bytes) -> Any:
    """Decode fixture bytes as one strict RFC 8259 document (EnvelopeError otherwise).

    Lone surrogate escapes are allowed here on purpose: a provider may split a
    UTF-16 pair across two fragments, and each fragment is a separate string.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        raise EnvelopeError("the file starts with a UTF-8 byte order mark")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EnvelopeError(f"the file is not UTF-8 (byte {exc.start})") from None
    decoder = json.JSONDecoder(
        object_pairs_hook=_envelope_pairs,
        parse_constant=_envelope_constant,
        parse_float=_envelope_float,
    )
    try:
        start = _skip_ws(text, 0)
        value, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise EnvelopeError(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise EnvelopeError("the envelope nests too deeply to parse") from None
    except ValueError as exc:  # integers beyond CPython's digit limit
        raise EnvelopeError(f"a number cannot be read: {str(exc)[:80]}") from None
    if _skip_ws(text, end) != len(text):
        raise EnvelopeError("trailing data after the JSON document")
    return value


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


def check_envelope(doc: Any, limits: Limits | None = None) -> list[Finding]:
    """Every way the parsed envelope breaks the contract (SPEC section 1)."""
    limits = limits or Limits()
    if not isinstance(doc, dict):
        return [Finding(INVALID_FIXTURE, f"the envelope must be a JSON object, got {_describe(doc)}")]
    problems: list[Finding] = []
    for key in doc:
        if key not in ENVELOPE_KEYS:
            problems.append(Finding(INVALID_FIXTURE, f"unknown top-level key {json.dumps(key)}"))
    profile = doc.get("profile")
    if "profile" not in doc:
        problems.append(Finding(INVALID_FIXTURE, "missing required key \"profile\""))
    elif not isinstance(profile, str):
        problems.append(Finding(INVALID_FIXTURE, f"\"profile\" must be a string, got {_describe(profile)}"))
    elif profile not in PROFILES:
        problems.append(Finding(UNKNOWN_PROFILE, f"profile {json.dumps(profile)} is not one of {', '.join(PROFILES)}"))
    if "tool_schemas" not in doc:
        problems.append(Finding(INVALID_FIXTURE, "missing required key \"tool_schemas\""))
    elif not isinstance(doc["tool_schemas"], dict):
        problems.append(Finding(INVALID_FIXTURE, f"\"tool_schemas\" must be an object, got {_describe(doc['tool_schemas'])}"))
    for key in ("meta", "expect"):
        if key in doc and not isinstance(doc[key], dict):
            problems.append(Finding(INVALID_FIXTURE, f"\"{key}\" must be an object, got {_describe(doc[key])}"))
    if isinstance(doc.get("meta"), dict) and _nesting_exceeds(doc["meta"], limits.max_depth):
        problems.append(Finding(INVALID_FIXTURE, f"\"meta\" nests deeper than {limits.max_depth} levels"))
    if isinstance(profile, str) and profile in PROFILES:
        wanted = STREAM_KEY[profile]
        other = "events" if wanted == "chunks" else "chunks"
        if other in doc:
            problems.append(Finding(INVALID_FIXTURE, f"\"{other}\" does not belong to profile {profile}; it uses \"{wanted}\""))
        if wanted not in doc:
            problems.append(Finding(INVALID_FIXTURE, f"missing required key \"{wanted}\" for profile {profile}"))
        elif not isinstance(doc[wanted], list):
            problems.append(Finding(INVALID_FIXTURE, f"\"{wanted}\" must be a list, got {_describe(doc[wanted])}"))
    return problems


# ---------------------------------------------------------------------------
# Neutral events: what every normalizer emits and the slot machine consumes
# ---------------------------------------------------------------------------

SlotKey = tuple  # (choice or None, index)


@dataclass(frozen=True)
class SlotOpen:
    """A slot announced explicitly, with its identity (anthropic tool_use start)."""

    position: int
    key: SlotKey
    id: str | None
    name: str | None
    initial_input: Any


@dataclass(frozen=True)
class Fragment:
    """A piece of one slot: identity restatement and/or an argument fragment."""

    position: int
    key: SlotKey
    id: str | None
    name: str | None
    arguments: str | None


@dataclass(frozen=True)
class SlotEnd:
    """The provider's terminal for one slot (anthropic content_block_stop)."""

    position: int
    key: SlotKey


@dataclass(frozen=True)
class ChoiceEnd:
    """A choice's finish_reason: the terminal of every slot in that choice."""

    position: int
    choice: int
    reason: str


@dataclass(frozen=True)
class TurnEnd:
    """The turn's stop reason (anthropic message_delta.stop_reason)."""

    position: int
    reason: str


@dataclass(frozen=True)
class TurnClose:
    """The stream's own closing event (anthropic message_stop)."""

    position: int


@dataclass(frozen=True)
class WireProblem:
    """Something the normalizer could not translate; always a finding."""

    position: int
    code: str
    message: str
    choice: int | None = None
    index: int | None = None


NeutralEvent = Union[SlotOpen, Fragment, SlotEnd, ChoiceEnd, TurnEnd, TurnClose, WireProblem]


# ---------------------------------------------------------------------------
# Normalizer: OpenAI chat-completion chunks (and Mistral, which shares the shape)
# ---------------------------------------------------------------------------


def _optional_str(entry: dict, key: str) -> tuple[bool, str | None]:
    """(ok, value) for a member that must be a string, null or absent."""
    value = entry.get(key)
    if value is None or isinstance(value, str):
        return True, value
    return False, None


def normalize_chat_chunks(chunks: list, mistral: bool) -> Iterator[NeutralEvent]:
    """Translate chat-completion chunks into neutral events.

    Works on the raw wire JSON: SDK objects fill in defaults that would hide
    exactly the quirks this tool exists to catch.
    """
    next_free: dict[int, int] = {}  # mistral whole calls: next slot per choice
    for pos, chunk in enumerate(chunks):
        if not isinstance(chunk, dict):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"chunk is {_describe(chunk)}, not an object")
            continue
        if chunk.get("error") is not None or chunk.get("object") == "error":
            yield WireProblem(pos, STREAM_ERROR, "the provider sent an error object instead of a chunk")
            continue
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"chunk has no \"choices\" list (got {_describe(choices)})")
            continue
        for choice in choices:
            yield from _normalize_choice(pos, choice, mistral, next_free)


def _normalize_choice(pos: int, choice: Any, mistral: bool, next_free: dict[int, int]) -> Iterator[NeutralEvent]:
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
        if delta.get("function_call") is not None:
            yield WireProblem(pos, UNSUPPORTED_EVENT, "legacy delta.function_call is not supported; use tool_calls", cidx)
        calls = delta.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"delta.tool_calls is {_describe(calls)}, not a list", cidx)
        elif calls:
            for entry in calls:
                yield from _normalize_tool_entry(pos, cidx, entry, mistral, next_free)
    reason = choice.get("finish_reason")
    if reason is None or reason == "":
        return
    if not isinstance(reason, str):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"finish_reason is {_describe(reason)}, not a string", cidx)
        return
    yield ChoiceEnd(pos, cidx, reason)


def _normalize_tool_entry(pos: int, cidx: int, entry: Any, mistral: bool, next_free: dict[int, int]) -> Iterator[NeutralEvent]:
    if not isinstance(entry, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"tool_calls entry is {_describe(entry)}, not an object", cidx)
        return
    index = entry.get("index")
    slot = index if _is_index(index) else None
    kind = entry.get("type")
    if "custom" in entry:
        yield WireProblem(pos, UNSUPPORTED_EVENT, "custom tool calls (free-text input) are not supported", cidx, slot)
        return
    if kind not in (None, "", "function"):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"tool call type {_describe(kind)} is not \"function\"", cidx, slot)
        return
    function = entry.get("function")
    if function is not None and not isinstance(function, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"tool call function is {_describe(function)}, not an object", cidx, slot)
        return
    function = function or {}
    ok_id, call_id = _optional_str(entry, "id")
    ok_name, name = _optional_str(function, "name")
    ok_args, arguments = _optional_str(function, "arguments")
    if not (ok_id and ok_name):
        yield WireProblem(pos, UNSUPPORTED_EVENT, "tool call id and function.name must be strings or null", cidx, slot)
        return
    if not ok_args:
        got = _describe(function.get("arguments"))
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"function.arguments must be a string or null, got {got}", cidx, slot)
        return
    if slot is None and index is None and mistral and call_id and name and isinstance(arguments, str):
        slot = next_free.get(cidx, 0)
    if slot is None:
        if index is None:
            why = "has no index" + (" and is not a whole call (id, name and arguments)" if mistral else "")
        else:
            why = f"has index {_describe(index)}, not a non-negative integer"
        yield WireProblem(pos, MISSING_INDEX, f"tool_calls entry {why}", cidx)
        return
    next_free[cidx] = max(next_free.get(cidx, 0), slot + 1)
    yield Fragment(pos, (cidx, slot), call_id, name, arguments)


# ---------------------------------------------------------------------------
# Normalizer: Anthropic Messages stream events
# ---------------------------------------------------------------------------

# Which delta types belong to which non-tool block type.
_BLOCK_DELTAS = {
    "tool_use": frozenset({"input_json_delta"}),
    "text": frozenset({"text_delta", "citations_delta"}),
    "thinking": frozenset({"thinking_delta", "signature_delta"}),
    "redacted_thinking": frozenset(),
}
_ANTHROPIC_EVENTS = frozenset({
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "ping", "error",
})


@dataclass
class _AnthropicState:
    """Translation state: which blocks exist, their types, whether stopped."""

    started: bool = False
    out_of_order: bool = False
    stopped_reason: bool = False
    closed: bool = False
    blocks: dict[int, list] = field(default_factory=dict)  # index -> [type, stopped]


def normalize_anthropic(events: list) -> Iterator[NeutralEvent]:
    """Translate Messages-API stream events into neutral events."""
    state = _AnthropicState()
    for pos, event in enumerate(events):
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"event is {_describe(event)} without a string \"type\"")
            continue
        kind = event["type"]
        if kind == "ping":
            continue
        if kind not in _ANTHROPIC_EVENTS:
            yield WireProblem(pos, UNSUPPORTED_EVENT, f"unknown event type {json.dumps(kind)}")
            continue
        if state.closed:
            yield WireProblem(pos, DELTA_AFTER_TERMINAL, f"{kind} after message_stop")
            continue
        if kind == "error":
            yield WireProblem(pos, STREAM_ERROR, "the provider sent an error event")
            continue
        if kind == "message_start":
            if state.started:
                yield WireProblem(pos, UNEXPECTED_EVENT, "a second message_start")
            elif state.out_of_order:
                yield WireProblem(pos, UNEXPECTED_EVENT, "message_start is not the first event")
            state.started = True
            continue
        if not state.started and not state.out_of_order:
            state.out_of_order = True  # report once, then keep translating
            yield WireProblem(pos, UNEXPECTED_EVENT, f"{kind} before message_start")
        if kind == "message_stop":
            state.closed = True
            yield TurnClose(pos)
        elif kind == "message_delta":
            yield from _anthropic_message_delta(pos, event, state)
        elif state.stopped_reason:
            yield WireProblem(pos, DELTA_AFTER_TERMINAL, f"{kind} after the turn's stop_reason")
        else:
            yield from _anthropic_block_event(pos, kind, event, state)


def _anthropic_message_delta(pos: int, event: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    delta = event.get("delta")
    if delta is None:
        return
    if not isinstance(delta, dict):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"message_delta.delta is {_describe(delta)}, not an object")
        return
    reason = delta.get("stop_reason")
    if reason is None:
        return
    if not isinstance(reason, str):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"stop_reason is {_describe(reason)}, not a string")
        return
    state.stopped_reason = True
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
    block_type, stopped = block
    if kind == "content_block_stop":
        if block_type == "tool_use":
            yield SlotEnd(pos, (None, index))
        elif block_type in _BLOCK_DELTAS:
            if stopped:
                yield WireProblem(pos, DUPLICATE_TERMINAL, f"second content_block_stop for block {index}", None, index)
        block[1] = True
        return
    # content_block_delta
    if block_type not in _BLOCK_DELTAS:
        return  # the unsupported block was already reported at its start
    delta = event.get("delta")
    delta_type = delta.get("type") if isinstance(delta, dict) else None
    if delta_type not in _BLOCK_DELTAS[block_type]:
        yield WireProblem(pos, UNEXPECTED_EVENT, f"delta type {_describe(delta_type)} does not belong to a "
                          f"{block_type} block ({index})", None, index)
        return
    if block_type != "tool_use":
        if stopped:
            yield WireProblem(pos, DELTA_AFTER_TERMINAL, f"{delta_type} after block {index} stopped", None, index)
        return
    partial = delta.get("partial_json")
    if not isinstance(partial, str):
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"partial_json is {_describe(partial)}, not a string", None, index)
        return
    yield Fragment(pos, (None, index), None, None, partial)


def _anthropic_block_start(pos: int, index: int, event: dict, state: _AnthropicState) -> Iterator[NeutralEvent]:
    if index in state.blocks:
        yield WireProblem(pos, IDENTITY_COLLISION, f"block {index} was started twice", None, index)
        return
    if index != len(state.blocks):
        yield WireProblem(pos, MISSING_SLOT, f"block {index} started, but block {len(state.blocks)} comes next", None, index)
    block = event.get("content_block")
    block_type = block.get("type") if isinstance(block, dict) else None
    state.blocks[index] = [block_type, False]
    if block_type not in _BLOCK_DELTAS:
        yield WireProblem(pos, UNSUPPORTED_EVENT, f"content block type {_describe(block_type)} has no reviewed normalizer", None, index)
        return
    if block_type != "tool_use":
        return
    ok_id, call_id = _optional_str(block, "id")
    ok_name, name = _optional_str(block, "name")
    initial = block.get("input", {})
    if not (ok_id and ok_name) or not isinstance(initial, dict):
        state.blocks[index][0] = None  # untranslatable; later deltas are not re-reported
        yield WireProblem(pos, UNSUPPORTED_EVENT, "tool_use id and name must be strings and input an object", None, index)
        return
    yield SlotOpen(pos, (None, index), call_id, name, initial)


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


@dataclass(frozen=True)
class TurnRules:
    """How one profile delivers terminal evidence; data, not code paths."""

    tool_reason: str              # the only reason that may end a tool turn
    per_choice_terminal: bool     # openai: finish_reason ends the choice's slots
    contiguous_slots: bool        # slot indices of a choice run 0..n-1
    implicit_open: bool           # a fragment may open a slot (openai) or not (anthropic)


RULES = {
    "openai": TurnRules("tool_calls", True, True, True),
    "mistral": TurnRules("tool_calls", True, True, True),
    "anthropic": TurnRules("tool_use", False, False, False),
}


@dataclass
class Slot:
    """One tool call being reassembled."""

    key: SlotKey
    phase: str = UNSEEN
    id: str | None = None
    name: str | None = None
    parts: list[str] = field(default_factory=list)
    initial_input: Any = None
    terminal_position: int | None = None
    findings: list[Finding] = field(default_factory=list)
    arguments: str = ""
    state: str = BLOCKED


class TurnMachine:
    """Consumes neutral events for one turn; records slots and findings."""

    def __init__(self, rules: TurnRules, limits: Limits) -> None:
        self.rules = rules
        self.limits = limits
        self.slots: dict[SlotKey, Slot] = {}
        self.findings: list[Finding] = []
        self.choice_findings: dict[int, list[Finding]] = {}
        self.ids: dict[str, SlotKey] = {}
        self.choice_ends: dict[int, str] = {}
        self.tool_signal = False      # a tool finish/stop reason was seen
        self.turn_reason: str | None = None
        self.closed = False
        self.first_choice: int | None = None
        self.calls_limit_reported = False
        self.ambiguity_reported = False

    # -- recording -----------------------------------------------------------

    def _find(self, code: str, message: str, position: int | None, key: SlotKey | None = None,
              choice: int | None = None) -> None:
        """Record a finding on a slot (key), on a whole choice, or on the turn."""
        slot_choice, index = (key if key is not None else (choice, None))
        finding = Finding(code, message, position, slot_choice, index)
        self.findings.append(finding)
        if key is not None:
            if key in self.slots:
                self.slots[key].findings.append(finding)
        elif choice is not None:
            self.choice_findings.setdefault(choice, []).append(finding)

    def findings_for(self, slot: Slot) -> list[Finding]:
        """A call's own findings plus those of its choice (finish reason, bad entries...)."""
        shared = self.choice_findings.get(slot.key[0], []) if slot.key[0] is not None else []
        return slot.findings + shared if shared else slot.findings

    def _slot(self, key: SlotKey, position: int) -> Slot:
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = Slot(key)
            if len(self.slots) > self.limits.max_calls and not self.calls_limit_reported:
                self.calls_limit_reported = True
                self._find(LIMIT_EXCEEDED, f"more than {self.limits.max_calls} tool calls in one turn", position, key)
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
                    self._find(IDENTITY_COLLISION, f"id {json.dumps(value)} is also used by slot {_slot_label(other)}",
                               position, slot.key)
                else:
                    self.ids[value] = slot.key
        elif current != value:
            self._find(IDENTITY_COLLISION,
                       f"{field_name} changed from {json.dumps(current)} to {json.dumps(value)} (names are not concatenated)"
                       if field_name == "name" else
                       f"id changed from {json.dumps(current)} to {json.dumps(value)}",
                       position, slot.key)

    # -- neutral events ------------------------------------------------------

    def feed(self, event: NeutralEvent) -> None:
        """Consume one neutral event."""
        handler = getattr(self, "_on_" + type(event).__name__)
        handler(event)

    def _on_WireProblem(self, event: WireProblem) -> None:
        key = (event.choice, event.index) if event.index is not None else None
        self._find(event.code, event.message, event.position, key, event.choice)

    def _on_SlotOpen(self, event: SlotOpen) -> None:
        slot = self._slot(event.key, event.position)
        if not self._step(slot, "open", event.position):
            return
        slot.initial_input = event.initial_input
        self._set_identity(slot, "id", event.id, event.position)
        self._set_identity(slot, "name", event.name, event.position)

    def _on_Fragment(self, event: Fragment) -> None:
        choice = event.key[0]
        if choice in self.choice_ends:
            slot = self._slot(event.key, event.position)
            if slot.phase == UNSEEN:
                self._set_identity(slot, "id", event.id, event.position)
                self._set_identity(slot, "name", event.name, event.position)
            self._find(DELTA_AFTER_TERMINAL, f"tool-call fragment after choice {choice} finished "
                       f"({json.dumps(self.choice_ends[choice])})", event.position, event.key)
            return
        if not self.rules.implicit_open and event.key not in self.slots:
            self._find(MISSING_SLOT, f"fragment for slot {_slot_label(event.key)}, which was never opened", event.position)
            return
        slot = self._slot(event.key, event.position)
        if not self._step(slot, "fragment", event.position):
            return
        self._set_identity(slot, "id", event.id, event.position)
        self._set_identity(slot, "name", event.name, event.position)
        if event.arguments:
            slot.parts.append(event.arguments)

    def _on_SlotEnd(self, event: SlotEnd) -> None:
        slot = self.slots.get(event.key)
        if slot is None:
            self._find(MISSING_SLOT, f"end of slot {_slot_label(event.key)}, which was never opened", event.position)
            return
        self._end_slot(slot, event.position)

    def _end_slot(self, slot: Slot, position: int) -> None:
        if not self._step(slot, "end", position):
            return
        slot.terminal_position = position
        if not slot.id:
            self._find(MISSING_ID, f"slot {_slot_label(slot.key)} reached its terminal without an id", position, slot.key)
        if not slot.name:
            self._find(MISSING_NAME, f"slot {_slot_label(slot.key)} reached its terminal without a name", position, slot.key)
        joined_empty = not slot.parts
        if slot.initial_input and not joined_empty:
            self._find(UNEXPECTED_EVENT, f"slot {_slot_label(slot.key)} has both a non-empty start input and "
                       "argument fragments", position, slot.key)

    def _on_ChoiceEnd(self, event: ChoiceEnd) -> None:
        choice_slots = [s for s in self.slots.values() if s.key[0] == event.choice]
        if event.reason == self.rules.tool_reason:
            self.tool_signal = True
        if event.choice in self.choice_ends:
            if choice_slots:
                self._find(DUPLICATE_TERMINAL, f"second finish_reason {json.dumps(event.reason)} for choice {event.choice}",
                           event.position, choice=event.choice)
            return
        self.choice_ends[event.choice] = event.reason
        if not choice_slots:
            if event.reason == self.rules.tool_reason:
                self._find(MISSING_SLOT, f"finish_reason {json.dumps(event.reason)} but choice {event.choice} has no "
                           "tool call", event.position, choice=event.choice)
            return
        if event.reason != self.rules.tool_reason:
            self._find(WRONG_TERMINAL_REASON, f"choice {event.choice} has tool calls but finished with "
                       f"{json.dumps(event.reason)}, not {json.dumps(self.rules.tool_reason)}",
                       event.position, choice=event.choice)
            return
        for slot in sorted(choice_slots, key=lambda s: s.key[1]):
            self._end_slot(slot, event.position)

    def _on_TurnEnd(self, event: TurnEnd) -> None:
        if event.reason == self.rules.tool_reason:
            self.tool_signal = True
        if self.turn_reason is not None:
            self._find(DUPLICATE_TERMINAL, f"second stop_reason {json.dumps(event.reason)}", event.position)
            return
        self.turn_reason = event.reason
        if self.slots and event.reason != self.rules.tool_reason:
            self._find(WRONG_TERMINAL_REASON, f"the turn has tool calls but stopped with {json.dumps(event.reason)}, "
                       f"not {json.dumps(self.rules.tool_reason)}", event.position)
        elif not self.slots and event.reason == self.rules.tool_reason:
            self._find(MISSING_SLOT, f"stop_reason {json.dumps(event.reason)} but the turn has no tool call", event.position)

    def _on_TurnClose(self, event: TurnClose) -> None:
        self.closed = True

    # -- end of stream -------------------------------------------------------

    def finish(self) -> None:
        """End-of-stream checks: every required terminal arrived, no gaps."""
        if self.rules.per_choice_terminal:
            for choice in sorted({key[0] for key in self.slots}):
                if choice not in self.choice_ends:
                    self._find(MISSING_TERMINAL, f"choice {choice} has tool calls but the stream ended without a "
                               "finish_reason", None, choice=choice)
        else:
            for key in sorted(self.slots, key=lambda k: k[1]):
                if self.slots[key].phase != TERMINAL:
                    self._find(MISSING_TERMINAL, f"slot {_slot_label(key)} has no terminal (content_block_stop)",
                               None, key)
            if self.slots and self.turn_reason is None:
                self._find(MISSING_TERMINAL, "the turn has tool calls but no stop_reason", None)
            if self.slots and not self.closed:
                self._find(MISSING_TERMINAL, "the turn has tool calls but no message_stop", None)
        if self.rules.contiguous_slots:
            for choice in sorted({key[0] for key in self.slots}):
                present = {key[1] for key in self.slots if key[0] == choice}
                missing = [i for i in range(max(present) + 1) if i not in present]
                for index in missing[:16]:
                    self._find(MISSING_SLOT, f"choice {choice} has slot {max(present)} but no slot {index}",
                               None, choice=choice)
                    self.findings[-1].index = index  # names the missing slot; still concerns the choice
                if len(missing) > 16:
                    self._find(MISSING_SLOT, f"choice {choice} misses {len(missing) - 16} more slot indices",
                               None, choice=choice)


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


class JsonProblem(Exception):
    """Arguments that fail strict JSON; carries the finding code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_JSON_WS = " \t\n\r"


def _skip_ws(text: str, pos: int) -> int:
    """Skip RFC 8259 whitespace only (not Python's wider str.isspace set)."""
    end = len(text)
    while pos < end and text[pos] in _JSON_WS:
        pos += 1
    return pos


def _strict_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonProblem(DUPLICATE_KEY, f"key {json.dumps(key)} appears twice in one object")
            seen.add(key)
    return obj


def _strict_constant(name: str) -> Any:
    raise JsonProblem(NON_FINITE_NUMBER, f"{name} is not a JSON number")


def _has_surrogate(text: str) -> bool:
    """True when text holds a lone UTF-16 surrogate code point."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def parse_strict_json(text: str, limits: Limits) -> Any:
    """Parse text as exactly one strict JSON document or raise JsonProblem.

    Python's json accepts NaN and Infinity, turns 1e400 into inf, keeps the
    last duplicate key and accepts lone surrogate escapes; each is caught here.
    """
    max_digits = limits.max_number_length

    def parse_float(token: str) -> float:
        if len(token) > max_digits:
            raise JsonProblem(LIMIT_EXCEEDED, f"a number is {len(token)} characters long (limit {max_digits})")
        value = float(token)
        if value in (float("inf"), float("-inf")):
            raise JsonProblem(NON_FINITE_NUMBER, f"number {token[:24]} overflows a double")
        return value

    def parse_int(token: str) -> int:
        if len(token) > max_digits:
            raise JsonProblem(LIMIT_EXCEEDED, f"a number is {len(token)} characters long (limit {max_digits})")
        value = int(token)
        if len(token) > 308:  # only such long integers can exceed the largest double
            try:
                float(value)
            except OverflowError:
                raise JsonProblem(NON_FINITE_NUMBER, f"integer of {len(token)} digits overflows a double") from None
        return value

    decoder = json.JSONDecoder(object_pairs_hook=_strict_pairs, parse_float=parse_float,
                               parse_int=parse_int, parse_constant=_strict_constant)
    start = _skip_ws(text, 0)
    if start == len(text):
        raise JsonProblem(MALFORMED_JSON, "the arguments are empty" if not text else "the arguments are only whitespace")
    try:
        value, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise JsonProblem(MALFORMED_JSON, f"{exc.msg} at character {exc.pos}") from None
    except RecursionError:
        raise JsonProblem(LIMIT_EXCEEDED, f"nesting deeper than the limit of {limits.max_depth}") from None
    except ValueError as exc:
        raise JsonProblem(LIMIT_EXCEEDED, f"a number cannot be read: {str(exc)[:80]}") from None
    if _skip_ws(text, end) != len(text):
        raise JsonProblem(TRAILING_DATA, f"data after the JSON document at character {end} "
                          "(two calls merged into one slot look like this)")
    _check_tree(value, limits.max_depth)
    return value


def _check_tree(value: Any, max_depth: int) -> None:
    """Depth limit and lone surrogate escapes, walked without recursion."""
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
# Schema subset
# ---------------------------------------------------------------------------

# @@SCHEMA_SECTION@@

class SchemaUnsupported(Exception):
    def __init__(self, message, location="#"):
        super().__init__(message); self.message=message; self.location=location
class SchemaLimitExceeded(Exception):
    def __init__(self, message, pointer=""):
        super().__init__(message); self.message=message; self.pointer=pointer
@dataclass(frozen=True)
class SchemaLimits:
    max_schema_depth: int = 64
    max_evaluations: int = 1_000_000
    max_pattern_subject: int = 10_000
_STUB_KW={"type","properties","required","additionalProperties","title","description","default","items","enum"}
def compile_schema(schema, limits):
    if isinstance(schema, bool): return schema
    if not isinstance(schema, dict): raise SchemaUnsupported("schema must be an object")
    def walk(s, loc):
        if isinstance(s, bool): return
        for k,v in s.items():
            if k not in _STUB_KW: raise SchemaUnsupported(f"keyword {k}", loc+"/"+k)
        for k,v in s.get("properties",{}).items(): walk(v, loc+"/properties/"+k)
        if isinstance(s.get("items"), dict): walk(s["items"], loc+"/items")
    walk(schema, "#")
    return schema
def validate_instance(compiled, instance, limits):
    errs=[]
    def v(s, x, ptr):
        if s is True: return
        if s is False: errs.append((ptr,"false schema")); return
        t=s.get("type")
        tm={"object":dict,"array":list,"string":str,"boolean":bool}
        if t in tm and not isinstance(x, tm[t]): errs.append((ptr,f"not {t}")); return
        if t=="integer" and (isinstance(x,bool) or not isinstance(x,int)): errs.append((ptr,"not integer")); return
        if t=="number" and (isinstance(x,bool) or not isinstance(x,(int,float))): errs.append((ptr,"not number")); return
        if "enum" in s and x not in s["enum"]: errs.append((ptr,"enum"))
        if isinstance(x, dict):
            for r in s.get("required",[]):
                if r not in x: errs.append((ptr,f"missing {r}"))
            props=s.get("properties",{})
            for k,val in x.items():
                if k in props: v(props[k], val, ptr+"/"+k)
                elif s.get("additionalProperties") is False: errs.append((ptr+"/"+k,"additional"))
                elif isinstance(s.get("additionalProperties"), dict): v(s["additionalProperties"], val, ptr+"/"+k)
        if isinstance(x, list) and isinstance(s.get("items"), dict):
            for i,val in enumerate(x): v(s["items"], val, f"{ptr}/{i}")
    v(compiled, instance, "")
    return errs



# ---------------------------------------------------------------------------
# Validation: once per call, only after terminal
# ---------------------------------------------------------------------------


def validate_slots(machine: TurnMachine, tool_schemas: dict, limits: Limits) -> None:
    """Validate every slot that reached its terminal cleanly; set call states."""
    schema_cache: dict[str, Any] = {}
    slimits = SchemaLimits(limits.max_schema_depth, limits.max_evaluations, limits.max_pattern_subject)
    for slot in machine.slots.values():
        text, paired = join_fragments(slot.parts)
        too_deep = False
        if text == "" and slot.initial_input is not None:
            too_deep = _nesting_exceeds(slot.initial_input, limits.max_depth)
            if not too_deep:
                text = json.dumps(slot.initial_input, separators=(",", ":"), ensure_ascii=False)
        slot.arguments = text
        if slot.phase != TERMINAL or machine.findings_for(slot):
            slot.state = BLOCKED
            continue
        position = slot.terminal_position

        def find(code: str, message: str, pointer: str | None = None) -> None:
            finding = Finding(code, message, position, slot.key[0], slot.key[1], pointer)
            machine.findings.append(finding)
            slot.findings.append(finding)

        value: Any = None
        parsed = False
        if too_deep:
            find(LIMIT_EXCEEDED, f"the start input nests deeper than the limit of {limits.max_depth}")
        elif not paired:
            find(INVALID_UNICODE, "the joined arguments hold an unpaired UTF-16 surrogate")
        elif len(text) > limits.max_argument_bytes or len(text.encode("utf-8")) > limits.max_argument_bytes:
            find(LIMIT_EXCEEDED, f"the arguments exceed {limits.max_argument_bytes} bytes")
        else:
            try:
                value = parse_strict_json(text, limits)
                parsed = True
            except JsonProblem as problem:
                find(problem.code, problem.message)
            if parsed and not isinstance(value, dict):
                find(NON_OBJECT_ARGUMENTS, f"the arguments are {_describe(value)}, not a JSON object")
                parsed = False
        if slot.name not in tool_schemas:
            find(UNKNOWN_TOOL, f"tool {json.dumps(slot.name)} is not in tool_schemas")
        else:
            if slot.name not in schema_cache:
                try:
                    schema_cache[slot.name] = compile_schema(tool_schemas[slot.name], slimits)
                except SchemaUnsupported as exc:
                    schema_cache[slot.name] = exc
            compiled = schema_cache[slot.name]
            if isinstance(compiled, SchemaUnsupported):
                find(UNSUPPORTED_SCHEMA, f"schema of {json.dumps(slot.name)}: {compiled.message} "
                     f"(at {compiled.location})")
            elif parsed:
                try:
                    errors = validate_instance(compiled, value, slimits)
                except SchemaLimitExceeded as exc:
                    find(LIMIT_EXCEEDED, exc.message, exc.pointer)
                    errors = []
                except SchemaUnsupported as exc:
                    find(UNSUPPORTED_SCHEMA, f"schema of {json.dumps(slot.name)}: {exc.message} (at {exc.location})")
                    errors = []
                for pointer, message in errors[:20]:
                    find(SCHEMA_VIOLATION, f"{message} (at {pointer or '/'})", pointer)
        slot.state = BLOCKED if slot.findings else VALIDATED


# ---------------------------------------------------------------------------
# Gate and report
# ---------------------------------------------------------------------------


def _normalizer(profile: str, stream: list) -> Iterable[NeutralEvent]:
    if profile == "anthropic":
        return normalize_anthropic(stream)
    return normalize_chat_chunks(stream, mistral=(profile == "mistral"))


def validate_envelope(doc: Any, limits: Limits | None = None) -> dict[str, Any]:
    """Validate a parsed envelope in memory and return the report as a dict."""
    limits = limits or Limits()
    problems = check_envelope(doc, limits)
    profile = doc.get("profile") if isinstance(doc, dict) else None
    meta = doc.get("meta") if isinstance(doc, dict) and isinstance(doc.get("meta"), dict) else None
    if problems:
        return _report(profile if isinstance(profile, str) else None, [], problems, False, meta)
    machine = TurnMachine(RULES[profile], limits)
    for event in _normalizer(profile, doc[STREAM_KEY[profile]]):
        machine.feed(event)
    machine.finish()
    validate_slots(machine, doc["tool_schemas"], limits)
    slots = sorted(machine.slots.values(), key=lambda s: (s.key[0] if s.key[0] is not None else -1, s.key[1]))
    applicable = bool(machine.slots) or machine.tool_signal
    return _report(profile, slots, machine.findings, applicable, meta, machine.findings_for, limits.max_findings)


def validate_bytes(data: bytes, limits: Limits | None = None) -> dict[str, Any]:
    """Validate fixture bytes (strictly parsed) and return the report as a dict."""
    limits = limits or Limits()
    if len(data) > limits.max_input_bytes:
        return _report(None, [], [Finding(LIMIT_EXCEEDED, f"the fixture is larger than {limits.max_input_bytes} bytes")],
                       False, None)
    try:
        doc = parse_envelope_bytes(data)
    except EnvelopeError as exc:
        return _report(None, [], [Finding(INVALID_FIXTURE, str(exc))], False, None)
    return validate_envelope(doc, limits)


def _finding_order(finding: Finding) -> tuple:
    return (finding.position is None, finding.position or 0)


def _bounded(findings: list[Finding], limit: int) -> list[Finding]:
    """Stream-ordered findings, at most `limit` listed in full.

    Past the limit only the first finding of each code not yet listed is kept,
    so every code that arose still appears; a last limit_exceeded entry says
    how many were left out.  Keeps a hostile stream from producing a report
    of gigabytes.
    """
    ordered = sorted(findings, key=_finding_order)  # stable: stream order within a position
    if len(ordered) <= limit:
        return ordered
    kept = ordered[:limit]
    seen = {f.code for f in kept}
    for finding in ordered[limit:]:
        if finding.code not in seen:
            seen.add(finding.code)
            kept.append(finding)
    omitted = len(ordered) - len(kept)
    kept.append(Finding(LIMIT_EXCEEDED, f"{omitted} more findings not listed (limit {limit})"))
    return kept


def _no_shared(slot: Slot) -> list[Finding]:
    return slot.findings


def _report(profile: str | None, slots: list[Slot], findings: list[Finding], applicable: bool,
            meta: dict | None, findings_for: Any = _no_shared, max_findings: int = 1000) -> dict[str, Any]:
    ordered = _bounded(findings, max_findings)
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
            "arguments": slot.arguments,
            "state": slot.state,
            "findings": [f.as_dict() for f in _bounded(findings_for(slot), max_findings)],
        })
    return {
        "tool": TOOL,
        "version": VERSION,
        "profile": profile,
        "status": status,
        "applicable": status != "not_applicable",
        "executable": status == "pass",
        "calls": calls,
        "findings": [f.as_dict() for f in ordered],
        "meta": meta,
    }


def check_expect(report: dict[str, Any], expect: Any) -> list[str]:
    """Differences between a report and a pinned `expect` block (SPEC section 6)."""
    if not isinstance(expect, dict):
        return ["the fixture has no usable \"expect\" object"]
    differences = []
    if "status" in expect and expect["status"] != report["status"]:
        differences.append(f"status: expected {json.dumps(expect['status'])}, got {json.dumps(report['status'])}")
    if "codes" in expect:
        found = {f["code"] for f in report["findings"]}
        wanted = expect["codes"] if isinstance(expect["codes"], list) else [expect["codes"]]
        for code in wanted:
            if code not in found:
                differences.append(f"codes: expected {json.dumps(code)}, not reported")
    if "calls" in expect:
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
    return differences


def render_json(report: dict[str, Any]) -> str:
    """Deterministic, ASCII-only JSON (safe for any terminal or log encoding)."""
    return json.dumps(report, indent=2, ensure_ascii=True)


def render_text(report: dict[str, Any]) -> str:
    """A short verdict for people: status first, then one line per call and finding."""
    calls, findings = report["calls"], report["findings"]
    verdict = {"pass": "PASS: the calls may be handed to execution",
               "blocked": "BLOCKED: nothing in this turn may execute",
               "not_applicable": "NOT APPLICABLE: the turn carries no tool call"}[report["status"]]
    lines = [f"{verdict} (profile {report['profile'] or 'unknown'}, {len(calls)} call(s), {len(findings)} finding(s))"]
    for call in calls:
        where = f"slot {call['index']}" if call["choice"] is None else f"choice {call['choice']} slot {call['index']}"
        lines.append(f"  call {where}: {call['state']} id={json.dumps(call['id'])} name={json.dumps(call['name'])} "
                     f"arguments={json.dumps(call['arguments'], ensure_ascii=True)}")
    for item in findings:
        if item["position"] is not None:
            at = f"position {item['position']}"
        else:
            at = "the envelope" if item["code"] in (INVALID_FIXTURE, UNKNOWN_PROFILE) else "end of stream"
        where = ""
        if item["index"] is not None or item["choice"] is not None:
            parts = [] if item["choice"] is None else [f"choice {item['choice']}"]
            if item["index"] is not None:
                parts.append(f"slot {item['index']}")
            where = ", " + " ".join(parts)
        lines.append(f"  {item['code']} at {at}{where}: {item['message']}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


class UsageError(Exception):
    """Bad usage or unreadable input: exit 3, a message on stderr, no report."""


def _parse_args(argv: list[str]) -> Any:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # argparse's own exit 2 means not_applicable here
            raise UsageError(message)

    parser = Parser(
        prog="validate_tool_stream.py",
        description="Decide whether the tool calls in one captured, streamed assistant turn may be "
                    "handed to execution. Exit 0 pass, 1 blocked, 2 not applicable, 3 could not run.",
    )
    parser.add_argument("fixture", help="fixture file (JSON envelope), or - for standard input")
    parser.add_argument("--report", choices=("json", "text"), default="json", help="report format (default json)")
    parser.add_argument("--expect", action="store_true",
                        help="check the fixture's expect block: exit 0 if the outcome matches, 1 if not")
    parser.add_argument("--version", action="version", version=f"{TOOL} {VERSION}")
    defaults = Limits()
    for name, help_text in (
        ("max_input_bytes", "largest fixture file in bytes"),
        ("max_argument_bytes", "largest joined arguments of one call, in UTF-8 bytes"),
        ("max_depth", "deepest nesting of arrays/objects in arguments"),
        ("max_number_length", "longest number token in arguments, in characters"),
        ("max_calls", "most tool calls in one turn"),
        ("max_schema_depth", "deepest schema evaluation"),
        ("max_evaluations", "most subschema evaluations per call"),
        ("max_pattern_subject", "longest string a schema pattern is run on, in code points"),
        ("max_findings", "most findings listed in full; past it, only each new code's first"),
    ):
        parser.add_argument("--" + name.replace("_", "-"), type=_positive_int, default=getattr(defaults, name),
                            metavar="N", help=f"{help_text} (default {getattr(defaults, name)})")
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise UsageError(f"expected a positive integer, got {text!r}")
    return value


def _read_input(path: str, limit: int) -> bytes:
    try:
        if path == "-":
            return sys.stdin.buffer.read(limit + 1)
        with open(path, "rb") as handle:
            return handle.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def run(argv: list[str]) -> int:
    """The CLI without process concerns: returns the exit code."""
    args = _parse_args(argv)
    limits = Limits(**{name: getattr(args, name) for name in Limits.__dataclass_fields__})
    data = _read_input(args.fixture, limits.max_input_bytes)
    report = validate_bytes(data, limits)
    code = EXIT_BY_STATUS[report["status"]]
    if args.expect:
        try:
            expect = parse_envelope_bytes(data).get("expect")
        except (EnvelopeError, AttributeError):
            expect = None
        differences = check_expect(report, expect)
        report["expectation"] = {"matched": not differences, "differences": differences}
        code = EXIT_PASS if not differences else EXIT_BLOCKED
    sys.stdout.write((render_text(report) if args.report == "text" else render_json(report)) + "\n")
    if args.expect:
        if differences:
            sys.stderr.write("expect: MISMATCH\n" + "".join(f"  {d}\n" for d in differences))
        else:
            sys.stderr.write("expect: matched\n")
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point: exit codes 0-3 only, and never a traceback."""
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) and exc.code == 0 else EXIT_CANNOT_RUN
    except UsageError as exc:
        sys.stderr.write(f"validate_tool_stream: {exc}\n")
        return EXIT_CANNOT_RUN
    except BrokenPipeError:
        return EXIT_CANNOT_RUN
    except (KeyboardInterrupt, MemoryError, RecursionError, Exception) as exc:  # noqa: BLE001 - last resort
        sys.stderr.write(f"validate_tool_stream: internal error ({type(exc).__name__}); no verdict\n")
        return EXIT_CANNOT_RUN


if __name__ == "__main__":
    sys.exit(main())
