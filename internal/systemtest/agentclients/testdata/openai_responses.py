"""openai-python's Responses API against the gateway's /v1/responses: `create-stream` runs
responses.create(stream=True), `stream` responses.stream() to get_final_response(). Prints the
answer's text; exits non-zero when the deltas and the final response disagree."""

import os
import sys

import openai

client = openai.OpenAI(base_url=os.environ["GATEWAY_URL"] + "/v1", api_key=os.environ["GATEWAY_KEY"], max_retries=0, timeout=60)
model = os.environ["MODEL"]

if sys.argv[1] == "create-stream":
    deltas, final = [], None
    for event in client.responses.create(model=model, input="say hi", stream=True):
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        elif event.type == "response.completed":
            final = event.response
    if final is None:
        sys.exit("the stream ended without response.completed")
else:
    deltas = []
    with client.responses.stream(model=model, input="say hi") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
if final.status != "completed" or "".join(deltas) != final.output_text:
    sys.exit(f"status {final.status!r}, deltas {''.join(deltas)!r}, output_text {final.output_text!r}")
print(final.output_text)
