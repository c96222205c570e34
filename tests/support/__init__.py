"""Helpers shared by the tests: local servers replaying recorded model outputs."""
