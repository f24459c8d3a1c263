"""Readers of clinical free text (notes, comorbidities, medications): pure Python."""
