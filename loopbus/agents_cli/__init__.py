"""``loopbus agent CLI --role ROLE``: any headless coding-agent CLI as a loopbus agent.

A coding-agent CLI (Claude Code, Codex, Gemini CLI …) does not read a brief or print an
envelope. The wrapper here sits between: it reads the role's document on stdin (a
builder's brief, a review request, a planner's brief, an investigation), turns it into a
prompt, runs the CLI headless, reads the CLI's documented structured output, takes the
JSON object out of the agent's final message and prints it — validated against the same
msgspec type the role's daemon decodes — on stdout.

Layout (adding a CLI is one module and one row of :data:`loopbus.agents_cli.table.CLIS`):

* ``spec.py``: what a CLI module provides (:class:`~loopbus.agents_cli.spec.Cli`);
* ``claude.py``, ``codex.py``, ``gemini.py``, ``opencode.py``: one module per CLI, an argv
  builder and an output parser each;
* ``table.py``: the table of CLIs;
* ``prompts.py``, ``prompt_text.py``: the brief turned into a prompt, per role;
* ``roles.py``: per role, the type its envelope must decode to and where its usage goes;
* ``extract.py``: the JSON object in a final message, fenced or bare;
* ``run.py``: the whole of one run, and its failure lines.
"""
