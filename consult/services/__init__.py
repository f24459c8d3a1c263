"""Writes of the consult app; each module is named by what it does."""
