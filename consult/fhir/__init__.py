"""FHIR R4 / mCODE STU4: read a Bundle into a case file, write a dossier and a plan as FHIR."""
