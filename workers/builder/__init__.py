"""The builder daemon: a project's build command run for every round a unit owes."""
