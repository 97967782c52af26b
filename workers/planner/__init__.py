"""The planner daemon: the next slice of a running charter, from the ``[plan] command``."""
