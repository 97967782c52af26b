"""The dispatcher daemon: plans become facts, slices run wave by wave, increments boot."""
