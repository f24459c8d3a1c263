"""The mdtboard.case/1 case-file format: field catalog, JSON Schema and validator."""
