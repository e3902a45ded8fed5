"""Request processors, in the order the seed runs them (SPEC P1–P9).

Each processor is a `rondo.flow.views.RequestProcessor`: it takes `(flow, ctx, request)` and may
change the request. It returns None when it is done, an awaitable when it has async work, or an
async iterator when it yields events of its own before the model is called (P0) — so the
common case costs one plain function call.

Why this order:
- basic first: it *replaces* the config, so everything else writes on top of it.
- tools before confirmation: resuming a confirmed call needs the tool table.
- instructions, then identity: the seed's system prompt is global → agent → identity.
- compaction right before contents: a summary appended now must be in this request (K1).
- nested resume right after confirmation: a call whose nested run paused continues the same
  way (H4).
- contents after confirmation: re-dispatched calls must be in the history this step sees.
- input files right after contents: they swap saved files' references for their bytes.
- output schema and transfer last: they add tools and instructions for the final turn shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rondo.flow.processors.basic import basic_processor
from rondo.flow.processors.compaction import compaction_processor
from rondo.flow.processors.confirmation import confirmation_processor
from rondo.flow.processors.contents import contents_processor
from rondo.flow.processors.identity import identity_processor
from rondo.flow.processors.input_files import input_files_processor
from rondo.flow.processors.instructions import instructions_processor
from rondo.flow.processors.nested import nested_resume_processor
from rondo.flow.processors.output_schema import output_schema_processor
from rondo.flow.processors.tools import tools_processor
from rondo.flow.processors.transfer import transfer_processor

if TYPE_CHECKING:
    from rondo.flow.views import RequestProcessor

__all__ = ["DEFAULT_REQUEST_PROCESSORS"]

DEFAULT_REQUEST_PROCESSORS: tuple[RequestProcessor, ...] = (
    basic_processor,
    tools_processor,
    confirmation_processor,
    nested_resume_processor,
    instructions_processor,
    identity_processor,
    compaction_processor,
    contents_processor,
    input_files_processor,
    output_schema_processor,
    transfer_processor,
)
