"""react_lab: build a ReAct agent step by step and run it on a real, embedded model.

Modules, in the order the notebooks use them: ``models`` (completion backends),
``protocol`` (labels, prompt, stop sequence, parsers), ``tools`` (the billing tools
on SQLite), ``loop`` (the text loop), ``trace`` (step events and owner-marked
transcripts). Nothing is loaded on import; the embedded model loads on first use.
"""
__version__ = "0.1.0"
