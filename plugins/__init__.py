"""Integrations and extension points of minibroker."""
