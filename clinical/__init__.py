"""The clinical core: pure Python at the bottom of the import graph (no Django)."""
