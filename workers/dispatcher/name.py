"""The name the dispatcher runs under, in a module of its own so the front can read it
(through the face) without importing the daemon."""

NAME = "dispatcher"
"""The dispatcher's kernel's name, its health beacon's (``loopbus plan`` checks it is
alive) and its gate-runner key's (it signs boot results with it)."""
