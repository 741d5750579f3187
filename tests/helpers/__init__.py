"""What the tests share and run, none of it a test: import as ``helpers.<module>``.

``pyproject.toml`` puts ``tests/`` on pytest's path (``pythonpath``), so a test file in any
folder below ``tests/`` imports these by that name.

* :mod:`helpers.fake_openai`: a small OpenAI-compatible server on 127.0.0.1;
* :mod:`helpers.servers`: llama-cpp-python's server with the embedded model, started and stopped;
* :mod:`helpers.mcp_liar_server`: an MCP server that lies in its annotations (run as a script);
* :mod:`helpers.model_like`: model-like inputs for the property tests and the fuzz benchmark;
* :mod:`helpers.parsing_checks`: the parser tests' tools, markup tokens and refusal check;
* :mod:`helpers.markup_members`: the call-markup members that lost a tag, taken and refused;
* :mod:`helpers.two_loops`: the two loops (text, native) every guard scenario runs over.
* :mod:`helpers.replay`: a saved run's completions replayed through today's loop, compared.
"""
