"""Lesions as records of a patient: written from a saved dossier's ``lesions[]`` and read back
as the response calculators' lesions."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from django.db import transaction

from clinical.calculators.response import Lesion as LesionReading
from clinical.calculators.response import Measurement, lesions_from_case
from consult.models import Lesion, LesionDossier, LesionMeasurement, Patient


@transaction.atomic
def lesions_record(*, dossier: LesionDossier) -> list[Lesion]:
    """Bring the patient's lesion records in line with a validated dossier: every lesion and
    measurement of its case file is written (a reading of the same lesion on the same date is
    replaced by this dossier's), and the readings this dossier recorded before but no longer
    holds are removed. A file without ``lesions[]`` records nothing (its single index lesion
    has no date)."""
    if dossier.data.get("lesions") is None:
        LesionMeasurement.objects.filter(dossier=dossier).delete()
        return []
    readings = lesions_from_case(dossier.data)  # validated already: raises only on a bug
    kept: set[tuple[str, date]] = set()
    out: list[Lesion] = []
    for reading in readings:
        lesion, _ = Lesion.objects.update_or_create(
            patient=dossier.patient,
            lesion_id=reading.lesion_id,
            defaults={
                "site": reading.site or "",
                "laterality": reading.laterality or "",
                "kind": reading.kind or "",
                "target": reading.target,
                "is_index": reading.is_index,
            },
        )
        out.append(lesion)
        for m in reading.measurements:
            if m.date is None:
                continue
            kept.add((reading.lesion_id, m.date))
            LesionMeasurement.objects.update_or_create(
                lesion=lesion,
                date=m.date,
                defaults={
                    "modality": m.modality or "",
                    "longest_diameter_mm": m.longest_diameter_mm,
                    "short_axis_mm": m.short_axis_mm,
                    "viable_enhancing_mm": m.viable_enhancing_mm,
                    "deauville": m.deauville,
                    "dossier": dossier,
                },
            )
    for stale in LesionMeasurement.objects.filter(dossier=dossier).select_related("lesion"):
        if (stale.lesion.lesion_id, stale.date) not in kept:
            stale.delete()
    return out


def lesion_readings(*, patient: Patient) -> list[LesionReading]:
    """The patient's lesions with every recorded measurement, as the calculators read them."""
    lesions: Iterable[Lesion] = patient.lesions.prefetch_related("measurements").order_by(
        "lesion_id"
    )
    out: list[LesionReading] = []
    for lesion in lesions:
        measurements = tuple(
            Measurement(
                date=m.date,
                modality=m.modality or None,
                longest_diameter_mm=m.longest_diameter_mm,
                short_axis_mm=m.short_axis_mm,
                viable_enhancing_mm=m.viable_enhancing_mm,
                deauville=m.deauville,
            )
            for m in sorted(lesion.measurements.all(), key=lambda m: m.date)
        )
        if not measurements:
            continue
        out.append(
            LesionReading(
                lesion_id=lesion.lesion_id,
                site=lesion.site or None,
                kind=lesion.kind or None,
                target=lesion.target,
                is_index=lesion.is_index,
                laterality=lesion.laterality or None,
                measurements=measurements,
            )
        )
    return out
