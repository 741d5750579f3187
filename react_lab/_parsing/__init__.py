"""Private: the tolerant parser's readers of calls written in other shapes.

``calls`` reads calls written as JSON or as call syntax ``tool(...)``; ``formats`` reads
other models' native call markup (Harmony, DeepSeek, Mistral, Gemma, Qwen, GLM, Kimi,
Llama, ...); ``leaks`` finds calls a native reply wrote into its text. The lesson's
:mod:`react_lab.parser` calls them; nothing here is part of what a learner reads.
"""
