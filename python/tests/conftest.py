"""Fixtures: a real kvstashd on loopback ports and clients over gRPC and UCX."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

import kvstash
from kvstash.testing import Daemon

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_configure(config: pytest.Config) -> None:
    # Default to the repository's own build when KVSTASHD is not set.
    os.environ.setdefault("KVSTASHD", os.path.join(_REPO, "build", "server", "kvstashd"))


@pytest.fixture(scope="session")
def daemon() -> Iterator[Daemon]:
    with Daemon(local_socket=True) as d:
        yield d


@pytest.fixture(params=["grpc", "ucx"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def client(daemon: Daemon, transport: str) -> Iterator[kvstash.Client]:
    uri = daemon.grpc_uri if transport == "grpc" else daemon.ucx_uri
    with kvstash.Client(uri, deadline_ms=20000) as c:
        yield c


_counter = iter(range(1, 1 << 30))


@pytest.fixture
def ns(client: kvstash.Client) -> kvstash.Namespace:
    """A fresh namespace per test, so tests never see each other's chunks."""
    return client.namespace(model=f"test/model-{next(_counter)}-{os.getpid()}", num_layers=2,
                            kv_heads=2, head_dim=64, dtype="bf16", chunk_tokens=16)
