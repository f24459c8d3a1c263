"""The clinical core: the tumor board's clinical knowledge as pure Python, at the bottom of the
import graph (docs/architecture.md). The vocabulary (``vocab``), the typed rules of the knowledge
base (``rules``) and when they apply (``applicability``, ``explain``), the plan and its one parser
(``plan``), the drug lexicon (``lexicon``), the calculators (``calculators``) and the readers of
free text (``text``). It imports nothing of the project and no framework."""
