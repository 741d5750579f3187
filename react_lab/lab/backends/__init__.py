"""The backends the loops talk to.

The embedded model, any OpenAI-compatible server, scripted models.

Completion backends (the text protocol) answer ``complete(prompt, stop=, max_tokens=)``:
:mod:`.local` (SmolLM2 in-process through llama-cpp-python), :mod:`.endpoints` (the
``openai`` SDK against any compatible server), :mod:`.scripted`. Chat backends (native
tool calls) answer ``chat(messages, tools=, max_tokens=)``: :mod:`.chat`, with the
embedded model's reply grammar in :mod:`.grammar` (:mod:`.text_grammar` for the text
protocol's Action line). llama.cpp's cache, snapshots and decoders are in
:mod:`.llama_state`, its thread count in :mod:`.threads`. Build one from a spec with
:func:`load_model` or :func:`load_chat_model`.
"""

from .load import load_chat_model, load_model, model_spec  # noqa: F401
