"""The entity merge driver's old home: it moved to :mod:`workers.entity_merge`, a
library shared by the merger and the builder (which merges trunk into a unit for a
conflict round). This name stays so that a git configuration written for it still works
(``python -m workers.merger.entity_merge %O %A %B %P``)."""

from workers.entity_merge import *  # noqa: F403
from workers.entity_merge import __all__  # noqa: F401
