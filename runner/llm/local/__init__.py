"""The embedded models: llama.cpp's Qwen2.5-Coder-0.5B summarizer/judge with its repeat and
copy stops and clocks, and the NumPy MiniLM embedder. In-process litellm providers.
"""
