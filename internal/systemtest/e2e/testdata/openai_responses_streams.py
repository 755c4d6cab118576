"""Parses the gateway's /v1/responses streams with openai-python's own stream helper.

argv[1] is a JSON list of cases {"name", "model", "extra_body"}; each runs responses.stream(...),
iterating its events, to get_final_response(). Prints a JSON list with, per case, the event types
the SDK yielded and what it made of the stream (text, status, model, the secureai report) or the
exception it raised."""

import json
import os
import sys

import openai

client = openai.OpenAI(base_url=os.environ["GATEWAY_URL"] + "/v1", api_key=os.environ["GATEWAY_KEY"], max_retries=0, timeout=30)
results = []
for case in json.loads(sys.argv[1]):
    r = {"name": case["name"], "events": []}
    try:
        deltas = []
        with client.responses.stream(model=case["model"], input="Say hello", extra_body=case.get("extra_body")) as stream:
            for event in stream:
                r["events"].append(event.type)
                if event.type == "response.output_text.delta":
                    deltas.append(event.delta)
            final = stream.get_final_response()
        r["streamed"] = "".join(deltas)
        r["text"] = final.output_text
        r["status"] = final.status
        r["model"] = final.model
        r["output_tokens"] = final.usage.output_tokens if final.usage else 0
        r["secureai"] = (final.model_extra or {}).get("secureai")
    except Exception as e:  # the case's outcome, reported to the Go test
        r["error"] = type(e).__name__
        r["message"] = str(e)
    results.append(r)
print(json.dumps(results))
