"""How the units daemon names its answer to a unit report, in a module of its own so the
front (``loopbus unit … --wait``, through the face) computes the same id without importing
the daemon."""

ANSWER_SALT = "answer"
"""A report's answer (its transition or its refusal) has the id
``answer_id(report.id, ANSWER_SALT)`` (a repeat of the same report: ``answer#N``)."""
