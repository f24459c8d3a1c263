"""The Celery application; tasks live in each app's ``tasks.py``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery
from kombu import transport as kombu_transports
from kombu.transport import redis as kombu_redis

from mdtboard.bootstrap import embedded_servers

# A server or worker started without DJANGO_SETTINGS_MODULE gets the production settings
# (which refuse to start without their secrets), never the development ones with DEBUG on.
# `make run` and manage.py choose the development settings explicitly.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.production")


class RedisChannel(kombu_redis.Channel):
    """kombu's Redis channel, able to reach Redis again after its connection was collected.

    When Redis goes away while the worker waits on BRPOP, Celery's consumer first
    ``collect()``s the broken connection: closing the channel fails half-way (Redis is gone),
    and the transport is detached from its connection (``transport.client = None``). It then
    ``close()``s the connection, which closes the channel again; that drops the channel's
    connection pool and requeues the unacknowledged messages through a new pool, whose
    parameters kombu reads from ``transport.client``: ``AttributeError: 'NoneType' object has
    no attribute 'hostname'``. That is no connection error, so the worker stops ("Unrecoverable
    error"); the same happens when a task that was running meanwhile is acknowledged on its
    (old) channel. (celery/kombu#582, still in kombu 5.7.)

    This channel remembers the parameters it connected with and uses them once the transport
    is detached (or, after a clean close, gone): the requeue fails as the connection error it
    is (Redis is down) and is left to Redis's own unacked index, and the late acknowledgement
    of the running consultation reaches the restarted Redis. A channel that never connected
    raises a connection error.
    """

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        remembered: dict[bool, dict[str, Any]] = self.__dict__.setdefault("_connparams_seen", {})
        # The transport (``self.connection``) is gone once the channel closed cleanly, and
        # detached from its connection (``client``) once the connection was collected.
        if getattr(self.connection, "client", None) is None:
            if asynchronous not in remembered:
                raise redis.ConnectionError("the broker connection has been closed")
            return dict(remembered[asynchronous])
        kombu_connparams: Callable[..., dict[str, Any]] = super()._connparams  # kombu: untyped
        params = kombu_connparams(asynchronous=asynchronous)
        remembered[asynchronous] = dict(params)
        if (not asynchronous) not in remembered:
            # The other kind too (messages arrive on the asynchronous pool, acknowledgements
            # go through the synchronous one): both may be needed after the transport is gone.
            remembered[not asynchronous] = dict(kombu_connparams(asynchronous=not asynchronous))
        return params


class RedisTransport(kombu_redis.Transport):
    Channel = RedisChannel


# Every "redis://", "rediss://" and "redis+socket://" broker URL in this process gets it.
for _scheme in ("redis", "rediss"):
    kombu_transports.TRANSPORT_ALIASES[_scheme] = f"{__name__}:RedisTransport"
    kombu_transports._transport_cache.pop(_scheme, None)

app = Celery("mdtboard")


def _embedded_servers(**_: Any) -> None:
    """A worker (or any process that sends a task) reads Django's settings for its broker
    here first: the embedded servers must be up, and their addresses known, before that."""
    embedded_servers()


app.on_configure.connect(_embedded_servers, weak=False)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
