// Replay raw wire payloads of one streamed assistant turn through the Vercel AI SDK
// (`streamText`) and report the tool calls it would hand to execution.
//
// stdin:  JSON list of jobs [{"profile", "tool_schemas", "stream": [payload, ...],
//         "request"?: {...}, "model"?: "...", "timeout_ms"?: n, "hold_open"?: bool,
//         "time_runs"?: n}]
// stdout: one JSON line per job, in job order:
//         {"calls": [{"id", "name", "input", "invalid", "error"?}], "errors": [...],
//          "finish": ..., "raw_finish": ..., "executable": bool, "requests": n}
//         or {"error": "..."} when the job cannot be replayed.
// time_runs (for tests/adapters/speed.py; an integer, clamped to 1-100): the SSE body is built once,
//         untimed, then streamText reads it that many times in this process (fewer when
//         timeout_ms runs out: a run that would pass it is not started, one cut by it is
//         dropped); "timings_ms" lists each completed run's wall time, the result is the last
//         completed run's.
//
// Safety: tools are declared with `tool({inputSchema: jsonSchema(schema)})` and no
// `execute`, so the SDK runs nothing; the provider gets a custom `fetch` that serves the
// SSE body built from the payloads, and every other way out (global fetch, sockets, DNS)
// throws.  Nothing here touches the network; the only files read are the installed packages.
import net from 'node:net';
import tls from 'node:tls';
import dns from 'node:dns';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

function blocked(what) {
  return function () {
    throw new Error(`vercel driver: network access blocked (${what})`);
  };
}
globalThis.fetch = async () => { throw new Error('vercel driver: network access blocked (global fetch)'); };
net.Socket.prototype.connect = blocked('net.Socket.connect');
net.connect = net.createConnection = blocked('net.connect');
tls.connect = blocked('tls.connect');
dns.lookup = blocked('dns.lookup');
dns.promises.lookup = blocked('dns.promises.lookup');

const { streamText, jsonSchema, tool } = await import('ai');
const { createOpenAI } = await import('@ai-sdk/openai');
const { createAnthropic } = await import('@ai-sdk/anthropic');
const { createGoogleGenerativeAI } = await import('@ai-sdk/google');
const { createCohere } = await import('@ai-sdk/cohere');

const require = createRequire(import.meta.url);
const PACKAGES = ['ai', '@ai-sdk/openai', '@ai-sdk/anthropic', '@ai-sdk/google', '@ai-sdk/cohere'];
export function versions() {
  const out = {};
  for (const name of PACKAGES) out[name] = require(`${name}/package.json`).version;
  return out;
}

const DEFAULT_TIMEOUT_MS = 10000;
const SSE_HEADERS = { 'content-type': 'text/event-stream' };

// profile -> how the wire is framed and which provider code path reads it
const PROFILES = {
  openai: { frame: 'data', done: true, model: 'gpt-4o' },
  'openai-responses': { frame: 'event', done: false, model: 'gpt-4o' },
  anthropic: { frame: 'event', done: false, model: 'claude-sonnet-4-20250514' },
  gemini: { frame: 'data', done: false, crlf: true, model: 'gemini-2.5-flash' },
  // Cohere v2 chat: `event: <type>` + `data: <json>` per event, then `data: [DONE]`
  cohere: { frame: 'event', done: true, model: 'command-a-03-2025' },
};
const UNSUPPORTED = {
  bedrock: 'unsupported profile',
  // Mistral sends tool calls without `index`; @ai-sdk/openai's chat chunk schema requires
  // it, so a Vercel application talking to Mistral uses @ai-sdk/mistral, whose own
  // accumulator (by id, then index, then the latest call) is not mirrored here.
  mistral: 'unsupported profile: mistral needs @ai-sdk/mistral, which this driver does not mirror',
  // The AI SDK has no first-party Ollama provider (only community packages such as
  // ollama-ai-provider, which this driver does not mirror).
  ollama: 'unsupported profile: the Vercel AI SDK has no first-party Ollama provider',
};

function sseBody(spec, stream) {
  const sep = spec.crlf ? '\r\n' : '\n';
  let body = '';
  for (const payload of stream) {
    if (spec.frame === 'event' && payload && typeof payload === 'object' && typeof payload.type === 'string'
        && !/[\r\n]/.test(payload.type)) {
      body += `event: ${payload.type}${sep}`;
    }
    body += `data: ${JSON.stringify(payload)}${sep}${sep}`;
  }
  if (spec.done) body += `data: [DONE]${sep}${sep}`;
  return body;
}

function isPlainObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function declaredTools(toolSchemas, names) {
  const tools = {};
  for (const [name, schema] of Object.entries(toolSchemas)) {
    if (names != null && !names.includes(name)) continue;
    // No `execute`: the SDK hands the call back instead of running it.
    tools[name] = tool({ inputSchema: jsonSchema(isPlainObject(schema) ? schema : {}) });
  }
  return tools;
}

function nameOf(choice) {
  // {"type":"function","function":{"name"}} (openai), {"type":"tool","name"} (anthropic),
  // {"tool":{"name"}} (bedrock)
  if (isPlainObject(choice.function) && typeof choice.function.name === 'string') return choice.function.name;
  if (typeof choice.name === 'string') return choice.name;
  if (isPlainObject(choice.tool) && typeof choice.tool.name === 'string') return choice.tool.name;
  return undefined;
}

// Map the envelope's optional request context onto what the application would have
// passed to streamText: the declared tools, toolChoice, activeTools and the parallel
// tool call switch.  Anything that has no streamText equivalent is listed in `notes`.
function requestSettings(profile, request) {
  const settings = { toolNames: undefined, toolChoice: undefined, activeTools: undefined, providerOptions: undefined, notes: [] };
  if (!isPlainObject(request)) return settings;
  if (Array.isArray(request.tools)) settings.toolNames = request.tools.filter((n) => typeof n === 'string');
  const choice = request.tool_choice;
  if (typeof choice === 'string') {
    const word = { none: 'none', auto: 'auto', required: 'required', any: 'required' }[choice.toLowerCase()];
    if (word) settings.toolChoice = word;
    else settings.notes.push(`tool_choice ${JSON.stringify(choice)} not mapped`);
  } else if (isPlainObject(choice)) {
    const kind = typeof choice.type === 'string' ? choice.type : typeof choice.mode === 'string' ? choice.mode.toLowerCase() : undefined;
    const allowed = Array.isArray(choice.allowedFunctionNames) ? choice.allowedFunctionNames
      : isPlainObject(choice.allowed_tools) && Array.isArray(choice.allowed_tools.tools)
        ? choice.allowed_tools.tools.map((t) => (isPlainObject(t) ? nameOf(t) : undefined)).filter(Boolean) : undefined;
    if (kind === 'none') settings.toolChoice = 'none';
    else if (kind === 'auto') settings.toolChoice = 'auto';
    else if (kind === 'any' || kind === 'required') settings.toolChoice = 'required';
    else if (kind === 'allowed_tools') settings.toolChoice = choice.allowed_tools?.mode === 'required' ? 'required' : 'auto';
    else if ((kind === 'function' || kind === 'tool' || kind === undefined) && nameOf(choice) != null) {
      settings.toolChoice = { type: 'tool', toolName: nameOf(choice) };
    } else settings.notes.push(`tool_choice ${JSON.stringify(choice)} not mapped`);
    if (allowed != null) settings.activeTools = allowed.filter((n) => typeof n === 'string');
    if (choice.disable_parallel_tool_use === true) {
      settings.providerOptions = { anthropic: { disableParallelToolUse: true } };
    }
  }
  if (request.parallel_tool_calls === false) {
    settings.providerOptions = { ...(settings.providerOptions ?? {}), openai: { parallelToolCalls: false } };
  }
  return settings;
}

function modelFor(profile, fetch, modelId) {
  const common = { apiKey: 'replay', fetch };
  switch (profile) {
    case 'openai':
      return createOpenAI(common).chat(modelId);
    case 'openai-responses':
      return createOpenAI(common).responses(modelId);
    case 'anthropic':
      return createAnthropic(common)(modelId);
    case 'gemini':
      return createGoogleGenerativeAI(common)(modelId);
    case 'cohere':
      return createCohere(common)(modelId);
    default:
      throw new Error(`unknown profile: ${profile}`);
  }
}

function describe(error) {
  if (error == null) return String(error);
  const name = error.name || error.constructor?.name || 'Error';
  const message = error.message != null ? String(error.message) : String(error);
  return `${name}: ${message}`.slice(0, 500);
}

function jsonSafe(value) {
  // tool inputs are JSON.parse results or raw strings; undefined becomes null
  return value === undefined ? null : value;
}

async function replay(job, signal, body) {
  const spec = PROFILES[job.profile];
  let requests = 0;
  // Serve the recorded body to the first request only.  Any later request (Gemini
  // re-requests after a CONTINUATION finish) gets an empty 200 event stream.
  // `hold_open` keeps the first body open after its last payload, like a stalled
  // connection (used to test the job timeout).
  const fetch = async () => {
    requests += 1;
    const text = requests === 1 ? body : '';
    if (job.hold_open === true && requests === 1) {
      const bytes = new TextEncoder().encode(text);
      const stalled = new ReadableStream({ start(controller) { controller.enqueue(bytes); } });
      return new Response(stalled, { status: 200, headers: SSE_HEADERS });
    }
    return new Response(text, { status: 200, headers: SSE_HEADERS });
  };
  const settings = requestSettings(job.profile, job.request);
  const model = modelFor(job.profile, fetch, typeof job.model === 'string' ? job.model : spec.model);
  const tools = declaredTools(job.tool_schemas, settings.toolNames);
  const out = { calls: [], errors: [], finish: null, raw_finish: null, executable: false, requests: 0 };
  if (settings.notes.length) out.notes = settings.notes;
  const result = streamText({
    model,
    prompt: 'replay',
    tools,
    ...(settings.toolChoice != null ? { toolChoice: settings.toolChoice } : {}),
    ...(settings.activeTools != null ? { activeTools: settings.activeTools } : {}),
    ...(settings.providerOptions != null ? { providerOptions: settings.providerOptions } : {}),
    maxRetries: 0,
    abortSignal: signal,
    onError: () => {},
  });
  try {
    for await (const part of result.fullStream) {
      collect(out, part);
    }
  } catch (error) {
    // The SDK's stream itself failed (e.g. InvalidResponseDataError from the tool call
    // tracker): the application's loop throws, no finish arrives, so nothing executes.
    if (signal.aborted) throw error;
    out.errors.push(`thrown: ${describe(error)}`);
    out.thrown = true;
  }
  out.requests = requests;
  // streamText runs a tool's `execute` only after the step's finish, and only when the
  // finish reason is "stop" or "tool-calls" (isToolExecutionAllowedFinishReason).
  out.executable = !out.thrown && (out.finish === 'stop' || out.finish === 'tool-calls');
  return out;
}

function collect(out, part) {
  switch (part.type) {
    case 'tool-call':
      if (!part.providerExecuted) {
        const call = { id: part.toolCallId ?? null, name: part.toolName ?? null, input: jsonSafe(part.input), invalid: !!part.invalid };
        if (part.invalid && part.error != null) call.error = describe(part.error);
        out.calls.push(call);
      }
      break;
    case 'error':
      out.errors.push(describe(part.error));
      break;
    case 'abort':
      out.errors.push('aborted');
      break;
    case 'finish':
      out.finish = part.finishReason ?? null;
      out.raw_finish = part.rawFinishReason ?? null;
      break;
    default:
      break;
  }
}

function checkJob(job) {
  if (!isPlainObject(job)) return 'job is not an object';
  if (typeof job.profile !== 'string') return 'job has no profile';
  if (UNSUPPORTED[job.profile]) return UNSUPPORTED[job.profile];
  if (!PROFILES[job.profile]) return `unknown profile: ${job.profile}`;
  if (!isPlainObject(job.tool_schemas)) return 'tool_schemas is not an object';
  if (!Array.isArray(job.stream)) return 'stream is not a list';
  return null;
}

export async function runJob(job, defaultTimeout = DEFAULT_TIMEOUT_MS) {
  const problem = checkJob(job);
  if (problem) return { error: problem };
  const timeoutMs = Number.isFinite(job.timeout_ms) && job.timeout_ms > 0 ? job.timeout_ms : defaultTimeout;
  const controller = new AbortController();
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error('timeout'));
      // give the aborted stream a moment to unwind, then give up on it
      setTimeout(() => resolve({ error: `timeout after ${timeoutMs} ms` }), 500);
    }, timeoutMs);
  });
  try {
    const body = sseBody(PROFILES[job.profile], job.stream);
    const runs = Number.isInteger(job.time_runs) ? Math.min(Math.max(job.time_runs, 1), 100) : 0;
    if (runs === 0) {
      const out = await Promise.race([replay(job, controller.signal, body), timeout]);
      if (controller.signal.aborted && !out.error) return { error: `timeout after ${timeoutMs} ms` };
      return out;
    }
    const timings = [];
    const began = performance.now();
    let out;
    while (timings.length < runs) {
      const start = performance.now();
      const run = await Promise.race([replay(job, controller.signal, body), timeout]);
      if (controller.signal.aborted || run.error) {
        if (timings.length) break;  // a later run ran out of time: the runs already timed stand
        return run.error ? run : { error: `timeout after ${timeoutMs} ms` };
      }
      out = run;
      const took = performance.now() - start;
      timings.push(took);
      if (performance.now() - began + took > timeoutMs) break;  // the next run would pass the limit
    }
    out.timings_ms = timings;
    return out;
  } catch (error) {
    return { error: describe(error) };
  } finally {
    clearTimeout(timer);
  }
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function write(line) {
  return new Promise((resolve) => process.stdout.write(line + '\n', resolve));
}

async function main() {
  const arg = process.argv[2];
  if (arg === '--versions') {
    await write(JSON.stringify({ node: process.version, ...versions() }));
    return;
  }
  let jobs;
  try {
    jobs = JSON.parse(await readStdin());
  } catch (error) {
    await write(JSON.stringify({ error: `stdin is not JSON: ${describe(error)}` }));
    process.exitCode = 2;
    return;
  }
  if (!Array.isArray(jobs)) {
    await write(JSON.stringify({ error: 'stdin is not a list of jobs' }));
    process.exitCode = 2;
    return;
  }
  for (const job of jobs) {
    await write(JSON.stringify(await runJob(job)));
  }
}

process.on('unhandledRejection', () => {});

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
  // a timed-out job may leave an SDK stream pending; do not wait for it
  process.exit();
}
