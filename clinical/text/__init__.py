"""Readers of the free text of a case (notes, comorbidities, preferences): negation and scope,
and the critical facts written only in words."""
