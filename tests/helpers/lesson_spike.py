"""The lesson's spike spec of issue 33, as a real vLLM on CPU was measured with: steady
4/s for 40 s, then a Poisson spike at 20/s for 5 s, 16-token answers (about 260
requests). ``{ttft}`` is the steady phase's TTFT p95 limit (braces doubled for format).
Used against the embedded server (tests/e2e/test_spike_decides.py) and the plugin's vLLM
container (tests/e2e/containers/test_vllm_cpu_container.py)."""

SPEC = """\
workload:
  seed: 4
  input_tokens: [100, 200]
  output_tokens: 16
  timeout: 30s
  phases:
    - {{name: steady, arrival: poisson, rate: 4, duration: 40s}}
    - {{name: spike, arrival: poisson, rate: 20, duration: 5s}}
objectives:
  - {{metric: ttft, p: 95, max: {ttft}, phase: steady}}
  - {{metric: queue_wait, p: 95, max: 500ms}}
  - {{metric: error_rate, max: 5%}}
"""
