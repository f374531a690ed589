"""Server kinds: each kind's module declares one ``KIND``; this module is the registry.

A kind is everything the plugin needs to start a server it names: how a ``ServerSpec``
becomes the container to run, the ``server.options`` it accepts, whether the session
points it at the plugin's OTLP receiver, and a step to run once it answers (Ollama
pulls its model). The built-in container kinds are the modules of
:mod:`pytest_latency.servers.engines`, listed (not imported) to learn their names; a
kind's module loads only when its server starts (every pytest run reads the names, few
start a container). The embedded server, ``sim``, is a kind too. A
plugin or ``conftest.py`` adds a kind with the ``pytest_latency_server_kind`` hook,
which is asked before this registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_latency.servers.container import ContainerSpec, RunningContainer
    from pytest_latency.spec.model import ServerSpec

from pytest_latency.servers import engines


def engine_kinds(folders: Iterable[str]) -> tuple[str, ...]:
    """The kinds whose modules lie in ``folders`` (listed, not imported); llama.cpp
    first, as it runs on any machine."""
    names = {
        module.name
        for module in pkgutil.iter_modules(list(folders))
        if not module.name.startswith("_")  # a private helper module is not a kind
    }
    return tuple(sorted(names, key=lambda name: (name != "llamacpp", name)))


#: Container kinds, each declared as ``KIND`` in ``pytest_latency.servers.engines.<name>``.
CONTAINER_KINDS: tuple[str, ...] = engine_kinds(engines.__path__)
#: Every built-in kind: ``sim`` (``pytest_latency.servers.sim``) runs embedded unless
#: given an image; the others always run in a container.
BUILTIN_KINDS: tuple[str, ...] = (*CONTAINER_KINDS, "sim")

#: How the session finds a kind by name: the hook first, then the built-in registry.
KindLookup = Callable[[str], "ServerKind | None"]


@dataclass(frozen=True, slots=True)
class ServerKind:
    """One server kind, declared once in its module (or in a ``conftest.py``).

    ``options`` are the ``server.options`` names the kind accepts beyond the ones every
    container takes (``network``, ``startup_timeout``, ``args``, ``env``); ``None``
    passes any option through (the embedded server maps them to its flags).
    ``exports_spans``: the session sets ``otlp_traces_endpoint`` to its receiver (an
    option such a kind always accepts).
    ``after_start`` runs once the container answers its health URL.
    """

    name: str
    container_spec: Callable[[ServerSpec], ContainerSpec]
    options: frozenset[str] | None = frozenset()
    exports_spans: bool = False
    after_start: Callable[[RunningContainer], None] | None = None

    def build(self, spec: ServerSpec) -> ContainerSpec:
        """The container ``spec`` would start, its options checked first."""
        if self.options is not None:
            from pytest_latency.servers.container import check_options

            # The session sets otlp_traces_endpoint on a kind that exports spans.
            spans = frozenset({"otlp_traces_endpoint"}) if self.exports_spans else frozenset()
            check_options(spec, self.options | spans)
        return self.container_spec(spec)


def builtin_kind(name: str) -> ServerKind | None:
    """The built-in kind called ``name`` (its module loads now), or None."""
    if name not in BUILTIN_KINDS:
        return None
    home = "pytest_latency.servers" + ("" if name == "sim" else ".engines")
    kind = importlib.import_module(f"{home}.{name}").KIND
    assert isinstance(kind, ServerKind) and kind.name == name, name
    return kind


def find_kind(name: str, hook: KindLookup | None = None) -> ServerKind | None:
    """``hook``'s kind for ``name`` if it has one, else the built-in one, else None."""
    found = hook(name) if hook is not None else None
    if found is not None:
        if not isinstance(found, ServerKind):
            raise TypeError(
                f"pytest_latency_server_kind({name!r}) returned {type(found).__name__}, "
                "not a ServerKind"
            )
        return found
    return builtin_kind(name)


def is_known(name: str, hook: KindLookup | None = None) -> bool:
    """Whether ``name`` is a kind, without loading any built-in kind's module."""
    return name in BUILTIN_KINDS or (hook is not None and hook(name) is not None)


def unknown_kind(name: str) -> str:
    """Why ``name`` is not a server kind, and what is."""
    return (
        f"unknown server kind {name!r}: expected sim, an http(s):// URL, one of "
        f"{', '.join(CONTAINER_KINDS)}, or a kind a plugin or conftest.py adds with "
        "the pytest_latency_server_kind hook"
    )
