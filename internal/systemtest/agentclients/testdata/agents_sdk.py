"""The OpenAI Agents SDK against the gateway's /v1/responses: one non-streamed run with a function
tool. Prints the final output. Tracing is off, so nothing is exported anywhere."""

import os

from agents import Agent, Runner, function_tool, set_default_openai_api, set_default_openai_client, set_tracing_disabled
from openai import AsyncOpenAI

set_tracing_disabled(True)
set_default_openai_api("responses")
set_default_openai_client(
    AsyncOpenAI(base_url=os.environ["GATEWAY_URL"] + "/v1", api_key=os.environ["GATEWAY_KEY"], max_retries=0, timeout=60),
    use_for_tracing=False,
)


@function_tool
def secret_word(topic: str) -> str:
    """Returns the secret word for a topic."""
    return f"the secret word for {topic} is {os.environ['SECRET']}"


agent = Agent(name="gateway agent", instructions="Answer with the tool's help.", model=os.environ["MODEL"], tools=[secret_word])
result = Runner.run_sync(agent, 'What is the secret word for gateways?\nCALL secret_word {"topic":"gateways"}', max_turns=4)
print(result.final_output)
