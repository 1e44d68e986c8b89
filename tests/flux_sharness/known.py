"""Failed steps whose class the shim's notes cannot tell, keyed by (script, step title).

AFTER_FLUX: the step itself runs only fairledger, but what it checks was made by an earlier step
that needed a running Flux (jobs submitted, the plugin's state). DELIBERATE: a difference
docs/semantics.md states.
"""

from __future__ import annotations

AFTER_FLUX: dict[tuple[str, str], str] = {}

DELIBERATE: dict[tuple[str, str], str] = {}
