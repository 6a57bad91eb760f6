// Drives Hermes Cloud with the official `openai` Node SDK, unmodified, and prints what it saw
// as one JSON object: the same scenario as ../openai_python.py (see tests/e2e/sdk.rs).
// Environment: OPENAI_BASE_URL (…/v1), OPENAI_API_KEY, HERMES_MODEL.
import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0, timeout: 60_000 });
const model = process.env.HERMES_MODEL;
const seen = {};

const chat = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
seen.chat = { text: chat.choices[0].message.content, finish: chat.choices[0].finish_reason,
              total_tokens: chat.usage.total_tokens };

let text = "", usage = null;
const chunks = await client.chat.completions.create({ model, messages: [{ role: "user", content: "stream" }],
  stream: true, stream_options: { include_usage: true } });
for await (const chunk of chunks) {
  if (chunk.choices?.[0]?.delta?.content) text += chunk.choices[0].delta.content;
  if (chunk.usage) usage = chunk.usage.total_tokens;
}
seen.chat_stream = { text, total_tokens: usage };

const first = await client.responses.create({ model, input: "first", instructions: "Be brief." });
const second = await client.responses.create({ model, input: "second", previous_response_id: first.id });
seen.responses = { first: first.output_text, second: second.output_text, status: second.status,
                   previous: second.previous_response_id === first.id };

const kinds = [];
let final = null;
const events = await client.responses.create({ model, input: "stream it", stream: true });
for await (const event of events) {
  kinds.push(event.type);
  if (event.type === "response.completed") final = event.response.output_text ??
    event.response.output.filter((i) => i.type === "message").flatMap((i) => i.content).map((c) => c.text).join("");
}
seen.responses_stream = { first: kinds[0], last: kinds[kinds.length - 1], text: final,
                          deltas: kinds.filter((k) => k === "response.output_text.delta").length };

const helper = await client.responses.stream({ model, input: "helper" }).finalResponse();
seen.responses_helper = { text: helper.output_text };

const got = await client.responses.retrieve(first.id);
await client.responses.delete(first.id);
let deleted = false;
try {
  await client.responses.retrieve(first.id);
} catch (e) {
  deleted = e instanceof OpenAI.NotFoundError;
}
seen.retrieve = { text: got.output_text, deleted };

seen.models = [];
for await (const m of client.models.list()) seen.models.push(m.id);
try {
  await client.chat.completions.create({ model: "no-such-agent", messages: [{ role: "user", content: "x" }] });
} catch (e) {
  seen.error = { status: e.status, code: e.code };
}
console.log(JSON.stringify(seen));
