"""Telemetry: server timings from spans and headers, the OTLP receiver, Prometheus scraping."""
