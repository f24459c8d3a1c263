"""The broker connection survives Redis going away (the worker's view of a Redis restart)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from mdtboard.celery import app

pytestmark = pytest.mark.integration


def _lost_channel(how: str) -> tuple[Any, Any]:
    """A channel as Celery's consumer leaves it after losing the broker: closed, or (when the
    close failed half-way because Redis was gone) with its transport detached; either way its
    connection pool dropped, and a message it delivered still to be acknowledged."""
    connection = app.connection_for_write()
    channel = connection.default_channel
    channel.client.ping()
    if how == "closed":
        connection.collect()
    else:
        connection._do_close_transport()
    channel._disconnect_pools()
    return connection, channel


@pytest.mark.parametrize("how", ["closed", "half-closed"])
def test_a_channel_of_a_lost_connection_still_reaches_redis_once_it_is_back(how: str) -> None:
    # given a channel the consumer gave up when Redis went away (Redis is back)
    connection, channel = _lost_channel(how)
    try:
        # when a late acknowledgement (or the requeue of unacked messages) needs Redis
        client = channel._create_client()
        # then it gets there, rather than failing with an AttributeError the worker dies of
        assert client.ping() is True
    finally:
        connection.release()


def test_a_lost_channel_that_never_connected_fails_as_a_connection_error() -> None:
    # given a lost channel that had never connected
    _, channel = _lost_channel("half-closed")
    channel.__dict__.pop("_connparams_seen", None)
    # when it needs Redis, then the error is one kombu and Celery recover from
    with pytest.raises(redis.ConnectionError):
        channel._create_client()
    assert issubclass(redis.ConnectionError, app.connection_for_write().connection_errors)
