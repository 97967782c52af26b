"""compose-check: run the repository's compose.yaml for real and prove the cluster works.

``deploy/compose-check`` is the entry point; docs/deploy.md says what it does, what it
needs and the figures it printed on the machines it ran on. The package is standard library
only: it drives ``docker``, ``docker compose`` and the ``loopbus`` CLI as a person would,
so it tests the interfaces people use, not loopbus's internals.
"""
