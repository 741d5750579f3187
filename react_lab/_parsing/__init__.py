"""Private: the machinery under the tolerant parser, and every other way a model writes a call.

:mod:`react_lab.lab.agent.parser` is the lesson: the ReAct labels, the paper's ``tool[input]``, the
forged observation, the names checked against the tools. Everything else it hands over to
one function, :func:`read_other` (JSON calls, call syntax, ``Action Input:``, other models'
call markup, a call on a line of its own). Nothing here is part of what a learner reads.

The modules:

* :mod:`.labels` -- one regex per ReAct label, and the parts they share (line breaks, the
  colons, a name, a fence);
* :mod:`.forgery` -- what a model-written ``Observation`` line looks like;
* :mod:`.tokens` -- special tokens and tokenizer markers, one regex per kind;
* :mod:`.reasoning` -- reasoning blocks (``<think>``, Harmony's analysis channel), set aside;
* :mod:`.brackets` -- the one bracket reader, and the paper's ``name[args]``;
* :mod:`.calls` -- calls written as JSON or as call syntax ``tool(...)``;
* :mod:`.formats` -- other models' native call markup (Harmony, DeepSeek, Mistral, Gemma,
  Qwen, GLM, Kimi, Llama, ...);
* :mod:`.other` -- :func:`read_other`, which reads them where the parser asks;
* :mod:`.leaks` -- calls a native reply wrote into its text;
* :mod:`.reply` -- a reply's text read as the parser reads a completion;
* :mod:`.answer_calls` -- a call written into an answer, in any shape (never the answer);
* :mod:`.reasons` -- the parser's messages for the rarer shapes;
* :mod:`.messages` and :mod:`.json_errors` -- the argument check's reading and messages
  (:mod:`react_lab.schema`): arguments decoded as strict JSON, jsonschema's errors made
  plainer, and JSON that is not an object;
* :mod:`.arithmetic` -- the ``calc`` tool's arithmetic, read through ``ast``, never ``eval``.
"""

from .other import read_other

__all__ = ["read_other"]
