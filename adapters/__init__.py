"""Adapter comparison harness: what real stream adapters would execute, next to our verdict.

Optional and never imported by the validator (scripts/validate_tool_stream.py): the
third-party packages are listed in adapters/requirements.txt and imported lazily.
"""
