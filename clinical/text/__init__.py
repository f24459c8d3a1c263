"""Readers of the free text of a case (notes, comorbidities, preferences): negation and scope,
and the critical facts written only in words. ``reader`` is the medspaCy reader with its concept
dictionary (``concepts.yaml``); ``notes`` merges its facts into the case the rules read."""
