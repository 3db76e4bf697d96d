"""Transports between clients and the broker."""
