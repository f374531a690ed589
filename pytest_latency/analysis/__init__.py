"""Analysis: per-request samples, percentiles with bounds, phase summaries, verdicts (pure)."""
