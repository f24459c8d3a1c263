"""Fetch one patient's record from a FHIR server: ``Patient/{id}/$everything``, following the
server's paging links on the same server, merged into one collection Bundle for the mapping."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from consult.fhir.parse import MAX_BYTES

FHIR_ID = re.compile(r"[A-Za-z0-9\-.]{1,64}")
MAX_PAGES = 100


class ServerError(Exception):
    """The server could not be asked or gave no usable answer; the message says which."""


def fetch_everything(
    *, base_url: str, patient_id: str, token: str = "", timeout_s: float = 30.0
) -> bytes:
    """The patient's record as the JSON of one collection Bundle."""
    if not FHIR_ID.fullmatch(patient_id):
        raise ServerError("A FHIR patient id is 1-64 letters, digits, '-' or '.'.")
    base = base_url.rstrip("/") + "/"
    origin = urlsplit(base)[:2]
    headers = {"Accept": "application/fhir+json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    url: str | None = urljoin(base, f"Patient/{patient_id}/$everything")
    entries: list[Any] = []
    size = 0
    with httpx.Client(timeout=timeout_s, headers=headers, follow_redirects=False) as client:
        for _ in range(MAX_PAGES):
            if url is None:
                break
            try:
                response = client.get(url)
            except httpx.HTTPError as exc:
                raise ServerError(
                    f"The FHIR server did not answer: {exc.__class__.__name__}."
                ) from exc
            if response.status_code == 404:
                raise ServerError(f"The FHIR server has no patient {patient_id!r}.")
            if response.status_code in (401, 403):
                raise ServerError("The FHIR server refused the request (check FHIR_SERVER_TOKEN).")
            if response.status_code != 200:
                raise ServerError(f"The FHIR server answered HTTP {response.status_code}.")
            size += len(response.content)
            if size > MAX_BYTES:
                raise ServerError(
                    f"The record is larger than {MAX_BYTES // (1024 * 1024)} MiB; import it from "
                    "a file exported by the hospital system instead."
                )
            try:
                page = json.loads(response.content)
            except ValueError as exc:
                raise ServerError("The FHIR server's answer is not JSON.") from exc
            if not isinstance(page, dict) or page.get("resourceType") != "Bundle":
                raise ServerError("The FHIR server's answer is not a Bundle.")
            entries.extend(page.get("entry") or [])
            url = None
            for link in page.get("link") or []:
                if isinstance(link, dict) and link.get("relation") == "next":
                    following = urljoin(base, str(link.get("url") or ""))
                    # Paging stays on the configured server: a link elsewhere is not followed
                    # (the token must not travel to another host).
                    if urlsplit(following)[:2] == origin:
                        url = following
    document = {"resourceType": "Bundle", "type": "collection", "entry": entries}
    return json.dumps(document).encode("utf-8")
