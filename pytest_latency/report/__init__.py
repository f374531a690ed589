"""Reports: terminal summary, JSON document, failure evidence."""
