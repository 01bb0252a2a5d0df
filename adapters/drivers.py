"""One driver per stream adapter: the tool calls that adapter would hand to execution.

Every driver has the signature ``driver(profile, stream, tool_schemas=None, request=None)``
and returns a :class:`Calls` list of ``{"id", "name", "arguments"}`` dicts (``arguments`` a
string, compact JSON of the parsed value where the adapter only keeps a parsed object;
``"kind": "custom"`` marks a free-text custom tool call) in the order the adapter hands
them over. It raises

* :class:`DriverError` (the class of ``sdkdiff/drivers.py``) when the library itself fails
  on the stream: the application gets an exception, so nothing runs;
* :class:`Unsupported` when the adapter does not read this profile's wire format, or does
  not assemble the calls itself (google-genai hands Vertex ``partialArgs`` pieces over as
  they come).

Drivers that ``sdkdiff/drivers.py`` already has (openai-python, anthropic, openai-agents,
google-genai) are imported from there, not repeated. The others run the library's own
streaming code end to end: the fixture's payloads are served as an SSE body by an
in-memory HTTP transport (``MockTransport``: nothing leaves the process) to the library's
real client, and the calls are read where an application reads them.

Nothing here imports a third-party package at import time: each driver imports what it
needs when it runs, so this module can be imported with the standard library only. The
validator (scripts/validate_tool_stream.py) never imports this package.
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
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from sdkdiff import drivers as sdk  # noqa: E402  (standard library only at import time)

__all__ = [
    "ADAPTERS",
    "Calls",
    "DriverError",
    "PROFILES",
    "Unsupported",
    "availability",
    "run",
    "openai_python",
    "anthropic",
    "openai_agents",
    "google_genai",
    "litellm",
    "langchain_core",
    "vercel_ai_sdk",
]

DriverError = sdk.DriverError

ADAPTERS = ("openai-python", "anthropic", "openai-agents", "google-genai", "litellm", "langchain-core",
            "vercel-ai-sdk")

# adapter -> validator profiles whose wire format it reads
PROFILES: dict[str, tuple[str, ...]] = {
    "openai-python": ("openai", "mistral", "openai-responses"),
    "anthropic": ("anthropic",),
    "openai-agents": ("openai", "openai-responses"),
    "google-genai": ("gemini",),
    "litellm": ("openai", "mistral"),
    "langchain-core": ("openai", "mistral", "anthropic"),
    "vercel-ai-sdk": (),  # read from adapters/vercel/driver.py (SUPPORTED_PROFILES)
}

# adapter -> (distribution, importable module) it needs; the first names the version shown
PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "openai-python": (("openai", "openai"),),
    "anthropic": (("anthropic", "anthropic"),),
    "openai-agents": (("openai-agents", "agents"), ("openai", "openai")),
    "google-genai": (("google-genai", "google.genai"),),
    "litellm": (("litellm", "litellm"), ("openai", "openai")),
    "langchain-core": (("langchain-core", "langchain_core"), ("langchain-openai", "langchain_openai"),
                       ("langchain-anthropic", "langchain_anthropic")),
    "vercel-ai-sdk": (),
}

VERCEL_DRIVER = os.path.join(ROOT, "adapters", "vercel", "driver.py")

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
    """adapters/vercel/driver.py as a module (written separately), or None when absent."""
    if not os.path.isfile(VERCEL_DRIVER):
        return None
    module = sys.modules.get("_vts_vercel_driver")
    if module is None:
        spec = importlib.util.spec_from_file_location("_vts_vercel_driver", VERCEL_DRIVER)
        module = importlib.util.module_from_spec(spec)
        sys.modules["_vts_vercel_driver"] = module
        previous, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # write nothing into adapters/vercel/
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
    for dist, module in PACKAGES[adapter]:
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
            result = (False, f"adapters/vercel/driver.py does not import: {type(exc).__name__}: {exc}")
        else:
            if module is None:
                result = (False, "adapters/vercel/driver.py is not there")
            elif not hasattr(module, "vercel_calls"):
                result = (False, "adapters/vercel/driver.py has no vercel_calls(profile, stream)")
            elif hasattr(module, "available"):
                ok, info = module.available()
                result = (bool(ok), str(info))
            else:
                result = (True, "unknown version")
        _AVAILABILITY[adapter] = result
        return result
    from importlib.metadata import PackageNotFoundError, version

    versions = []
    for dist, module in PACKAGES[adapter]:
        try:
            with _quiet():
                _prepare_environment(adapter)
                importlib.import_module(module)
            versions.append(f"{dist} {version(dist)}")
        except (ImportError, PackageNotFoundError) as exc:
            result = (False, f"{dist} not importable ({type(exc).__name__}: {exc}); "
                             f"pip install -r adapters/requirements.txt")
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


_SDK_TOPS = ("litellm", "langchain_core", "langchain_openai", "langchain_anthropic", "openai", "anthropic",
             "agents", "genai")


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
# openai-python, anthropic, openai-agents, google-genai: sdkdiff's drivers
# --------------------------------------------------------------------------------------

def _from_sdkdiff(driver: Callable[[list], list], stream: list) -> Calls:
    with _quiet():  # e.g. google-genai logs a warning for a chunk with several candidates
        calls = driver(stream)
    return Calls(_call(c["id"], c["name"], c["arguments"], c.get("kind", "function"), c.get("namespace"))
                 for c in calls)


def openai_python(profile, stream, tool_schemas=None, request=None) -> Calls:
    """openai-python: ``create(stream=True)`` chunks fed to ChatCompletionStreamState
    (sdkdiff ``openai_chat_state``) for chat, ``responses.stream(...).get_final_response()``
    (sdkdiff ``openai_responses_stream``) for Responses."""
    if profile in ("openai", "mistral"):
        return _from_sdkdiff(sdk.openai_chat_state, stream)
    if profile == "openai-responses":
        return _from_sdkdiff(sdk.openai_responses_stream, stream)
    raise Unsupported(f"openai-python does not read the {profile} profile")


def anthropic(profile, stream, tool_schemas=None, request=None) -> Calls:
    """anthropic-sdk-python: ``messages.stream(...).get_final_message()``'s tool_use blocks
    (sdkdiff ``anthropic_message_stream``)."""
    if profile != "anthropic":
        raise Unsupported(f"anthropic does not read the {profile} profile")
    return _from_sdkdiff(sdk.anthropic_message_stream, stream)


def openai_agents(profile, stream, tool_schemas=None, request=None) -> Calls:
    """openai-agents: what ``Runner.run_streamed`` executes (sdkdiff ``openai_agents``)."""
    if profile == "openai":
        return _from_sdkdiff(sdk.openai_agents_chat, stream)
    if profile != "openai-responses":
        raise Unsupported(f"openai-agents does not read the {profile} profile")
    return _from_sdkdiff(sdk.openai_agents, stream)


def google_genai(profile, stream, tool_schemas=None, request=None) -> Calls:
    """google-genai: every chunk's ``function_calls`` from ``generate_content_stream``
    (sdkdiff ``google_genai_chunks``)."""
    if profile != "gemini":
        raise Unsupported(f"google-genai does not read the {profile} profile")
    try:
        return _from_sdkdiff(sdk.google_genai_chunks, stream)
    except sdk.NotAssembled as exc:
        raise Unsupported("google-genai hands Vertex partialArgs pieces over unassembled: "
                          "no library reading of the calls to compare") from exc


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
    body = _sse(stream, named_events=False, done=True)
    if profile == "openai":
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
            calls.append(_call(tool_call.id, tool_call.function.name, tool_call.function.arguments))
    return calls


def litellm(profile, stream, tool_schemas=None, request=None) -> Calls:
    """litellm: ``litellm.completion(stream=True)`` over the fixture's SSE body, every chunk the
    CustomStreamWrapper yields kept, then ``litellm.stream_chunk_builder(chunks)`` and the final
    message's ``tool_calls`` (choice 0)."""
    if profile not in PROFILES["litellm"]:
        raise Unsupported(f"litellm driver does not read the {profile} profile")
    return _guard("litellm", lambda: _litellm_calls(profile, stream, tool_schemas))


# --------------------------------------------------------------------------------------
# langchain-core: ChatOpenAI / ChatAnthropic .stream(), chunks summed with +
# --------------------------------------------------------------------------------------

def _langchain_calls(profile, stream, tool_schemas) -> Calls:
    import httpx2

    if profile == "anthropic":
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
    calls = [_call(tc.get("id"), tc.get("name"), _compact(tc.get("args"))) for tc in full.tool_calls]
    invalid = [{"id": tc.get("id"), "name": tc.get("name"), "arguments": tc.get("args"), "error": tc.get("error")}
               for tc in full.invalid_tool_calls]
    return Calls(calls, invalid)


def langchain_core(profile, stream, tool_schemas=None, request=None) -> Calls:
    """langchain-core message chunks as langchain-openai (openai, mistral) and
    langchain-anthropic (anthropic) build them from the stream, summed with ``+``:
    ``.tool_calls`` (arguments parsed by langchain-core's parse_partial_json) are executed,
    ``.invalid_tool_calls`` are not (reported in ``Calls.not_executed``)."""
    if profile not in PROFILES["langchain-core"]:
        raise Unsupported(f"langchain-core driver does not read the {profile} profile")
    return _guard("langchain-core", lambda: _langchain_calls(profile, stream, tool_schemas))


# --------------------------------------------------------------------------------------
# Vercel AI SDK: adapters/vercel/driver.py (written separately; Node.js)
# --------------------------------------------------------------------------------------

def vercel_ai_sdk(profile, stream, tool_schemas=None, request=None) -> Calls:
    """The Vercel AI SDK's ``streamText``, through ``vercel_calls`` of adapters/vercel/driver.py."""
    module = _vercel_module()
    if module is None or not hasattr(module, "vercel_calls"):
        raise Unsupported("adapters/vercel/driver.py is not there")
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


DRIVERS: dict[str, Callable[..., Calls]] = {
    "openai-python": openai_python,
    "anthropic": anthropic,
    "openai-agents": openai_agents,
    "google-genai": google_genai,
    "litellm": litellm,
    "langchain-core": langchain_core,
    "vercel-ai-sdk": vercel_ai_sdk,
}


def run(adapter: str, profile: str, stream: list, tool_schemas=None, request=None) -> Calls:
    """The calls ``adapter`` would execute for this turn (raises DriverError / Unsupported)."""
    if profile not in profiles(adapter):
        raise Unsupported(f"{adapter} does not read the {profile} profile")
    return DRIVERS[adapter](profile, stream, tool_schemas, request)
