import pytest

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    # Inner pytest runs go to subprocesses: an in-process run unloads and re-imports
    # modules (httpx, httpcore) between runs, which breaks their exception mapping.
    config.option.runpytest = "subprocess"
