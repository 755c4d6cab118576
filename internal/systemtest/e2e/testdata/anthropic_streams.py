"""Parses the gateway's /v1/messages streams with anthropic-python's own stream helper.

argv[1] is a JSON list of cases {"name", "model", "extra_body"}; each runs
messages.stream(...) to get_final_message(). Prints a JSON list with, per case, what the SDK
made of the stream (text, stop reason, model, blocks, the secureai report) or the exception it
raised."""

import json
import os
import sys

import anthropic

client = anthropic.Anthropic(base_url=os.environ["GATEWAY_URL"], api_key=os.environ["GATEWAY_KEY"], max_retries=0, timeout=30)
results = []
for case in json.loads(sys.argv[1]):
    r = {"name": case["name"]}
    try:
        with client.messages.stream(
            model=case["model"],
            max_tokens=256,
            messages=[{"role": "user", "content": "Say hello"}],
            extra_body=case.get("extra_body"),
        ) as stream:
            r["streamed"] = "".join(stream.text_stream)
            final = stream.get_final_message()
        r["text"] = "".join(b.text for b in final.content if b.type == "text")
        r["blocks"] = [b.type for b in final.content]
        r["signatures"] = [b.signature for b in final.content if b.type == "thinking"]
        r["stop_reason"] = final.stop_reason
        r["model"] = final.model
        r["output_tokens"] = final.usage.output_tokens
        r["secureai"] = (final.model_extra or {}).get("secureai")
    except Exception as e:  # the case's outcome, reported to the Go test
        r["error"] = type(e).__name__
        r["message"] = str(e)
    results.append(r)
print(json.dumps(results))
