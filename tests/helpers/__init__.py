"""What tests (and benchmarks) share, in one place instead of copies in each test module.

``fake_server``: an OpenAI-compatible server on 127.0.0.1; ``scripted_llm``: the real gateway
in front of a scripted model; ``plugins``: a test's own strategy or metric registered as an
installed plugin is; ``processes``: the live processes of a session; ``ports``: a free port;
``cli``: ``python -m runner`` started as a child process.
"""
