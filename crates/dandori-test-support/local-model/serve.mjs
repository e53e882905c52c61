// A real local model behind an OpenAI-compatible Chat Completions endpoint, for
// dandori's provider tests: node-llama-cpp (prebuilt llama.cpp) runs a GGUF model
// on one CPU thread, and this server speaks the subset of
// https://platform.openai.com/docs/api-reference/chat/create that dandori sends,
// as strictly as the real API: unknown models, malformed messages, a tool call
// without its answer, `stream_options` without `stream`, an invalid schema name
// and a prompt longer than the context are refused with OpenAI's error shape.
//
// Usage: node serve.mjs --model FILE --log FILE [--name NAME] [--context N]
// Prints `listening on http://127.0.0.1:PORT` once the model is loaded. One
// request is evaluated at a time (one llama.cpp slot); others wait, as they do
// on a llama.cpp server with one slot. Each request appends one JSON line to
// the log: its outcome (`completed`, `abandoned` when the client went away
// first, `refused` with the HTTP status), real token counts from the model's
// tokenizer, and its timings.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => {
    if (a.startsWith("--")) pairs.push([a.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
const modelPath = args.model;
const logPath = args.log;
const modelName = args.name ?? "smollm2-135m";
const contextSize = Number(args.context ?? 8192);
if (!modelPath || !logPath) {
  console.error("usage: node serve.mjs --model FILE --log FILE [--name NAME] [--context N]");
  process.exit(2);
}
// node-llama-cpp is installed beside the tools, not beside this file.
const nodeModules = process.env.LOCAL_MODEL_NODE_MODULES
  ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "node_modules");
const { getLlama, LlamaChat } = await import(
  path.join(nodeModules, "node-llama-cpp", "dist", "index.js")
);

const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize, threads: 1, sequences: 1 });
const chat = new LlamaChat({ contextSequence: context.getSequence() });

let requestNumber = 0;
let queue = Promise.resolve();
const log = (entry) => fs.appendFileSync(logPath, JSON.stringify(entry) + "\n");

function openaiError(res, status, message, type, param = null, code = null) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type, param, code } }));
}

// The request checks of the real API that dandori's requests could fail.
function refusal(body) {
  if (typeof body.model !== "string" || body.model === "") {
    return [400, "you must provide a model parameter", "invalid_request_error", "model", null];
  }
  if (body.model !== modelName) {
    return [404, `The model \`${body.model}\` does not exist or you do not have access to it.`,
      "invalid_request_error", "model", "model_not_found"];
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return [400, "[] is too short - 'messages'", "invalid_request_error", "messages", null];
  }
  const pending = new Set();
  for (const [i, m] of body.messages.entries()) {
    if (!["system", "developer", "user", "assistant", "tool"].includes(m.role)) {
      return [400, `Invalid value: '${m.role}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'.`,
        "invalid_request_error", `messages[${i}].role`, "invalid_value"];
    }
    if (m.role === "tool") {
      if (!pending.has(m.tool_call_id)) {
        return [400, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          "invalid_request_error", `messages.[${i}].role`, null];
      }
      pending.delete(m.tool_call_id);
      continue;
    }
    if (pending.size > 0) {
      return [400, `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending].join(", ")}`,
        "invalid_request_error", "messages", null];
    }
    for (const c of m.tool_calls ?? []) pending.add(c.id);
  }
  if (body.max_tokens !== undefined && !(Number.isInteger(body.max_tokens) && body.max_tokens >= 1)) {
    return [400, `Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got ${body.max_tokens} instead.`,
      "invalid_request_error", "max_tokens", "integer_below_min_value"];
  }
  if (body.stream_options !== undefined && body.stream !== true) {
    return [400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
      "invalid_request_error", "stream_options", null];
  }
  const rf = body.response_format;
  if (rf && rf.type === "json_schema") {
    const name = rf.json_schema?.name;
    if (typeof name !== "string" || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      return [400, "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        "invalid_request_error", "response_format.json_schema.name", "invalid_value"];
    }
  }
  return null;
}

// OpenAI messages → node-llama-cpp chat history.
function history(messages) {
  const out = [];
  for (const m of messages) {
    const text = typeof m.content === "string" ? m.content
      : Array.isArray(m.content) ? m.content.map((p) => p.text ?? "").join("") : "";
    if (m.role === "system" || m.role === "developer") out.push({ type: "system", text });
    else if (m.role === "user") out.push({ type: "user", text });
    else if (m.role === "assistant") {
      const response = text ? [text] : [];
      for (const c of m.tool_calls ?? []) {
        let params;
        try { params = JSON.parse(c.function.arguments); } catch { params = c.function.arguments; }
        response.push({ type: "functionCall", name: c.function.name, params, result: undefined });
      }
      out.push({ type: "model", response });
    } else if (m.role === "tool") {
      // The answer of the last call without a result.
      const last = out.at(-1);
      const call = last?.type === "model"
        ? last.response.find((r) => typeof r === "object" && r.result === undefined) : undefined;
      if (call) call.result = text;
      else out.push({ type: "user", text });
    }
  }
  if (out.at(-1)?.type !== "model") out.push({ type: "model", response: [] });
  return out;
}

async function grammarFor(responseFormat) {
  if (!responseFormat) return undefined;
  if (responseFormat.type === "json_object") return llama.getGrammarFor("json");
  if (responseFormat.type === "json_schema") {
    try {
      return await llama.createGrammarForJsonSchema(responseFormat.json_schema.schema);
    } catch {
      // `strict: false`: the schema is guidance, JSON is still enforced.
      return llama.getGrammarFor("json");
    }
  }
  return undefined;
}

async function complete(req, res, body, entry) {
  const stream = body.stream === true;
  const includeUsage = stream && body.stream_options?.include_usage === true;
  const functions = body.tools?.length
    ? Object.fromEntries(body.tools.map((t) => [t.function.name,
      { description: t.function.description, params: t.function.parameters }]))
    : undefined;
  const chatHistory = history(body.messages);
  const promptTokens = chat.chatWrapper
    .generateContextState({ chatHistory, availableFunctions: functions })
    .contextText.tokenize(model.tokenizer).length;
  const maxTokens = body.max_tokens ?? body.max_completion_tokens ?? contextSize - promptTokens;
  entry.prompt_tokens = promptTokens;
  entry.max_tokens = maxTokens;
  if (promptTokens + maxTokens > contextSize) {
    entry.outcome = "refused";
    entry.status = 400;
    return openaiError(res, 400,
      `This model's maximum context length is ${contextSize} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
      "invalid_request_error", "messages", "context_length_exceeded");
  }
  const id = `chatcmpl-${entry.n}`;
  const created = Math.floor(Date.now() / 1000);
  const abort = new AbortController();
  res.on("close", () => { if (!res.writableFinished) abort.abort(); });
  // With `include_usage`, every chunk carries `usage: null` but the last.
  const chunk = (choices, extra = {}) => res.write(`data: ${JSON.stringify({
    id, object: "chat.completion.chunk", created, model: modelName, system_fingerprint: null, choices,
    ...(includeUsage ? { usage: null } : {}), ...extra,
  })}\n\n`);
  if (stream) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  }
  let completionTokens = 0;
  let sentRole = false;
  const role = () => {
    if (stream && !sentRole) {
      sentRole = true;
      entry.first_token_ms = Date.now() - entry.started;
      chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]);
    }
  };
  const result = await chat.generateResponse(chatHistory, {
    maxTokens,
    temperature: body.temperature ?? 1,
    seed: body.seed ?? 1,
    grammar: functions ? undefined : await grammarFor(body.response_format),
    functions,
    signal: abort.signal,
    stopOnAbortSignal: true,
    onToken: (tokens) => { completionTokens += tokens.length; role(); },
    onTextChunk: (text) => {
      role();
      if (stream && text) {
        chunk([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }]);
      }
    },
  });
  if (abort.signal.aborted) {
    entry.outcome = "abandoned";
    entry.completion_tokens = completionTokens;
    return;
  }
  const calls = (result.functionCalls ?? []).map((c, i) => ({
    index: i, id: `call_${entry.n}_${i}`, type: "function",
    function: { name: c.functionName, arguments: JSON.stringify(c.params ?? {}) },
  }));
  const finish = calls.length ? "tool_calls"
    : result.metadata.stopReason === "maxTokens" ? "length" : "stop";
  const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens };
  Object.assign(entry, { outcome: "completed", status: 200, completion_tokens: completionTokens, finish_reason: finish });
  if (stream) {
    role();
    if (calls.length) {
      chunk([{ index: 0, delta: { tool_calls: calls }, logprobs: null, finish_reason: null }]);
    }
    chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]);
    if (includeUsage) chunk([], { usage });
    res.end("data: [DONE]\n\n");
    return;
  }
  const message = { role: "assistant", content: calls.length ? null : result.response, refusal: null };
  if (calls.length) message.tool_calls = calls.map(({ index, ...c }) => c);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({
    id, object: "chat.completion", created, model: modelName, system_fingerprint: null,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage,
  }));
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  if (req.method !== "POST" || url.pathname !== "/v1/chat/completions") {
    return openaiError(res, 404, `Invalid URL (${req.method} ${url.pathname})`, "invalid_request_error");
  }
  let raw = "";
  req.on("data", (d) => { raw += d; });
  req.on("end", () => {
    const entry = { n: ++requestNumber, path: url.pathname, started: Date.now(), outcome: "pending" };
    let body;
    try { body = JSON.parse(raw); } catch (e) {
      Object.assign(entry, { outcome: "refused", status: 400 });
      log(entry);
      return openaiError(res, 400, `We could not parse the JSON body of your request. (${e.message})`, "invalid_request_error");
    }
    entry.stream = body.stream === true;
    entry.response_format = body.response_format?.type ?? null;
    entry.tools = (body.tools ?? []).length;
    const refused = refusal(body);
    if (refused) {
      const [status, ...rest] = refused;
      Object.assign(entry, { outcome: "refused", status, error: rest[0] });
      log(entry);
      return openaiError(res, status, ...rest);
    }
    queue = queue.then(async () => {
      if (res.destroyed) {
        entry.outcome = "abandoned";
      } else {
        entry.queued_ms = Date.now() - entry.started;
        try { await complete(req, res, body, entry); } catch (e) {
          if (entry.outcome === "pending") {
            entry.outcome = res.destroyed ? "abandoned" : "error";
            entry.error = String(e?.message ?? e);
            if (!res.headersSent) openaiError(res, 500, "The server had an error while processing your request.", "server_error");
            else res.end();
          }
        }
      }
      entry.duration_ms = Date.now() - entry.started;
      log(entry);
    });
  });
});
server.listen(Number(args.port ?? 0), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
