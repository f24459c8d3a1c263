"""WeasyPrint, held to local resources: HTML (already escaped by the template) to a PDF with
the plan attached as JSON. No URL outside the app's static folder is ever fetched."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from weasyprint import HTML, Attachment, URLFetcher
from weasyprint.urls import URLFetcherResponse

ATTACHMENT_NAME = "plan.json"


class LocalOnlyFetcher(URLFetcher):  # type: ignore[misc]  # WeasyPrint ships no types
    """Fetches ``data:`` URLs and files under the static folders; refuses anything else
    (http, https, ftp, a file elsewhere on the disk) before any connection is made, and keeps
    what it refused so that a test, or the report's log line, can say so."""

    def __init__(self, roots: list[Path] | None = None) -> None:
        super().__init__(allowed_protocols=("data", "file"), allow_redirects=False)
        self.roots = [r.resolve() for r in (roots or _static_roots())]
        self.refused: list[str] = []

    def fetch(self, url: str, headers: Any = None) -> URLFetcherResponse:
        scheme = urlsplit(url).scheme.lower()
        if scheme == "data":
            return super().fetch(url, headers)
        if scheme == "file":
            path = Path(unquote(urlsplit(url).path)).resolve()
            if any(path.is_relative_to(root) for root in self.roots) and path.is_file():
                kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                return URLFetcherResponse(url, path.read_bytes(), {"Content-Type": kind}, 200)
        self.refused.append(url[:200])
        raise ValueError(f"refused a non-local resource: {url[:80]}")


def _static_roots() -> list[Path]:
    return [Path(p) for p in settings.STATICFILES_DIRS]


def base_url() -> str:
    """Relative URLs in the report resolve inside the static folder."""
    return _static_roots()[0].resolve().as_uri() + "/"


def pdf_render(
    *, html: str, attachment: bytes, title: str, fetcher: LocalOnlyFetcher | None = None
) -> bytes:
    fetcher = fetcher or LocalOnlyFetcher()
    document = HTML(string=html, base_url=base_url(), url_fetcher=fetcher)
    plan = Attachment(
        string=attachment,
        name=ATTACHMENT_NAME,
        description=f"{title}: the plan as mdtboard.plan/1 JSON",
        relationship="Data",
        url_fetcher=fetcher,
    )
    pdf: bytes = document.write_pdf(attachments=[plan], pdf_tags=False)
    return pdf
