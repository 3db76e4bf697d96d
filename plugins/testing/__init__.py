"""Test integration: the pytest plugin (:mod:`.pytest_plugin`, its fixtures in ``_pytest_fixtures``, the plain
``def`` tests' in ``_pytest_sync``, ``--minibroker-external`` in ``_pytest_external``), the fixture factories
(:mod:`.factories`), captures (:mod:`.capture`), the failed tests' report (:mod:`.report`) and the message journeys
it and the web console draw (:mod:`.timeline`). Their public names stay ``minibroker.plugins.pytest_plugin``,
``minibroker.plugins.factories``, ``minibroker.plugins.capture``, ``minibroker.plugins.report`` and
``minibroker.plugins.timeline``."""
