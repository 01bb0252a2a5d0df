"""Drivers that replay a fixture's wire stream through the REAL SDK stream accumulators.

Each driver takes the fixture's parsed stream (the list of raw wire dicts stored under
"chunks" or "events") and returns the tool calls the SDK would hand to the application,
as ``[{"id": ..., "name": ..., "arguments": ..., "kind": ...}]`` in SDK order. ``kind`` is
"function", or "custom" for a Responses custom tool call, whose ``arguments`` is its
free-text ``input``.  When the SDK itself
would fail on the stream, the driver raises :class:`DriverError` naming the SDK's
exception type: a crash means the application executes nothing.

Everything runs in process, without network and without an HTTP client: the drivers do
what the SDK's ``Stream`` layer does to each SSE payload (``construct_type`` into the
stream's ``cast_to`` type, plus that layer's error/ping/[DONE] handling) and then feed
the SDK's own accumulator classes directly.  Every step mirrors the installed source it
names; re-read that source when the pinned versions in requirements.txt change.

This module imports nothing from the SDKs at import time (they are imported lazily in
each driver), so it can be imported on a machine that only has the standard library.
The validator (scripts/validate_tool_stream.py) must never import this package.
"""

from __future__ import annotations

import importlib
import json
import warnings
from collections.abc import Mapping
from typing import Any, Callable

__all__ = [
    "DriverError",
    "PACKAGES",
    "DRIVER_PACKAGE",
    "PROFILE_DRIVERS",
    "available",
    "missing_packages",
    "openai_chat_stream_helper",
    "openai_chat_state",
    "anthropic_message_stream",
    "openai_responses_stream",
    "openai_agents",
    "openai_agents_chat",
    "google_genai_chunks",
    "DRIVERS",
    "typed_json",
    "utf16",
]

# distribution name -> importable top-level module
PACKAGES = {"openai": "openai", "anthropic": "anthropic", "openai-agents": "agents", "google-genai": "google.genai"}

# driver name -> distribution it needs (openai-agents also needs openai, which it depends on)
DRIVER_PACKAGE = {
    "openai_chat_stream_helper": "openai",
    "openai_chat_state": "openai",
    "anthropic_message_stream": "anthropic",
    "openai_responses_stream": "openai",
    "openai_agents": "openai-agents",
    "openai_agents_chat": "openai-agents",
    "google_genai_chunks": "google-genai",
}

# validator profile -> drivers that consume that wire format
PROFILE_DRIVERS = {
    "openai": ("openai_chat_stream_helper", "openai_chat_state", "openai_agents_chat"),
    "mistral": ("openai_chat_stream_helper", "openai_chat_state"),
    "anthropic": ("anthropic_message_stream",),
    "openai-responses": ("openai_responses_stream", "openai_agents"),
    "bedrock": (),
    "gemini": ("google_genai_chunks",),
}

Call = dict  # {"id": str | None, "name": str | None, "arguments": str | None, "kind": "function" | "custom"}


def utf16(text: Any) -> Any:
    """A string as UTF-16 code units (a surrogate pair and its two halves are the same text)."""
    return text.encode("utf-16-le", "surrogatepass") if isinstance(text, str) else text


def typed_json(value: Any) -> Any:
    """A JSON value for comparison: bool kept apart from numbers (Python has True == 1), strings as UTF-16."""
    if isinstance(value, str):
        return ("str", utf16(value))
    if isinstance(value, bool) or value is None:
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, list):
        return ("array", [typed_json(item) for item in value])
    if isinstance(value, dict):
        return ("object", {key: typed_json(item) for key, item in value.items()})
    return ("other", repr(value))


class DriverError(Exception):
    """The SDK itself failed on this stream (so the application would execute nothing).

    ``exc_type`` is the SDK exception's class name, ``driver`` the driver that hit it.
    """

    def __init__(self, driver: str, exc_type: str, message: str, where: str = "") -> None:
        super().__init__(f"{driver}: SDK raised {exc_type}: {message}" + (f" (at {where})" if where else ""))
        self.driver = driver
        self.exc_type = exc_type
        self.message = message
        self.where = where  # innermost SDK frame, e.g. "openai/lib/streaming/chat/_completions.py:405"


def _where(exc: BaseException) -> str:
    """The innermost traceback frame inside an SDK package, as package-relative path:line."""
    import os
    import traceback

    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        parts = frame.filename.replace(os.sep, "/").split("/")
        for top in ("openai", "anthropic", "agents", "genai"):
            if top in parts:
                rel = "/".join(parts[len(parts) - 1 - parts[::-1].index(top):])
                return f"{rel}:{frame.lineno}" + (f" `{frame.line}`" if frame.line else "")
    return ""


_AVAILABLE: dict[str, str | None] | None = None


def available() -> dict[str, str | None]:
    """Distribution name -> installed version, or None when it cannot be imported."""
    global _AVAILABLE
    if _AVAILABLE is None:
        from importlib.metadata import PackageNotFoundError, version

        found: dict[str, str | None] = {}
        for dist, module in PACKAGES.items():
            try:
                importlib.import_module(module)
                found[dist] = version(dist)
            except (ImportError, PackageNotFoundError):
                found[dist] = None
            except Exception:  # a broken install counts as missing
                found[dist] = None
        _AVAILABLE = found
    return dict(_AVAILABLE)


def missing_packages(driver_names) -> list[str]:
    """Distributions the given drivers need that are not importable (sorted, unique)."""
    have = available()
    return sorted({DRIVER_PACKAGE[name] for name in driver_names if have.get(DRIVER_PACKAGE[name]) is None})


def _run(driver: str, body: Callable[[], list[Call]]) -> list[Call]:
    try:
        with warnings.catch_warnings():
            # e.g. pydantic serializer warnings on hostile payloads: noise, not SDK behaviour
            warnings.simplefilter("ignore")
            return body()
    except DriverError:
        raise
    except Exception as exc:  # any SDK failure: the app gets an exception instead of calls
        raise DriverError(driver, type(exc).__name__, str(exc)[:500], _where(exc)) from exc


# --------------------------------------------------------------------------------------
# openai-python: the Stream layer (src/openai/_streaming.py, Stream.__stream__)
# --------------------------------------------------------------------------------------

def _openai_api_error(data: Mapping) -> Exception:
    """The APIError that openai's Stream raises for a payload with a truthy "error" member."""
    import httpx2
    from openai import APIError

    error = data.get("error")
    message = error.get("message") if isinstance(error, Mapping) else None
    if not message or not isinstance(message, str):
        message = "An error occurred during streaming"
    request = httpx2.Request("POST", "https://api.openai.invalid/v1")  # never sent
    return APIError(message=message, request=request, body=data["error"])


def _openai_stream_items(payloads: list, cast_to: Any) -> list:
    """What ``Stream[cast_to]`` yields for these SSE data payloads (legacy stream_mode).

    Stream.__stream__ stops at a "[DONE]" data line, raises APIError for a mapping with a
    truthy "error" member, and otherwise yields ``client._process_response_data(data)``,
    which is ``construct_type(type_=cast_to, value=data)`` (None for a JSON null) because
    ``_strict_response_validation`` defaults to False.
    """
    from openai._models import construct_type

    items = []
    for data in payloads:
        if isinstance(data, str) and data.startswith("[DONE]"):
            # a fixture never stores the sentinel as JSON, but honour it if it does
            break
        if isinstance(data, Mapping) and data.get("error"):
            raise _openai_api_error(data)
        items.append(None if data is None else construct_type(type_=cast_to, value=data))
    return items


# --------------------------------------------------------------------------------------
# openai-python chat completions (src/openai/lib/streaming/chat/_completions.py)
# --------------------------------------------------------------------------------------

def _chat_calls(chunks: list, weak_object_filter: bool) -> list[Call]:
    from openai.types.chat import ChatCompletionChunk
    from openai.lib.streaming.chat._completions import (
        ChatCompletionStreamState,
        _is_valid_chat_completion_chunk_weak,
    )

    state = ChatCompletionStreamState()  # input_tools / response_format omitted, as a plain .stream() call
    for chunk in _openai_stream_items(chunks, ChatCompletionChunk):
        # ChatCompletionStream.__stream__: `if not _is_valid_chat_completion_chunk_weak(sse_event): continue`
        # i.e. keep only chunk.object == "chat.completion.chunk"; a chunk WITHOUT "object"
        # is constructed with object=None and is therefore dropped too.
        if weak_object_filter and not _is_valid_chat_completion_chunk_weak(chunk):
            continue
        state.handle_chunk(chunk)
    # get_final_completion(): asserts a snapshot exists, then parse_chat_completion() which
    # raises LengthFinishReasonError / ContentFilterFinishReasonError for those finish
    # reasons and drops "custom" tool calls.
    completion = state.get_final_completion()
    if not completion.choices:
        return []
    # The application reads completion.choices[0]: position 0 of the snapshot list, which the
    # state fills in order of first arrival (not by the wire "index").
    message = completion.choices[0].message
    return [
        # parse_chat_completion already dropped "custom" tool calls (it only logs them)
        {"id": call.id, "name": call.function.name, "arguments": call.function.arguments, "kind": "function"}
        for call in (message.tool_calls or [])
    ]


def openai_chat_stream_helper(chunks: list) -> list[Call]:
    """What ``client.chat.completions.stream(...)`` hands over: ChatCompletionStream.__stream__
    drops chunks whose ``object`` is not "chat.completion.chunk" before the state sees them."""
    return _run("openai_chat_stream_helper", lambda: _chat_calls(chunks, weak_object_filter=True))


def openai_chat_state(chunks: list) -> list[Call]:
    """``create(stream=True)`` chunks fed to ChatCompletionStreamState.handle_chunk directly
    (the documented manual-accumulation pattern): no ``object`` filter."""
    return _run("openai_chat_state", lambda: _chat_calls(chunks, weak_object_filter=False))


# --------------------------------------------------------------------------------------
# anthropic-sdk-python (src/anthropic/_streaming.py + lib/streaming/_messages.py)
# --------------------------------------------------------------------------------------

def anthropic_snapshot(events: Any) -> Any:
    """MessageStream's accumulation over RawMessageStreamEvent objects: the final message snapshot.

    Shared with adapters/speed.py, which times it over events constructed beforehand.
    """
    from anthropic._types import not_given
    from anthropic.lib.streaming._messages import accumulate_event, build_events

    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        # MessageStream.__stream__: events before message_start are passed through unaccumulated
        if snapshot is None and event.type != "message_start":
            continue
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs,
                                    output_format=not_given)
        build_events(event=event, message_snapshot=snapshot)
    return snapshot


def _anthropic_events(events: list) -> Any:
    """What anthropic's Stream.__stream__ yields for these payloads (an error payload raises)."""
    import httpx2
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    for data in events:
        # anthropic's Stream.__stream__ dispatches on the SSE `event:` name; the API always
        # sends it equal to the payload's "type", so that is what we use (None if absent).
        name = data.get("type") if isinstance(data, Mapping) else None
        name = name if isinstance(name, str) else None
        if name == "ping":
            continue
        if name is None:  # `if sse.event is None: continue`
            continue
        if name == "error":
            from anthropic._error_classes import make_status_error

            response = httpx2.Response(200, request=httpx2.Request("POST", "https://api.anthropic.invalid/v1/messages"))
            raise make_status_error(f"{data}", body=data, response=response)
        # `if not sse.data: continue` cannot trigger: a stored payload is never empty text
        yield construct_type(type_=RawMessageStreamEvent, value=data)  # _process_response_data


def _anthropic_calls(events: list) -> list[Call]:
    snapshot = anthropic_snapshot(_anthropic_events(events))
    # MessageStream.get_final_message(): `assert self.__final_message_snapshot is not None`
    assert snapshot is not None
    calls = []
    for block in snapshot.content:
        if getattr(block, "type", None) == "tool_use":
            calls.append({
                "id": block.id,
                "name": block.name,
                # the SDK hands over a parsed object, so this is only comparable as a JSON value
                "arguments": json.dumps(block.input, separators=(",", ":"), ensure_ascii=False),
                "kind": "function",
            })
    return calls


def anthropic_message_stream(events: list) -> list[Call]:
    """``client.messages.stream(...).get_final_message()``'s ``tool_use`` blocks."""
    return _run("anthropic_message_stream", lambda: _anthropic_calls(events))


# --------------------------------------------------------------------------------------
# openai-python Responses (src/openai/lib/streaming/responses/_responses.py)
# --------------------------------------------------------------------------------------

def _responses_calls(events: list) -> list[Call]:
    from openai._types import omit
    from openai.types.responses import ResponseStreamEvent
    from openai.lib.streaming.responses._responses import ResponseStreamState

    state = ResponseStreamState(input_tools=omit, text_format=omit)
    for event in _openai_stream_items(events, ResponseStreamEvent):
        state.handle_event(event)  # ResponseStream.__stream__ (starting_after=None filters nothing)
    # ResponseStream.get_final_response()
    response = state._completed_response
    if not response:
        raise RuntimeError("Didn't receive a `response.completed` event.")
    # parse_response keeps function_call (as ParsedResponseFunctionToolCall) and passes
    # custom_tool_call through unchanged; both are calls the application runs.
    return [_responses_call(item) for item in (response.output or [])
            if getattr(item, "type", None) in ("function_call", "custom_tool_call")]


def _responses_call(item: Any) -> Call:
    if item.type == "custom_tool_call":  # free-form text input
        call = {"id": item.call_id, "name": item.name, "arguments": item.input, "kind": "custom"}
    else:
        call = {"id": item.call_id, "name": item.name, "arguments": item.arguments, "kind": "function"}
    namespace = getattr(item, "namespace", None)   # openai-agents routes a call by (namespace, name)
    if namespace is not None:
        call["namespace"] = namespace
    return call


def openai_responses_stream(events: list) -> list[Call]:
    """``client.responses.stream(...).get_final_response()``'s function_call and custom_tool_call
    items (built from
    response.completed's response; rebuilt from output_item.done items only when its output is
    None)."""
    return _run("openai_responses_stream", lambda: _responses_calls(events))


# --------------------------------------------------------------------------------------
# openai-agents (src/agents/models/openai_responses.py stream_response,
#                src/agents/run_internal/run_loop.py, run_internal/tool_planning.py)
# --------------------------------------------------------------------------------------

def _agents_calls(events: list) -> list[Call]:
    import agents  # noqa: F401  (the driver is about this package; fail if it is missing)
    from agents.exceptions import ModelBehaviorError
    from agents.models._response_terminal import (
        response_error_event_failure_error,
        response_terminal_failure_error,
    )
    from agents._tool_invocation import tool_invocation_call_id, tool_invocation_identity
    from agents.items import ModelResponse
    from agents.models.openai_responses import _usage_from_response
    from agents.usage import Usage, _requests_for_response_without_usage, _response_usage_to_usage
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseCustomToolCall,
        ResponseFunctionToolCall,
        ResponseOutputItemDoneEvent,
        ResponseStreamEvent,
    )

    final_response = None
    streamed_response_output: list = []
    # OpenAIResponsesModel.stream_response iterates the raw AsyncStream[ResponseStreamEvent]
    # (no ResponseStreamState); the run loop consumes what it yields.
    for event in _openai_stream_items(events, ResponseStreamEvent):
        event_type = getattr(event, "type", None)
        # stream_response / run loop: failure terminals and error events raise ModelBehaviorError
        if not isinstance(event, ResponseCompletedEvent):
            if event_type in {"response.incomplete", "response.failed"}:
                maybe_response = getattr(event, "response", None)
                raise response_terminal_failure_error(
                    event_type, maybe_response if isinstance(maybe_response, Response) else None)
            if event_type in {"error", "response.error"}:
                raise response_error_event_failure_error(event_type, event)
        if isinstance(event, ResponseCompletedEvent):
            _usage_from_response(event.response)  # stream_response reads the usage before yielding
            terminal_response = event.response
            # "Some streaming backends emit output items during item.done events while leaving
            # the terminal response output empty": fall back to the collected item.done items.
            if not terminal_response.output and streamed_response_output:
                terminal_response.output = list(streamed_response_output)
            usage = (_response_usage_to_usage(terminal_response.usage) if terminal_response.usage
                     else Usage(requests=_requests_for_response_without_usage(terminal_response)))
            # the SDK's own pydantic dataclass: validates `output` (e.g. rejects None)
            final_response = ModelResponse(output=terminal_response.output, usage=usage,
                                           response_id=terminal_response.id,
                                           request_id=getattr(terminal_response, "_request_id", None))
            # a later response.completed overwrites
        if isinstance(event, ResponseOutputItemDoneEvent):
            streamed_response_output.append(event.item)
    if final_response is None:
        raise ModelBehaviorError("Model did not produce a final response!")
    final_output = final_response.output

    # process_model_response sorts the output into per-kind lists in output order (function
    # calls -> `functions`, custom tool calls -> `custom_tool_calls`; this assumes the agent has
    # a FunctionTool / CustomTool for each name, else it raises "Tool ... not found"). Then
    # tool_planning._dedupe_processed_response_invocations (fresh run, no history) walks
    # `functions` and then `custom_tool_calls`: it rejects a missing/empty call_id, skips an
    # exact repeat of a call_id and rejects a call_id reused for a different invocation.
    # Emulated with the SDK's own identity helpers; calls are returned in output order.
    functions = [item for item in final_output if isinstance(item, ResponseFunctionToolCall)]
    customs = [item for item in final_output if isinstance(item, ResponseCustomToolCall)]
    kept: set[int] = set()
    seen: dict[str, Any] = {}
    uncanonical: set[str] = set()
    for item in functions + customs:
        call_identity = tool_invocation_call_id(item)
        if call_identity is not None and call_identity[1] is None:
            raise ModelBehaviorError("Tool invocations require a non-empty string call ID before execution.")
        identity = tool_invocation_identity(
            item, tool_name=item.name if isinstance(item, ResponseCustomToolCall) else None)
        if identity is None:
            call_id = call_identity[1] if call_identity else None
            if call_id is not None:
                if call_id in seen or call_id in uncanonical:
                    raise ModelBehaviorError("Model reused a tool call ID for a different invocation in one response.")
                uncanonical.add(call_id)
        else:
            if identity[1] in uncanonical:
                raise ModelBehaviorError("Model reused a tool call ID for a different invocation in one response.")
            previous = seen.get(identity[1])
            if previous is not None:
                if previous != identity:
                    raise ModelBehaviorError("Model reused a tool call ID for a different invocation in one response.")
                continue  # exact repeat: executed once
            seen[identity[1]] = identity
        kept.add(id(item))
    return [_responses_call(item) for item in final_output if id(item) in kept]


def openai_agents(events: list) -> list[Call]:
    """The function calls an openai-agents streamed run (Runner.run_streamed) would execute."""
    return _run("openai_agents", lambda: _agents_calls(events))


def _agents_chat_calls(chunks: list) -> list[Call]:
    import asyncio
    import time

    from agents.models.chatcmpl_stream_handler import ChatCmplStreamHandler
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import Response

    # OpenAIChatCompletionsModel.stream_response: the chunks of the Stream layer go through
    # ChatCmplStreamHandler.handle_stream, whose response.completed carries the function calls.
    items = _openai_stream_items(chunks, ChatCompletionChunk)

    async def stream():
        for item in items:
            yield item

    async def run() -> list[Call]:
        response = Response(id="resp_replay", created_at=time.time(), model="replay", object="response", output=[],
                            tool_choice="auto", tools=[], parallel_tool_calls=True, top_p=None, temperature=None)
        final = None
        async for event in ChatCmplStreamHandler.handle_stream(response, stream()):
            if event.type == "response.completed":
                final = event.response
        if final is None:
            raise RuntimeError("the stream handler sent no response.completed")
        return [_responses_call(item) for item in final.output if item.type in ("function_call", "custom_tool_call")]

    return asyncio.run(run())


def openai_agents_chat(chunks: list) -> list[Call]:
    """The function calls openai-agents' Chat Completions model (OpenAIChatCompletionsModel) hands over."""
    return _run("openai_agents_chat", lambda: _agents_chat_calls(chunks))


# --------------------------------------------------------------------------------------
# google-genai (python-genai): Models.generate_content_stream (google/genai/models.py)
# --------------------------------------------------------------------------------------


class NotAssembled(DriverError):
    """The SDK hands over the pieces of a streamed call (partialArgs) as they come, unassembled."""


def _genai_calls(chunks: list) -> list[Call]:
    from google.genai import models, types

    # generate_content_stream converts each payload with the backend's converter (Vertex when the
    # payloads carry createTime, which only Vertex sends), then builds GenerateContentResponse.
    vertex = any(isinstance(c, dict) and "createTime" in c for c in chunks)
    convert = models._GenerateContentResponse_from_vertex if vertex else models._GenerateContentResponse_from_mldev
    calls: list[Call] = []
    for chunk in chunks:
        if isinstance(chunk, dict) and "error" in chunk:   # the API client raises APIError on an error payload
            raise DriverError("google_genai_chunks", "APIError", "error payload in the stream")
        response = types.GenerateContentResponse._from_response(response=convert(chunk), kwargs={})
        # What an application collects: chunk.function_calls of every chunk (candidate 0 only).
        for call in response.function_calls or ():
            if call.partial_args is not None or call.will_continue:
                raise NotAssembled("google_genai_chunks", "NotAssembled",
                                   "function_calls holds partialArgs pieces; the application must assemble them")
            calls.append({"id": call.id, "name": call.name, "kind": "function",
                          "arguments": json.dumps(call.args if call.args is not None else {},
                                                  separators=(",", ":"), ensure_ascii=False)})
    return calls


def google_genai_chunks(chunks: list) -> list[Call]:
    """The calls an application gathers from ``chunk.function_calls`` of generate_content_stream."""
    return _run("google_genai_chunks", lambda: _genai_calls(chunks))


DRIVERS: dict[str, Callable[[list], list[Call]]] = {
    "openai_chat_stream_helper": openai_chat_stream_helper,
    "openai_chat_state": openai_chat_state,
    "anthropic_message_stream": anthropic_message_stream,
    "openai_responses_stream": openai_responses_stream,
    "openai_agents": openai_agents,
    "openai_agents_chat": openai_agents_chat,
    "google_genai_chunks": google_genai_chunks,
}
