"""Container health check: exit 0 only when GET /healthz answers 200.

/healthz answers 200 when the database, Redis and at least one Celery worker answer, 503
otherwise. Anything else (a 503, a 400, a redirect, a refused connection, a time-out) is
unhealthy. Standard library only: this runs every 30 seconds in the web container.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

URL = "http://127.0.0.1:8000/healthz"
TIMEOUT_SECONDS = 8


def host_header() -> str:
    """The first of DJANGO_ALLOWED_HOSTS, as a reverse proxy would send it.

    Django answers 400 to a Host it does not allow, and a production deployment allows only its
    public name, not 127.0.0.1.
    """
    first = (os.environ.get("DJANGO_ALLOWED_HOSTS") or "localhost").split(",")[0].strip()
    first = first.lstrip(".")  # ".example.org" allows example.org and its subdomains
    return "localhost" if first in ("", "*") else first


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a redirect is an answer other than 200: report it, do not follow it


def main() -> int:
    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(URL, headers={"Host": host_header()})
    try:
        with opener.open(request, timeout=TIMEOUT_SECONDS) as response:
            status, body = response.status, response.read(2000)
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read(2000)
    except OSError as exc:  # refused, reset, timed out
        sys.stdout.write(f"unhealthy: {type(exc).__name__}: {exc}\n")
        return 1
    # The body names the failing check (database, redis, worker); `docker inspect` shows it.
    sys.stdout.write(f"{status} {body.decode('utf-8', 'replace')}\n")
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
