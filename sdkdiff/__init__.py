"""Differential harness: replay bundled fixtures through the real SDK stream accumulators.

Optional and test-only: nothing in scripts/ may import this package.
"""
