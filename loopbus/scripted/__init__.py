"""Deterministic stand-ins for a builder and a reviewer, shipped for ``loopbus init`` and
``loopbus demo``: programs that speak the brief/envelope and the review protocols and do
real work on the scaffolded project, with no model behind them."""
