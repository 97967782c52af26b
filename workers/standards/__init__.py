"""The standards daemon: machinery-budget breaches, each raised once, owned by standards."""
