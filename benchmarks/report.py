"""PDF report figures: render time and size for a typical public case (pub-hcc-03: a
two-round guideline consultation with gates, alternatives, an evidence tree and its trace)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management import call_command

from benchmarks.common import emit, p50
from benchmarks.engine import _bench_user, _submitted

CASE = "pub-hcc-03.json"
REPEAT = 5


def run() -> None:
    import io

    from pypdf import PdfReader

    from consult.review import services
    from consult.services.consultations import consultation_run, consultation_start

    call_command("load_kb_seed", verbosity=0)
    user, team = _bench_user()
    dossier = _submitted(user, team, CASE, f"pdf{int(time.time())}")
    consultation = consultation_start(actor=user, dossier=dossier, enqueue=False)
    consultation_run(consultation_id=consultation.pk)
    # Rendered here, not by a worker, so that only the rendering is timed.
    services._enqueue_report = _no_queue  # type: ignore[assignment]
    samples: list[float] = []
    cpu: list[float] = []
    data = b""
    for _ in range(REPEAT):
        report = services.report_request(actor=user, consultation=consultation, paper="a4")
        started, started_cpu = time.perf_counter(), time.process_time()
        services.report_render(report_id=report.pk)
        samples.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
        report.refresh_from_db()
        data = services.report_path(report).read_bytes()
    emit("pdf_report_render_p50", p50(samples), "s", "< 3 s")
    emit("pdf_report_render_max", max(samples), "s", "< 3 s")
    # CPU time of this process: what the render costs on a machine other jobs also load.
    emit("pdf_report_render_cpu_p50", p50(cpu), "s")
    emit("pdf_report_size", len(data) / 1024, "KiB")
    emit("pdf_report_pages", len(PdfReader(io.BytesIO(data)).pages), "pages")


def _no_queue(report_id: Any) -> None:
    return None
