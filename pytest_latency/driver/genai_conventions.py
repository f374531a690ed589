"""OpenTelemetry's GenAI semantic conventions, as the client speaks them (docs/tracing.md).

Names come from the ``opentelemetry-semantic-conventions`` package where it defines
them, so a spelling the conventions change is changed here once. A CLIENT inference span
is named ``{gen_ai.operation.name} {gen_ai.request.model}`` (``chat Qwen3-8B``); the
client histograms carry the same request attributes plus ``error.type`` on failures.

The conventions moved to their own repository (semantic-conventions-genai) and renamed
the token usage attributes on the way (``gen_ai.usage.prompt_tokens`` became
``gen_ai.usage.input_tokens``, ``completion_tokens`` became ``output_tokens``; the token
type ``completion`` became ``output``). :data:`TOKEN_ATTRIBUTE_ALIASES` is the one place
that knows both: we write the current names, and read either (servers still export the
old ones: vLLM's ``llm_request`` spans carry ``gen_ai.usage.prompt_tokens``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.semconv.attributes.server_attributes import SERVER_ADDRESS, SERVER_PORT

from pytest_latency.records import RequestRecord

__all__ = (
    "TOKEN_ATTRIBUTE_ALIASES",
    "GenAiTarget",
    "error_type",
    "span_attributes",
    "usage_input_tokens",
)

OPERATION_CHAT = genai.GenAiOperationNameValues.CHAT.value
OPERATION_TEXT_COMPLETION = genai.GenAiOperationNameValues.TEXT_COMPLETION.value
# The API every server here speaks: OpenAI's. It is what the OpenAI SDK's own
# instrumentation reports for any base URL, so a run charts beside production traffic.
PROVIDER = genai.GenAiProviderNameValues.OPENAI.value
GEN_AI_USAGE_INPUT_TOKENS = genai.GEN_AI_USAGE_INPUT_TOKENS
GEN_AI_USAGE_OUTPUT_TOKENS = genai.GEN_AI_USAGE_OUTPUT_TOKENS
# Current name -> the names it had before (read as the same thing).
TOKEN_ATTRIBUTE_ALIASES: Mapping[str, tuple[str, ...]] = {
    genai.GEN_AI_USAGE_INPUT_TOKENS: (genai.GEN_AI_USAGE_PROMPT_TOKENS,),
    genai.GEN_AI_USAGE_OUTPUT_TOKENS: (genai.GEN_AI_USAGE_COMPLETION_TOKENS,),
}
PHASE_ATTRIBUTE = "pytest_latency.phase"
CLASS_ATTRIBUTE = "pytest_latency.class"


@dataclass(frozen=True, slots=True)
class GenAiTarget:
    """What every request of a run shares in the conventions: operation, model, server."""

    operation: str
    model: str
    address: str | None = None
    port: int | None = None

    @classmethod
    def of(cls, base_url: str, model: str, chat: bool) -> GenAiTarget:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80 if parts.hostname else None)
        operation = OPERATION_CHAT if chat else OPERATION_TEXT_COMPLETION
        return cls(operation, model, parts.hostname, port)

    @property
    def span_name(self) -> str:
        """``{gen_ai.operation.name} {gen_ai.request.model}``, e.g. ``chat Qwen3-8B``."""
        return f"{self.operation} {self.model}" if self.model else self.operation

    def attributes(self) -> dict[str, str | int | bool]:
        """The request attributes every span and data point of the run carries."""
        found: dict[str, str | int | bool] = {
            genai.GEN_AI_OPERATION_NAME: self.operation,
            genai.GEN_AI_PROVIDER_NAME: PROVIDER,
            genai.GEN_AI_REQUEST_MODEL: self.model,
        }
        if self.address:
            found[SERVER_ADDRESS] = self.address
        if self.port is not None:
            found[SERVER_PORT] = self.port
        return found


def error_type(record: RequestRecord) -> str | None:
    """``error.type`` of a failed request: its HTTP status code when it got one that was
    not a success, else its status (``timeout``, ``connection_error``...); None when ok."""
    if record.ok:
        return None
    code = record.http_status
    if code is not None and not 200 <= code < 300:
        return str(code)
    return record.status.value


def usage_input_tokens(record: RequestRecord) -> int:
    """The server's prompt token count where its usage said, else the planned count."""
    return record.prompt_tokens if record.prompt_tokens is not None else record.input_tokens


def span_attributes(record: RequestRecord, target: GenAiTarget) -> dict[str, str | int | float]:
    """The conventions' attributes of one finished request's span (ours are added apart)."""
    found: dict[str, str | int | float] = {**target.attributes()}
    found[genai.GEN_AI_REQUEST_STREAM] = True
    if record.max_tokens is not None:
        found[genai.GEN_AI_REQUEST_MAX_TOKENS] = record.max_tokens
    if record.ttft_s is not None:  # from the planned send, as every latency here
        found[genai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = record.ttft_s
    found[genai.GEN_AI_USAGE_INPUT_TOKENS] = usage_input_tokens(record)
    if record.output_tokens is not None:
        found[genai.GEN_AI_USAGE_OUTPUT_TOKENS] = record.output_tokens
    if record.reasoning_tokens is not None:
        found[genai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = record.reasoning_tokens
    failure = error_type(record)
    if failure is not None:
        found[ERROR_TYPE] = failure
    return found
