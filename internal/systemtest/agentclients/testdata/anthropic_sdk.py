"""anthropic-python against the gateway's /v1/messages: `stream` runs messages.stream, `create`
messages.create. Prints the answer's text; exits non-zero when the SDK's views of it disagree."""

import os
import sys

import anthropic

client = anthropic.Anthropic(base_url=os.environ["GATEWAY_URL"], api_key=os.environ["GATEWAY_KEY"], max_retries=0, timeout=60)
model = os.environ["MODEL"]
messages = [{"role": "user", "content": "say hi"}]

if sys.argv[1] == "stream":
    with client.messages.stream(model=model, max_tokens=256, messages=messages) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    text = "".join(b.text for b in final.content if b.type == "text")
    if streamed != text or final.stop_reason != "end_turn":
        sys.exit(f"text_stream {streamed!r}, final message {text!r}, stop_reason {final.stop_reason!r}")
else:
    msg = client.messages.create(model=model, max_tokens=256, messages=messages)
    text = "".join(b.text for b in msg.content if b.type == "text")
    if msg.stop_reason != "end_turn" or msg.usage.output_tokens <= 0:
        sys.exit(f"stop_reason {msg.stop_reason!r}, usage {msg.usage!r}")
print(text)
