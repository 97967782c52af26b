"""The operator page: a read-only, live web view of a project, served by ``loopbus up``.

``serve`` runs it (``python -m loopbus.web`` or ``loopbus page``); ``live`` keeps each
project's states (the projector's views, then the log, folded by the same ``FOLDS``);
``model`` turns the states into the page's JSON; ``http`` is a small stdlib server;
``static/`` holds the page itself (HTML, CSS, JavaScript; no CDN).
"""
