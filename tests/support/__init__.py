"""Helpers shared by the test suite (``support.scriptrunner``, ``support.stomp_helpers``, ...).

Importable because pytest puts ``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml); no test file
changes ``sys.path`` itself.
"""
