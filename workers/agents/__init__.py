"""What every daemon that runs an external agent shares (the reviewer, the investigator,
and later the builder): the agent tables of ``loopbus.toml`` (:mod:`.config`), the
``--repo`` options that serve them (:mod:`.cli`), running the agent's command
(:mod:`.command`) and the read-only copy it may be given (:mod:`.workspace`).

No daemon imports another daemon: code two of them need lives here.
"""
