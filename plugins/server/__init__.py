"""The standalone broker process: ``minibroker serve`` and the other command-line tools."""
