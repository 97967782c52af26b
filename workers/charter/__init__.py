"""The charter daemon: approves charters, judges the run's criteria on trunk, keeps its budgets."""
