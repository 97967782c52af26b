"""What every daemon that runs an external agent shares (the builder, the reviewer, the
investigator): the agent tables of ``loopbus.toml`` (:mod:`.config`), the ``--repo``
options that serve them (:mod:`.cli`), the one runner every agent command goes through
(:mod:`.runner`) with the environment it builds (:mod:`.environment`), the sandbox
contract (:mod:`.sandbox`) and the local executor (:mod:`.local`, lending the worktree with
:mod:`.lending`), the standing finding for unsandboxed agents (:mod:`.unsandboxed`), what a
command did (:mod:`.command`) and the read-only copy it may be given (:mod:`.workspace`).

No daemon imports another daemon: code two of them need lives here.
"""
