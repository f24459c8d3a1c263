"""A contract type for import-linter (`make lint`): who may use Channels' channel layer.

import-linter sees an external package only as a whole (``channels``), while consumers and
the ASGI entry point import other parts of Channels by design. This contract reads the import
lines themselves: only the allowed modules may import ``channels.layers`` or name
``get_channel_layer`` / ``channel_layers``.
"""

from __future__ import annotations

from typing import Any

from importlinter import Contract, ContractCheck, fields, output

LAYER_NAMES = ("channels.layers", "get_channel_layer", "channel_layers")


class ChannelLayerContract(Contract):
    allowed_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        offenders = []
        allowed = set(self.allowed_modules)  # type: ignore[arg-type]
        for importer in sorted(graph.find_modules_that_directly_import("channels")):
            if importer in allowed:
                continue
            for detail in graph.get_import_details(importer=importer, imported="channels"):
                if any(name in detail["line_contents"] for name in LAYER_NAMES):
                    offenders.append(
                        f"{importer}:{detail['line_number']}: {detail['line_contents']}"
                    )
        return ContractCheck(kept=not offenders, metadata={"offenders": offenders})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for offender in check.metadata["offenders"]:
            output.print_error(offender, bold=False)
        output.new_line()
