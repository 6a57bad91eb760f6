"""Drives Hermes Cloud with the official `openai` Python SDK, unmodified, and prints what it
saw as one JSON object. Run by tests/e2e/sdk.rs against a real service whose scripted model
answers, in order: the chat, the streamed chat, two responses, the streamed response and the
response read through the SDK's stream helper.

Environment: OPENAI_BASE_URL (…/v1), OPENAI_API_KEY, HERMES_MODEL.
"""

import json
import os

import openai

client = openai.OpenAI(max_retries=0, timeout=60)
model = os.environ["HERMES_MODEL"]
seen = {"sdk_version": openai.__version__}

chat = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
seen["chat"] = {"text": chat.choices[0].message.content, "finish": chat.choices[0].finish_reason,
                "total_tokens": chat.usage.total_tokens}

text, usage = "", None
for chunk in client.chat.completions.create(model=model, messages=[{"role": "user", "content": "stream"}],
                                            stream=True, stream_options={"include_usage": True}):
    if chunk.choices and chunk.choices[0].delta.content:
        text += chunk.choices[0].delta.content
    if chunk.usage:
        usage = chunk.usage.total_tokens
seen["chat_stream"] = {"text": text, "total_tokens": usage}

first = client.responses.create(model=model, input="first", instructions="Be brief.")
second = client.responses.create(model=model, input="second", previous_response_id=first.id)
seen["responses"] = {"first": first.output_text, "second": second.output_text, "status": second.status,
                     "previous": second.previous_response_id == first.id}

kinds, final = [], None
for event in client.responses.create(model=model, input="stream it", stream=True):
    kinds.append(event.type)
    if event.type == "response.completed":
        final = event.response.output_text
seen["responses_stream"] = {"first": kinds[0], "last": kinds[-1], "text": final,
                            "deltas": kinds.count("response.output_text.delta")}

with client.responses.stream(model=model, input="helper") as stream:
    helper = stream.get_final_response()
seen["responses_helper"] = {"text": helper.output_text}

got = client.responses.retrieve(first.id)
client.responses.delete(first.id)
try:
    client.responses.retrieve(first.id)
    deleted = False
except openai.NotFoundError:
    deleted = True
seen["retrieve"] = {"text": got.output_text, "deleted": deleted}

seen["models"] = [m.id for m in client.models.list()]
try:
    client.chat.completions.create(model="no-such-agent", messages=[{"role": "user", "content": "x"}])
except openai.NotFoundError as e:
    seen["error"] = {"status": e.status_code, "code": e.code}

print(json.dumps(seen))
