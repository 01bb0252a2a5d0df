// An adapter command for `validate_tool_stream.py conform`: the Vercel AI SDK (streamText) reading
// the served fixture through its real provider and its real HTTP client (fetch).
//
// Environment (set by conform): VTS_BASE_URL, VTS_PROFILE, VTS_FIXTURE.  Tools are declared
// without `execute`, so nothing runs; it prints the tool calls streamText would hand to
// execution as JSON ([] when the step's finish does not allow execution), and exits 2 for a
// profile it has no first-party provider for.
import fs from 'node:fs';

const { streamText, jsonSchema, tool } = await import('ai');
const { createOpenAI } = await import('@ai-sdk/openai');
const { createAnthropic } = await import('@ai-sdk/anthropic');
const { createGoogleGenerativeAI } = await import('@ai-sdk/google');
const { createCohere } = await import('@ai-sdk/cohere');

const base = process.env.VTS_BASE_URL;
const profile = process.env.VTS_PROFILE;
const models = {
  openai: () => createOpenAI({ apiKey: 'conform', baseURL: `${base}/v1` }).chat('gpt-4o'),
  'openai-responses': () => createOpenAI({ apiKey: 'conform', baseURL: `${base}/v1` }).responses('gpt-4o'),
  anthropic: () => createAnthropic({ apiKey: 'conform', baseURL: `${base}/v1` })('claude-sonnet-4-5'),
  gemini: () => createGoogleGenerativeAI({ apiKey: 'conform', baseURL: `${base}/v1beta` })('gemini-2.5-flash'),
  cohere: () => createCohere({ apiKey: 'conform', baseURL: `${base}/v2` })('command-a-03-2025'),
};
if (!models[profile]) {
  process.stderr.write(`no first-party Vercel AI SDK provider is driven here for ${profile}\n`);
  process.exit(2);
}
const schemas = JSON.parse(fs.readFileSync(process.env.VTS_FIXTURE, 'utf8')).tool_schemas ?? {};
const tools = {};
for (const [name, schema] of Object.entries(schemas)) {
  tools[name] = tool({ inputSchema: jsonSchema(schema && typeof schema === 'object' ? schema : {}) });
}
const calls = [];
let finish = null;
try {
  const result = streamText({ model: models[profile](), prompt: 'conform', tools, maxRetries: 0, onError: () => {} });
  for await (const part of result.fullStream) {
    if (part.type === 'tool-call' && !part.providerExecuted && !part.invalid) {
      calls.push({ id: part.toolCallId ?? null, name: part.toolName, arguments: part.input ?? null });
    } else if (part.type === 'finish') {
      finish = part.finishReason;
    }
  }
} catch (error) {
  process.stderr.write(`streamText failed: ${error?.name}: ${error?.message}\n`);
  process.exit(1);
}
// streamText executes only after a finish of "stop" or "tool-calls"
process.stdout.write(JSON.stringify(finish === 'stop' || finish === 'tool-calls' ? calls : []) + '\n');
