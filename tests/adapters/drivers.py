"""The drivers: what real SDKs and stream adapters hand to execution for a fixture's stream.

Two layers, one module:

* **SDK drivers** (first half; used by tests/test_sdk_differential.py and crosscheck.py).
  Each takes the fixture's parsed stream (the list of raw wire dicts stored under "chunks"
  or "events") and returns the tool calls the SDK would hand to the application, as
  ``[{"id": ..., "name": ..., "arguments": ..., "kind": ...}]`` in SDK order. ``kind`` is
  "function", or "custom" for a Responses custom tool call, whose ``arguments`` is its
  free-text ``input``. They run in process, without network and without an HTTP client: they
  do what the SDK's ``Stream`` layer does to each SSE payload (``construct_type`` into the
  stream's ``cast_to`` type, plus that layer's error/ping/[DONE] handling) and then feed the
  SDK's own accumulator classes directly. cohere-python and ollama-python have no accumulator
  class: their drivers run the SDK's real client over an in-memory ``httpx.MockTransport``
  serving the wire body, then assemble the typed events the way the vendor's docs do.
  Every step mirrors the installed source it names;
  re-read that source when the pinned versions in requirements.txt change. ``DRIVERS`` maps
  each driver's name to it, ``PROFILE_DRIVERS`` each profile to the drivers that read it.

* **Adapter drivers** (second half; used by run.py, speed.py and tests/test_adapters.py).
  One per stream adapter, with the signature ``driver(profile, stream, tool_schemas=None,
  request=None)``; each returns a :class:`Calls` list of ``{"id", "name", "arguments"}`` dicts
  (``arguments`` a string, compact JSON of the parsed value where the adapter only keeps a
  parsed object; ``"kind": "custom"`` marks a free-text custom tool call) in the order the
  adapter hands them over. openai-python, anthropic, openai-agents, google-genai, cohere and
  ollama reuse the SDK drivers of the first half. The others run the library's own streaming
  code end to end: the fixture's payloads are served as the wire body (SSE; NDJSON for Ollama)
  by an in-memory HTTP transport
  (``MockTransport``: nothing leaves the process) to the library's real client, and the calls
  are read where an application reads them. ``run(adapter, profile, stream, ...)`` picks the
  driver.

When the library itself fails on the stream, a driver raises :class:`DriverError` naming the
library's exception type: a crash means the application executes nothing. An adapter driver
raises :class:`Unsupported` when the adapter does not read this profile's wire format, or does
not assemble the calls itself (google-genai hands Vertex ``partialArgs`` pieces over as they
come).

Nothing here imports a third-party package at import time: each driver imports what it needs
when it runs, so this module can be imported on a machine that only has the standard library.
The validator (scripts/validate_tool_stream.py) never imports this package.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import logging
import os
import sys
import warnings
from collections.abc import Mapping
from typing import Any, Callable

__all__ = [
    # shared
    "DriverError",
    "typed_json",
    "utf16",
    # SDK drivers
    "PACKAGES",
    "DRIVER_PACKAGE",
    "PROFILE_DRIVERS",
    "available",
    "missing_packages",
    "NotAssembled",
    "openai_chat_stream_helper",
    "openai_chat_state",
    "anthropic_message_stream",
    "openai_responses_stream",
    "openai_agents",
    "openai_agents_chat",
    "google_genai_chunks",
    "cohere_v2_chat_stream",
    "ollama_chat_stream",
    "DRIVERS",
    # adapter drivers
    "ADAPTERS",
    "ADAPTER_DRIVERS",
    "Calls",
    "PROFILES",
    "Unsupported",
    "availability",
    "missing_modules",
    "prefetch",
    "profiles",
    "run",
    "version",
]

HERE = os.path.dirname(os.path.abspath(__file__))


# ======================================================================================
# shared by both layers
# ======================================================================================

def utf16(text: Any) -> Any:
    """A string as UTF-16 code units (the validator's: one comparison in the project)."""
    return _validator().utf16(text)


def typed_json(value: Any) -> Any:
    """A JSON value for comparison, bool kept apart from numbers (the validator's)."""
    return _validator().typed_json(value)


def _validator():
    from adapters import validator

    return validator()


class DriverError(Exception):
    """The SDK or library itself failed on this stream (so the application would execute nothing).

    ``exc_type`` is the library exception's class name, ``driver`` the driver (or adapter) that hit it.
    """

    def __init__(self, driver: str, exc_type: str, message: str, where: str = "") -> None:
        super().__init__(f"{driver}: SDK raised {exc_type}: {message}" + (f" (at {where})" if where else ""))
        self.driver = driver
        self.exc_type = exc_type
        self.message = message
        self.where = where  # innermost SDK frame, e.g. "openai/lib/streaming/chat/_completions.py:405"


_SDK_TOPS = ("litellm", "langchain_core", "langchain_openai", "langchain_anthropic", "langchain_cohere",
             "langchain_ollama", "openai", "anthropic", "agents", "genai", "cohere", "ollama")


def _where(exc: BaseException) -> str:
    """The innermost traceback frame inside a library, as package-relative path:line."""
    import traceback

    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        parts = frame.filename.replace(os.sep, "/").split("/")
        if "site-packages" not in parts and "dist-packages" not in parts:
            continue
        for top in _SDK_TOPS:
            if top in parts:
                rel = "/".join(parts[len(parts) - 1 - parts[::-1].index(top):])
                return f"{rel}:{frame.lineno}" + (f" `{frame.line}`" if frame.line else "")
    return ""


@contextlib.contextmanager
def _quiet():
    """Library chatter (prints, warnings, log records) must not reach the harness output."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)



# ======================================================================================
# SDK drivers: the fixture's stream through the SDKs' own stream accumulators
# ======================================================================================

# distribution name -> importable top-level module
PACKAGES = {"openai": "openai", "anthropic": "anthropic", "openai-agents": "agents", "google-genai": "google.genai",
            "cohere": "cohere", "ollama": "ollama"}

# driver name -> distribution it needs (openai-agents also needs openai, which it depends on)
DRIVER_PACKAGE = {
    "openai_chat_stream_helper": "openai",
    "openai_chat_state": "openai",
    "anthropic_message_stream": "anthropic",
    "openai_responses_stream": "openai",
    "openai_agents": "openai-agents",
    "openai_agents_chat": "openai-agents",
    "google_genai_chunks": "google-genai",
    "cohere_v2_chat_stream": "cohere",
    "ollama_chat_stream": "ollama",
}

# validator profile -> drivers that consume that wire format
PROFILE_DRIVERS = {
    "openai": ("openai_chat_stream_helper", "openai_chat_state", "openai_agents_chat"),
    "mistral": ("openai_chat_stream_helper", "openai_chat_state"),
    "anthropic": ("anthropic_message_stream",),
    "openai-responses": ("openai_responses_stream", "openai_agents"),
    "bedrock": (),
    "gemini": ("google_genai_chunks",),
    "cohere": ("cohere_v2_chat_stream",),
    "ollama": ("ollama_chat_stream",),
}

Call = dict  # {"id": str | None, "name": str | None, "arguments": str | None, "kind": "function" | "custom"}


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

    Shared with speed.py, which times it over events constructed beforehand.
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


def _bedrock_invoke_calls(body: bytes) -> list[Call]:
    from anthropic.lib.bedrock._stream_decoder import AWSEventStreamDecoder

    # AnthropicBedrock's stream: the AWS event-stream decoder (botocore's EventStreamBuffer and
    # the bedrock-runtime ResponseStream shape) turns each chunk frame into an SSE named after
    # its event's "type", then the same Stream and MessageStream as the first-party API.
    payloads = [json.loads(sse.data) for sse in AWSEventStreamDecoder().iter_bytes(iter([body]))]
    return _anthropic_calls(payloads)


def anthropic_bedrock_invoke(body: bytes) -> list[Call]:
    """``AnthropicBedrock().messages.stream(...)``'s ``tool_use`` blocks, from the raw
    InvokeModelWithResponseStream body (needs botocore besides anthropic)."""
    return _run("anthropic_bedrock_invoke", lambda: _bedrock_invoke_calls(body))


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


# --------------------------------------------------------------------------------------
# cohere-python: ClientV2.chat_stream (src/cohere/v2/raw_client.py) over an in-memory SSE body
# --------------------------------------------------------------------------------------

COHERE_MODEL = "command-a-03-2025"
OLLAMA_MODEL = "llama3.2"
_REPLAY_BASE = "http://sdk-replay.invalid"  # never resolved: an httpx MockTransport answers in memory


def cohere_sse_body(events: list) -> bytes:
    """The SSE body Cohere's POST /v2/chat (stream true) sends for these payloads: per payload an
    ``event:`` line equal to its "type" and one ``data:`` line of compact JSON, then ``data: [DONE]``.
    JSON escapes stay ASCII, so a lone surrogate half reaches the client as the escape it was."""
    lines = []
    for payload in events:
        kind = payload.get("type") if isinstance(payload, Mapping) else None
        if isinstance(kind, str) and "\n" not in kind and "\r" not in kind:
            lines.append(f"event: {kind}\n")
        lines.append("data: " + json.dumps(payload, separators=(",", ":")) + "\n\n")
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode("utf-8")


def ollama_ndjson_body(chunks: list) -> bytes:
    """The body of Ollama's POST /api/chat (stream true): one compact JSON object per line."""
    return "".join(json.dumps(chunk, separators=(",", ":")) + "\n" for chunk in chunks).encode("utf-8")


def _memory_transport(httpx_module, body: bytes, content_type: str):
    def serve(request):
        return httpx_module.Response(200, content=body, headers={"content-type": content_type})

    return httpx_module.MockTransport(serve)


def cohere_stream_events(events: list):
    """What ``ClientV2.chat_stream(...)`` yields for these payloads: the SDK's own typed events.

    cohere-python 5.21.1 reads the body with its EventSource (core/http_sse), stops at
    ``data: [DONE]``, ignores the SSE ``event:`` name and parses each data line with
    ``parse_sse_obj(sse, V2ChatStreamResponse)`` (pydantic validation of the union on "type").
    A line that is not JSON, or that fits no event type (unknown "type", a tool-call-start
    whose tool_calls has no "id", an index that is not an integer...), is logged with
    ``logging.warning`` and skipped (v2/raw_client.py:236-247); it never raises.
    """
    import httpx
    import cohere

    client = cohere.ClientV2(api_key="unused", base_url=_REPLAY_BASE,
                             httpx_client=httpx.Client(transport=_memory_transport(
                                 httpx, cohere_sse_body(events), "text/event-stream")))
    return client.chat_stream(model=COHERE_MODEL, messages=[{"role": "user", "content": "-"}])


def _cohere_calls(events: list) -> list[Call]:
    # The SDK assembles nothing. Cohere's streaming tool-use guide (docs.cohere.com, "Streaming for
    # tool use") defines the events: tool-call-start carries the call's id and name (a ToolCallV2,
    # whose function.arguments is "" on the real wire), each tool-call-delta the next piece of that
    # call's arguments, tool-call-end says the call is complete; every event names its call by
    # "index". So: open a call at start (keeping the start's arguments, which the SDK hands over
    # in the same object), append each delta to the call of its index, hand the call over at its
    # end, in order of the ends. A delta or end for an index with no open call fails the way that
    # code fails (KeyError); a call never ended is never handed over; message-end's finish_reason
    # (ERROR included) raises nothing in the SDK and is not consulted here.
    open_calls: dict[Any, Call] = {}
    done: list[Call] = []
    with _quiet():  # the SDK logs every event it skips (logging.warning on the root logger)
        for event in cohere_stream_events(events):
            if event.type == "tool-call-start":
                tool_call = event.delta.message.tool_calls
                function = tool_call.function
                open_calls[event.index] = {"id": tool_call.id,
                                           "name": function.name if function is not None else None,
                                           "arguments": (function.arguments or "") if function is not None else "",
                                           "kind": "function"}
            elif event.type == "tool-call-delta":
                _open_call(open_calls, event)["arguments"] += event.delta.message.tool_calls.function.arguments
            elif event.type == "tool-call-end":
                done.append(_open_call(open_calls, event))
                del open_calls[event.index]
    return done


def _open_call(open_calls: dict, event) -> Call:
    try:
        return open_calls[event.index]
    except KeyError:
        raise KeyError(f"{event.type} for index {event.index!r}, which has no open call") from None


def cohere_v2_chat_stream(events: list) -> list[Call]:
    """The calls an application assembles from ``cohere.ClientV2().chat_stream(...)``'s typed events
    (the SDK itself assembles nothing): by index, complete at tool-call-end, ``arguments`` the
    joined string exactly."""
    return _run("cohere_v2_chat_stream", lambda: _cohere_calls(events))


# --------------------------------------------------------------------------------------
# ollama-python: Client.chat(..., stream=True) (ollama/_client.py) over an in-memory NDJSON body
# --------------------------------------------------------------------------------------

def ollama_stream_responses(chunks: list):
    """What ``ollama.Client().chat(model, messages, stream=True)`` yields: a ChatResponse per line.

    ollama-python 0.6.3 (_client.py:195-199): ``json.loads`` of each line, ``ResponseError`` for a
    line with a truthy "error", else ``ChatResponse(**part)`` (pydantic, extra fields ignored: the
    wire's tool call ``id`` and ``function.index`` are dropped; ``function.arguments`` must be an
    object, a JSON string raises ValidationError).
    """
    import httpx
    import ollama

    client = ollama.Client(host=_REPLAY_BASE,
                           transport=_memory_transport(httpx, ollama_ndjson_body(chunks), "application/x-ndjson"))
    return client.chat(model=OLLAMA_MODEL, messages=[{"role": "user", "content": "-"}], stream=True)


def _ollama_calls(chunks: list) -> list[Call]:
    # Ollama's tool-calling docs (streaming): `tool_calls.extend(chunk.message.tool_calls)` for every
    # chunk that has some. The SDK's Message.ToolCall has no id, so the id is None here.
    tool_calls: list = []
    for response in ollama_stream_responses(chunks):
        if response.message.tool_calls:
            tool_calls.extend(response.message.tool_calls)
    return [{"id": getattr(call, "id", None), "name": call.function.name, "kind": "function",
             "arguments": json.dumps(dict(call.function.arguments), separators=(",", ":"), ensure_ascii=False)}
            for call in tool_calls]


def ollama_chat_stream(chunks: list) -> list[Call]:
    """The calls an application gathers from ``chunk.message.tool_calls`` of ollama-python's
    ``Client.chat(stream=True)``; ``arguments`` compact JSON of the parsed object, ``id`` None (the
    SDK drops the wire's id)."""
    return _run("ollama_chat_stream", lambda: _ollama_calls(chunks))


DRIVERS: dict[str, Callable[[list], list[Call]]] = {
    "openai_chat_stream_helper": openai_chat_stream_helper,
    "openai_chat_state": openai_chat_state,
    "anthropic_message_stream": anthropic_message_stream,
    "openai_responses_stream": openai_responses_stream,
    "openai_agents": openai_agents,
    "openai_agents_chat": openai_agents_chat,
    "google_genai_chunks": google_genai_chunks,
    "cohere_v2_chat_stream": cohere_v2_chat_stream,
    "ollama_chat_stream": ollama_chat_stream,
}


# ======================================================================================
# adapter drivers: what each stream adapter would execute (run.py, speed.py)
# ======================================================================================

ADAPTERS = ("openai-python", "anthropic", "openai-agents", "google-genai", "cohere", "ollama", "litellm",
            "langchain-core", "vercel-ai-sdk")

# adapter -> validator profiles whose wire format it reads
PROFILES: dict[str, tuple[str, ...]] = {
    "openai-python": ("openai", "mistral", "openai-responses"),
    "anthropic": ("anthropic",),
    "openai-agents": ("openai", "openai-responses"),
    "google-genai": ("gemini",),
    "cohere": ("cohere",),
    "ollama": ("ollama",),
    "litellm": ("openai", "mistral", "cohere", "ollama"),
    "langchain-core": ("openai", "mistral", "anthropic", "cohere", "ollama"),
    "vercel-ai-sdk": (),  # read from tests/adapters/vercel/driver.py (SUPPORTED_PROFILES)
}

# adapter -> (distribution, importable module) it needs; the first names the version shown
ADAPTER_PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "openai-python": (("openai", "openai"),),
    "anthropic": (("anthropic", "anthropic"),),
    "openai-agents": (("openai-agents", "agents"), ("openai", "openai")),
    "google-genai": (("google-genai", "google.genai"),),
    "cohere": (("cohere", "cohere"),),
    "ollama": (("ollama", "ollama"),),
    "litellm": (("litellm", "litellm"), ("openai", "openai")),
    "langchain-core": (("langchain-core", "langchain_core"), ("langchain-openai", "langchain_openai"),
                       ("langchain-anthropic", "langchain_anthropic"), ("langchain-cohere", "langchain_cohere"),
                       ("langchain-ollama", "langchain_ollama")),
    "vercel-ai-sdk": (),
}

VERCEL_DRIVER = os.path.join(HERE, "vercel", "driver.py")

# Model names sent in the (never sent) requests; they only select the library's code path.
OPENAI_MODEL = "gpt-4o"
MISTRAL_MODEL = "mistral-large-latest"
ANTHROPIC_MODEL = "claude-sonnet-4-5"
MOCK_BASE = "http://adapter-replay.invalid"  # never resolved: the transport answers in memory


class Unsupported(Exception):
    """This adapter does not read this profile, or hands over no assembled calls to compare."""


class Calls(list):
    """The calls an adapter would execute. ``not_executed`` lists calls the adapter reports but
    keeps apart from the executable ones (LangChain's ``invalid_tool_calls``)."""

    def __init__(self, calls=(), not_executed=()):
        super().__init__(calls)
        self.not_executed = list(not_executed)


def _call(call_id, name, arguments, kind="function", namespace=None) -> dict:
    call = {"id": call_id, "name": name, "arguments": arguments, "kind": kind}
    if namespace is not None:   # a Responses call's namespace (openai-agents routes by it)
        call["namespace"] = namespace
    return call


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------------------
# availability and versions
# --------------------------------------------------------------------------------------

def _vercel_module():
    """tests/adapters/vercel/driver.py as a module (written separately), or None when absent."""
    if not os.path.isfile(VERCEL_DRIVER):
        return None
    module = sys.modules.get("_vts_vercel_driver")
    if module is None:
        spec = importlib.util.spec_from_file_location("_vts_vercel_driver", VERCEL_DRIVER)
        module = importlib.util.module_from_spec(spec)
        sys.modules["_vts_vercel_driver"] = module
        previous, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # write nothing into vercel/
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules["_vts_vercel_driver"]
            raise
        finally:
            sys.dont_write_bytecode = previous
    return module


def profiles(adapter: str) -> tuple[str, ...]:
    """The profiles this adapter reads."""
    if adapter == "vercel-ai-sdk":
        try:
            module = _vercel_module()
        except Exception:
            return ()
        return tuple(getattr(module, "SUPPORTED_PROFILES", ())) if module is not None else ()
    return PROFILES[adapter]


def missing_modules(adapter: str) -> list[str]:
    """Distributions this adapter needs that the current interpreter cannot find (cheap: no import)."""
    missing = []
    for dist, module in ADAPTER_PACKAGES[adapter]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(dist)
    return missing


_AVAILABILITY: dict[str, tuple[bool, str]] = {}


def availability(adapter: str) -> tuple[bool, str]:
    """(True, version text) when the adapter can run here, else (False, reason).

    Imports the packages (once per process), so a broken install shows up here and not as a
    refusal of every fixture."""
    if adapter in _AVAILABILITY:
        return _AVAILABILITY[adapter]
    if adapter not in ADAPTERS:
        raise KeyError(adapter)
    if adapter == "vercel-ai-sdk":
        try:
            module = _vercel_module()
        except Exception as exc:  # the other driver's own import failed
            result = (False, f"tests/adapters/vercel/driver.py does not import: {type(exc).__name__}: {exc}")
        else:
            if module is None:
                result = (False, "tests/adapters/vercel/driver.py is not there")
            elif not hasattr(module, "vercel_calls"):
                result = (False, "tests/adapters/vercel/driver.py has no vercel_calls(profile, stream)")
            elif hasattr(module, "available"):
                ok, info = module.available()
                result = (bool(ok), str(info))
            else:
                result = (True, "unknown version")
        _AVAILABILITY[adapter] = result
        return result
    from importlib.metadata import PackageNotFoundError, version

    versions = []
    for dist, module in ADAPTER_PACKAGES[adapter]:
        try:
            with _quiet():
                _prepare_environment(adapter)
                importlib.import_module(module)
            versions.append(f"{dist} {version(dist)}")
        except (ImportError, PackageNotFoundError) as exc:
            result = (False, f"{dist} not importable ({type(exc).__name__}: {exc}); "
                             f"pip install -r tests/adapters/requirements.txt")
            break
        except Exception as exc:  # a broken install counts as missing
            result = (False, f"{dist} fails to import: {type(exc).__name__}: {exc}")
            break
    else:
        result = (True, ", ".join(versions))
    _AVAILABILITY[adapter] = result
    return result


def version(adapter: str) -> str:
    """The version of the adapter's main package (or the reason it is unavailable)."""
    ok, info = availability(adapter)
    if not ok:
        return "unavailable"
    parts = [part.strip() for part in info.split(",")]
    if adapter == "vercel-ai-sdk":  # "node v20, ai 6.0.333, @ai-sdk/openai ...": the ai package's version
        return next((part.split(" ", 1)[1] for part in parts if part.startswith("ai ")), info)
    return parts[0].split(" ", 1)[1]


# --------------------------------------------------------------------------------------
# plumbing shared by the end-to-end drivers
# --------------------------------------------------------------------------------------

def _prepare_environment(adapter: str) -> None:
    """Settings that keep the libraries off the network (set before their first import)."""
    if adapter == "litellm":
        # litellm otherwise downloads its model cost map at import time
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        os.environ.setdefault("LITELLM_LOG", "CRITICAL")
    if adapter == "langchain-core":
        for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
            os.environ[name] = "false"  # no LangSmith run upload


def _guard(adapter: str, body: Callable[[], Calls]) -> Calls:
    _prepare_environment(adapter)
    try:
        with _quiet():
            return body()
    except (DriverError, Unsupported):
        raise
    except Exception as exc:  # the library failed: the application gets an exception, not calls
        raise DriverError(adapter, type(exc).__name__, str(exc)[:500], _where(exc)) from exc


def _sse(payloads: list, named_events: bool, done: bool) -> bytes:
    """The fixture's payloads as the SSE body a server sends: one ``data:`` line each (plus an
    ``event:`` line equal to the payload's ``type`` for Anthropic), then ``[DONE]`` for chat."""
    lines = []
    for payload in payloads:
        kind = payload.get("type") if isinstance(payload, dict) else None
        if named_events and isinstance(kind, str):
            lines.append(f"event: {kind}\n")
        lines.append("data: " + json.dumps(payload) + "\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode("utf-8", "surrogatepass")


def _mock_client(module, body: bytes):
    """An httpx-compatible client of ``module`` (httpx or httpx2) that answers every request
    with ``body`` as an event stream, in memory."""

    def serve(request):
        return module.Response(200, content=body, headers={"content-type": "text/event-stream"})

    return module.Client(transport=module.MockTransport(serve))


def _function_tools(tool_schemas) -> list[tuple[str, dict]]:
    """(name, JSON Schema) of the declared function tools (object schemas; a string schema is
    a free-text custom tool)."""
    if not isinstance(tool_schemas, dict):
        return []
    return [(name, schema) for name, schema in tool_schemas.items()
            if isinstance(name, str) and isinstance(schema, dict) and schema.get("type") != "string"]


def _custom_tools(tool_schemas) -> list[str]:
    if not isinstance(tool_schemas, dict):
        return []
    return [name for name, schema in tool_schemas.items()
            if isinstance(name, str) and isinstance(schema, dict) and schema.get("type") == "string"]


# --------------------------------------------------------------------------------------
# openai-python, anthropic, openai-agents, google-genai: the SDK drivers above
# --------------------------------------------------------------------------------------

def _from_sdk_driver(driver: Callable[[list], list], stream: list) -> Calls:
    with _quiet():  # e.g. google-genai logs a warning for a chunk with several candidates
        calls = driver(stream)
    return Calls(_call(c["id"], c["name"], c["arguments"], c.get("kind", "function"), c.get("namespace"))
                 for c in calls)


def replay_openai_python(profile, stream, tool_schemas=None, request=None) -> Calls:
    """openai-python: ``create(stream=True)`` chunks fed to ChatCompletionStreamState
    (SDK driver ``openai_chat_state``) for chat, ``responses.stream(...).get_final_response()``
    (SDK driver ``openai_responses_stream``) for Responses."""
    if profile in ("openai", "mistral"):
        return _from_sdk_driver(openai_chat_state, stream)
    if profile == "openai-responses":
        return _from_sdk_driver(openai_responses_stream, stream)
    raise Unsupported(f"openai-python does not read the {profile} profile")


def replay_anthropic(profile, stream, tool_schemas=None, request=None) -> Calls:
    """anthropic-sdk-python: ``messages.stream(...).get_final_message()``'s tool_use blocks
    (SDK driver ``anthropic_message_stream``)."""
    if profile != "anthropic":
        raise Unsupported(f"anthropic does not read the {profile} profile")
    return _from_sdk_driver(anthropic_message_stream, stream)


def replay_openai_agents(profile, stream, tool_schemas=None, request=None) -> Calls:
    """openai-agents: what ``Runner.run_streamed`` executes (SDK driver ``openai_agents``)."""
    if profile == "openai":
        return _from_sdk_driver(openai_agents_chat, stream)
    if profile != "openai-responses":
        raise Unsupported(f"openai-agents does not read the {profile} profile")
    return _from_sdk_driver(openai_agents, stream)


def replay_google_genai(profile, stream, tool_schemas=None, request=None) -> Calls:
    """google-genai: every chunk's ``function_calls`` from ``generate_content_stream``
    (SDK driver ``google_genai_chunks``)."""
    if profile != "gemini":
        raise Unsupported(f"google-genai does not read the {profile} profile")
    try:
        return _from_sdk_driver(google_genai_chunks, stream)
    except NotAssembled as exc:
        raise Unsupported("google-genai hands Vertex partialArgs pieces over unassembled: "
                          "no library reading of the calls to compare") from exc


def replay_cohere(profile, stream, tool_schemas=None, request=None) -> Calls:
    """cohere-python: ``ClientV2.chat_stream(...)``'s typed events assembled by index, each call handed
    over at its tool-call-end (SDK driver ``cohere_v2_chat_stream``)."""
    if profile != "cohere":
        raise Unsupported(f"cohere does not read the {profile} profile")
    return _from_sdk_driver(cohere_v2_chat_stream, stream)


def replay_ollama(profile, stream, tool_schemas=None, request=None) -> Calls:
    """ollama-python: every chunk's ``message.tool_calls`` from ``Client.chat(stream=True)`` (SDK driver
    ``ollama_chat_stream``; the SDK drops the wire id, so ``id`` is None)."""
    if profile != "ollama":
        raise Unsupported(f"ollama does not read the {profile} profile")
    return _from_sdk_driver(ollama_chat_stream, stream)


def _wire_ids(profile: str, stream: list) -> set:
    """The call ids the wire itself carries (cohere: tool-call-start; ollama: message.tool_calls[].id)."""
    ids: set = set()
    for item in stream:
        if not isinstance(item, Mapping):
            continue
        if profile == "cohere":
            tool_calls = ((item.get("delta") or {}).get("message") or {}) if isinstance(item.get("delta"), Mapping) else {}
            tool_calls = tool_calls.get("tool_calls") if isinstance(tool_calls, Mapping) else None
            entries = tool_calls if isinstance(tool_calls, list) else [tool_calls]
        else:
            message = item.get("message")
            entries = message.get("tool_calls") if isinstance(message, Mapping) else None
            entries = entries if isinstance(entries, list) else []
        for entry in entries:
            if isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
                ids.add(entry["id"])
    return ids


def _wire_id_or_none(call_id, wire_ids: set):
    """An id the library made up itself (uuid4: LiteLLM's ollama_chat, langchain-ollama, langchain-cohere)
    is not the wire's: reported as None, so the comparison skips it and the output stays stable."""
    return call_id if call_id in wire_ids else None


# --------------------------------------------------------------------------------------
# litellm: completion(stream=True) -> CustomStreamWrapper chunks -> stream_chunk_builder
# --------------------------------------------------------------------------------------

def _litellm_calls(profile, stream, tool_schemas) -> Calls:
    import litellm as lib

    lib.suppress_debug_info = True
    lib.telemetry = False
    messages = [{"role": "user", "content": "-"}]
    tools: list[dict] = [{"type": "function", "function": {"name": name, "description": name, "parameters": schema}}
                         for name, schema in _function_tools(tool_schemas)]
    if profile == "cohere":
        return _litellm_cohere_calls(lib, stream, messages, tools)
    body = _sse(stream, named_events=False, done=True)
    if profile == "ollama":
        # litellm/main.py _complete_ollama_chat: base_llm_http_handler with OllamaChatConfig's
        # OllamaChatCompletionResponseIterator over litellm's HTTPHandler (the client is passed on)
        import httpx
        from litellm.llms.custom_httpx.http_handler import HTTPHandler

        client = HTTPHandler(client=httpx.Client(transport=_memory_transport(
            httpx, ollama_ndjson_body(stream), "application/x-ndjson")))
        kwargs = {"model": "ollama_chat/" + OLLAMA_MODEL, "client": client, "api_base": MOCK_BASE}
    elif profile == "openai":
        # litellm/llms/openai/openai.py OpenAIChatCompletion.streaming: the openai client's
        # chat.completions.create(stream=True) -> CustomStreamWrapper(custom_llm_provider="openai")
        import httpx2
        from openai import OpenAI

        tools += [{"type": "custom", "custom": {"name": name, "description": name}}
                  for name in _custom_tools(tool_schemas)]
        client = OpenAI(api_key="unused", base_url=MOCK_BASE + "/v1", max_retries=0,
                        http_client=_mock_client(httpx2, body))
        kwargs = {"model": "openai/" + OPENAI_MODEL, "client": client}
    else:
        # litellm/main.py _complete_mistral: base_llm_http_handler with MistralConfig's stream
        # iterator over litellm's own HTTPHandler (plain httpx)
        import httpx
        from litellm.llms.custom_httpx.http_handler import HTTPHandler

        client = HTTPHandler(client=_mock_client(httpx, body))
        kwargs = {"model": "mistral/" + MISTRAL_MODEL, "client": client, "api_key": "unused",
                  "api_base": MOCK_BASE + "/v1"}
    if tools:
        kwargs["tools"] = tools
    response = lib.completion(messages=messages, stream=True, max_retries=0, **kwargs)
    return _litellm_final_calls(lib, response, messages, _wire_ids(profile, stream) if profile == "ollama" else None)


def _litellm_final_calls(lib, response, messages, wire_ids=None) -> Calls:
    # The documented pattern: keep every chunk the wrapper yields, then rebuild the message.
    chunks = list(response)
    final = lib.stream_chunk_builder(chunks, messages=messages)
    if final is None or not final.choices:
        return Calls()
    calls = Calls()
    for tool_call in final.choices[0].message.tool_calls or ():
        custom = getattr(tool_call, "custom", None)
        if custom is not None and getattr(tool_call, "function", None) is None:
            calls.append(_call(tool_call.id, custom.name, custom.input, "custom"))
        else:
            call_id = tool_call.id if wire_ids is None else _wire_id_or_none(tool_call.id, wire_ids)
            calls.append(_call(call_id, tool_call.function.name, tool_call.function.arguments))
    return calls


def _litellm_cohere_calls(lib, stream, messages, tools) -> Calls:
    # litellm/main.py _complete_cohere_chat (route "v2" for any model name without "v1/"): the
    # base_llm_http_handler with CohereV2ChatConfig, whose stream iterator is
    # CohereV2ModelResponseIterator. It passes no `client` on, so the stream is read through
    # get_httpx_client(); that one function is swapped for the in-memory client during the call.
    import httpx
    import litellm.llms.custom_httpx.llm_http_handler as handler_module
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    client = HTTPHandler(client=httpx.Client(transport=_memory_transport(
        httpx, cohere_sse_body(stream), "text/event-stream")))
    original = handler_module.get_httpx_client
    handler_module.get_httpx_client = lambda params=None: client
    try:
        kwargs = {"tools": tools} if tools else {}
        response = lib.completion(model="cohere_chat/" + COHERE_MODEL, messages=messages, stream=True,
                                  max_retries=0, api_key="unused", api_base=MOCK_BASE + "/v2/chat", **kwargs)
        return _litellm_final_calls(lib, response, messages)
    finally:
        handler_module.get_httpx_client = original


def replay_litellm(profile, stream, tool_schemas=None, request=None) -> Calls:
    """litellm: ``litellm.completion(stream=True)`` over the fixture's body, every chunk the
    CustomStreamWrapper yields kept, then ``litellm.stream_chunk_builder(chunks)`` and the final
    message's ``tool_calls`` (choice 0). Providers: openai, mistral, ``cohere_chat`` (Cohere v2:
    litellm 1.110.2 json.loads each raw SSE line, ``event:`` and ``data:`` lines included, so it
    raises on the real wire before any call: MidStreamFallbackError), ``ollama_chat`` (a uuid4 that
    replaces the wire id is reported as None)."""
    if profile not in PROFILES["litellm"]:
        raise Unsupported(f"litellm driver does not read the {profile} profile")
    return _guard("litellm", lambda: _litellm_calls(profile, stream, tool_schemas))


# --------------------------------------------------------------------------------------
# langchain-core: ChatOpenAI / ChatAnthropic .stream(), chunks summed with +
# --------------------------------------------------------------------------------------

def _langchain_calls(profile, stream, tool_schemas) -> Calls:
    import httpx2

    wire_ids = None
    if profile == "cohere":
        import httpx
        import cohere as cohere_sdk
        from langchain_cohere import ChatCohere

        model = ChatCohere(model=COHERE_MODEL, cohere_api_key="unused", base_url=MOCK_BASE)
        # ChatCohere.validate_environment builds cohere.Client(...) with no way to pass a transport;
        # replace it with one whose httpx client serves the fixture (ChatCohere._stream then calls
        # its .v2.chat_stream, the rest is the library's own).
        model.__dict__["client"] = cohere_sdk.Client(
            api_key="unused", base_url=MOCK_BASE,
            httpx_client=httpx.Client(transport=_memory_transport(httpx, cohere_sse_body(stream), "text/event-stream")))
        # langchain-cohere's _convert_to_cohere_tool_v2 takes a JSON-schema dict with title and description
        tools = [dict(schema, title=name, description=schema.get("description") or name,
                      properties=schema.get("properties") or {})
                 for name, schema in _function_tools(tool_schemas)]
        wire_ids = _wire_ids(profile, stream)
    elif profile == "ollama":
        import httpx
        from langchain_ollama import ChatOllama

        # ChatOllama hands client_kwargs to ollama.Client, which hands them to httpx.Client
        model = ChatOllama(model=OLLAMA_MODEL, base_url=MOCK_BASE, client_kwargs={
            "transport": _memory_transport(httpx, ollama_ndjson_body(stream), "application/x-ndjson")})
        tools = [{"type": "function", "function": {"name": name, "description": name, "parameters": schema}}
                 for name, schema in _function_tools(tool_schemas)]
        wire_ids = _wire_ids(profile, stream)
    elif profile == "anthropic":
        import anthropic as anthropic_sdk
        from langchain_anthropic import ChatAnthropic

        body = _sse(stream, named_events=True, done=False)
        model = ChatAnthropic(model=ANTHROPIC_MODEL, api_key="unused", max_retries=0)
        # ChatAnthropic._client is a cached_property building anthropic.Client; give it one whose
        # transport serves the fixture (the rest of the pipeline is the library's own).
        model.__dict__["_client"] = anthropic_sdk.Client(api_key="unused", base_url=MOCK_BASE, max_retries=0,
                                                         http_client=_mock_client(httpx2, body))
        tools = [{"name": name, "description": name, "input_schema": schema}
                 for name, schema in _function_tools(tool_schemas)]
    else:
        from langchain_openai import ChatOpenAI

        body = _sse(stream, named_events=False, done=True)
        model = ChatOpenAI(model=OPENAI_MODEL, api_key="unused", base_url=MOCK_BASE + "/v1", max_retries=0,
                           http_client=_mock_client(httpx2, body))
        tools = [{"type": "function", "function": {"name": name, "description": name, "parameters": schema}}
                 for name, schema in _function_tools(tool_schemas)]
    runnable = model.bind_tools(tools) if tools else model
    # The documented accumulation: add up the AIMessageChunks that .stream() yields.
    full = None
    for chunk in runnable.stream("-"):
        full = chunk if full is None else full + chunk
    if full is None:
        return Calls()
    def ident(call_id):
        return call_id if wire_ids is None else _wire_id_or_none(call_id, wire_ids)

    calls = [_call(ident(tc.get("id")), tc.get("name"), _compact(tc.get("args"))) for tc in full.tool_calls]
    invalid = [{"id": ident(tc.get("id")), "name": tc.get("name"), "arguments": tc.get("args"), "error": tc.get("error")}
               for tc in full.invalid_tool_calls]
    return Calls(calls, invalid)


def replay_langchain_core(profile, stream, tool_schemas=None, request=None) -> Calls:
    """langchain-core message chunks as langchain-openai (openai, mistral), langchain-anthropic
    (anthropic), langchain-cohere (cohere: ChatCohere over ClientV2.chat_stream) and langchain-ollama
    (ollama: ChatOllama over ollama.Client.chat) build them from the stream, summed with ``+``:
    ``.tool_calls`` (arguments parsed by langchain-core's parse_partial_json) are executed,
    ``.invalid_tool_calls`` are not (reported in ``Calls.not_executed``). For cohere and ollama an
    id that is not the wire's (a uuid4 the integration made up) is reported as None."""
    if profile not in PROFILES["langchain-core"]:
        raise Unsupported(f"langchain-core driver does not read the {profile} profile")
    return _guard("langchain-core", lambda: _langchain_calls(profile, stream, tool_schemas))


# --------------------------------------------------------------------------------------
# Vercel AI SDK: tests/adapters/vercel/driver.py (written separately; Node.js)
# --------------------------------------------------------------------------------------

def replay_vercel_ai_sdk(profile, stream, tool_schemas=None, request=None) -> Calls:
    """The Vercel AI SDK's ``streamText``, through ``vercel_calls`` of tests/adapters/vercel/driver.py."""
    module = _vercel_module()
    if module is None or not hasattr(module, "vercel_calls"):
        raise Unsupported("tests/adapters/vercel/driver.py is not there")
    supported = getattr(module, "SUPPORTED_PROFILES", None)
    if supported is not None and profile not in supported:
        raise Unsupported(f"the Vercel AI SDK driver does not read the {profile} profile")
    accepted = inspect.signature(module.vercel_calls).parameters
    kwargs = {}
    if "tool_schemas" in accepted:
        kwargs["tool_schemas"] = tool_schemas if isinstance(tool_schemas, dict) else {}
    if "request" in accepted and request is not None:
        kwargs["request"] = request
    try:
        calls = module.vercel_calls(profile, stream, **kwargs)
    except NotImplementedError as exc:
        raise Unsupported(str(exc)) from exc
    except Exception as exc:
        raise DriverError("vercel-ai-sdk", type(exc).__name__, str(exc)[:500]) from exc
    return Calls(_call(c.get("id"), c.get("name"), c.get("arguments"), c.get("kind", "function")) for c in calls)


PREFETCHING = frozenset({"vercel-ai-sdk"})   # adapters that replay many turns at once (see prefetch)


def prefetch(adapter: str, turns: list[tuple]) -> int:
    """Let an adapter replay many turns ahead of run() (profile, stream, tool_schemas, request);
    only the Vercel AI SDK driver does (one node process for all). Returns how many it took;
    a failure takes none (run() then replays each turn on its own)."""
    if adapter not in PREFETCHING:
        return 0
    try:
        module = _vercel_module()
        if module is None or not hasattr(module, "prefetch"):
            return 0
        supported = getattr(module, "SUPPORTED_PROFILES", ())
        return module.prefetch([(profile, stream, tool_schemas if isinstance(tool_schemas, dict) else {}, request)
                                for profile, stream, tool_schemas, request in turns if profile in supported])
    except Exception:
        return 0


ADAPTER_DRIVERS: dict[str, Callable[..., Calls]] = {
    "openai-python": replay_openai_python,
    "anthropic": replay_anthropic,
    "openai-agents": replay_openai_agents,
    "google-genai": replay_google_genai,
    "cohere": replay_cohere,
    "ollama": replay_ollama,
    "litellm": replay_litellm,
    "langchain-core": replay_langchain_core,
    "vercel-ai-sdk": replay_vercel_ai_sdk,
}


def run(adapter: str, profile: str, stream: list, tool_schemas=None, request=None) -> Calls:
    """The calls ``adapter`` would execute for this turn (raises DriverError / Unsupported)."""
    if profile not in profiles(adapter):
        raise Unsupported(f"{adapter} does not read the {profile} profile")
    return ADAPTER_DRIVERS[adapter](profile, stream, tool_schemas, request)
