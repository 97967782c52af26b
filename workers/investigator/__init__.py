"""The investigator daemon: one investigation on the second failure of anything."""
